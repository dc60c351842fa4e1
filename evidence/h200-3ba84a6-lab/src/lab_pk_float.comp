#version 450
// packed Q8_0/Q4_0, float path, lane takes CW consecutive code words per row per step
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint FORMAT = 0;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 2;
layout(constant_id = 5) const uint U = 1;
layout(constant_id = 6) const uint CW = 1;      // 1, 2 or 4 words per lane per step
layout(constant_id = 7) const bool FASTH = false;
const uint T = gl_WorkGroupSize.x, G = gl_WorkGroupSize.y;
layout(std430, binding = 0) restrict readonly buffer W4 { uvec4 w4[]; };
layout(std430, binding = 0) restrict readonly buffer W2 { uvec2 w2[]; };
layout(std430, binding = 0) restrict readonly buffer W1 { uint w1[]; };
layout(std430, binding = 1) restrict readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 2) restrict writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N, K, dword0; } pc;
#include "labq.glsl"
// words of codes per block
const uint WPB = FORMAT == 0u ? 8u : 4u;

float d_at(uint i) {
    const uint w = w1[pc.dword0 + (i >> 1)];
    const uint h = (i & 1u) != 0u ? w >> 16 : w & 0xFFFFu;
    return FASTH ? half_fast(h) : quant_half(h);
}

void loadw(uint wi, out uint r[4]) {
    if (CW == 1u) { r[0] = w1[wi]; r[1] = 0u; r[2] = 0u; r[3] = 0u; }
    else if (CW == 2u) { uvec2 v = w2[wi >> 1]; r[0] = v.x; r[1] = v.y; r[2] = 0u; r[3] = 0u; }
    else { uvec4 v = w4[wi >> 2]; r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w; }
}

void main() {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint K4 = pc.K / 4u;
    const uint nb = pc.K / 32u;
    const uint RW = nb * WPB;       // code words per row
    const uint S = RW / CW;         // steps (chunks) per row
    uint rn[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) rn[i] = min((wg * G + g) * NR + i, pc.N - 1u);
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) [[unroll]] for (uint m = 0u; m < M; m++) acc[i][m] = 0.0;
    for (uint c0 = 0u; c0 < S; c0 += U * T) {
        uint r[U][NR][4];
        float dw[U][NR];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint c = min(c0 + u * T + t, S - 1u);
            const uint wi = c * CW;          // first word in the row
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                loadw(rn[i] * RW + wi, r[u][i]);
                dw[u][i] = d_at(rn[i] * nb + wi / WPB);
            }
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint cq = c0 + u * T + t;
            const bool ok = cq < S;
            const uint wi = (ok ? cq : S - 1u) * CW;
            const uint b = wi / WPB, kw = wi % WPB;
            [[unroll]] for (uint m = 0u; m < M; m++) {
                vec4 xl[4], xh[4];
                [[unroll]] for (uint k = 0u; k < CW; k++) {
                    if (FORMAT == 0u) {
                        xl[k] = x4[m * K4 + 8u * b + kw + k];
                    } else {
                        xl[k] = x4[m * K4 + 8u * b + kw + k];
                        xh[k] = x4[m * K4 + 8u * b + 4u + kw + k];
                    }
                }
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    float s = 0.0;
                    [[unroll]] for (uint k = 0u; k < CW; k++) {
                        if (FORMAT == 0u) {
                            s = fdot(gemv_bytes(r[u][i][k] ^ 0x80808080u, 128.0), xl[k], s);
                        } else {
                            vec4 lo, hi;
                            gemv_nibbles(r[u][i][k], 8.0, lo, hi);
                            s = fdot(lo, xl[k], s);
                            s = fdot(hi, xh[k], s);
                        }
                    }
                    acc[i][m] = ok ? fma(dw[u][i], s, acc[i][m]) : acc[i][m];
                }
            }
        }
    }
    finish(acc, wg, pc.N);
}
