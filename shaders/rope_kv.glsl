// rope_kv.glsl: the body of rope_kv_f32.comp and rope_kv_f16.comp (see rope_kv_f32.comp).
#ifndef ROPE_KV_GLSL
#define ROPE_KV_GLSL

layout(local_size_x_id = 0, local_size_x = 256) in;

#define ROPE_NO_ROTATE
#include "rope.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufK { float k[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufV { float v[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufFreq { vec2 freq[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufIds { uint ids[]; };
layout(std430, set = 0, binding = 4) buffer BufQ { float q[]; };
// The caches in f32, or with KV_F16 defined in 16-bit floats (values rounded to nearest).
#ifdef KV_F16
#extension GL_EXT_shader_16bit_storage : require
layout(std430, set = 0, binding = 5) writeonly buffer BufKC { float16_t kc[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufVC { float16_t vc[]; };
#define KV_VALUE(x) float16_t(x)
#else
layout(std430, set = 0, binding = 5) writeonly buffer BufKC { float kc[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufVC { float vc[]; };
#define KV_VALUE(x) (x)
#endif

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
        vc[dst] = KV_VALUE(v[src]);
        vc[dst + 1u] = KV_VALUE(v[src + 1u]);
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
        kc[dst + at.x] = KV_VALUE(x0 * cs.x - x1 * cs.y);
        kc[dst + at.y] = KV_VALUE(x0 * cs.y + x1 * cs.x);
    }
}

#endif
