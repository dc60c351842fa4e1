#version 450
// rope_kv_f16: rope_kv_f32 into caches of 16-bit floats (k and v rounded to nearest when
// written). Interface as rope_kv_f32.comp's, with kc and vc float16_t[].
#extension GL_GOOGLE_include_directive : require
#define KV_F16
#include "rope_kv.glsl"
