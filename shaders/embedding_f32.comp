#version 450
// embedding_f32: out[r, d] = table[ids[r], d] for r in [0, rows), d in [0, D). An id outside
// [0, V) gives a row of zeros: the id is checked before the table is indexed, so a bad id can
// never read outside the table.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: table (readonly  float[], [V, D])
//   set 0 binding 1: ids   (readonly  int[],   [rows])
//   set 0 binding 2: out   (writeonly float[], [rows, D])
//   push constants : { uint n; uint dim; uint vocab; }   n = rows * D
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufTable { float table[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufIds { int ids[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufOut { float dst[]; };

layout(push_constant) uniform Push { uint n; uint dim; uint vocab; } pc;

void main() {
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const uint row = i / pc.dim;
        const uint d = i - row * pc.dim;
        const int id = ids[row];
        // Compared as int first: a negative id must not become a large uint that wraps back
        // into range after the multiplication.
        const bool valid = id >= 0 && uint(id) < pc.vocab;
        float value = 0.0;
        if (valid) {
            value = table[uint(id) * pc.dim + d];
        }
        dst[i] = value;
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
