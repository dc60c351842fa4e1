#version 450
// attention_f32: multi-head attention over the whole key range, one workgroup per BQ query
// rows of one (batch, kv head): out = softmax(scale q k^T [+ causal mask]) v, computed by the
// online softmax of attention_tile.glsl without a T x S score matrix. A row that sees no key
// (causal, T > kv_len) gets zeros.
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : out [B, T, Hq, D] (writeonly float[])
//   dispatch          : (ceil(T * G / BQ), Hkv, B)
#extension GL_GOOGLE_include_directive : require
#include "attention_whole.glsl"
