#version 450
// softmax_backward_f32: dx = scale * y * (dy - sum(dy * y)) per row of d elements, from the
// forward's output y (src/ops/backward.c, mcl_softmax_backward). Masked positions have y = 0
// and get 0 without knowing the mask.
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   set 0 binding 0: y (readonly float[])
//   set 0 binding 1: dy (readonly float[])
//   set 0 binding 2: dx (writeonly float[]); may be the same buffer as dy
//   push constants : { uint d; uint rows; float scale; }
//
// One workgroup per row, rows grid-strided over the dispatch. The second pass reads y[j] and
// dy[j] and writes dx[j] in the same invocation, and the row's dot product reaches every
// invocation through shared memory (mcl_wg_sum), so dx aliasing dy is safe.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufDy { float dy[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufDx { float dx[]; };

layout(push_constant) uniform Push {
    uint d;
    uint rows;
    float scale;
} pc;

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * pc.d;
        float part = 0.0;
        for (uint j = lid; j < pc.d; j += wg) {
            part += dy[base + j] * y[base + j];
        }
        const float dot_ = mcl_wg_sum(part);
        for (uint j = lid; j < pc.d; j += wg) {
            const float yj = y[base + j];
            dx[base + j] = pc.scale * yj * (dy[base + j] - dot_);
        }
    }
}
