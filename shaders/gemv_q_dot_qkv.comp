#version 450
// gemv_q_dot_qkv: an attention block's q, k and v integer-dot GEMVs of one quantized x in one
// dispatch (gemv_q_dot.glsl with GEMV_Q_DOT_QKV).
#extension GL_GOOGLE_include_directive : require

#define GEMV_Q_DOT_QKV
#include "gemv_q_dot.glsl"

void main() {
    gemv_main();
}
