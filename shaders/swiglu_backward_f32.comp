#version 450
// swiglu_backward_f32: the gradients of out = silu(gate) * up (src/ops/backward.c,
// mcl_swiglu_backward): dgate = dy * up * silu'(gate), dup = dy * silu(gate).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), default 256
//   set 0 binding 0: gate (readonly float[])
//   set 0 binding 1: up (readonly float[])
//   set 0 binding 2: dy (readonly float[])
//   set 0 binding 3: dgate (writeonly float[])
//   set 0 binding 4: dup (writeonly float[])
//   push constants : { uint n; }

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { float gate[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufU { float up[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufDy { float dy[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufDg { float dgate[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufDu { float dup[]; };

layout(push_constant) uniform Push {
    uint n;
} pc;

void main() {
    const uint stride = grid_stride();
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) {
        return;
    }
    do {
        const float g = gate[i];
        const float d = dy[i];
        // The logistic s(g) as 1 / (1 + e^-g): e^-g overflowing to +inf gives s = 0, the
        // right limit, as in the forward's silu.
        const float s = 1.0 / (1.0 + exp(-g));
        dup[i] = d * (g * s);
        dgate[i] = d * up[i] * (s * (1.0 + g * (1.0 - s)));
    } while (grid_next(i, pc.n, stride));
}
