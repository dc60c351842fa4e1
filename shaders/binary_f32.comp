#version 450
// binary_f32: y[i] = a[i] (op) b[bidx(i)] for i in [0, n), with b broadcast onto a's shape
// (src/ops/elementwise.c, mcl_binary and mcl_swiglu).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), default 256
//   constant 1     : OP: 0 add, 1 sub, 2 mul, 3 div (mcl_binary_op), 4 silu(a) * b (SwiGLU)
//   constant 2     : VEC4: four consecutive elements never straddle the innermost dimension
//                    (DIMS == 1, or shape.x % 4 == 0), so a, y and b's rows are vec4-aligned
//   constant 3     : DIMS: dimensions of the collapsed shape, 1..4
//   set 0 binding 0: a (readonly float[] / vec4[])
//   set 0 binding 1: b (readonly float[] / vec4[])
//   set 0 binding 2: y (writeonly float[] / vec4[]); may be the same buffer as a or b
//   push constants : { uint n; uint n4; uvec4 shape; uvec4 bstride; }
//
// The host collapses the broadcast into at most four dimensions, innermost first in
// shape.x, with b's element stride in each (0 where b broadcasts). A same-shape operation is
// DIMS 1 with stride 1, a bias [D] onto [T, D] is DIMS 2 with strides (1, 0), a scalar is
// DIMS 1 with stride 0. Any dispatch size works: a grid-stride loop covers n.

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const bool VEC4 = false;
layout(constant_id = 3) const uint DIMS = 1u;

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufA4 { vec4 a4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { float b[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB4 { vec4 b4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY4 { vec4 y4[]; };

layout(push_constant) uniform Push {
    uint n;
    uint n4;      // vec4s the VEC4 path covers: n / 4
    uvec4 shape;  // collapsed extents, innermost first; unused ones are 1
    uvec4 bstride;
} pc;

// Index of b that element i of y reads.
uint b_index(uint i) {
    uint rest = i;
    uint bi = 0u;
    for (uint k = 0u; k + 1u < DIMS; k++) {
        bi += (rest % pc.shape[k]) * pc.bstride[k];
        rest /= pc.shape[k];
    }
    return bi + rest * pc.bstride[DIMS - 1u];
}

vec4 apply(vec4 x, vec4 z) {
    if (OP == 0u) {
        return x + z;
    } else if (OP == 1u) {
        return x - z;
    } else if (OP == 2u) {
        return x * z;
    } else if (OP == 3u) {
        return x / z;
    }
    // SiLU as x / (1 + e^-x): e^-x overflowing to +inf gives the right limit, -0.
    return x / (1.0 + exp(-x)) * z;
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
    uint first = 0u;
    if (VEC4) {
        for (uint k = gl_GlobalInvocationID.x; k < pc.n4; k += stride) {
            const uint bi = b_index(4u * k);
            // b's innermost stride is 1 (a whole vec4 of b, aligned: see VEC4) or 0 (one
            // value for all four).
            const vec4 bv = pc.bstride.x != 0u ? b4[bi / 4u] : vec4(b[bi]);
            y4[k] = apply(a4[k], bv);
            if (stride >= pc.n4 - k) {
                break;
            }
        }
        first = 4u * pc.n4;
    }
    // The scalar path, or the up-to-3 elements after the last whole vec4.
    for (uint i = first + gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        y[i] = apply(vec4(a[i]), vec4(b[b_index(i)])).x;
        if (stride >= pc.n - i) {
            break;
        }
    }
}
