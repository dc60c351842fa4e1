#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer BufX { uvec4 x[]; };
layout(std430, binding = 2) writeonly buffer BufY { uint y[]; };
layout(push_constant) uniform Push { uint n4; } pc;
void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint i = gl_GlobalInvocationID.x;
    uvec4 acc = uvec4(0);
    for (; i + 3 * stride < pc.n4; i += 4 * stride)
        acc ^= x[i] ^ x[i + stride] ^ x[i + 2 * stride] ^ x[i + 3 * stride];
    for (; i < pc.n4; i += stride) acc ^= x[i];
    uint s = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (s == 0x12345678u) y[gl_GlobalInvocationID.x] = s;
}
