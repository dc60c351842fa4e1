#version 450
// gemv_q_dot: the integer-dot GEMV of a few rows of x (gemv_q_dot.glsl).
#extension GL_GOOGLE_include_directive : require

#include "gemv_q_dot.glsl"

void main() {
    gemv_main();
}
