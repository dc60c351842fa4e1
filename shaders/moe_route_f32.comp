#version 450
// moe_route_f32: a mixture of experts' routing, one row of router logits per workgroup: the k
// experts of the largest logits and their weights (route.glsl).
//
//   specialization constants: 0 WG (workgroup size, a power of two)
//   set 0: 0 logits [rows, E] f32, 1 ids [rows, k] i32 (written), 2 weights [rows, k] f32
//     (written)
//   push constants: E (1..256), k (1..16, at most E), norm, rows. The workgroup index is x + y *
//     (groups in x).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufL { float logits[]; };
layout(std430, set = 0, binding = 1) restrict writeonly buffer BufI { int ids[]; };
layout(std430, set = 0, binding = 2) restrict writeonly buffer BufW { float weights[]; };

layout(push_constant) uniform Push {
    uint E, k;
    uint norm;
    uint rows;
} pc;

uint route_base = 0u;  // the row's first logit
#define ROUTE_LOGIT(e) logits[route_base + (e)]
#include "route.glsl"

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.rows) {
        return;
    }
    route_base = row * pc.E;
    route_row(pc.E, pc.k, pc.norm != 0u, row * pc.k);
}
