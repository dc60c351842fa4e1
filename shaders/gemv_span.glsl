// gemv_span.glsl: the span layout of the quantized GEMV kernels (gemv_q_span.comp: float
// path, gemv_q_span_dot.comp: integer dot path). A row of W is read along K by the lanes of
// one row group, neighbouring lanes reading neighbouring bytes, the way the f32 GEMV reads
// its rows.
//
// Why. The row layout (gemv_stage.glsl: each invocation its own rows, whole units loaded in
// registers) stops at 35-45% of stream read on an H200 whatever its plan: a lane holds a unit
// of up to 68 words, so few warps fit a multiprocessor, and each decodes for microseconds
// with nothing in flight. Here each lane holds a few words at a time, the multiprocessor
// holds many warps, and the load instructions of a subgroup cover one contiguous stretch of
// a row (a few cache lines) instead of one line per lane.
//
// Pieces. A block is cut into PPB pieces of 8 to 16 weights; piece q of a row is piece
// q % PPB of block q / PPB, and lane t of a row group takes pieces t, t + T, t + 2T, ... of
// each of its NR rows, U pieces of every row loaded before any is decoded. A piece is a few
// 32-bit words at fixed places of its block:
//   Q8_0 (PPB 4)  8 codes: bytes 2 + 8p .. 9 + 8p (three words cover them at any 2-aligned
//                 offset), and the word of the scale
//   Q4_0 (PPB 2)  16 codes: bytes 2 + 8p .. 9 + 8p (the low nibbles are elements 8p .. 8p + 7,
//                 the high ones 16 + 8p ..), and the scale's word
//   Q4_K (PPB 16) sub-blocks 2c, 2c + 1, positions 8j .. 8j + 7 (p = 4c + j): the block's
//                 first uvec4 (d, dmin, scales) and a uvec2 of codes
//   Q5_K (PPB 16) the same and the uvec2 of fifth bits qh[8j .. 8j + 7]
//   Q6_K (PPB 16) half h, positions 4j .. 4j + 3 of its four quarters (p = 8h + j): the
//                 words of ql[64h + 4j], ql[64h + 32 + 4j], qh[32h + 4j] (two each, the
//                 block being 2-aligned), three words of the half's scales and d's word
// The scale words are the same for the lanes of one block: one load serves them.
//
// Words past the end of the binding are never read: the last word of a 2-aligned field
// clamps to the tensor's last word (or, with TAIL, the tail word), where it is not used.
// Pieces past the row's end (the last round) read the row's last piece and count zero.
//
// The T partial sums of each output meet in shared memory and one invocation adds them in
// a fixed order (no subgroup size assumed), as in gemv_nt_f32.
//
// The includer declares, before including this file and after quant.glsl:
//   layout(local_size_x_id = 0, local_size_y_id = 5) in;   (T lanes along K, G row groups)
//   spec constants FORMAT (1), TAIL (2), M (3), NR (4), U (6)
//   buffers `uint wq[]`, `uvec2 wq2[]`, `uvec4 wq4[]` aliasing the weights, `uint wtail[]`,
//   `float bias[]`, `float y[]`, and push constants pc.N, pc.K, pc.has_bias, pc.ldy, pc.y0.
#ifndef GEMV_SPAN_GLSL
#define GEMV_SPAN_GLSL

const uint T = gl_WorkGroupSize.x;  // lanes along K per row group
const uint G = gl_WorkGroupSize.y;  // row groups per workgroup
const uint ROWS = G * NR;           // rows of W per workgroup
const uint PPB = FORMAT == FMT_Q8_0 ? 4u : FORMAT == FMT_Q4_0 ? 2u : 16u;
// Words a piece holds (RP) per row.
const uint RP = 8u;  // at most (Q5_K); the words a format does not use are never set or read

// Word i of the weights, i clamped into the binding (with TAIL the word past the last whole
// one is the tail word).
uint span_word(uint i) {
    const uint len = uint(wq.length());
    if (TAIL) {
        return quant_word(min(i, len));
    }
    return wq[min(i, len - 1u)];
}

// The two words of the 8 bytes at byte o (2-aligned), from three loads.
uvec2 span_two(uint o) {
    const uint a = o >> 2;
    const uint w0 = span_word(a), w1 = span_word(a + 1u), w2 = span_word(a + 2u);
    return (o & 2u) != 0u ? uvec2(funnel16(w0, w1), funnel16(w1, w2)) : uvec2(w0, w1);
}

// The 4 bytes at byte o (2-aligned), from two loads.
uint span_one(uint o) {
    const uint a = o >> 2;
    const uint w0 = span_word(a);
    return (o & 2u) != 0u ? funnel16(w0, span_word(a + 1u)) : w0;
}

// The half at byte o (2-aligned) as a float.
float span_half(uint o) {
    const uint w = span_word(o >> 2);
    return quant_half((o & 2u) != 0u ? w >> 16 : w & 0xFFFFu);
}

// Load piece p of the block at byte bo into r (decoded words, see the header).
void span_load(uint bo, uint p, out uint r[RP]) {
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        const uvec2 c = span_two(bo + 2u + 8u * p);
        r[0] = c.x;
        r[1] = c.y;
        r[2] = floatBitsToUint(span_half(bo));
    } else if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        const uint c = p >> 2, j = p & 3u;
        const uvec4 h = wq4[bo >> 4];
        r[0] = h.x;
        r[1] = h.y;
        r[2] = h.z;
        r[3] = h.w;
        const uint qs = FORMAT == FMT_Q4_K ? 16u : 48u;
        const uvec2 q = wq2[(bo + qs + 32u * c + 8u * j) >> 3];
        r[4] = q.x;
        r[5] = q.y;
        if (FORMAT == FMT_Q5_K) {
            const uvec2 qh = wq2[(bo + 16u + 8u * j) >> 3];
            r[6] = qh.x;
            r[7] = qh.y;
        }
    } else {
        // Q6_K: half h, positions 4j .. 4j + 3.
        const uint h = p >> 3, j = p & 7u;
        r[0] = span_one(bo + 64u * h + 4u * j);
        r[1] = span_one(bo + 64u * h + 32u + 4u * j);
        r[2] = span_one(bo + 128u + 32u * h + 4u * j);
        const uvec2 s = span_two(bo + 192u + 8u * h);
        r[3] = s.x;
        r[4] = s.y;
        r[5] = floatBitsToUint(span_half(bo + 208u));
    }
}

// The partial sums of the T lanes of each row group meet in shared memory: series
// o = (i * M + m) * G + g at [o * T, o * T + T). Then one invocation per output adds them.
shared float span_red[NR * M * G * T];

void span_finish(float acc[NR][M], uint wg) {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            span_red[((i * M + m) * G + g) * T + t] = acc[i][m];
        }
    }
    barrier();
    for (uint o = g * T + t; o < NR * M * G; o += T * G) {
        const uint i = o / (M * G), m = (o / G) % M, og = o % G;
        const uint n = (wg * G + og) * NR + i;
        float sum = 0.0;
        for (uint k = 0u; k < T; k++) {
            sum += span_red[o * T + k];
        }
        if (n < pc.N) {
            y[m * pc.ldy + pc.y0 + n] = pc.has_bias != 0u ? sum + bias[pc.y0 + n] : sum;
        }
    }
}

#endif
