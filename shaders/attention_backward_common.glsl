// attention_backward_common.glsl: what attention_backward_dq_f32.comp and
// attention_backward_dkdv_f32.comp share: the push constants, q / k / v, the index arithmetic
// of attention_tile.glsl, the causal limit, the four head-vector tiles and the product tile.
//
// Rows are numbered as in the forward: for one (batch, kv head), rho = t * G + g over the T
// query positions and the G query heads that share the kv head. The statistics scratch holds
// four floats per row at ((b * Hkv + hkv) * T * G + rho) * 4: the row's score max (log2
// domain; NEG when it sees no key), 1 / its sum of exp2(score - max) (0 when it sees no key),
// Di = dout . out, and a zero.
//
// Head vectors sit in shared memory as vec4s (D4 = ceil(D / 4), zero-padded), each row padded
// by one more vec4 (STRIDE), so that a subgroup reading one vec4 column across rows spreads
// over the banks.
//
// Both kernels make, per (row tile, key tile), the BQ x BK products S = q . k and
// dP = dout . v (tile_products; the dq kernel's statistics sweep only S, tile_scores). Each
// invocation below PA takes MR rows by MK keys of that tile, rows rg + RGA i and keys
// kg + KGA j with rg = tid % RGA, kg = tid / RGA: per vec4 of the head vector it reads
// MR + MK vec4s of each operand from shared memory for MR x MK dot products, a register tile
// as in a GEMM rather than one shared read per product. Every product is summed over the
// vec4s in order, so the bits do not depend on the tile plan's MR and MK.
//
// Specialization constants (constant 0 is the workgroup size WG):
//   1: D   head dimension (exact)     2: BQ  query rows per tile     3: BK  keys per tile
//   4: MR  product-tile rows per invocation (divides BQ)
//   5: MK  product-tile keys per invocation (divides BK); (BQ / MR) * (BK / MK) <= WG
//   6: NB  the second product's rows (dq) or keys (dk / dv) per invocation (see each kernel)
// Nothing here uses subgroup operations: correct for any subgroup size.
#ifndef ATTENTION_BACKWARD_COMMON_GLSL
#define ATTENTION_BACKWARD_COMMON_GLSL

#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint D = 64;
layout(constant_id = 2) const uint BQ = 16;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint MR = 2;
layout(constant_id = 5) const uint MK = 2;
layout(constant_id = 6) const uint NB = 1;

const uint WG = gl_WorkGroupSize.x;
const uint D4 = (D + 3u) / 4u;
const uint STRIDE = D4 + 1u;
const uint RGA = BQ / MR;   // row groups of the product tile
const uint KGA = BK / MK;   // key groups of the product tile
const uint PA = RGA * KGA;  // invocations that make products

// A masked score, and the max of a row that has seen no key yet. Finite, so that no step
// depends on how a driver treats infinities.
const float NEG = -3.0e38;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { float v[]; };

layout(push_constant) uniform Push {
    uint seq_q;        // T
    uint seq_kv;       // S: the k/v tensors' sequence dimension (their stride)
    uint kv_len;       // keys in use, <= S
    uint heads_q;      // Hq
    uint heads_kv;     // Hkv
    uint group;        // G = Hq / Hkv
    uint rows;         // T * G: query rows per (batch, kv head)
    uint causal;       // row t sees keys < t + kv_len - T + 1
    float scale_log2;  // scale * log2(e): scores in the log2 domain, so exp2 replaces exp
    float scale;
} pc;

#include "attention_index.glsl"

shared vec4 q_tile[BQ * STRIDE];
shared vec4 do_tile[BQ * STRIDE];
shared vec4 k_tile[BK * STRIDE];
shared vec4 v_tile[BK * STRIDE];

// The invocation's products, [i * MK + j] for row rg + RGA i and key kg + KGA j. Indexed
// only in unrolled loops, so that they stay in registers.
float s_acc[MR * MK];
float dp_acc[MR * MK];

// Index of row rho's statistics in the scratch.
uint stats_at(uint b, uint hkv, uint rho) {
    return ((b * pc.heads_kv + hkv) * pc.rows + rho) * 4u;
}

// s_acc = q . k over the invocation's MR x MK entries (unscaled).
void tile_scores(uint rg, uint kg) {
    [[unroll]] for (uint e = 0u; e < MR * MK; e++) {
        s_acc[e] = 0.0;
    }
    for (uint d4 = 0u; d4 < D4; d4++) {
        vec4 kk[MK];
        [[unroll]] for (uint j = 0u; j < MK; j++) {
            kk[j] = k_tile[(kg + KGA * j) * STRIDE + d4];
        }
        [[unroll]] for (uint i = 0u; i < MR; i++) {
            const vec4 qq = q_tile[(rg + RGA * i) * STRIDE + d4];
            [[unroll]] for (uint j = 0u; j < MK; j++) {
                s_acc[i * MK + j] += dot(qq, kk[j]);
            }
        }
    }
}

// s_acc = q . k and dp_acc = dout . v over the invocation's MR x MK entries.
void tile_products(uint rg, uint kg) {
    [[unroll]] for (uint e = 0u; e < MR * MK; e++) {
        s_acc[e] = 0.0;
        dp_acc[e] = 0.0;
    }
    for (uint d4 = 0u; d4 < D4; d4++) {
        vec4 kk[MK], vv[MK];
        [[unroll]] for (uint j = 0u; j < MK; j++) {
            kk[j] = k_tile[(kg + KGA * j) * STRIDE + d4];
            vv[j] = v_tile[(kg + KGA * j) * STRIDE + d4];
        }
        [[unroll]] for (uint i = 0u; i < MR; i++) {
            const vec4 qq = q_tile[(rg + RGA * i) * STRIDE + d4];
            const vec4 dd = do_tile[(rg + RGA * i) * STRIDE + d4];
            [[unroll]] for (uint j = 0u; j < MK; j++) {
                s_acc[i * MK + j] += dot(qq, kk[j]);
                dp_acc[i * MK + j] += dot(dd, vv[j]);
            }
        }
    }
}

#endif
