#version 450
// quantize_q8_1: the first step of the integer-dot path. x [rows, K] f32 (K a multiple of 32)
// is quantized per block of 32 values to 8-bit codes with one f32 scale and the sum of the
// codes (q8_1.glsl).
//
// Eight invocations per block, a vec4 each: the GEMV that follows waits for this kernel, so it
// is spread wide (a 4096-wide row is 1024 invocations, not 128 serial ones).
//
//   specialization constants: 0 workgroup size (a multiple of 8)
//   set 0: 0 x (f32), 1 the quantized activations (u32 words)
//   push constants: number of blocks (rows * K / 32)
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufAct { uint act[]; };

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
        q8_1_store(valid ? x4[Q8_LANES * g + j] : vec4(0.0), g, valid, pc.blocks);
    }
}
