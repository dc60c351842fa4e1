#version 450
// reduce_rows_f32: y[r] = sum, mean or max of x[r, 0..d) per row (src/ops/rows.c,
// mcl_reduce_rows).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : VEC4: d % 4 == 0, so every row starts on a 16-byte boundary
//   constant 3     : OP: 0 sum, 1 mean, 2 max (mcl_reduce_op)
//   set 0 binding 0: x (readonly float[] / vec4[])
//   set 0 binding 1: y (writeonly float[]), one value per row
//   push constants : { uint d; uint rows; }
//
// One workgroup per row, rows grid-strided over the dispatch; each element is read once.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(constant_id = 2) const bool VEC4 = false;
layout(constant_id = 3) const uint OP = 0u;

const uint OP_SUM = 0u;
const uint OP_MEAN = 1u;
const uint OP_MAX = 2u;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint d;
    uint rows;
} pc;

const float NEG_INF = -1.0 / 0.0;

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;

    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * pc.d;
        float acc = OP == OP_MAX ? NEG_INF : 0.0;
        if (VEC4) {
            const uint base4 = base / 4u;
            const uint d4 = pc.d / 4u;
            for (uint k = lid; k < d4; k += wg) {
                const vec4 v = x4[base4 + k];
                if (OP == OP_MAX) {
                    acc = max(acc, max(max(v.x, v.y), max(v.z, v.w)));
                } else {
                    acc += (v.x + v.y) + (v.z + v.w);
                }
            }
        } else {
            for (uint j = lid; j < pc.d; j += wg) {
                acc = OP == OP_MAX ? max(acc, x[base + j]) : acc + x[base + j];
            }
        }
        const float total = OP == OP_MAX ? mcl_wg_max(acc) : mcl_wg_sum(acc);
        if (lid == 0u) {
            y[row] = OP == OP_MEAN ? total / float(pc.d) : total;
        }
    }
}
