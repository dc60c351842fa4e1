#version 450
// gemv_q_dot_glu: the feed-forward's gate and up integer-dot GEMVs, SwiGLU and its
// quantization for the down product, in one dispatch (gemv_q_dot.glsl with GEMV_Q_DOT_GLU).
#extension GL_GOOGLE_include_directive : require

#define GEMV_Q_DOT_GLU
#include "gemv_q_dot.glsl"

void main() {
    gemv_main();
}
