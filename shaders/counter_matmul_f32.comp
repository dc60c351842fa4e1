#version 450
// counter_matmul_f32: the counter layer's products with W[o, i] = s[o] * t[o, i], decoded from
// the packed state into shared memory tile by tile (no dense W anywhere in memory):
//   TRANSPOSED false (forward): c = a W^T, a = x [N, in], c = y [N, out]
//   TRANSPOSED true  (grad_x) : c = a W,   a = grad_out [N, out], c = grad_x [N, in]
// One workgroup of 256 invocations per 64 x 64 tile of c, over the reduction in steps of 16:
// each step stages 64 x 16 of a and 16 x 64 of W (decoded) in shared memory, and each
// invocation adds into 4 x 4 outputs (rows ly + 16 r, columns lx + 16 q). Every output sums
// its products in reduction order, one rounding each.
//
//   workgroup size : 256 (specialization constant 0; the host asks for 256)
//   constant 1     : TRANSPOSED
//   set 0 binding 0: a (readonly float[]); binding 1: the packed state (readonly uint[]);
//   binding 2: s (readonly float[out]); binding 3: c (writeonly float[])
//   push constants : { uint rows, k, cols, in_dim, C; }  a is [rows, k], c [rows, cols]
//   grid           : (ceil(cols / 64), ceil(rows / 64), 1)
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;
layout(constant_id = 1) const bool TRANSPOSED = false;

layout(std430, set = 0, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufPacked { uint packed_words[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufS { float s[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufC { float c[]; };

layout(push_constant) uniform Push { uint rows, k, cols, in_dim, C; } pc;

#include "counter.glsl"

#define TILE 64u
#define STEP 16u

// sa[kk][r]: a's element (row0 + r, k0 + kk); sw[kk][q]: W's element for reduction index
// k0 + kk and output column col0 + q. One float of padding against bank conflicts.
shared float sa[STEP][TILE + 1u];
shared float sw[STEP][TILE + 1u];

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint lx = lid % 16u;
    const uint ly = lid / 16u;
    const uint row0 = gl_WorkGroupID.y * TILE;
    const uint col0 = gl_WorkGroupID.x * TILE;
    float acc[4][4];
    for (uint r = 0u; r < 4u; r++) {
        for (uint q = 0u; q < 4u; q++) {
            acc[r][q] = 0.0;
        }
    }
    for (uint k0 = 0u; k0 < pc.k; k0 += STEP) {
        for (uint n = 0u; n < 4u; n++) {
            const uint e = lid + 256u * n;
            // a: 16 consecutive reduction indices of one row per 16 invocations.
            const uint ar = e / STEP, ak = e % STEP;
            const uint row = row0 + ar, ka = k0 + ak;
            sa[ak][ar] = row < pc.rows && ka < pc.k ? a[row * pc.k + ka] : 0.0;
            // W: consecutive codes of the packed stream where the layout allows (along i).
            const uint wq = TRANSPOSED ? e % TILE : e / STEP;
            const uint wk = TRANSPOSED ? e / TILE : e % STEP;
            const uint kk = k0 + wk, cc = col0 + wq;
            const uint o = TRANSPOSED ? kk : cc;
            const uint i = TRANSPOSED ? cc : kk;
            float w = 0.0;
            if (kk < pc.k && cc < pc.cols) {
                w = s[o] * float(counter_t(counter_code(o * pc.in_dim + i), pc.C));
            }
            sw[wk][wq] = w;
        }
        barrier();
        for (uint j = 0u; j < STEP; j++) {
            float av[4], wv[4];
            for (uint r = 0u; r < 4u; r++) {
                av[r] = sa[j][ly + 16u * r];
                wv[r] = sw[j][lx + 16u * r];
            }
            for (uint r = 0u; r < 4u; r++) {
                for (uint q = 0u; q < 4u; q++) {
                    acc[r][q] += av[r] * wv[q];
                }
            }
        }
        barrier();
    }
    for (uint r = 0u; r < 4u; r++) {
        const uint row = row0 + ly + 16u * r;
        for (uint q = 0u; q < 4u; q++) {
            const uint col = col0 + lx + 16u * q;
            if (row < pc.rows && col < pc.cols) {
                c[row * pc.cols + col] = acc[r][q];
            }
        }
    }
}
