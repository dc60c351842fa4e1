#version 450
// gemv_q_span_dot: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a few rows m of x, W in
// Q8_0 or Q4_0, x quantized to 8 bits per block of 32 (quantize_q8_1.comp): the integer-dot
// path in the span layout (gemv_span.glsl). Per piece, y gains d_w * d_x * (packed 4x8-bit
// dot products of its codes); Q4_0's -8 offset is subtracted once per block (8 times the sum
// of x's codes, by the block's first piece).
//
//   specialization constants: as gemv_q_span.comp (FORMAT is FMT_Q8_0 or FMT_Q4_0)
//   set 0: 0 quantized x (qdot.glsl's layout), 1 W blocks, 2 tail word (any buffer when
//     unused), 3 bias [N] (any buffer when unused), 4 y [M, N]
//   push constants: N, K, has_bias, ldy, y0 (as gemv_q_span.comp). The workgroup index is
//     x + y * (groups in x).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y_id = 5) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const bool TAIL = false;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 1;
layout(constant_id = 6) const uint U = 2;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct2 { uvec2 act2[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer BufTail { uint wtail[]; };
layout(std430, set = 0, binding = 3) restrict readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 4) restrict writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint N, K;
    uint has_bias;
    uint ldy, y0;  // y's row stride and the column of W's row 0 (a W split in row ranges)
} pc;

#include "quant.glsl"
#include "qdot.glsl"
#include "gemv_span.glsl"

// An int of magnitude below 2^22 as a float, exactly.
float int_to_float(int v) {
    return uintBitsToFloat(uint(v) + 0x4B400000u) - 12582912.0;
}

// acc[i][m] += piece p of block b of row i (words r[i]) . x[m]: nb blocks per row of x, AB
// blocks of activations in all; nothing where !ok.
void piece(uint r[NR][RP], uint b, uint p, uint nb, uint AB, bool ok, inout float acc[NR][M]) {
    [[unroll]] for (uint m = 0u; m < M; m++) {
        const uint ab = m * nb + b;
        const float dx = uintBitsToFloat(act[8u * AB + ab]);
        if (FORMAT == FMT_Q8_0) {
            // Elements 8p .. 8p + 7: activation words 2p, 2p + 1 of the block.
            const uvec2 a = act2[4u * ab + p];
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                const int s = sdot4x8(r[i][0], a.x) + sdot4x8(r[i][1], a.y);
                acc[i][m] = ok ? fma(uintBitsToFloat(r[i][2]) * dx, int_to_float(s), acc[i][m])
                               : acc[i][m];
            }
        } else {
            // Low nibbles: elements 8p .. 8p + 7 (words 2p, 2p + 1); high: 16 + 8p ..
            // (words 4 + 2p, 5 + 2p). Codes 0..15 are non-negative signed bytes as they stand.
            const uvec2 lo = act2[4u * ab + p], hi = act2[4u * ab + 2u + p];
            const int off = p == 0u ? -8 * int(act[9u * AB + ab]) : 0;
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                int s = off + sdot4x8(r[i][0] & 0x0F0F0F0Fu, lo.x);
                s += sdot4x8(r[i][1] & 0x0F0F0F0Fu, lo.y);
                s += sdot4x8((r[i][0] >> 4) & 0x0F0F0F0Fu, hi.x);
                s += sdot4x8((r[i][1] >> 4) & 0x0F0F0F0Fu, hi.y);
                acc[i][m] = ok ? fma(uintBitsToFloat(r[i][2]) * dx, int_to_float(s), acc[i][m])
                               : acc[i][m];
            }
        }
    }
}

void main() {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / 32u;
    const uint P = nb * PPB;  // pieces per row
    const uint AB = M * nb;

    // Byte offset of each row. Rows past N read row N - 1 (in bounds) and are never stored.
    uint row_at[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        row_at[i] = min((wg * G + g) * NR + i, pc.N - 1u) * (nb * BLOCK_BYTES);
    }
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) {
        [[unroll]] for (uint m = 0u; m < M; m++) {
            acc[i][m] = 0.0;
        }
    }

    for (uint q0 = t; q0 < P; q0 += U * T) {
        uint r[U][NR][RP];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint q = min(q0 + u * T, P - 1u);
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                span_load(row_at[i] + (q / PPB) * BLOCK_BYTES, q % PPB, r[u][i]);
            }
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint q = min(q0 + u * T, P - 1u);
            piece(r[u], q / PPB, q % PPB, nb, AB, q0 + u * T < P, acc);
        }
    }

    span_finish(acc, wg);
}
