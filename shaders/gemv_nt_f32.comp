#version 450
// gemv_nt_f32: y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) for a few rows m (decode: 1 to 8),
// w stored [N, K] (the [out, in] weight layout). Memory-bound: every weight is read once, so
// the kernel is written for bytes in flight and for few loads per weight.
//
// A workgroup has GROUPS row groups of T = THREADS / GROUPS invocations; a row group owns NR
// consecutive rows n, and its invocations stride over K together (neighbouring invocations
// read neighbouring vec4s). Each invocation keeps M x NR partial sums in registers, so one
// load of x serves NR rows of w and one load of w serves M rows of x: with several rows of x,
// the loads of x (from cache) would otherwise outnumber the weight loads M to 1. The partial
// sums meet in shared memory (no subgroup size assumed).
//
//   specialization constants: 0 workgroup size, 1 NR (rows of w per row group), 2 M (rows of
//     x, 1..8), 3 VEC (K is a multiple of 4: vec4 loads), 4 GROUPS (row groups per workgroup)
//   set 0: 0 x [M, K], 1 w [N, K], 2 bias [N] (any buffer when unused), 3 y [M, N]
//   push constants: N, K, has_bias
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 1;
layout(constant_id = 2) const uint M = 1;
layout(constant_id = 3) const bool VEC = true;
layout(constant_id = 4) const uint GROUPS = 4;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW { float w[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW4 { vec4 w4[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint N, K;
    uint has_bias;
} pc;

const uint THREADS = gl_WorkGroupSize.x;
const uint T = THREADS / GROUPS;           // invocations per row group
const uint ROWS = GROUPS * NR;             // rows of w per workgroup
// Independent weight loads per step: at least four in flight per invocation.
const uint UNROLL = NR >= 4 ? 1 : 4 / NR;
shared float partial[M * NR * THREADS];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint g = tid / T;
    const uint t = tid % T;
    const uint n0 = gl_WorkGroupID.x * ROWS + g * NR;
    const uint K = pc.K;

    float acc[M][NR];
    [[unroll]] for (uint m = 0; m < M; m++) {
        [[unroll]] for (uint r = 0; r < NR; r++) {
            acc[m][r] = 0.0;
        }
    }
    // Rows past N read row N - 1 (in bounds) and are never stored.
    uint rowk[NR];
    [[unroll]] for (uint r = 0; r < NR; r++) {
        rowk[r] = min(n0 + r, pc.N - 1) * (VEC ? K / 4 : K);
    }

    if (VEC) {
        const uint K4 = K / 4;
        uint k = t;
        for (; k + (UNROLL - 1) * T < K4; k += UNROLL * T) {
            vec4 wv[UNROLL][NR];
            [[unroll]] for (uint u = 0; u < UNROLL; u++) {
                [[unroll]] for (uint r = 0; r < NR; r++) {
                    wv[u][r] = w4[rowk[r] + k + u * T];
                }
            }
            [[unroll]] for (uint u = 0; u < UNROLL; u++) {
                [[unroll]] for (uint m = 0; m < M; m++) {
                    vec4 xv = x4[m * K4 + k + u * T];
                    [[unroll]] for (uint r = 0; r < NR; r++) {
                        acc[m][r] += dot(wv[u][r], xv);
                    }
                }
            }
        }
        for (; k < K4; k += T) {
            [[unroll]] for (uint m = 0; m < M; m++) {
                vec4 xv = x4[m * K4 + k];
                [[unroll]] for (uint r = 0; r < NR; r++) {
                    acc[m][r] += dot(w4[rowk[r] + k], xv);
                }
            }
        }
    } else {
        for (uint k = t; k < K; k += T) {
            [[unroll]] for (uint m = 0; m < M; m++) {
                float xv = x[m * K + k];
                [[unroll]] for (uint r = 0; r < NR; r++) {
                    acc[m][r] = fma(w[rowk[r] + k], xv, acc[m][r]);
                }
            }
        }
    }

    [[unroll]] for (uint m = 0; m < M; m++) {
        [[unroll]] for (uint r = 0; r < NR; r++) {
            partial[(m * NR + r) * THREADS + tid] = acc[m][r];
        }
    }
    barrier();
    // One invocation per output sums its row group's T partials.
    for (uint o = tid; o < M * ROWS; o += THREADS) {
        const uint m = o / ROWS, row = o % ROWS;
        const uint og = row / NR, r = row % NR;
        const uint n = gl_WorkGroupID.x * ROWS + row;
        if (n < pc.N) {
            float sum = pc.has_bias != 0u ? bias[n] : 0.0;
            const uint base = (m * NR + r) * THREADS + og * T;
            for (uint i = 0; i < T; i++) {
                sum += partial[base + i];
            }
            y[m * pc.N + n] = sum;
        }
    }
}
