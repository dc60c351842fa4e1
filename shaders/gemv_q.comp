#version 450
// gemv_q: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a few rows m of x (decode: 1 to
// 8), W block-quantised [N, K] in the device layout (quant.glsl) and dequantized in the
// shader with f32 arithmetic (the float path, the one Polaris runs); the lanes of a row group
// stream their rows along K piece by piece (gemv_q.glsl).
//
// Arithmetic, per piece: codes become floats exactly by or-ing them into the mantissa of a
// power of two and subtracting it with the format's offset (gemv_bytes, gemv_nibbles), or,
// with CVT (AMD; Q5_K), by conversion (cvt_bytes), the offset then taken off as offset * (sum of x
// over the piece); the codes of a scale segment are summed against x and the scale applied
// once. Q4_K / Q5_K with one row of x subtract min * (sum of x over the segment); with
// several rows they dequantize each weight once (one fma) and reuse it for every row of x.
// With CVT, x's words are read first and each row of W is decoded and consumed at once, so
// that one row's floats are live at a time: on Polaris (RADV's compiler, tools/motifcl_isa.c)
// decoding all NR rows first held 192 registers a lane for Q4_K (one wave a SIMD), 76 this
// way. Without it the order is the one NVIDIA's compiler ran fastest (docs/tuning.md,
// "Byte-to-float conversion (cvt)").
//
//   specialization constants: 0 T (local_size_x), 1 FORMAT (quant.glsl), 2 M (rows of x,
//     1..8), 3 NR (rows of W per row group), 4 G (local_size_y), 5 U (pieces per row in
//     flight), 6 PB (bytes of codes per piece, Q8_0 / Q4_0), 7 STAGE (rounds in step, the x
//     of a round in shared memory: several rows of x), 8 CVT (one row of x only: codes become
//     floats by integer-to-float conversion, cvt_bytes; for AMD, where converting a byte is
//     one full-rate instruction, and for Q5_K)
//   set 0: 0 x [M, K] f32, 1 W bodies, 2 W's d values (any buffer for Q4_K, Q5_K), 3 bias [N]
//     (any buffer when unused), 4 y [M, N]
//     9 EXPERTS (experts modes, gemv_q.glsl: W a stack of experts, each pair's expert read
//     from ids; 0 off, 1 per pair (workgroup z the pair, M = 1), 2 grouped (workgroup z an
//     expert of the part, its pairs M at a time))
//   set 0: with EXPERTS, binding 3 is the ids (i32) instead of a bias
//   push constants: N, K, has_bias, ldy, y0, dlo: y[m, y0 + n] is y[m * ldy + y0 + n] and its
//     bias bias[y0 + n] (a W split in row ranges); block b's d is the (dlo + b)th half of
//     binding 2. With EXPERTS, e_lo, e_n, xdiv, xrows, ids0, pairs (gemv_q.glsl; xrows unused
//     here). The workgroup index is x + y * (groups in x): a grid beyond 65535 workgroups
//     folds into y; with EXPERTS, z is the pair (per pair) or the part's expert (grouped).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 4) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const uint M = 1;
layout(constant_id = 3) const uint NR = 1;
layout(constant_id = 5) const uint U = 2;
layout(constant_id = 6) const uint PB = 16;
layout(constant_id = 7) const bool STAGE = false;
layout(constant_id = 8) const bool CVT_ASKED = false;
const bool CVT = CVT_ASKED && M == 1u;  // the host asks only at one row of x
layout(constant_id = 9) const uint EXPERTS = 0u;
const uint GLU = 0u;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer BufD { uint wd[]; };
layout(std430, set = 0, binding = 3) restrict readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 3) restrict readonly buffer BufIds { uint ids[]; };
layout(std430, set = 0, binding = 4) restrict writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint N, K;
    uint has_bias;
    uint ldy, y0;  // y's row stride and the column of W's row 0 (a W split in row ranges)
    uint dlo;      // the half of binding 2 that is block 0's d
    uint e_lo, e_n, xdiv, xrows, ids0, pairs;  // experts modes (gemv_q.glsl)
} pc;

#include "quant.glsl"
#include "gemv_q.glsl"

void piece_load_up(uint blk, uint p, out uint r[RP]) {
    [[unroll]] for (uint i = 0u; i < RP; i++) {
        r[i] = 0u;
    }
}

void gemv_glu_finish(uint wg) {
}

// STAGE: the x of a round, XCH vec4s per row of x from vec4 gemv_xbase, in rows of XS (one
// vec4 of padding after every 8, so that lanes reading 16-float pieces a piece apart fall in
// distinct banks).
const uint XCH = STAGE ? U * T * QK / PPB / 4u : 1u;
const uint XS = XCH + XCH / 8u;
shared vec4 gemv_x[STAGE ? M * XS : 1u];
uint gemv_xbase = 0u;

void gemv_stage(uint b0) {
    if (!STAGE) {
        return;
    }
    const uint K4 = pc.K / 4u;
    gemv_xbase = b0 * (QK / 4u);
    barrier();  // the last round's reads are done
    for (uint j = gl_LocalInvocationIndex; j < M * XCH; j += T * G) {
        const uint m = j / XCH, v = j % XCH;
        gemv_x[m * XS + v + v / 8u] = gemv_xbase + v < K4
                                          ? x4[gemv_x_row(m) * K4 + gemv_xbase + v]
                                          : vec4(0.0);
    }
    barrier();
}

// x4[m * K / 4 + i]: from memory, or with STAGE from the round's copy.
vec4 xget(uint m, uint i) {
    if (STAGE) {
        const uint v = i - gemv_xbase;
        return gemv_x[m * XS + v + v / 8u];
    }
    return x4[gemv_x_row(m) * (pc.K / 4u) + i];
}

// The four bytes of q as floats by conversion: on AMD GPUs each is one instruction
// (v_cvt_f32_ubyte0..3), where the or-into-a-mantissa of gemv_bytes takes three (and, or,
// subtract); on NVIDIA GPUs conversions run at a fraction of the rate, hence CVT. A format's
// offset is not subtracted here: the one-row paths subtract offset * (sum of x) once per piece,
// shared by its NR rows.
vec4 cvt_bytes(uint q) {
    return vec4(float(q & 0xFFu), float((q >> 8) & 0xFFu), float((q >> 16) & 0xFFu),
                float(q >> 24));
}

// c + dot(a, b) as four fused multiply-adds.
float fdot(vec4 a, vec4 b, float c) {
    return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, c))));
}

float hsum(vec4 v) {
    return (v.x + v.y) + (v.z + v.w);
}

// acc[i][m] += piece p of block b of row i (words r[i]) . x[m]; nothing where !ok.
void piece(uint r[NR][RP], uint b, uint p, bool ok, inout float acc[NR][M]) {
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        // Code word k: Q8_0 elements PB p + 4k .. + 3 (signed bytes, + 128 after the xor);
        // Q4_0 the same in its low nibbles and 16 + PB p + 4k .. in its high ones (codes - 8).
        const uint xb = 8u * b + CW * p;
        float s[NR][M];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            [[unroll]] for (uint m = 0u; m < M; m++) {
                s[i][m] = 0.0;
            }
        }
        vec4 xsum = vec4(0.0);  // CVT: the piece's x, for the codes' offset
        [[unroll]] for (uint k = 0u; k < CW; k++) {
            if (CVT) {
                // One row of x (AMD): x's word first, then each row decoded and consumed at
                // once, one row's floats live at a time (on Polaris, Q4_0 with NR = 8 held 128
                // registers a lane decoded all rows first, 84 this way).
                const vec4 xl = xget(0u, xb + k);
                vec4 xh = vec4(0.0);
                if (FORMAT == FMT_Q4_0) {
                    xh = xget(0u, xb + 4u + k);
                }
                xsum += FORMAT == FMT_Q8_0 ? xl : xl + xh;
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    if (FORMAT == FMT_Q8_0) {
                        s[i][0] = fdot(cvt_bytes(r[i][k] ^ 0x80808080u), xl, s[i][0]);
                    } else {
                        s[i][0] = fdot(cvt_bytes((r[i][k] >> 4) & 0x0F0F0F0Fu), xh,
                                       fdot(cvt_bytes(r[i][k] & 0x0F0F0F0Fu), xl, s[i][0]));
                    }
                }
                continue;
            }
            vec4 lo[NR], hi[NR];
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                if (FORMAT == FMT_Q8_0) {
                    lo[i] = gemv_bytes(r[i][k] ^ 0x80808080u, 128.0);
                } else {
                    gemv_nibbles(r[i][k], 8.0, lo[i], hi[i]);
                }
            }
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const vec4 xl = xget(m, xb + k);
                vec4 xh = vec4(0.0);
                if (FORMAT == FMT_Q4_0) {
                    xh = xget(m, xb + 4u + k);
                }
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    s[i][m] = fdot(lo[i], xl, s[i][m]);
                    if (FORMAT == FMT_Q4_0) {
                        s[i][m] = fdot(hi[i], xh, s[i][m]);
                    }
                }
            }
        }
        if (CVT) {
            const float off = hsum(xsum) * (FORMAT == FMT_Q8_0 ? 128.0 : 8.0);
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                s[i][0] -= off;
            }
        }
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const float d = uintBitsToFloat(r[i][CW]);
            [[unroll]] for (uint m = 0u; m < M; m++) {
                acc[i][m] = ok ? fma(d, s[i][m], acc[i][m]) : acc[i][m];
            }
        }
    } else if ((FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) && CVT) {
        // One row of x (AMD): x's words of the piece first, then each row of W decoded and
        // consumed at once, so that one row's floats are live at a time, not NR rows' (on
        // Polaris, 192 registers a lane with NR = 4 when all were decoded first: one wave a
        // SIMD; 76 this way).
        const uint c = kpiece_pair(p);
        const uint xb = 64u * b + 16u * c + 4u * kpiece_half(p);
        vec4 xl[CW], xh[CW];
        vec4 sx = vec4(0.0), sy = vec4(0.0);
        [[unroll]] for (uint k = 0u; k < CW; k++) {
            xl[k] = xget(0u, xb + k);
            xh[k] = xget(0u, xb + 8u + k);
            sx += xl[k];
            sy += xh[k];
        }
        const float sl = hsum(sx), sh = hsum(sy);
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const uint h0 = r[i][CW];
            const vec4 pair =
                vec4(kscale_pair(uvec3(r[i][CW + 1u], r[i][CW + 2u], r[i][CW + 3u]), c));
            const vec2 dsc = quant_half(h0 & 0xFFFFu) * pair.xy;
            const vec2 dmn = quant_half(h0 >> 16) * pair.zw;
            float dl = 0.0, dh = 0.0;
            [[unroll]] for (uint k = 0u; k < CW; k++) {
                vec4 lo, hi;
                if (FORMAT == FMT_Q4_K) {
                    lo = cvt_bytes(r[i][k] & 0x0F0F0F0Fu);
                    hi = cvt_bytes((r[i][k] >> 4) & 0x0F0F0F0Fu);
                } else {
                    lo = cvt_bytes(q5k_codes(r[i], c, 0u, k));
                    hi = cvt_bytes(q5k_codes(r[i], c, 1u, k));
                }
                dl = fdot(lo, xl[k], dl);
                dh = fdot(hi, xh[k], dh);
            }
            float a = acc[i][0];
            a = fma(dsc.x, dl, a);
            a = fma(-dmn.x, sl, a);
            a = fma(dsc.y, dh, a);
            a = fma(-dmn.y, sh, a);
            acc[i][0] = ok ? a : acc[i][0];
        }
    } else if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        // Code word k: sub-block 2c (low nibbles) and 2c + 1 (high), positions l0 + 4k ..
        const uint c = kpiece_pair(p);
        vec2 dsc[NR], dmn[NR];
        vec4 lo[NR][CW], hi[NR][CW];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const uint h0 = r[i][CW];
            const vec4 pair =
                vec4(kscale_pair(uvec3(r[i][CW + 1u], r[i][CW + 2u], r[i][CW + 3u]), c));
            dsc[i] = quant_half(h0 & 0xFFFFu) * pair.xy;
            dmn[i] = quant_half(h0 >> 16) * pair.zw;
            [[unroll]] for (uint k = 0u; k < CW; k++) {
                if (FORMAT == FMT_Q4_K) {
                    gemv_nibbles(r[i][k], 0.0, lo[i][k], hi[i][k]);
                } else {
                    lo[i][k] = gemv_bytes(q5k_codes(r[i], c, 0u, k), 0.0);
                    hi[i][k] = gemv_bytes(q5k_codes(r[i], c, 1u, k), 0.0);
                }
                if (M > 1u) {
                    lo[i][k] = fma(lo[i][k], vec4(dsc[i].x), vec4(-dmn[i].x));
                    hi[i][k] = fma(hi[i][k], vec4(dsc[i].y), vec4(-dmn[i].y));
                }
            }
        }
        const uint xb = 64u * b + 16u * c + 4u * kpiece_half(p);
        [[unroll]] for (uint m = 0u; m < M; m++) {
            vec4 xl[CW], xh[CW];
            vec4 sx = vec4(0.0), sy = vec4(0.0);
            [[unroll]] for (uint k = 0u; k < CW; k++) {
                xl[k] = xget(m, xb + k);
                xh[k] = xget(m, xb + 8u + k);
                sx += xl[k];
                sy += xh[k];
            }
            const float sl = hsum(sx), sh = hsum(sy);
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                float dl = 0.0, dh = 0.0;
                [[unroll]] for (uint k = 0u; k < CW; k++) {
                    dl = fdot(lo[i][k], xl[k], dl);
                    dh = fdot(hi[i][k], xh[k], dh);
                }
                float a = acc[i][m];
                if (M == 1u) {
                    a = fma(dsc[i].x, dl, a);
                    a = fma(-dmn[i].x, sl, a);
                    a = fma(dsc[i].y, dh, a);
                    a = fma(-dmn[i].y, sh, a);
                } else {
                    a += dl + dh;
                }
                acc[i][m] = ok ? a : acc[i][m];
            }
        }
    } else {
        // Q6_K: half h, positions l0 + 4w .. of quarters k = 0..3 (elements 128h + 32k + l0 +
        // 4w ..); the scale of quarter k is the half's scale 2k + l0 / 16.
        const uint h = p >> 1, l4 = 4u * (p & 1u);
        vec4 sc[NR];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const int s0 = int(r[i][12]), s1 = int(r[i][13]);
            const int sh = int(8u * (p & 1u));
            sc[i] = uintBitsToFloat(r[i][14]) *
                    vec4(bitfieldExtract(s0, sh, 8), bitfieldExtract(s0, sh + 16, 8),
                         bitfieldExtract(s1, sh, 8), bitfieldExtract(s1, sh + 16, 8));
        }
        const uint xb = 64u * b + 32u * h + l4;
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            if (CVT) {
                // As the other formats with CVT: x first, then row by row.
                vec4 xv[4];
                vec4 xs = vec4(0.0);
                [[unroll]] for (uint w = 0u; w < 4u; w++) {
                    xv[w] = xget(0u, xb + 8u * k + w);
                    xs += xv[w];
                }
                const float off = 32.0 * hsum(xs);
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    float s = -off;
                    [[unroll]] for (uint w = 0u; w < 4u; w++) {
                        s = fdot(cvt_bytes(q6k_codes(r[i], k, w)), xv[w], s);
                    }
                    acc[i][0] = ok ? fma(sc[i][k], s, acc[i][0]) : acc[i][0];
                }
                continue;
            }
            vec4 f[NR][4];
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                [[unroll]] for (uint w = 0u; w < 4u; w++) {
                    f[i][w] = gemv_bytes(q6k_codes(r[i], k, w), 32.0);
                }
            }
            [[unroll]] for (uint m = 0u; m < M; m++) {
                vec4 xv[4];
                [[unroll]] for (uint w = 0u; w < 4u; w++) {
                    xv[w] = xget(m, xb + 8u * k + w);
                }
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    float s = 0.0;
                    [[unroll]] for (uint w = 0u; w < 4u; w++) {
                        s = fdot(f[i][w], xv[w], s);
                    }
                    acc[i][m] = ok ? fma(sc[i][k], s, acc[i][m]) : acc[i][m];
                }
            }
        }
    }
}

void main() {
    gemv_main();
}
