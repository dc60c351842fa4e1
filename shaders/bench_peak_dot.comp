#version 450
// bench_peak_dot: bench_peak_f32.comp with 8-bit packed dot products accumulated into 32 bits,
// acc += sdot4x8(acc, w) (4 multiply-adds each): the form the integer-dot kernels use, OpSDot
// then an add, which a driver may fuse into one instruction (dp4a). A pipeline of it is only
// created where the device's shaderIntegerDotProduct was enabled.
//   specialization constants: 0 workgroup size
//   set 0: 0 out (one word per invocation)
//   push constants: trips of the loop, unused, unused, w (four signed bytes)
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) writeonly buffer BufOut { uint result[]; };

layout(push_constant) uniform Push {
    uint iterations;
    uint x, y, w;
} pc;

#include "qdot.glsl"

const uint CHAINS = 16u;
// Steps of every chain per trip of the loop: 64 operations a trip keep the loop's own
// instructions (a counter, a compare, a branch) to a few percent of the issue slots.
const uint STEPS = 4u;

void main() {
    const uint id = gl_GlobalInvocationID.x;
    int acc[CHAINS];
    [[unroll]] for (uint c = 0u; c < CHAINS; c++) {
        acc[c] = int(id + c);
    }
    for (uint i = 0u; i < pc.iterations; i++) {
        [[unroll]] for (uint r = 0u; r < STEPS; r++) {
            [[unroll]] for (uint c = 0u; c < CHAINS; c++) {
                acc[c] += sdot4x8(uint(acc[c]), pc.w);
            }
        }
    }
    int s = 0;
    [[unroll]] for (uint c = 0u; c < CHAINS; c++) {
        s ^= acc[c];
    }
    result[id] = uint(s);
}
