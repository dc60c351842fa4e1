#version 450
// adamw_f32: one AdamW step over one parameter tensor, one invocation per element (grid-stride):
//   p -= lr * wd * p                     (decoupled weight decay, applied first as in PyTorch)
//   m  = b1 * m + (1 - b1) * g
//   v  = b2 * v + (1 - b2) * g * g
//   p -= lr * (m / bc1) / (sqrt(v / bc2) + eps)     bc = 1 - beta^step, computed on the host
// Each element is read and written by its own invocation only: no barriers, no races.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: g (readonly float[]); bindings 1..3: p, m, v (float[], read and written)
//   push constants : see Push
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { float g[]; };
layout(std430, set = 0, binding = 1) buffer BufP { float p[]; };
layout(std430, set = 0, binding = 2) buffer BufM { float m[]; };
layout(std430, set = 0, binding = 3) buffer BufV { float v[]; };

layout(push_constant) uniform Push {
    uint n;
    float lr, beta1, beta2, eps, weight_decay, bc1, bc2;
} pc;

void main() {
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const float gi = g[i];
        float pi = p[i];
        pi -= pc.lr * pc.weight_decay * pi;
        const float mi = pc.beta1 * m[i] + (1.0 - pc.beta1) * gi;
        const float vi = pc.beta2 * v[i] + (1.0 - pc.beta2) * gi * gi;
        pi -= pc.lr * (mi / pc.bc1) / (sqrt(vi / pc.bc2) + pc.eps);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
