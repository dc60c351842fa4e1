#version 450
// unary_f32: y[i] = f(x[i]) for i in [0, n) (src/ops/elementwise.c, mcl_scale and
// mcl_activate).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), default 256
//   constant 1     : OP: 0 alpha * x + beta, 1 ReLU, 2 GELU (tanh form), 3 SiLU, 4 sigmoid
//   set 0 binding 0: x (readonly float[] / vec4[])
//   set 0 binding 1: y (writeonly float[] / vec4[]); may be the same buffer as x
//   push constants : { uint n; uint n4; float alpha; float beta; }
//
// Tensors start on 16-byte boundaries, so the n / 4 whole vec4s are loaded as such; the up to
// 3 elements after them go one by one. Any dispatch size works: grid-stride loops cover n.

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(constant_id = 1) const uint OP = 0u;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY4 { vec4 y4[]; };

layout(push_constant) uniform Push {
    uint n;
    uint n4;      // whole vec4s: n / 4
    float alpha;
    float beta;
} pc;

// sqrt(2 / pi) and the cubic coefficient of the tanh form of GELU.
const float GELU_K = 0.7978845608028654;
const float GELU_C = 0.044715;

vec4 apply(vec4 v) {
    if (OP == 0u) {
        return pc.alpha * v + pc.beta;
    } else if (OP == 1u) {
        return max(v, vec4(0.0));
    } else if (OP == 2u) {
        // 0.5 v (1 + tanh(u)) with u = GELU_K (v + GELU_C v^3), computed through the identity
        // 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)): the same function without the cancellation
        // of 1 + tanh(u) for negative v, and with no tanh whose large-|u| behaviour varies
        // between drivers. e^(-2u) overflowing to +inf gives the right limit, -0.
        const vec4 u = GELU_K * (v + GELU_C * v * v * v);
        return v / (1.0 + exp(-2.0 * u));
    }
    if (OP == 4u) {
        // e^-v overflowing to +inf gives the right limit, 0.
        return 1.0 / (1.0 + exp(-v));
    }
    // SiLU as v / (1 + e^-v), with the same limit behaviour.
    return v / (1.0 + exp(-v));
}

// Invocations in the whole dispatch, saturated instead of wrapped (a wrapped stride could be
// small or 0 and revisit elements or never finish).
uint grid_stride() {
    uint hi;
    uint stride;
    umulExtended(gl_NumWorkGroups.x, gl_WorkGroupSize.x, hi, stride);
    return hi != 0u ? 0xFFFFFFFFu : stride;
}

void main() {
    const uint stride = grid_stride();
    for (uint k = gl_GlobalInvocationID.x; k < pc.n4; k += stride) {
        y4[k] = apply(x4[k]);
        if (stride >= pc.n4 - k) {
            break;
        }
    }
    for (uint i = 4u * pc.n4 + gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        y[i] = apply(vec4(x[i])).x;
        if (stride >= pc.n - i) {
            break;
        }
    }
}
