#version 450
// gemv_q_dot_rms: the integer-dot GEMV of a few rows of x with the decoder's row step before
// it: RMSNorm and the quantization made by each workgroup (gemv_q_dot.glsl with
// GEMV_Q_DOT_RMS).
#extension GL_GOOGLE_include_directive : require

#define GEMV_Q_DOT_RMS
#include "gemv_q_dot.glsl"

void main() {
    gemv_main();
}
