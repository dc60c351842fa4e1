#version 450
// counter_apply_f32: pass 3 of the counter layer's update (MEMORY_NATIVE.md section 1): per
// tile of W (counter_grad.glsl) G is computed again, and every weight's state steps:
//   val = c * ratio + G * k                 (ratio, k: the row's factors, counter_rows_f32)
//   val clamped to [-3C, 3C]                (the outcome is the same: |r| >= C(t+2) hits a wall)
//   u = (h(seed ^ h(e)) & 0xffffff) / 2^24, e = o * in + i
//   r = floor(val) + (u < val - floor(val) ? 1 : 0)
//   carry = trunc(r / C); rem = r - carry * C; t' = clamp(t + carry, -1, 1)
//   where the clamp engaged, rem = sign(r) * (C - 1); c' = clamp(rem, -(C - 1), C - 1)
// Each invocation owns 16 consecutive weights of a row: three whole 32-bit words of the packed
// state, which no other invocation reads or writes in this dispatch.
//
//   workgroup size : 64, 128 or 256 (specialization constant 0: groups of 4 x rows summing
//                    the batch's segments, counter_grad.glsl; the first group owns the weights)
//   constant 2     : batch rows a chunk of each group's sums of G (counter_grad.glsl)
//   constant 3     : rows of W a tile, 16, 32 or 64 (counter_grad.glsl)
//   HYPER_BUF      : specialization constant 1: 0, the seed is the push constant's; 1, it is
//                    the hyper buffer's word 4 plus the push constant (wrapping), a step's
//                    seed that a replayed recording reads anew, offset per layer
//   set 0 binding 0: x (readonly vec4[], [N, in]); binding 1: grad_out (readonly, [N, out]);
//   binding 2: rowfac (readonly float[], [out, 2]); binding 3: hyper (readonly uint[], bound
//   but unread with HYPER_BUF 0); binding 4: the packed state (uint[])
//   push constants : { uint n, out_dim, in_dim, C, seed; }
//   grid           : (ceil(in / 64), ceil(out / rows), 1)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint HYPER_BUF = 0u;

layout(std430, set = 0, binding = 1) readonly buffer BufGo { float go_data[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo4 { vec4 go4_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufRowfac { float rowfac[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufHyper { uint hyper_words[]; };
layout(std430, set = 0, binding = 4) buffer BufPacked { uint packed_words[]; };

layout(push_constant) uniform Push { uint n, out_dim, in_dim, C, seed; } pc;

#include "counter.glsl"
#include "counter_grad.glsl"
#include "hash.glsl"

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint o0 = gl_WorkGroupID.y * COUNTER_TILE_ROWS;
    const uint i0 = gl_WorkGroupID.x * COUNTER_TILE_COLS;
    float g[16];
    counter_grad_tile(pc.n, pc.out_dim, pc.in_dim, o0, i0, g);

    const uint seed = HYPER_BUF != 0u ? hyper_words[4] + pc.seed : pc.seed;
    const uint o = o0 + (l >> 2);
    const uint i = i0 + 16u * (l & 3u);
    if (l >= COUNTER_OWNERS || o >= pc.out_dim || i >= pc.in_dim) {
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
    for (uint j = 0u; j < 16u; j++) {
        const uint code = counter_code16(w, j);
        const int t = counter_t(code, pc.C);
        const int c = counter_c(code, pc.C);
        precise float val = float(c) * ratio + g[j] * k;
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
