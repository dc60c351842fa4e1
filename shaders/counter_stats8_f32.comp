#version 450
// counter_stats8_f32: counter_stats_f32 (pass 1 of the counter layer's update) by 8 x 8 blocks
// (counter_grad8.glsl), the opt-in MOTIFCL_COUNTER_STATS8 (tuning). The same tile of W (16
// rows by 64 columns), grid, bindings, push constants and partials; G in counter_grad8.glsl's
// order (the statistics feed only the row factors, which the tests hold to a tolerance against
// the reference's sums of counter_grad.glsl's order). Invocation l's share of its row's sums
// over its vec4 of G (4 columns) is summed from +0.0, each product and sum rounded on its own;
// the tile's partial is +0.0 plus the row's 16 shares in column order.
//
//   workgroup size : 256 (specialization constant 0: the host gives 256)
//   set 0 binding 0: x (readonly vec4[], [N, in]); binding 1: grad_out (readonly, [N, out]);
//   binding 2: the packed state (readonly uint[]); binding 3: partials (float[], [out, tiles, 2])
//   push constants : { uint n, out_dim, in_dim, C, tiles; }
//   grid           : (tiles = ceil(in / 64), ceil(out / 16), 1)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo { float go_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo4 { vec4 go4_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufPacked { uint packed_words[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufPartial { float partial[]; };

layout(push_constant) uniform Push { uint n, out_dim, in_dim, C, tiles; } pc;

#include "counter.glsl"
#include "counter_grad8.glsl"

#define TILE_ROWS 16u

shared float row_sq[256];
shared float row_gt[256];

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint o0 = gl_WorkGroupID.y * TILE_ROWS;
    const uint i0 = gl_WorkGroupID.x * 64u;
    const vec4 tot = counter_grad8_tile(pc.n, pc.out_dim, pc.in_dim, o0, i0);

    // Vec4 l's share of its row's sums: G^2 and G t over its 4 columns.
    const uint o = o0 + l / 16u;
    const uint i = i0 + 4u * (l % 16u);
    precise float sq = 0.0;
    precise float gt = 0.0;
    if (o < pc.out_dim && i < pc.in_dim) {
        const uint e = o * pc.in_dim + i;
        const uint w0 = e / 16u * 3u;
        const uvec3 w = uvec3(packed_words[w0], packed_words[w0 + 1u], packed_words[w0 + 2u]);
        [[unroll]] for (uint c = 0u; c < 4u; c++) {
            const float t = float(counter_t(counter_code16(w, e % 16u + c), pc.C));
            sq = sq + tot[c] * tot[c];
            gt = gt + tot[c] * t;
        }
    }
    row_sq[l] = sq;
    row_gt[l] = gt;
    barrier();
    if (l < TILE_ROWS && o0 + l < pc.out_dim) {
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
