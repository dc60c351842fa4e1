#version 450
// norm_moe_f32: norm_q8_f32 with a mixture of experts' weighted sum and routing (norm_q8.glsl).
#extension GL_GOOGLE_include_directive : require

#define NORM_MOE
#include "norm_q8.glsl"
