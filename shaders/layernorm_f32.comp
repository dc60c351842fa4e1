#version 450
// layernorm_f32: y = (x - mean) / sqrt(var + eps) * w + b per row of d elements, biased
// variance (src/ops/rows.c, mcl_layernorm).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : VEC4: d % 4 == 0, so rows, w and b start on 16-byte boundaries
//   constant 3     : HAS_WEIGHT: w is bound; otherwise binding 1 is unused (w = 1)
//   constant 4     : HAS_BIAS: b is bound; otherwise binding 2 is unused (b = 0)
//   set 0 binding 0: x (readonly float[] / vec4[])
//   set 0 binding 1: w (readonly float[] / vec4[]), d elements
//   set 0 binding 2: b (readonly float[] / vec4[]), d elements
//   set 0 binding 3: y (writeonly float[] / vec4[]); may be the same buffer as x
//   push constants : { uint d; uint rows; float eps; }
//
// One workgroup per row, rows grid-strided over the dispatch. x is read twice: statistics,
// then the normalisation.
//
// The variance must not come from sum(x^2) - sum(x)^2 / d, which cancels catastrophically
// when |mean| >> std. Each invocation keeps Welford's running count, mean and sum of squared
// deviations over its elements, and the workgroup combines them with Chan's formula,
// M2 = sum(M2_i + n_i (mean_i - mean)^2), which needs only two sums. All of it works on
// x - k0, k0 the row's first element: for data far from 0 (1000 +- 1) x - k0 is exact
// (Sterbenz) and small, so neither the mean nor the output (x - k0) - mean loses the digits
// that rounding a mean near 1000 to float would.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(constant_id = 2) const bool VEC4 = false;
layout(constant_id = 3) const bool HAS_WEIGHT = true;
layout(constant_id = 4) const bool HAS_BIAS = true;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW { float w[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW4 { vec4 w4[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufB { float b[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufB4 { vec4 b4[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY4 { vec4 y4[]; };

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
        const float k0 = mcl_wg_first(lid == 0u ? x[base] : 0.0);
        // This invocation's count, mean and sum of squared deviations (Welford; a vec4 is
        // merged as a batch of four whose own statistics are exact two-pass).
        float n = 0.0;
        float mean_i = 0.0;
        float m2_i = 0.0;
        if (VEC4) {
            const uint base4 = base / 4u;
            const uint d4 = pc.d / 4u;
            for (uint k = lid; k < d4; k += wg) {
                const vec4 v = x4[base4 + k] - k0;
                const float vm = ((v.x + v.y) + (v.z + v.w)) * 0.25;
                const vec4 dv = v - vm;
                const float n_new = n + 4.0;
                const float delta = vm - mean_i;
                mean_i += delta * (4.0 / n_new);
                m2_i += dot(dv, dv) + delta * delta * (n * 4.0 / n_new);
                n = n_new;
            }
        } else {
            for (uint j = lid; j < pc.d; j += wg) {
                const float v = x[base + j] - k0;
                n += 1.0;
                const float delta = v - mean_i;
                mean_i += delta / n;
                m2_i += delta * (v - mean_i);
            }
        }

        // The mean of x - k0.
        const float mean = mcl_wg_sum(n * mean_i) / float(pc.d);
        const float dm = mean_i - mean;
        const float var = mcl_wg_sum(m2_i + n * dm * dm) / float(pc.d);
        const float r = inversesqrt(var + pc.eps);

        if (VEC4) {
            const uint base4 = base / 4u;
            const uint d4 = pc.d / 4u;
            for (uint k = lid; k < d4; k += wg) {
                vec4 v = ((x4[base4 + k] - k0) - mean) * r;
                if (HAS_WEIGHT) {
                    v *= w4[k];
                }
                if (HAS_BIAS) {
                    v += b4[k];
                }
                y4[base4 + k] = v;
            }
        } else {
            for (uint j = lid; j < pc.d; j += wg) {
                float v = ((x[base + j] - k0) - mean) * r;
                if (HAS_WEIGHT) {
                    v *= w[j];
                }
                if (HAS_BIAS) {
                    v += b[j];
                }
                y[base + j] = v;
            }
        }
    }
}
