// counter_grad8.glsl: a tile of the counter layer's weight gradient G = grad_out^T x by 8 x 8
// blocks an invocation (counter_stats8_f32, counter_apply8_f32), computed on the fly and never
// stored (MEMORY_NATIVE.md section 1). The tile is counter_grad.glsl's (16 rows of W by 64
// columns, the same grid); the order of G's sums is its own, which the CPU reference repeats
// (tests/ref/ref_counter.c, ref_counter_grad_order with 16 segments, fused):
//
// the batch's N rows are cut into 16 segments of L = ceil(N / 16) rows (the last ones shorter
// or empty). Segment k's sum S_k[o, i] starts at +0.0 and takes fma(grad_out[n, o], x[n, i],
// S_k) for its rows n in increasing order (one rounding a product and sum); G = +0.0 + S_0 +
// S_1 + ... + S_15, added left to right, each sum rounded. Which invocation sums what does not
// change a bit.
//
// The workgroup (256 invocations) is 16 slices of 16; slice k sums segment k. It stages 64
// batch rows at a time in shared memory, 4 of each segment (each row's 16 values of grad_out
// and 64 of x, 20 vec4s; every invocation loads five of the 1,280, the next chunk's issued
// into registers before the sums over this one). Invocation b of a slice sums an 8 x 8 block of
// the tile: rows 4 (b / 8) + {0..3, 8..11}, columns 4 (b % 8) + {0..3, 32..35}, so that each
// batch row costs it four 128-bit reads of shared memory for 64 products (the 4 x 4 blocks of
// counter_grad.glsl: two for 16), and the eight invocations of a quarter subgroup read
// consecutive vec4s of x. The slices' blocks are then added through shared memory in segment
// order, two slices a round; invocation l ends with vec4 l of the tile: row l / 16, columns
// 4 (l % 16) .. 4 (l % 16) + 3.
//
// The includer declares, before including this file, the inputs as
//   readonly buffer ... { vec4 x4_data[]; };    x, [N, in]
//   readonly buffer ... { float go_data[]; };   grad_out, [N, out]
//   readonly buffer ... { vec4 go4_data[]; };   grad_out again, on the same binding
// and a workgroup of 256 invocations. Shared memory: 20 KB (counter8_sm).
#ifndef COUNTER_GRAD8_GLSL
#define COUNTER_GRAD8_GLSL

#define COUNTER8_TILE_ROWS 16u
#define COUNTER8_TILE_COLS 64u
#define COUNTER8_SEGMENTS 16u
#define COUNTER8_ROWS 4u
#define COUNTER8_ROW_VEC4 20u
#define COUNTER8_LOADS 5u

// A chunk: [segment][4 rows][20] vec4s (grad_out's 4, then x's 16); later two slices' blocks
// of the tile (2 x 256 vec4s, tile row r: vec4s 16 r .. 16 r + 15).
shared vec4 counter8_sm[COUNTER8_SEGMENTS * COUNTER8_ROWS * COUNTER8_ROW_VEC4];

// Staged vec4 q of chunk c: 0 past its segment, past out or past in (adding +-0.0 products,
// which change no sum: none is ever -0.0, each starting at +0.0).
vec4 counter8_load(uint N, uint L, uint out_dim, uint in_dim, uint o0, uint i0, uint c,
                   uint q) {
    const uint srow = q / COUNTER8_ROW_VEC4, part = q % COUNTER8_ROW_VEC4;
    const uint seg = srow / COUNTER8_ROWS;
    const uint n = seg * L + c * COUNTER8_ROWS + srow % COUNTER8_ROWS;
    if (n >= min((seg + 1u) * L, N)) {
        return vec4(0.0);
    }
    if (part < 4u) {
        const uint o = o0 + 4u * part;
        if (out_dim % 4u == 0u) {
            return o < out_dim ? go4_data[(n * out_dim + o) / 4u] : vec4(0.0);
        }
        vec4 v = vec4(0.0);
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            v[k] = o + k < out_dim ? go_data[n * out_dim + o + k] : 0.0;
        }
        return v;
    }
    const uint i = i0 + 4u * (part - 4u);
    return i < in_dim ? x4_data[(n * in_dim + i) / 4u] : vec4(0.0);
}

// Vec4 l of the tile's G (l the local invocation): row o0 + l / 16, columns i0 + 4 (l % 16)
// .. + 3 (0 outside W). Called by every invocation of the workgroup (it holds barriers).
vec4 counter_grad8_tile(uint N, uint out_dim, uint in_dim, uint o0, uint i0) {
    const uint l = gl_LocalInvocationID.x;
    const uint slice = l / 16u, b = l % 16u;
    const uint br = b / 8u, bc = b % 8u;
    const uint L = (N + COUNTER8_SEGMENTS - 1u) / COUNTER8_SEGMENTS;
    const uint chunks = (L + COUNTER8_ROWS - 1u) / COUNTER8_ROWS;

    // acc[8 r + c]: tile row 4 br + r (r < 4) or 8 + 4 br + r - 4, column 4 bc + c (c < 4)
    // or 32 + 4 bc + c - 4.
    precise float acc[64];
    [[unroll]] for (uint j = 0u; j < 64u; j++) {
        acc[j] = 0.0;
    }
    vec4 st[COUNTER8_LOADS];
    [[unroll]] for (uint k = 0u; k < COUNTER8_LOADS; k++) {
        st[k] = counter8_load(N, L, out_dim, in_dim, o0, i0, 0u, l + 256u * k);
    }
    for (uint c = 0u; c < chunks; c++) {
        barrier();  // the last chunk's sums are done
        [[unroll]] for (uint k = 0u; k < COUNTER8_LOADS; k++) {
            counter8_sm[l + 256u * k] = st[k];
        }
        barrier();
        if (c + 1u < chunks) {
            [[unroll]] for (uint k = 0u; k < COUNTER8_LOADS; k++) {
                st[k] = counter8_load(N, L, out_dim, in_dim, o0, i0, c + 1u, l + 256u * k);
            }
        }
        [[unroll]] for (uint rr = 0u; rr < COUNTER8_ROWS; rr++) {
            const uint row = (slice * COUNTER8_ROWS + rr) * COUNTER8_ROW_VEC4;
            const vec4 ga = counter8_sm[row + br], gb = counter8_sm[row + 2u + br];
            const vec4 xa = counter8_sm[row + 4u + bc], xb = counter8_sm[row + 12u + bc];
            [[unroll]] for (uint r = 0u; r < 8u; r++) {
                const float a = r < 4u ? ga[r] : gb[r - 4u];
                [[unroll]] for (uint k = 0u; k < 4u; k++) {
                    acc[8u * r + k] = fma(a, xa[k], acc[8u * r + k]);
                    acc[8u * r + 4u + k] = fma(a, xb[k], acc[8u * r + 4u + k]);
                }
            }
        }
    }

    // The segments' sums added in order, two slices a round; invocation l owns vec4 l.
    precise vec4 tot = vec4(0.0);
    for (uint s0 = 0u; s0 < COUNTER8_SEGMENTS; s0 += 2u) {
        barrier();
        if (slice == s0 || slice == s0 + 1u) {
            const uint base = (slice - s0) * 256u;
            [[unroll]] for (uint r = 0u; r < 8u; r++) {
                const uint trow = r < 4u ? 4u * br + r : 8u + 4u * br + r - 4u;
                counter8_sm[base + trow * 16u + bc] =
                    vec4(acc[8u * r], acc[8u * r + 1u], acc[8u * r + 2u], acc[8u * r + 3u]);
                counter8_sm[base + trow * 16u + 8u + bc] =
                    vec4(acc[8u * r + 4u], acc[8u * r + 5u], acc[8u * r + 6u],
                         acc[8u * r + 7u]);
            }
        }
        barrier();
        tot = tot + counter8_sm[l];
        tot = tot + counter8_sm[256u + l];
    }
    return tot;
}

#endif
