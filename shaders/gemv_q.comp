#version 450
// gemv_q: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a few rows m of x (decode: 1 to
// 8), W block-quantised [N, K] and dequantized in the shader with f32 arithmetic: the float
// path, the one Polaris runs. Memory-bound: every weight block is read once.
//
// A workgroup has GROUPS row groups of T = THREADS / GROUPS invocations; a row group owns NR
// consecutive rows n of W and its invocations stride over the row's lanes (quant.glsl: lane j
// of block b is 32 weights): unit u is lane u % LANES of block u / LANES.
//
// Loads, coalesced either way: Q4_K and Q5_K (16-byte blocks) load each lane's uvec4s
// straight from memory, neighbouring invocations reading neighbouring uvec4s, UNROLL units of
// each of the NR rows issued before any is decoded (bytes in flight). Q8_0, Q4_0 and Q6_K
// (blocks at 2-aligned offsets) go through shared memory (gemv_stage.glsl): the row group
// copies the bytes of its rows' next T units with word-per-invocation loads, then each
// invocation takes its lane's words from there.
//
// Arithmetic: one group of 4 weights of every row is decoded at a time and meets the same 4
// elements of each row of x: one load of x serves NR rows of W, one decoded weight serves M
// rows of x. Codes are multiplied as small integers held in floats; a segment's scale is
// applied once to its dot products, and a Q4_K / Q5_K min once to the sum of x over the
// segment (shared by the NR rows). The M x NR partial sums of every invocation meet in shared
// memory and are summed by a tree (no subgroup size assumed; T must be a power of two).
//
//   specialization constants: 0 workgroup size, 1 FORMAT (quant.glsl), 2 TAIL, 3 M (rows of
//     x, 1..8), 4 NR (rows of W per row group), 5 GROUPS (row groups per workgroup),
//     6 UNROLL (units per row in flight, direct loads)
//   set 0: 0 x [M, K] f32, 1 W blocks, 2 tail word (any buffer when unused), 3 bias [N] (any
//     buffer when unused), 4 y [M, N]
//   push constants: N, K, has_bias. The workgroup index is x + y * (groups in x): a grid
//     beyond 65535 workgroups folds into y.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const bool TAIL = false;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 2;
layout(constant_id = 5) const uint GROUPS = 2;
layout(constant_id = 6) const uint UNROLL = 2;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
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

const uint THREADS = gl_WorkGroupSize.x;
const uint T = THREADS / GROUPS;  // invocations per row group
const uint ROWS = GROUPS * NR;    // rows of W per workgroup
// Units of each row an invocation takes per step: staged formats one (the copy through
// shared memory keeps the bytes in flight), others UNROLL.
const uint STEP = QUANT_WORD_LOADS ? 1u : UNROLL;
// Staged formats: T units of a row are T / LANES whole blocks; their words, at either
// alignment, fit in STAGE_WORDS.
const uint STAGE_BLOCKS = T / LANES;
const uint STAGE_WORDS = STAGE_BLOCKS * BLOCK_BYTES / 4u + 2u;
const uint STAGE_SIZE = QUANT_WORD_LOADS ? GROUPS * NR * STAGE_WORDS : 1u;
const uint PARTIAL_SIZE = M * NR * THREADS;
// The staged copies during the loop, the partial sums (as float bits) after it.
shared uint smem[STAGE_SIZE > PARTIAL_SIZE ? STAGE_SIZE : PARTIAL_SIZE];

#include "gemv_stage.glsl"

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint g = tid / T;
    const uint t = tid % T;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint n0 = wg * ROWS + g * NR;
    const uint K4 = pc.K / 4u;
    const uint nb = pc.K / QK;
    const uint units = nb * LANES;

    float acc[M][NR];
    [[unroll]] for (uint m = 0u; m < M; m++) {
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            acc[m][r] = 0.0;
        }
    }
    // First block of each row. Rows past N read row N - 1 (in bounds) and are never stored.
    uint row_block[NR];
    [[unroll]] for (uint r = 0u; r < NR; r++) {
        row_block[r] = min(n0 + r, pc.N - 1u) * nb;
    }

    // Every invocation runs the same number of steps (the rows have equal length), so the
    // barriers of the staged path are reached uniformly.
    for (uint u0 = 0u; u0 < units; u0 += STEP * T) {
        QuantRaw raw[STEP][NR];
        if (QUANT_WORD_LOADS) {
            const uint b0 = u0 / LANES;
            const uint count = min(STAGE_BLOCKS, nb - b0);
            barrier();  // the last step's reads of smem are done
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                stage_copy(g * NR + r, (row_block[r] + b0) * BLOCK_BYTES, count * BLOCK_BYTES, t);
            }
            barrier();
            const uint uc = min(u0 + t, units - 1u);  // past the row's end: unused
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                raw[0][r] = quant_load_staged(g * NR + r, (row_block[r] + b0) * BLOCK_BYTES,
                                              (row_block[r] + uc / LANES) * BLOCK_BYTES,
                                              uc % LANES);
            }
        } else {
            [[unroll]] for (uint v = 0u; v < STEP; v++) {
                // A unit past the row's end loads the last one again (in bounds), unused.
                const uint uc = min(u0 + t + v * T, units - 1u);
                [[unroll]] for (uint r = 0u; r < NR; r++) {
                    raw[v][r] = quant_load((row_block[r] + uc / LANES) * BLOCK_BYTES,
                                           uc % LANES);
                }
            }
        }
        [[unroll]] for (uint v = 0u; v < STEP; v++) {
            const uint uc = u0 + t + v * T;
            if (uc < units) {
                const uint b = uc / LANES, j = uc % LANES;
                vec4 scale[NR], minv[NR];
                uint s[NR];
                [[unroll]] for (uint r = 0u; r < NR; r++) {
                    s[r] = (row_block[r] + b) * BLOCK_BYTES;
                    quant_scales(raw[v][r], s[r], j, scale[r], minv[r]);
                }
                const uint x0 = (b * QK) / 4u;
                [[unroll]] for (uint seg = 0u; seg < SEGS; seg++) {
                    float dq[M][NR];
                    float xsum[M];
                    [[unroll]] for (uint m = 0u; m < M; m++) {
                        xsum[m] = 0.0;
                        [[unroll]] for (uint r = 0u; r < NR; r++) {
                            dq[m][r] = 0.0;
                        }
                    }
                    [[unroll]] for (uint i = 0u; i < GROUPS_PER_SEG; i++) {
                        const uint gi = seg * GROUPS_PER_SEG + i;
                        vec4 q[NR];
                        [[unroll]] for (uint r = 0u; r < NR; r++) {
                            q[r] = quant_group(raw[v][r], s[r], j, gi);
                        }
                        const uint xi = x0 + quant_group_pos(j, gi) / 4u;
                        [[unroll]] for (uint m = 0u; m < M; m++) {
                            const vec4 xv = x4[m * K4 + xi];
                            if (HAS_MIN) {
                                xsum[m] += (xv.x + xv.y) + (xv.z + xv.w);
                            }
                            [[unroll]] for (uint r = 0u; r < NR; r++) {
                                dq[m][r] += dot(q[r], xv);
                            }
                        }
                    }
                    [[unroll]] for (uint m = 0u; m < M; m++) {
                        [[unroll]] for (uint r = 0u; r < NR; r++) {
                            acc[m][r] = fma(scale[r][seg], dq[m][r], acc[m][r]);
                            if (HAS_MIN) {
                                acc[m][r] = fma(-minv[r][seg], xsum[m], acc[m][r]);
                            }
                        }
                    }
                }
            }
        }
    }

    // Partial sums meet in shared memory: series (m, r, row group) holds T values, which a
    // tree halves log2(T) times (T is a power of two), all invocations helping at each level,
    // so that no invocation sums a whole series alone.
    barrier();  // the staged path's last reads of smem are done
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
