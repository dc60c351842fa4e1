#version 450
// copy_u32: dst[i] = src[i] for 32-bit words i in [0, n). mcl_copy's kernel: a reshape moves
// words, whatever they mean, so one kernel serves every 4-byte dtype (and 1- and 2-byte
// dtypes whose byte count is a multiple of 4).
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: src (readonly  uint[])
//   set 0 binding 1: dst (writeonly uint[])
//   push constants : { uint n; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufSrc { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufDst { uint dst[]; };

layout(push_constant) uniform Push { uint n; } pc;

void main() {
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        dst[i] = src[i];
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
