#version 450
// bench_stream_f32: the memory-bandwidth reference of motifcl-bench, a plain streaming kernel
// (not vkCmdCopyBuffer, which runs far below the memory's speed on some drivers).
//   COPY = false: read x (vec4, grid-stride) and write one float per invocation, which is
//                 never equal to the sentinel in practice but keeps the loads alive;
//   COPY = true:  y = x, vec4 by vec4.
//   specialization constants: 0 workgroup size, 1 COPY
//   set 0: 0 x, 1 y;  push constants: number of vec4s
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool COPY = false;

layout(std430, set = 0, binding = 0) readonly buffer BufX { vec4 x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { vec4 y[]; };

layout(push_constant) uniform Push { uint n4; } pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint i = gl_GlobalInvocationID.x;
    if (COPY) {
        for (; i < pc.n4; i += stride) {
            y[i] = x[i];
        }
        return;
    }
    vec4 acc = vec4(0.0);
    // Four independent loads per step keep enough bytes in flight.
    for (; i + 3 * stride < pc.n4; i += 4 * stride) {
        acc += x[i] + x[i + stride] + x[i + 2 * stride] + x[i + 3 * stride];
    }
    for (; i < pc.n4; i += stride) {
        acc += x[i];
    }
    float s = acc.x + acc.y + acc.z + acc.w;
    if (s == 1234.5678) {
        y[gl_GlobalInvocationID.x] = vec4(s);
    }
}
