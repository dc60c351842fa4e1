#version 450
// counter_stats_f32: pass 1 of the counter layer's update (MEMORY_NATIVE.md section 1). Per
// tile of W (counter_grad.glsl), G is computed on the fly and each row's share of
//   sum_i G[o, i]^2   and   sum_i G[o, i] * t[o, i]
// is written as one partial per (row, column tile); counter_rows_f32 adds the partials.
//
// G's products are fused into its sums here (COUNTER_GRAD_FUSED, counter_grad.glsl): half the
// arithmetic of the update pass's exact G, and within rounding of it. Then an invocation sums
// its 16 weights j = 0..15 from +0.0, each product and sum rounded on its own; the tile's
// partial is +0.0 plus the four invocations' sums of the row in column order (those inside W).
//
//   workgroup size : 64, 128 or 256 (specialization constant 0: groups of 4 x rows summing
//                    the batch's segments, counter_grad.glsl; the first group owns the weights)
//   constant 2     : batch rows a chunk of each group's sums of G (counter_grad.glsl)
//   constant 3     : rows of W a tile, 16, 32 or 64 (counter_grad.glsl)
//   set 0 binding 0: x (readonly vec4[], [N, in]); binding 1: grad_out (readonly, [N, out]);
//   binding 2: the packed state (readonly uint[]); binding 3: partials (float[], [out, tiles, 2])
//   push constants : { uint n, out_dim, in_dim, C, tiles; }
//   grid           : (tiles = ceil(in / 64), ceil(out / rows), 1)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 64) in;

layout(std430, set = 0, binding = 1) readonly buffer BufGo { float go_data[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo4 { vec4 go4_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufPacked { uint packed_words[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufPartial { float partial[]; };

layout(push_constant) uniform Push { uint n, out_dim, in_dim, C, tiles; } pc;

#include "counter.glsl"
#define COUNTER_GRAD_FUSED
#include "counter_grad.glsl"

shared float sum_sq[COUNTER_OWNERS];
shared float sum_gt[COUNTER_OWNERS];

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint o0 = gl_WorkGroupID.y * COUNTER_TILE_ROWS;
    const uint i0 = gl_WorkGroupID.x * COUNTER_TILE_COLS;
    float g[16];
    counter_grad_tile(pc.n, pc.out_dim, pc.in_dim, o0, i0, g);

    const uint o = o0 + (l >> 2);
    const uint i = i0 + 16u * (l & 3u);
    precise float sq = 0.0;
    precise float gt = 0.0;
    const bool owner = l < COUNTER_OWNERS;
    if (owner && o < pc.out_dim && i < pc.in_dim) {
        const uint w0 = (o * pc.in_dim + i) / 16u * 3u;
        const uvec3 w = uvec3(packed_words[w0], packed_words[w0 + 1u], packed_words[w0 + 2u]);
        for (uint j = 0u; j < 16u; j++) {
            const float t = float(counter_t(counter_code16(w, j), pc.C));
            sq = sq + g[j] * g[j];
            gt = gt + g[j] * t;
        }
    }
    if (owner) {
        sum_sq[l] = sq;
        sum_gt[l] = gt;
    }
    barrier();
    if (owner && (l & 3u) == 0u && o < pc.out_dim) {
        precise float tile_sq = 0.0;
        precise float tile_gt = 0.0;
        for (uint q = 0u; q < 4u && i0 + 16u * q < pc.in_dim; q++) {
            tile_sq = tile_sq + sum_sq[l + q];
            tile_gt = tile_gt + sum_gt[l + q];
        }
        const uint at = (o * pc.tiles + gl_WorkGroupID.x) * 2u;
        partial[at] = tile_sq;
        partial[at + 1u] = tile_gt;
    }
}
