#version 450
// norm_q8_f32: the row step between a decoder's products, fused: x += h (ADD), then
// y = x / sqrt(mean(x^2) + eps) * w, and (QUANT) y quantized for the integer-dot path as
// quantize_q8_1.comp quantizes it (q8_1.glsl: the same codes, scale and sum). One
// dispatch in place of the residual add, the RMSNorm and the quantization.
//
//   constant 0     : workgroup size, a multiple of 8, at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : ADD: x += h first (otherwise binding 0 is unused)
//   constant 3     : QUANT: write the quantized y into act (otherwise binding 4 is unused)
//   set 0 binding 0: h   (readonly vec4[]) [rows, d]
//   set 0 binding 1: w   (readonly vec4[]) [d]
//   set 0 binding 2: x   (vec4[]) [rows, d]: read, and with ADD written
//   set 0 binding 3: y   (writeonly vec4[]) [rows, d]
//   set 0 binding 4: act (writeonly uint[]): blocks x 8 code words, then blocks scales, then
//                    blocks code sums; blocks = rows * d / 32
//   push constants : { uint d; uint rows; float eps; }, d a multiple of 32
//
// One workgroup per row, rows grid-strided. The quantization takes eight invocations per
// block of 32 values, a vec4 each: a round of the workgroup covers whole blocks.
//
// A row of at most RV vec4s an invocation (4096 values at 128 invocations) is held in
// registers: every load of the row (x, h and w) is issued before the first store, so that
// the workgroup waits for memory once, not once per round (a decode step runs two of these a
// layer, each alone on the device between two products, and its time is its latency). A
// longer row takes the loop below, which reads x back after the sum.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(constant_id = 2) const bool ADD = true;
layout(constant_id = 3) const bool QUANT = true;

layout(std430, set = 0, binding = 0) readonly buffer BufH { vec4 h4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW { vec4 w4[]; };
layout(std430, set = 0, binding = 2) buffer BufX { vec4 x4[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { vec4 y4[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufAct { uint act[]; };

layout(push_constant) uniform Push {
    uint d;
    uint rows;
    float eps;
} pc;

#include "q8_1.glsl"

const uint RV = 8u;  // vec4s an invocation holds in registers (the short-row path)

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    const uint d4 = pc.d / 4u;
    const uint blocks = pc.rows * (pc.d / 32u);
    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        const uint base4 = row * d4;
        if (d4 <= RV * wg) {
            // The short-row path: the same sums in the same order as the loop's.
            vec4 xv[RV], wv[RV];
            [[unroll]] for (uint j = 0u; j < RV; j++) {
                const uint k = lid + j * wg;
                xv[j] = k < d4 ? x4[base4 + k] : vec4(0.0);
                wv[j] = k < d4 ? w4[k] : vec4(0.0);
                if (ADD) {
                    xv[j] += k < d4 ? h4[base4 + k] : vec4(0.0);
                }
            }
            float ss = 0.0;
            [[unroll]] for (uint j = 0u; j < RV; j++) {
                const uint k = lid + j * wg;
                if (k < d4) {
                    if (ADD) {
                        x4[base4 + k] = xv[j];
                    }
                    ss += dot(xv[j], xv[j]);
                }
            }
            const float r = inversesqrt(mcl_wg_sum(ss) / float(pc.d) + pc.eps);
            [[unroll]] for (uint j = 0u; j < RV; j++) {
                if (j * wg < d4) {  // uniform: every invocation meets every barrier
                    const uint k = lid + j * wg;
                    const bool valid = k < d4;
                    const vec4 y = valid ? xv[j] * r * wv[j] : vec4(0.0);
                    if (valid) {
                        y4[base4 + k] = y;
                    }
                    if (QUANT) {
                        q8_1_store(y, (base4 + k) / Q8_LANES, valid, blocks);
                    }
                }
            }
            continue;
        }
        float ss = 0.0;
        for (uint k = lid; k < d4; k += wg) {
            vec4 v = x4[base4 + k];
            if (ADD) {
                v += h4[base4 + k];
                x4[base4 + k] = v;
            }
            ss += dot(v, v);
        }
        const float r = inversesqrt(mcl_wg_sum(ss) / float(pc.d) + pc.eps);
        // Rounds of whole workgroups, so that every invocation meets every barrier.
        for (uint k0 = 0u; k0 < d4; k0 += wg) {
            const uint k = k0 + lid;
            const bool valid = k < d4;
            // An invocation reads back its own write of x: no barrier is needed.
            const vec4 y = valid ? x4[base4 + k] * r * w4[k] : vec4(0.0);
            if (valid) {
                y4[base4 + k] = y;
            }
            if (QUANT) {
                // Block g of the whole tensor: row-major over rows, 32 values each.
                q8_1_store(y, (base4 + k) / Q8_LANES, valid, blocks);
            }
        }
    }
}
