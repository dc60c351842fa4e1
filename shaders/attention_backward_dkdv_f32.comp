#version 450
// attention_backward_dkdv_f32: the second half of mcl_attention_backward. One workgroup per
// BK keys of one (batch, kv head) holds their k and v in shared memory and walks every query
// row that can see them (rows rho = t * G + g over the G query heads of the group, in tiles
// of BQ, in increasing order; with the causal mask the rows before the first that sees key
// kt are skipped). Per row tile, with the statistics attention_backward_dq_f32.comp left in
// the scratch:
//   P = exp2(s - max) / sum, dP = dout . v, dS = P (dP - Di)   (a BQ x BK tile of each)
//   dv += P^T dout,  dk += dS^T q
// each invocation holding NB keys by ND4 vec4s of dk and of dv; at the end dk = scale * the
// sum. Keys at or past kv_len get zeros. Every dk / dv element belongs to one invocation,
// which adds its terms in row order: no atomics, the same bits on every run.
//
//   workgroup size : specialization constant 0; constants 1..6 as the common file says, NB the
//                    dk / dv keys per invocation (divides BK, BK / NB <= WG)
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : dout [B, T, Hq, D] (readonly float[])
//   set 0 binding 4   : stats [B, Hkv, T * G, 4] (readonly float[])
//   set 0 binding 5..6: dk, dv [B, S, Hkv, D] (writeonly float[])
//   dispatch          : (ceil(S / BK), Hkv, B)
// Shared memory: 16 * STRIDE * 2 * (BQ + BK) + 4 * (2 * BQ * PSTR + 4 * BQ) bytes.
#extension GL_GOOGLE_include_directive : require
#include "attention_backward_common.glsl"

// dk / dv's invocations: key group kgb = tid % KGB (keys kgb + KGB i), column group
// dg = tid / KGB (vec4s dg + DG j of the head vector).
const uint KGB = BK / NB;
const uint DG = WG / KGB;
const uint PB = KGB * DG;
const uint ND4 = (D4 + DG - 1u) / DG;
// P and dS are row-major, [r * PSTR + c]: the dk / dv loop reads consecutive keys of one row.
// PSTR is 32 / RGA modulo 32, so that the product tile's stores from 32 invocations fall in
// distinct banks.
const uint PSW = RGA >= 32u ? 1u : 32u / RGA;
const uint PSTR = BK + (PSW + 32u - (BK % 32u)) % 32u;

layout(std430, set = 0, binding = 3) readonly buffer BufDO { float dout[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufStats { float stats[]; };
layout(std430, set = 0, binding = 5) writeonly buffer BufDK { float dk[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufDV { float dv[]; };

shared float p_tile[BQ * PSTR];
shared float ds_tile[BQ * PSTR];
shared float row_m[BQ];
shared float row_inv[BQ];
shared float row_di[BQ];
shared uint row_limit[BQ];

// Indexed only in unrolled loops, so that they stay in registers.
vec4 dk_acc[NB * ND4];
vec4 dv_acc[NB * ND4];

vec4 load_do(uint base, uint d4) {
    vec4 r = vec4(0.0);
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        if (d4 * 4u + i < D) {
            r[i] = dout[base + d4 * 4u + i];
        }
    }
    return r;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint kt = gl_WorkGroupID.x * BK;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint rg = tid % RGA, kg = tid / RGA;   // the product tile's (tid < PA)
    const uint kgb = tid % KGB, dg = tid / KGB;  // dk / dv's (tid < PB)

    for (uint e = tid; e < BK * STRIDE; e += WG) {
        const uint c = e / STRIDE;
        const uint d4 = e - c * STRIDE;
        const bool live = kt + c < pc.kv_len && d4 < D4;
        const uint base = live ? kv_base(b, hkv, kt + c) : 0u;
        k_tile[e] = live ? load_k(base, d4) : vec4(0.0);
        v_tile[e] = live ? load_v(base, d4) : vec4(0.0);
    }
    [[unroll]] for (uint e = 0u; e < NB * ND4; e++) {
        dk_acc[e] = vec4(0.0);
        dv_acc[e] = vec4(0.0);
    }

    // The first row that sees key kt: query t sees it once t + kv_len - T >= kt. A tile at or
    // past kv_len is seen by none.
    uint rho_begin = pc.rows;
    if (kt < pc.kv_len) {
        rho_begin = 0u;
        if (pc.causal != 0u) {
            const int t0 = int(kt) + int(pc.seq_q) - int(pc.kv_len);
            rho_begin = uint(clamp(t0, 0, int(pc.seq_q))) * pc.group;
        }
    }

    for (uint r0 = rho_begin; r0 < pc.rows; r0 += BQ) {
        for (uint e = tid; e < BQ * STRIDE; e += WG) {
            const uint r = e / STRIDE;
            const uint d4 = e - r * STRIDE;
            const uint rho = r0 + r;
            const bool live = rho < pc.rows && d4 < D4;
            const uint base = live ? q_base(b, hkv, rho) : 0u;
            q_tile[e] = live ? load_q(base, d4) : vec4(0.0);
            do_tile[e] = live ? load_do(base, d4) : vec4(0.0);
        }
        for (uint r = tid; r < BQ; r += WG) {
            const uint rho = r0 + r;
            const bool live = rho < pc.rows;
            const uint at = live ? stats_at(b, hkv, rho) : 0u;
            row_m[r] = live ? stats[at] : 0.0;
            row_inv[r] = live ? stats[at + 1u] : 0.0;
            row_di[r] = live ? stats[at + 2u] : 0.0;
            row_limit[r] = live ? visible_keys(rho) : 0u;
        }
        barrier();

        if (tid < PA) {
            tile_products(rg, kg);
            [[unroll]] for (uint i = 0u; i < MR; i++) {
                const uint r = rg + RGA * i;
                [[unroll]] for (uint j = 0u; j < MK; j++) {
                    const uint c = kg + KGA * j;
                    float p = 0.0;
                    float ds = 0.0;
                    if (kt + c < row_limit[r]) {
                        p = exp2(s_acc[i * MK + j] * pc.scale_log2 - row_m[r]) * row_inv[r];
                        ds = p * (dp_acc[i * MK + j] - row_di[r]);
                    }
                    p_tile[r * PSTR + c] = p;
                    ds_tile[r * PSTR + c] = ds;
                }
            }
        }
        barrier();

        if (tid < PB) {
            // Not unrolled: each pass is already 2 x NB x ND4 vec4 FMAs wide.
            [[dont_unroll]] for (uint r = 0u; r < BQ; r++) {
                float pv[NB], dsv[NB];
                vec4 dd[ND4], qq[ND4];
                [[unroll]] for (uint i = 0u; i < NB; i++) {
                    pv[i] = p_tile[r * PSTR + kgb + KGB * i];
                    dsv[i] = ds_tile[r * PSTR + kgb + KGB * i];
                }
                [[unroll]] for (uint j = 0u; j < ND4; j++) {
                    const uint d4 = min(dg + DG * j, D4 - 1u);
                    dd[j] = do_tile[r * STRIDE + d4];
                    qq[j] = q_tile[r * STRIDE + d4];
                }
                [[unroll]] for (uint i = 0u; i < NB; i++) {
                    [[unroll]] for (uint j = 0u; j < ND4; j++) {
                        dv_acc[i * ND4 + j] += pv[i] * dd[j];
                        dk_acc[i * ND4 + j] += dsv[i] * qq[j];
                    }
                }
            }
        }
        barrier();
    }

    if (tid < PB) {
        [[unroll]] for (uint i = 0u; i < NB; i++) {
            const uint c = kgb + KGB * i;
            if (kt + c < pc.seq_kv) {
                const bool live = kt + c < pc.kv_len;
                const uint base = kv_base(b, hkv, kt + c);
                [[unroll]] for (uint j = 0u; j < ND4; j++) {
                    const uint d4 = dg + DG * j;
                    const vec4 gk = live ? dk_acc[i * ND4 + j] * pc.scale : vec4(0.0);
                    const vec4 gv = live ? dv_acc[i * ND4 + j] : vec4(0.0);
                    [[unroll]] for (uint x = 0u; x < 4u; x++) {
                        if (d4 < D4 && d4 * 4u + x < D) {
                            dk[base + d4 * 4u + x] = gk[x];
                            dv[base + d4 * 4u + x] = gv[x];
                        }
                    }
                }
            }
        }
    }
}
