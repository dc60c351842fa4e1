// gemv_q.glsl: the streaming loop of the quantized GEMV kernels (gemv_q.comp: float path,
// gemv_q_dot.comp: integer-dot path). A row of W is read along K by the T lanes of one row
// group, neighbouring lanes reading neighbouring pieces (quant.glsl) of the block bodies, so
// that a subgroup's load instruction covers one contiguous stretch of 16-byte pieces.
//
// Why this shape. The device layout (quant.glsl) starts every block body at a multiple of 16
// bytes, so a lane's codes are one uvec2 / uvec4 load and a subgroup's loads are coalesced;
// with the GGUF layout's 2-aligned blocks each lane read its piece with several word loads
// spanning many cache lines per instruction, and the GEMV stopped well short of stream read
// whatever its plan (docs/tuning.md, "Device layout of block weights").
//
// Pieces. Lane t of a row group takes pieces t, t + T, t + 2T, ... of each of its NR rows, U
// pieces of every row loaded before any is decoded. Since T is a multiple of PPB, a lane's
// piece index inside the block never changes and its block advances by a constant.
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
// Experts modes (EXPERTS: 0 off, 1 per pair, 2 grouped; a mixture of experts' expert GEMVs):
// W is a stack of experts of N rows each, the part bound holding experts [e_lo, e_lo + e_n);
// a pair is (row r, slot j) of the batch, number z = r slots + j, its expert ids[ids0 + z]
// read here, on the device, so that a recorded step follows any routing. Pair z multiplies
// row z / xdiv of x (xdiv = slots: x shared by a row's experts; 1: a row of x per pair) by its
// expert's rows, (id - e_lo) N onwards, into row z of y; a pair whose expert lies outside the
// part is another dispatch's (each part of a stack bound in parts is one dispatch) and writes
// nothing here. No bias.
//  - Per pair (1): workgroup z is pair z, one row of x (M = 1); a workgroup whose expert lies
//    outside the part returns at once. For decode, where the pairs are few.
//  - Grouped (2): workgroup z is expert e_lo + z of the part. It scans ids[ids0 .. ids0 +
//    pairs) in windows of GEMV_WINDOW pairs, listing its expert's pairs in shared memory, and
//    multiplies them M at a time (the kernel's M rows of x are a chunk of the list), so that
//    the expert's rows are read once per M pairs, not once per pair. Fewer than M matches
//    left at the end of a window wait in the list for the next one; the last chunk of the
//    last window may be partial: its rows past the list's end repeat the chunk's last pair
//    (an x row that exists; the kernel's M rows are unrolled) and write nothing. The list's
//    order (shared atomics) varies from run to run; a pair's result does not, since rows of x
//    never mix in a sum.
// Off (0), the modes compile away.
//
// The includer declares, before including this file and after quant.glsl:
//   layout(local_size_x_id = 0, local_size_y_id = 4) in;   (T lanes along K, G row groups)
//   spec constants FORMAT (1), M (2), NR (3), U (5), PB (6), STAGE (7, or a constant false)
//   and EXPERTS (uint, the mode), and a constant uint GLU (1: gemv_q_dot.glsl's
//   GEMV_Q_DOT_GLU, its row groups' rows i >= NR / 2 the second weight's, read by
//   piece_load_up, the results stored by gemv_glu_finish; 0: neither is called)
//   buffers `uint wq[]`, `uvec2 wq2[]`, `uvec4 wq4[]` aliasing the block bodies, `uint wd[]`,
//   `float bias[]` and `uint ids[]` (aliased: experts mode has no bias), `float y[]`, and push
//   constants pc.N, pc.K, pc.has_bias, pc.ldy, pc.y0, pc.dlo, pc.e_lo, pc.e_n, pc.xdiv,
//   pc.ids0, pc.pairs; after it, the decoder piece() (prototype below) and a main() that calls
//   gemv_main().
#ifndef GEMV_Q_GLSL
#define GEMV_Q_GLSL

const uint T = gl_WorkGroupSize.x;  // lanes along K per row group
const uint G = gl_WorkGroupSize.y;  // row groups per workgroup
const bool GEMV_GLU = GLU != 0u;
const uint NRW = GEMV_GLU ? NR / 2u : NR;  // output rows per row group

// GEMV_GLU: piece p of block blk of the second weight; the results stored after the
// reduction (the includer's).
void piece_load_up(uint blk, uint p, out uint r[RP]);
void gemv_glu_finish(uint wg);

// The partial sums of the T lanes of each row group meet in shared memory: series
// o = (i * M + m) * G + g at [o * T, o * T + T). They are added in two steps, a fixed order:
// lanes t < T / F of each row group sum F neighbours of every series in place, then one
// invocation per output sums the T / F results.
shared float gemv_red[NR * M * G * T];

const bool GEMV_PAIR = EXPERTS == 1u;
const bool GEMV_GROUPED = EXPERTS == 2u;
const bool GEMV_EXPERTS = EXPERTS != 0u;

// Per-pair mode: the workgroup's pair (y's row) and its row of x (gemv_main sets them).
uint gemv_pair = 0u;
uint gemv_xrow = 0u;

// Grouped mode: pairs scanned a window at a time, the list of the expert's pairs (a window's
// matches and fewer than M carried over from the last window), and the rows of x and of y of
// the chunk in flight, of which gemv_valid are the list's.
const uint GEMV_WINDOW = 1024u;  // MCL_GEMV_GROUPED_WINDOW (quant_plan.h)
shared uint gemv_list[GEMV_GROUPED ? GEMV_WINDOW + M : 1u];
shared uint gemv_listed;
uint gemv_cx[M];
uint gemv_cy[M];
uint gemv_valid = M;

// The row of x, and of y, that the kernel's row m of x stands for.
uint gemv_x_row(uint m) {
    return GEMV_GROUPED ? gemv_cx[m] : GEMV_PAIR ? gemv_xrow : m;
}

uint gemv_y_row(uint m) {
    return GEMV_GROUPED ? gemv_cy[m] : GEMV_PAIR ? gemv_pair : m;
}
const uint GEMV_F = T >= 8u ? 8u : 1u;

// y[i]'s value from the product's v: v itself, unless the includer adds it to y's own
// (gemv_q_dot.glsl's has_bias bit 1).
#ifndef GEMV_ACCUMULATE
#define GEMV_ACCUMULATE(i, v) (v)
#endif

void gemv_finish(float acc[NR][M], uint wg) {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            gemv_red[((i * M + m) * G + g) * T + t] = acc[i][m];
        }
    }
    barrier();
    if (GEMV_F > 1u && t < T / GEMV_F) {
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint at = ((i * M + m) * G + g) * T + t * GEMV_F;
                float sum = 0.0;
                [[unroll]] for (uint k = 0u; k < GEMV_F; k++) {
                    sum += gemv_red[at + k];
                }
                gemv_red[at] = sum;
            }
        }
    }
    barrier();
    if (GEMV_GLU) {
        gemv_glu_finish(wg);
        return;
    }
    for (uint o = g * T + t; o < NR * M * G; o += T * G) {
        const uint i = o / (M * G), m = (o / G) % M, og = o % G;
        const uint n = (wg * G + og) * NR + i;
        float sum = 0.0;
        for (uint k = 0u; k < T; k += GEMV_F) {
            sum += gemv_red[o * T + k];
        }
        if (n < pc.N && (!GEMV_GROUPED || m < gemv_valid)) {
            const uint yi = gemv_y_row(m) * pc.ldy + pc.y0 + n;
            y[yi] = GEMV_ACCUMULATE(yi, (pc.has_bias & 1u) != 0u ? sum + bias[pc.y0 + n] : sum);
        }
    }
}

#ifdef GEMV_Q_DOT_RMS
// gemv_q_dot.glsl's: the workgroup's activations made from x (its row step), called by every
// invocation once, after the first round's weight loads (gemv_rows; no experts, no STAGE).
void gemv_rms_prologue();
#endif

// The includer's decoder: acc[i][m] += piece p of block b (of the row) of row i (words r[i])
// . x[m], nothing where !ok.
void piece(uint r[NR][RP], uint b, uint p, bool ok, inout float acc[NR][M]);

// With STAGE, the includer's copy of the x of blocks b0 .. b0 + U * T / PPB - 1 (a round) into
// shared memory, between barriers.
void gemv_stage(uint b0);

// Piece p of block b of each of the NR rows starting at blocks row_blk[].
void gemv_load(uint row_blk[NR], uint b, uint p, out uint r[NR][RP]) {
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        if (GEMV_GLU && i >= NRW) {
            piece_load_up(row_blk[i] + b, p, r[i]);
        } else {
            piece_load(row_blk[i] + b, pc.dlo + row_blk[i] + b, p, r[i]);
        }
    }
}

// The streaming loop over the workgroup's rows of W (row_blk) and the kernel's M rows of x,
// its results written by gemv_finish.
void gemv_rows(uint row_blk[NR], uint wg) {
    const uint t = gl_LocalInvocationID.x;
    const uint nb = pc.K / QK;
    const uint P = nb * PPB;
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            acc[i][m] = 0.0;
        }
    }
    const uint p = t % PPB;
    if (STAGE) {
        // Rounds in step across the workgroup: the round's x is staged once for all its rows
        // (gemv_q.comp); past the row, a lane reads the round's first block, counted zero.
        for (uint q0 = 0u; q0 < P; q0 += U * T) {
            const uint b0 = q0 / PPB;
            uint r[U][NR][RP];
            uint bu[U];
            [[unroll]] for (uint u = 0u; u < U; u++) {
                bu[u] = q0 + u * T + t < P ? b0 + u * (T / PPB) + t / PPB : b0;
                gemv_load(row_blk, bu[u], p, r[u]);
            }
            gemv_stage(b0);
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
        gemv_finish(acc, wg);
        return;
    }
    uint kb = t / PPB;
    uint q0 = t;
#ifdef GEMV_Q_DOT_RMS
    // The first round's weights loaded before the row step, so that their round trip overlaps
    // it (a short-lived workgroup streams only a few rounds).
    const bool first = q0 + (U - 1u) * T < P;
    uint r0[U][NR][RP];
    if (first) {
        [[unroll]] for (uint u = 0u; u < U; u++) {
            gemv_load(row_blk, kb + u * (T / PPB), p, r0[u]);
        }
    }
    gemv_rms_prologue();
    if (first) {
        [[unroll]] for (uint u = 0u; u < U; u++) {
            piece(r0[u], kb + u * (T / PPB), p, true, acc);
        }
        q0 += U * T;
        kb += U * T / PPB;
    }
#endif
    for (; q0 + (U - 1u) * T < P; q0 += U * T, kb += U * T / PPB) {
        uint r[U][NR][RP];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            gemv_load(row_blk, kb + u * (T / PPB), p, r[u]);
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            piece(r[u], kb + u * (T / PPB), p, true, acc);
        }
    }
    if (q0 < P) {
        uint r[U][NR][RP];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            gemv_load(row_blk, q0 + u * T < P ? kb + u * (T / PPB) : 0u, p, r[u]);
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const bool ok = q0 + u * T < P;
            piece(r[u], ok ? kb + u * (T / PPB) : 0u, p, ok, acc);
        }
    }
    gemv_finish(acc, wg);
}

// Grouped mode: the expert's pairs listed a window at a time and multiplied in chunks of M
// (the barriers' trip counts come from shared memory read after a barrier: uniform).
void gemv_grouped(uint row_blk[NR], uint wg) {
    const uint lane = gl_LocalInvocationIndex, lanes = T * G;
    const uint expert = pc.e_lo + gl_WorkGroupID.z;
    uint held = 0u;  // matches carried over at the list's front (fewer than M)
    for (uint w0 = 0u; w0 < pc.pairs; w0 += GEMV_WINDOW) {
        const uint wn = min(GEMV_WINDOW, pc.pairs - w0);
        if (lane == 0u) {
            gemv_listed = held;
        }
        barrier();
        for (uint i = lane; i < wn; i += lanes) {
            if (ids[pc.ids0 + w0 + i] == expert) {
                gemv_list[atomicAdd(gemv_listed, 1u)] = w0 + i;
            }
        }
        barrier();
        const uint listed = gemv_listed;
        const uint full = w0 + wn >= pc.pairs ? listed : listed / M * M;
        for (uint c0 = 0u; c0 < full; c0 += M) {
            gemv_valid = min(M, full - c0);
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint pair = gemv_list[c0 + min(m, gemv_valid - 1u)];
                gemv_cx[m] = pair / pc.xdiv;
                gemv_cy[m] = pair;
            }
            gemv_rows(row_blk, wg);
            barrier();  // the chunk's reads of the list and of gemv_red are done
        }
        held = listed - full;
        const uint keep = lane < held ? gemv_list[full + lane] : 0u;
        barrier();
        if (lane < held) {
            gemv_list[lane] = keep;
        }
    }
}

// The kernels' main(): the workgroup's rows of W (for an expert, in its rows of the part), then
// the streaming loop over the rows of x of its mode.
void gemv_main() {
    const uint g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / QK;
    // An expert's first row in the part bound (32 bits hold it: a part is one binding, and its
    // blocks are fewer than its bytes).
    uint expert_row = 0u;
    if (GEMV_GROUPED) {
        expert_row = gl_WorkGroupID.z * pc.N;
    } else if (GEMV_PAIR) {
        gemv_pair = gl_WorkGroupID.z;
        const uint e = ids[pc.ids0 + gemv_pair] - pc.e_lo;  // below e_lo wraps past e_n
        if (e >= pc.e_n) {
            return;  // another part's expert (or no expert): the whole workgroup leaves
        }
        gemv_xrow = gemv_pair / pc.xdiv;
        expert_row = e * pc.N;
    }
    uint row_blk[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        row_blk[i] = (expert_row + min((wg * G + g) * NRW + i % NRW, pc.N - 1u)) * nb;
    }
    if (GEMV_GROUPED) {
        gemv_grouped(row_blk, wg);
    } else {
        gemv_rows(row_blk, wg);
    }
}

#endif
