#version 450
// gemv_q_dot: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for 1..8 rows of x, W Q8_0 or
// Q4_0 [N, K], with x already quantized to 8 bits per block of 32 (quantize_q8_1.comp): the
// integer-dot path. Per block, y gains d_w * d_x * (sum of 8 packed 4x8-bit dot products),
// minus 8 * (sum of x's codes) for Q4_0, whose codes are stored + 8.
//
// Streaming is gemv_q.comp's (gemv_stage.glsl): R row lanes x S slices of K per workgroup,
// NR rows of W per invocation, whole units (UB blocks) loaded with wide loads before any is
// decoded, no barrier in the loop. The invocations of a slice read the same activations (2
// uvec4 of codes, a scale and for Q4_0 a sum per block and row of x), so one load serves a
// subgroup and NR rows of W. The integer sum of a block (|sum| < 2^20) becomes a float by
// adding it to the bits of 1.5 * 2^23 and subtracting that float, exactly, where a
// conversion instruction would run at a quarter rate on some GPUs.
//
//   specialization constants: as gemv_q.comp (FORMAT is FMT_Q8_0 or FMT_Q4_0)
//   set 0: 0 quantized x (qdot.glsl's layout), 1 W blocks, 2 tail word (any buffer when
//     unused), 3 bias [N] (any buffer when unused), 4 y [M, N]
//   push constants: N, K, has_bias, ldy, y0 (as gemv_q.comp). The workgroup index is
//     x + y * (groups in x).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 5) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const bool TAIL = false;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 1;
layout(constant_id = 6) const uint LW = 4;
layout(constant_id = 7) const bool ALIGNED = false;
layout(constant_id = 8) const uint UB = 1;
layout(constant_id = 9) const bool PREFETCH = false;
layout(constant_id = 10) const bool ROLL = false;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct4 { uvec4 act4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer BufTail { uint wtail[]; };
layout(std430, set = 0, binding = 3) restrict readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 4) restrict writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint N, K;
    uint has_bias;
    uint ldy, y0;  // y's row stride and the column of W's row 0 (a W split in row ranges)
} pc;

#include "quant.glsl"
#include "qdot.glsl"
#include "gemv_stage.glsl"

// An int of magnitude below 2^22 as a float, exactly.
float int_to_float(int v) {
    return uintBitsToFloat(uint(v) + 0x4B400000u) - 12582912.0;
}

// Piece p of unit u (PIECE_BLOCKS blocks at bytes 0, BLOCK_BYTES of w), then the next
// piece's words moved into place: nb blocks per row of x, AB blocks of activations in all.
void piece(inout uint w[NR][RW], uint p, uint u, uint nb, uint AB, inout float acc[NR][M]) {
    [[unroll]] for (uint b = 0u; b < PIECE_BLOCKS; b++) {
        const uint o = b * BLOCK_BYTES;
        const uint kb = u * UB + p * PIECE_BLOCKS + b;
        float dw[NR];
        uint c[NR][8];  // code word k: elements 4k .. 4k + 3 as signed bytes
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            dw[i] = quant_half(gemv_w16(w[i], o));
            [[unroll]] for (uint k = 0u; k < 8u; k++) {
                if (FORMAT == FMT_Q8_0) {
                    c[i][k] = gemv_w32(w[i], o + 2u + 4u * k);
                } else {
                    // qs word k & 3: low nibbles are elements 4k.., high ones 16 + 4k..; codes
                    // 0..15 are non-negative signed bytes as they stand.
                    const uint q = gemv_w32(w[i], o + 2u + 4u * (k & 3u));
                    c[i][k] = (k < 4u ? q : q >> 4) & 0x0F0F0F0Fu;
                }
            }
        }
        [[unroll]] for (uint m = 0u; m < M; m++) {
            const uint ab = m * nb + kb;
            const uvec4 a0 = act4[2u * ab], a1 = act4[2u * ab + 1u];
            const float dx = uintBitsToFloat(act[8u * AB + ab]);
            const int off = FORMAT == FMT_Q4_0 ? -8 * int(act[9u * AB + ab]) : 0;
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                int isum = off + sdot4x8(c[i][0], a0.x);
                isum += sdot4x8(c[i][1], a0.y);
                isum += sdot4x8(c[i][2], a0.z);
                isum += sdot4x8(c[i][3], a0.w);
                isum += sdot4x8(c[i][4], a1.x);
                isum += sdot4x8(c[i][5], a1.y);
                isum += sdot4x8(c[i][6], a1.z);
                isum += sdot4x8(c[i][7], a1.w);
                acc[i][m] = fma(dw[i] * dx, int_to_float(isum), acc[i][m]);
            }
        }
    }
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        gemv_next_piece(w[i], p);
    }
}

void main() {
    const uint r = gl_LocalInvocationID.x, s = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / 32u;
    const uint units = nb / UB;
    const uint AB = M * nb;

    // Byte offset of each row. Rows past N read row N - 1 (in bounds) and are never stored.
    uint row_at[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        row_at[i] = min(wg * ROWS + i * R + r, pc.N - 1u) * (nb * BLOCK_BYTES);
    }
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            acc[i][m] = 0.0;
        }
    }

    uint cur[NR][RW];
    uint u = s;
    if (u < units) {
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            gemv_load(row_at[i] + u * UNIT_BYTES, cur[i]);
        }
    }
    for (; u < units; u += S) {
        uint nxt[NR][RW];
        if (PREFETCH) {
            // The lane's next unit, or (past its last) the row's last unit again: in bounds,
            // an L1 hit, unused.
            const uint un = min(u + S, units - 1u);
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                gemv_load(row_at[i] + un * UNIT_BYTES, nxt[i]);
            }
        }
        if (!ALIGNED) {
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                gemv_realign(cur[i], ((row_at[i] + u * UNIT_BYTES) % LOAD_BYTES) >> 1);
            }
        }
        if (ROLL) {
            [[dont_unroll]] for (uint p = 0u; p < PIECES; p++) {
                piece(cur, p, u, nb, AB, acc);
            }
        } else {
            [[unroll]] for (uint p = 0u; p < PIECES; p++) {
                piece(cur, p, u, nb, AB, acc);
            }
        }
        if (PREFETCH) {
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                [[unroll]] for (uint j = 0u; j < RW; j++) {
                    cur[i][j] = nxt[i][j];
                }
            }
        } else if (u + S < units) {
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                gemv_load(row_at[i] + (u + S) * UNIT_BYTES, cur[i]);
            }
        }
    }

    gemv_finish(acc, wg);
}
