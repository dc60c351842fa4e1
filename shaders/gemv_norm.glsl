// gemv_norm.glsl: a GEMV added to the residual stream, then the stream's RMSNorm (and, with
// GEMV_NORM_Q8 defined, its quantization for the next integer-dot product) by the workgroup
// that finishes last: the tail of gemv_q_dot_norm.comp and gemv_q_norm.comp.
//
// Every workgroup adds its outputs to x (y's binding, declared readable: gemv_q.glsl's
// GEMV_RESIDUAL) and counts itself in binding 8 once its writes are visible to the device; the
// one that brings the count to the grid's workgroups sets it back to 0 for the next dispatch
// and normalizes every row of x: n = x / sqrt(mean(x^2) + eps) * w into binding 6, and with
// GEMV_NORM_Q8 its quantization into binding 7 (M rows of N / 32 blocks, qdot.glsl's layout)
// as norm_q8_f32.comp writes them. N a multiple of 32 (of 4 without GEMV_NORM_Q8), y's rows
// N apart (ldy = N, y0 = 0); no experts.
//
// The includer declares, before including this file: the spec constant M and the push
// constants pc.N and pc.eps, a workgroup of local_size_x by local_size_y invocations (a
// multiple of 8 with GEMV_NORM_Q8); it includes gemv_q.glsl after this file and calls
// gemv_norm_tail() after gemv_main() from uniform control flow.
//   set 0 binding 4: w [N] (readonly vec4[])
//   set 0 binding 5: x [M, N], y of the GEMV (f32): read and written
//   set 0 binding 6: n [M, N] (writeonly vec4[])
//   set 0 binding 7: n quantized (uint[]; with GEMV_NORM_Q8, else unused)
//   set 0 binding 8: the count (uint[1]), 0 between dispatches
#ifndef GEMV_NORM_GLSL
#define GEMV_NORM_GLSL

#define GEMV_RESIDUAL
layout(std430, set = 0, binding = 5) coherent buffer BufY { float y[]; };
layout(std430, set = 0, binding = 5) coherent buffer BufY4 { vec4 y4[]; };
layout(std430, set = 0, binding = 4) restrict readonly buffer BufNormW { vec4 norm_w4[]; };
layout(std430, set = 0, binding = 6) restrict writeonly buffer BufNormed { vec4 normed4[]; };
layout(std430, set = 0, binding = 7) restrict writeonly buffer BufOut { uint act_out[]; };
layout(std430, set = 0, binding = 8) coherent buffer BufCounter { uint norm_counter[]; };

const uint NORM_LANES = gl_WorkGroupSize.x * gl_WorkGroupSize.y;

#ifdef GEMV_NORM_Q8
#define Q8_LID gl_LocalInvocationIndex
#define Q8_LANES_ALL NORM_LANES
#define Q8_OUT act_out
#include "q8_1.glsl"
#endif

const uint NORM_RV = 8u;      // vec4s of a row an invocation holds (the short-row path)
const uint NORM_PARTS = 32u;  // the sum of squares' first step: at most this many partial sums
const uint NORM_NP = NORM_LANES < NORM_PARTS ? NORM_LANES : NORM_PARTS;
shared uint norm_last;
shared float norm_red[NORM_LANES];
shared float norm_part[NORM_PARTS];

// The sum of every invocation's v, the same in all, in a fixed order.
float norm_wg_sum(float v) {
    const uint lane = gl_LocalInvocationIndex;
    norm_red[lane] = v;
    barrier();
    if (lane < NORM_NP) {
        float s = 0.0;
        for (uint i = lane; i < NORM_LANES; i += NORM_NP) {
            s += norm_red[i];
        }
        norm_part[lane] = s;
    }
    barrier();
    float sum = 0.0;
    for (uint i = 0u; i < NORM_NP; i++) {
        sum += norm_part[i];
    }
    barrier();  // norm_red and norm_part free for the next call
    return sum;
}

// Elements 4k .. 4k + 3 of row m's norm: stored, and with GEMV_NORM_Q8 quantized (every
// invocation calls it, valid or not, in rounds of the whole workgroup: whole blocks).
void norm_store(vec4 v, uint at4, bool valid, uint blocks) {
    if (valid) {
        normed4[at4] = v;
    }
#ifdef GEMV_NORM_Q8
    q8_1_store(v, at4 / Q8_LANES, valid, blocks);
#endif
}

void gemv_norm_tail() {
    const uint lane = gl_LocalInvocationIndex, lanes = NORM_LANES;
    memoryBarrierBuffer();
    barrier();
    if (lane == 0u) {
        const uint total = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
        const uint done = atomicAdd(norm_counter[0], 1u) + 1u;
        norm_last = done == total ? 1u : 0u;
        if (done == total) {
            norm_counter[0] = 0u;
        }
    }
    barrier();
    if (norm_last == 0u) {
        return;
    }
    memoryBarrierBuffer();
    const uint d4 = pc.N / 4u, blocks = M * (pc.N / 32u);
    for (uint m = 0u; m < M; m++) {
        const uint base4 = m * d4;
        if (d4 <= NORM_RV * lanes) {
            // Every load of the row issued before the first use: loads from a coherent buffer
            // are not merged, and each waits for L2.
            vec4 xv[NORM_RV];
            [[unroll]] for (uint j = 0u; j < NORM_RV; j++) {
                const uint k = lane + j * lanes;
                xv[j] = k < d4 ? y4[base4 + k] : vec4(0.0);
            }
            float ss = 0.0;
            [[unroll]] for (uint j = 0u; j < NORM_RV; j++) {
                ss += dot(xv[j], xv[j]);
            }
            const float r = inversesqrt(norm_wg_sum(ss) / float(pc.N) + pc.eps);
            [[unroll]] for (uint j = 0u; j < NORM_RV; j++) {
                if (j * lanes < d4) {  // uniform: every invocation meets every barrier
                    const uint k = lane + j * lanes;
                    const bool valid = k < d4;
                    norm_store(valid ? xv[j] * r * norm_w4[k] : vec4(0.0), base4 + k, valid,
                               blocks);
                }
            }
        } else {
            float ss = 0.0;
            for (uint k = lane; k < d4; k += lanes) {
                const vec4 v = y4[base4 + k];
                ss += dot(v, v);
            }
            const float r = inversesqrt(norm_wg_sum(ss) / float(pc.N) + pc.eps);
            for (uint k0 = 0u; k0 < d4; k0 += lanes) {
                const uint k = k0 + lane;
                const bool valid = k < d4;
                norm_store(valid ? y4[base4 + k] * r * norm_w4[k] : vec4(0.0), base4 + k, valid,
                           blocks);
            }
        }
    }
}

#endif
