#version 450
// counter_apply_f32: pass 3 of the counter layer's update (MEMORY_NATIVE.md section 1): per
// tile of W of 16 rows by 64 columns, G = grad_out^T x is computed again, exactly, and every
// weight's state steps:
//   val = c * ratio + G * k                 (ratio, k: the row's factors, counter_rows_f32)
//   val clamped to [-3C, 3C]                (the outcome is the same: |r| >= C(t+2) hits a wall)
//   u = (h(seed ^ h(e)) & 0xffffff) / 2^24, e = o * in + i
//   r = floor(val) + (u < val - floor(val) ? 1 : 0)
//   carry = trunc(r / C); rem = r - carry * C; t' = clamp(t + carry, -1, 1)
//   where the clamp engaged, rem = sign(r) * (C - 1); c' = clamp(rem, -(C - 1), C - 1)
//
// G's order, which the CPU reference repeats (tests/ref/ref_counter.c): the batch's N rows are
// cut into COUNTER_SEGMENTS = 16 segments of L = ceil(N / 16) rows (the last ones shorter or
// empty). Segment k's sum S_k starts at +0.0 and adds grad_out[n, o] * x[n, i] for its rows n
// in increasing order; G = (((S_0 + S_1) + S_2) + ...) + S_15. Each product and each sum is
// rounded on its own (precise: no fused multiply-add). Which invocation sums what changes no
// bit.
//
// The workgroup's WG / 16 slices of 16 invocations take a segment each at a time (WG 256: all
// 16 at once), each invocation an 8 x 8 block of the tile (two vec4 loads of grad_out and two
// of x a batch row feed 64 products). The segments' blocks go through shared memory, two a
// round, to the tile's 64 owners (invocations 0..63), which add them in segment order: owner u
// holds row u / 4's 16 weights from column 16 (u % 4), three whole 32-bit words of the packed
// state, which no other invocation reads or writes in this dispatch.
//
//   workgroup size : 64, 128 or 256 (specialization constant 0)
//   HYPER_BUF      : specialization constant 1: 0, the seed is the push constant's; 1, it is
//                    the hyper buffer's word 4 plus the push constant (wrapping), a step's
//                    seed that a replayed recording reads anew, offset per layer
//   set 0 binding 0: x (readonly vec4[], [N, in]); binding 1: grad_out (readonly, [N, out]);
//   binding 2: rowfac (readonly float[], [out, 2]); binding 3: hyper (readonly uint[], bound
//   but unread with HYPER_BUF 0); binding 4: the packed state (uint[])
//   push constants : { uint n, out_dim, in_dim, C, seed; }
//   grid           : (ceil(in / 64), ceil(out / 16), 1)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint HYPER_BUF = 0u;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo { float go_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo4 { vec4 go4_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufRowfac { float rowfac[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufHyper { uint hyper_words[]; };
layout(std430, set = 0, binding = 4) buffer BufPacked { uint packed_words[]; };

layout(push_constant) uniform Push { uint n, out_dim, in_dim, C, seed; } pc;

#include "counter.glsl"
#include "counter_tile.glsl"
#include "hash.glsl"

#define COUNTER_SEGMENTS 16u

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint slice = l / 16u, b = l % 16u;
    const uint br = b / 8u, bc = b % 8u;
    const uint o0 = gl_WorkGroupID.y * COUNTER_TILE_ROWS;
    const uint i0 = gl_WorkGroupID.x * COUNTER_TILE_COLS;
    const uint ob = o0 + 8u * br, ib = i0 + 8u * bc;
    const uint seg_len = (pc.n + COUNTER_SEGMENTS - 1u) / COUNTER_SEGMENTS;
    const bool owner = l < 64u;

    precise vec4 tot[4];
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        tot[k] = vec4(0.0);
    }
    for (uint seg0 = 0u; seg0 < COUNTER_SEGMENTS; seg0 += COUNTER_SLICES) {
        const uint start = min((seg0 + slice) * seg_len, pc.n);
        const uint end = min(start + seg_len, pc.n);
        precise float acc[64];
        [[unroll]] for (uint j = 0u; j < 64u; j++) {
            acc[j] = 0.0;
        }
        vec4 g0 = counter_load_go(start, end, ob), g1 = counter_load_go(start, end, ob + 4u);
        vec4 x0 = counter_load_x(start, end, ib), x1 = counter_load_x(start, end, ib + 4u);
        for (uint n = start; n < end; n++) {
            const vec4 ga = g0, gb = g1, xa = x0, xb = x1;
            g0 = counter_load_go(n + 1u, end, ob);
            g1 = counter_load_go(n + 1u, end, ob + 4u);
            x0 = counter_load_x(n + 1u, end, ib);
            x1 = counter_load_x(n + 1u, end, ib + 4u);
            [[unroll]] for (uint r = 0u; r < 8u; r++) {
                const float a = r < 4u ? ga[r] : gb[r - 4u];
                [[unroll]] for (uint c = 0u; c < 4u; c++) {
                    acc[8u * r + c] = acc[8u * r + c] + a * xa[c];
                    acc[8u * r + 4u + c] = acc[8u * r + 4u + c] + a * xb[c];
                }
            }
        }
        // This round's segments to the owners, two a round, added in segment order.
        for (uint s0 = 0u; s0 < COUNTER_SLICES; s0 += 2u) {
            barrier();
            if (slice == s0 || slice == s0 + 1u) {
                counter_block_store((slice - s0) * 256u, br, bc, acc);
            }
            barrier();
            if (owner) {
                [[unroll]] for (uint h = 0u; h < 2u; h++) {
                    [[unroll]] for (uint k = 0u; k < 4u; k++) {
                        const vec4 p = counter_red[h * 256u + 4u * l + k];
                        tot[k] = seg0 + s0 + h == 0u ? p : tot[k] + p;
                    }
                }
            }
        }
    }

    const uint seed = HYPER_BUF != 0u ? hyper_words[4] + pc.seed : pc.seed;
    const uint o = o0 + (l >> 2);
    const uint i = i0 + 16u * (l & 3u);
    if (!owner || o >= pc.out_dim || i >= pc.in_dim) {
        return;
    }
    const uint e0 = o * pc.in_dim + i;
    const uint w0 = e0 / 16u * 3u;
    const uvec3 w = uvec3(packed_words[w0], packed_words[w0 + 1u], packed_words[w0 + 2u]);
    const float ratio = rowfac[2u * o];
    const float k = rowfac[2u * o + 1u];
    const int C = int(pc.C);
    const float limit = float(3 * C);
    uint codes[16];
    [[unroll]] for (uint j = 0u; j < 16u; j++) {
        const uint code = counter_code16(w, j);
        const int t = counter_t(code, pc.C);
        const int c = counter_c(code, pc.C);
        precise float val = float(c) * ratio + tot[j / 4u][j % 4u] * k;
        val = min(max(val, -limit), limit);
        const float fl = floor(val);
        precise float frac = val - fl;
        const uint h = mcl_hash(seed ^ mcl_hash(e0 + j));
        const float u = float(h & 0xffffffu) * (1.0 / 16777216.0);
        const int r = int(fl) + (u < frac ? 1 : 0);
        const int carry = r >= 0 ? r / C : -((-r) / C);
        int rem = r - carry * C;
        int tn = t + carry;
        if (tn > 1 || tn < -1) {
            tn = clamp(tn, -1, 1);
            rem = r > 0 ? C - 1 : -(C - 1);
        }
        const int cn = clamp(rem, -(C - 1), C - 1);
        codes[j] = counter_encode(tn, cn, pc.C);
    }
    const uvec3 wn = counter_pack16(codes);
    packed_words[w0] = wn.x;
    packed_words[w0 + 1u] = wn.y;
    packed_words[w0 + 2u] = wn.z;
}
