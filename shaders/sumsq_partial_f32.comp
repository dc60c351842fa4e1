#version 450
// sumsq_partial_f32: first level of mcl_grad_norm. Workgroup w of a dispatch of exactly
// pc.groups workgroups writes sum(x[i]^2) over i = w * WG + tid (+ k * groups * WG) into
// partial[pc.offset + w]. The split depends only on n, groups and WG, all fixed by the host,
// so the sum repeats bit for bit (no atomics). Each invocation sums its strided elements in
// order, then a shared-memory tree (reduce.glsl's portable path) adds the invocations.
//
//   workgroup size : specialization constant 0 (at most 256)
//   set 0 binding 0: x       (readonly float[])
//   set 0 binding 1: partial (float[]); this dispatch writes [offset, offset + groups)
//   push constants : { uint n; uint offset; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) buffer BufPartial { float partial[]; };

layout(push_constant) uniform Push { uint n; uint offset; } pc;

void main() {
    const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    float s = 0.0;
    // i < n keeps the loop finite: step > 0 and n < 2^32; i + step is checked for wrapping.
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const float v = x[i];
        s += v * v;
        if (step >= pc.n - i) {
            break;
        }
        i += step;
    }
    const float total = mcl_wg_sum(s);
    if (gl_LocalInvocationID.x == 0u) {
        partial[pc.offset + gl_WorkGroupID.x] = total;
    }
}
