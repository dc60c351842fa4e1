#version 450
// attention_split_f32: the decode half of mcl_attention. When a few query rows face a long
// cache, one workgroup per (rows, kv head) would leave most of the GPU idle, so the keys are
// cut into `splits` slices of keys_per_split and each workgroup runs attention_tile.glsl's
// loop over one slice. It writes the unnormalised output and the row's max and sum;
// attention_combine_f32.comp merges the slices.
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : part_o  [B, splits, Hkv, T * G, D] (writeonly float[])
//   set 0 binding 4   : part_ml [B, splits, Hkv, T * G, 2]  (writeonly float[]): max (log2
//                       domain, NEG when the slice had no visible key), sum
//   dispatch          : (ceil(T * G / BQ), Hkv, B * splits)
#extension GL_GOOGLE_include_directive : require
#include "attention_split.glsl"
