#version 450
// unary_backward_f32: dx[i] = dy[i] * act'(x[i]) for i in [0, n) (src/ops/backward.c,
// mcl_activate_backward).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), default 256
//   constant 1     : OP: 1 ReLU, 2 GELU (tanh form), 3 SiLU (unary_f32.comp's numbering)
//   set 0 binding 0: x (readonly float[])
//   set 0 binding 1: dy (readonly float[])
//   set 0 binding 2: dx (writeonly float[]); may be the same buffer as dy
//   push constants : { uint n; }
//
// Each element is read and written by one invocation only, so dx aliasing dy is safe.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "grid_loop.glsl"

layout(constant_id = 1) const uint OP = 1u;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufDy { float dy[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufDx { float dx[]; };

layout(push_constant) uniform Push {
    uint n;
} pc;

const float GELU_K = 0.7978845608028654;
const float GELU_C = 0.044715;

float derivative(float v) {
    if (OP == 1u) {
        return v > 0.0 ? 1.0 : 0.0;
    } else if (OP == 2u) {
        // gelu(v) = v s(2u), s the logistic function, u = K (v + C v^3), as in the forward
        // (no tanh, whose large-|u| behaviour varies between drivers). Its derivative is
        // s(2u) + v s(2u) (1 - s(2u)) 2 u'(v), u' = K (1 + 3 C v^2). e^(-2u) overflowing to
        // +inf gives s = 0 and a product of 0, the right limit.
        const float u = GELU_K * (v + GELU_C * v * v * v);
        const float s = 1.0 / (1.0 + exp(-2.0 * u));
        const float du = GELU_K * (1.0 + 3.0 * GELU_C * v * v);
        return s + v * s * (1.0 - s) * 2.0 * du;
    }
    // silu'(v) = s(v) (1 + v (1 - s(v))).
    const float s = 1.0 / (1.0 + exp(-v));
    return s * (1.0 + v * (1.0 - s));
}

void main() {
    const uint stride = grid_stride();
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) {
        return;
    }
    do {
        dx[i] = dy[i] * derivative(x[i]);
    } while (grid_next(i, pc.n, stride));
}
