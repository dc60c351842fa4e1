#version 450
// add_f32: y[i] = a[i] + b[i] for i in [0, n), 32-bit float.
//
// Interface
//   workgroup size : specialization constant 0 (local_size_x_id = 0), default 256
//   set 0 binding 0: a (readonly  float[])
//   set 0 binding 1: b (readonly  float[])
//   set 0 binding 2: y (writeonly float[])
//   push constants : { uint n; }
//
// Any dispatch size works: each invocation walks a grid-stride loop.

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push { uint n; } pc;

void main() {
    const uint n = pc.n;

    // Grid stride = invocations in the whole dispatch, in uint. The product
    // gl_NumWorkGroups.x * gl_WorkGroupSize.x can exceed 2^32 - 1 for a huge
    // dispatch; saturate it instead of letting it wrap (a wrapped stride could
    // be small or 0 and revisit elements or never finish).
    uint hi;
    uint stride;
    umulExtended(gl_NumWorkGroups.x, gl_WorkGroupSize.x, hi, stride);
    if (hi != 0u) {
        stride = 0xFFFFFFFFu;
    }

    for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
        y[i] = a[i] + b[i];
        // i < n here, so n - i >= 1. If stride >= n - i the next index is
        // >= n or would wrap past 2^32 - 1: stop instead of stepping.
        if (stride >= n - i) {
            break;
        }
    }
}
