#version 450
// counter_stats_f32: pass 1 of the counter layer's update (MEMORY_NATIVE.md section 1). Per
// tile of W of 16 rows by 64 columns (counter_tile.glsl), G = grad_out^T x
// is computed on the fly and each row's share of
//   sum_i G[o, i]^2   and   sum_i G[o, i] * t[o, i]
// is written as one partial per (row, column tile); counter_rows_f32 adds the partials.
//
// The statistics feed only the row factors, which the tests hold to a tolerance, so G here
// needs to be right only within rounding, not in the update pass's exact order: its products
// are fused into its sums (fma) and the batch is walked in WG / 16 slices of 16 invocations,
// slice s taking rows s, s + WG / 16, ..., each invocation an 8 x 8 block of the tile (two
// vec4 loads of grad_out and two of x feed 64 products, a quarter of the update pass's loads
// a product). The slices' blocks are added through shared memory, two slices a round; then
// each invocation takes whole vec4s of the tile's G, and the row's sums go to the partial in
// column order.
//
//   workgroup size : 64, 128 or 256 (specialization constant 0; the update pass's)
//   set 0 binding 0: x (readonly vec4[], [N, in]); binding 1: grad_out (readonly, [N, out]);
//   binding 2: the packed state (readonly uint[]); binding 3: partials (float[], [out, tiles, 2])
//   push constants : { uint n, out_dim, in_dim, C, tiles; }
//   grid           : (tiles = ceil(in / 64), ceil(out / 16), 1)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo { float go_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo4 { vec4 go4_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufPacked { uint packed_words[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufPartial { float partial[]; };

layout(push_constant) uniform Push { uint n, out_dim, in_dim, C, tiles; } pc;

#include "counter.glsl"
#include "counter_tile.glsl"

const uint WG = gl_WorkGroupSize.x;
shared float row_sq[256];
shared float row_gt[256];

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint slice = l / 16u, b = l % 16u;
    const uint br = b / 8u, bc = b % 8u;
    const uint o0 = gl_WorkGroupID.y * COUNTER_TILE_ROWS;
    const uint i0 = gl_WorkGroupID.x * COUNTER_TILE_COLS;
    const uint ob = o0 + 8u * br, ib = i0 + 8u * bc;

    float acc[64];
    [[unroll]] for (uint j = 0u; j < 64u; j++) {
        acc[j] = 0.0;
    }
    vec4 g0 = counter_load_go(slice, pc.n, ob), g1 = counter_load_go(slice, pc.n, ob + 4u);
    vec4 x0 = counter_load_x(slice, pc.n, ib), x1 = counter_load_x(slice, pc.n, ib + 4u);
    for (uint n = slice; n < pc.n; n += COUNTER_SLICES) {
        const vec4 ga = g0, gb = g1, xa = x0, xb = x1;
        const uint next = n + COUNTER_SLICES;
        g0 = counter_load_go(next, pc.n, ob);
        g1 = counter_load_go(next, pc.n, ob + 4u);
        x0 = counter_load_x(next, pc.n, ib);
        x1 = counter_load_x(next, pc.n, ib + 4u);
        [[unroll]] for (uint r = 0u; r < 8u; r++) {
            const float a = r < 4u ? ga[r] : gb[r - 4u];
            [[unroll]] for (uint c = 0u; c < 4u; c++) {
                acc[8u * r + c] = fma(a, xa[c], acc[8u * r + c]);
                acc[8u * r + 4u + c] = fma(a, xb[c], acc[8u * r + 4u + c]);
            }
        }
    }

    // The slices' blocks added, two slices a round; each invocation owns the vec4s
    // p = l, l + WG, ... of the tile.
    const uint owned = 256u / WG;
    vec4 tot[4];
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        tot[k] = vec4(0.0);
    }
    for (uint s0 = 0u; s0 < COUNTER_SLICES; s0 += 2u) {
        barrier();
        if (slice == s0 || slice == s0 + 1u) {
            counter_block_store((slice - s0) * 256u, br, bc, acc);
        }
        barrier();
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            if (k < owned) {
                const uint p = l + k * WG;
                tot[k] += counter_red[p] + counter_red[256u + p];
            }
        }
    }

    // Each owned vec4's share of its row's sums: G^2 and G t over its 4 columns.
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        if (k < owned) {
            const uint p = l + k * WG;
            const uint o = o0 + p / 16u;
            const uint i = i0 + 4u * (p % 16u);
            precise float sq = 0.0;
            precise float gt = 0.0;
            if (o < pc.out_dim && i < pc.in_dim) {
                const uint e = o * pc.in_dim + i;
                const uint w0 = e / 16u * 3u;
                const uvec3 w =
                    uvec3(packed_words[w0], packed_words[w0 + 1u], packed_words[w0 + 2u]);
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    const float t = float(counter_t(counter_code16(w, e % 16u + c), pc.C));
                    sq = sq + tot[k][c] * tot[k][c];
                    gt = gt + tot[k][c] * t;
                }
            }
            row_sq[p] = sq;
            row_gt[p] = gt;
        }
    }
    barrier();
    if (l < COUNTER_TILE_ROWS && o0 + l < pc.out_dim) {
        precise float tile_sq = 0.0;
        precise float tile_gt = 0.0;
        for (uint q = 0u; q < 16u; q++) {
            tile_sq = tile_sq + row_sq[16u * l + q];
            tile_gt = tile_gt + row_gt[16u * l + q];
        }
        const uint at = ((o0 + l) * pc.tiles + gl_WorkGroupID.x) * 2u;
        partial[at] = tile_sq;
        partial[at + 1u] = tile_gt;
    }
}
