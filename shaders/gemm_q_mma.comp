#version 450
// gemm_q_mma: C = A W^T (+ bias) with A f32 [M, K] (a's batches folded into rows) and W
// block-quantised [N, K], on cooperative matrices (VK_NV_cooperative_matrix): the matrix
// path for more rows than the GEMV takes (prefill), on devices whose subgroups multiply
// 16 x 16 f16 matrices into f32.
//
// A workgroup of 8 subgroups of 32 computes a BM x BN tile of C; the subgroups stand 2 x 4,
// each owning a (BM/2) x (BN/4) part of the tile as FM x FN accumulators of 16 x 16 (f32).
// K advances BK (32 or 64) at a time. Each step, the workgroup stores A's tile (rounded to
// f16) and W's tile (dequantized as gemm_q dequantizes it, quant_decode4, then rounded to
// f16) in shared memory, k-contiguous rows padded by 8 halves, and each subgroup multiplies
// them in BK / 16 K16 steps. The next step's tiles are read (and W's decoded) into
// registers while the current one is multiplied. With STAGES 1 the tiles have one buffer
// in shared memory (two barriers a step: stored, then multiplied); with STAGES 2 they have
// two, the next step's stored into the other while the current one is multiplied (one
// barrier a step). K is a multiple of 32 (of BK: the host's choice), so steps never end
// inside a block. A's rows past M are zeros, W's rows past N repeat row N - 1; neither is
// stored.
//
// Rounding: A and the dequantized W are rounded to f16 (relative error 2^-11 each; A beyond
// f16's range, 65504, becomes infinite), the products are accumulated in f32.
//
// The epilogue goes through shared memory (the layout of an accumulator's components among
// the lanes is the implementation's): each subgroup stores one accumulator at a time to its
// own 16 x 16 floats, and its lanes add the bias and write 8 values each.
//
//   specialization constants: 0 workgroup size (256), 1 FORMAT (quant.glsl), 2 BM (64 or
//     128), 3 BN (64 or 128), 4 BK (32 or 64), 5 STAGES (1 or 2)
//   set 0: 0 A, 1 W bodies (quant.glsl's device layout), 2 W's d values (any buffer for Q4_K,
//     Q5_K), 3 bias [N] (any buffer when unused), 4 C [M, N]
//   push constants: M, N, K, has_bias, ldc, c0, dlo: c[m, c0 + n] at c[m * ldc + c0 + n],
//     bias[c0 + n]; block b's d is the (dlo + b)th half of binding 2
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const uint BM = 128;
layout(constant_id = 3) const uint BN = 128;
layout(constant_id = 4) const uint BK = 32;
layout(constant_id = 5) const uint STAGES = 1;
layout(constant_id = 6) const uint PACKED = 0;
layout(constant_id = 7) const uint ALIAS_C = 0;
layout(constant_id = 8) const uint A_F16 = 0;
const uint PB = 16u;  // quant.glsl's pieces are not used here

layout(std430, set = 0, binding = 0) readonly buffer BufA4 { vec4 a4[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufA2 { uvec2 a2[]; };
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
} pc;

#include "quant.glsl"

const uint THREADS = 256u;
// A tile row: BK halves and 8 of padding, as uvec2s (4 halves each).
const uint ROW2 = (BK + 8u) / 4u;
const uint WM = BM / 2u;  // a subgroup's rows of the tile
const uint WN = BN / 4u;  // and columns
const uint FM = WM / 16u;
const uint FN = WN / 16u;

// Shared memory, as uvec2s: A's tiles, then W's; the epilogue's 8 x 256 floats (1024
// uvec2s) after them, or with ALIAS_C over them (the main loop ends with a barrier).
const uint A_WORDS = STAGES * BM * ROW2;
const uint AW_WORDS = A_WORDS + STAGES * BN * ROW2;
const uint C_AT = ALIAS_C != 0u ? 0u : AW_WORDS;
const uint S_WORDS = C_AT + 1024u > AW_WORDS ? C_AT + 1024u : AW_WORDS;
shared uvec2 S[S_WORDS];

// vec4s of a tile per invocation: a row of BK values is BK / 4 of them.
const uint LA = BM * (BK / 4u) / THREADS;
const uint LW = BN * (BK / 4u) / THREADS;

uvec2 pack4(vec4 v) {
    return uvec2(packFloat2x16(f16vec2(v.xy)), packFloat2x16(f16vec2(v.zw)));
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint sg = tid / 32u, lane = tid % 32u;
    const uint wm = sg / 4u, wn = sg % 4u;
    const uint m0 = gl_WorkGroupID.y * BM;
    const uint n0 = gl_WorkGroupID.x * BN;
    const uint M = pc.M, N = pc.N, K = pc.K;
    const uint nb = K / QK;

    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
    [[unroll]] for (uint i = 0u; i < FM; i++) {
        [[unroll]] for (uint j = 0u; j < FN; j++) {
            acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
        }
    }

    vec4 ra[LA];
    vec4 rw[LW];
    uvec2 pa[LA];
    uvec2 pw[LW];
    // Index v enumerates a tile's vec4s: row v / (BK/4), k values from (v % (BK/4)) * 4.
    #define LOAD_TILES(k0)                                                                    \
        [[unroll]] for (uint l = 0u; l < LA; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            uint mm = v / (BK / 4u), kk = (v % (BK / 4u)) * 4u;                               \
            if (A_F16 != 0u) {                                                                \
                pa[l] = m0 + mm < M ? a2[((m0 + mm) * K + (k0) + kk) / 4u] : uvec2(0u);       \
            } else {                                                                          \
                vec4 x = m0 + mm < M ? a4[((m0 + mm) * K + (k0) + kk) / 4u] : vec4(0.0);      \
                if (PACKED != 0u) pa[l] = pack4(x); else ra[l] = x;                           \
            }                                                                                 \
        }                                                                                     \
        [[unroll]] for (uint l = 0u; l < LW; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            uint nn = v / (BK / 4u), k = (k0) + (v % (BK / 4u)) * 4u;                         \
            uint blk = min(n0 + nn, N - 1u) * nb + k / QK;                                    \
            vec4 y = quant_decode4(blk, pc.dlo + blk, k % QK);                                \
            if (PACKED != 0u) pw[l] = pack4(y); else rw[l] = y;                               \
        }

    // The tiles in registers into the buffer that starts at uvec2 `a_at` of As, `w_at` of Ws.
    #define STORE_TILES(a_at, w_at)                                                           \
        [[unroll]] for (uint l = 0u; l < LA; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            S[(a_at) + (v / (BK / 4u)) * ROW2 + v % (BK / 4u)] =                              \
                PACKED != 0u || A_F16 != 0u ? pa[l] : pack4(ra[l]);                           \
        }                                                                                     \
        [[unroll]] for (uint l = 0u; l < LW; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            S[A_WORDS + (w_at) + (v / (BK / 4u)) * ROW2 + v % (BK / 4u)] =                    \
                PACKED != 0u ? pw[l] : pack4(rw[l]);                                          \
        }

    // Each subgroup's products of the buffer at `a_at`, `w_at`.
    #define MULTIPLY(a_at, w_at)                                                              \
        [[unroll]] for (uint ks = 0u; ks < BK; ks += 16u) {                                   \
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM];                                  \
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fw[FN];                                  \
            [[unroll]] for (uint i = 0u; i < FM; i++) {                                       \
                coopMatLoadNV(fa[i], S, (a_at) + (wm * WM + i * 16u) * ROW2 + ks / 4u, ROW2, \
                              false);                                                         \
            }                                                                                 \
            /* W's tile is [n][k]: as the K x N operand it is column-major. */                \
            [[unroll]] for (uint j = 0u; j < FN; j++) {                                       \
                coopMatLoadNV(fw[j], S, A_WORDS + (w_at) + (wn * WN + j * 16u) * ROW2 + ks / 4u,  \
                              ROW2, true);                                                    \
            }                                                                                 \
            [[unroll]] for (uint i = 0u; i < FM; i++) {                                       \
                [[unroll]] for (uint j = 0u; j < FN; j++) {                                   \
                    acc[i][j] = coopMatMulAddNV(fa[i], fw[j], acc[i][j]);                     \
                }                                                                             \
            }                                                                                 \
        }

    LOAD_TILES(0u)

    if (STAGES == 1u) {
        for (uint k0 = 0u; k0 < K; k0 += BK) {
            STORE_TILES(0u, 0u)
            barrier();
            if (k0 + BK < K) {
                LOAD_TILES(k0 + BK)
            }
            MULTIPLY(0u, 0u)
            barrier();
        }
    } else {
        STORE_TILES(0u, 0u)
        barrier();
        uint cur = 0u;
        for (uint k0 = 0u; k0 < K; k0 += BK) {
            const bool more = k0 + BK < K;
            if (more) {
                LOAD_TILES(k0 + BK)
            }
            MULTIPLY(cur * BM * ROW2, cur * BN * ROW2)
            if (more) {
                STORE_TILES((cur ^ 1u) * BM * ROW2, (cur ^ 1u) * BN * ROW2)
            }
            barrier();
            cur ^= 1u;
        }
    }

    // Epilogue: lane l writes row l / 2, columns 8 (l % 2) .. + 7 of each accumulator.
    const uint r = lane / 2u, cc = (lane % 2u) * 8u;
    const bool vec_ok = ((N | pc.ldc | pc.c0) % 4u) == 0u;
    [[unroll]] for (uint i = 0u; i < FM; i++) {
        [[unroll]] for (uint j = 0u; j < FN; j++) {
            coopMatStoreNV(acc[i][j], S, C_AT + sg * 128u, 8u, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uint m = m0 + wm * WM + i * 16u + r;
            uint n = n0 + wn * WN + j * 16u + cc;
            if (m < M) {
                [[unroll]] for (uint h = 0u; h < 2u; h++) {
                    vec4 v;
                    [[unroll]] for (uint q = 0u; q < 4u; q++) {
                        uint f = r * 16u + cc + h * 4u + q;
                        v[q] = uintBitsToFloat(S[C_AT + sg * 128u + f / 2u][f % 2u]);
                        if (pc.has_bias != 0u && n + h * 4u + q < N) {
                            v[q] += bias[pc.c0 + n + h * 4u + q];
                        }
                    }
                    uint nh = n + h * 4u;
                    if (vec_ok && nh < N) {
                        c4[(m * pc.ldc + pc.c0 + nh) / 4u] = v;
                    } else {
                        [[unroll]] for (uint q = 0u; q < 4u; q++) {
                            if (nh + q < N) {
                                c[m * pc.ldc + pc.c0 + nh + q] = v[q];
                            }
                        }
                    }
                }
            }
            subgroupBarrier();
        }
    }
}
