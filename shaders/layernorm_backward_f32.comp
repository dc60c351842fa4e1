#version 450
// layernorm_backward_f32: the gradient of y = (x - mean) r w + b, r = 1 / sqrt(var + eps),
// biased variance, per row of d elements (src/ops/backward.c, mcl_layernorm_backward). With
// xhat = (x - mean) r and g = dy w:
//   dx = r (g - mean(g) - xhat mean(g xhat))
// and, for dweight, the row's contribution dy xhat written to a rows x d scratch that
// column_sum_f32.comp reduces in a fixed order (dbias is the column sum of dy itself).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : HAS_WEIGHT: w is bound; otherwise binding 1 is unused (w = 1)
//   constant 3     : WRITE_PROD: write dy * xhat to binding 4; otherwise it is unused
//   set 0 binding 0: x (readonly float[])
//   set 0 binding 1: w (readonly float[]), d elements
//   set 0 binding 2: dy (readonly float[])
//   set 0 binding 3: dx (writeonly float[]); may be the same buffer as x or dy
//   set 0 binding 4: prod (writeonly float[]), rows x d
//   push constants : { uint d; uint rows; float eps; }
//
// Statistics in two passes over x - k0, k0 the row's first element, as in the forward
// (layernorm_f32.comp): for data far from 0 the shift is exact and keeps the deviations'
// digits. Pass 1 gives the mean, pass 2 the variance and sum(g), sum(g (x - mean)) (which
// need the mean), pass 3 writes. One workgroup per row, rows grid-strided; dx[j] is written
// by the invocation that read x[j] and dy[j], after every read of the row (the sums are
// barriers), so dx may alias x or dy.

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
    const float inv_d = 1.0 / float(pc.d);
    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * pc.d;
        const float k0 = mcl_wg_first(lid == 0u ? x[base] : 0.0);
        float s = 0.0;
        for (uint j = lid; j < pc.d; j += wg) {
            s += x[base + j] - k0;
        }
        const float mean = mcl_wg_sum(s) * inv_d;

        float m2 = 0.0;
        float sg = 0.0;
        float sgd = 0.0;
        for (uint j = lid; j < pc.d; j += wg) {
            const float dv = (x[base + j] - k0) - mean;
            const float g = HAS_WEIGHT ? dy[base + j] * w[j] : dy[base + j];
            m2 += dv * dv;
            sg += g;
            sgd += g * dv;
        }
        const float r = inversesqrt(mcl_wg_sum(m2) * inv_d + pc.eps);
        const float mean_g = mcl_wg_sum(sg) * inv_d;
        const float mean_gx = mcl_wg_sum(sgd) * r * inv_d; // mean(g xhat)

        for (uint j = lid; j < pc.d; j += wg) {
            const float xh = ((x[base + j] - k0) - mean) * r;
            const float e = dy[base + j];
            const float g = HAS_WEIGHT ? e * w[j] : e;
            if (WRITE_PROD) {
                prod[base + j] = e * xh;
            }
            dx[base + j] = r * ((g - mean_g) - xh * mean_gx);
        }
    }
}
