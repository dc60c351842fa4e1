#version 450
// gemv_q_dot_norm: an integer-dot GEMV added to the residual stream, then the RMSNorm of the
// stream and its quantization for the next product, in one dispatch (gemv_q_dot.glsl with
// GEMV_Q_DOT_NORM).
#extension GL_GOOGLE_include_directive : require

#define GEMV_Q_DOT_NORM
#include "gemv_q_dot.glsl"

void main() {
    gemv_main();
    gemv_norm_tail();
}
