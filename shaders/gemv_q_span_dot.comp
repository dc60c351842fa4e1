#version 450
// gemv_q_span_dot: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a few rows m of x, W in
// Q8_0 or Q4_0, x quantized to 8 bits per block of 32 (quantize_q8_1.comp): the integer-dot
// path in the span layout (gemv_span.glsl). Per piece, y gains d_w * d_x * (packed 4x8-bit
// dot products of its codes); Q4_0's -8 offset is subtracted once per block (8 times the sum
// of x's codes, by the block's first piece).
//
//   specialization constants: as gemv_q_span.comp, less STAGE (FORMAT is FMT_Q8_0 or FMT_Q4_0)
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
layout(constant_id = 7) const uint PB = 8;
const bool STAGE = false;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct2 { uvec2 act2[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct4 { uvec4 act4[]; };
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

// The CW activation words from word w0 (a multiple of CW) into a.
void act_words(uint w0, out uint a[8]) {
    if (CW == 2u) {
        const uvec2 v = act2[w0 >> 1];
        a[0] = v.x;
        a[1] = v.y;
    } else {
        [[unroll]] for (uint k = 0u; k < CW / 4u; k++) {
            const uvec4 v = act4[(w0 >> 2) + k];
            a[4u * k] = v.x;
            a[4u * k + 1u] = v.y;
            a[4u * k + 2u] = v.z;
            a[4u * k + 3u] = v.w;
        }
    }
}

// acc[i][m] += piece p of block b of row i (words r[i]) . x[m]; nothing where !ok.
void piece(uint r[NR][RP], uint b, uint p, bool ok, inout float acc[NR][M]) {
    const uint nb = pc.K / 32u, AB = M * nb;
    [[unroll]] for (uint m = 0u; m < M; m++) {
        const uint ab = m * nb + b;
        const float dx = uintBitsToFloat(act[8u * AB + ab]);
        // Code word k: Q8_0 elements PB p + 4k .. (activation word CW p + k of the block);
        // Q4_0 the same in its low nibbles and 16 + PB p + 4k .. (word 4 + CW p + k) in its
        // high ones. Codes 0..15 are non-negative signed bytes as they stand; Q4_0's -8 is
        // applied once per block, by piece 0: -8 times the sum of the block's activation codes.
        uint lo[8], hi[8];
        act_words(8u * ab + CW * p, lo);
        if (FORMAT == FMT_Q4_0) {
            act_words(8u * ab + 4u + CW * p, hi);
        }
        const int off = FORMAT == FMT_Q4_0 && p == 0u ? -8 * int(act[9u * AB + ab]) : 0;
        [[unroll]] for (uint i = 0u; i < NR; i++) {
            int s = off;
            [[unroll]] for (uint k = 0u; k < CW; k++) {
                if (FORMAT == FMT_Q8_0) {
                    s += sdot4x8(r[i][k], lo[k]);
                } else {
                    s += sdot4x8(r[i][k] & 0x0F0F0F0Fu, lo[k]);
                    s += sdot4x8((r[i][k] >> 4) & 0x0F0F0F0Fu, hi[k]);
                }
            }
            acc[i][m] = ok ? fma(uintBitsToFloat(r[i][CW]) * dx, int_to_float(s), acc[i][m])
                           : acc[i][m];
        }
    }
}

void span_stage(uint b0) {
}

void main() {
    span_main();
}
