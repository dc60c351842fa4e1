#version 450
// gemv_q_dot_glu_rms: the feed-forward's gate and up integer-dot GEMVs and SwiGLU in one
// dispatch (gemv_q_dot_glu.comp) with the decoder's row step before them: RMSNorm and the
// quantization made by each workgroup (gemv_q_dot.glsl with GEMV_Q_DOT_GLU and
// GEMV_Q_DOT_RMS).
#extension GL_GOOGLE_include_directive : require

#define GEMV_Q_DOT_GLU
#define GEMV_Q_DOT_RMS
#include "gemv_q_dot.glsl"

void main() {
    gemv_main();
}
