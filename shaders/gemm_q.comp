#version 450
// gemm_q: C = A W^T (+ bias) with A f32 [M, K] (a's batches folded into rows) and W
// block-quantised [N, K]: the float path for more rows than the GEMV takes (prefill).
//
// gemm_f32's tiling, NT case: a workgroup computes a BM x BN tile of C, each invocation a
// TM x TN block of it in registers; K advances BK = 16 at a time through shared memory,
// where the W tile is stored dequantized (quant_decode4), so the inner loop is gemm_f32's.
// K is a multiple of 32, so K steps never end inside a tile and need no bounds checks. The
// next step's tiles are loaded (and W's decoded) into registers while the current one is
// multiplied. An invocation's TM rows are two groups of TM/2 rows BM/2 apart (likewise its
// columns), so that neighbouring invocations read neighbouring vec4s of shared memory.
//
// The loop over a tile's BK values of K is unrolled KU at a time only (the host chooses KU):
// unrolled whole with the 128 x 128 tile's 64 accumulators, it took the NVIDIA compiler about
// 60 s a pipeline, 0.4 s not unrolled at all, which cost a fifth of the rate; KU = 8 keeps
// the rate of 16 for a tenth of its compile time (docs/tuning.md, "Float path (gemm_q)").
//
// Split K: workgroup z takes K values [z kc, min(K, (z + 1) kc)) (kc a multiple of BK) and
// writes its partial tile kz elements further on in C (the host then binds scratch there, and
// gemm_reduce_f32 sums the slices and adds the bias). One slice: kc = K, kz unused.
//
//   specialization constants: 0 workgroup size (= (BM/TM) * (BN/TN)), 1 FORMAT (quant.glsl),
//     2 BM, 3 BN, 4 TM, 5 TN (4, 8 or 16), 6 KU (1, 2, 4, 8 or 16)
//   set 0: 0 A, 1 W bodies (quant.glsl's device layout), 2 W's d values (any buffer for Q4_K,
//     Q5_K), 3 bias [N] (any buffer when unused), 4 C [M, N]
//   push constants: M, N, K, has_bias, ldc, c0, dlo, kc, kz: c[m, c0 + n] at c[m * ldc + c0 +
//     n] (+ z kz), bias[c0 + n]; block b's d is the (dlo + b)th half of binding 2
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const uint BM = 64;
layout(constant_id = 3) const uint BN = 64;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const uint KU = 8;  // values of K per step of the loop over a tile
const uint PB = 16u;  // quant.glsl's pieces are not used here

layout(std430, set = 0, binding = 0) readonly buffer BufA4 { vec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufD { uint wd[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufC { float c[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufC4 { vec4 c4[]; };

layout(push_constant) uniform Push {
    uint M, N, K;
    uint has_bias;
    uint ldc, c0;  // c's row stride and the column of W's row 0 (a W split in row ranges)
    uint dlo;      // the half of binding 2 that is block 0's d
    uint kc;       // K values per slice (split K: workgroup z takes slice z)
    uint kz;       // elements of C between slices' partial tiles
} pc;

#include "quant.glsl"

const uint BK = 16u;
const uint THREADS_N = BN / TN;
const uint THREADS = (BM / TM) * (BN / TN);
// Shared tiles, k-major: As[k * AS + m], Bs[k * BS + n], rows padded by 4 floats: the four
// invocations that store a row's 16 k values write four k-rows, which with rows of BM (a
// multiple of 32) floats fall in the same bank (4-way conflicts); 4 more floats a row shift
// them by 4 banks (2-way), keeping the rows' vec4s aligned (measured: docs/tuning.md,
// "Float path (gemm_q)").
const uint AS = BM + 4u;
const uint BS = BN + 4u;
shared vec4 As[BK * AS / 4];
shared vec4 Bs[BK * BS / 4];

// Global -> register staging: each invocation loads LA vec4s of the A tile and LB of W's.
const uint LA = (BM * BK / 4 + THREADS - 1) / THREADS;
const uint LB = (BN * BK / 4 + THREADS - 1) / THREADS;

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % THREADS_N;
    const uint ty = tid / THREADS_N;
    const uint m0 = gl_WorkGroupID.y * BM;
    const uint n0 = gl_WorkGroupID.x * BN;
    const uint M = pc.M, N = pc.N, K = pc.K;
    const uint nb = K / QK;
    const uint kb = gl_WorkGroupID.z * pc.kc, ke = min(K, kb + pc.kc);
    const uint cz = gl_WorkGroupID.z * pc.kz;

    float acc[TM][TN];
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            acc[i][j] = 0.0;
        }
    }

    vec4 ra[LA];
    vec4 rb[LB];

    // Index v enumerates a tile's vec4s in storage order: row v / (BK/4), 4 k values from
    // (v % (BK/4)) * 4. W rows past N decode row N - 1 (in bounds); their columns of C are
    // never stored.
    #define LOAD_TILES(k0)                                                                    \
        [[unroll]] for (uint l = 0u; l < LA; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            uint mm = v / (BK / 4u), kk = (v % (BK / 4u)) * 4u;                               \
            ra[l] = (v < BM * BK / 4u && m0 + mm < M) ? a4[((m0 + mm) * K + (k0) + kk) / 4u] \
                                                      : vec4(0.0);                            \
        }                                                                                     \
        [[unroll]] for (uint l = 0u; l < LB; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            uint nn = v / (BK / 4u), kk = (v % (BK / 4u)) * 4u;                               \
            uint k = (k0) + kk;                                                               \
            uint blk = min(n0 + nn, N - 1u) * nb + k / QK;                                    \
            rb[l] = v < BN * BK / 4u ? quant_decode4(blk, pc.dlo + blk, k % QK) : vec4(0.0);  \
        }

    LOAD_TILES(kb)

    for (uint k0 = kb; k0 < ke; k0 += BK) {
        // Registers -> shared memory, k-major: four k values of one row go to four k-rows.
        [[unroll]] for (uint l = 0u; l < LA; l++) {
            uint v = tid + l * THREADS;
            if (v < BM * BK / 4u) {
                uint mm = v / (BK / 4u), kk = (v % (BK / 4u)) * 4u;
                [[unroll]] for (uint q = 0u; q < 4u; q++) {
                    uint idx = (kk + q) * AS + mm;
                    As[idx / 4u][idx % 4u] = ra[l][q];
                }
            }
        }
        [[unroll]] for (uint l = 0u; l < LB; l++) {
            uint v = tid + l * THREADS;
            if (v < BN * BK / 4u) {
                uint nn = v / (BK / 4u), kk = (v % (BK / 4u)) * 4u;
                [[unroll]] for (uint q = 0u; q < 4u; q++) {
                    uint idx = (kk + q) * BS + nn;
                    Bs[idx / 4u][idx % 4u] = rb[l][q];
                }
            }
        }
        barrier();

        // Start fetching and decoding the next tiles while this one is multiplied.
        if (k0 + BK < ke) {
            LOAD_TILES(k0 + BK)
        }

        [[dont_unroll]] for (uint k4 = 0u; k4 < BK; k4 += KU) {
            [[unroll]] for (uint kk = 0u; kk < KU; kk++) {
                const uint k = k4 + kk;
                float ar[TM];
                float br[TN];
                [[unroll]] for (uint gi = 0u; gi < TM / 4u; gi++) {
                    vec4 t = As[(k * AS + gi * (BM / (TM / 4u)) + ty * 4u) / 4u];
                    ar[gi * 4u + 0u] = t.x; ar[gi * 4u + 1u] = t.y;
                    ar[gi * 4u + 2u] = t.z; ar[gi * 4u + 3u] = t.w;
                }
                [[unroll]] for (uint gj = 0u; gj < TN / 4u; gj++) {
                    vec4 t = Bs[(k * BS + gj * (BN / (TN / 4u)) + tx * 4u) / 4u];
                    br[gj * 4u + 0u] = t.x; br[gj * 4u + 1u] = t.y;
                    br[gj * 4u + 2u] = t.z; br[gj * 4u + 3u] = t.w;
                }
                [[unroll]] for (uint i = 0u; i < TM; i++) {
                    [[unroll]] for (uint j = 0u; j < TN; j++) {
                        acc[i][j] = fma(ar[i], br[j], acc[i][j]);
                    }
                }
            }
        }
        barrier();
    }

    [[unroll]] for (uint gi = 0u; gi < TM / 4u; gi++) {
        [[unroll]] for (uint r = 0u; r < 4u; r++) {
            uint m = m0 + gi * (BM / (TM / 4u)) + ty * 4u + r;
            if (m >= M) {
                continue;
            }
            [[unroll]] for (uint gj = 0u; gj < TN / 4u; gj++) {
                uint n = n0 + gj * (BN / (TN / 4u)) + tx * 4u;
                vec4 v = vec4(acc[gi * 4u + r][gj * 4u + 0u], acc[gi * 4u + r][gj * 4u + 1u],
                              acc[gi * 4u + r][gj * 4u + 2u], acc[gi * 4u + r][gj * 4u + 3u]);
                if (pc.has_bias != 0u) {
                    [[unroll]] for (uint q = 0u; q < 4u; q++) {
                        if (n + q < N) {
                            v[q] += bias[pc.c0 + n + q];
                        }
                    }
                }
                if (((N | pc.ldc | pc.c0) % 4u) == 0u && n < N) {
                    c4[(cz + m * pc.ldc + pc.c0 + n) / 4u] = v;
                } else {
                    [[unroll]] for (uint q = 0u; q < 4u; q++) {
                        if (n + q < N) {
                            c[cz + m * pc.ldc + pc.c0 + n + q] = v[q];
                        }
                    }
                }
            }
        }
    }
}
