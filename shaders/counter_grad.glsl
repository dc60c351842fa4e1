// counter_grad.glsl: a tile of the counter layer's weight gradient G = grad_out^T x, computed
// on the fly and never stored (MEMORY_NATIVE.md section 1). The statistics pass and the update
// pass compute it the same way, so both see the same bits.
//
// A tile is COUNTER_TILE_ROWS rows of W by COUNTER_TILE_COLS columns, one workgroup of WG
// invocations (64, 128 or 256: the includer's local_size_x, specialization constant 0). The
// tile's 1,024 sums are shared among all of them, COUNTER_EPI = 1024 / WG each: invocation l
// sums row o0 + l / (WG / 16) and the COUNTER_EPI columns from i0 + COUNTER_EPI (l % (WG /
// 16)), so that a wider workgroup runs more of the sums at once (each is a chain of N
// dependent adds). The batch is walked in steps of COUNTER_TILE_N rows of x and grad_out,
// staged in shared memory. The tile's owners, invocations 0..63 (COUNTER_OWNERS), then take
// their 16 weights each: row o0 + l / 4, columns i0 + 16 (l % 4) + j, as before any widening
// (with WG 64 the sums are already theirs; wider, they pass through shared memory).
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
#define COUNTER_TILE_N 16u
#define COUNTER_OWNERS 64u

const uint COUNTER_WG = gl_WorkGroupSize.x;
const uint COUNTER_EPI = COUNTER_TILE_ROWS * COUNTER_TILE_COLS / COUNTER_WG;
const uint COUNTER_CPR = COUNTER_WG / COUNTER_TILE_ROWS;  // invocations a row

shared float counter_sgo[COUNTER_TILE_N][COUNTER_TILE_ROWS];
shared float counter_sx[COUNTER_TILE_N][COUNTER_TILE_COLS];
shared float counter_sg[COUNTER_WG > COUNTER_OWNERS ? COUNTER_TILE_ROWS : 1u]
                       [COUNTER_WG > COUNTER_OWNERS ? COUNTER_TILE_COLS : 1u];

// G of the calling owner's 16 weights (0 where they lie outside W; 0 for an invocation past
// the owners). Called by every invocation of the workgroup (it holds barriers).
void counter_grad_tile(uint N, uint out_dim, uint in_dim, uint o0, uint i0, out float g[16]) {
    const uint l = gl_LocalInvocationID.x;
    const uint r = l / COUNTER_CPR;
    const uint col = COUNTER_EPI * (l % COUNTER_CPR);
    precise float acc[COUNTER_EPI];
    for (uint j = 0u; j < COUNTER_EPI; j++) {
        acc[j] = 0.0;
    }
    for (uint n0 = 0u; n0 < N; n0 += COUNTER_TILE_N) {
        const uint nb = min(COUNTER_TILE_N, N - n0);
        for (uint k = l; k < COUNTER_TILE_N * COUNTER_TILE_ROWS; k += COUNTER_WG) {
            const uint nn = k / COUNTER_TILE_ROWS;
            const uint o = o0 + k % COUNTER_TILE_ROWS;
            counter_sgo[nn][k % COUNTER_TILE_ROWS] =
                nn < nb && o < out_dim ? go_data[(n0 + nn) * out_dim + o] : 0.0;
        }
        for (uint k = l; k < COUNTER_TILE_N * COUNTER_TILE_COLS; k += COUNTER_WG) {
            const uint nn = k / COUNTER_TILE_COLS;
            const uint i = i0 + k % COUNTER_TILE_COLS;
            counter_sx[nn][k % COUNTER_TILE_COLS] =
                nn < nb && i < in_dim ? x_data[(n0 + nn) * in_dim + i] : 0.0;
        }
        barrier();
        for (uint nn = 0u; nn < nb; nn++) {
            const float a = counter_sgo[nn][r];
            for (uint j = 0u; j < COUNTER_EPI; j++) {
                acc[j] = acc[j] + a * counter_sx[nn][col + j];
            }
        }
        barrier();
    }
    if (COUNTER_WG == COUNTER_OWNERS) {
        for (uint j = 0u; j < 16u; j++) {
            g[j] = acc[j % COUNTER_EPI];
        }
        return;
    }
    for (uint j = 0u; j < COUNTER_EPI; j++) {
        counter_sg[r][col + j] = acc[j];
    }
    barrier();
    const uint ro = (l >> 2) % COUNTER_TILE_ROWS, co = 16u * (l & 3u);
    for (uint j = 0u; j < 16u; j++) {
        g[j] = l < COUNTER_OWNERS ? counter_sg[ro][co + j] : 0.0;
    }
}

#endif
