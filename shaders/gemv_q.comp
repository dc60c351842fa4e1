#version 450
// gemv_q: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a few rows m of x (decode: 1 to
// 8), W block-quantised [N, K] and dequantized in the shader with f32 arithmetic: the float
// path, the one Polaris runs. Memory-bound where the hardware allows: every weight block is
// read once, by one invocation.
//
// Streaming (gemv_stage.glsl): a workgroup is R row lanes x S slices of K; invocation (r, s)
// owns NR rows of W and, of each, the units s, s + S, ... (UB blocks each), loaded whole with
// uvec4 / uvec2 / uint loads before any is decoded (the next unit's too with PREFETCH). The
// invocations of a slice read the same x, so one x load serves a subgroup, NR rows of W
// (registers) and, through the decoded weight, the M rows of x.
//
// Arithmetic, per unit: codes become floats exactly by or-ing them into the mantissa of a
// power of two and subtracting it together with the format's offset (gemv_bytes,
// gemv_nibbles: two operations a code, no conversion instruction); Q8_0 / Q4_0 / Q6_K sum
// code * x over a block (a Q6_K sub-block of 16) and apply the scale once. Q4_K / Q5_K, with
// one row of x, do the same and subtract min * (sum of x over the sub-block), shared by the
// NR rows; with several rows of x they dequantize each weight once (one fma) and reuse it M
// times, which costs less than M sums of x. Accumulations are fma chains, 4 per 4 weights.
//
//   specialization constants: 0 R (local_size_x), 1 FORMAT (quant.glsl), 2 TAIL, 3 M (rows of
//     x, 1..8), 4 NR (rows of W per invocation), 5 S (local_size_y), 6 LW (words per load:
//     1, 2, 4), 7 ALIGNED, 8 UB (blocks per unit), 9 PREFETCH
//   set 0: 0 x [M, K] f32, 1 W blocks, 2 tail word (any buffer when unused), 3 bias [N] (any
//     buffer when unused), 4 y [M, N]
//   push constants: N, K, has_bias, ldy, y0: y[m, y0 + n] is y[m * ldy + y0 + n] and its
//     bias bias[y0 + n] (a W split in row ranges). The workgroup index is x + y * (groups in
//     x): a grid beyond 65535 workgroups folds into y.
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

layout(std430, set = 0, binding = 0) restrict readonly buffer BufX4 { vec4 x4[]; };
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
#include "gemv_stage.glsl"

// c + dot(a, b) as four fused multiply-adds.
float fdot(vec4 a, vec4 b, float c) {
    return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, c))));
}

// Q8_0 / Q4_0, piece p of unit u: PIECE_BLOCKS blocks at bytes 0, BLOCK_BYTES of w.
void piece_q8_q4(uint w[NR][RW], uint p, uint u, uint K4, inout float acc[NR][M]) {
    [[unroll]] for (uint b = 0u; b < PIECE_BLOCKS; b++) {
        const uint o = b * BLOCK_BYTES;
        const uint xb = 8u * ((u * UB) + p * PIECE_BLOCKS + b);  // x4 index of the block
        float d[NR];
        float dq[NR][M];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            d[i] = quant_half(gemv_w16(w[i], o));
            [[unroll]] for (uint m = 0u; m < M; m++) {
                dq[i][m] = 0.0;
            }
        }
        if (FORMAT == FMT_Q8_0) {
            // qs word k: elements 4k .. 4k + 3, signed bytes (+ 128 after the xor).
            [[unroll]] for (uint k = 0u; k < 8u; k++) {
                vec4 f[NR];
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    f[i] = gemv_bytes(gemv_w32(w[i], o + 2u + 4u * k) ^ 0x80808080u, 128.0);
                }
                [[unroll]] for (uint m = 0u; m < M; m++) {
                    const vec4 xv = x4[m * K4 + xb + k];
                    [[unroll]] for (uint i = 0u; i < NR; i++) {
                        dq[i][m] = fdot(f[i], xv, dq[i][m]);
                    }
                }
            }
        } else {
            // qs word k: elements 4k .. 4k + 3 (low nibbles) and 16 + 4k .. (high), codes - 8.
            [[unroll]] for (uint k = 0u; k < 4u; k++) {
                vec4 lo[NR], hi[NR];
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    gemv_nibbles(gemv_w32(w[i], o + 2u + 4u * k), 8.0, lo[i], hi[i]);
                }
                [[unroll]] for (uint m = 0u; m < M; m++) {
                    const vec4 xl = x4[m * K4 + xb + k];
                    const vec4 xh = x4[m * K4 + xb + 4u + k];
                    [[unroll]] for (uint i = 0u; i < NR; i++) {
                        dq[i][m] = fdot(hi[i], xh, fdot(lo[i], xl, dq[i][m]));
                    }
                }
            }
        }
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            [[unroll]] for (uint m = 0u; m < M; m++) {
                acc[i][m] = fma(d[i], dq[i][m], acc[i][m]);
            }
        }
    }
}

// Q4_K / Q5_K codes of word k of the piece (sub-block pair c): lo = sub-block 2c (elements
// 64c + 4k ..), hi = sub-block 2c + 1 (64c + 32 + 4k ..), as floats.
void codes_k45(uint w[RW], uint c, uint k, out vec4 lo, out vec4 hi) {
    if (FORMAT == FMT_Q4_K) {
        gemv_nibbles(w[PIECE_FIRST + k], 0.0, lo, hi);
    } else {
        // Q5_K: the fifth bit of element l of sub-block j is bit j of qh[l] (qh at byte 16,
        // words 4 .. 11), moved here to bit 4 of each byte.
        const uint ql = w[PIECE_FIRST + k], qh = w[4u + k] >> (2u * c);
        lo = gemv_bytes((ql & 0x0F0F0F0Fu) | ((qh << 4) & 0x10101010u), 0.0);
        hi = gemv_bytes(((ql >> 4) & 0x0F0F0F0Fu) | ((qh << 3) & 0x10101010u), 0.0);
    }
}

// Q4_K / Q5_K, piece c (sub-blocks 2c, 2c + 1) of block kb; d and dmin decoded per row.
void piece_k45(uint w[NR][RW], uint c, uint kb, uint K4, float d[NR], float dmin[NR],
               inout float acc[NR][M]) {
    vec2 dsc[NR], dmn[NR];  // scales and mins of the two sub-blocks
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        const uvec3 sc = uvec3(gemv_w32(w[i], 4u), gemv_w32(w[i], 8u), gemv_w32(w[i], 12u));
        const vec4 pair = vec4(kscale_pair(sc, c));
        dsc[i] = d[i] * pair.xy;
        dmn[i] = dmin[i] * pair.zw;
    }
    const uint xb = 64u * kb + 16u * c;
    if (M == 1u) {
        float sl = 0.0, sh = 0.0;  // sums of x over the two sub-blocks
        float dl[NR], dh[NR];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            dl[i] = 0.0;
            dh[i] = 0.0;
        }
        [[unroll]] for (uint k = 0u; k < 8u; k++) {
            const vec4 xl = x4[xb + k], xh = x4[xb + 8u + k];
            sl += (xl.x + xl.y) + (xl.z + xl.w);
            sh += (xh.x + xh.y) + (xh.z + xh.w);
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                vec4 lo, hi;
                codes_k45(w[i], c, k, lo, hi);
                dl[i] = fdot(lo, xl, dl[i]);
                dh[i] = fdot(hi, xh, dh[i]);
            }
        }
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            float a = fma(dsc[i].x, dl[i], acc[i][0]);
            a = fma(-dmn[i].x, sl, a);
            a = fma(dsc[i].y, dh[i], a);
            acc[i][0] = fma(-dmn[i].y, sh, a);
        }
    } else {
        [[unroll]] for (uint k = 0u; k < 8u; k++) {
            vec4 lo[NR], hi[NR];
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                codes_k45(w[i], c, k, lo[i], hi[i]);
                lo[i] = fma(lo[i], vec4(dsc[i].x), vec4(-dmn[i].x));
                hi[i] = fma(hi[i], vec4(dsc[i].y), vec4(-dmn[i].y));
            }
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const vec4 xl = x4[m * K4 + xb + k], xh = x4[m * K4 + xb + 8u + k];
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    acc[i][m] = fdot(hi[i], xh, fdot(lo[i], xl, acc[i][m]));
                }
            }
        }
    }
}

// Q6_K, piece t = 2h + gh of block kb (gemv_q6_pieces' layout): positions l = 16gh + 4g + j
// of the four quarters k of half h; element 128h + 32k + l, scale 8h + 2k + gh.
void piece_q6_k(uint w[NR][RW], uint t, uint kb, uint K4, float d[NR], inout float acc[NR][M]) {
    const uint h = t >> 1, gh = t & 1u;
    float dq[4][NR][M];
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            [[unroll]] for (uint m = 0u; m < M; m++) {
                dq[k][i][m] = 0.0;
            }
        }
    }
    const uint xb = 64u * kb + 32u * h + 4u * gh;
    [[unroll]] for (uint g = 0u; g < 4u; g++) {
        vec4 f[4][NR];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const uint a = w[i][g], b = w[i][4u + g], q = w[i][8u + g];
            f[0][i] = gemv_bytes((a & 0x0F0F0F0Fu) | ((q << 4) & 0x30303030u), 32.0);
            f[1][i] = gemv_bytes((b & 0x0F0F0F0Fu) | ((q << 2) & 0x30303030u), 32.0);
            f[2][i] = gemv_bytes(((a >> 4) & 0x0F0F0F0Fu) | (q & 0x30303030u), 32.0);
            f[3][i] = gemv_bytes(((b >> 4) & 0x0F0F0F0Fu) | ((q >> 2) & 0x30303030u), 32.0);
        }
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const vec4 xv = x4[m * K4 + xb + 8u * k + g];
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    dq[k][i][m] = fdot(f[k][i], xv, dq[k][i][m]);
                }
            }
        }
    }
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        // Scale 8h + 2k + gh: byte 2k + gh of the half's two scale words (words 48, 49).
        const uint j = 2u * k + gh;
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const int sc = bitfieldExtract(int(w[i][Q6_SCALES + (k >> 1)]), int(8u * (j & 3u)), 8);
            const float scale = d[i] * float(sc);
            [[unroll]] for (uint m = 0u; m < M; m++) {
                acc[i][m] = fma(scale, dq[k][i][m], acc[i][m]);
            }
        }
    }
}

// Piece p of unit u, then the next piece's words moved into place.
void piece(inout uint w[NR][RW], uint p, uint u, uint K4, float d[NR], float dmin[NR],
           inout float acc[NR][M]) {
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        piece_q8_q4(w, p, u, K4, acc);
    } else if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        piece_k45(w, p, u, K4, d, dmin, acc);
    } else {
        piece_q6_k(w, p, u, K4, d, acc);
    }
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        gemv_next_piece(w[i], p);
    }
}

void main() {
    const uint r = gl_LocalInvocationID.x, s = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / QK;
    const uint units = nb / UB;
    const uint K4 = pc.K / 4u;

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
        // Per-block scales of the K-quants, decoded once for the unit's pieces.
        float d[NR], dmin[NR];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            d[i] = quant_half(gemv_w16(cur[i], FORMAT == FMT_Q6_K ? 208u : 0u));
            dmin[i] = quant_half(gemv_w16(cur[i], 2u));
            if (FORMAT == FMT_Q6_K) {
                gemv_q6_pieces(cur[i]);
            }
        }
        if (ROLL) {
            [[dont_unroll]] for (uint p = 0u; p < PIECES; p++) {
                piece(cur, p, u, K4, d, dmin, acc);
            }
        } else {
            [[unroll]] for (uint p = 0u; p < PIECES; p++) {
                piece(cur, p, u, K4, d, dmin, acc);
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
