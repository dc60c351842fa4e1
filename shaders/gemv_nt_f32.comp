#version 450
// gemv_nt_f32: y[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) for a few rows m (decode: 1 to 8),
// w stored [N, K] (the [out, in] weight layout). Memory-bound: every weight is read once, so
// the kernel is written for bytes in flight and for few loads per weight.
//
// A workgroup has GROUPS row groups of T = THREADS / GROUPS invocations; a row group owns NR
// consecutive rows n, and its invocations stride over K together (neighbouring invocations
// read neighbouring vec4s). Each invocation keeps M x NR partial sums in registers, so one
// load of x serves NR rows of w and one load of w serves M rows of x. The partial sums meet
// in shared memory (no subgroup size assumed). Two ways to get x:
//
//   direct (STEPS = 0; one row of x): x is read from memory; one row (K floats) stays in the
//     L1 cache. UNROLL vec4s of each row of w are issued before any is used.
//   staged (STEPS > 0; several rows): M x K floats of x no longer fit the L1 cache next to
//     the streamed weights, and from L2 they would cost M / NR bytes per byte of w, more
//     traffic than w itself. So K goes in chunks of STEPS * T vec4s: the workgroup copies a
//     chunk of every row of x into shared memory once (one read of x per ROWS rows of w) and
//     every row group reads it from there. Shared memory holds two chunks: the next one is
//     loaded into registers while the current one is used, stored into the other half, and
//     one barrier per chunk separates them. Weights run one chunk ahead: each vec4 of w, once
//     used, is replaced by the load of the same position in the next chunk, so STEPS x NR
//     vec4s per invocation are in flight across the barrier. K need not be a multiple of 4
//     there (scalar loads; elements past K count as zero).
//
//   specialization constants: 0 workgroup size, 1 NR (rows of w per row group), 2 M (rows of
//     x, 1..8), 3 VEC (K is a multiple of 4: vec4 loads), 4 GROUPS (row groups per workgroup),
//     5 STEPS (0: direct; else vec4s of K per invocation and chunk)
//   set 0: 0 x [M, K], 1 w [N, K], 2 bias [N] (any buffer when unused), 3 y [M, N]
//   push constants: N, K, has_bias. The workgroup index is x + y * (groups in x): a grid
//     beyond 65535 workgroups folds into y.
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NR = 1;
layout(constant_id = 2) const uint M = 1;
layout(constant_id = 3) const bool VEC = true;
layout(constant_id = 4) const uint GROUPS = 4;
layout(constant_id = 5) const uint STEPS = 0;

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
const bool STAGED = STEPS > 0u;

// Direct path: independent weight loads per step, at least four in flight per invocation.
const uint UNROLL = NR >= 4 ? 1 : 4 / NR;
shared float partial[STAGED ? 1u : M * NR * THREADS];

// Staged path (the host mirrors these sizes: src/ops/matmul.c, gemv_shared_bytes).
const uint S = STAGED ? STEPS : 1u;        // vec4s of each row of w per invocation and chunk
const uint KC4 = S * T;                    // vec4s of K per chunk
const uint XV = M * KC4;                   // vec4s of x per chunk
const uint XPT = (XV + THREADS - 1u) / THREADS;  // of them, staged by each invocation
const uint OUTS = M * NR;                  // partial sums per invocation
const uint RSTRIDE = THREADS + 1u;         // floats per slot of the reduction (odd: no bank
                                           // conflicts when a slot is written or summed)
const uint SMEM4 = STAGED ? (2u * XV > (RSTRIDE + 3u) / 4u ? 2u * XV : (RSTRIDE + 3u) / 4u) : 1u;
// Slots of partial sums reduced per pass through shared memory (the chunks' space, reused).
const uint PASS = (SMEM4 * 4u) / RSTRIDE < OUTS ? (SMEM4 * 4u) / RSTRIDE : OUTS;
const uint PASSES = (OUTS + PASS - 1u) / PASS;
shared vec4 smem[SMEM4];

uint wg_index() {
    return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
}

void main_direct() {
    const uint tid = gl_LocalInvocationID.x;
    const uint g = tid / T;
    const uint t = tid % T;
    const uint wg = wg_index();
    const uint n0 = wg * ROWS + g * NR;
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
        const uint n = wg * ROWS + row;
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

// --- staged path --------------------------------------------------------------------------

// vec4 k4 of the row of w that starts at `row` (in vec4s with VEC, else in floats); k4 is
// below the row's vec4 count. Without VEC, elements past K are 0.
vec4 load_w(uint row, uint k4) {
    if (VEC) {
        return w4[row + k4];
    }
    const uint e = row + 4u * k4;
    const uint left = pc.K - 4u * k4;
    return vec4(w[e], left > 1u ? w[e + 1u] : 0.0, left > 2u ? w[e + 2u] : 0.0,
                left > 3u ? w[e + 3u] : 0.0);
}

// Element i (< XV) of chunk c of x: vec4 i % KC4 of the chunk in row i / KC4; 0 past K.
vec4 load_x(uint c, uint i, uint kv) {
    const uint m = i / KC4;
    const uint k4 = c * KC4 + i % KC4;
    if (k4 >= kv) {
        return vec4(0.0);
    }
    if (VEC) {
        return x4[m * kv + k4];
    }
    const uint e = m * pc.K + 4u * k4;
    const uint left = pc.K - 4u * k4;
    return vec4(x[e], left > 1u ? x[e + 1u] : 0.0, left > 2u ? x[e + 2u] : 0.0,
                left > 3u ? x[e + 3u] : 0.0);
}

void put_partial(uint i, float v) {
    smem[i >> 2u][i & 3u] = v;
}

float get_partial(uint i) {
    return smem[i >> 2u][i & 3u];
}

void main_staged() {
    const uint tid = gl_LocalInvocationID.x;
    const uint g = tid / T;
    const uint t = tid % T;
    const uint wg = wg_index();
    // Uniform per workgroup: a folded grid's spare workgroups leave before any barrier.
    if (wg * ROWS >= pc.N) {
        return;
    }
    const uint n0 = wg * ROWS + g * NR;
    const uint kv = VEC ? pc.K / 4u : (pc.K + 3u) / 4u;  // vec4s per row, the last maybe partial
    const uint chunks = (kv + KC4 - 1u) / KC4;

    float acc[M][NR];
    [[unroll]] for (uint m = 0u; m < M; m++) {
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            acc[m][r] = 0.0;
        }
    }
    // Rows past N read row N - 1 (in bounds) and are never stored.
    uint row[NR];
    [[unroll]] for (uint r = 0u; r < NR; r++) {
        row[r] = min(n0 + r, pc.N - 1u) * (VEC ? kv : pc.K);
    }
    // This chunk's weights; each vec4, once used, is replaced by the next chunk's (0 past K).
    vec4 wv[S][NR];
    [[unroll]] for (uint s = 0u; s < S; s++) {
        const uint k4 = s * T + t;
        [[unroll]] for (uint r = 0u; r < NR; r++) {
            wv[s][r] = k4 < kv ? load_w(row[r], k4) : vec4(0.0);
        }
    }
    [[unroll]] for (uint i = 0u; i < XPT; i++) {
        const uint e = tid + i * THREADS;
        if (e < XV) {
            smem[e] = load_x(0u, e, kv);
        }
    }
    barrier();

    // Chunk c lies in half c % 2 of smem. Every invocation runs every chunk, so the barriers
    // are reached uniformly.
    for (uint c = 0u; c < chunks; c++) {
        const uint base = (c & 1u) * XV;
        vec4 xr[XPT];  // chunk c + 1 of x (zeros past the last)
        [[unroll]] for (uint i = 0u; i < XPT; i++) {
            const uint e = tid + i * THREADS;
            xr[i] = e < XV ? load_x(c + 1u, e, kv) : vec4(0.0);
        }
        [[unroll]] for (uint s = 0u; s < S; s++) {
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const vec4 xv = smem[base + m * KC4 + s * T + t];
                [[unroll]] for (uint r = 0u; r < NR; r++) {
                    float a = acc[m][r];
                    a = fma(wv[s][r].x, xv.x, a);
                    a = fma(wv[s][r].y, xv.y, a);
                    a = fma(wv[s][r].z, xv.z, a);
                    a = fma(wv[s][r].w, xv.w, a);
                    acc[m][r] = a;
                }
            }
            const uint k4 = (c + 1u) * KC4 + s * T + t;
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                wv[s][r] = k4 < kv ? load_w(row[r], k4) : vec4(0.0);
            }
        }
        // The other half held chunk c - 1, whose reads all ended before the last barrier.
        [[unroll]] for (uint i = 0u; i < XPT; i++) {
            const uint e = tid + i * THREADS;
            if (e < XV) {
                smem[(XV - base) + e] = xr[i];
            }
        }
        barrier();
    }

    // Partial sums: slot j of a pass holds one (m, r) of every invocation, at j * RSTRIDE +
    // invocation; one invocation per output sums its row group's T of them in order.
    for (uint p = 0u; p < PASSES; p++) {
        if (p > 0u) {
            barrier();  // the last pass's reads are done
        }
        [[unroll]] for (uint m = 0u; m < M; m++) {
            [[unroll]] for (uint r = 0u; r < NR; r++) {
                const uint o = m * NR + r;
                if (o / PASS == p) {
                    put_partial((o % PASS) * RSTRIDE + tid, acc[m][r]);
                }
            }
        }
        barrier();
        const uint slots = min(PASS, OUTS - p * PASS);
        for (uint q = tid; q < GROUPS * slots; q += THREADS) {
            const uint og = q / slots, j = q % slots;
            const uint o = p * PASS + j;
            const uint m = o / NR, r = o % NR;
            const uint n = wg * ROWS + og * NR + r;
            if (n < pc.N) {
                float sum = pc.has_bias != 0u ? bias[n] : 0.0;
                const uint base = j * RSTRIDE + og * T;
                for (uint i = 0u; i < T; i++) {
                    sum += get_partial(base + i);
                }
                y[m * pc.N + n] = sum;
            }
        }
    }
}

void main() {
    if (STAGED) {
        main_staged();
    } else {
        main_direct();
    }
}
