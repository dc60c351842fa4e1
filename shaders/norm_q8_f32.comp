#version 450
// norm_q8_f32: the row step between a decoder's products (norm_q8.glsl).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable

#include "norm_q8.glsl"
