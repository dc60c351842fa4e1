#version 450
// gemv_q_dot: the integer-dot GEMV (gemv_q_dot.glsl).
#extension GL_GOOGLE_include_directive : require

#include "gemv_q_dot.glsl"
