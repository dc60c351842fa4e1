#version 450
// counter_apply8_f32: counter_apply_f32 (pass 3 of the counter layer's update) by 8 x 8 blocks
// (counter_grad8.glsl), the opt-in MOTIFCL_COUNTER_APPLY8 (tuning). The same tile of W (16 rows
// by 64 columns), grid, bindings, push constants and step as counter_apply_f32; G exact in
// counter_grad8.glsl's order, which the CPU reference repeats to check the codes byte for byte.
//
// Invocation l steps the 4 weights of its vec4 of G (row o0 + l / 16, columns i0 + 4 (l % 16)
// ..) and leaves their codes in shared memory; the tile's 64 owners (invocations 0..63, row
// o0 + l / 4, 16 columns from i0 + 16 (l % 4)) pack 16 codes each into three whole 32-bit words
// of the state, which no other invocation reads or writes in this dispatch.
//
//   workgroup size : 256 (specialization constant 0: the host gives 256)
//   HYPER_BUF      : specialization constant 1: 0, the seed is the push constant's; 1, it is
//                    the hyper buffer's word 4 plus the push constant (wrapping)
//   set 0 binding 0: x (readonly vec4[], [N, in]); binding 1: grad_out (readonly, [N, out]);
//   binding 2: rowfac (readonly float[], [out, 2]); binding 3: hyper (readonly uint[], bound
//   but unread with HYPER_BUF 0); binding 4: the packed state (uint[])
//   push constants : { uint n, out_dim, in_dim, C, seed; }
//   grid           : (ceil(in / 64), ceil(out / 16), 1)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 256) in;
layout(constant_id = 1) const uint HYPER_BUF = 0u;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo { float go_data[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufGo4 { vec4 go4_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufRowfac { float rowfac[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufHyper { uint hyper_words[]; };
layout(std430, set = 0, binding = 4) buffer BufPacked { uint packed_words[]; };

layout(push_constant) uniform Push { uint n, out_dim, in_dim, C, seed; } pc;

#include "counter.glsl"
#include "counter_grad8.glsl"
#include "hash.glsl"

shared uint code_sm[1024];

void main() {
    const uint l = gl_LocalInvocationID.x;
    const uint o0 = gl_WorkGroupID.y * COUNTER8_TILE_ROWS;
    const uint i0 = gl_WorkGroupID.x * COUNTER8_TILE_COLS;
    const vec4 g = counter_grad8_tile(pc.n, pc.out_dim, pc.in_dim, o0, i0);

    const uint seed = HYPER_BUF != 0u ? hyper_words[4] + pc.seed : pc.seed;
    const uint o = o0 + l / 16u;
    const uint i = i0 + 4u * (l % 16u);
    if (o < pc.out_dim && i < pc.in_dim) {
        const uint e0 = o * pc.in_dim + i;
        const uint w0 = e0 / 16u * 3u;
        const uvec3 w = uvec3(packed_words[w0], packed_words[w0 + 1u], packed_words[w0 + 2u]);
        const float ratio = rowfac[2u * o];
        const float k = rowfac[2u * o + 1u];
        const int C = int(pc.C);
        const float limit = float(3 * C);
        [[unroll]] for (uint j = 0u; j < 4u; j++) {
            const uint code = counter_code16(w, e0 % 16u + j);
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
            code_sm[4u * l + j] = counter_encode(tn, cn, pc.C);
        }
    }
    barrier();
    // Owner l: vec4s 4 l .. 4 l + 3 of the tile, codes 16 l .. 16 l + 15.
    const uint oo = o0 + l / 4u;
    const uint io = i0 + 16u * (l % 4u);
    if (l >= 64u || oo >= pc.out_dim || io >= pc.in_dim) {
        return;
    }
    uint codes[16];
    [[unroll]] for (uint j = 0u; j < 16u; j++) {
        codes[j] = code_sm[16u * l + j];
    }
    const uvec3 wn = counter_pack16(codes);
    const uint wo = (oo * pc.in_dim + io) / 16u * 3u;
    packed_words[wo] = wn.x;
    packed_words[wo + 1u] = wn.y;
    packed_words[wo + 2u] = wn.z;
}
