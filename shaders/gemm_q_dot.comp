#version 450
// gemm_q_dot: C = A W^T (+ bias) with A [M, K] already quantized to 8 bits per block of 32
// (quantize_q8_1.comp) and W Q8_0 or Q4_0 [N, K]: the integer-dot path for more rows than
// the GEMV takes.
//
// A workgroup of 256 invocations computes a 64 x 64 tile of C, each invocation 4 x 4 outputs
// (rows ty + 16i, columns tx + 16j: neighbouring invocations write neighbouring columns). K
// advances one block (32 values) at a time: the block's codes of 64 rows of A and 64 rows of
// W go to shared memory as packed words (rows padded to 9 words, so that invocations reading
// different rows hit different banks), with their scales; each output then takes 8 packed
// dot products and one scaled float update.
//
//   specialization constants: 0 workgroup size (256), 1 FORMAT (FMT_Q8_0 or FMT_Q4_0),
//     2 TAIL
//   set 0: 0 quantized A (qdot.glsl's layout), 1 W blocks, 2 tail word (any buffer when
//     unused), 3 bias [N] (any buffer when unused), 4 C [M, N]
//   push constants: M, N, K, has_bias, ldc, c0: c[m, c0 + n] at c[m * ldc + c0 + n], bias[c0 + n]
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const bool TAIL = false;

layout(std430, set = 0, binding = 0) readonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufTail { uint wtail[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufC { float c[]; };

layout(push_constant) uniform Push {
    uint M, N, K;
    uint has_bias;
    uint ldc, c0;  // c's row stride and the column of W's row 0 (a W split in row ranges)
} pc;

#include "quant.glsl"
#include "qdot.glsl"

const uint BM = 64u, BN = 64u;
const uint STRIDE = 9u;  // words per row of a shared code tile: 8, padded
shared uint a_codes[BM * STRIDE];
shared float a_scale[BM];
shared int a_sum[BM];
shared uint w_codes[BN * STRIDE];
shared float w_scale[BN];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % 16u, ty = tid / 16u;
    const uint m0 = gl_WorkGroupID.y * BM;
    const uint n0 = gl_WorkGroupID.x * BN;
    const uint M = pc.M, N = pc.N;
    const uint nb = pc.K / 32u;
    const uint act_blocks = M * nb;
    // Loading: invocation tid fills part p (2 code words) of row tid / 4 of each tile.
    const uint lrow = tid / 4u, part = tid % 4u;
    const uint wrow_block = min(n0 + lrow, N - 1u) * nb;  // rows past N: row N - 1, unused

    float acc[4][4];
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            acc[i][j] = 0.0;
        }
    }

    for (uint b = 0u; b < nb; b++) {
        // A: codes, and the scale and code sum of each row (zero past M).
        const bool a_in = m0 + lrow < M;
        const uint ab = (m0 + lrow) * nb + b;
        a_codes[lrow * STRIDE + 2u * part] = a_in ? act[8u * ab + 2u * part] : 0u;
        a_codes[lrow * STRIDE + 2u * part + 1u] = a_in ? act[8u * ab + 2u * part + 1u] : 0u;
        if (part == 0u) {
            a_scale[lrow] = a_in ? uintBitsToFloat(act[8u * act_blocks + ab]) : 0.0;
            a_sum[lrow] = a_in ? int(act[9u * act_blocks + ab]) : 0;
        }
        // W: code words 2p, 2p + 1 (Q8_0: block bytes 2 + 8p .. 9 + 8p; Q4_0: the low and the
        // high nibbles of qs word p, i.e. code words p and 4 + p).
        const uint s = (wrow_block + b) * BLOCK_BYTES;
        if (FORMAT == FMT_Q8_0) {
            w_codes[lrow * STRIDE + 2u * part] = quant_read32(s + 2u + 8u * part);
            w_codes[lrow * STRIDE + 2u * part + 1u] = quant_read32(s + 6u + 8u * part);
        } else {
            uint w = quant_read32(s + 2u + 4u * part);
            w_codes[lrow * STRIDE + part] = w & 0x0F0F0F0Fu;
            w_codes[lrow * STRIDE + 4u + part] = (w >> 4) & 0x0F0F0F0Fu;
        }
        if (part == 0u) {
            w_scale[lrow] = quant_half(quant_read16(s));
        }
        barrier();

        uint wv[4][8];
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            [[unroll]] for (uint k = 0u; k < 8u; k++) {
                wv[j][k] = w_codes[(tx + 16u * j) * STRIDE + k];
            }
        }
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            const uint mi = ty + 16u * i;
            uint av[8];
            [[unroll]] for (uint k = 0u; k < 8u; k++) {
                av[k] = a_codes[mi * STRIDE + k];
            }
            const float da = a_scale[mi];
            const int offset = FORMAT == FMT_Q4_0 ? 8 * a_sum[mi] : 0;
            [[unroll]] for (uint j = 0u; j < 4u; j++) {
                int isum = 0;
                [[unroll]] for (uint k = 0u; k < 8u; k++) {
                    isum += sdot4x8(av[k], wv[j][k]);
                }
                acc[i][j] = fma(da * w_scale[tx + 16u * j], float(isum - offset), acc[i][j]);
            }
        }
        barrier();
    }

    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        const uint m = m0 + ty + 16u * i;
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            const uint n = n0 + tx + 16u * j;
            if (m < M && n < N) {
                c[m * pc.ldc + pc.c0 + n] = acc[i][j] + (pc.has_bias != 0u ? bias[pc.c0 + n] : 0.0);
            }
        }
    }
}
