#version 450
// attention_backward_dq_f32: the first half of mcl_attention_backward. One workgroup per BQ
// query rows of one (batch, kv head), like the forward, so a K/V tile loaded once serves the
// G query heads that share it. It
//   1. loads the rows' q and dout into shared memory and reduces Di = dout . out per row;
//   2. walks the visible key tiles once for the softmax statistics: each invocation keeps an
//      online (max, sum) over the scores of its own columns (scores as in the forward,
//      scale * log2(e) * q . k, masked keys left out), and a tree over the row's TPR
//      invocations merges them; the rows' max, 1 / sum and Di go to the statistics scratch
//      for attention_backward_dkdv_f32.comp;
//   3. walks them again: P = exp2(s - max) / sum, dP = dout . v, dS = P (dP - Di), and
//      dq += dS k (a BQ x BK tile of dS in shared memory, no T x S matrix anywhere);
//   4. writes dq = scale * the sum. A row that sees no key gets zeros.
// Every dq element belongs to one invocation, which adds its terms in key order: no atomics,
// the same bits on every run.
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3 (BQ divides WG)
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3..4: out, dout [B, T, Hq, D] (readonly float[])
//   set 0 binding 5   : dq [B, T, Hq, D] (writeonly float[])
//   set 0 binding 6   : stats [B, Hkv, T * G, 4] (writeonly float[])
//   dispatch          : (ceil(T * G / BQ), Hkv, B)
// Shared memory: 16 * STRIDE * 2 * (BQ + BK) + 4 * (BQ * BK + 2 * WG + 4 * BQ) bytes.
#extension GL_GOOGLE_include_directive : require
#include "attention_backward_common.glsl"

const uint TPR = WG / BQ;                   // invocations per row in the statistics sweep
const uint CPT = (BK + TPR - 1u) / TPR;     // columns of a key tile per invocation there
const uint ACC = (BQ * D4 + WG - 1u) / WG;  // dq vec4s each invocation accumulates
// Where BK divides WG, an invocation's entries of a BQ x BK tile in sweep 2 are SR rows of one
// key column.
const bool COL_SHARED = WG % BK == 0u;
const uint SR = COL_SHARED ? (BQ * BK + WG - 1u) / WG : 1u;

layout(std430, set = 0, binding = 3) readonly buffer BufO { float o[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufDO { float dout[]; };
layout(std430, set = 0, binding = 5) writeonly buffer BufDQ { float dq[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufStats { float stats[]; };

shared vec4 q_tile[BQ * STRIDE];
shared vec4 do_tile[BQ * STRIDE];
shared vec4 k_tile[BK * STRIDE];
shared vec4 v_tile[BK * STRIDE];
shared float ds_tile[BQ * BK];
shared float red_a[WG];
shared float red_b[WG];
shared float row_m[BQ];      // score max, log2 domain
shared float row_inv[BQ];    // 1 / sum of exp2(score - max); 0 for a row that sees no key
shared float row_di[BQ];     // dout . out
shared uint row_limit[BQ];   // keys < row_limit are visible to the row

// Indexed only in unrolled loops, so that they stay in registers.
vec4 acc[ACC];
float score[CPT];

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

// The scaled score of tile row r against tile key c.
float tile_score(uint r, uint c) {
    float s = 0.0;
    for (uint d4 = 0u; d4 < D4; d4++) {
        s += dot(q_tile[r * STRIDE + d4], k_tile[c * STRIDE + d4]);
    }
    return s * pc.scale_log2;
}

// Sum of red_a over each row's TPR invocations, into red_a[row * TPR]. Every invocation
// calls it (barriers must be in uniform control flow).
void reduce_rows_sum(uint tid, uint lane) {
    for (uint width = TPR / 2u; width > 0u; width /= 2u) {
        if (lane < width) {
            red_a[tid] += red_a[tid + width];
        }
        barrier();
    }
}

// Merge of the (max, sum) pairs in red_a / red_b over each row's invocations. A pair with a
// zero sum has seen no key and is left out.
void reduce_rows_softmax(uint tid, uint lane) {
    for (uint width = TPR / 2u; width > 0u; width /= 2u) {
        if (lane < width) {
            const float m1 = red_a[tid];
            const float l1 = red_b[tid];
            const float m2 = red_a[tid + width];
            const float l2 = red_b[tid + width];
            if (l2 > 0.0) {
                if (l1 > 0.0) {
                    const float m = max(m1, m2);
                    red_a[tid] = m;
                    red_b[tid] = l1 * exp2(m1 - m) + l2 * exp2(m2 - m);
                } else {
                    red_a[tid] = m2;
                    red_b[tid] = l2;
                }
            }
        }
        barrier();
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint my_row = tid / TPR;
    const uint lane = tid - my_row * TPR;

    for (uint e = tid; e < BQ * STRIDE; e += WG) {
        const uint r = e / STRIDE;
        const uint d4 = e - r * STRIDE;
        const uint rho = row0 + r;
        const bool live = rho < pc.rows && d4 < D4;
        const uint base = live ? q_base(b, hkv, rho) : 0u;
        q_tile[e] = live ? load_q(base, d4) : vec4(0.0);
        do_tile[e] = live ? load_do(base, d4) : vec4(0.0);
    }
    if (tid < BQ) {
        const uint rho = row0 + tid;
        row_limit[tid] = rho < pc.rows ? visible_keys(rho) : 0u;
    }
    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        acc[j] = vec4(0.0);
    }
    // The last row of the tile sees the most keys: no tile past its limit is needed.
    const uint last_row = min(row0 + BQ, pc.rows) - 1u;
    const uint key_stop = visible_keys(last_row);
    barrier();

    // Di = dout . out, the row's TPR invocations splitting the head vector.
    {
        const uint rho = row0 + my_row;
        float part = 0.0;
        if (rho < pc.rows) {
            const uint base = q_base(b, hkv, rho);
            for (uint d4 = lane; d4 < D4; d4 += TPR) {
                part += dot(do_tile[my_row * STRIDE + d4], load_o(base, d4));
            }
        }
        red_a[tid] = part;
        barrier();
        reduce_rows_sum(tid, lane);
        if (lane == 0u) {
            row_di[my_row] = red_a[tid];
        }
        barrier();
    }

    // Sweep 1: the softmax statistics, online per invocation over its columns.
    float m = NEG;
    float l = 0.0;
    for (uint kt = 0u; kt < key_stop; kt += BK) {
        for (uint e = tid; e < BK * D4; e += WG) {
            const uint c = e / D4;
            const uint d4 = e - c * D4;
            k_tile[c * STRIDE + d4] =
                kt + c < key_stop ? load_k(kv_base(b, hkv, kt + c), d4) : vec4(0.0);
        }
        barrier();
        // The row's q vec4s read from shared memory once for the invocation's CPT columns
        // (each score the sum tile_score makes, d4 in order).
        float sum[CPT];
        [[unroll]] for (uint i = 0u; i < CPT; i++) {
            sum[i] = 0.0;
        }
        for (uint d4 = 0u; d4 < D4; d4++) {
            const vec4 qq = q_tile[my_row * STRIDE + d4];
            [[unroll]] for (uint i = 0u; i < CPT; i++) {
                sum[i] += dot(qq, k_tile[min(lane + i * TPR, BK - 1u) * STRIDE + d4]);
            }
        }
        float tile_max = NEG;
        [[unroll]] for (uint i = 0u; i < CPT; i++) {
            const uint c = lane + i * TPR;
            float s = NEG;
            if (c < BK && kt + c < row_limit[my_row]) {
                s = sum[i] * pc.scale_log2;
            }
            score[i] = s;
            tile_max = max(tile_max, s);
        }
        if (tile_max != NEG) {
            const float m_new = max(m, tile_max);
            l = l > 0.0 ? l * exp2(m - m_new) : 0.0;
            [[unroll]] for (uint i = 0u; i < CPT; i++) {
                if (score[i] != NEG) {
                    l += exp2(score[i] - m_new);
                }
            }
            m = m_new;
        }
        barrier();
    }
    red_a[tid] = m;
    red_b[tid] = l;
    barrier();
    reduce_rows_softmax(tid, lane);
    if (lane == 0u) {
        const float sum = red_b[tid];
        row_m[my_row] = red_a[tid];
        row_inv[my_row] = sum > 0.0 ? 1.0 / sum : 0.0;
        const uint rho = row0 + my_row;
        if (rho < pc.rows) {
            const uint at = stats_at(b, hkv, rho);
            stats[at] = red_a[tid];
            stats[at + 1u] = sum > 0.0 ? 1.0 / sum : 0.0;
            stats[at + 2u] = row_di[my_row];
            stats[at + 3u] = 0.0;
        }
    }
    barrier();

    // Sweep 2: dS and dq.
    for (uint kt = 0u; kt < key_stop; kt += BK) {
        for (uint e = tid; e < BK * D4; e += WG) {
            const uint c = e / D4;
            const uint d4 = e - c * D4;
            const bool live = kt + c < key_stop;
            const uint base = live ? kv_base(b, hkv, kt + c) : 0u;
            k_tile[c * STRIDE + d4] = live ? load_k(base, d4) : vec4(0.0);
            v_tile[c * STRIDE + d4] = live ? load_v(base, d4) : vec4(0.0);
        }
        barrier();
        if (COL_SHARED) {
            // The column's k and v vec4s read from shared memory once for its SR rows (the
            // same sums, d4 in order, as tile_score and the loop below).
            const uint c = tid % BK, r0 = tid / BK;
            float s[SR], dp[SR];
            [[unroll]] for (uint j = 0u; j < SR; j++) {
                s[j] = 0.0;
                dp[j] = 0.0;
            }
            for (uint d4 = 0u; d4 < D4; d4++) {
                const vec4 kk = k_tile[c * STRIDE + d4], vv = v_tile[c * STRIDE + d4];
                [[unroll]] for (uint j = 0u; j < SR; j++) {
                    const uint r = min(r0 + j * (WG / BK), BQ - 1u);
                    s[j] += dot(q_tile[r * STRIDE + d4], kk);
                    dp[j] += dot(do_tile[r * STRIDE + d4], vv);
                }
            }
            [[unroll]] for (uint j = 0u; j < SR; j++) {
                const uint r = r0 + j * (WG / BK);
                if (r < BQ) {
                    float ds = 0.0;
                    if (kt + c < row_limit[r]) {
                        const float p = exp2(s[j] * pc.scale_log2 - row_m[r]) * row_inv[r];
                        ds = p * (dp[j] - row_di[r]);
                    }
                    ds_tile[r * BK + c] = ds;
                }
            }
        } else {
            for (uint e = tid; e < BQ * BK; e += WG) {
                const uint r = e / BK;
                const uint c = e - r * BK;
                float ds = 0.0;
                if (kt + c < row_limit[r]) {
                    const float p = exp2(tile_score(r, c) - row_m[r]) * row_inv[r];
                    float dp = 0.0;
                    for (uint d4 = 0u; d4 < D4; d4++) {
                        dp += dot(do_tile[r * STRIDE + d4], v_tile[c * STRIDE + d4]);
                    }
                    ds = p * (dp - row_di[r]);
                }
                ds_tile[e] = ds;
            }
        }
        barrier();
        // Not unrolled: each pass is already ACC vec4 FMAs wide (see attention_tile.glsl).
        [[dont_unroll]] for (uint c = 0u; c < BK; c++) {
            [[unroll]] for (uint j = 0u; j < ACC; j++) {
                const uint e = tid + j * WG;
                if (e < BQ * D4) {
                    const uint r = e / D4;
                    acc[j] += ds_tile[r * BK + c] * k_tile[c * STRIDE + (e - r * D4)];
                }
            }
        }
        barrier();
    }

    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        const uint e = tid + j * WG;
        const uint r = e / D4;
        if (e < BQ * D4 && row0 + r < pc.rows) {
            const vec4 g = acc[j] * pc.scale;
            const uint base = q_base(b, hkv, row0 + r);
            const uint d = (e - r * D4) * 4u;
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                if (d + i < D) {
                    dq[base + d + i] = g[i];
                }
            }
        }
    }
}
