#version 450
// gemm_q_mma: C = A W^T (+ bias) with A f32 [M, K] (a's batches folded into rows) and W
// block-quantised [N, K], on cooperative matrices (VK_NV_cooperative_matrix): the matrix
// path for more rows than the GEMV takes (prefill), on devices whose subgroups multiply
// 16 x 16 f16 matrices into f32.
//
// A workgroup of 8 subgroups of 32 computes a BM x BN tile of C; the subgroups stand 2 x 4,
// each owning a (BM/2) x (BN/4) part of the tile as FM x FN accumulators of 16 x 16 (f32).
// K advances BK = 32 at a time. Each step, the workgroup stores A's tile (rounded to f16)
// and W's tile (dequantized as gemm_q dequantizes it, quant_decode4, then rounded to f16)
// in shared memory, k-contiguous rows padded to 40 halves, and each subgroup multiplies
// them in two K16 steps. The next step's tiles are read (and W's decoded) into registers
// while the current one is multiplied. K is a multiple of 32, so steps never end inside a
// block. A's rows past M are zeros, W's rows past N repeat row N - 1; neither is stored.
//
// Rounding: A and the dequantized W are rounded to f16 (relative error 2^-11 each; A beyond
// f16's range, 65504, becomes infinite), the products are accumulated in f32.
//
// The epilogue goes through shared memory (the layout of an accumulator's components among
// the lanes is the implementation's): each subgroup stores one accumulator at a time to its
// own 16 x 16 floats, and its lanes add the bias and write 8 values each.
//
//   specialization constants: 0 workgroup size (256), 1 FORMAT (quant.glsl), 2 BM (64 or
//     128), 3 BN (64 or 128)
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
} pc;

#include "quant.glsl"

const uint THREADS = 256u;
const uint BK = 32u;
// A tile row: BK halves and 8 of padding, as uvec2s (4 halves each).
const uint ROW2 = (BK + 8u) / 4u;
const uint WM = BM / 2u;  // a subgroup's rows of the tile
const uint WN = BN / 4u;  // and columns
const uint FM = WM / 16u;
const uint FN = WN / 16u;

shared uvec2 As[BM * ROW2];
shared uvec2 Ws[BN * ROW2];
shared float Cs[8u * 256u];

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
    // Index v enumerates a tile's vec4s: row v / (BK/4), k values from (v % (BK/4)) * 4.
    #define LOAD_TILES(k0)                                                                    \
        [[unroll]] for (uint l = 0u; l < LA; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            uint mm = v / (BK / 4u), kk = (v % (BK / 4u)) * 4u;                               \
            ra[l] = m0 + mm < M ? a4[((m0 + mm) * K + (k0) + kk) / 4u] : vec4(0.0);           \
        }                                                                                     \
        [[unroll]] for (uint l = 0u; l < LW; l++) {                                           \
            uint v = tid + l * THREADS;                                                       \
            uint nn = v / (BK / 4u), k = (k0) + (v % (BK / 4u)) * 4u;                         \
            uint blk = min(n0 + nn, N - 1u) * nb + k / QK;                                    \
            rw[l] = quant_decode4(blk, pc.dlo + blk, k % QK);                                 \
        }

    LOAD_TILES(0u)

    for (uint k0 = 0u; k0 < K; k0 += BK) {
        [[unroll]] for (uint l = 0u; l < LA; l++) {
            uint v = tid + l * THREADS;
            As[(v / (BK / 4u)) * ROW2 + v % (BK / 4u)] = pack4(ra[l]);
        }
        [[unroll]] for (uint l = 0u; l < LW; l++) {
            uint v = tid + l * THREADS;
            Ws[(v / (BK / 4u)) * ROW2 + v % (BK / 4u)] = pack4(rw[l]);
        }
        barrier();

        if (k0 + BK < K) {
            LOAD_TILES(k0 + BK)
        }

        [[unroll]] for (uint ks = 0u; ks < BK; ks += 16u) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM];
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fw[FN];
            [[unroll]] for (uint i = 0u; i < FM; i++) {
                coopMatLoadNV(fa[i], As, (wm * WM + i * 16u) * ROW2 + ks / 4u, ROW2, false);
            }
            // W's tile is [n][k]: as the K x N operand it is column-major.
            [[unroll]] for (uint j = 0u; j < FN; j++) {
                coopMatLoadNV(fw[j], Ws, (wn * WN + j * 16u) * ROW2 + ks / 4u, ROW2, true);
            }
            [[unroll]] for (uint i = 0u; i < FM; i++) {
                [[unroll]] for (uint j = 0u; j < FN; j++) {
                    acc[i][j] = coopMatMulAddNV(fa[i], fw[j], acc[i][j]);
                }
            }
        }
        barrier();
    }

    // Epilogue: lane l writes row l / 2, columns 8 (l % 2) .. + 7 of each accumulator.
    const uint r = lane / 2u, cc = (lane % 2u) * 8u;
    const bool vec_ok = ((N | pc.ldc | pc.c0) % 4u) == 0u;
    [[unroll]] for (uint i = 0u; i < FM; i++) {
        [[unroll]] for (uint j = 0u; j < FN; j++) {
            coopMatStoreNV(acc[i][j], Cs, sg * 256u, 16u, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uint m = m0 + wm * WM + i * 16u + r;
            uint n = n0 + wn * WN + j * 16u + cc;
            if (m < M) {
                [[unroll]] for (uint h = 0u; h < 2u; h++) {
                    vec4 v;
                    [[unroll]] for (uint q = 0u; q < 4u; q++) {
                        v[q] = Cs[sg * 256u + r * 16u + cc + h * 4u + q];
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
