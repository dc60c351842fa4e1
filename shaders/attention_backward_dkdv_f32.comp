#version 450
// attention_backward_dkdv_f32: the second half of mcl_attention_backward. One workgroup per
// BK keys of one (batch, kv head) holds their k and v in shared memory and walks every query
// row that can see them (rows rho = t * G + g over the G query heads of the group, in tiles
// of BQ, in increasing order; with the causal mask the rows before the first that sees key
// kt are skipped). Per row tile, with the statistics attention_backward_dq_f32.comp left in
// the scratch:
//   P = exp2(s - max) / sum, dP = dout . v, dS = P (dP - Di)   (a BK x BQ tile of each)
//   dv += P^T dout,  dk += dS^T q
// and at the end dk = scale * the sum. Keys at or past kv_len get zeros. Every dk / dv element
// belongs to one invocation, which adds its terms in row order: no atomics, the same bits on
// every run.
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : dout [B, T, Hq, D] (readonly float[])
//   set 0 binding 4   : stats [B, Hkv, T * G, 4] (readonly float[])
//   set 0 binding 5..6: dk, dv [B, S, Hkv, D] (writeonly float[])
//   dispatch          : (ceil(S / BK), Hkv, B)
// Shared memory: 16 * STRIDE * 2 * (BQ + BK) + 4 * (2 * BK * BQ + 4 * BQ) bytes.
#extension GL_GOOGLE_include_directive : require
#include "attention_backward_common.glsl"

const uint ACC = (BK * D4 + WG - 1u) / WG;  // dk and dv vec4s each invocation accumulates
// Where BQ divides WG, an invocation's entries of a BK x BQ tile are SC keys of one query row.
const bool ROW_SHARED = WG % BQ == 0u;
const uint SC = ROW_SHARED ? (BK * BQ + WG - 1u) / WG : 1u;

layout(std430, set = 0, binding = 3) readonly buffer BufDO { float dout[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufStats { float stats[]; };
layout(std430, set = 0, binding = 5) writeonly buffer BufDK { float dk[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufDV { float dv[]; };

shared vec4 k_tile[BK * STRIDE];
shared vec4 v_tile[BK * STRIDE];
shared vec4 q_tile[BQ * STRIDE];
shared vec4 do_tile[BQ * STRIDE];
shared float p_tile[BK * BQ];
shared float ds_tile[BK * BQ];
shared float row_m[BQ];
shared float row_inv[BQ];
shared float row_di[BQ];
shared uint row_limit[BQ];

// Indexed only in unrolled loops, so that they stay in registers.
vec4 dk_acc[ACC];
vec4 dv_acc[ACC];

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

    for (uint e = tid; e < BK * STRIDE; e += WG) {
        const uint c = e / STRIDE;
        const uint d4 = e - c * STRIDE;
        const bool live = kt + c < pc.kv_len && d4 < D4;
        const uint base = live ? kv_base(b, hkv, kt + c) : 0u;
        k_tile[e] = live ? load_k(base, d4) : vec4(0.0);
        v_tile[e] = live ? load_v(base, d4) : vec4(0.0);
    }
    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        dk_acc[j] = vec4(0.0);
        dv_acc[j] = vec4(0.0);
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
        if (tid < BQ) {
            const uint rho = r0 + tid;
            const bool live = rho < pc.rows;
            const uint at = live ? stats_at(b, hkv, rho) : 0u;
            row_m[tid] = live ? stats[at] : 0.0;
            row_inv[tid] = live ? stats[at + 1u] : 0.0;
            row_di[tid] = live ? stats[at + 2u] : 0.0;
            row_limit[tid] = live ? visible_keys(rho) : 0u;
        }
        barrier();

        if (ROW_SHARED) {
            // The row's q and dout vec4s read from shared memory once for its SC keys (the
            // same sums, d4 in order, as the loop below).
            const uint r = tid % BQ, c0 = tid / BQ;
            float s[SC], dp[SC];
            [[unroll]] for (uint j = 0u; j < SC; j++) {
                s[j] = 0.0;
                dp[j] = 0.0;
            }
            for (uint d4 = 0u; d4 < D4; d4++) {
                const vec4 qq = q_tile[r * STRIDE + d4], dd = do_tile[r * STRIDE + d4];
                [[unroll]] for (uint j = 0u; j < SC; j++) {
                    const uint c = min(c0 + j * (WG / BQ), BK - 1u);
                    s[j] += dot(qq, k_tile[c * STRIDE + d4]);
                    dp[j] += dot(dd, v_tile[c * STRIDE + d4]);
                }
            }
            [[unroll]] for (uint j = 0u; j < SC; j++) {
                const uint c = c0 + j * (WG / BQ);
                if (c < BK) {
                    float p = 0.0;
                    float ds = 0.0;
                    if (kt + c < row_limit[r]) {
                        p = exp2(s[j] * pc.scale_log2 - row_m[r]) * row_inv[r];
                        ds = p * (dp[j] - row_di[r]);
                    }
                    p_tile[c * BQ + r] = p;
                    ds_tile[c * BQ + r] = ds;
                }
            }
        } else {
            for (uint e = tid; e < BK * BQ; e += WG) {
                const uint c = e / BQ;
                const uint r = e - c * BQ;
                float p = 0.0;
                float ds = 0.0;
                if (kt + c < row_limit[r]) {
                    float s = 0.0;
                    float dp = 0.0;
                    for (uint d4 = 0u; d4 < D4; d4++) {
                        s += dot(q_tile[r * STRIDE + d4], k_tile[c * STRIDE + d4]);
                        dp += dot(do_tile[r * STRIDE + d4], v_tile[c * STRIDE + d4]);
                    }
                    p = exp2(s * pc.scale_log2 - row_m[r]) * row_inv[r];
                    ds = p * (dp - row_di[r]);
                }
                p_tile[e] = p;
                ds_tile[e] = ds;
            }
        }
        barrier();

        // Not unrolled: each pass is already 2 ACC vec4 FMAs wide (see attention_tile.glsl).
        [[dont_unroll]] for (uint r = 0u; r < BQ; r++) {
            [[unroll]] for (uint j = 0u; j < ACC; j++) {
                const uint e = tid + j * WG;
                if (e < BK * D4) {
                    const uint c = e / D4;
                    const uint d4 = e - c * D4;
                    dv_acc[j] += p_tile[c * BQ + r] * do_tile[r * STRIDE + d4];
                    dk_acc[j] += ds_tile[c * BQ + r] * q_tile[r * STRIDE + d4];
                }
            }
        }
        barrier();
    }

    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        const uint e = tid + j * WG;
        const uint c = e / D4;
        if (e < BK * D4 && kt + c < pc.seq_kv) {
            const bool live = kt + c < pc.kv_len;
            const vec4 gk = live ? dk_acc[j] * pc.scale : vec4(0.0);
            const vec4 gv = live ? dv_acc[j] : vec4(0.0);
            const uint base = kv_base(b, hkv, kt + c);
            const uint d = (e - c * D4) * 4u;
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                if (d + i < D) {
                    dk[base + d + i] = gk[i];
                    dv[base + d + i] = gv[i];
                }
            }
        }
    }
}
