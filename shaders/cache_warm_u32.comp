#version 450
// cache_warm_u32: read a stretch of a buffer so that its lines are in the device's last-level
// cache when a later dispatch reads them. A decode step runs it beside a dispatch that keeps
// memory idle (the attention, a norm), on the weights of the products that follow.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: src  (readonly uvec4[]): the stretch read, [first, first + count)
//   set 0 binding 1: sink (uint[4]): written only where an invocation's words XOR to
//                    0x9E3779B9, so that the loads cannot be dropped; never read
//   push constants : { uint first; uint count; } in uvec4s
//
// Each invocation issues its WARM_LOADS loads, a workgroup's width apart, before it combines
// any: one round trip an invocation.
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer BufSrc { uvec4 src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufSink { uint sink[]; };

layout(push_constant) uniform Push {
    uint first;
    uint count;
} pc;

const uint WARM_LOADS = 16u;  // mcl_cache_warm's MCL_WARM_LOADS

void main() {
    const uint wg = gl_WorkGroupSize.x;
    const uint base = gl_WorkGroupID.x * wg * WARM_LOADS + gl_LocalInvocationID.x;
    uvec4 v[WARM_LOADS];
    [[unroll]] for (uint i = 0u; i < WARM_LOADS; i++) {
        const uint at = base + i * wg;
        v[i] = at < pc.count ? src[pc.first + at] : uvec4(0u);
    }
    uvec4 x = uvec4(0u);
    [[unroll]] for (uint i = 0u; i < WARM_LOADS; i++) {
        x ^= v[i];
    }
    const uint h = x.x ^ x.y ^ x.z ^ x.w;
    if (h == 0x9E3779B9u) {
        sink[gl_LocalInvocationID.x & 3u] = h;
    }
}
