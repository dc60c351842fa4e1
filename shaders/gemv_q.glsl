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
// Experts mode (EXPERTS; a mixture of experts' expert GEMVs): W is a stack of experts of N
// rows each, the part bound holding experts [e_lo, e_lo + e_n); workgroup z is the pair
// (row r, slot j) = (z / slots, z % slots) of the batch, whose expert ids[ids0 + z] is read
// here, on the device, so that a recorded step follows any routing. A workgroup whose expert
// lies outside the part returns at once (each part of a stack bound in parts is one dispatch
// over every pair); it multiplies row z / xdiv of x (xdiv = slots: x shared by a row's
// experts; 1: a row of x per pair) by that expert's rows, (id - e_lo) N onwards, into row z of
// y. One row of x per workgroup (M = 1), no bias. Off (a constant false), it compiles away.
//
// The includer declares, before including this file and after quant.glsl:
//   layout(local_size_x_id = 0, local_size_y_id = 4) in;   (T lanes along K, G row groups)
//   spec constants FORMAT (1), M (2), NR (3), U (5), PB (6), STAGE (7, or a constant false)
//   and EXPERTS
//   buffers `uint wq[]`, `uvec2 wq2[]`, `uvec4 wq4[]` aliasing the block bodies, `uint wd[]`,
//   `float bias[]` and `uint ids[]` (aliased: experts mode has no bias), `float y[]`, and push
//   constants pc.N, pc.K, pc.has_bias, pc.ldy, pc.y0, pc.dlo, pc.e_lo, pc.e_n, pc.xdiv,
//   pc.ids0; after it, the decoder piece() (prototype below) and a main() that calls
//   gemv_main().
#ifndef GEMV_Q_GLSL
#define GEMV_Q_GLSL

const uint T = gl_WorkGroupSize.x;  // lanes along K per row group
const uint G = gl_WorkGroupSize.y;  // row groups per workgroup
const uint ROWS = G * NR;           // rows of W per workgroup

// The partial sums of the T lanes of each row group meet in shared memory: series
// o = (i * M + m) * G + g at [o * T, o * T + T). They are added in two steps, a fixed order:
// lanes t < T / F of each row group sum F neighbours of every series in place, then one
// invocation per output sums the T / F results.
shared float gemv_red[NR * M * G * T];

// Experts mode: the workgroup's pair (y's row) and its row of x (gemv_main sets them).
uint gemv_pair = 0u;
uint gemv_xrow = 0u;

// The row of x, and of y, that the kernel's row m of x stands for.
uint gemv_x_row(uint m) {
    return EXPERTS ? gemv_xrow : m;
}

uint gemv_y_row(uint m) {
    return EXPERTS ? gemv_pair : m;
}
const uint GEMV_F = T >= 8u ? 8u : 1u;

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
    for (uint o = g * T + t; o < NR * M * G; o += T * G) {
        const uint i = o / (M * G), m = (o / G) % M, og = o % G;
        const uint n = (wg * G + og) * NR + i;
        float sum = 0.0;
        for (uint k = 0u; k < T; k += GEMV_F) {
            sum += gemv_red[o * T + k];
        }
        if (n < pc.N) {
            y[gemv_y_row(m) * pc.ldy + pc.y0 + n] = pc.has_bias != 0u ? sum + bias[pc.y0 + n] : sum;
        }
    }
}

// The includer's decoder: acc[i][m] += piece p of block b (of the row) of row i (words r[i])
// . x[m], nothing where !ok.
void piece(uint r[NR][RP], uint b, uint p, bool ok, inout float acc[NR][M]);

// With STAGE, the includer's copy of the x of blocks b0 .. b0 + U * T / PPB - 1 (a round) into
// shared memory, between barriers.
void gemv_stage(uint b0);

// Piece p of block b of each of the NR rows starting at blocks row_blk[].
void gemv_load(uint row_blk[NR], uint b, uint p, out uint r[NR][RP]) {
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        piece_load(row_blk[i] + b, pc.dlo + row_blk[i] + b, p, r[i]);
    }
}

// The streaming loop, shared by both kernels (their main()).
void gemv_main() {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / QK;
    const uint P = nb * PPB;
    // Experts mode: the pair's expert, its first row in the part bound (32 bits hold it: a
    // part is one binding, and its blocks are fewer than its bytes).
    uint expert_row = 0u;
    if (EXPERTS) {
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
        row_blk[i] = (expert_row + min((wg * G + g) * NR + i, pc.N - 1u)) * nb;
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

#endif
