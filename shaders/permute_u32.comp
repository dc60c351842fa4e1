#version 450
// permute_u32: dst = src with its axes permuted, for 32-bit words and up to 4 dimensions.
// Each invocation owns destination words (so writes are contiguous) and gathers the source
// word: the host passes the destination shape and, per destination axis, the source stride
// of the axis it came from. Shapes of fewer dimensions are padded with leading 1s.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: src (readonly  uint[])
//   set 0 binding 1: dst (writeonly uint[])
//   push constants : { uint n; uvec4 shape; uvec4 stride; } (dst shape, src strides)
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufSrc { uint src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufDst { uint dst[]; };

layout(push_constant) uniform Push {
    uint n;
    uint shape1, shape2, shape3;     // destination dims 1..3 (dim 0 follows from n)
    uint stride0, stride1, stride2, stride3;
} pc;

void main() {
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        uint rest = i;
        const uint c3 = rest % pc.shape3;
        rest /= pc.shape3;
        const uint c2 = rest % pc.shape2;
        rest /= pc.shape2;
        const uint c1 = rest % pc.shape1;
        const uint c0 = rest / pc.shape1;
        dst[i] = src[c0 * pc.stride0 + c1 * pc.stride1 + c2 * pc.stride2 + c3 * pc.stride3];
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
