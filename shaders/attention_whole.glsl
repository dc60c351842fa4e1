// attention_whole.glsl: the body of attention_f32.comp, attention_f16kv.comp and
// attention_stats_f32.comp: attention over the whole key range, each workgroup writing its
// rows' normalised output, and with ATT_STATS defined their softmax statistics as
// attention_backward_dq_f32.comp would make them (binding 4: per row at
// ((b * Hkv + hkv) * T * G + rho) * 4 the score max in the log2 domain, 1 / the sum of
// exp2(score - max), then two zeros; NEG and 0 for a row that sees no key).
#ifndef ATTENTION_WHOLE_GLSL
#define ATTENTION_WHOLE_GLSL

#include "attention_tile.glsl"

layout(std430, set = 0, binding = 3) writeonly buffer BufOut { float dst[]; };
#ifdef ATT_STATS
layout(std430, set = 0, binding = 4) writeonly buffer BufStats { float stats[]; };
#endif

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    attend(b, hkv, row0, 0u, pc.kv_len);
#ifdef ATT_STATS
    for (uint r = tid; r < BQ; r += WG) {
        if (row0 + r < pc.rows) {
            const uint at = ((b * pc.heads_kv + hkv) * pc.rows + row0 + r) * 4u;
            const float l = row_l[r];
            stats[at] = row_m[r];
            stats[at + 1u] = l > 0.0 ? 1.0 / l : 0.0;
            stats[at + 2u] = 0.0;
            stats[at + 3u] = 0.0;
        }
    }
#endif
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

#endif
