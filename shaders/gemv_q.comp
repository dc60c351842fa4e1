#version 450
// gemv_q: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a few rows m of x (decode: 1 to
// 8), W block-quantised [N, K] and dequantized in the shader with f32 arithmetic: the float
// path, the one Polaris runs. Memory-bound: every weight block is read once.
//
// A workgroup has GROUPS row groups of T = THREADS / GROUPS invocations; a row group owns NR
// consecutive rows n of W and its invocations stride over the row's lanes (quant.glsl: lane j
// of block b is 32 weights): unit u is lane u % LANES of block u / LANES, so neighbouring
// invocations read neighbouring bytes of the row (coalesced 32-bit / 128-bit loads).
//
// Each step first issues the loads of UNROLL units for each of the NR rows (bytes in flight),
// then decodes one group of 4 weights of every row at a time and meets it with the same 4
// elements of each row of x: one load of x serves NR rows of W, one decoded weight serves M
// rows of x. Codes are multiplied as small integers held in floats; a segment's scale is
// applied once to its dot products, and a Q4_K / Q5_K min once to the sum of x over the
// segment (shared by the NR rows). The M x NR partial sums meet in shared memory (no subgroup
// size assumed).
//
//   specialization constants: 0 workgroup size, 1 FORMAT (quant.glsl), 2 TAIL, 3 M (rows of
//     x, 1..8), 4 NR (rows of W per row group), 5 GROUPS (row groups per workgroup),
//     6 UNROLL (units per row in flight)
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
shared float partial[M * NR * THREADS];

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

    for (uint u = t; u < units; u += UNROLL * T) {
        QuantRaw raw[UNROLL][NR];
        [[unroll]] for (uint v = 0u; v < UNROLL; v++) {
            // A unit past the row's end loads the last one again (in bounds), unused.
            const uint uc = min(u + v * T, units - 1u);
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                raw[v][r] = quant_load((row_block[r] + uc / LANES) * BLOCK_BYTES, uc % LANES);
            }
        }
        [[unroll]] for (uint v = 0u; v < UNROLL; v++) {
            const uint uc = u + v * T;
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

    [[unroll]] for (uint m = 0u; m < M; m++) {
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            partial[(m * NR + r) * THREADS + tid] = acc[m][r];
        }
    }
    barrier();
    // One invocation per output sums its row group's T partials.
    for (uint o = tid; o < M * ROWS; o += THREADS) {
        const uint m = o / ROWS, row = o % ROWS;
        const uint og = row / NR, r = row % NR;
        const uint n = wg * ROWS + row;
        if (n < pc.N) {
            float sum = pc.has_bias != 0u ? bias[n] : 0.0;
            const uint base = (m * NR + r) * THREADS + og * T;
            for (uint i = 0u; i < T; i++) {
                sum += partial[base + i];
            }
            y[m * pc.N + n] = sum;
        }
    }
}
