// attention_decode.glsl: the body of attention_decode_f32.comp and attention_decode_f16kv.comp
// (lengths and sequences from a buffer; see attention_decode_f32.comp), and with DECODE_ROPE
// defined of attention_decode_rope_f32.comp and attention_decode_rope_f16kv.comp, which also
// rotate q and the new key and write the new key and value into the cache.
#ifndef ATTENTION_DECODE_GLSL
#define ATTENTION_DECODE_GLSL

#ifdef DECODE_ROPE
// Reads q, lens, the RoPE table, the new k and v; writes the caches, then the split's outputs.
#define LENS_BINDING 1
#define ATT_K_BINDING 5
#define ATT_V_BINDING 6
#define ATT_KV_ACCESS readonly
#define SPLIT_OUT_BINDING 7
#else
#define LENS_BINDING 3
#define SPLIT_OUT_BINDING 4
#endif
layout(std430, set = 0, binding = LENS_BINDING) readonly buffer BufLens { uint lens[]; };
// The batch of the workgroup, set first thing in main (attention_split.glsl).
uint split_batch;
#define SPLIT_BATCH split_batch
#define KV_LEN min(lens[pc.len_slot + split_batch], pc.seq_kv)
#define KV_BATCH(b) (pc.seq_slot == 0xFFFFFFFFu ? (b) : lens[pc.seq_slot + (b)])
#define SPLIT_KEYS (((KV_LEN + pc.splits - 1u) / pc.splits + BK - 1u) / BK * BK)
#define SPLIT_COMBINE

#ifdef DECODE_ROPE
// The loop's loads (attention_tile.glsl): q rotated as it is loaded, and the new key (at the
// batch's position) from k_new and v_new rather than from the cache, which this dispatch
// writes. Defined below, after the buffers.
vec4 rope_load_q(uint b, uint hkv, uint rho, uint d4);
vec4 rope_load_k(uint b, uint hkv, uint s, uint d4);
vec4 rope_load_v(uint b, uint hkv, uint s, uint d4);
void rope_begin(uint b);
void rope_write(uint b, uint hkv, uint key_begin, uint key_end);
void rope_patch(uint b, uint hkv, uint s, uint d4, inout vec4 kk, inout vec4 vv);
bool rope_patched(uint b, uint s);
#define ATT_LOAD_Q(b, hkv, rho, d4) rope_load_q(b, hkv, rho, d4)
#define ATT_LOAD_K(b, hkv, s, d4) rope_load_k(b, hkv, s, d4)
#define ATT_LOAD_V(b, hkv, s, d4) rope_load_v(b, hkv, s, d4)
#define SPLIT_BEGIN(b) rope_begin(b)
#define SPLIT_AFTER(b, hkv, key_begin, key_end) rope_write(b, hkv, key_begin, key_end)
#define ATT_PATCH_KV(b, hkv, s, d4, kk, vv) rope_patch(b, hkv, s, d4, kk, vv)
#define ATT_PATCHED(b, s) rope_patched(b, s)
#endif

#include "attention_split.glsl"

#ifdef DECODE_ROPE
#define ROPE_NO_ROTATE
#include "rope.glsl"

layout(std430, set = 0, binding = 2) readonly buffer BufFreq { vec2 freq[]; };
// The new token's k and v [B, Hkv, D], as the q, k, v product wrote them.
layout(std430, set = 0, binding = 3) readonly buffer BufKNew { float k_new[]; };
layout(std430, set = 0, binding = 4) readonly buffer BufVNew { float v_new[]; };

// The caches again, written: the loop reads them through attention_tile.glsl's read-only k
// and v, never at the position written here.
#ifdef KV_F16
layout(std430, set = 0, binding = ATT_K_BINDING) writeonly buffer BufKW { float16_t k_out[]; };
layout(std430, set = 0, binding = ATT_V_BINDING) writeonly buffer BufVW { float16_t v_out[]; };
#define KV_STORE(x) float16_t(x)
// x rounded to the nearest 16-bit float (ties to even), kept as an f32: the value the cache
// holds. Rounded on the bits, because a compiler may fold float(float16_t(x)) back to x (one
// did: the new key then differed from the cached one it stands for). Exact over the 16-bit
// normal range; below it (|x| < 2^-14) the cache keeps fewer bits than this.
float kv_round(float x) {
    const uint b = floatBitsToUint(x);
    return uintBitsToFloat((b + 0xFFFu + ((b >> 13) & 1u)) & 0xFFFFE000u);
}
#define KV_ROUND(x) kv_round(x)
#else
#define KV_ROUND(x) (x)
layout(std430, set = 0, binding = ATT_K_BINDING) writeonly buffer BufKW { float k_out[]; };
layout(std430, set = 0, binding = ATT_V_BINDING) writeonly buffer BufVW { float v_out[]; };
#define KV_STORE(x) (x)
#endif

// The batch's position: its new key's index in the cache, and its rotation.
uint rope_pos;

void rope_begin(uint b) {
    rope_pos = lens[pc.pos_slot + b];
}

// Elements d4 * 4 .. + 3 of a head vector x rotated by rope_pos times each pair's turns, p the
// vec4 D / 2 away (the pairs' other halves where pc.split_half is 1; D a multiple of 8).
vec4 rope_apply(vec4 x, vec4 p, uint d4) {
    const uint half_dim = D / 2u;
    const float pos = float(rope_pos);
    vec4 y;
    if (pc.split_half != 0u) {
        const bool lo = d4 * 4u < half_dim;
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
            const uint d = d4 * 4u + i;
            const vec2 cs = rope_cos_sin(pos, freq[lo ? d : d - half_dim]);
            y[i] = lo ? x[i] * cs.x - p[i] * cs.y : p[i] * cs.y + x[i] * cs.x;
        }
    } else {
        [[unroll]] for (uint i = 0u; i < 4u; i += 2u) {
            const vec2 cs = rope_cos_sin(pos, freq[(d4 * 4u + i) / 2u]);
            y[i] = x[i] * cs.x - x[i + 1u] * cs.y;
            y[i + 1u] = x[i] * cs.y + x[i + 1u] * cs.x;
        }
    }
    return y;
}

uint rope_partner(uint d4) {
    return d4 < D4 / 2u ? d4 + D4 / 2u : d4 - D4 / 2u;
}

vec4 rope_load_q(uint b, uint hkv, uint rho, uint d4) {
    const uint base = q_base(b, hkv, rho);
    return rope_apply(load_q4(base, d4), load_q4(base, rope_partner(d4)), d4);
}

vec4 new_vec(uint base, uint d4, bool is_k) {
    vec4 r;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        r[i] = is_k ? k_new[base + d4 * 4u + i] : v_new[base + d4 * 4u + i];
    }
    return r;
}

// The new key's k and v as the cache holds them (rounded to its type).
vec4 new_k(uint b, uint hkv, uint d4) {
    const uint base = (b * pc.heads_kv + hkv) * D;
    const vec4 y = rope_apply(new_vec(base, d4, true), new_vec(base, rope_partner(d4), true), d4);
    return vec4(KV_ROUND(y.x), KV_ROUND(y.y), KV_ROUND(y.z), KV_ROUND(y.w));
}

vec4 new_v(uint b, uint hkv, uint d4) {
    const vec4 y = new_vec((b * pc.heads_kv + hkv) * D, d4, false);
    return vec4(KV_ROUND(y.x), KV_ROUND(y.y), KV_ROUND(y.z), KV_ROUND(y.w));
}

vec4 rope_load_k(uint b, uint hkv, uint s, uint d4) {
    return s == rope_pos ? new_k(b, hkv, d4) : load_k(kv_base(b, hkv, s), d4);
}

vec4 rope_load_v(uint b, uint hkv, uint s, uint d4) {
    return s == rope_pos ? new_v(b, hkv, d4) : load_v(kv_base(b, hkv, s), d4);
}

// The tile loads' patch: at the position, which the loads skip (this dispatch writes the
// cache there), the new key.
bool rope_patched(uint b, uint s) {
    return s == rope_pos;
}

void rope_patch(uint b, uint hkv, uint s, uint d4, inout vec4 kk, inout vec4 vv) {
    if (s == rope_pos) {
        kk = new_k(b, hkv, d4);
        vv = new_v(b, hkv, d4);
    }
}

// The new key into the cache, by the first row tile's workgroup of the slice that holds it
// (none past the cache: rope_pos >= KV_LEN there).
void rope_write(uint b, uint hkv, uint key_begin, uint key_end) {
    const uint tid = gl_LocalInvocationID.x;
    if (gl_WorkGroupID.x != 0u || rope_pos < key_begin || rope_pos >= key_end || tid >= D4) {
        return;
    }
    const uint base = kv_base(b, hkv, rope_pos) + tid * 4u;
    const vec4 kk = new_k(b, hkv, tid), vv = new_v(b, hkv, tid);
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        k_out[base + i] = KV_STORE(kk[i]);
        v_out[base + i] = KV_STORE(vv[i]);
    }
}
#endif

#endif
