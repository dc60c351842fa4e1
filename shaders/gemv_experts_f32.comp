#version 450
// gemv_experts_f32: a mixture of experts' expert GEMVs with f32 weights: for each pair z =
// (row r, slot j) of a routed batch, y[z, n] = sum_k x[z / xdiv, k] * W[(e - e_lo) N + n, k],
// e = ids[ids0 + z] read on the device (a recorded step follows any routing). W is a stack of
// experts of N rows of K, the part bound holding experts [e_lo, e_lo + e_n): a workgroup whose
// expert lies outside it returns at once. xdiv = slots where x is shared by a row's experts
// (gate and up), 1 where x has a row per pair (down). Indices are 32-bit: a part is one
// binding. (The quantized stacks take gemv_q / gemv_q_dot in experts mode.)
//
// A workgroup holds G rows of W of one pair, T lanes a row striding along K (neighbouring
// lanes neighbouring vec4s); the T partial sums of a row meet in shared memory in a tree over
// lane indices (a fixed order, no subgroup size assumed).
//
//   specialization constants: 0 T (local_size_x, a power of two), 1 G (local_size_y), 2 VEC
//     (K a multiple of 4: vec4 loads)
//   set 0: 0 x [*, K] f32, 1 W (the part) f32, 2 ids i32, 3 y [pairs, N] f32 (written)
//   push constants: N, K, e_lo, e_n, xdiv, ids0. The workgroup index along W's rows is x + y *
//     (groups in x); z is the pair.
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const bool VEC = true;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufW { float w[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufW4 { vec4 w4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer BufIds { uint ids[]; };
layout(std430, set = 0, binding = 3) restrict writeonly buffer BufY { float y[]; };

layout(push_constant) uniform Push {
    uint N, K;
    uint e_lo, e_n;
    uint xdiv;
    uint ids0;
} pc;

const uint T = gl_WorkGroupSize.x;
const uint G = gl_WorkGroupSize.y;

shared float red[G * T];

void main() {
    const uint pair = gl_WorkGroupID.z;
    const uint e = ids[pc.ids0 + pair] - pc.e_lo;  // below e_lo wraps past e_n
    if (e >= pc.e_n) {
        return;  // another part's expert (or no expert): the whole workgroup leaves
    }
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint n = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * G + g;
    const uint row = e * pc.N + min(n, pc.N - 1u);
    const uint xrow = pair / pc.xdiv;
    float acc0 = 0.0, acc1 = 0.0;
    if (VEC) {
        const uint K4 = pc.K / 4u;
        const uint wb = row * K4, xb = xrow * K4;
        uint i = t;
        for (; i + T < K4; i += 2u * T) {
            acc0 += dot(w4[wb + i], x4[xb + i]);
            acc1 += dot(w4[wb + i + T], x4[xb + i + T]);
        }
        if (i < K4) {
            acc0 += dot(w4[wb + i], x4[xb + i]);
        }
    } else {
        const uint wb = row * pc.K, xb = xrow * pc.K;
        for (uint i = t; i < pc.K; i += T) {
            acc0 = fma(w[wb + i], x[xb + i], acc0);
        }
    }
    red[g * T + t] = acc0 + acc1;
    barrier();
    for (uint s = T / 2u; s > 0u; s >>= 1) {
        if (t < s) {
            red[g * T + t] += red[g * T + t + s];
        }
        barrier();
    }
    if (t == 0u && n < pc.N) {
        y[pair * pc.N + n] = red[g * T];
    }
}
