#version 450
// column_sum_f32: out[c, col] = sum of x[r, col] over rows r in chunk c, in increasing r
// (src/ops/backward.c: the dweight / dbias reductions of the norm backward passes).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), default 256
//   set 0 binding 0: x (readonly float[]), rows x d
//   set 0 binding 1: out (writeonly float[]), ceil(rows / chunk_rows) x d
//   push constants : { uint d; uint rows; uint chunk_rows; }
//
// Workgroup y is the chunk; x invocations take adjacent columns (coalesced loads) and
// grid-stride over d. Every output is one invocation's sequential float sum in a fixed
// order, so the result does not depend on the device, the workgroup size or timing: no
// atomics. The host runs it twice for many rows: chunks into partials, then one chunk of
// partials into the result.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufO { float o[]; };

layout(push_constant) uniform Push {
    uint d;
    uint rows;
    uint chunk_rows;
} pc;

void main() {
    const uint stride = grid_stride();
    const uint chunk = gl_WorkGroupID.y;
    const uint r0 = chunk * pc.chunk_rows;
    const uint r1 = min(pc.rows, r0 + pc.chunk_rows);
    uint col = gl_GlobalInvocationID.x;
    if (col >= pc.d) {
        return;
    }
    do {
        float s = 0.0;
        for (uint r = r0; r < r1; r++) {
            s += x[r * pc.d + col];
        }
        o[chunk * pc.d + col] = s;
    } while (grid_next(col, pc.d, stride));
}
