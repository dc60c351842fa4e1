#version 450
// gemv_q: the float-path GEMV of a few rows of x (gemv_q_float.glsl).
#extension GL_GOOGLE_include_directive : require

#include "gemv_q_float.glsl"

void main() {
    gemv_main();
}
