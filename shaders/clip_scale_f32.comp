#version 450
// clip_scale_f32: g *= max_norm / norm[0] when norm[0] > max_norm, else g is left untouched
// (min(1, max_norm / norm) without multiplying by 1). The norm is read on the GPU, so
// clipping needs no round trip to the host. A NaN norm compares false: nothing is scaled.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: norm (readonly float[]), element 0
//   set 0 binding 1: g    (float[], read and written)
//   push constants : { uint n; float max_norm; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufNorm { float norm[]; };
layout(std430, set = 0, binding = 1) buffer BufG { float g[]; };

layout(push_constant) uniform Push { uint n; float max_norm; } pc;

void main() {
    const float total = norm[0];
    // Uniform over the dispatch: every invocation reads the same norm.
    if (!(total > pc.max_norm)) {
        return;
    }
    const float scale = pc.max_norm / total;
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        g[i] = g[i] * scale;
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
