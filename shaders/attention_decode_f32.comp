#version 450
// attention_decode_f32: attention_split_f32 for a recorded decode step, whose keys in use
// change from one replay to the next: batch b's kv_len is lens[len_slot + b], read from a
// buffer the host writes before each replay, and pc.kv_len and pc.keys_per_split are unused.
// Batch b (a sequence's one token) reads the k/v batch lens[seq_slot + b] (its sequence's
// cache), or b where seq_slot is ~0. The host chooses the number of slices for the whole
// cache (seq_kv keys); each replay cuts its kv_len keys into that many slices of whole key
// tiles, and slices past kv_len write empty partials. The slice that finishes last merges
// them into out (attention_split.glsl, SPLIT_COMBINE): one dispatch, no combine after it.
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [sequences, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : lens (readonly uint[]): lengths and sequences, as above
//   set 0 binding 4   : part_o  [B, splits, Hkv, T * G, D] (coherent float[])
//   set 0 binding 5   : part_ml [B, splits, Hkv, T * G, 2]  (coherent float[])
//   set 0 binding 6   : out [B, T, Hq, D] (writeonly float[])
//   set 0 binding 7   : counters [B, Hkv, row tiles] (coherent uint[]): zero between dispatches
//   dispatch          : (ceil(T * G / BQ), Hkv, B * splits)
#extension GL_GOOGLE_include_directive : require
#include "attention_decode.glsl"
