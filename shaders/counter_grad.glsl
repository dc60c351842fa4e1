// counter_grad.glsl: a tile of the counter layer's weight gradient G = grad_out^T x, computed
// on the fly and never stored (MEMORY_NATIVE.md section 1). The statistics pass and the update
// pass compute it the same way, so both see the same bits.
//
// A tile is COUNTER_TILE_ROWS rows of W by COUNTER_TILE_COLS columns, one workgroup of 64
// invocations: invocation l owns row o0 + l / 4 and the 16 columns i0 + 16 (l % 4) + j. The
// batch is walked in steps of COUNTER_TILE_N rows of x and grad_out, staged in shared memory.
//
// Order, which the CPU reference repeats (tests/ref/ref_counter.c): every G[o, i] starts at
// +0.0 and adds grad_out[n, o] * x[n, i] for n = 0, 1, ..., N - 1, each product and each sum
// rounded on its own (precise: no fused multiply-add).
//
// The includer declares, before including this file, the inputs as
//   readonly buffer ... { float x_data[]; };    x, [N, in]
//   readonly buffer ... { float go_data[]; };   grad_out, [N, out]
// and a workgroup of 64 invocations.
#ifndef COUNTER_GRAD_GLSL
#define COUNTER_GRAD_GLSL

#define COUNTER_TILE_ROWS 16u
#define COUNTER_TILE_COLS 64u
#define COUNTER_TILE_N 16u
#define COUNTER_GROUP 64u

shared float counter_sgo[COUNTER_TILE_N][COUNTER_TILE_ROWS];
shared float counter_sx[COUNTER_TILE_N][COUNTER_TILE_COLS];

// G of the calling invocation's 16 weights (0 where they lie outside W). Called by every
// invocation of the workgroup (it holds barriers).
void counter_grad_tile(uint N, uint out_dim, uint in_dim, uint o0, uint i0, out float g[16]) {
    const uint l = gl_LocalInvocationID.x;
    const uint r = l >> 2;
    const uint col = 16u * (l & 3u);
    precise float acc[16];
    for (uint j = 0u; j < 16u; j++) {
        acc[j] = 0.0;
    }
    for (uint n0 = 0u; n0 < N; n0 += COUNTER_TILE_N) {
        const uint nb = min(COUNTER_TILE_N, N - n0);
        for (uint k = l; k < COUNTER_TILE_N * COUNTER_TILE_ROWS; k += COUNTER_GROUP) {
            const uint nn = k / COUNTER_TILE_ROWS;
            const uint o = o0 + k % COUNTER_TILE_ROWS;
            counter_sgo[nn][k % COUNTER_TILE_ROWS] =
                nn < nb && o < out_dim ? go_data[(n0 + nn) * out_dim + o] : 0.0;
        }
        for (uint k = l; k < COUNTER_TILE_N * COUNTER_TILE_COLS; k += COUNTER_GROUP) {
            const uint nn = k / COUNTER_TILE_COLS;
            const uint i = i0 + k % COUNTER_TILE_COLS;
            counter_sx[nn][k % COUNTER_TILE_COLS] =
                nn < nb && i < in_dim ? x_data[(n0 + nn) * in_dim + i] : 0.0;
        }
        barrier();
        for (uint nn = 0u; nn < nb; nn++) {
            const float a = counter_sgo[nn][r];
            for (uint j = 0u; j < 16u; j++) {
                acc[j] = acc[j] + a * counter_sx[nn][col + j];
            }
        }
        barrier();
    }
    for (uint j = 0u; j < 16u; j++) {
        g[j] = acc[j];
    }
}

#endif
