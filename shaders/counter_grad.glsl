// counter_grad.glsl: a tile of the counter layer's weight gradient G = grad_out^T x, computed
// on the fly and never stored (MEMORY_NATIVE.md section 1).
//
// Order, which the CPU reference repeats (tests/ref/ref_counter.c): the batch's N rows are cut
// into COUNTER_SEGMENTS = 4 segments of L = ceil(N / 4) rows (the last ones shorter or empty).
// Each segment's sum S_k[o, i] starts at +0.0 and adds grad_out[n, o] * x[n, i] for its rows n
// in increasing order; G = ((S_0 + S_1) + S_2) + S_3. Each product and each sum is rounded on
// its own (precise: no fused multiply-add). Which invocation sums what does not change a bit.
// An includer that defines COUNTER_GRAD_FUSED before including this file (the statistics
// pass) adds each product with fma() instead: the same order, half the instructions, and G
// within rounding of the exact one (its sums of G^2 and G t feed only the row factors, which
// the tests hold to a tolerance; the update pass's own G is the exact one).
//
// A tile is COUNTER_TILE_ROWS rows of W (specialization constant 3: 16, 32 or 64) by
// COUNTER_TILE_COLS = 64 columns, one workgroup of WG invocations (the includer's
// local_size_x, specialization constant 0, a multiple of COUNTER_GROUP = 4 x COUNTER_TILE_ROWS,
// at most 256), in WG / COUNTER_GROUP groups. An invocation of a group sums a 4 x 4 block of
// the tile (rows 4 (t / 16) .., columns 4 (t % 16) ..), so that each pair of shared-memory
// reads (4 values of grad_out, 4 of x) feeds 16 products. Group g takes segments g,
// g + WG / COUNTER_GROUP, ..., one pass each; the groups walk their segments together,
// COUNTER_TILE_N rows a chunk each (specialization constant 2: 16 or 32) staged in shared
// memory, the next chunk's loads issued into registers before the sums over the current one.
// At the end of a pass group 0 adds the other groups' segment sums to its running total in
// segment order, through shared memory. The tile's owners, invocations 0..COUNTER_GROUP - 1
// (COUNTER_OWNERS), then take their 16 weights each: row o0 + l / 4, columns
// i0 + 16 (l % 4) + j. Taller tiles load fewer bytes a product (a chunk's row of x feeds
// more rows of W) in fewer, larger workgroups.
//
// The includer declares, before including this file, the inputs as
//   readonly buffer ... { vec4 x4_data[]; };    x, [N, in]
//   readonly buffer ... { float go_data[]; };   grad_out, [N, out]
//   readonly buffer ... { vec4 go4_data[]; };   grad_out again, on the same binding
// and its workgroup size as local_size_x_id = 0. Shared memory: WG / COUNTER_GROUP groups of
// COUNTER_TILE_N x (COUNTER_TILE_ROWS / 4 + 16) x 16 bytes, and COUNTER_TILE_ROWS x 256 of
// totals (src/ops/counter.c gives 16 rows a chunk and fits the workgroup to the device).
// A chunk's loads are whole vec4s (x's rows always, in being a multiple of 16; grad_out's
// where out is a multiple of 4): a quarter of the load instructions of float reads.
#ifndef COUNTER_GRAD_GLSL
#define COUNTER_GRAD_GLSL

#define COUNTER_TILE_COLS 64u
#define COUNTER_SEGMENTS 4u

// Batch rows a chunk of each group (16 or 32; the host gives 16, src/ops/counter.c).
layout(constant_id = 2) const uint COUNTER_TILE_N = 16u;
// Rows of W a tile (specialization constant 3: 16, 32 or 64).
layout(constant_id = 3) const uint COUNTER_TILE_ROWS = 16u;

const uint COUNTER_WG = gl_WorkGroupSize.x;
const uint COUNTER_GROUP = 4u * COUNTER_TILE_ROWS;
const uint COUNTER_OWNERS = COUNTER_GROUP;
const uint COUNTER_GROUPS = COUNTER_WG / COUNTER_GROUP;
// A batch row of the tile's grad_out in vec4s.
const uint COUNTER_GO_ROW = COUNTER_TILE_ROWS / 4u;
// A chunk's vec4 loads an invocation: grad_out's (COUNTER_GO_ROW a batch row), x's (16).
const uint COUNTER_GO_LOADS = COUNTER_TILE_N * COUNTER_GO_ROW / COUNTER_GROUP;
const uint COUNTER_X_LOADS = COUNTER_TILE_N * 16u / COUNTER_GROUP;
// A group's chunk in shared memory: [row][COUNTER_GO_ROW] vec4s of grad_out, then [row][16]
// of x.
const uint COUNTER_STAGE = COUNTER_TILE_N * (COUNTER_GO_ROW + 16u);
// The staging area, reused at the end of a pass for a group's sums (a tile's, 16 x
// COUNTER_TILE_ROWS vec4s, which fit where there is more than one group: rows at most 64).
shared vec4 counter_sm[COUNTER_GROUPS * COUNTER_STAGE];
// The tile's totals, [row][16] vec4s, each invocation of group 0 adding to its own block's:
// in shared memory, not in registers (registers decide how many workgroups a multiprocessor
// holds; a total is touched once a pass).
shared vec4 counter_total[COUNTER_TILE_ROWS * 16u];

// A vec4 of 4 consecutive floats of a grad_out row (0 past the row's end): out not a multiple
// of 4.
vec4 counter_load4_go(uint at, uint c0, uint len) {
    vec4 v = vec4(0.0);
    [[unroll]] for (uint c = 0u; c < 4u; c++) {
        v[c] = c0 + c < len ? go_data[at + c] : 0.0;
    }
    return v;
}

// A chunk's loads from batch rows [n0, n0 + COUNTER_TILE_N) of the rows [n0, end) that are
// the group's, into registers: 0 past them and past W, where the sums below add +-0.0
// products, which change no sum (none is ever -0.0: each starts at +0.0, and a sum that
// cancels exactly is +0.0).
void counter_grad_load(uint out_dim, uint in_dim, uint o0, uint i0, uint n0, uint end,
                       out vec4 go[COUNTER_GO_LOADS], out vec4 xv[COUNTER_X_LOADS]) {
    const uint t = gl_LocalInvocationID.x % COUNTER_GROUP;
    const bool go_vec4 = out_dim % 4u == 0u;
    [[unroll]] for (uint q = 0u; q < COUNTER_GO_LOADS; q++) {
        const uint k = t + q * COUNTER_GROUP;
        const uint n = n0 + k / COUNTER_GO_ROW;
        const uint o = o0 + 4u * (k % COUNTER_GO_ROW);
        if (go_vec4) {
            go[q] = n < end && o < out_dim ? go4_data[(n * out_dim + o) / 4u] : vec4(0.0);
        } else {
            go[q] = n < end ? counter_load4_go(n * out_dim + o, o, out_dim) : vec4(0.0);
        }
    }
    [[unroll]] for (uint q = 0u; q < COUNTER_X_LOADS; q++) {
        const uint k = t + q * COUNTER_GROUP;
        const uint n = n0 + k / 16u;
        const uint i = i0 + 4u * (k % 16u);
        xv[q] = n < end && i < in_dim ? x4_data[(n * in_dim + i) / 4u] : vec4(0.0);
    }
}

// G of the calling owner's 16 weights (0 where they lie outside W; 0 for an invocation past
// the owners). Called by every invocation of the workgroup (it holds barriers).
void counter_grad_tile(uint N, uint out_dim, uint in_dim, uint o0, uint i0, out float g[16]) {
    const uint l = gl_LocalInvocationID.x;
    const uint grp = l / COUNTER_GROUP, t = l % COUNTER_GROUP;
    const uint rb = t / 16u, cb = t % 16u;  // the invocation's 4 x 4 block
    const uint stage = grp * COUNTER_STAGE;
    const uint seg_len = (N + COUNTER_SEGMENTS - 1u) / COUNTER_SEGMENTS;
    const uint chunks = max((seg_len + COUNTER_TILE_N - 1u) / COUNTER_TILE_N, 1u);
    const uint passes = COUNTER_SEGMENTS / COUNTER_GROUPS;
#ifdef COUNTER_GRAD_FUSED
    float acc[16];
#else
    precise float acc[16];
#endif
    [[unroll]] for (uint j = 0u; j < 16u; j++) {
        acc[j] = 0.0;
    }
    vec4 go[COUNTER_GO_LOADS];
    vec4 xv[COUNTER_X_LOADS];
    uint seg_start = min(grp * seg_len, N);
    uint seg_end = min(seg_start + seg_len, N);
    counter_grad_load(out_dim, in_dim, o0, i0, seg_start, seg_end, go, xv);
    for (uint it = 0u; it < passes * chunks; it++) {
        const uint pass = it / chunks, chunk = it % chunks;
        barrier();  // the previous chunk's sums (or the last pass's totals) are done
        [[unroll]] for (uint q = 0u; q < COUNTER_GO_LOADS; q++) {
            counter_sm[stage + t + q * COUNTER_GROUP] = go[q];
        }
        [[unroll]] for (uint q = 0u; q < COUNTER_X_LOADS; q++) {
            counter_sm[stage + COUNTER_TILE_N * COUNTER_GO_ROW + t + q * COUNTER_GROUP] = xv[q];
        }
        barrier();
        if (it + 1u < passes * chunks) {
            const uint next_pass = (it + 1u) / chunks, next_chunk = (it + 1u) % chunks;
            const uint s0 = min((next_pass * COUNTER_GROUPS + grp) * seg_len, N);
            counter_grad_load(out_dim, in_dim, o0, i0, s0 + next_chunk * COUNTER_TILE_N,
                              min(s0 + seg_len, N), go, xv);
        }
        [[unroll]] for (uint nn = 0u; nn < COUNTER_TILE_N; nn++) {
            const vec4 a = counter_sm[stage + nn * COUNTER_GO_ROW + rb];
            const vec4 b = counter_sm[stage + COUNTER_TILE_N * COUNTER_GO_ROW + nn * 16u + cb];
            [[unroll]] for (uint r = 0u; r < 4u; r++) {
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
#ifdef COUNTER_GRAD_FUSED
                    acc[4u * r + c] = fma(a[r], b[c], acc[4u * r + c]);
#else
                    acc[4u * r + c] = acc[4u * r + c] + a[r] * b[c];
#endif
                }
            }
        }
        if (chunk + 1u == chunks) {
            // The pass's segments in order into group 0's totals: its own, then each other
            // group's (through the staging area).
            if (grp == 0u) {
                [[unroll]] for (uint r = 0u; r < 4u; r++) {
                    const uint at = (4u * rb + r) * 16u + cb;
                    const vec4 a = vec4(acc[4u * r], acc[4u * r + 1u], acc[4u * r + 2u],
                                        acc[4u * r + 3u]);
                    precise vec4 s = pass == 0u ? a : counter_total[at] + a;
                    counter_total[at] = s;
                }
            }
            for (uint h = 1u; h < COUNTER_GROUPS; h++) {
                barrier();
                if (grp == h) {
                    [[unroll]] for (uint r = 0u; r < 4u; r++) {
                        counter_sm[t * 4u + r] =
                            vec4(acc[4u * r], acc[4u * r + 1u], acc[4u * r + 2u],
                                 acc[4u * r + 3u]);
                    }
                }
                barrier();
                if (grp == 0u) {
                    [[unroll]] for (uint r = 0u; r < 4u; r++) {
                        const uint at = (4u * rb + r) * 16u + cb;
                        precise vec4 s = counter_total[at] + counter_sm[t * 4u + r];
                        counter_total[at] = s;
                    }
                }
            }
            [[unroll]] for (uint j = 0u; j < 16u; j++) {
                acc[j] = 0.0;
            }
        }
    }
    // The totals to their owners: row o0 + l / 4, 16 columns from i0 + 16 (l % 4).
    barrier();
    const uint ro = (l >> 2) % COUNTER_TILE_ROWS, co = 4u * (l & 3u);
    [[unroll]] for (uint q = 0u; q < 4u; q++) {
        const vec4 p = l < COUNTER_OWNERS ? counter_total[ro * 16u + co + q] : vec4(0.0);
        [[unroll]] for (uint c = 0u; c < 4u; c++) {
            g[4u * q + c] = p[c];
        }
    }
}

#endif
