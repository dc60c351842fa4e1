#version 450
// attention_f32: multi-head attention over the whole key range, one workgroup per BQ query
// rows of one (batch, kv head): out = softmax(scale q k^T [+ causal mask]) v, computed by the
// online softmax of attention_tile.glsl without a T x S score matrix. A row that sees no key
// (causal, T > kv_len) gets zeros.
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : out [B, T, Hq, D] (writeonly float[])
//   dispatch          : (ceil(T * G / BQ), Hkv, B)
#extension GL_GOOGLE_include_directive : require
#include "attention_tile.glsl"

layout(std430, set = 0, binding = 3) writeonly buffer BufOut { float dst[]; };

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    attend(b, hkv, row0, 0u, pc.kv_len);
    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        const uint e = tid + j * WG;
        const uint r = e / D4;
        if (e < BQ * D4 && row0 + r < pc.rows) {
            const float l = row_l[r];
            const vec4 o = l > 0.0 ? acc[j] / l : vec4(0.0);
            const uint base = q_base(b, hkv, row0 + r);
            const uint d = (e - r * D4) * 4u;
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                if (d + i < D) {
                    dst[base + d + i] = o[i];
                }
            }
        }
    }
}
