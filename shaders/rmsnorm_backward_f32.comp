#version 450
// rmsnorm_backward_f32: the gradient of y = x r w, r = 1 / sqrt(mean(x^2) + eps), per row of
// d elements (src/ops/backward.c, mcl_rmsnorm_backward). With g = dy w:
//   dx = r g - x r^3 sum(g x) / d
// and, for dweight, the row's contribution dy x r written to a rows x d scratch that
// column_sum_f32.comp reduces in a fixed order.
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : HAS_WEIGHT: w is bound; otherwise binding 1 is unused (w = 1)
//   constant 3     : WRITE_PROD: write dy * x * r to binding 4; otherwise it is unused
//   set 0 binding 0: x (readonly float[])
//   set 0 binding 1: w (readonly float[]), d elements
//   set 0 binding 2: dy (readonly float[])
//   set 0 binding 3: dx (writeonly float[]); may be the same buffer as x or dy
//   set 0 binding 4: prod (writeonly float[]), rows x d
//   push constants : { uint d; uint rows; float eps; }
//
// One workgroup per row, rows grid-strided. The second pass reads x[j], dy[j] and writes
// dx[j] in one invocation, and the row's sums reach every invocation through shared memory,
// so dx may alias x or dy.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(constant_id = 2) const bool HAS_WEIGHT = true;
layout(constant_id = 3) const bool WRITE_PROD = false;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufDy { float dy[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufDx { float dx[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufP { float prod[]; };

layout(push_constant) uniform Push {
    uint d;
    uint rows;
    float eps;
} pc;

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * pc.d;
        float ss = 0.0;
        float sgx = 0.0;
        for (uint j = lid; j < pc.d; j += wg) {
            const float v = x[base + j];
            const float g = HAS_WEIGHT ? dy[base + j] * w[j] : dy[base + j];
            ss += v * v;
            sgx += g * v;
        }
        const float r = inversesqrt(mcl_wg_sum(ss) / float(pc.d) + pc.eps);
        const float c = r * r * r * mcl_wg_sum(sgx) / float(pc.d);
        for (uint j = lid; j < pc.d; j += wg) {
            const float v = x[base + j];
            const float e = dy[base + j];
            const float g = HAS_WEIGHT ? e * w[j] : e;
            if (WRITE_PROD) {
                prod[base + j] = e * v * r;
            }
            dx[base + j] = r * g - v * c;
        }
    }
}
