#version 450
// attention_decode_rope_f16kv: attention_decode_rope_f32 over a cache stored as 16-bit floats
// (the new key and value rounded to nearest as they are written, and read back so rounded).
#extension GL_GOOGLE_include_directive : require
#define KV_F16
#define DECODE_ROPE
#include "attention_decode.glsl"
