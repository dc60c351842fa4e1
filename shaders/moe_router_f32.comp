#version 450
// moe_router_f32: a mixture of experts' router and routing in one dispatch: the logits l[r, e]
// = sum_i x[r, i] W[e, i] of each row r of x, then the row's k experts and their weights
// (route.glsl, as moe_route_f32 chooses them).
//
// Workgroup (s, r) multiplies slice s of K (KS values, the last slice what is left) of row r
// by every expert's row, WG / 32 experts a round, 32 lanes an expert: each lane adds the vec4s
// 4 lane, 4 (lane + 32), ... of the slice in order, and a tree over the 32 lanes in shared
// memory adds theirs; the slice's partial logits go to part[r, s, e]. The row's last workgroup
// to finish (a count per row, which that workgroup returns to 0) adds the S partials of each
// expert in slice order into the logits and routes the row: the logits do not depend on which
// workgroup came last. So the router's product is spread over S workgroups a row, and the
// routing needs no dispatch of its own.
//
//   specialization constants: 0 WG (a power of two, 32 to 256)
//   set 0: 0 x [rows, K] f32, 1 W [E, K] f32, 2 part [rows, S, E] f32 (scratch), 3 counts
//     [rows] u32 (0 before the dispatch, 0 after), 4 logits [rows, E] f32, 5 ids [rows, k] i32,
//     6 weights [rows, k] f32 (the last three written)
//   push constants: K (a multiple of 4), E (1..256), k (1..16, at most E), norm, S (1..16),
//     KS (a multiple of 128; S KS >= K > (S - 1) KS). The grid: x the S slices, y the rows.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufX { vec4 x4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufW { vec4 w4[]; };
layout(std430, set = 0, binding = 2) coherent buffer BufP { float part[]; };
layout(std430, set = 0, binding = 3) coherent buffer BufC { uint counts[]; };
layout(std430, set = 0, binding = 4) restrict writeonly buffer BufL { float logits[]; };
layout(std430, set = 0, binding = 5) restrict writeonly buffer BufI { int ids[]; };
layout(std430, set = 0, binding = 6) restrict writeonly buffer BufWt { float weights[]; };

layout(push_constant) uniform Push {
    uint K, E, k;
    uint norm;
    uint S, KS;
} pc;

const uint LANES = 32u;  // lanes an expert
const uint MAX_PART = 4096u;  // S E: 16 slices of 256 experts

shared float sh_part[MAX_PART];  // the row's partials, then its logits from 0
shared uint sh_last;

#define ROUTE_LOGIT(e) sh_part[e]
#include "route.glsl"

void main() {
    const uint t = gl_LocalInvocationID.x, s = gl_WorkGroupID.x, r = gl_WorkGroupID.y;
    const uint lane = t % LANES, K4 = pc.K / 4u, s4 = s * (pc.KS / 4u);
    const uint n4 = min(pc.KS / 4u, K4 - s4);
    for (uint e0 = 0u; e0 < pc.E; e0 += WG / LANES) {
        const uint e = e0 + t / LANES;
        float acc = 0.0;
        if (e < pc.E) {
            for (uint i = lane; i < n4; i += LANES) {
                const vec4 a = x4[r * K4 + s4 + i], w = w4[e * K4 + s4 + i];
                acc = fma(a.x, w.x, acc);
                acc = fma(a.y, w.y, acc);
                acc = fma(a.z, w.z, acc);
                acc = fma(a.w, w.w, acc);
            }
        }
        sh_sum[t] = acc;
        barrier();
        for (uint h = LANES / 2u; h > 0u; h >>= 1) {
            if (lane < h) {
                sh_sum[t] += sh_sum[t + h];
            }
            barrier();
        }
        if (lane == 0u && e < pc.E) {
            part[(r * pc.S + s) * pc.E + e] = sh_sum[t];
        }
        barrier();  // sh_sum read before the next round writes it
    }
    // This slice's partials visible to the device before it counts itself.
    memoryBarrierBuffer();
    barrier();
    if (t == 0u) {
        const uint done = atomicAdd(counts[r], 1u) + 1u;
        sh_last = done == pc.S ? 1u : 0u;
        if (done == pc.S) {
            counts[r] = 0u;
        }
    }
    barrier();
    if (sh_last == 0u) {
        return;
    }
    memoryBarrierBuffer();
    // The last: each partial one independent load (coherent loads are not merged), then each
    // expert's sum in slice order.
    const uint n = pc.S * pc.E;
    for (uint i = t; i < n; i += WG) {
        sh_part[i] = part[r * n + i];
    }
    barrier();
    float l[(MAX_E + WG - 1u) / WG];
    [[unroll]] for (uint j = 0u; j < (MAX_E + WG - 1u) / WG; j++) {
        const uint e = t + j * WG;
        l[j] = 0.0;
        if (e < pc.E) {
            for (uint q = 0u; q < pc.S; q++) {
                l[j] += sh_part[q * pc.E + e];
            }
        }
    }
    barrier();  // every partial read before the logits take their place
    [[unroll]] for (uint j = 0u; j < (MAX_E + WG - 1u) / WG; j++) {
        const uint e = t + j * WG;
        if (e < pc.E) {
            sh_part[e] = l[j];
            logits[r * pc.E + e] = l[j];
        }
    }
    barrier();
    route_row(pc.E, pc.k, pc.norm != 0u, r * pc.k);
}
