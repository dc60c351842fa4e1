#version 450
// norm_finish_f32: second level of mcl_grad_norm, one workgroup: norm[0] = sqrt(sum of the
// count partial sums), each invocation adding its strided partials in order and a
// shared-memory tree adding the invocations: a fixed order, so the same bits every run.
//
//   workgroup size : specialization constant 0 (at most 256)
//   set 0 binding 0: partial (readonly float[])
//   set 0 binding 1: norm    (writeonly float[]), element 0 written
//   push constants : { uint count; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufPartial { float partial[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufNorm { float norm[]; };

layout(push_constant) uniform Push { uint count; } pc;

void main() {
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < pc.count; i += gl_WorkGroupSize.x) {
        s += partial[i];
    }
    const float total = mcl_wg_sum(s);
    if (gl_LocalInvocationID.x == 0u) {
        norm[0] = sqrt(total);
    }
}
