#version 450
// count_targets_u32: count[0] = the number of targets in [0, vocab), for the mean of
// mcl_cross_entropy_backward, computed on the GPU so no host round trip is needed. One
// workgroup; integer sums are exact, so the order does not matter for the result.
//
//   workgroup size : specialization constant 0, a power of 2 (at most 256)
//   set 0 binding 0: targets (readonly int[], [N])
//   set 0 binding 1: count   (writeonly uint[]), element 0
//   push constants : { uint rows; uint vocab; }
layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer BufTargets { int targets[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufCount { uint count[]; };

layout(push_constant) uniform Push { uint rows; uint vocab; } pc;

const uint WG = gl_WorkGroupSize.x;
shared uint red[WG];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    uint c = 0u;
    for (uint r = tid; r < pc.rows; r += WG) {
        const int t = targets[r];
        c += (t >= 0 && uint(t) < pc.vocab) ? 1u : 0u;
    }
    red[tid] = c;
    barrier();
    for (uint width = WG / 2u; width > 0u; width /= 2u) {
        if (tid < width) {
            red[tid] += red[tid + width];
        }
        barrier();
    }
    if (tid == 0u) {
        count[0] = red[0];
    }
}
