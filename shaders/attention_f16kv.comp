#version 450
// attention_f16kv: attention_f32 over keys and values stored as 16-bit floats (a session's
// f16 cache), read as f32; q and the output stay f32. Interface as attention_f32.comp's,
// with k and v float16_t[].
#extension GL_GOOGLE_include_directive : require
#define KV_F16
#include "attention_whole.glsl"
