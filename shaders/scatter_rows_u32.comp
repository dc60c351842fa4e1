#version 450
// scatter_rows_u32: dst row idx[offset + r] = src row r, for rows r in [0, rows) of `width`
// 32-bit words: a decode step's logits, one row per token of the batch, into the rows of
// their sequences (the batch's sequences are read from the device, as the step's are).
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: src (readonly  uint[]) [rows, width]
//   set 0 binding 1: idx (readonly  int[])
//   set 0 binding 2: dst (writeonly uint[]) [*, width]
//   push constants : { uint width; uint offset; }; workgroups in y: rows
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufSrc { uint src[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufIdx { int idx[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufDst { uint dst[]; };

layout(push_constant) uniform Push {
    uint width;
    uint offset;
} pc;

void main() {
    const uint r = gl_WorkGroupID.y;
    const uint from = r * pc.width, to = uint(idx[pc.offset + r]) * pc.width;
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.width;) {
        dst[to + i] = src[from + i];
        if (!grid_next(i, pc.width, stride)) {
            break;
        }
    }
}
