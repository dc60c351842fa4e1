// gemv_q_dot.glsl: the body of gemv_q_dot.comp and gemv_q_dot_glu.comp.
//
// gemv_q_dot: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a few rows m of x, W
// block-quantised in the device layout (quant.glsl), x quantized to 8 bits per block of 32
// (quantize_q8_1.comp): the integer-dot path, streamed as gemv_q.glsl streams. Per segment of
// a piece (the codes that share a scale), y gains (W's scale) * d_x * (packed 4x8-bit dot
// products of W's codes and x's codes); an offset of W's codes (Q4_0's 8, Q6_K's 32) or a
// K-quant min is applied through sums of x's codes.
//
//   Q8_0, Q4_0   d_w * d_x * sum(codes * x codes); Q4_0's -8 * sum(x codes) once per block,
//                by its first piece
//   Q4_K, Q5_K   per sub-block s of the piece: d sc[s] d_x * sum(codes * x codes), and, once
//                per sub-block (the piece of positions 0..15), - dmin m[s] d_x * sum(x codes)
//   Q6_K         per quarter k of the piece: d sc * d_x * (sum(codes * x codes) - 32 * sum(x
//                codes)), the code sums over its 16 positions taken by dot products with 1s
//
//   specialization constants: as gemv_q.comp, less STAGE and CVT; 7 EXPERTS (experts modes,
//     gemv_q.glsl: 0 off, 1 per pair, 2 grouped)
//   set 0: 0 quantized x (qdot.glsl's layout), 1 W bodies, 2 W's d values (any buffer for
//     Q4_K, Q5_K), 3 bias [N] (any buffer when unused; with EXPERTS the ids, i32), 4 y [M, N]
//
// With GEMV_Q_DOT_GLU defined (gemv_q_dot_glu.comp, Q8_0 and Q4_0): the feed-forward's gate
// and up products and SwiGLU in one dispatch, the result quantized for the down product's
// integer dot. Each row group multiplies NR / 2 rows of W_gate and the same rows of W_up (its rows
// i < NR / 2 the gate's, the others the up's); the workgroup's G * NR / 2 output rows, a
// multiple of 32, are silu(gate) * up (as swiglu_q8_f32.comp computes it), quantized as
// q8_1.glsl does, blocks of 32 along N, into the activations of the down product. Bindings:
// 0 quantized x, 1 and 2 W_gate's bodies and d values, 3 and 4 W_up's, 5 unused (any
// buffer; with EXPERTS the ids), 6 the quantized result (M rows of N / 32 blocks, qdot.glsl's
// layout; with EXPERTS a row per pair, pairs rows). No bias; of the experts modes the per-pair
// one only, both stacks of one layout; push constant dlo_u is W_up's dlo.
//   push constants: N, K, has_bias, ldy, y0, dlo, e_lo, e_n, xdiv, xrows, ids0, pairs (as
//     gemv_q.comp; with EXPERTS, x holds xrows rows, its scales and sums after all of their
//     codes), dlo_u, eps. The workgroup index is x + y * (groups in x); with EXPERTS, z is the
//     pair (per pair) or the part's expert (grouped). has_bias bit 0: add the bias; bit 1
//     (gemv_q_dot.comp): add the result into y, y[i] + (the product's value), a decoder's
//     residual add done by the product that feeds it.
//
// With GEMV_Q_DOT_SUM defined (gemv_q_dot_sum.comp): a mixture's down products and their
// weighted sum in one dispatch, the per-pair mode (EXPERTS 1) and a row of x a pair. Each
// workgroup writes its pair's rows of y (the products, as gemv_q_dot writes them) and counts
// itself in counts[row (groups in x and y) + wg], row = pair / slots; the last of the row's
// slots to count (the count returned to 0 by it) adds the slots' values of its rows, weighted,
// in slot order, as moe_combine_f32 does: out[row, n] (+)= sum_j w[row slots + j] y[row slots
// + j, n]. So out is bit for bit the two dispatches' whichever workgroup came last. Bindings: 0
// to 3 as gemv_q_dot's (3 the ids), 4 the weights f32 [rows, slots], 5 y (read back by the
// last), 6 the counts (0 before, 0 after), 7 out f32 [rows, N]; push constant dlo_u is the
// slots a row, has_bias bit 1 adds the sum into out.
//
// With GEMV_Q_DOT_RMS defined (gemv_q_dot_rms.comp, gemv_q_dot_glu_rms.comp): a decoder's row
// step folded into the products that read it. Binding 0 is x, f32 [M, K] (the residual
// stream), not its quantization; every workgroup first computes RMSNorm(x) * w (the norm's
// weight w, f32 [K], at binding 4, or 5 with GEMV_Q_DOT_GLU; y then at 5, or 6) as
// norm_q8_f32.comp computes it, quantizes it as q8_1.glsl does into shared memory in the
// layout of binding 0's activations, and reads its activations there. Specialization
// constant 8: K / 32. No experts.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 4) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const uint M = 1;
layout(constant_id = 3) const uint NR = 1;
layout(constant_id = 5) const uint U = 2;
layout(constant_id = 6) const uint PB = 16;
const bool STAGE = false;
layout(constant_id = 7) const uint EXPERTS = 0u;

#ifdef GEMV_Q_DOT_GLU
const uint GLU = 1u;
#define GEMV_BIAS_BINDING 5
#define GEMV_Y_BINDING 6
#define GEMV_RMS_W_BINDING 5
#elif defined(GEMV_Q_DOT_SUM)
const uint GLU = 0u;
#define GEMV_BIAS_BINDING 3
#define GEMV_Y_BINDING 5
#elif defined(GEMV_Q_DOT_RMS)
const uint GLU = 0u;
#define GEMV_BIAS_BINDING 3
#define GEMV_RMS_W_BINDING 4
#define GEMV_Y_BINDING 5
#else
const uint GLU = 0u;
#define GEMV_BIAS_BINDING 3
#define GEMV_Y_BINDING 4
#endif

#ifdef GEMV_Q_DOT_RMS
layout(constant_id = 8) const uint NK = 1u;  // K / 32: the blocks of a row of x
layout(std430, set = 0, binding = 0) restrict readonly buffer BufX { vec4 x4[]; };
layout(std430, set = 0, binding = GEMV_RMS_W_BINDING) restrict readonly buffer BufNW {
    vec4 nw4[];
};
// The M rows' activations, binding 0's layout without it: codes, then scales, then sums.
shared uint xs[M * NK * 10u];
#define ACT_W(i) xs[i]
#define ACT_W2(i) uvec2(xs[2u * (i)], xs[2u * (i) + 1u])
#define ACT_W4(i) uvec4(xs[4u * (i)], xs[4u * (i) + 1u], xs[4u * (i) + 2u], xs[4u * (i) + 3u])
#else
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct2 { uvec2 act2[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct4 { uvec4 act4[]; };
#define ACT_W(i) act[i]
#define ACT_W2(i) act2[i]
#define ACT_W4(i) act4[i]
#endif
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer BufD { uint wd[]; };
layout(std430, set = 0, binding = GEMV_BIAS_BINDING) restrict readonly buffer BufBias {
    float bias[];
};
layout(std430, set = 0, binding = GEMV_BIAS_BINDING) restrict readonly buffer BufIds {
    uint ids[];
};
#ifdef GEMV_Q_DOT_SUM
layout(std430, set = 0, binding = GEMV_Y_BINDING) coherent buffer BufY { float y[]; };
layout(std430, set = 0, binding = 4) restrict readonly buffer BufSumW { float sum_w[]; };
layout(std430, set = 0, binding = 6) coherent buffer BufSumC { uint sum_counts[]; };
layout(std430, set = 0, binding = 7) restrict buffer BufSumOut { float sum_out[]; };
#else
layout(std430, set = 0, binding = GEMV_Y_BINDING) restrict writeonly buffer BufY { float y[]; };
#endif
#if !defined(GEMV_Q_DOT_GLU) && !defined(GEMV_Q_DOT_RMS) && !defined(GEMV_Q_DOT_SUM)
// y's values before the dispatch, for has_bias bit 1 (each read by the invocation that then
// writes the same element).
layout(std430, set = 0, binding = GEMV_Y_BINDING) readonly buffer BufYIn { float y_in[]; };
#define GEMV_ACCUMULATE(i, v) ((pc.has_bias & 2u) != 0u ? y_in[i] + (v) : (v))
#endif
#ifdef GEMV_Q_DOT_GLU
layout(std430, set = 0, binding = 3) restrict readonly buffer BufQU2 { uvec2 wqu2[]; };
layout(std430, set = 0, binding = 3) restrict readonly buffer BufQU4 { uvec4 wqu4[]; };
layout(std430, set = 0, binding = 4) restrict readonly buffer BufDU { uint wdu[]; };
layout(std430, set = 0, binding = GEMV_Y_BINDING) restrict writeonly buffer BufOut {
    uint act_out[];
};
#endif

layout(push_constant) uniform Push {
    uint N, K;
    uint has_bias;
    uint ldy, y0;  // y's row stride and the column of W's row 0 (a W split in row ranges)
    uint dlo;      // the half of binding 2 that is block 0's d
    uint e_lo, e_n, xdiv, xrows, ids0, pairs;  // experts modes (gemv_q.glsl)
    uint dlo_u;                                // GEMV_GLU: W_up's dlo; GEMV_SUM: slots
    float eps;                                 // GEMV_Q_DOT_RMS: the norm's epsilon
} pc;

#include "quant.glsl"
#include "qdot.glsl"
#include "gemv_q.glsl"

#if defined(GEMV_Q_DOT_GLU) || defined(GEMV_Q_DOT_RMS)
#define Q8_LID gl_LocalInvocationIndex
#define Q8_LANES_ALL (T * G)
#ifdef GEMV_Q_DOT_GLU
#define Q8_OUT act_out
#else
#define Q8_OUT xs  // q8_1_store unused: the row step writes xs itself
#endif
#include "q8_1.glsl"
#endif

#ifdef GEMV_Q_DOT_GLU

// Piece p of block blk of W_up (its d the blk-th after dlo_u), as piece_load reads W_gate's.
void piece_load_up(uint blk, uint p, out uint r[RP]) {
    [[unroll]] for (uint i = 0u; i < RP; i++) {
        r[i] = 0u;
    }
    QUANT_CODE_WORDS(wqu2, wqu4, blk * BODY_WORDS + CW * p, r)
    const uint di = pc.dlo_u + blk, w = wdu[di >> 1];
    r[CW] = floatBitsToUint(quant_half((di & 1u) != 0u ? w >> 16 : w & 0xFFFFu));
}

// The workgroup's output rows, silu(gate) * up for each row of x, before their quantization.
shared float glu_h[M * G * (NR / 2u)];

// The sum of series o's T partial sums, as gemv_finish adds them.
float glu_series(uint o) {
    float sum = 0.0;
    for (uint k = 0u; k < T; k += GEMV_F) {
        sum += gemv_red[o * T + k];
    }
    return sum;
}

// After gemv_finish's reduction: SwiGLU of the workgroup's rows n = (wg G + og) NR / 2 + i,
// then their blocks of 32 quantized (8 lanes a block, in rounds of the whole workgroup).
void gemv_glu_finish(uint wg) {
    const uint lane = gl_LocalInvocationIndex, lanes = T * G, NRW = NR / 2u, RW = G * NRW;
    for (uint e = lane; e < M * RW; e += lanes) {
        const uint m = e / RW, r = e % RW, og = r / NRW, i = r % NRW;
        const float x = glu_series((i * M + m) * G + og);
        const float u = glu_series(((i + NRW) * M + m) * G + og);
        // SiLU as x / (1 + e^-x): e^-x overflowing to +inf gives the right limit, -0.
        glu_h[e] = x / (1.0 + exp(-x)) * u;
    }
    barrier();
    const uint nb32 = pc.N / 32u, per = RW / 32u, work = M * per * Q8_LANES;
    const uint rows_out = GEMV_EXPERTS ? pc.pairs : M;
    for (uint l0 = 0u; l0 < work; l0 += lanes) {
        const uint l = l0 + lane, blk = l / Q8_LANES, j = l % Q8_LANES;
        const uint m = blk / per, c = blk - m * per, n0 = wg * RW + 32u * c;
        const bool valid = l < work && n0 < pc.N;
        vec4 v = vec4(0.0);
        if (valid) {
            const uint e = m * RW + 32u * c + 4u * j;
            v = vec4(glu_h[e], glu_h[e + 1u], glu_h[e + 2u], glu_h[e + 3u]);
        }
        q8_1_store(v, gemv_y_row(m) * nb32 + n0 / 32u, valid, rows_out * nb32);
    }
}
#else
void piece_load_up(uint blk, uint p, out uint r[RP]) {
    [[unroll]] for (uint i = 0u; i < RP; i++) {
        r[i] = 0u;
    }
}

void gemv_glu_finish(uint wg) {
}
#endif

// An int of magnitude below 2^22 as a float, exactly.
float int_to_float(int v) {
    return uintBitsToFloat(uint(v) + 0x4B400000u) - 12582912.0;
}

// The CW activation words from word w0 (a multiple of CW) into a.
void act_words(uint w0, out uint a[8]) {
    if (CW == 2u) {
        const uvec2 v = ACT_W2(w0 >> 1);
        a[0] = v.x;
        a[1] = v.y;
    } else {
        [[unroll]] for (uint k = 0u; k < CW / 4u; k++) {
            const uvec4 v = ACT_W4((w0 >> 2) + k);
            a[4u * k] = v.x;
            a[4u * k + 1u] = v.y;
            a[4u * k + 2u] = v.z;
            a[4u * k + 3u] = v.w;
        }
    }
}

int dot4(uvec4 w, uvec4 a) {
    return sdot4x8(w.x, a.x) + sdot4x8(w.y, a.y) + sdot4x8(w.z, a.z) + sdot4x8(w.w, a.w);
}

// acc[i][m] += piece p of block b of row i (words r[i]) . x[m]; nothing where !ok.
void piece(uint r[NR][RP], uint b, uint p, bool ok, inout float acc[NR][M]) {
    const uint nb32 = pc.K / 32u, AB = (GEMV_EXPERTS ? pc.xrows : M) * nb32;
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            const uint ab = gemv_x_row(m) * nb32 + b;
            const float dx = uintBitsToFloat(ACT_W(8u * AB + ab));
            // Code word k: Q8_0 elements PB p + 4k .. (activation word CW p + k of the
            // block); Q4_0 the same in its low nibbles and 16 + PB p + 4k .. (word 4 + CW p +
            // k) in its high ones. Codes 0..15 are non-negative signed bytes as they stand;
            // Q4_0's -8 is applied once per block, by piece 0: -8 times the sum of the
            // block's activation codes.
            uint lo[8], hi[8];
            act_words(8u * ab + CW * p, lo);
            if (FORMAT == FMT_Q4_0) {
                act_words(8u * ab + 4u + CW * p, hi);
            }
            const int off = FORMAT == FMT_Q4_0 && p == 0u ? -8 * int(ACT_W(9u * AB + ab)) : 0;
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                int s = off;
                [[unroll]] for (uint k = 0u; k < CW; k++) {
                    if (FORMAT == FMT_Q8_0) {
                        s += sdot4x8(r[i][k], lo[k]);
                    } else {
                        s += sdot4x8(r[i][k] & 0x0F0F0F0Fu, lo[k]);
                        s += sdot4x8((r[i][k] >> 4) & 0x0F0F0F0Fu, hi[k]);
                    }
                }
                acc[i][m] = ok ? fma(uintBitsToFloat(r[i][CW]) * dx, int_to_float(s), acc[i][m])
                               : acc[i][m];
            }
        }
    } else if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        // Sub-blocks 2c (low nibbles) and 2c + 1 (high), positions l0 = 16 j ..: the
        // activation blocks 8b + 2c and 8b + 2c + 1, their words l0 / 4 ... (KHP halves of 16
        // positions, uvec4s h).
        const uint c = kpiece_pair(p), j = kpiece_half(p);
        vec2 dsc[NR], dmn[NR];
        uvec4 ql[NR][KHP], qh[NR][KHP];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const vec4 pair =
                vec4(kscale_pair(uvec3(r[i][CW + 1u], r[i][CW + 2u], r[i][CW + 3u]), c));
            dsc[i] = quant_half(r[i][CW] & 0xFFFFu) * pair.xy;
            dmn[i] = quant_half(r[i][CW] >> 16) * pair.zw;
            [[unroll]] for (uint k = 0u; k < CW; k++) {
                if (FORMAT == FMT_Q4_K) {
                    ql[i][k / 4u][k % 4u] = r[i][k] & 0x0F0F0F0Fu;
                    qh[i][k / 4u][k % 4u] = (r[i][k] >> 4) & 0x0F0F0F0Fu;
                } else {
                    ql[i][k / 4u][k % 4u] = q5k_codes(r[i], c, 0u, k);
                    qh[i][k / 4u][k % 4u] = q5k_codes(r[i], c, 1u, k);
                }
            }
        }
        [[unroll]] for (uint m = 0u; m < M; m++) {
            const uint ab = gemv_x_row(m) * nb32 + 8u * b + 2u * c;
            uvec4 al[KHP], ah[KHP];
            [[unroll]] for (uint h = 0u; h < KHP; h++) {
                al[h] = ACT_W4(2u * ab + j + h);
                ah[h] = ACT_W4(2u * ab + 2u + j + h);
            }
            const float dx0 = uintBitsToFloat(ACT_W(8u * AB + ab));
            const float dx1 = uintBitsToFloat(ACT_W(8u * AB + ab + 1u));
            // The mins, once per sub-block: by the piece of positions 0..
            const float s0 = j == 0u ? dx0 * int_to_float(int(ACT_W(9u * AB + ab))) : 0.0;
            const float s1 = j == 0u ? dx1 * int_to_float(int(ACT_W(9u * AB + ab + 1u))) : 0.0;
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                float a = acc[i][m];
                int sl = 0, sh = 0;
                [[unroll]] for (uint h = 0u; h < KHP; h++) {
                    sl += dot4(ql[i][h], al[h]);
                    sh += dot4(qh[i][h], ah[h]);
                }
                a = fma(dsc[i].x * dx0, int_to_float(sl), a);
                a = fma(dsc[i].y * dx1, int_to_float(sh), a);
                a = fma(-dmn[i].x, s0, a);
                a = fma(-dmn[i].y, s1, a);
                acc[i][m] = ok ? a : acc[i][m];
            }
        }
    } else {
        // Q6_K: quarter k of half h = p / 2, positions l0 = 16 (p & 1) ..: activation block
        // 8b + 4h + k, its words l0 / 4 ...; the quarter's scale is the half's 2k + l0 / 16.
        const uint h = p >> 1, j = p & 1u;
        vec4 sc[NR];
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const int s0 = int(r[i][12]), s1 = int(r[i][13]);
            const int sh = int(8u * j);
            sc[i] = uintBitsToFloat(r[i][14]) *
                    vec4(bitfieldExtract(s0, sh, 8), bitfieldExtract(s0, sh + 16, 8),
                         bitfieldExtract(s1, sh, 8), bitfieldExtract(s1, sh + 16, 8));
        }
        [[unroll]] for (uint m = 0u; m < M; m++) {
            [[unroll]] for (uint k = 0u; k < 4u; k++) {
                const uint ab = gemv_x_row(m) * nb32 + 8u * b + 4u * h + k;
                const uvec4 a = ACT_W4(2u * ab + j);
                const float dx = uintBitsToFloat(ACT_W(8u * AB + ab));
                const int sum32 = -32 * dot4(uvec4(0x01010101u), a);
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    const uvec4 q = uvec4(q6k_codes(r[i], k, 0u), q6k_codes(r[i], k, 1u),
                                          q6k_codes(r[i], k, 2u), q6k_codes(r[i], k, 3u));
                    acc[i][m] = ok ? fma(sc[i][k] * dx, int_to_float(dot4(q, a) + sum32),
                                         acc[i][m])
                                   : acc[i][m];
                }
            }
        }
    }
}

void gemv_stage(uint b0) {
}

#ifdef GEMV_Q_DOT_SUM
shared uint sum_last;

// After gemv_main wrote the pair's rows of y (or left, its expert out of range): counted, and
// by the row's last, the weighted sum of its slots' rows into out.
void gemv_sum_finish(uint wg) {
    const uint lane = gl_LocalInvocationIndex, slots = pc.dlo_u, row = gl_WorkGroupID.z / slots;
    // This pair's rows visible to the device before it counts itself.
    memoryBarrierBuffer();
    barrier();
    if (lane == 0u) {
        const uint at = row * (gl_NumWorkGroups.x * gl_NumWorkGroups.y) + wg;
        const uint done = atomicAdd(sum_counts[at], 1u) + 1u;
        sum_last = done == slots ? 1u : 0u;
        if (done == slots) {
            sum_counts[at] = 0u;
        }
    }
    barrier();
    if (sum_last == 0u) {
        return;
    }
    memoryBarrierBuffer();
    // The workgroup's rows of W are n = (wg G + og) NR + i: wg G NR onwards.
    for (uint o = lane; o < G * NR; o += T * G) {
        const uint n = wg * G * NR + o;
        if (n < pc.N) {
            float sum = 0.0;
            for (uint j = 0u; j < slots; j++) {
                const uint pair = row * slots + j;
                sum = fma(sum_w[pair], y[pair * pc.ldy + pc.y0 + n], sum);
            }
            const uint oi = row * pc.N + n;
            sum_out[oi] = (pc.has_bias & 2u) != 0u ? sum_out[oi] + sum : sum;
        }
    }
}
#endif

#ifdef GEMV_Q_DOT_RMS
// The row step for the workgroup's own use: each row m of x normed, y = x / sqrt(mean(x^2) +
// eps) * w (norm_q8_f32.comp's arithmetic; the sum of squares in this workgroup's order), then
// quantized into xs a round of the workgroup at a time (q8_1.glsl: 8 lanes a block of 32).
void gemv_rms_prologue() {
    const uint lane = gl_LocalInvocationIndex, lanes = T * G, k4 = pc.K / 4u, AB = M * NK;
    const uint chunks = lanes / 16u;  // a multiple of 16 lanes (the host's check)
    [[unroll]] for (uint m = 0u; m < M; m++) {
        float ss = 0.0;
        for (uint k = lane; k < k4; k += lanes) {
            const vec4 v = x4[m * k4 + k];
            ss += dot(v, v);
        }
        // The workgroup's sum in three steps through gemv_red (free until the loop's end):
        // the lanes' sums, 16 of them a chunk (into its first), the chunks' in order.
        gemv_red[lane] = ss;
        barrier();
        if (lane < chunks) {
            float sum = 0.0;
            [[unroll]] for (uint j = 0u; j < 16u; j++) {
                sum += gemv_red[16u * lane + j];
            }
            gemv_red[16u * lane] = sum;
        }
        barrier();
        float sum = 0.0;
        for (uint c = 0u; c < chunks; c++) {
            sum += gemv_red[16u * c];
        }
        const float r = inversesqrt(sum / float(pc.K) + pc.eps);
        for (uint k0 = 0u; k0 < k4; k0 += lanes) {
            const uint k = k0 + lane;
            const bool valid = k < k4;
            const uint g = (m * k4 + k) / Q8_LANES, j = lane % Q8_LANES;
            float d;
            const uint word = q8_1_word(valid ? x4[m * k4 + k] * r * nw4[k] : vec4(0.0), d);
            if (valid) {
                xs[Q8_LANES * g + j] = word;
            }
            if (j == 0u && valid) {
                xs[8u * AB + g] = floatBitsToUint(d);
                xs[9u * AB + g] = uint(q8_1_block_sum());
            }
        }
        barrier();  // xs written, gemv_red read, before the next row's sums or the loop
    }
}
#endif
