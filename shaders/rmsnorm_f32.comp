#version 450
// rmsnorm_f32: y = x / sqrt(mean(x^2) + eps) * w per row of d elements (src/ops/rows.c,
// mcl_rmsnorm).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : VEC4: d % 4 == 0, so rows and w start on 16-byte boundaries
//   constant 3     : HAS_WEIGHT: w is bound; otherwise binding 1 is unused (w = 1)
//   set 0 binding 0: x (readonly float[] / vec4[])
//   set 0 binding 1: w (readonly float[] / vec4[]), d elements
//   set 0 binding 2: y (writeonly float[] / vec4[]); may be the same buffer as x
//   push constants : { uint d; uint rows; float eps; }
//
// One workgroup per row, rows grid-strided over the dispatch. x is read twice (sum of
// squares, then scale); the second read of a row mostly hits the cache.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(constant_id = 2) const bool VEC4 = false;
layout(constant_id = 3) const bool HAS_WEIGHT = true;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW { float w[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW4 { vec4 w4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY4 { vec4 y4[]; };

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
        if (VEC4) {
            const uint base4 = base / 4u;
            const uint d4 = pc.d / 4u;
            for (uint k = lid; k < d4; k += wg) {
                const vec4 v = x4[base4 + k];
                ss += dot(v, v);
            }
        } else {
            for (uint j = lid; j < pc.d; j += wg) {
                const float v = x[base + j];
                ss += v * v;
            }
        }
        const float r = inversesqrt(mcl_wg_sum(ss) / float(pc.d) + pc.eps);

        if (VEC4) {
            const uint base4 = base / 4u;
            const uint d4 = pc.d / 4u;
            for (uint k = lid; k < d4; k += wg) {
                const vec4 v = x4[base4 + k] * r;
                y4[base4 + k] = HAS_WEIGHT ? v * w4[k] : v;
            }
        } else {
            for (uint j = lid; j < pc.d; j += wg) {
                const float v = x[base + j] * r;
                y[base + j] = HAS_WEIGHT ? v * w[j] : v;
            }
        }
    }
}
