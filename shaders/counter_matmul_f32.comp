#version 450
// counter_matmul_f32: the counter layer's products with W[o, i] = s[o] * t[o, i], decoded from
// the packed state into shared memory tile by tile (no dense W anywhere in memory):
//   TRANSPOSED false (forward): c = a W^T, a = x [N, in], c = y [N, out]
//   TRANSPOSED true  (grad_x) : c = a W,   a = grad_out [N, out], c = grad_x [N, in]
// One workgroup of 256 invocations per 64 x 64 tile of c, over the reduction in steps of 16:
// each step stages 64 x 16 of a and 16 x 64 of W (decoded) in shared memory, and each
// invocation adds into 4 x 4 outputs (rows ly + 16 r, columns lx + 16 q). The next step's
// loads (a, the packed words, s) are issued into registers before the current step's sums,
// and decoded when they are stored. Every output sums its products in reduction order, one
// rounding each.
//
//   workgroup size : 256 (specialization constant 0; the host asks for 256)
//   constant 1     : TRANSPOSED
//   set 0 binding 0: a (readonly float[]); binding 1: the packed state (readonly uint[]);
//   binding 2: s (readonly float[out]); binding 3: c (writeonly float[])
//   push constants : { uint rows, k, cols, in_dim, C; }  a is [rows, k], c [rows, cols]
//   grid           : (ceil(cols / 64), ceil(rows / 64), 1)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

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

// One step's loads, 4 of a and 4 of W an invocation: a's floats, and for W the packed
// word holding the code's first bit, the next word where the code crosses into it, and s[o]
// (0 past the matrices).
struct step_loads {
    float a[4];
    uint w0[4], w1[4];
    float s[4];
};

// Where element n (0..3) of the calling invocation's share of step k0 lies: its a row and
// reduction index; W's reduction index kk, column cc, output o and input i.
void step_place(uint n, uint k0, out uint ar, out uint ak, out uint wk, out uint wq) {
    const uint e = gl_LocalInvocationID.x + 256u * n;
    // a: 16 consecutive reduction indices of one row per 16 invocations.
    ar = e / STEP;
    ak = e % STEP;
    // W: consecutive codes of the packed stream where the layout allows (along i).
    wq = TRANSPOSED ? e % TILE : e / STEP;
    wk = TRANSPOSED ? e / TILE : e % STEP;
}

step_loads step_load(uint row0, uint col0, uint k0) {
    step_loads L;
    [[unroll]] for (uint n = 0u; n < 4u; n++) {
        uint ar, ak, wk, wq;
        step_place(n, k0, ar, ak, wk, wq);
        const uint row = row0 + ar, ka = k0 + ak;
        L.a[n] = row < pc.rows && ka < pc.k ? a[row * pc.k + ka] : 0.0;
        const uint kk = k0 + wk, cc = col0 + wq;
        const uint o = TRANSPOSED ? kk : cc;
        const uint i = TRANSPOSED ? cc : kk;
        L.w0[n] = 0u;
        L.w1[n] = 0u;
        L.s[n] = 0.0;
        if (kk < pc.k && cc < pc.cols) {
            const uint e = o * pc.in_dim + i;
            const uint bit = 6u * (e & 15u);
            const uint word = (e >> 4) * 3u + (bit >> 5);
            L.w0[n] = packed_words[word];
            if ((bit & 31u) > 26u) {
                L.w1[n] = packed_words[word + 1u];
            }
            L.s[n] = s[o];
        }
    }
    return L;
}

void step_store(step_loads L, uint row0, uint col0, uint k0) {
    [[unroll]] for (uint n = 0u; n < 4u; n++) {
        uint ar, ak, wk, wq;
        step_place(n, k0, ar, ak, wk, wq);
        sa[ak][ar] = L.a[n];
        const uint kk = k0 + wk, cc = col0 + wq;
        const uint o = TRANSPOSED ? kk : cc;
        const uint i = TRANSPOSED ? cc : kk;
        float w = 0.0;
        if (kk < pc.k && cc < pc.cols) {
            const uint shift = (6u * ((o * pc.in_dim + i) & 15u)) & 31u;
            uint bits = L.w0[n] >> shift;
            if (shift > 26u) {
                bits |= L.w1[n] << (32u - shift);
            }
            w = L.s[n] * float(counter_t(bits & 63u, pc.C));
        }
        sw[wk][wq] = w;
    }
}

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
    step_loads L = step_load(row0, col0, 0u);
    for (uint k0 = 0u; k0 < pc.k; k0 += STEP) {
        barrier();  // the previous step's sums are done with shared memory
        step_store(L, row0, col0, k0);
        barrier();
        if (k0 + STEP < pc.k) {
            L = step_load(row0, col0, k0 + STEP);
        }
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
