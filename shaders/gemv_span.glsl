// gemv_span.glsl: the span layout of the quantized GEMV kernels (gemv_q_span.comp: float
// path, gemv_q_span_dot.comp: integer dot path). A row of W is read along K by the lanes of
// one row group, neighbouring lanes reading neighbouring bytes, the way the f32 GEMV reads
// its rows.
//
// Why. A layout that gives each invocation its own rows and loads whole units of blocks into
// registers stopped at 35-45% of stream read on an H200 whatever its plan: a lane held up to
// 68 words, so few warps fit a multiprocessor, and each decoded for microseconds with nothing
// in flight; its unrolled units also took the NVIDIA compiler up to minutes a pipeline. Here
// each lane holds a few words at a time, the multiprocessor holds many warps, and the load
// instructions of a subgroup cover one contiguous stretch of a row (a few cache lines)
// instead of one line per lane.
//
// Pieces. A block is cut into PPB pieces; piece q of a row is piece q % PPB of block
// q / PPB, and lane t of a row group takes pieces t, t + T, t + 2T, ... of each of its NR
// rows, U pieces of every row loaded before any is decoded. Since T is a multiple of PPB, a
// lane's piece index inside the block never changes and its block advances by a constant:
// the addresses are additions. A piece holds PB bytes of codes (the specialization constant
// PB) and the words of the block's scales:
//   Q8_0 (PB 8, 16, 32: PPB 32 / PB)  codes at bytes 2 + PB p ..; the scale's word
//   Q4_0 (PB 8, 16: PPB 16 / PB)      codes at bytes 2 + PB p ..: their low nibbles are
//                                     elements PB p .. PB p + PB - 1, the high ones 16 + ..
//   Q4_K (PB 8, 16: PPB 128 / PB)     sub-blocks 2c, 2c + 1, positions PB j .. (p = c * JP
//                                     + j, JP = 32 / PB): the block's first uvec4 (d, dmin,
//                                     scales) and a uvec2 / uvec4 of codes
//   Q5_K (the same)                   and the uvec2 / uvec4 of fifth bits qh[PB j ..]
//   Q6_K (PPB 16)                     half h, positions 4j .. 4j + 3 of its four quarters
//                                     (p = 8h + j): ql[64h + 4j], ql[64h + 32 + 4j],
//                                     qh[32h + 4j], the half's 8 scales, d
// Q8_0, Q4_0 and Q6_K blocks start at 2-aligned bytes: a field of 4w bytes is cut out of the
// w + 1 words that cover it, the last one loaded only where the field is not word-aligned
// (where it is, that word may lie past the tensor). The scale words are the same for the
// lanes of one block: one load serves them.
//
// Rounds. Full rounds (every lane's U pieces inside the row) load without checks; the last,
// partial round points the lanes past the row at its first block and counts them zero.
// With STAGE (the float path at several rows of x) the rounds of a workgroup go in step, and
// the x a round reads is copied once into shared memory for all the workgroup's rows: read
// from memory by every lane, the x of 8 rows is 32 bytes a weight, which no cache kept near
// the lanes when the row groups of a multiprocessor stream different stretches of K.
//
// The T partial sums of each output meet in shared memory and are added in a fixed order in
// two steps (no subgroup size assumed): at T = 128 a single invocation adding all of them
// left a tail of microseconds at the end of a grid that is one wave.
//
// The includer declares, before including this file and after quant.glsl:
//   layout(local_size_x_id = 0, local_size_y_id = 5) in;   (T lanes along K, G row groups)
//   spec constants FORMAT (1), TAIL (2), M (3), NR (4), U (6), PB (7), and STAGE (8, or a
//   constant false)
//   buffers `uint wq[]`, `uvec2 wq2[]`, `uvec4 wq4[]` aliasing the weights, `uint wtail[]`,
//   `float bias[]`, `float y[]`, and push constants pc.N, pc.K, pc.has_bias, pc.ldy, pc.y0;
//   after it, the decoder piece() (prototype below) and a main() that calls span_main().
#ifndef GEMV_SPAN_GLSL
#define GEMV_SPAN_GLSL

const uint T = gl_WorkGroupSize.x;  // lanes along K per row group
const uint G = gl_WorkGroupSize.y;  // row groups per workgroup
const uint ROWS = G * NR;           // rows of W per workgroup
const uint PPB = FORMAT == FMT_Q8_0 ? 32u / PB
               : FORMAT == FMT_Q4_0 ? 16u / PB
               : FORMAT == FMT_Q6_K ? 16u : 128u / PB;
const uint CW = FORMAT == FMT_Q6_K ? 1u : PB / 4u;  // words of codes per piece (per field)
const uint JP = 32u / PB;                           // Q4_K / Q5_K: pieces per sub-block pair
// Words a piece holds per row, at most (Q8_0 with PB 32: 8 of codes and the scale).
const uint RP = 12u;
// Where they are: codes from word 0; Q8_0 / Q4_0 the scale as float bits at word CW; Q4_K /
// Q5_K the header at CW .. CW + 3 and Q5_K's fifth bits at CW + 4 ..; Q6_K words 0, 1, 2 (ql,
// ql + 32, qh), 3, 4 (the half's scales) and 5 (d as float bits).

// Word i of the weights; with TAIL the word past the last whole one is the tail word.
uint span_word(uint i) {
    return TAIL ? quant_word(i) : wq[i];
}

// The W words of the 4W bytes at byte o (2-aligned) into r[at ..]: W + 1 loads where o is
// not word-aligned, W where it is.
void span_field(uint o, const uint W, const uint at, inout uint r[RP]) {
    const uint a = o >> 2;
    const bool sh = (o & 2u) != 0u;
    uint w[9];
    [[unroll]] for (uint k = 0u; k < W; k++) {
        w[k] = wq[a + k];
    }
    w[W] = sh ? span_word(a + W) : 0u;
    [[unroll]] for (uint k = 0u; k < W; k++) {
        r[at + k] = sh ? funnel16(w[k], w[k + 1u]) : w[k];
    }
}

// The half at byte o (2-aligned) as float bits (Q6_K's d may lie in the tail word).
uint span_half(uint o) {
    const uint w = span_word(o >> 2);
    return floatBitsToUint(quant_half((o & 2u) != 0u ? w >> 16 : w & 0xFFFFu));
}

// Load piece p of the block at byte bo into r (see RP's note).
void span_load(uint bo, uint p, out uint r[RP]) {
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        span_field(bo + 2u + PB * p, CW, 0u, r);
        r[CW] = span_half(bo);
    } else if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        const uint c = p / JP, j = p % JP;
        const uint qs = FORMAT == FMT_Q4_K ? 16u : 48u;
        const uint o = bo + qs + 32u * c + PB * j;
        if (PB == 8u) {
            const uvec2 q = wq2[o >> 3];
            r[0] = q.x;
            r[1] = q.y;
        } else {
            const uvec4 q = wq4[o >> 4];
            r[0] = q.x;
            r[1] = q.y;
            r[2] = q.z;
            r[3] = q.w;
        }
        const uvec4 h = wq4[bo >> 4];
        r[CW] = h.x;
        r[CW + 1u] = h.y;
        r[CW + 2u] = h.z;
        r[CW + 3u] = h.w;
        if (FORMAT == FMT_Q5_K) {
            const uint oh = bo + 16u + PB * j;
            if (PB == 8u) {
                const uvec2 q = wq2[oh >> 3];
                r[CW + 4u] = q.x;
                r[CW + 5u] = q.y;
            } else {
                const uvec4 q = wq4[oh >> 4];
                r[CW + 4u] = q.x;
                r[CW + 5u] = q.y;
                r[CW + 6u] = q.z;
                r[CW + 7u] = q.w;
            }
        }
    } else {
        // Q6_K: half h, positions 4j .. 4j + 3.
        const uint h = p >> 3, j = p & 7u;
        span_field(bo + 64u * h + 4u * j, 1u, 0u, r);
        span_field(bo + 64u * h + 32u + 4u * j, 1u, 1u, r);
        span_field(bo + 128u + 32u * h + 4u * j, 1u, 2u, r);
        span_field(bo + 192u + 8u * h, 2u, 3u, r);
        r[5] = span_half(bo + 208u);
    }
}

// The partial sums of the T lanes of each row group meet in shared memory: series
// o = (i * M + m) * G + g at [o * T, o * T + T). They are added in two steps, a fixed order:
// lanes t < T / F of each row group sum F neighbours of every series in place, then one
// invocation per output sums the T / F results.
shared float span_red[NR * M * G * T];
const uint SPAN_F = T >= 8u ? 8u : 1u;

void span_finish(float acc[NR][M], uint wg) {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            span_red[((i * M + m) * G + g) * T + t] = acc[i][m];
        }
    }
    barrier();
    if (SPAN_F > 1u && t < T / SPAN_F) {
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint at = ((i * M + m) * G + g) * T + t * SPAN_F;
                float sum = 0.0;
                [[unroll]] for (uint k = 0u; k < SPAN_F; k++) {
                    sum += span_red[at + k];
                }
                span_red[at] = sum;
            }
        }
    }
    barrier();
    for (uint o = g * T + t; o < NR * M * G; o += T * G) {
        const uint i = o / (M * G), m = (o / G) % M, og = o % G;
        const uint n = (wg * G + og) * NR + i;
        float sum = 0.0;
        for (uint k = 0u; k < T; k += SPAN_F) {
            sum += span_red[o * T + k];
        }
        if (n < pc.N) {
            y[m * pc.ldy + pc.y0 + n] = pc.has_bias != 0u ? sum + bias[pc.y0 + n] : sum;
        }
    }
}

// The includer's decoder: acc[i][m] += piece p of block b of row i (words r[i]) . x[m],
// nothing where !ok.
void piece(uint r[NR][RP], uint b, uint p, bool ok, inout float acc[NR][M]);

// With STAGE, the includer's copy of the x of blocks b0 .. b0 + U * T / PPB - 1 (a round) into
// shared memory, between barriers.
void span_stage(uint b0);

// The streaming loop, shared by both kernels (their main()).
void span_main() {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / QK;
    const uint P = nb * PPB;
    uint row_at[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        row_at[i] = min((wg * G + g) * NR + i, pc.N - 1u) * (nb * BLOCK_BYTES);
    }
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            acc[i][m] = 0.0;
        }
    }
    const uint p = t % PPB;
    if (STAGE) {
        // Rounds in step across the workgroup: the round's x is staged once for all its rows
        // (gemv_q_span.comp); past the row, a lane reads the round's first block, counted zero.
        for (uint q0 = 0u; q0 < P; q0 += U * T) {
            const uint b0 = q0 / PPB;
            uint r[U][NR][RP];
            uint bu[U];
            [[unroll]] for (uint u = 0u; u < U; u++) {
                bu[u] = q0 + u * T + t < P ? b0 + u * (T / PPB) + t / PPB : b0;
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    span_load(row_at[i] + bu[u] * BLOCK_BYTES, p, r[u][i]);
                }
            }
            span_stage(b0);
            if (q0 + U * T <= P) {
                [[unroll]] for (uint u = 0u; u < U; u++) {
                    piece(r[u], bu[u], p, true, acc);
                }
            } else {
                [[unroll]] for (uint u = 0u; u < U; u++) {
                    piece(r[u], bu[u], p, q0 + u * T + t < P, acc);
                }
            }
        }
        span_finish(acc, wg);
        return;
    }
    uint kb = t / PPB;
    uint q0 = t;
    for (; q0 + (U - 1u) * T < P; q0 += U * T, kb += U * T / PPB) {
        uint r[U][NR][RP];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                span_load(row_at[i] + (kb + u * (T / PPB)) * BLOCK_BYTES, p, r[u][i]);
            }
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            piece(r[u], kb + u * (T / PPB), p, true, acc);
        }
    }
    if (q0 < P) {
        uint r[U][NR][RP];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint b = q0 + u * T < P ? kb + u * (T / PPB) : 0u;
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                span_load(row_at[i] + b * BLOCK_BYTES, p, r[u][i]);
            }
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const bool ok = q0 + u * T < P;
            piece(r[u], ok ? kb + u * (T / PPB) : 0u, p, ok, acc);
        }
    }
    span_finish(acc, wg);
}

#endif
