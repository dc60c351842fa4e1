#version 450
// gemv_q_norm: a float-path GEMV added to the residual stream, then the stream's RMSNorm, in
// one dispatch (gemv_q_float.glsl with GEMV_NORM: gemv_norm.glsl; bindings 4 to 8 and the
// push constant eps as there and in gemv_q_dot_norm.comp).
#extension GL_GOOGLE_include_directive : require

#define GEMV_NORM
#include "gemv_q_float.glsl"

void main() {
    gemv_main();
    gemv_norm_tail();
}
