// attention_split.glsl: the body of attention_split_f32.comp and attention_decode_f32.comp:
// one workgroup runs attention_tile.glsl's loop over one slice of the keys and writes the
// slice's unnormalised output with each row's max and sum. A slice past the keys in use
// (KV_LEN) writes max NEG and sum 0, which the combine skips.
//
// The combine is attention_combine_f32.comp, a second dispatch; or, with SPLIT_COMBINE
// defined (the decode kernels), the slice that finishes last: each slice counts itself in
// counters[(batch, kv head, row tile)] after its partials are visible, and the one that
// brings the count to the number of slices merges them into out, as
// attention_combine_f32.comp does (reading only the slices that saw keys), and sets the count
// back to 0 for the next dispatch. Where
// pc.act_blocks is not 0 it also quantizes out for the integer-dot product that reads it
// (q8_1.glsl: blocks of 32 along D, block pc.act_first + (out's element) / 32).
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

#ifdef SPLIT_COMBINE
#define PART_ACCESS coherent
#else
#define PART_ACCESS writeonly
#endif
layout(std430, set = 0, binding = SPLIT_OUT_BINDING) PART_ACCESS buffer BufPartO {
    float part_o[];
};
layout(std430, set = 0, binding = SPLIT_OUT_BINDING + 1) PART_ACCESS buffer BufPartML {
    float part_ml[];
};
#ifdef SPLIT_COMBINE
// out [B, T, Hq, D]; the slices' count per (batch, kv head, row tile).
layout(std430, set = 0, binding = SPLIT_OUT_BINDING + 2) writeonly buffer BufOut {
    float dst[];
};
layout(std430, set = 0, binding = SPLIT_OUT_BINDING + 3) coherent buffer BufCounters {
    uint counters[];
};
layout(std430, set = 0, binding = SPLIT_OUT_BINDING + 4) writeonly buffer BufAct {
    uint act[];
};
// The partials again, as vec2 (max, sum) and vec4: the combine's loads.
layout(std430, set = 0, binding = SPLIT_OUT_BINDING) coherent buffer BufPartO4 {
    vec4 part_o4[];
};
layout(std430, set = 0, binding = SPLIT_OUT_BINDING + 1) coherent buffer BufPartML2 {
    vec2 part_ml2[];
};
#include "q8_1.glsl"
// The most slices (the host's MCL_ATTENTION_DECODE_MAX_SPLITS).
#define COMBINE_MAX_SPLITS 64u
shared uint split_last;
shared float comb_w[COMBINE_MAX_SPLITS * BQ];  // each slice's max, then its weight
shared float comb_l[COMBINE_MAX_SPLITS * BQ];  // each slice's sum
#endif

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / pc.splits;
    const uint split = gl_WorkGroupID.z - b * pc.splits;
#ifdef SPLIT_BATCH
    SPLIT_BATCH = b;
#endif
#ifdef SPLIT_BEGIN
    SPLIT_BEGIN(b);
#endif
    const uint key_begin = split * SPLIT_KEYS;
    const uint key_end = min(key_begin + SPLIT_KEYS, KV_LEN);
    attend(b, hkv, row0, key_begin, key_end);
#ifdef SPLIT_AFTER
    SPLIT_AFTER(b, hkv, key_begin, key_end);
#endif

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
#ifdef SPLIT_COMBINE
    // This slice's partials visible to the device before it counts itself.
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) {
        const uint at = (b * pc.heads_kv + hkv) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
        const uint done = atomicAdd(counters[at], 1u) + 1u;
        split_last = done == pc.splits ? 1u : 0u;
        if (done == pc.splits) {
            counters[at] = 0u;
        }
    }
    barrier();
    if (split_last == 0u) {
        return;
    }
    memoryBarrierBuffer();
    // Only the slices that saw keys hold anything to merge: the first ceil(KV_LEN /
    // SPLIT_KEYS) (a short sequence in a long cache leaves most of them empty).
    const uint keys = KV_LEN, per = SPLIT_KEYS;
    const uint used = per == 0u ? 0u : min(pc.splits, (keys + per - 1u) / per);
    // Loads from coherent buffers are not reordered or merged: none may wait on another's
    // value, or each costs a round trip to L2. So each (slice, row)'s max and sum first, one
    // independent load each, into shared memory.
    for (uint i = tid; i < used * BQ; i += WG) {
        const uint s = i / BQ, rho = row0 + (i - s * BQ);
        vec2 ml = vec2(NEG, 0.0);
        if (rho < pc.rows) {
            ml = part_ml2[((b * pc.splits + s) * pc.heads_kv + hkv) * pc.rows + rho];
        }
        comb_w[i] = ml.x;
        comb_l[i] = ml.y;
    }
    barrier();
    // Per row: the max over the slices that saw keys, each slice's weight, the total sum.
    if (tid < BQ) {
        float m = NEG;
        for (uint s = 0u; s < used; s++) {
            if (comb_l[s * BQ + tid] > 0.0) {
                m = max(m, comb_w[s * BQ + tid]);
            }
        }
        float l = 0.0;
        for (uint s = 0u; s < used; s++) {
            const float ls = comb_l[s * BQ + tid];
            const float w = ls > 0.0 ? exp2(comb_w[s * BQ + tid] - m) : 0.0;
            comb_w[s * BQ + tid] = w;
            l += w * ls;
        }
        row_l[tid] = l;
    }
    barrier();
    // Four elements of one row an invocation a round, the slices' vec4s loaded eight at a
    // time; every invocation runs every round (q8_1_store's barriers), and D4 a multiple of 8
    // where out is quantized puts a block's eight vec4s on eight consecutive invocations.
    for (uint e0 = 0u; e0 < BQ * D4; e0 += WG) {
        const uint e = e0 + tid, r = e / D4, d4 = e - r * D4, rho = row0 + r;
        const bool valid = e < BQ * D4 && rho < pc.rows;
        vec4 y = vec4(0.0);
        uint at_out = 0u;
        if (valid) {
            const uint stride = pc.heads_kv * pc.rows * D4;
            uint at = ((b * pc.splits) * pc.heads_kv + hkv) * pc.rows * D4 + rho * D4 + d4;
            vec4 o = vec4(0.0);
            uint s = 0u;
            for (; s + 8u <= used; s += 8u) {
                vec4 a[8];
                [[unroll]] for (uint j = 0u; j < 8u; j++) {
                    a[j] = part_o4[at + j * stride];
                }
                [[unroll]] for (uint j = 0u; j < 8u; j++) {
                    o += comb_w[(s + j) * BQ + r] * a[j];
                }
                at += 8u * stride;
            }
            for (; s < used; s++) {
                o += comb_w[s * BQ + r] * part_o4[at];
                at += stride;
            }
            const float l = row_l[r];
            y = l > 0.0 ? o / l : vec4(0.0);
            const uint t = rho / pc.group, hq = hkv * pc.group + (rho - t * pc.group);
            at_out = ((b * pc.seq_q + t) * pc.heads_q + hq) * D + d4 * 4u;
            [[unroll]] for (uint i = 0u; i < 4u; i++) {
                if (d4 * 4u + i < D) {
                    dst[at_out + i] = y[i];
                }
            }
        }
        if (pc.act_blocks != 0u) {
            q8_1_store(y, pc.act_first + at_out / 32u, valid, pc.act_blocks);
        }
    }
#endif
}

#endif
