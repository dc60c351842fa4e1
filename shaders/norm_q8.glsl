// norm_q8.glsl: the body of norm_q8_f32.comp and norm_moe_f32.comp.
//
// norm_q8_f32: the row step between a decoder's products, fused: x += h (ADD), then
// y = x / sqrt(mean(x^2) + eps) * w, and (QUANT) y quantized for the integer-dot path as
// quantize_q8_1.comp quantizes it (q8_1.glsl: the same codes, scale and sum). One
// dispatch in place of the residual add, the RMSNorm and the quantization.
//
//   constant 0     : workgroup size, a multiple of 8, at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : ADD: x += h first (otherwise binding 0 is unused)
//   constant 3     : QUANT: write the quantized y into act (otherwise binding 4 is unused)
//   set 0 binding 0: h   (readonly vec4[]) [rows, d]
//   set 0 binding 1: w   (readonly vec4[]) [d]
//   set 0 binding 2: x   (vec4[]) [rows, d]: read, and with ADD (or MIX) written
//   set 0 binding 3: y   (writeonly vec4[]) [rows, d]
//   set 0 binding 4: act (writeonly uint[]): blocks x 8 code words, then blocks scales, then
//                    blocks code sums; blocks = rows * d / 32
//
// norm_moe_f32 (NORM_MOE defined), for a mixture of experts' decode step, adds:
//   constant 4     : MIX, a mixture's k (0: off): x also gains sum_j mw[r, j] my[r k + j], the
//                    weighted sum of the experts' outputs of the block before (in slot order,
//                    after h), in place of a dispatch of its own (moe_combine_f32.comp)
//   constant 5     : ROUTE: a mixture's routing of the normed row (as moe_route_f32.comp
//                    routes, route.glsl): its router logits, router . y (E <= 64 experts;
//                    each a sum over the workgroup in a fixed order), then the k experts of
//                    the largest and their weights; the short-row path only (the host's check)
//   bindings, reads first: 0 h, 1 w, 2 my (f32 [rows k, d], with MIX), 3 mw (f32 [rows, k],
//   with MIX), 4 router (f32 [E, d], with ROUTE), 5 x, 6 y, 7 act, 8 ids (i32 [rows, k],
//   written, with ROUTE), 9 weights (f32 [rows, k], written, with ROUTE)
//   push constants : { uint d; uint rows; float eps; } (d a multiple of 32), and with
//                    NORM_MOE uint E, k, norm: the routing's (ROUTE)
//
// One workgroup per row, rows grid-strided. The quantization takes eight invocations per
// block of 32 values, a vec4 each: a round of the workgroup covers whole blocks.
//
// A row of at most RV vec4s an invocation (4096 values at 128 invocations) is held in
// registers: every load of the row (x, h and w) is issued before the first store, so that
// the workgroup waits for memory once, not once per round (a decode step runs two of these a
// layer, each alone on the device between two products, and its time is its latency). A
// longer row takes the loop below, which reads x back after the sum.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(constant_id = 2) const bool ADD = true;
layout(constant_id = 3) const bool QUANT = true;
#ifdef NORM_MOE
layout(constant_id = 4) const uint MIX = 0u;
layout(constant_id = 5) const bool ROUTE = false;
#else
const uint MIX = 0u;
const bool ROUTE = false;
#endif

// norm_moe_f32's reads come before its writes (the runtime's binding order).
#ifdef NORM_MOE
#define NORM_OUT 5
layout(std430, set = 0, binding = 2) readonly buffer BufMy { vec4 my4[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufMw { float mw[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufR { vec4 router4[]; };
layout(std430, set = 0, binding = 8) writeonly buffer BufIds { int route_ids[]; };
layout(std430, set = 0, binding = 9) writeonly buffer BufRw { float route_weights[]; };
#else
#define NORM_OUT 2
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufH { vec4 h4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW { vec4 w4[]; };
layout(std430, set = 0, binding = NORM_OUT) buffer BufX { vec4 x4[]; };
layout(std430, set = 0, binding = NORM_OUT + 1) writeonly buffer BufY { vec4 y4[]; };
layout(std430, set = 0, binding = NORM_OUT + 2) writeonly buffer BufAct { uint act[]; };

layout(push_constant) uniform Push {
    uint d;
    uint rows;
    float eps;
#ifdef NORM_MOE
    uint E, k, norm;
#endif
} pc;

#include "q8_1.glsl"

const uint RV = 8u;  // vec4s an invocation holds in registers (the short-row path)

// x's gain from the block before at vec4 k of the row: h (ADD), then the experts' outputs
// weighted (MIX), in slot order.
vec4 gain(uint row, uint base4, uint k) {
    vec4 v = ADD ? h4[base4 + k] : vec4(0.0);
#ifdef NORM_MOE
    [[unroll]] for (uint j = 0u; j < MIX; j++) {
        v += mw[row * MIX + j] * my4[(row * MIX + j) * (pc.d / 4u) + k];
    }
#endif
    return v;
}

#ifdef NORM_MOE
#define ROUTE_SERIAL 64u
#include "route.glsl"

// ROUTE: the partial logits of experts e0 .. e0 + 7, lanes in rows of ROUTE_WG, then the
// sums of 16 stretches of each row.
const uint ROUTE_CHUNK = 8u;
shared float route_part[ROUTE ? ROUTE_CHUNK * gl_WorkGroupSize.x : 1u];
shared float route_part16[ROUTE ? ROUTE_CHUNK * 16u : 1u];

// The router logits of the normed row (the invocation's vec4s y[j] at lid + j wg, those
// below d4) into route_l, ROUTE_CHUNK experts a round: each invocation's partial sums, then
// per expert 16 stretches of the lanes summed in lane order, then the 16 in order. Called
// from uniform control flow; route_l is complete after it.
void route_logits(vec4 y[RV], uint lid, uint wg, uint d4) {
    const uint stretch = (wg + 15u) / 16u;
    for (uint e0 = 0u; e0 < pc.E; e0 += ROUTE_CHUNK) {
        [[unroll]] for (uint c = 0u; c < ROUTE_CHUNK; c++) {
            float p = 0.0;
            if (e0 + c < pc.E) {
                [[unroll]] for (uint j = 0u; j < RV; j++) {
                    const uint k = lid + j * wg;
                    p += k < d4 ? dot(y[j], router4[(e0 + c) * d4 + k]) : 0.0;
                }
            }
            route_part[c * wg + lid] = p;
        }
        barrier();
        for (uint i = lid; i < ROUTE_CHUNK * 16u; i += wg) {
            const uint c = i / 16u, s0 = (i % 16u) * stretch;
            float p = 0.0;
            for (uint t = s0; t < min(s0 + stretch, wg); t++) {
                p += route_part[c * wg + t];
            }
            route_part16[i] = p;
        }
        barrier();
        if (lid < ROUTE_CHUNK && e0 + lid < pc.E) {
            float p = 0.0;
            [[unroll]] for (uint t = 0u; t < 16u; t++) {
                p += route_part16[lid * 16u + t];
            }
            route_l[e0 + lid] = p;
        }
        barrier();  // route_part read before the next round writes it; route_l complete
    }
}
#endif

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    const uint d4 = pc.d / 4u;
    const uint blocks = pc.rows * (pc.d / 32u);
    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        const uint base4 = row * d4;
        if (d4 <= RV * wg) {
            // The short-row path: the same sums in the same order as the loop's.
            vec4 xv[RV], wv[RV];
            [[unroll]] for (uint j = 0u; j < RV; j++) {
                const uint k = lid + j * wg;
                xv[j] = k < d4 ? x4[base4 + k] : vec4(0.0);
                wv[j] = k < d4 ? w4[k] : vec4(0.0);
                if (ADD || MIX > 0u) {
                    xv[j] += k < d4 ? gain(row, base4, k) : vec4(0.0);
                }
            }
            float ss = 0.0;
            [[unroll]] for (uint j = 0u; j < RV; j++) {
                const uint k = lid + j * wg;
                if (k < d4) {
                    if (ADD || MIX > 0u) {
                        x4[base4 + k] = xv[j];
                    }
                    ss += dot(xv[j], xv[j]);
                }
            }
            const float r = inversesqrt(mcl_wg_sum(ss) / float(pc.d) + pc.eps);
            vec4 yv[RV];
            [[unroll]] for (uint j = 0u; j < RV; j++) {
                yv[j] = vec4(0.0);
                if (j * wg < d4) {  // uniform: every invocation meets every barrier
                    const uint k = lid + j * wg;
                    const bool valid = k < d4;
                    const vec4 y = valid ? xv[j] * r * wv[j] : vec4(0.0);
                    yv[j] = y;
                    if (valid) {
                        y4[base4 + k] = y;
                    }
                    if (QUANT) {
                        q8_1_store(y, (base4 + k) / Q8_LANES, valid, blocks);
                    }
                }
            }
#ifdef NORM_MOE
            if (ROUTE) {
                route_logits(yv, lid, wg, d4);
                if (lid == 0u) {
                    route_serial(pc.E, pc.k, pc.norm != 0u, row * pc.k);
                }
            }
#endif
            continue;
        }
        float ss = 0.0;
        for (uint k = lid; k < d4; k += wg) {
            vec4 v = x4[base4 + k];
            if (ADD || MIX > 0u) {
                v += gain(row, base4, k);
                x4[base4 + k] = v;
            }
            ss += dot(v, v);
        }
        const float r = inversesqrt(mcl_wg_sum(ss) / float(pc.d) + pc.eps);
        // Rounds of whole workgroups, so that every invocation meets every barrier.
        for (uint k0 = 0u; k0 < d4; k0 += wg) {
            const uint k = k0 + lid;
            const bool valid = k < d4;
            // An invocation reads back its own write of x: no barrier is needed.
            const vec4 y = valid ? x4[base4 + k] * r * w4[k] : vec4(0.0);
            if (valid) {
                y4[base4 + k] = y;
            }
            if (QUANT) {
                // Block g of the whole tensor: row-major over rows, 32 values each.
                q8_1_store(y, (base4 + k) / Q8_LANES, valid, blocks);
            }
        }
    }
}
