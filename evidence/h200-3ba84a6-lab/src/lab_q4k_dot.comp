#version 450
// GGUF Q4_K as stored (144-byte blocks, 16-aligned), integer dot: 8 lanes per block, each a
// uvec4 of qs (16 positions of sub-blocks 2c and 2c+1); activations in the q8_1 layout.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint FORMAT = 2;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 2;
layout(constant_id = 5) const uint U = 1;
layout(constant_id = 7) const bool FASTH = false;
const uint T = gl_WorkGroupSize.x, G = gl_WorkGroupSize.y;
layout(std430, binding = 0) restrict readonly buffer W4 { uvec4 w4[]; };
layout(std430, binding = 1) restrict readonly buffer A4 { uvec4 a4[]; };
layout(std430, binding = 1) restrict readonly buffer A1 { uint a1[]; };
layout(std430, binding = 2) restrict writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N, K, dword0; } pc;
#include "labq.glsl"

uvec4 kscale_pair(uvec3 s, uint c) {
    uint p = 16u * (c & 1u);
    uint a = s.x >> p, b = s.y >> p, w = s.z >> p;
    uint sc, m;
    if (c < 2u) { sc = a & 0x3F3Fu; m = b & 0x3F3Fu; }
    else { sc = (w & 0x0F0Fu) | ((a >> 2) & 0x3030u); m = ((w >> 4) & 0x0F0Fu) | ((b >> 2) & 0x3030u); }
    return uvec4(sc & 0xFFu, (sc >> 8) & 0xFFu, m & 0xFFu, (m >> 8) & 0xFFu);
}
float hf(uint h) { return FASTH ? half_fast(h) : quant_half(h); }

void main() {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / 256u, nb32 = pc.K / 32u, AB = M * nb32;
    const uint P = nb * 8u;   // lane-pieces per row
    uint rv[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) rv[i] = min((wg * G + g) * NR + i, pc.N - 1u) * nb * 9u;
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) [[unroll]] for (uint m = 0u; m < M; m++) acc[i][m] = 0.0;
    for (uint p0 = 0u; p0 < P; p0 += U * T) {
        uvec4 hd[U][NR], qs[U][NR];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint p = min(p0 + u * T + t, P - 1u);
            const uint b = p >> 3, j = p & 7u;
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                hd[u][i] = w4[rv[i] + 9u * b];
                qs[u][i] = w4[rv[i] + 9u * b + 1u + j];
            }
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint pq = p0 + u * T + t;
            const bool ok = pq < P;
            const uint p = ok ? pq : P - 1u;
            const uint b = p >> 3, j = p & 7u, c = j >> 1, hh = j & 1u;
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint ab0 = m * nb32 + 8u * b + 2u * c;   // sub-block 2c; 2c+1 is ab0+1
                const uvec4 al = a4[2u * ab0 + hh], ah = a4[2u * (ab0 + 1u) + hh];
                const float dx0 = uintBitsToFloat(a1[8u * AB + ab0]);
                const float dx1 = uintBitsToFloat(a1[8u * AB + ab0 + 1u]);
                const float s0 = hh == 0u ? float(int(a1[9u * AB + ab0])) : 0.0;
                const float s1 = hh == 0u ? float(int(a1[9u * AB + ab0 + 1u])) : 0.0;
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    const uvec4 w = qs[u][i];
                    const uvec4 l = w & 0x0F0F0F0Fu, h = (w >> 4) & 0x0F0F0F0Fu;
                    const int il = sdot(l.x, al.x) + sdot(l.y, al.y) + sdot(l.z, al.z) + sdot(l.w, al.w);
                    const int ih = sdot(h.x, ah.x) + sdot(h.y, ah.y) + sdot(h.z, ah.z) + sdot(h.w, ah.w);
                    const vec4 sm = vec4(kscale_pair(hd[u][i].yzw, c));
                    const float d = hf(hd[u][i].x & 0xFFFFu), dm = hf(hd[u][i].x >> 16);
                    float a = acc[i][m];
                    a = fma(d * sm.x * dx0, float(il), a);
                    a = fma(d * sm.y * dx1, float(ih), a);
                    a = fma(-dm * dx0 * sm.z, s0, a);
                    a = fma(-dm * dx1 * sm.w, s1, a);
                    acc[i][m] = ok ? a : acc[i][m];
                }
            }
        }
    }
    finish(acc, wg, pc.N);
}
