#version 450
// counter_stats8_f32: counter_stats_f32 (pass 1 of the counter layer's update) by 8 x 8 blocks,
// the opt-in MOTIFCL_COUNTER_STATS8 (tuning). The same tile of W (16 rows by 64 columns), grid,
// bindings, push constants and partials; G within rounding of the exact one, as there, in
// another order (the statistics feed only the row factors, which the tests hold to a
// tolerance).
//
// The workgroup (256 invocations) stages 64 batch rows at a time in shared memory (each row's
// 16 values of grad_out and 64 of x, 20 vec4s; every invocation loads five of the 1,280, the
// next chunk's issued into registers before the sums over this one). Its 16 slices of 16
// invocations take rows s, s + 16, s + 32, s + 48 of a chunk; invocation b of a slice sums an
// 8 x 8 block of the tile's G with fused multiply-adds: rows 4 (b / 8) + {0..3, 8..11},
// columns 4 (b % 8) + {0..3, 32..35}, so that each batch row costs it four 128-bit reads of
// shared memory for 64 products (the 4 x 4 blocks of counter_stats_f32: two for 16), and the
// eight invocations of a quarter subgroup read consecutive vec4s of x. The slices' blocks are
// then added through shared memory, two slices a round, each invocation one vec4 of the tile;
// the row's sums go to the partial in column order.
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

#define TILE_ROWS 16u
#define TILE_COLS 64u
#define CHUNK 64u
#define ROW_VEC4 20u
#define LOADS 5u

// A chunk: [row][20] vec4s (grad_out's 4, then x's 16); later two slices' blocks of the tile
// (2 x 256 vec4s, row r: vec4s 16 r .. 16 r + 15).
shared vec4 sm[CHUNK * ROW_VEC4];
shared float row_sq[256];
shared float row_gt[256];

// Staged vec4 q of the chunk from batch row n0: 0 past the batch, past out_dim or past in_dim.
vec4 chunk_load(uint n0, uint q, uint o0, uint i0) {
    const uint n = n0 + q / ROW_VEC4, part = q % ROW_VEC4;
    if (n >= pc.n) {
        return vec4(0.0);
    }
    if (part < 4u) {
        const uint o = o0 + 4u * part;
        if (pc.out_dim % 4u == 0u) {
            return o < pc.out_dim ? go4_data[(n * pc.out_dim + o) / 4u] : vec4(0.0);
        }
        vec4 v = vec4(0.0);
        [[unroll]] for (uint c = 0u; c < 4u; c++) {
            v[c] = o + c < pc.out_dim ? go_data[n * pc.out_dim + o + c] : 0.0;
        }
        return v;
    }
    const uint i = i0 + 4u * (part - 4u);
    return i < pc.in_dim ? x4_data[(n * pc.in_dim + i) / 4u] : vec4(0.0);
}

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint slice = l / 16u, b = l % 16u;
    const uint br = b / 8u, bc = b % 8u;
    const uint o0 = gl_WorkGroupID.y * TILE_ROWS;
    const uint i0 = gl_WorkGroupID.x * TILE_COLS;

    // acc[8 r + c]: tile row 4 br + r (r < 4) or 8 + 4 br + r - 4, column 4 bc + c (c < 4)
    // or 32 + 4 bc + c - 4.
    float acc[64];
    [[unroll]] for (uint j = 0u; j < 64u; j++) {
        acc[j] = 0.0;
    }
    vec4 st[LOADS];
    [[unroll]] for (uint k = 0u; k < LOADS; k++) {
        st[k] = chunk_load(0u, l + 256u * k, o0, i0);
    }
    for (uint n0 = 0u; n0 < pc.n; n0 += CHUNK) {
        barrier();  // the last chunk's sums are done
        [[unroll]] for (uint k = 0u; k < LOADS; k++) {
            sm[l + 256u * k] = st[k];
        }
        barrier();
        if (n0 + CHUNK < pc.n) {
            [[unroll]] for (uint k = 0u; k < LOADS; k++) {
                st[k] = chunk_load(n0 + CHUNK, l + 256u * k, o0, i0);
            }
        }
        [[unroll]] for (uint rr = 0u; rr < CHUNK / 16u; rr++) {
            const uint row = (slice + 16u * rr) * ROW_VEC4;
            const vec4 ga = sm[row + br], gb = sm[row + 2u + br];
            const vec4 xa = sm[row + 4u + bc], xb = sm[row + 12u + bc];
            [[unroll]] for (uint r = 0u; r < 8u; r++) {
                const float a = r < 4u ? ga[r] : gb[r - 4u];
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    acc[8u * r + c] = fma(a, xa[c], acc[8u * r + c]);
                    acc[8u * r + 4u + c] = fma(a, xb[c], acc[8u * r + 4u + c]);
                }
            }
        }
    }

    // The slices' blocks added, two slices a round; invocation l owns vec4 l of the tile.
    vec4 tot = vec4(0.0);
    for (uint s0 = 0u; s0 < 16u; s0 += 2u) {
        barrier();
        if (slice == s0 || slice == s0 + 1u) {
            const uint base = (slice - s0) * 256u;
            [[unroll]] for (uint r = 0u; r < 8u; r++) {
                const uint trow = r < 4u ? 4u * br + r : 8u + 4u * br + r - 4u;
                sm[base + trow * 16u + bc] =
                    vec4(acc[8u * r], acc[8u * r + 1u], acc[8u * r + 2u], acc[8u * r + 3u]);
                sm[base + trow * 16u + 8u + bc] = vec4(acc[8u * r + 4u], acc[8u * r + 5u],
                                                       acc[8u * r + 6u], acc[8u * r + 7u]);
            }
        }
        barrier();
        tot += sm[l] + sm[256u + l];
    }

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
