#version 450
// attention_split_f16kv: attention_split_f32 over keys and values stored as 16-bit floats,
// read as f32. Interface as attention_split_f32.comp's, with k and v float16_t[].
#extension GL_GOOGLE_include_directive : require
#define KV_F16
#include "attention_split.glsl"
