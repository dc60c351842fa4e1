#version 450
// gemv_nt_f32: y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) for a few rows m (decode: 1 to 8),
// w stored [N, K] (the [out, in] weight layout). Memory-bound: every weight is read once, so
// the kernel is written for bytes in flight: vec4 loads, four independent loads per step.
//
// A workgroup owns ROWS consecutive n; the THREADS / ROWS invocations of one row stride over
// K together (neighbouring invocations read neighbouring vec4s), keep M partial sums in
// registers, and combine them through shared memory (no subgroup size assumed).
//
//   specialization constants: 0 workgroup size, 1 ROWS (n per workgroup), 2 M (rows of x, 1..8),
//     3 VEC (K is a multiple of 4: vec4 loads)
//   set 0: 0 x [M, K], 1 w [N, K], 2 bias [N] (any buffer when unused), 3 y [M, N]
//   push constants: N, K, has_bias
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 4;
layout(constant_id = 2) const uint M = 1;
layout(constant_id = 3) const bool VEC = true;

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
const uint T = THREADS / ROWS;  // invocations per row
shared float partial[THREADS * M];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r = tid / T;
    const uint t = tid % T;
    const uint n = gl_WorkGroupID.x * ROWS + r;
    const uint K = pc.K;

    float acc[M];
    [[unroll]] for (uint m = 0; m < M; m++) {
        acc[m] = 0.0;
    }
    if (n < pc.N) {
        if (VEC) {
            const uint K4 = K / 4;
            const uint row = n * K4;
            uint k = t;
            // Four independent loads in flight per invocation before any arithmetic.
            for (; k + 3 * T < K4; k += 4 * T) {
                vec4 w0 = w4[row + k];
                vec4 w1 = w4[row + k + T];
                vec4 w2 = w4[row + k + 2 * T];
                vec4 w3 = w4[row + k + 3 * T];
                [[unroll]] for (uint m = 0; m < M; m++) {
                    const uint xr = m * K4;
                    acc[m] += dot(w0, x4[xr + k]) + dot(w1, x4[xr + k + T]) +
                              dot(w2, x4[xr + k + 2 * T]) + dot(w3, x4[xr + k + 3 * T]);
                }
            }
            for (; k < K4; k += T) {
                vec4 w0 = w4[row + k];
                [[unroll]] for (uint m = 0; m < M; m++) {
                    acc[m] += dot(w0, x4[m * K4 + k]);
                }
            }
        } else {
            const uint row = n * K;
            for (uint k = t; k < K; k += T) {
                float w0 = w[row + k];
                [[unroll]] for (uint m = 0; m < M; m++) {
                    acc[m] = fma(w0, x[m * K + k], acc[m]);
                }
            }
        }
    }

    [[unroll]] for (uint m = 0; m < M; m++) {
        partial[m * THREADS + tid] = acc[m];
    }
    barrier();
    // Tree over the T invocations of each row (T is a power of two).
    for (uint s = T / 2; s > 0; s /= 2) {
        if (t < s) {
            [[unroll]] for (uint m = 0; m < M; m++) {
                partial[m * THREADS + tid] += partial[m * THREADS + tid + s];
            }
        }
        barrier();
    }
    if (t == 0 && n < pc.N) {
        const float b = pc.has_bias != 0u ? bias[n] : 0.0;
        [[unroll]] for (uint m = 0; m < M; m++) {
            y[m * pc.N + n] = partial[m * THREADS + tid] + b;
        }
    }
}
