#version 450
// gemv_q_dot_sum: a mixture's down products on the integer-dot path and their weighted sum in
// one dispatch (gemv_q_dot.glsl with GEMV_Q_DOT_SUM).
#extension GL_GOOGLE_include_directive : require

#define GEMV_Q_DOT_SUM
#include "gemv_q_dot.glsl"

void main() {
    gemv_main();
    gemv_sum_finish(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x);
}
