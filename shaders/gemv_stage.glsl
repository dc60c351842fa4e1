// gemv_stage.glsl: the row layout, how gemv_q.comp (float path) streams a block-quantised
// weight W [N, K]. The design, and why:
//
// A decode GEMV reads every weight byte once and each x element N times, so it is bound by
// how fast W streams, and the first obstacle is not DRAM but the per-SM load pipeline: a
// load instruction of a subgroup costs about one cycle per few distinct cache lines it
// touches (NVIDIA's L1 resolves 4 tags a cycle, GCN's TA spends about 16 cycles on a wave64
// vector load), so the kernel must (1) move many bytes per load instruction, (2) spend few load
// instructions on x, which has no reuse across lanes unless lanes share it, and (3) keep
// ~25 KB per SM in flight on an H200 (4.8 TB/s x ~700 ns over 132 SMs).
//
// Where it runs: the float path at several rows of x (Q8_0, Q4_0, Q4_K, Q5_K). One row of x,
// the integer-dot path and Q6_K take the span layout (gemv_span.glsl), which on an H200 was
// faster there (its integer-dot kernel in this layout, gemv_q_dot, was slower at every
// shape measured and was removed). Measured (evidence/h200-9034ffd,
// h200-exploration-2026-11-29): at one row of x this layout stops at 35-45% of stream read,
// whatever the slices, unit size or prefetch; a variant that copied each tile with
// consecutive uvec4 loads into shared memory was no faster, at twice the registers. Its
// units of up to 68 words a lane leave few warps per multiprocessor, each decoding for a
// long time with nothing in flight.
//
// Rows across lanes. The workgroup is R x S invocations (local_size_x = R, local_size_y =
// S). Invocation (r, s) owns rows n = wg * R * NR + i * R + r (i < NR) and the K-slice s:
// the units u = s, s + S, s + 2S, ... of each of its rows, a unit being UB consecutive blocks
// (UB * 32 or UB * 256 weights). The R invocations of a slice read R different rows at the
// same K position, so every load of x has one address across them: one cache line for a
// whole subgroup when R is a multiple of the subgroup size (and on GCN a compiler may then
// use a scalar load), a few otherwise. Each x load serves the NR
// rows of W of the invocation, each decoded weight the M rows of x.
//
// Wide loads, all issued before any use. An invocation loads a whole unit of each of its NR
// rows at once (RW words per row: 36 for 8 Q4_0 blocks, 68 for 8 Q8_0 blocks, 36 for a Q4_K
// block, 54 for a Q6_K block) as uvec4 (LW = 4), uvec2 (2) or uint (1) loads, and with
// PREFETCH it issues the next unit's loads before decoding the current one. Neighbouring
// invocations read different rows, so a uvec4 load touches one 32-byte sector per invocation
// and uses half of it; the other half is the same invocation's next load (an L1 hit).
//
// Alignment. ALIGNED units start at multiples of 4 * LW bytes (the host chooses UB so that
// UB blocks are a multiple of 4 * LW bytes, and uses it only where every row is too): the
// field offsets inside a unit are then compile-time constants, the loads land exactly on the
// unit and need no bounds checks. Otherwise (Q6_K, and Q8_0 / Q4_0 rows of an odd number of
// blocks) a unit is one block at a 2-aligned offset: the invocation loads the aligned words
// that cover it and shifts them into place (gemv_realign: one select per word per bit of the
// misalignment, then a 16-bit funnel shift), and loads that would pass the end of the tensor
// fall back to bounds-checked word loads (the last half word through the tail word).
//
// No barrier and no shared memory in the streaming loop. After it, the partial sums of the
// S slices of a row meet in shared memory (one barrier, S values per output, a fixed order);
// they lie in different subgroups, so subgroup arithmetic would not help there.
//
// The host picks R, S, NR, LW, UB, PREFETCH and ROLL per device class, format, rows of x and
// shape: src/ops/matmul_quant.c, gemv_plan_for() and its QUANT_GEMV_* knobs.
//
// The includer declares, before including this file and after quant.glsl:
//   layout(local_size_x_id = 0, local_size_y_id = 5) in;   (R, S)
//   spec constants FORMAT (1), TAIL (2), M (3), NR (4), LW (6), ALIGNED (7), UB (8),
//     PREFETCH (9), ROLL (10)
//   buffers `uint wq[]`, `uvec2 wq2[]`, `uvec4 wq4[]` aliasing the weights, `uint wtail[]`,
//   `float bias[]`, `float y[]`, and push constants pc.N, pc.K, pc.has_bias, pc.ldy, pc.y0.
#ifndef GEMV_STAGE_GLSL
#define GEMV_STAGE_GLSL

const uint R = gl_WorkGroupSize.x;  // row lanes: invocations of a slice, one row each (x NR)
const uint S = gl_WorkGroupSize.y;  // slices of K per workgroup
const uint ROWS = R * NR;           // rows of W per workgroup
const uint UNIT_BYTES = UB * BLOCK_BYTES;
const uint LOAD_BYTES = 4u * LW;
// Words loaded per unit and row: the unit itself when aligned; else enough whole loads to
// cover a block that starts anywhere (2-aligned) inside the first one.
const uint RW = ALIGNED ? UNIT_BYTES / 4u
                        : ((LOAD_BYTES - 2u + BLOCK_BYTES + LOAD_BYTES - 1u) / LOAD_BYTES) * LW;
const uint NV = RW / LW;  // load instructions per unit and row

// Loads of LW words the weight binding holds.
uint gemv_load_count() {
    return LW == 4u ? uint(wq4.length()) : LW == 2u ? uint(wq2.length()) : uint(wq.length());
}

// The RW words from byte floor(start / LOAD_BYTES) * LOAD_BYTES of the weights on. Aligned
// units lie inside the tensor; other loads are checked against its end, and words past it
// read 0 (the half word of a 2 mod 4 tensor comes from the tail word).
void gemv_load(uint start, out uint w[RW]) {
    const uint v0 = start / LOAD_BYTES;
    if (ALIGNED || v0 + NV <= gemv_load_count()) {
        [[unroll]] for (uint j = 0u; j < NV; j++) {
            if (LW == 4u) {
                const uvec4 t = wq4[v0 + j];
                w[4u * j] = t.x;
                w[4u * j + 1u] = t.y;
                w[4u * j + 2u] = t.z;
                w[4u * j + 3u] = t.w;
            } else if (LW == 2u) {
                const uvec2 t = wq2[v0 + j];
                w[2u * j] = t.x;
                w[2u * j + 1u] = t.y;
            } else {
                w[j] = wq[v0 + j];
            }
        }
    } else {
        const uint words = uint(wq.length()) + (TAIL ? 1u : 0u);
        [[unroll]] for (uint i = 0u; i < RW; i++) {
            const uint wi = v0 * LW + i;
            w[i] = wi < words ? quant_word(wi) : 0u;
        }
    }
}

// Unaligned units: move the block that starts h half words into w (h < 2 * LW) to word 0,
// in place. Word shifts by select stages (LW = 2: one, LW = 4: two), then a half-word funnel
// shift; words past the block get what is left, unused.
void gemv_realign(inout uint w[RW], uint h) {
    const bool by2 = LW >= 4u && (h & 4u) != 0u;
    const bool by1 = LW >= 2u && (h & 2u) != 0u;
    const bool odd = (h & 1u) != 0u;
    // In place, lowest word first: each step reads words above i, not yet overwritten.
    if (LW >= 4u) {
        [[unroll]] for (uint i = 0u; i < RW; i++) {
            w[i] = by2 ? w[min(i + 2u, RW - 1u)] : w[i];
        }
    }
    if (LW >= 2u) {
        [[unroll]] for (uint i = 0u; i < RW; i++) {
            w[i] = by1 ? w[min(i + 1u, RW - 1u)] : w[i];
        }
    }
    [[unroll]] for (uint i = 0u; i < RW; i++) {
        w[i] = odd ? funnel16(w[i], w[min(i + 1u, RW - 1u)]) : w[i];
    }
}

// A unit is decoded in PIECES pieces of (at most) 64 weights: 2 Q8_0 / Q4_0 blocks, a pair of
// K-quant sub-blocks, a quarter of a Q6_K block. Each piece finds its words at the same
// places (the decoder moves the next piece's words down, gemv_next_piece), so that with ROLL
// the pieces can run as a loop that is not unrolled: the loop body stays small (an unrolled
// 256-weight unit at 8 rows of x is some 2000 fused multiply-adds, which instruction caches
// and shader compilers handle badly), and every register index is still a constant.
const uint PIECE_BLOCKS = FORMAT <= FMT_Q4_0 ? (UB >= 2u ? 2u : 1u) : 1u;
const uint PIECES = FORMAT <= FMT_Q4_0 ? UB / PIECE_BLOCKS : 4u;
// Words a piece moves down: 2 blocks of Q8_0 / Q4_0, 32 bytes of K-quant codes, 12 words of
// Q6_K (after gemv_q6_pieces).
const uint PIECE_WORDS = FORMAT <= FMT_Q4_0 ? PIECE_BLOCKS * BLOCK_BYTES / 4u
                       : FORMAT == FMT_Q6_K ? 12u : 8u;
// The first word that moves: K-quant codes start at byte 16 (Q4_K) or 48 (Q5_K).
const uint PIECE_FIRST = FORMAT == FMT_Q4_K ? 4u : FORMAT == FMT_Q5_K ? 12u : 0u;
// Q6_K's scale words (bytes 192 .. 207), where its pieces end.
const uint Q6_SCALES = FORMAT == FMT_Q6_K ? 48u : 0u;
// The last word + 1 that moves.
const uint PIECE_END = FORMAT == FMT_Q6_K ? Q6_SCALES : RW;

// Move the next piece's words down to where the decoder reads them (PIECES > 1 only;
// after the last piece the words are stale and unused). Q6_K's scale words follow its
// halves: pieces 0, 1 read words 48, 49, pieces 2, 3 words 50, 51.
void gemv_next_piece(inout uint w[RW], uint p) {
    if (PIECES == 1u) {
        return;
    }
    [[unroll]] for (uint i = PIECE_FIRST; i + PIECE_WORDS < PIECE_END; i++) {
        w[i] = w[i + PIECE_WORDS];
    }
    if (FORMAT == FMT_Q6_K) {
        const bool second = (p & 1u) != 0u;
        w[Q6_SCALES] = second ? w[Q6_SCALES + 2u] : w[Q6_SCALES];
        w[Q6_SCALES + 1u] = second ? w[Q6_SCALES + 3u] : w[Q6_SCALES + 1u];
    }
}

// Q6_K: lay a realigned block out as 4 pieces of 12 words (piece t = 2h + gh: the ql words of
// positions 16gh .. 16gh + 15 of quarters 0 / 2 and of quarters 1 / 3, and the qh words of
// the same positions, of half h), then the 4 scale words and d. A renaming, no moves once
// the registers are allocated.
void gemv_q6_pieces(inout uint w[RW]) {
    uint t[RW];
    [[unroll]] for (uint i = 0u; i < RW; i++) {
        t[i] = w[i];
    }
    [[unroll]] for (uint p = 0u; p < 4u; p++) {
        const uint h = p >> 1, gh = p & 1u;
        [[unroll]] for (uint g = 0u; g < 4u; g++) {
            w[12u * p + g] = t[16u * h + 4u * gh + g];
            w[12u * p + 4u + g] = t[16u * h + 8u + 4u * gh + g];
            w[12u * p + 8u + g] = t[32u + 8u * h + 4u * gh + g];
        }
    }
}

// The 32 bits at byte o (even, a compile-time constant after unrolling) of a loaded unit
// (aligned) or realigned block, and the 16 bits there.
uint gemv_w32(uint w[RW], uint o) {
    const uint i = o >> 2;
    return (o & 2u) == 0u ? w[i] : funnel16(w[i], w[min(i + 1u, RW - 1u)]);
}
uint gemv_w16(uint w[RW], uint o) {
    return (o & 2u) == 0u ? w[o >> 2] & 0xFFFFu : w[o >> 2] >> 16;
}

// The partial sums of the S slices of each row meet in shared memory, S values per output
// summed in a fixed order, and the outputs of the workgroup's rows are written (bias added).
shared float gemv_red[S > 1u ? S * NR * M * R : 1u];

void gemv_finish(float acc[NR][M], uint wg) {
    const uint r = gl_LocalInvocationID.x, s = gl_LocalInvocationID.y;
    if (S == 1u) {
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            const uint n = wg * ROWS + i * R + r;
            if (n < pc.N) {
                [[unroll]] for (uint m = 0u; m < M; m++) {
                    y[m * pc.ldy + pc.y0 + n] = pc.has_bias != 0u ? acc[i][m] + bias[pc.y0 + n] : acc[i][m];
                }
            }
        }
        return;
    }
    // Series o = (i * M + m) * R + r of slice s at s * NR * M * R + o.
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            gemv_red[((s * NR + i) * M + m) * R + r] = acc[i][m];
        }
    }
    barrier();
    for (uint o = s * R + r; o < NR * M * R; o += R * S) {
        const uint i = o / (M * R), m = (o / R) % M;
        const uint n = wg * ROWS + i * R + o % R;
        float sum = 0.0;
        for (uint t = 0u; t < S; t++) {
            sum += gemv_red[t * NR * M * R + o];
        }
        if (n < pc.N) {
            y[m * pc.ldy + pc.y0 + n] = pc.has_bias != 0u ? sum + bias[pc.y0 + n] : sum;
        }
    }
}

#endif
