// attention_split.glsl: the body of attention_split_f32.comp and attention_decode_f32.comp:
// one workgroup runs attention_tile.glsl's loop over one slice of the keys and writes the
// slice's unnormalised output with each row's max and sum. A slice past the keys in use
// (KV_LEN) writes max NEG and sum 0, which attention_combine_f32.comp skips.
#ifndef ATTENTION_SPLIT_GLSL
#define ATTENTION_SPLIT_GLSL

#include "attention_tile.glsl"

// Keys per slice: the host's, unless the including kernel decides them from KV_LEN.
#ifndef SPLIT_KEYS
#define SPLIT_KEYS pc.keys_per_split
#endif

// The first output binding: 3 after q, k and v, or later where the kernel binds more inputs.
#ifndef SPLIT_OUT_BINDING
#define SPLIT_OUT_BINDING 3
#endif

layout(std430, set = 0, binding = SPLIT_OUT_BINDING) writeonly buffer BufPartO {
    float part_o[];
};
layout(std430, set = 0, binding = SPLIT_OUT_BINDING + 1) writeonly buffer BufPartML {
    float part_ml[];
};

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / pc.splits;
    const uint split = gl_WorkGroupID.z - b * pc.splits;
#ifdef SPLIT_BATCH
    SPLIT_BATCH = b;
#endif
    const uint key_begin = split * SPLIT_KEYS;
    const uint key_end = min(key_begin + SPLIT_KEYS, KV_LEN);
    attend(b, hkv, row0, key_begin, key_end);

    // Slot of (batch, split, kv head): rows are contiguous inside it.
    const uint slot = (b * pc.splits + split) * pc.heads_kv + hkv;
    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        const uint e = tid + j * WG;
        const uint r = e / D4;
        if (e < BQ * D4 && row0 + r < pc.rows) {
            const uint base = (slot * pc.rows + row0 + r) * D;
            const uint d = (e - r * D4) * 4u;
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                if (d + i < D) {
                    part_o[base + d + i] = acc[j][i];
                }
            }
        }
    }
    if (tid < BQ && row0 + tid < pc.rows) {
        const uint at = (slot * pc.rows + row0 + tid) * 2u;
        part_ml[at] = row_m[tid];
        part_ml[at + 1u] = row_l[tid];
    }
}

#endif
