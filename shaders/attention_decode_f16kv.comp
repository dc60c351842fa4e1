#version 450
// attention_decode_f16kv: attention_decode_f32 over a cache stored as 16-bit floats, read as
// f32. Interface as attention_decode_f32.comp's, with k and v float16_t[].
#extension GL_GOOGLE_include_directive : require
#define KV_F16
#include "attention_decode.glsl"
