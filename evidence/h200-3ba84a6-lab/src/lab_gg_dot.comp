#version 450
// GGUF Q8_0/Q4_0 as stored, integer dot, a lane per 32-bit word of the row; activations laid
// out in W's byte geometry (zero bytes where W has its scale), so each word is one dp4a.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint FORMAT = 0;
layout(constant_id = 3) const uint M = 1;
layout(constant_id = 4) const uint NR = 2;
layout(constant_id = 5) const uint U = 1;
layout(constant_id = 7) const bool FASTH = false;
const uint T = gl_WorkGroupSize.x, G = gl_WorkGroupSize.y;
layout(std430, binding = 0) restrict readonly buffer W1 { uint w1[]; };
layout(std430, binding = 1) restrict readonly buffer A1 { uint a1[]; };
layout(std430, binding = 2) restrict writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N, K, dword0; } pc;
#include "labq.glsl"
const uint BB = FORMAT == 0u ? 34u : 18u;

void main() {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint nb = pc.K / 32u;
    const uint RW = nb * BB / 4u;   // words per row (nb even)
    const uint NA = FORMAT == 0u ? 1u : 2u;
    const uint DX = NA * M * RW;    // word of dx[m][b]
    const uint SUM = DX + M * nb;
    uint rw[NR];
    [[unroll]] for (uint i = 0u; i < NR; i++) rw[i] = min((wg * G + g) * NR + i, pc.N - 1u) * RW;
    float acc[NR][M];
    [[unroll]] for (uint i = 0u; i < NR; i++) [[unroll]] for (uint m = 0u; m < M; m++) acc[i][m] = 0.0;
    for (uint c0 = 0u; c0 < RW; c0 += U * T) {
        uint q[U][NR];
        uint dh[U][NR];
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint c = min(c0 + u * T + t, RW - 1u);
            const uint b = (4u * c) / BB;
            [[unroll]] for (uint i = 0u; i < NR; i++) {
                q[u][i] = w1[rw[i] + c];
                dh[u][i] = w1[rw[i] + (BB * b) / 4u];
            }
        }
        [[unroll]] for (uint u = 0u; u < U; u++) {
            const uint cq = c0 + u * T + t;
            const bool ok = cq < RW;
            const uint c = ok ? cq : RW - 1u;
            const uint b = (4u * c) / BB;
            const bool hi16 = ((BB * b) & 2u) != 0u;
            const bool first = 4u * c - BB * b <= 2u;
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint alo = a1[m * RW + c];
                const uint ahi = FORMAT == 1u ? a1[(M + m) * RW + c] : 0u;
                const float dx = uintBitsToFloat(a1[DX + m * nb + b]);
                const int off = FORMAT == 1u && first ? -8 * int(a1[SUM + m * nb + b]) : 0;
                [[unroll]] for (uint i = 0u; i < NR; i++) {
                    const uint h = hi16 ? dh[u][i] >> 16 : dh[u][i] & 0xFFFFu;
                    const float d = FASTH ? half_fast(h) : quant_half(h);
                    int s = off;
                    if (FORMAT == 0u) {
                        s += sdot(q[u][i], alo);
                    } else {
                        s += sdot(q[u][i] & 0x0F0F0F0Fu, alo) + sdot((q[u][i] >> 4) & 0x0F0F0F0Fu, ahi);
                    }
                    acc[i][m] = ok ? fma(d * dx, int_to_float(s), acc[i][m]) : acc[i][m];
                }
            }
        }
    }
    finish(acc, wg, pc.N);
}
