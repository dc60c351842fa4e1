// attention_whole.glsl: the body of attention_f32.comp and attention_f16kv.comp: attention
// over the whole key range, each workgroup writing its rows' normalised output.
#ifndef ATTENTION_WHOLE_GLSL
#define ATTENTION_WHOLE_GLSL

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

#endif
