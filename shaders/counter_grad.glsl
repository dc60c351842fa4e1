// counter_grad.glsl: a tile of the counter layer's weight gradient G = grad_out^T x, computed
// on the fly and never stored (MEMORY_NATIVE.md section 1). The statistics pass and the update
// pass compute it the same way, so both see the same bits.
//
// A tile is COUNTER_TILE_ROWS rows of W by COUNTER_TILE_COLS columns, one workgroup of WG
// invocations (64, 128 or 256: the includer's local_size_x, specialization constant 0). The
// tile's 1,024 sums are shared among all of them, COUNTER_EPI = 1024 / WG each: invocation l
// sums row o0 + l / (WG / 16) and the COUNTER_EPI columns from i0 + COUNTER_EPI (l % (WG /
// 16)), so that a wider workgroup runs more of the sums at once (each is a chain of N
// dependent adds). The batch is walked in chunks of COUNTER_TILE_N rows of x and grad_out
// (specialization constant 2: 32 or 64), staged in shared memory; the next chunk's loads are
// issued into registers before the sums over the current one, so that the sums wait for
// memory less than once a chunk. The tile's owners, invocations 0..63 (COUNTER_OWNERS), then take their 16 weights
// each: row o0 + l / 4, columns i0 + 16 (l % 4) + j, as before any widening (with WG 64 the
// sums are already theirs; wider, they pass through shared memory).
//
// Order, which the CPU reference repeats (tests/ref/ref_counter.c): every G[o, i] starts at
// +0.0 and adds grad_out[n, o] * x[n, i] for n = 0, 1, ..., N - 1, each product and each sum
// rounded on its own (precise: no fused multiply-add). Which invocation sums it does not
// change a bit.
//
// The includer declares, before including this file, the inputs as
//   readonly buffer ... { float x_data[]; };    x, [N, in]
//   readonly buffer ... { float go_data[]; };   grad_out, [N, out]
// and its workgroup size as local_size_x_id = 0.
#ifndef COUNTER_GRAD_GLSL
#define COUNTER_GRAD_GLSL

#define COUNTER_TILE_ROWS 16u
#define COUNTER_TILE_COLS 64u
#define COUNTER_OWNERS 64u

// Batch rows a chunk: 32 or 64, the host's choice by the device's shared memory.
layout(constant_id = 2) const uint COUNTER_TILE_N = 32u;

const uint COUNTER_WG = gl_WorkGroupSize.x;
const uint COUNTER_EPI = COUNTER_TILE_ROWS * COUNTER_TILE_COLS / COUNTER_WG;
const uint COUNTER_CPR = COUNTER_WG / COUNTER_TILE_ROWS;  // invocations a row
// A chunk's loads an invocation: grad_out's floats, x's vec4s.
const uint COUNTER_GO_LOADS = COUNTER_TILE_N * COUNTER_TILE_ROWS / COUNTER_WG;
const uint COUNTER_X_LOADS = COUNTER_TILE_N * COUNTER_TILE_COLS / 4u / COUNTER_WG;

shared float counter_sgo[COUNTER_TILE_N][COUNTER_TILE_ROWS];
shared vec4 counter_sx[COUNTER_TILE_N][COUNTER_TILE_COLS / 4u];
shared float counter_sg[COUNTER_WG > COUNTER_OWNERS ? COUNTER_TILE_ROWS : 1u]
                       [COUNTER_WG > COUNTER_OWNERS ? COUNTER_TILE_COLS : 1u];

// A chunk's loads from batch row n0 into registers: 0 past the batch and past W, where the
// sums below add +0.0 products, which change no sum (none is ever -0.0: each starts at +0.0,
// and a sum that cancels exactly is +0.0).
void counter_grad_load(uint N, uint out_dim, uint in_dim, uint o0, uint i0, uint n0,
                       out float go[COUNTER_GO_LOADS], out vec4 xv[COUNTER_X_LOADS]) {
    const uint l = gl_LocalInvocationID.x;
    [[unroll]] for (uint q = 0u; q < COUNTER_GO_LOADS; q++) {
        const uint k = l + q * COUNTER_WG;
        const uint n = n0 + k / COUNTER_TILE_ROWS;
        const uint o = o0 + k % COUNTER_TILE_ROWS;
        go[q] = n < N && o < out_dim ? go_data[n * out_dim + o] : 0.0;
    }
    [[unroll]] for (uint q = 0u; q < COUNTER_X_LOADS; q++) {
        const uint k = l + q * COUNTER_WG;
        const uint n = n0 + k / (COUNTER_TILE_COLS / 4u);
        const uint i = i0 + 4u * (k % (COUNTER_TILE_COLS / 4u));
        vec4 v = vec4(0.0);
        if (n < N) {
            const uint at = n * in_dim + i;
            [[unroll]] for (uint c = 0u; c < 4u; c++) {
                v[c] = i + c < in_dim ? x_data[at + c] : 0.0;
            }
        }
        xv[q] = v;
    }
}

// G of the calling owner's 16 weights (0 where they lie outside W; 0 for an invocation past
// the owners). Called by every invocation of the workgroup (it holds barriers).
void counter_grad_tile(uint N, uint out_dim, uint in_dim, uint o0, uint i0, out float g[16]) {
    const uint l = gl_LocalInvocationID.x;
    const uint r = l / COUNTER_CPR;
    const uint col4 = COUNTER_EPI / 4u * (l % COUNTER_CPR);
    precise float acc[COUNTER_EPI];
    [[unroll]] for (uint j = 0u; j < COUNTER_EPI; j++) {
        acc[j] = 0.0;
    }
    float go[COUNTER_GO_LOADS];
    vec4 xv[COUNTER_X_LOADS];
    counter_grad_load(N, out_dim, in_dim, o0, i0, 0u, go, xv);
    for (uint n0 = 0u; n0 < N; n0 += COUNTER_TILE_N) {
        barrier();  // the previous chunk's sums are done with shared memory
        [[unroll]] for (uint q = 0u; q < COUNTER_GO_LOADS; q++) {
            const uint k = l + q * COUNTER_WG;
            counter_sgo[k / COUNTER_TILE_ROWS][k % COUNTER_TILE_ROWS] = go[q];
        }
        [[unroll]] for (uint q = 0u; q < COUNTER_X_LOADS; q++) {
            const uint k = l + q * COUNTER_WG;
            counter_sx[k / (COUNTER_TILE_COLS / 4u)][k % (COUNTER_TILE_COLS / 4u)] = xv[q];
        }
        barrier();
        if (n0 + COUNTER_TILE_N < N) {
            counter_grad_load(N, out_dim, in_dim, o0, i0, n0 + COUNTER_TILE_N, go, xv);
        }
        [[unroll]] for (uint nn = 0u; nn < COUNTER_TILE_N; nn++) {
            const float a = counter_sgo[nn][r];
            [[unroll]] for (uint v = 0u; v < COUNTER_EPI / 4u; v++) {
                const vec4 xq = counter_sx[nn][col4 + v];
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    acc[4u * v + c] = acc[4u * v + c] + a * xq[c];
                }
            }
        }
    }
    if (COUNTER_WG == COUNTER_OWNERS) {
        for (uint j = 0u; j < 16u; j++) {
            g[j] = acc[j % COUNTER_EPI];
        }
        return;
    }
    for (uint j = 0u; j < COUNTER_EPI; j++) {
        counter_sg[r][4u * col4 + j] = acc[j];
    }
    barrier();
    const uint ro = (l >> 2) % COUNTER_TILE_ROWS, co = 16u * (l & 3u);
    for (uint j = 0u; j < 16u; j++) {
        g[j] = l < COUNTER_OWNERS ? counter_sg[ro][co + j] : 0.0;
    }
}

#endif
