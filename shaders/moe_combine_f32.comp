#version 450
// moe_combine_f32: a mixture of experts' weighted sum: out[r, d] (+)= sum_j w[r, j] y[r k + j,
// d] over the k slots of row r, in slot order (the experts' outputs y [rows k, D] of
// gemv_q / gemv_experts_f32, the weights of moe_route_f32).
//
//   specialization constants: 0 workgroup size
//   set 0: 0 y [rows k, D] f32, 1 weights [rows, k] f32, 2 out [rows, D] f32 (read when
//     accumulating, written)
//   push constants: D, k, accumulate (0: out = the sum; else out += it). The workgroups in y
//     are the rows; x walks D in steps of the grid.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) restrict readonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufW { float weights[]; };
layout(std430, set = 0, binding = 2) restrict buffer BufOut { float outv[]; };

layout(push_constant) uniform Push {
    uint D, k;
    uint accumulate;
} pc;

void main() {
    const uint r = gl_WorkGroupID.y;
    const uint stride = grid_stride();
    for (uint d = gl_GlobalInvocationID.x; d < pc.D;) {
        float sum = 0.0;
        for (uint j = 0u; j < pc.k; j++) {
            sum = fma(weights[r * pc.k + j], y[(r * pc.k + j) * pc.D + d], sum);
        }
        const uint o = r * pc.D + d;
        outv[o] = pc.accumulate != 0u ? outv[o] + sum : sum;
        if (!grid_next(d, pc.D, stride)) {
            break;
        }
    }
}
