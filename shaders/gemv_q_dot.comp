#version 450
// gemv_q_dot: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for 1..8 rows of x, W Q8_0 or
// Q4_0 [N, K], with x already quantized to 8 bits per block of 32 (quantize_q8_1.comp): the
// integer-dot path. Per block, y gains d_w * d_x * (sum of 8 packed 4x8-bit dot products),
// minus 8 * (sum of x's codes) for Q4_0, whose codes are stored + 8.
//
// The layout is gemv_q.comp's: GROUPS row groups of T invocations, NR rows of W per row
// group, invocations stride over a row's blocks (LANES = 1 for these formats), the blocks'
// bytes copied through shared memory with coalesced loads (gemv_stage.glsl), one load of x's
// codes serving NR rows of W. The partial sums meet in shared memory and are summed by a tree
// (T a power of two).
//
//   specialization constants: 0 workgroup size, 1 FORMAT (FMT_Q8_0 or FMT_Q4_0), 2 TAIL,
//     3 M (rows of x, 1..8), 4 NR, 5 GROUPS, 6 UNROLL (unused: the copy keeps bytes in flight)
//   set 0: 0 quantized x (qdot.glsl's layout), 1 W blocks, 2 tail word (any buffer when
//     unused), 3 bias [N] (any buffer when unused), 4 y [M, N]
//   push constants: N, K, has_bias. The workgroup index is x + y * (groups in x).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const bool TAIL = false;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 2;
layout(constant_id = 5) const uint GROUPS = 2;
layout(constant_id = 6) const uint UNROLL = 2;

layout(std430, set = 0, binding = 0) readonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufAct4 { uvec4 act4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufTail { uint wtail[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint N, K;
    uint has_bias;
} pc;

#include "quant.glsl"
#include "qdot.glsl"

const uint THREADS = gl_WorkGroupSize.x;
const uint T = THREADS / GROUPS;
const uint ROWS = GROUPS * NR;
// T blocks of each row per step; their words, at either alignment, fit in STAGE_WORDS.
const uint STAGE_BLOCKS = T;
const uint STAGE_WORDS = STAGE_BLOCKS * BLOCK_BYTES / 4u + 2u;
const uint STAGE_SIZE = GROUPS * NR * STAGE_WORDS;
const uint PARTIAL_SIZE = M * NR * THREADS;
// The staged copies during the loop, the partial sums (as float bits) after it.
shared uint smem[STAGE_SIZE > PARTIAL_SIZE ? STAGE_SIZE : PARTIAL_SIZE];

#include "gemv_stage.glsl"

// Code word k (elements 4k .. 4k + 3, as signed bytes) of the block loaded into r. Q4_0's
// nibbles 0..15 are non-negative signed bytes as they stand.
uint weight_codes(QuantRaw r, uint s, uint k) {
    const bool shifted = (s & 2u) != 0u;
    if (FORMAT == FMT_Q8_0) {
        return shifted ? raw_word(r, k + 1u) : funnel16(raw_word(r, k), raw_word(r, k + 1u));
    }
    uint k4 = k & 3u;  // qs word k4 holds elements 4k4.. (low nibbles) and 16 + 4k4.. (high)
    uint w = shifted ? raw_word(r, k4 + 1u) : funnel16(raw_word(r, k4), raw_word(r, k4 + 1u));
    return (w >> (k >= 4u ? 4u : 0u)) & 0x0F0F0F0Fu;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint g = tid / T;
    const uint t = tid % T;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint n0 = wg * ROWS + g * NR;
    const uint nb = pc.K / 32u;
    const uint act_blocks = M * nb;

    float acc[M][NR];
    [[unroll]] for (uint m = 0u; m < M; m++) {
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            acc[m][r] = 0.0;
        }
    }
    uint row_block[NR];
    [[unroll]] for (uint r = 0u; r < NR; r++) {
        row_block[r] = min(n0 + r, pc.N - 1u) * nb;
    }

    // Every invocation runs the same number of steps, so the barriers are reached uniformly.
    for (uint b0 = 0u; b0 < nb; b0 += T) {
        const uint count = min(STAGE_BLOCKS, nb - b0);
        barrier();  // the last step's reads of smem are done
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            stage_copy(g * NR + r, (row_block[r] + b0) * BLOCK_BYTES, count * BLOCK_BYTES, t);
        }
        barrier();
        const uint b = b0 + t;
        if (b < nb) {
            float dw[NR];
            uint wc[NR][8];
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                const uint s = (row_block[r] + b) * BLOCK_BYTES;
                QuantRaw raw = quant_load_staged(g * NR + r, (row_block[r] + b0) * BLOCK_BYTES,
                                                 s, 0u);
                vec4 scale, minv;
                quant_scales(raw, s, 0u, scale, minv);
                dw[r] = scale.x;
                [[unroll]] for (uint k = 0u; k < 8u; k++) {
                    wc[r][k] = weight_codes(raw, s, k);
                }
            }
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint ab = m * nb + b;
                const uvec4 a0 = act4[2u * ab], a1 = act4[2u * ab + 1u];
                const float dx = uintBitsToFloat(act[8u * act_blocks + ab]);
                const int xsum = int(act[9u * act_blocks + ab]);
                [[unroll]] for (uint r = 0u; r < NR; r++) {
                    int isum = sdot4x8(wc[r][0], a0.x) + sdot4x8(wc[r][1], a0.y) +
                               sdot4x8(wc[r][2], a0.z) + sdot4x8(wc[r][3], a0.w) +
                               sdot4x8(wc[r][4], a1.x) + sdot4x8(wc[r][5], a1.y) +
                               sdot4x8(wc[r][6], a1.z) + sdot4x8(wc[r][7], a1.w);
                    if (FORMAT == FMT_Q4_0) {
                        isum -= 8 * xsum;
                    }
                    acc[m][r] = fma(dw[r] * dx, float(isum), acc[m][r]);
                }
            }
        }
    }

    // Partial sums meet in shared memory: series (m, r, row group) holds T values, which a
    // tree halves log2(T) times (T is a power of two), all invocations helping at each level.
    barrier();  // the last reads of the staged copies are done
    [[unroll]] for (uint m = 0u; m < M; m++) {
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            smem[(m * NR + r) * THREADS + tid] = floatBitsToUint(acc[m][r]);
        }
    }
    for (uint w = T / 2u; w > 0u; w /= 2u) {
        barrier();
        for (uint i = tid; i < M * NR * GROUPS * w; i += THREADS) {
            const uint base = (i / w) * T + i % w;
            smem[base] = floatBitsToUint(uintBitsToFloat(smem[base]) +
                                         uintBitsToFloat(smem[base + w]));
        }
    }
    barrier();
    for (uint o = tid; o < M * ROWS; o += THREADS) {
        const uint m = o / ROWS, row = o % ROWS;
        const uint og = row / NR, r = row % NR;
        const uint n = wg * ROWS + row;
        if (n < pc.N) {
            const float sum = uintBitsToFloat(smem[((m * NR + r) * GROUPS + og) * T]);
            y[m * pc.N + n] = pc.has_bias != 0u ? sum + bias[n] : sum;
        }
    }
}
