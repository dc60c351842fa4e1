#version 450
// sgd_f32: one SGD step over one parameter tensor, one invocation per element (grid-stride):
//   u = g + wd * p;  with velocity: vel = momentum * vel + u, u = vel;  p -= lr * u
//
//   workgroup size : specialization constant 0
//   constant 1     : HAS_VELOCITY; when false binding 2 is bound to p and never touched
//   set 0 binding 0: g (readonly float[]); binding 1: p; binding 2: velocity (float[])
//   push constants : { uint n; float lr, momentum, weight_decay; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { float g[]; };
layout(std430, set = 0, binding = 1) buffer BufP { float p[]; };
layout(std430, set = 0, binding = 2) buffer BufVel { float vel[]; };

layout(constant_id = 1) const bool HAS_VELOCITY = false;

layout(push_constant) uniform Push { uint n; float lr, momentum, weight_decay; } pc;

void main() {
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const float pi = p[i];
        float u = g[i] + pc.weight_decay * pi;
        if (HAS_VELOCITY) {
            u = pc.momentum * vel[i] + u;
            vel[i] = u;
        }
        p[i] = pi - pc.lr * u;
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
