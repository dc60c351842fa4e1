#version 450
// concat_u32: out = a and b joined along one axis, for 32-bit words. Viewed around the axis,
// a is [outer, na, inner], b is [outer, nb, inner] and out is [outer, na + nb, inner]; each
// invocation owns output words and reads the one input word that lands there.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: a   (readonly  uint[])
//   set 0 binding 1: b   (readonly  uint[])
//   set 0 binding 2: out (writeonly uint[])
//   push constants : { uint n; uint inner; uint na; uint nb; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufA { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { uint b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufOut { uint dst[]; };

layout(push_constant) uniform Push { uint n; uint inner; uint na; uint nb; } pc;

void main() {
    const uint stride = grid_stride();
    const uint axis = pc.na + pc.nb;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const uint k = i % pc.inner;
        const uint rest = i / pc.inner;
        const uint j = rest % axis;
        const uint o = rest / axis;
        dst[i] = j < pc.na ? a[(o * pc.na + j) * pc.inner + k]
                           : b[(o * pc.nb + (j - pc.na)) * pc.inner + k];
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
