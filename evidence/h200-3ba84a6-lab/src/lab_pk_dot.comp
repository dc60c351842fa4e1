#version 450
// packed Q8_0/Q4_0 (body of 16-byte codes, then fp16 d area), integer dot, M rows of x
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint FORMAT = 0;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 2;
layout(constant_id = 5) const uint U = 1;
const uint T = gl_WorkGroupSize.x, G = gl_WorkGroupSize.y;
layout(std430, binding = 0) restrict readonly buffer W4 { uvec4 w4[]; };
layout(std430, binding = 0) restrict readonly buffer W1 { uint w1[]; };
layout(std430, binding = 1) restrict readonly buffer A4 { uvec4 a4[]; };
layout(std430, binding = 1) restrict readonly buffer A1 { uint a1[]; };
layout(std430, binding = 2) restrict writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N, K, dword0; } pc;
#include "labq.glsl"
const uint BV = FORMAT == 0u ? 2u : 1u;

float d_at(uint i) {
    const uint w = w1[pc.dword0 + (i >> 1)];
    return quant_half((i & 1u) != 0u ? w >> 16 : w & 0xFFFFu);
}

void main() {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / 32u, AB = M * nb;
    uint rb[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) rb[i] = min((wg * G + g) * NR + i, pc.N - 1u) * nb;
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) [[unroll]] for (uint m = 0u; m < M; m++) acc[i][m] = 0.0;
    for (uint b0 = 0u; b0 < nb; b0 += U * T) {
        uvec4 q[U][NR][2];
        float dw[U][NR];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint b = min(b0 + u * T + t, nb - 1u);
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                [[unroll]] for (uint v = 0u; v < BV; v++) q[u][i][v] = w4[(rb[i] + b) * BV + v];
                dw[u][i] = d_at(rb[i] + b);
            }
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint bq = b0 + u * T + t;
            const bool ok = bq < nb;
            const uint b = ok ? bq : nb - 1u;
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint ab = m * nb + b;
                const uvec4 lo = a4[2u * ab], hi = a4[2u * ab + 1u];
                const float dx = uintBitsToFloat(a1[8u * AB + ab]);
                const int off = FORMAT == 1u ? -8 * int(a1[9u * AB + ab]) : 0;
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    int s = off;
                    if (FORMAT == 0u) {
                        const uvec4 p = q[u][i][0], r = q[u][i][1];
                        s += sdot(p.x, lo.x) + sdot(p.y, lo.y) + sdot(p.z, lo.z) + sdot(p.w, lo.w);
                        s += sdot(r.x, hi.x) + sdot(r.y, hi.y) + sdot(r.z, hi.z) + sdot(r.w, hi.w);
                    } else {
                        const uvec4 w = q[u][i][0];
                        const uvec4 l = w & 0x0F0F0F0Fu, h = (w >> 4) & 0x0F0F0F0Fu;
                        s += sdot(l.x, lo.x) + sdot(l.y, lo.y) + sdot(l.z, lo.z) + sdot(l.w, lo.w);
                        s += sdot(h.x, hi.x) + sdot(h.y, hi.y) + sdot(h.z, hi.z) + sdot(h.w, hi.w);
                    }
                    acc[i][m] = ok ? fma(dw[u][i] * dx, int_to_float(s), acc[i][m]) : acc[i][m];
                }
            }
        }
    }
    finish(acc, wg, pc.N);
}
