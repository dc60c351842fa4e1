#version 450
// attention_backward_dq_f32: the first half of mcl_attention_backward. One workgroup per BQ
// query rows of one (batch, kv head), like the forward, so a K/V tile loaded once serves the
// G query heads that share it. It
//   1. loads the rows' q and dout into shared memory, and Di = dout . out per row;
//   2. walks the visible key tiles once for the softmax statistics: each product-tile
//      invocation keeps an online (max, sum) per row over its own keys (scores as in the
//      forward, scale * log2(e) * q . k, masked keys left out), and one invocation per row
//      merges the KGA pairs in order; the rows' max, 1 / sum and Di go to the statistics
//      scratch for attention_backward_dkdv_f32.comp. With constant 7 (STATS_GIVEN) set, the
//      scratch already holds the max and 1 / sum (attention_stats_f32.comp wrote them in the
//      forward pass): no sweep, only Di is written;
//   3. walks them again: P = exp2(s - max) / sum, dP = dout . v, dS = P (dP - Di) (a BQ x BK
//      tile in shared memory, no T x S matrix anywhere), and dq += dS k, each invocation
//      holding NB rows by ND4 vec4s of dq;
//   4. writes dq = scale * the sum. A row that sees no key gets zeros.
// Every dq element belongs to one invocation, which adds its terms in key order: no atomics,
// the same bits on every run.
//
//   workgroup size : specialization constant 0; constants 1..6 as the common file says, NB the
//                    dq rows per invocation (divides BQ, BQ / NB <= WG); 7: STATS_GIVEN
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3..4: out, dout [B, T, Hq, D] (readonly float[])
//   set 0 binding 5   : dq [B, T, Hq, D] (writeonly float[])
//   set 0 binding 6   : stats [B, Hkv, T * G, 4] (float[]; read where STATS_GIVEN)
//   dispatch          : (ceil(T * G / BQ), Hkv, B)
// Shared memory: 16 * STRIDE * 2 * (BQ + BK) + 4 * (BK * PSTR + 2 * BQ * KGA + BQ * STRIDE +
// 4 * BQ) bytes.
#extension GL_GOOGLE_include_directive : require
#include "attention_backward_common.glsl"

layout(constant_id = 7) const uint STATS_GIVEN = 0;

// dq's invocations: row group rgb = tid % RGB (rows rgb + RGB i), column group dg = tid / RGB
// (vec4s dg + DG j of the head vector).
const uint RGB = BQ / NB;
const uint DG = WG / RGB;
const uint PB = RGB * DG;
const uint ND4 = (D4 + DG - 1u) / DG;
// dS is key-major, [c * PSTR + r]: dq's loop reads consecutive rows of one key. PSTR is RGA
// modulo 32, so that the product tile's stores from 32 invocations fall in distinct banks.
const uint PSTR = BQ + ((RGA % 32u) + 32u - (BQ % 32u)) % 32u;

layout(std430, set = 0, binding = 3) readonly buffer BufO { float o[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufDO { float dout[]; };
layout(std430, set = 0, binding = 5) writeonly buffer BufDQ { float dq[]; };
layout(std430, set = 0, binding = 6) buffer BufStats { float stats[]; };

shared float ds_tile[BK * PSTR];
shared float red_m[BQ * KGA];  // the product-tile invocations' (max, sum) pairs per row
shared float red_l[BQ * KGA];
shared float di_part[BQ * STRIDE];  // dout . out per vec4 of the rows
shared float row_m[BQ];        // score max, log2 domain
shared float row_inv[BQ];      // 1 / sum of exp2(score - max); 0 for a row that sees no key
shared float row_di[BQ];       // dout . out
shared uint row_limit[BQ];     // keys < row_limit are visible to the row

// Indexed only in unrolled loops, so that they stay in registers.
vec4 acc[NB * ND4];
float run_m[MR];
float run_l[MR];

vec4 load_o(uint base, uint d4) {
    vec4 r = vec4(0.0);
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        if (d4 * 4u + i < D) {
            r[i] = o[base + d4 * 4u + i];
        }
    }
    return r;
}

vec4 load_do(uint base, uint d4) {
    vec4 r = vec4(0.0);
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        if (d4 * 4u + i < D) {
            r[i] = dout[base + d4 * 4u + i];
        }
    }
    return r;
}

// Keys kt .. kt + BK - 1 into k_tile (and v_tile), zeros at and past key_stop.
void load_keys(uint b, uint hkv, uint kt, uint key_stop, bool with_v) {
    for (uint e = gl_LocalInvocationID.x; e < BK * D4; e += WG) {
        const uint c = e / D4;
        const uint d4 = e - c * D4;
        const bool live = kt + c < key_stop;
        const uint base = live ? kv_base(b, hkv, kt + c) : 0u;
        k_tile[c * STRIDE + d4] = live ? load_k(base, d4) : vec4(0.0);
        if (with_v) {
            v_tile[c * STRIDE + d4] = live ? load_v(base, d4) : vec4(0.0);
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint rg = tid % RGA, kg = tid / RGA;   // the product tile's (tid < PA)
    const uint rgb = tid % RGB, dg = tid / RGB;  // dq's (tid < PB)

    // The rows' q and dout, and dout . out per vec4 (summed per row after sweep 1).
    for (uint e = tid; e < BQ * STRIDE; e += WG) {
        const uint r = e / STRIDE;
        const uint d4 = e - r * STRIDE;
        const uint rho = row0 + r;
        const bool live = rho < pc.rows && d4 < D4;
        const uint base = live ? q_base(b, hkv, rho) : 0u;
        const vec4 dd = live ? load_do(base, d4) : vec4(0.0);
        q_tile[e] = live ? load_q(base, d4) : vec4(0.0);
        do_tile[e] = dd;
        di_part[e] = live ? dot(dd, load_o(base, d4)) : 0.0;
    }
    for (uint r = tid; r < BQ; r += WG) {
        row_limit[r] = row0 + r < pc.rows ? visible_keys(row0 + r) : 0u;
    }
    [[unroll]] for (uint e = 0u; e < NB * ND4; e++) {
        acc[e] = vec4(0.0);
    }
    [[unroll]] for (uint i = 0u; i < MR; i++) {
        run_m[i] = NEG;
        run_l[i] = 0.0;
    }
    // The last row of the tile sees the most keys: no tile past its limit is needed.
    const uint last_row = min(row0 + BQ, pc.rows) - 1u;
    const uint key_stop = visible_keys(last_row);

    // Sweep 1: the softmax statistics, online per invocation over its keys.
    for (uint kt = 0u; STATS_GIVEN == 0u && kt < key_stop; kt += BK) {
        load_keys(b, hkv, kt, key_stop, false);
        barrier();
        if (tid < PA) {
            tile_scores(rg, kg);
            [[unroll]] for (uint i = 0u; i < MR; i++) {
                const uint r = rg + RGA * i;
                float tile_max = NEG;
                [[unroll]] for (uint j = 0u; j < MK; j++) {
                    const float s = kt + kg + KGA * j < row_limit[r]
                                        ? s_acc[i * MK + j] * pc.scale_log2 : NEG;
                    s_acc[i * MK + j] = s;
                    tile_max = max(tile_max, s);
                }
                if (tile_max != NEG) {
                    const float m_new = max(run_m[i], tile_max);
                    float l = run_l[i] > 0.0 ? run_l[i] * exp2(run_m[i] - m_new) : 0.0;
                    [[unroll]] for (uint j = 0u; j < MK; j++) {
                        if (s_acc[i * MK + j] != NEG) {
                            l += exp2(s_acc[i * MK + j] - m_new);
                        }
                    }
                    run_m[i] = m_new;
                    run_l[i] = l;
                }
            }
        }
        barrier();
    }
    if (STATS_GIVEN == 0u && tid < PA) {
        [[unroll]] for (uint i = 0u; i < MR; i++) {
            red_m[(rg + RGA * i) * KGA + kg] = run_m[i];
            red_l[(rg + RGA * i) * KGA + kg] = run_l[i];
        }
    }
    barrier();
    // One invocation per row merges its pairs in key-group order; a pair with a zero sum has
    // seen no key and is left out.
    for (uint r = tid; r < BQ; r += WG) {
        const uint rho = row0 + r;
        float di = 0.0;
        for (uint d4 = 0u; d4 < D4; d4++) {
            di += di_part[r * STRIDE + d4];
        }
        row_di[r] = di;
        if (STATS_GIVEN != 0u) {
            const uint at = rho < pc.rows ? stats_at(b, hkv, rho) : 0u;
            row_m[r] = rho < pc.rows ? stats[at] : NEG;
            row_inv[r] = rho < pc.rows ? stats[at + 1u] : 0.0;
            if (rho < pc.rows) {
                stats[at + 2u] = di;
            }
            continue;
        }
        float m = NEG;
        float l = 0.0;
        for (uint g = 0u; g < KGA; g++) {
            const float m2 = red_m[r * KGA + g];
            const float l2 = red_l[r * KGA + g];
            if (l2 > 0.0) {
                if (l > 0.0) {
                    const float mm = max(m, m2);
                    l = l * exp2(m - mm) + l2 * exp2(m2 - mm);
                    m = mm;
                } else {
                    m = m2;
                    l = l2;
                }
            }
        }
        const float inv = l > 0.0 ? 1.0 / l : 0.0;
        row_m[r] = m;
        row_inv[r] = inv;
        if (rho < pc.rows) {
            const uint at = stats_at(b, hkv, rho);
            stats[at] = m;
            stats[at + 1u] = inv;
            stats[at + 2u] = di;
            stats[at + 3u] = 0.0;
        }
    }
    barrier();

    // Sweep 2: dS and dq.
    for (uint kt = 0u; kt < key_stop; kt += BK) {
        load_keys(b, hkv, kt, key_stop, true);
        barrier();
        if (tid < PA) {
            tile_products(rg, kg);
            [[unroll]] for (uint i = 0u; i < MR; i++) {
                const uint r = rg + RGA * i;
                [[unroll]] for (uint j = 0u; j < MK; j++) {
                    const uint c = kg + KGA * j;
                    float ds = 0.0;
                    if (kt + c < row_limit[r]) {
                        const float p = exp2(s_acc[i * MK + j] * pc.scale_log2 - row_m[r]) *
                                        row_inv[r];
                        ds = p * (dp_acc[i * MK + j] - row_di[r]);
                    }
                    ds_tile[c * PSTR + r] = ds;
                }
            }
        }
        barrier();
        if (tid < PB) {
            // Not unrolled: each pass is already NB x ND4 vec4 FMAs wide.
            [[dont_unroll]] for (uint c = 0u; c < BK; c++) {
                float dsv[NB];
                vec4 kk[ND4];
                [[unroll]] for (uint i = 0u; i < NB; i++) {
                    dsv[i] = ds_tile[c * PSTR + rgb + RGB * i];
                }
                [[unroll]] for (uint j = 0u; j < ND4; j++) {
                    kk[j] = k_tile[c * STRIDE + min(dg + DG * j, D4 - 1u)];
                }
                [[unroll]] for (uint i = 0u; i < NB; i++) {
                    [[unroll]] for (uint j = 0u; j < ND4; j++) {
                        acc[i * ND4 + j] += dsv[i] * kk[j];
                    }
                }
            }
        }
        barrier();
    }

    if (tid < PB) {
        [[unroll]] for (uint i = 0u; i < NB; i++) {
            const uint r = rgb + RGB * i;
            if (row0 + r < pc.rows) {
                const uint base = q_base(b, hkv, row0 + r);
                [[unroll]] for (uint j = 0u; j < ND4; j++) {
                    const uint d4 = dg + DG * j;
                    const vec4 g = acc[i * ND4 + j] * pc.scale;
                    [[unroll]] for (uint x = 0u; x < 4u; x++) {
                        if (d4 < D4 && d4 * 4u + x < D) {
                            dq[base + d4 * 4u + x] = g[x];
                        }
                    }
                }
            }
        }
    }
}
