#version 450
// pack_f16: y[i] = x[4i .. 4i+3] rounded to f16 (round to nearest even, as packHalf2x16),
// two halves a word, for i in [0, n). The matrix GEMM's a, converted once for every tile of
// W that reads it.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: x (readonly vec4[])
//   set 0 binding 1: y (writeonly uvec2[])
//   push constants : { uint n; } (vec4s)
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { vec4 x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { uvec2 y[]; };

layout(push_constant) uniform Push { uint n; } pc;

void main() {
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const vec4 v = x[i];
        y[i] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
