#version 450
// gemm_f32: C[b] = op(A[b]) * op(B[b]) (+ bias), FP32, tiled with register blocking.
//
// A workgroup computes a BM x BN tile of C; each invocation a TM x TN block of it, held in
// registers. K advances in steps of BK through shared memory: As holds the A tile transposed
// (k-major) and Bs the B tile (k-major), so that the inner loop reads contiguous vec4s for an
// invocation's TM rows and TN columns. The next K step's tile is loaded into registers while
// the current one is multiplied.
//
// An invocation's TM rows are TM/4 groups of 4 rows, BM/(TM/4) apart (likewise its columns), so
// that neighbouring invocations read neighbouring vec4s of shared memory (no bank conflicts)
// and write neighbouring vec4s of C (coalesced).
//
// With DB the shared tiles are double-buffered: step i multiplies buffer i % 2 while the
// next tile goes from registers into the other buffer, so a K step needs one barrier instead
// of two (the barrier that ends step i also orders step i - 1's reads of the buffer that
// step i fills). It doubles the shared memory: the host chooses it where that fits.
//
//   specialization constants: 0 workgroup size (= (BM/TM) * (BN/TN)), 1 BM, 2 BN, 3 BK,
//     4 TM, 5 TN (4, 8 or 16: groups of 4), 6 TRANS_A (A stored [K, M]),
//     7 TRANS_B (B stored [N, K]), 8 VEC_A / 9 VEC_B (the stored row length is a multiple
//     of 4, so tiles load as vec4), 10 DB (double-buffered shared tiles), 11 KU (values of K
//     per step of the loop over a tile: a divisor of BK), 12 COUNTER_B (below)
//   set 0: 0 A, 1 B, 2 bias (bound to any buffer when unused), 3 C
//   push constants: M, N, K, batch strides of A, B (0: shared by all batches), C, has_bias,
//     batches, k_chunk, counter_c
//
// COUNTER_B: B is a counter-state layer's weight W[o, i] = s[o] * t[o, i] (counter.glsl),
// decoded as its tile is loaded, never stored whole: binding 1 holds the packed codes of the
// stored matrix [out, in] (a stored row is an output o), binding 2 holds s (no bias then), and
// counter_c is the layer's C. TRANS_B gives y = x W^T, otherwise grad_x = grad_out W. Each
// value of W is exact (s times -1, 0 or 1), so the products are the float path's.
//
// The loop over a tile's BK values of K is unrolled KU at a time (the host chooses KU): whole,
// a 128 x 128 tile of 64 accumulators an invocation in steps of 16 took the NVIDIA compiler
// 46-52 s a pipeline (three of them were 149 of the 150 s before a training step's first step
// on an H100); gemm_q's measured answer to the same (8 at a time: its rate for a tenth of the
// compile time) is taken here too, and for 16 x 8 accumulators 4 at a time (the same 512
// multiply-adds unrolled: 12-14 s a pipeline against 59-66 s at 8, at the same rate).
//
// Split K: when a problem has too few output tiles to fill the GPU, workgroup z also selects a
// slice of k_chunk values of K; each slice writes its partial tile to C at slice * batches *
// stride_c (C is then a scratch buffer) and gemm_reduce_f32 sums the slices and adds the bias.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 8;
layout(constant_id = 4) const uint TM = 8;
layout(constant_id = 5) const uint TN = 8;
layout(constant_id = 6) const bool TRANS_A = false;
layout(constant_id = 7) const bool TRANS_B = false;
layout(constant_id = 8) const bool VEC_A = true;
layout(constant_id = 9) const bool VEC_B = true;
layout(constant_id = 10) const bool DB = false;
layout(constant_id = 11) const uint KU = 8;
layout(constant_id = 12) const bool COUNTER_B = false;

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufA4 { vec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { float b[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { vec4 b4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufPacked { uint packed_words[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufC { float c[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufC4 { vec4 c4[]; };

layout(push_constant) uniform Push {
    uint M, N, K;
    uint stride_a, stride_b, stride_c;
    uint has_bias;
    uint batches;
    uint k_chunk;
    uint counter_c;
} pc;

#include "counter.glsl"

// COUNTER_B: floor(code / (2C - 1)) for a 6-bit code as (code * counter_m) >> 16, exact for
// codes below 64 and C up to 512 (counter_m = ceil(65536 / (2C - 1)), set once by main).
uint counter_m;

float counter_w(uint code, uint row) {
    return bias[row] * float(int((code * counter_m) >> 16) - 1);
}

const uint THREADS_N = BN / TN;
const uint THREADS = (BM / TM) * (BN / TN);
// Shared tiles, k-major: As[k * AS + m], Bs[k * BS + n]; with DB two of each, the second at
// offset A_TILE (B_TILE). Rows are padded by 4 floats: where a tile is stored transposed (A
// row-major, B transposed) the BK / 4 invocations that hold a row's k values write BK / 4
// k-rows, which with rows of BM (a multiple of 32) floats fall in one bank; 4 more floats a
// row shift them by 4 banks, keeping the rows' vec4s aligned (gemm_q.comp does the same).
const uint AS = BM + 4;
const uint BS = BN + 4;
const uint A_TILE = BK * AS / 4;
const uint B_TILE = BK * BS / 4;
const uint NBUF = DB ? 2u : 1u;
shared vec4 As[NBUF * A_TILE];
shared vec4 Bs[NBUF * B_TILE];

// Global -> register staging: each invocation loads LA vec4s of the A tile and LB of B.
const uint LA = (BM * BK / 4 + THREADS - 1) / THREADS;
const uint LB = (BN * BK / 4 + THREADS - 1) / THREADS;

// Element (row, col) of a stored matrix whose rows are `stride` long, zero outside
// [0, rows) x [0, cols) (cols <= stride: a K slice ends before the row does).
float load_a(uint base, uint row, uint col, uint rows, uint cols, uint stride) {
    return (row < rows && col < cols) ? a[base + row * stride + col] : 0.0;
}
float load_b(uint base, uint row, uint col, uint rows, uint cols, uint stride) {
    if (COUNTER_B) {
        return (row < rows && col < cols) ? counter_w(counter_code(row * stride + col), row)
                                          : 0.0;
    }
    return (row < rows && col < cols) ? b[base + row * stride + col] : 0.0;
}

// A vec4 of 4 consecutive columns of stored row `row` starting at `col` (a multiple of 4).
// With VEC_*, stride and every slice boundary are multiples of 4, so the vec4 is all in or
// all out.
vec4 load_a4(uint base, uint row, uint col, uint rows, uint cols, uint stride) {
    if (VEC_A) {
        return (row < rows && col < cols) ? a4[(base + row * stride + col) / 4] : vec4(0.0);
    }
    return vec4(load_a(base, row, col, rows, cols, stride),
                load_a(base, row, col + 1, rows, cols, stride),
                load_a(base, row, col + 2, rows, cols, stride),
                load_a(base, row, col + 3, rows, cols, stride));
}
vec4 load_b4(uint base, uint row, uint col, uint rows, uint cols, uint stride) {
    if (COUNTER_B && VEC_B) {
        // Codes e .. e + 3 (e a multiple of 4): 24 bits at bit 6 (e % 16) of their group of
        // three words, crossing into the next word where they start past bit 8 of one.
        if (!(row < rows && col < cols)) {
            return vec4(0.0);
        }
        const uint e = row * stride + col;
        const uint bit = 6u * (e & 15u);
        const uint word = (e >> 4) * 3u + (bit >> 5);
        const uint shift = bit & 31u;
        uint bits = packed_words[word] >> shift;
        if (shift > 8u) {
            bits |= packed_words[word + 1u] << (32u - shift);
        }
        return vec4(counter_w(bits & 63u, row), counter_w((bits >> 6) & 63u, row),
                    counter_w((bits >> 12) & 63u, row), counter_w((bits >> 18) & 63u, row));
    }
    if (VEC_B) {
        return (row < rows && col < cols) ? b4[(base + row * stride + col) / 4] : vec4(0.0);
    }
    return vec4(load_b(base, row, col, rows, cols, stride),
                load_b(base, row, col + 1, rows, cols, stride),
                load_b(base, row, col + 2, rows, cols, stride),
                load_b(base, row, col + 3, rows, cols, stride));
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    // Column group and row group of this invocation. Each 32 consecutive invocations (a warp
    // on NVIDIA) take 8 column groups of 4 row groups where the tile has them, so that a K
    // value's shared reads are 4 vec4s of A and 8 of B (64 and 128 contiguous bytes) rather
    // than 2 and 16; any other width of subgroup computes the same.
    const uint THREADS_M = BM / TM;
    const bool WARP_BLOCKS = THREADS_N % 8u == 0u && THREADS_M % 4u == 0u && THREADS % 32u == 0u;
    const uint lane = tid % 32u, warp = tid / 32u;
    const uint tx = WARP_BLOCKS ? (warp % (THREADS_N / 8u)) * 8u + lane % 8u : tid % THREADS_N;
    const uint ty = WARP_BLOCKS ? (warp / (THREADS_N / 8u)) * 4u + lane / 8u : tid / THREADS_N;
    const uint m0 = gl_WorkGroupID.y * BM;
    const uint n0 = gl_WorkGroupID.x * BN;
    const uint batch = gl_WorkGroupID.z % pc.batches;
    const uint slice = gl_WorkGroupID.z / pc.batches;
    const uint base_a = batch * pc.stride_a;
    const uint base_b = batch * pc.stride_b;
    const uint base_c = gl_WorkGroupID.z * pc.stride_c;
    const uint M = pc.M, N = pc.N;
    // This slice's K range; loads treat K as ending at k_end, so the tail is zero-filled.
    const uint k_begin = slice * pc.k_chunk;
    const uint K = min(pc.K, k_begin + pc.k_chunk);
    const uint KS = pc.K;  // the stored row length along K
    if (COUNTER_B) {
        counter_m = (65535u + 2u * pc.counter_c - 1u) / (2u * pc.counter_c - 1u);
    }

    float acc[TM][TN];
    [[unroll]] for (uint i = 0; i < TM; i++) {
        [[unroll]] for (uint j = 0; j < TN; j++) {
            acc[i][j] = 0.0;
        }
    }

    vec4 ra[LA];
    vec4 rb[LB];

    // Tile loads. A's tile is BM x BK of op(A): stored [M, K] (rows m, vec4 along k) or, when
    // transposed, [K, M] (rows k, vec4 along m). Likewise B: [K, N] or, transposed, [N, K].
    // Index v enumerates the tile's vec4s in storage order.
    #define LOAD_TILES(k0)                                                                    \
        [[unroll]] for (uint l = 0; l < LA; l++) {                                            \
            uint v = tid + l * THREADS;                                                       \
            if (TRANS_A) {                                                                    \
                uint kk = v / (BM / 4), mm = (v % (BM / 4)) * 4;                              \
                ra[l] = v < BM * BK / 4 ? load_a4(base_a, (k0) + kk, m0 + mm, K, M, M) : vec4(0.0); \
            } else {                                                                          \
                uint mm = v / (BK / 4), kk = (v % (BK / 4)) * 4;                              \
                ra[l] = v < BM * BK / 4 ? load_a4(base_a, m0 + mm, (k0) + kk, M, K, KS) : vec4(0.0); \
            }                                                                                 \
        }                                                                                     \
        [[unroll]] for (uint l = 0; l < LB; l++) {                                            \
            uint v = tid + l * THREADS;                                                       \
            if (TRANS_B) {                                                                    \
                uint nn = v / (BK / 4), kk = (v % (BK / 4)) * 4;                              \
                rb[l] = v < BN * BK / 4 ? load_b4(base_b, n0 + nn, (k0) + kk, N, K, KS) : vec4(0.0); \
            } else {                                                                          \
                uint kk = v / (BN / 4), nn = (v % (BN / 4)) * 4;                              \
                rb[l] = v < BN * BK / 4 ? load_b4(base_b, (k0) + kk, n0 + nn, K, N, N) : vec4(0.0); \
            }                                                                                 \
        }

    LOAD_TILES(k_begin)

    // Registers -> shared memory buffer `buf`, k-major (a row-major A tile's vec4 holds four
    // k values of one row: it scatters into four k-rows of As; likewise a transposed B).
    #define STORE_TILES(buf)                                                                  \
        {                                                                                     \
            const uint abuf = (buf) * A_TILE, bbuf = (buf) * B_TILE;                          \
            [[unroll]] for (uint l = 0; l < LA; l++) {                                        \
                uint v = tid + l * THREADS;                                                   \
                if (v < BM * BK / 4) {                                                        \
                    if (TRANS_A) {                                                            \
                        uint kk = v / (BM / 4), mm = (v % (BM / 4)) * 4;                      \
                        As[abuf + (kk * AS + mm) / 4] = ra[l];                                \
                    } else {                                                                  \
                        uint mm = v / (BK / 4), kk = (v % (BK / 4)) * 4;                      \
                        [[unroll]] for (uint q = 0; q < 4; q++) {                             \
                            uint idx = (kk + q) * AS + mm;                                    \
                            As[abuf + idx / 4][idx % 4] = ra[l][q];                           \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            [[unroll]] for (uint l = 0; l < LB; l++) {                                        \
                uint v = tid + l * THREADS;                                                   \
                if (v < BN * BK / 4) {                                                        \
                    if (TRANS_B) {                                                            \
                        uint nn = v / (BK / 4), kk = (v % (BK / 4)) * 4;                      \
                        [[unroll]] for (uint q = 0; q < 4; q++) {                             \
                            uint idx = (kk + q) * BS + nn;                                    \
                            Bs[bbuf + idx / 4][idx % 4] = rb[l][q];                           \
                        }                                                                     \
                    } else {                                                                  \
                        uint kk = v / (BN / 4), nn = (v % (BN / 4)) * 4;                      \
                        Bs[bbuf + (kk * BS + nn) / 4] = rb[l];                                \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
        }

    // Multiply the tiles of buffer `buf` into the accumulators.
    #define MULTIPLY(buf)                                                                     \
        {                                                                                     \
            const uint abuf = (buf) * A_TILE, bbuf = (buf) * B_TILE;                          \
            [[dont_unroll]] for (uint k4 = 0; k4 < BK; k4 += KU) {                            \
            [[unroll]] for (uint kk = 0; kk < KU; kk++) {                                     \
                const uint k = k4 + kk;                                                       \
                float ar[TM];                                                                 \
                float br[TN];                                                                 \
                [[unroll]] for (uint g = 0; g < TM / 4; g++) {                                \
                    vec4 t = As[abuf + (k * AS + g * (BM / (TM / 4)) + ty * 4) / 4];          \
                    ar[g * 4 + 0] = t.x; ar[g * 4 + 1] = t.y; ar[g * 4 + 2] = t.z; ar[g * 4 + 3] = t.w;\
                }                                                                             \
                [[unroll]] for (uint g = 0; g < TN / 4; g++) {                                \
                    vec4 t = Bs[bbuf + (k * BS + g * (BN / (TN / 4)) + tx * 4) / 4];          \
                    br[g * 4 + 0] = t.x; br[g * 4 + 1] = t.y; br[g * 4 + 2] = t.z; br[g * 4 + 3] = t.w;\
                }                                                                             \
                [[unroll]] for (uint i = 0; i < TM; i++) {                                    \
                    [[unroll]] for (uint j = 0; j < TN; j++) {                                \
                        acc[i][j] = fma(ar[i], br[j], acc[i][j]);                             \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            }                                                                                 \
        }

    if (DB) {
        STORE_TILES(0u)
        barrier();
        uint cur = 0u;
        for (uint k0 = k_begin; k0 < K; k0 += BK) {
            const bool more = k0 + BK < K;
            if (more) {
                LOAD_TILES(k0 + BK)
            }
            MULTIPLY(cur)
            if (more) {
                STORE_TILES(cur ^ 1u)
            }
            barrier();
            cur ^= 1u;
        }
    } else {
        for (uint k0 = k_begin; k0 < K; k0 += BK) {
            STORE_TILES(0u)
            barrier();
            // Start fetching the next tile while this one is multiplied.
            if (k0 + BK < K) {
                LOAD_TILES(k0 + BK)
            }
            MULTIPLY(0u)
            barrier();
        }
    }

    // Write back: row group g of TM/4 at m0 + g * BM/(TM/4) + ty*4 + r; likewise columns.
    [[unroll]] for (uint gi = 0; gi < TM / 4; gi++) {
        [[unroll]] for (uint r = 0; r < 4; r++) {
            uint m = m0 + gi * (BM / (TM / 4)) + ty * 4 + r;
            if (m >= M) {
                continue;
            }
            [[unroll]] for (uint gj = 0; gj < TN / 4; gj++) {
                uint n = n0 + gj * (BN / (TN / 4)) + tx * 4;
                vec4 v = vec4(acc[gi * 4 + r][gj * 4 + 0], acc[gi * 4 + r][gj * 4 + 1],
                              acc[gi * 4 + r][gj * 4 + 2], acc[gi * 4 + r][gj * 4 + 3]);
                if (pc.has_bias != 0u) {
                    [[unroll]] for (uint q = 0; q < 4; q++) {
                        if (n + q < N) {
                            v[q] += bias[n + q];
                        }
                    }
                }
                if ((N % 4u) == 0u && n < N) {
                    c4[(base_c + m * N + n) / 4] = v;
                } else {
                    [[unroll]] for (uint q = 0; q < 4; q++) {
                        if (n + q < N) {
                            c[base_c + m * N + n + q] = v[q];
                        }
                    }
                }
            }
        }
    }
}
