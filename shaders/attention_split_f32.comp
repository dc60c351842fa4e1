#version 450
// attention_split_f32: the decode half of mcl_attention. When a few query rows face a long
// cache, one workgroup per (rows, kv head) would leave most of the GPU idle, so the keys are
// cut into `splits` slices of keys_per_split and each workgroup runs attention_tile.glsl's
// loop over one slice. It writes the unnormalised output and the row's max and sum;
// attention_combine_f32.comp merges the slices.
//
//   workgroup size : specialization constant 0; D, BQ, BK: constants 1..3
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (readonly float[])
//   set 0 binding 3   : part_o  [B, splits, Hkv, T * G, D] (writeonly float[])
//   set 0 binding 4   : part_ml [B, splits, Hkv, T * G, 2]  (writeonly float[]): max (log2
//                       domain, NEG when the slice had no visible key), sum
//   dispatch          : (ceil(T * G / BQ), Hkv, B * splits)
#extension GL_GOOGLE_include_directive : require
#include "attention_tile.glsl"

layout(std430, set = 0, binding = 3) writeonly buffer BufPartO { float part_o[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufPartML { float part_ml[]; };

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / pc.splits;
    const uint split = gl_WorkGroupID.z - b * pc.splits;
    const uint key_begin = split * pc.keys_per_split;
    const uint key_end = min(key_begin + pc.keys_per_split, pc.kv_len);
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
