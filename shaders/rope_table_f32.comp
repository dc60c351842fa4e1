#version 450
// rope_table_f32: rotary position embedding over x [B, T, H, Dh] with each pair's frequency
// read from a table (mcl_rope_table: llama 3.1's scaled frequencies, or any others), one
// invocation per pair. The angle is reduced as rope_f32's (rope.glsl): pos * f in
// double-float turns, f the table's (hi, lo) pair, so that it has the same bits on every
// conformant driver up to the final sin/cos.
//
//   workgroup size : specialization constant 0
//   constant 1     : IN_PLACE; when true, x is read through binding 2 and binding 0 is unused
//   constant 2     : BACKWARD; when true, rotate by the opposite angle
//   set 0 binding 0: x    (readonly float[])
//   set 0 binding 1: freq (readonly vec2[Dh / 2]): pair i's turns per position, hi + lo
//   set 0 binding 2: out  (float[]): an invocation reads its pair before writing it
//   push constants : see Push
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufFreq { vec2 freq[]; };
layout(std430, set = 0, binding = 2) buffer BufOut { float dst[]; };

layout(constant_id = 1) const bool IN_PLACE = false;
layout(constant_id = 2) const bool BACKWARD = false;

layout(push_constant) uniform Push {
    uint npairs;      // B * T * H * Dh / 2
    uint half_dim;    // Dh / 2
    uint heads;       // H
    uint seq;         // T
    uint pos0;        // position of token 0 (position_offset)
    uint split_half;  // 0: pairs (2i, 2i + 1); 1: pairs (i, i + Dh / 2)
} pc;

#include "rope.glsl"

void main() {
    const uint stride = grid_stride();
    for (uint p = gl_GlobalInvocationID.x; p < pc.npairs;) {
        const uint i = p % pc.half_dim;
        const uint row = p / pc.half_dim;           // (b, t, h) flattened
        rope_rotate(i, row, (row / pc.heads) % pc.seq, freq[i]);
        if (!grid_next(p, pc.npairs, stride)) {
            break;
        }
    }
}
