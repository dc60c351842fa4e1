// counter_tile.glsl: what the counter layer's update passes share (counter_stats_f32,
// counter_apply_f32): a tile of W of COUNTER_TILE_ROWS = 16 rows by COUNTER_TILE_COLS = 64
// columns, one workgroup of WG invocations (64, 128 or 256: the includer's local_size_x,
// specialization constant 0) in COUNTER_SLICES = WG / 16 slices of 16. An invocation of a
// slice sums an 8 x 8 block of the tile's G = grad_out^T x: rows 8 (b / 8) .., columns
// 8 (b % 8) .., b its index in the slice. The blocks reach the includer's owners through
// counter_red, two slices at a time.
//
// The includer declares, before including this file, the inputs as
//   readonly buffer ... { vec4 x4_data[]; };    x, [N, in]
//   readonly buffer ... { float go_data[]; };   grad_out, [N, out]
//   readonly buffer ... { vec4 go4_data[]; };   grad_out again, on the same binding
// and the push constants pc with out_dim and in_dim. Shared memory: 8 KB (counter_red).
#ifndef COUNTER_TILE_GLSL
#define COUNTER_TILE_GLSL

#define COUNTER_TILE_ROWS 16u
#define COUNTER_TILE_COLS 64u

const uint COUNTER_SLICES = gl_WorkGroupSize.x / 16u;

// Two slices' blocks, each the tile as 256 vec4s (row r: vec4s 16 r .. 16 r + 15).
shared vec4 counter_red[512];

// 4 floats of grad_out row n from column o: 0 past out_dim and for n >= end.
vec4 counter_load_go(uint n, uint end, uint o) {
    if (n >= end) {
        return vec4(0.0);
    }
    if (pc.out_dim % 4u == 0u) {
        return o < pc.out_dim ? go4_data[(n * pc.out_dim + o) / 4u] : vec4(0.0);
    }
    vec4 v = vec4(0.0);
    [[unroll]] for (uint c = 0u; c < 4u; c++) {
        v[c] = o + c < pc.out_dim ? go_data[n * pc.out_dim + o + c] : 0.0;
    }
    return v;
}

// 4 floats of x row n from column i: 0 for n >= end (in is a multiple of 16, so a vec4 lies
// wholly inside the row or wholly past it).
vec4 counter_load_x(uint n, uint end, uint i) {
    return n < end && i < pc.in_dim ? x4_data[(n * pc.in_dim + i) / 4u] : vec4(0.0);
}

// An invocation's 8 x 8 block (acc[8 r + c]) into counter_red from vec4 `base`.
void counter_block_store(uint base, uint br, uint bc, float acc[64]) {
    [[unroll]] for (uint r = 0u; r < 8u; r++) {
        const uint at = base + (8u * br + r) * 16u + 2u * bc;
        counter_red[at] = vec4(acc[8u * r], acc[8u * r + 1u], acc[8u * r + 2u], acc[8u * r + 3u]);
        counter_red[at + 1u] =
            vec4(acc[8u * r + 4u], acc[8u * r + 5u], acc[8u * r + 6u], acc[8u * r + 7u]);
    }
}

#endif
