#version 450
// attention_decode_rope_f32: attention_decode_f32 whose query and new key are not yet rotated
// and whose new key is not yet in the cache: the step's RoPE and cache write in the same
// dispatch. Batch b's new token is at position lens[pos_slot + b], and its keys in use
// lens[len_slot + b] include it (position + 1). Each workgroup rotates the query rows it reads
// (pair i by position x table[i] turns, split-half or interleaved pairs as pc.split_half
// says); the slice holding the position reads the new key from k_new and v_new, rotated and
// rounded as the cache stores them, and its first row tile writes them into the cache.
//
//   workgroup size : specialization constant 0; D (a multiple of 8), BQ, BK: constants 1..3
//   set 0 binding 0   : q [B, 1, Hq, D] (readonly float[]), unrotated
//   set 0 binding 1   : lens (readonly uint[]): positions, lengths, sequences
//   set 0 binding 2   : the RoPE table [D / 2] (readonly vec2[]): turns per position, hi + lo
//   set 0 binding 3..4: k_new, v_new [B, Hkv, D] (readonly float[])
//   set 0 binding 5..6: the caches k, v [sequences, S, Hkv, D] (float[])
//   set 0 binding 7.. : as attention_decode_f32's bindings 4..8
//   dispatch          : (ceil(G / BQ), Hkv, B * splits)
#extension GL_GOOGLE_include_directive : require
#define DECODE_ROPE
#include "attention_decode.glsl"
