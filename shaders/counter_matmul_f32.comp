#version 450
// counter_matmul_f32: the counter layer's products with W[o, i] = s[o] * t[o, i], decoded from
// the packed state into shared memory tile by tile (no dense W anywhere in memory):
//   TRANSPOSED false (forward): c = a W^T, a = x [N, in], c = y [N, out]
//   TRANSPOSED true  (grad_x) : c = a W,   a = grad_out [N, out], c = grad_x [N, in]
// One workgroup of 16 x 16 invocations per 16 x 16 tile of c, over the reduction in steps of 16.
//
//   workgroup size : 256 (specialization constant 0; the host asks for 256)
//   constant 1     : TRANSPOSED
//   set 0 binding 0: a (readonly float[]); binding 1: the packed state (readonly uint[]);
//   binding 2: s (readonly float[out]); binding 3: c (writeonly float[])
//   push constants : { uint rows, k, cols, in_dim, C; }  a is [rows, k], c [rows, cols]
//   grid           : (ceil(cols / 16), ceil(rows / 16), 1)
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;
layout(constant_id = 1) const bool TRANSPOSED = false;

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufPacked { uint packed_words[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufS { float s[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufC { float c[]; };

layout(push_constant) uniform Push { uint rows, k, cols, in_dim, C; } pc;

#include "counter.glsl"

#define TILE 16u

shared float sa[TILE][TILE + 1u];
shared float sw[TILE][TILE + 1u];

void main() {
    const uint lx = gl_LocalInvocationID.x % TILE;
    const uint ly = gl_LocalInvocationID.x / TILE;
    const uint row = gl_WorkGroupID.y * TILE + ly;
    const uint col0 = gl_WorkGroupID.x * TILE;
    float acc = 0.0;
    for (uint k0 = 0u; k0 < pc.k; k0 += TILE) {
        const uint ka = k0 + lx;
        sa[ly][lx] = row < pc.rows && ka < pc.k ? a[row * pc.k + ka] : 0.0;
        // sw[kk][cc] = W's element for reduction index k0 + kk and output column col0 + cc.
        const uint kk = k0 + ly;
        const uint cc = col0 + lx;
        const uint o = TRANSPOSED ? kk : cc;
        const uint i = TRANSPOSED ? cc : kk;
        float w = 0.0;
        if (kk < pc.k && cc < pc.cols) {
            w = s[o] * float(counter_t(counter_code(o * pc.in_dim + i), pc.C));
        }
        sw[ly][lx] = w;
        barrier();
        for (uint j = 0u; j < TILE; j++) {
            acc += sa[ly][j] * sw[j][lx];
        }
        barrier();
    }
    const uint col = col0 + lx;
    if (row < pc.rows && col < pc.cols) {
        c[row * pc.cols + col] = acc;
    }
}
