#version 450
// swiglu_q8_f32: SwiGLU's y = silu(gate) * up (as binary_f32.comp computes it) and y
// quantized for the integer-dot product that follows (q8_1.glsl), in one dispatch: the
// decode step's feed-forward between its gate/up and down products. y itself is not kept.
//
//   constant 0     : workgroup size, a multiple of 8
//   set 0 binding 0: gate (readonly vec4[]) [rows, d]
//   set 0 binding 1: up   (readonly vec4[]) [rows, d]
//   set 0 binding 2: act  (writeonly uint[]): blocks x 8 code words, then blocks scales, then
//                    blocks code sums; blocks = rows * d / 32
//   push constants : { uint blocks; }
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer BufGate { vec4 gate4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufUp { vec4 up4[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufAct { uint act[]; };

layout(push_constant) uniform Push {
    uint blocks;
} pc;

#include "q8_1.glsl"

const uint BPW = gl_WorkGroupSize.x / Q8_LANES;  // blocks per workgroup and round

void main() {
    const uint lid = gl_LocalInvocationID.x, j = lid % Q8_LANES;
    // Rounds of whole workgroups, so that every invocation meets every barrier.
    for (uint g0 = gl_WorkGroupID.x * BPW; g0 < pc.blocks; g0 += gl_NumWorkGroups.x * BPW) {
        const uint g = g0 + lid / Q8_LANES;
        const bool valid = g < pc.blocks;
        vec4 y = vec4(0.0);
        if (valid) {
            const vec4 x = gate4[Q8_LANES * g + j];
            // SiLU as x / (1 + e^-x): e^-x overflowing to +inf gives the right limit, -0.
            y = x / (1.0 + exp(-x)) * up4[Q8_LANES * g + j];
        }
        q8_1_store(y, g, valid, pc.blocks);
    }
}
