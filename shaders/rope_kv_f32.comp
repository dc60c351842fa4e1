#version 450
// rope_kv_f32: the position-dependent half of a recorded decode step, for rows of one token
// each: RoPE on a row's q heads in place, RoPE on its k heads written into the key cache of
// its sequence at its position, and its v heads copied into the value cache there. Positions
// and sequences are read from a buffer the host writes before each replay (ids[pos_slot + r],
// ids[seq_slot + r]), so the recorded step serves every position. Each pair's frequency comes from a table (mcl_rope_table_values),
// and the angle is reduced as rope_table_f32's (rope.glsl), so that a replay gives the bits
// that mcl_rope_table gives for the same position. One invocation per rotated pair or per
// two copied values; pairs are (i, i + Dh / 2) when split_half, else (2i, 2i + 1).
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: k    [rows, Hkv, Dh] (readonly float[])
//   set 0 binding 1: v    [rows, Hkv, Dh] (readonly float[])
//   set 0 binding 2: freq (readonly vec2[Dh / 2]): pair i's turns per position, hi + lo
//   set 0 binding 3: ids  (readonly uint[]): row r's position at ids[pos_slot + r], its
//                    sequence at ids[seq_slot + r] (sequence 0 for all when seq_slot is ~0)
//   set 0 binding 4: q    [rows, Hq, Dh] (float[]): rotated in place
//   set 0 binding 5: kc   [sequences, S, Hkv, Dh] (writeonly float[]): the key caches
//   set 0 binding 6: vc   [sequences, S, Hkv, Dh] (writeonly float[]): the value caches
//   push constants : see Push; rows row0 .. row0 + count - 1 are done, one invocation per
//                    pair or value pair of a row, rows along y
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#define ROPE_NO_ROTATE
#include "rope.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufK { float k[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufV { float v[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufFreq { vec2 freq[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufIds { uint ids[]; };
layout(std430, set = 0, binding = 4) buffer BufQ { float q[]; };
layout(std430, set = 0, binding = 5) writeonly buffer BufKC { float kc[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufVC { float vc[]; };

layout(push_constant) uniform Push {
    uint row0;        // the first row of q, k and v done
    uint pos_slot;    // ids[pos_slot + r]: row row0 + r's position
    uint seq_slot;    // ids[seq_slot + r]: its sequence; ~0: sequence 0
    uint heads_q;     // Hq
    uint heads_kv;    // Hkv
    uint half_dim;    // Dh / 2
    uint split_half;  // 0: pairs (2i, 2i + 1); 1: pairs (i, i + Dh / 2)
    uint seq_kv;      // S: positions a sequence's cache holds
    uint sequences;   // caches in kc and vc
} pc;

// Indices of pair i's two elements in a head vector.
uvec2 pair(uint i) {
    return pc.split_half != 0u ? uvec2(i, i + pc.half_dim) : uvec2(2u * i, 2u * i + 1u);
}

void main() {
    const uint p = gl_GlobalInvocationID.x;
    const uint r = gl_WorkGroupID.y;
    const uint row = pc.row0 + r;
    const uint position = ids[pc.pos_slot + r];
    const uint seq = pc.seq_slot == 0xFFFFFFFFu ? 0u : ids[pc.seq_slot + r];
    const uint q_pairs = pc.heads_q * pc.half_dim;
    const uint kv_pairs = pc.heads_kv * pc.half_dim;
    if (p >= q_pairs + 2u * kv_pairs || position >= pc.seq_kv || seq >= pc.sequences) {
        return;
    }
    const uint dh = 2u * pc.half_dim;
    const uint slot = seq * pc.seq_kv + position;  // the cache row
    if (p >= q_pairs + kv_pairs) {
        // Two values of v into the cache.
        const uint e = 2u * (p - q_pairs - kv_pairs);
        const uint src = row * pc.heads_kv * dh + e;
        const uint dst = slot * pc.heads_kv * dh + e;
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
        const uint base = (row * pc.heads_q + head) * dh;
        const float x0 = q[base + at.x];
        const float x1 = q[base + at.y];
        q[base + at.x] = x0 * cs.x - x1 * cs.y;
        q[base + at.y] = x0 * cs.y + x1 * cs.x;
    } else {
        const uint src = (row * pc.heads_kv + head) * dh;
        const uint dst = (slot * pc.heads_kv + head) * dh;
        const float x0 = k[src + at.x];
        const float x1 = k[src + at.y];
        kc[dst + at.x] = x0 * cs.x - x1 * cs.y;
        kc[dst + at.y] = x0 * cs.y + x1 * cs.x;
    }
}
