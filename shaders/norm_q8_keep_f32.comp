#version 450
// norm_q8_keep_f32: the row step of a norm of x + h that leaves x as it was (norm_q8.glsl with
// NORM_Q8_KEEP).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable

#define NORM_Q8_KEEP
#include "norm_q8.glsl"
