// attention_decode.glsl: the body of attention_decode_f32.comp and attention_decode_f16kv.comp
// (lengths and sequences from a buffer; see attention_decode_f32.comp).
#ifndef ATTENTION_DECODE_GLSL
#define ATTENTION_DECODE_GLSL

layout(std430, set = 0, binding = 3) readonly buffer BufLens { uint lens[]; };
// The batch of the workgroup, set first thing in main (attention_split.glsl).
uint split_batch;
#define SPLIT_BATCH split_batch
#define KV_LEN min(lens[pc.len_slot + split_batch], pc.seq_kv)
#define KV_BATCH(b) (pc.seq_slot == 0xFFFFFFFFu ? (b) : lens[pc.seq_slot + (b)])
#define SPLIT_KEYS (((KV_LEN + pc.splits - 1u) / pc.splits + BK - 1u) / BK * BK)
#define SPLIT_OUT_BINDING 4
#define SPLIT_COMBINE
#include "attention_split.glsl"

#endif
