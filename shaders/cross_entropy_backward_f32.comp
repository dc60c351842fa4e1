#version 450
// cross_entropy_backward_f32: dlogits[r, c] = dloss * (exp(logits[r, c] - lse[r]) - [c ==
// target[r]]) / count for rows whose target lies in [0, V), 0 for the others; count (the
// valid rows) comes from count_targets_u32 on the GPU. One invocation per element, grid-stride.
// With every row ignored count is 0, but no row divides by it: the result is zeros, not NaN.
//
//   workgroup size : specialization constant 0
//   constant 1     : IN_PLACE; when true logits are read through binding 4 (dlogits aliases
//                    them) and binding 0 is unused, as in rope_f32.comp: reading a buffer
//                    through a readonly binding while writing it through another is undefined
//   set 0 binding 0: logits  (readonly float[], [N, V])
//   set 0 binding 1: targets (readonly int[],   [N])
//   set 0 binding 2: lse     (readonly float[], [N])
//   set 0 binding 3: count   (readonly uint[]), element 0
//   set 0 binding 4: dlogits (float[], [N, V]); each element read (in place) then written by
//                    its own invocation
//   push constants : { uint n; uint vocab; float dloss; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufLogits { float logits[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufTargets { int targets[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufLse { float lse[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufCount { uint count[]; };
layout(std430, set = 0, binding = 4) buffer BufOut { float dst[]; };

layout(constant_id = 1) const bool IN_PLACE = false;

layout(push_constant) uniform Push { uint n; uint vocab; float dloss; } pc;

void main() {
    const uint valid_rows = count[0];
    const float scale = valid_rows > 0u ? pc.dloss / float(valid_rows) : 0.0;
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const uint row = i / pc.vocab;
        const uint c = i - row * pc.vocab;
        const int t = targets[row];
        float value = 0.0;
        if (t >= 0 && uint(t) < pc.vocab) {
            const float x = IN_PLACE ? dst[i] : logits[i];
            const float p = exp(x - lse[row]);
            value = scale * (uint(t) == c ? p - 1.0 : p);
        }
        dst[i] = value;
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
