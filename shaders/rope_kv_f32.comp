#version 450
// rope_kv_f32: the position-dependent half of a recorded decode step, for one token row:
// RoPE on its q heads in place, RoPE on its k heads written into the key cache at the
// token's position, and its v heads copied into the value cache there. The position is read
// from a buffer the host writes before each replay (pos[pos_slot]), so the recorded step
// serves every position. Each pair's frequency comes from a table (mcl_rope_table_values),
// and the angle is reduced as rope_table_f32's (rope.glsl), so that a replay gives the bits
// that mcl_rope_table gives for the same position. One invocation per rotated pair or per
// two copied values; pairs are (i, i + Dh / 2) when split_half, else (2i, 2i + 1).
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: k    [rows, Hkv, Dh] (readonly float[])
//   set 0 binding 1: v    [rows, Hkv, Dh] (readonly float[])
//   set 0 binding 2: freq (readonly vec2[Dh / 2]): pair i's turns per position, hi + lo
//   set 0 binding 3: pos  (readonly uint[]): the token's position at pos[pos_slot]
//   set 0 binding 4: q    [rows, Hq, Dh] (float[]): rotated in place
//   set 0 binding 5: kc   [S, Hkv, Dh] (writeonly float[]): the key cache
//   set 0 binding 6: vc   [S, Hkv, Dh] (writeonly float[]): the value cache
//   push constants : see Push
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#define ROPE_NO_ROTATE
#include "rope.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufK { float k[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufV { float v[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufFreq { vec2 freq[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufPos { uint pos[]; };
layout(std430, set = 0, binding = 4) buffer BufQ { float q[]; };
layout(std430, set = 0, binding = 5) writeonly buffer BufKC { float kc[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufVC { float vc[]; };

layout(push_constant) uniform Push {
    uint row;         // the token's row of q, k and v
    uint pos_slot;    // the element of pos[] that holds its position
    uint heads_q;     // Hq
    uint heads_kv;    // Hkv
    uint half_dim;    // Dh / 2
    uint split_half;  // 0: pairs (2i, 2i + 1); 1: pairs (i, i + Dh / 2)
    uint seq_kv;      // S: positions the caches hold
} pc;

// Indices of pair i's two elements in a head vector.
uvec2 pair(uint i) {
    return pc.split_half != 0u ? uvec2(i, i + pc.half_dim) : uvec2(2u * i, 2u * i + 1u);
}

void main() {
    const uint p = gl_GlobalInvocationID.x;
    const uint position = pos[pc.pos_slot];
    const uint q_pairs = pc.heads_q * pc.half_dim;
    const uint kv_pairs = pc.heads_kv * pc.half_dim;
    if (p >= q_pairs + 2u * kv_pairs || position >= pc.seq_kv) {
        return;
    }
    const uint dh = 2u * pc.half_dim;
    if (p >= q_pairs + kv_pairs) {
        // Two values of v into the cache.
        const uint e = 2u * (p - q_pairs - kv_pairs);
        const uint src = pc.row * pc.heads_kv * dh + e;
        const uint dst = position * pc.heads_kv * dh + e;
        vc[dst] = v[src];
        vc[dst + 1u] = v[src + 1u];
        return;
    }
    const bool is_q = p < q_pairs;
    const uint local = is_q ? p : p - q_pairs;
    const uint head = local / pc.half_dim;
    const uint i = local - head * pc.half_dim;
    const vec2 cs = rope_cos_sin(float(position), freq[i]);
    const uvec2 at = pair(i);
    if (is_q) {
        const uint base = (pc.row * pc.heads_q + head) * dh;
        const float x0 = q[base + at.x];
        const float x1 = q[base + at.y];
        q[base + at.x] = x0 * cs.x - x1 * cs.y;
        q[base + at.y] = x0 * cs.y + x1 * cs.x;
    } else {
        const uint src = (pc.row * pc.heads_kv + head) * dh;
        const uint dst = (position * pc.heads_kv + head) * dh;
        const float x0 = k[src + at.x];
        const float x1 = k[src + at.y];
        kc[dst + at.x] = x0 * cs.x - x1 * cs.y;
        kc[dst + at.y] = x0 * cs.y + x1 * cs.x;
    }
}
