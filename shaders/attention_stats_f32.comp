#version 450
// attention_stats_f32: attention_f32.comp that also writes its rows' softmax statistics, for
// a backward pass that then needs no sweep of its own to find them (the training step's).
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : out [B, T, Hq, D] (writeonly float[])
//   set 0 binding 4   : stats [B, Hkv, T * G, 4] (writeonly float[])
//   dispatch          : (ceil(T * G / BQ), Hkv, B)
#extension GL_GOOGLE_include_directive : require
#define ATT_STATS
#include "attention_whole.glsl"
