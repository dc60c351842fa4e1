// attention_tile.glsl: the flash-attention inner loop shared by attention_f32.comp (whole key
// range, writes the output) and attention_split_f32.comp (one slice of the keys, writes a
// partial result that attention_combine_f32.comp merges).
//
// A workgroup owns BQ query rows of one (batch, kv head) and walks the keys in tiles of BK:
// rows are (t, g) pairs, g in [0, G) the query heads that share the kv head (grouped-query),
// so a K/V tile loaded once serves all of them. Head vectors live in shared memory as vec4s
// (D4 = ceil(D / 4), zero-padded): one 128-bit shared load feeds four FMAs. Per key tile:
//   1. K tile -> shared memory (rows padded by one vec4: the score loop reads one column
//      across rows, which would otherwise hit the same banks);
//   2. scores S = Q K^T (Q was pre-scaled by scale * log2(e), so exp2 replaces exp), masked
//      keys set to NEG;
//   3. V tile -> the same shared buffer, while each row's max and sum are reduced by a tree
//      over its WG / BQ threads (shared memory, no subgroup operations: correct for any
//      subgroup size); in the decode kernels, where an invocation's share of the tile fits 8
//      vec4 registers (V_EARLY), its loads were issued with the K tile's, both as vectors
//      into registers, and only the stores are left here;
//   4. O = O * alpha + P V, with alpha = exp2(m_old - m_new) the online-softmax rescale.
// The T x S score matrix never exists; one BQ x BK tile of it lives in shared memory.
//
// Specialization constants (constant 0 is the workgroup size WG):
//   1: D   head dimension (exact)     2: BQ  query rows per workgroup, a power of 2 <= WG
//   3: BK  keys per tile
// Shared memory: 16 * (BQ * D4 + BK * (D4 + 1)) + 4 * (BQ * BK + 2 * WG + 4 * BQ) bytes; the
// host picks BQ and BK to fit the device's maxComputeSharedMemorySize.
#ifndef ATTENTION_TILE_GLSL
#define ATTENTION_TILE_GLSL

#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint D = 64;
layout(constant_id = 2) const uint BQ = 16;
layout(constant_id = 3) const uint BK = 32;

const uint WG = gl_WorkGroupSize.x;
const uint TPR = WG / BQ;                   // threads per row in the softmax reductions
const uint D4 = (D + 3u) / 4u;              // vec4s per head vector
const uint KSTRIDE = D4 + 1u;               // vec4s per shared K/V row
const uint ACC = (BQ * D4 + WG - 1u) / WG;  // output vec4s each invocation accumulates
const uint SR = (BQ * BK + WG - 1u) / WG;   // score rows each invocation takes (WG % BK == 0)

// A masked score, and the running max of a row that has seen no key yet. Finite, so that no
// step depends on how a driver treats infinities.
const float NEG = -3.0e38;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { float q[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufQ4 { vec4 q4[]; };
// K and V in f32, or with KV_F16 defined (a cache of 16-bit floats) in f16, read as f32.
// Their bindings 1 and 2, read only, unless the including kernel (one that also writes the
// cache) says otherwise.
#ifndef ATT_K_BINDING
#define ATT_K_BINDING 1
#define ATT_V_BINDING 2
#define ATT_KV_ACCESS readonly
#endif
// The same as 4-vectors (k4, v4): the decode kernels' tile loads, one load each where D is
// a multiple of 4 (load_k4, load_v4).
#ifdef KV_F16
#extension GL_EXT_shader_16bit_storage : require
layout(std430, set = 0, binding = ATT_K_BINDING) ATT_KV_ACCESS buffer BufK { float16_t k[]; };
layout(std430, set = 0, binding = ATT_V_BINDING) ATT_KV_ACCESS buffer BufV { float16_t v[]; };
layout(std430, set = 0, binding = ATT_K_BINDING) ATT_KV_ACCESS buffer BufK4 { f16vec4 k4[]; };
layout(std430, set = 0, binding = ATT_V_BINDING) ATT_KV_ACCESS buffer BufV4 { f16vec4 v4[]; };
#else
layout(std430, set = 0, binding = ATT_K_BINDING) ATT_KV_ACCESS buffer BufK { float k[]; };
layout(std430, set = 0, binding = ATT_V_BINDING) ATT_KV_ACCESS buffer BufV { float v[]; };
layout(std430, set = 0, binding = ATT_K_BINDING) ATT_KV_ACCESS buffer BufK4 { vec4 k4[]; };
layout(std430, set = 0, binding = ATT_V_BINDING) ATT_KV_ACCESS buffer BufV4 { vec4 v4[]; };
#endif

layout(push_constant) uniform Push {
    uint seq_q;        // T
    uint seq_kv;       // S: the k/v tensors' sequence dimension (their stride)
    uint kv_len;       // keys in use, <= S
    uint heads_q;      // Hq
    uint heads_kv;     // Hkv
    uint group;        // G = Hq / Hkv
    uint rows;         // T * G: query rows per (batch, kv head)
    uint causal;       // row t sees keys < t + kv_len - T + 1
    float scale_log2;  // scale * log2(e)
    uint keys_per_split;
    uint splits;
    uint len_slot;     // attention_decode_f32: lens[len_slot + b] is batch b's kv_len
    uint seq_slot;     // attention_decode_f32: lens[seq_slot + b] its k/v batch, ~0: b
    uint act_blocks;   // attention_decode_f32: blocks of the quantized output, 0: none
    uint act_first;    // attention_decode_f32: the block of out's first element
    uint pos_slot;     // attention_decode_rope: lens[pos_slot + b] is batch b's position
    uint split_half;   // attention_decode_rope: 1, pairs (i, i + D / 2); 0, (2i, 2i + 1)
} pc;

shared vec4 q_tile[BQ * D4];
shared vec4 kv_tile[BK * KSTRIDE];
shared float p_tile[BQ * BK];
shared float red_max[WG];
shared float red_sum[WG];
shared float row_m[BQ];      // running max, log2 domain
shared float row_l[BQ];      // running sum of exp2(score - row_m)
shared float row_alpha[BQ];  // rescale of this tile
shared uint row_limit[BQ];   // keys < row_limit are visible to the row

// Indexed only in unrolled loops, so that it stays in registers.
vec4 acc[ACC];

// A V tile's vec4s per invocation. In the decode kernels (SPLIT_COMBINE: a workgroup walks one
// slice of a few key tiles, so each global round trip is a large share of its time), where
// they are few enough to hold in registers, each tile's K and V are loaded together into
// registers, a vector load each and no branch between them, before the scores; K is stored
// into shared memory at once, V after the scores: one round trip for both. The new key (the
// RoPE kernels', which write it into the cache in the same dispatch) is not read from the
// cache (ATT_PATCHED) but put in place after the loads (ATT_PATCH_KV). At 8 vec4s
// (head dim 128 at 128 invocations, 64 at 64) Polaris keeps two waves a SIMD; at 16, one.
const uint VR = (BK * D4 + WG - 1u) / WG;
#ifdef SPLIT_COMBINE
const bool V_EARLY = VR <= 8u;
#else
const bool V_EARLY = false;
#endif
vec4 vreg[V_EARLY ? VR : 1u];

#include "attention_index.glsl"

// load_k and load_v from k4 and v4: one load where D is a multiple of 4.
vec4 load_k4(uint base, uint d4) {
    return D % 4u == 0u ? vec4(k4[base / 4u + d4]) : load_k(base, d4);
}

vec4 load_v4(uint base, uint d4) {
    return D % 4u == 0u ? vec4(v4[base / 4u + d4]) : load_v(base, d4);
}

vec4 load_q4(uint base, uint d4) {
    return D % 4u == 0u ? q4[base / 4u + d4] : load_q(base, d4);
}

// vec4 e of a K or V tile (key e / D4) held in registers, into kv_tile; none past the tile.
void tile_store(uint e, vec4 r) {
    if (e < BK * D4) {
        const uint c = e / D4;
        kv_tile[c * KSTRIDE + (e - c * D4)] = r;
    }
}

// The head-vector loads of the loop: row rho's query, key s's k and v (vec4 d4 of each). The
// including kernel may define its own (attention_decode.glsl's RoPE).
#ifndef ATT_LOAD_Q
#ifdef SPLIT_COMBINE
#define ATT_LOAD_Q(b, hkv, rho, d4) load_q4(q_base(b, hkv, rho), d4)
#else
#define ATT_LOAD_Q(b, hkv, rho, d4) load_q(q_base(b, hkv, rho), d4)
#endif
#define ATT_LOAD_K(b, hkv, s, d4) load_k(kv_base(b, hkv, s), d4)
#define ATT_LOAD_V(b, hkv, s, d4) load_v(kv_base(b, hkv, s), d4)
#endif

// Tree reductions over the TPR threads of each row. Every invocation calls them (barriers
// must be in uniform control flow).
void reduce_rows_max(uint tid, uint lane) {
    for (uint width = TPR / 2u; width > 0u; width /= 2u) {
        if (lane < width) {
            red_max[tid] = max(red_max[tid], red_max[tid + width]);
        }
        barrier();
    }
}

void reduce_rows_sum(uint tid, uint lane) {
    for (uint width = TPR / 2u; width > 0u; width /= 2u) {
        if (lane < width) {
            red_sum[tid] += red_sum[tid + width];
        }
        barrier();
    }
}

// Run the online softmax of query rows [row0, row0 + BQ) over keys [key_begin, key_end).
// On return acc[] holds the unnormalised output (vec4 tid + j * WG of the BQ x D4 tile), and
// row_m / row_l each row's max and sum.
void attend(uint b, uint hkv, uint row0, uint key_begin, uint key_end) {
    const uint tid = gl_LocalInvocationID.x;
    const uint my_row = tid / TPR;
    const uint lane = tid - my_row * TPR;

    // The invocation's share of Q, loaded first and stored with the first K tile: the two
    // loads' round trips overlap instead of following each other across a barrier.
    vec4 qreg[ACC];
    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        const uint e = tid + j * WG;
        const uint r = e / D4;
        const uint rho = row0 + r;
        qreg[j] = e < BQ * D4 && rho < pc.rows
                      ? ATT_LOAD_Q(b, hkv, rho, e - r * D4) * pc.scale_log2
                      : vec4(0.0);
    }
    if (tid < BQ) {
        const uint rho = row0 + tid;
        row_m[tid] = NEG;
        row_l[tid] = 0.0;
        row_limit[tid] = rho < pc.rows ? min(visible_keys(rho), key_end) : 0u;
    }
    [[unroll]] for (uint j = 0u; j < ACC; j++) {
        acc[j] = vec4(0.0);
    }
    // The last row of the tile sees the most keys: no tile past its limit is needed.
    const uint last_row = min(row0 + BQ, pc.rows) - 1u;
    const uint key_stop = min(key_end, visible_keys(last_row));
    // The row state and Q are read only after the first tile's barrier; without a tile, the
    // barrier after the loop makes the row state visible to the caller's invocations.

    for (uint kt = key_begin; kt < key_stop; kt += BK) {
        if (V_EARLY) {
            vec4 kreg[VR];
            [[unroll]] for (uint j = 0u; j < VR; j++) {
                const uint e = tid + j * WG;
                const uint c = e / D4;
                const bool use = e < BK * D4 && kt + c < key_stop;
#ifdef ATT_PATCH_KV
                const bool read = use && !ATT_PATCHED(b, kt + c);
#else
                const bool read = use;
#endif
                const uint base = read ? kv_base(b, hkv, kt + c) : 0u;
                kreg[j] = read ? load_k4(base, e - c * D4) : vec4(0.0);
                vreg[j] = read ? load_v4(base, e - c * D4) : vec4(0.0);
            }
#ifdef ATT_PATCH_KV
            [[unroll]] for (uint j = 0u; j < VR; j++) {
                const uint e = tid + j * WG;
                const uint c = e / D4;
                if (e < BK * D4 && kt + c < key_stop) {
                    ATT_PATCH_KV(b, hkv, kt + c, e - c * D4, kreg[j], vreg[j]);
                }
            }
#endif
            [[unroll]] for (uint j = 0u; j < VR; j++) {
                tile_store(tid + j * WG, kreg[j]);
            }
        } else {
            for (uint e = tid; e < BK * D4; e += WG) {
                const uint c = e / D4;
                const uint d4 = e - c * D4;
                kv_tile[c * KSTRIDE + d4] =
                    kt + c < key_stop ? ATT_LOAD_K(b, hkv, kt + c, d4) : vec4(0.0);
            }
        }
        if (kt == key_begin) {
            [[unroll]] for (uint j = 0u; j < ACC; j++) {
                const uint e = tid + j * WG;
                if (e < BQ * D4) {
                    q_tile[e] = qreg[j];
                }
            }
        }
        barrier();

        {
            // An invocation's scores share its key column c: each K vec4 is read from shared
            // memory once for its SR rows (the sums as a loop over the rows would make them,
            // d4 in order).
            const uint c = tid % BK, r0 = tid / BK;
            float s[SR];
            [[unroll]] for (uint j = 0u; j < SR; j++) {
                s[j] = 0.0;
            }
            for (uint d4 = 0u; d4 < D4; d4++) {
                const vec4 kk = kv_tile[c * KSTRIDE + d4];
                [[unroll]] for (uint j = 0u; j < SR; j++) {
                    const uint r = min(r0 + j * (WG / BK), BQ - 1u);
                    s[j] += dot(q_tile[r * D4 + d4], kk);
                }
            }
            [[unroll]] for (uint j = 0u; j < SR; j++) {
                const uint r = r0 + j * (WG / BK);
                if (r < BQ) {
                    p_tile[r * BK + c] = kt + c < row_limit[r] ? s[j] : NEG;
                }
            }
        }
        barrier();

        if (V_EARLY) {
            [[unroll]] for (uint j = 0u; j < VR; j++) {
                tile_store(tid + j * WG, vreg[j]);
            }
        } else {
            for (uint e = tid; e < BK * D4; e += WG) {
                const uint c = e / D4;
                const uint d4 = e - c * D4;
                kv_tile[c * KSTRIDE + d4] =
                    kt + c < key_stop ? ATT_LOAD_V(b, hkv, kt + c, d4) : vec4(0.0);
            }
        }
        float local_max = NEG;
        for (uint c = lane; c < BK; c += TPR) {
            local_max = max(local_max, p_tile[my_row * BK + c]);
        }
        red_max[tid] = local_max;
        barrier();
        reduce_rows_max(tid, lane);

        const float m_old = row_m[my_row];
        const float m_new = max(m_old, red_max[my_row * TPR]);
        float local_sum = 0.0;
        for (uint c = lane; c < BK; c += TPR) {
            const float s = p_tile[my_row * BK + c];
            const float p = s == NEG ? 0.0 : exp2(s - m_new);
            p_tile[my_row * BK + c] = p;
            local_sum += p;
        }
        red_sum[tid] = local_sum;
        barrier();
        reduce_rows_sum(tid, lane);

        if (lane == 0u) {
            // A row that has seen no visible key keeps m = NEG, l = 0: nothing to rescale.
            const float alpha = m_old == NEG ? 0.0 : exp2(m_old - m_new);
            row_alpha[my_row] = alpha;
            row_l[my_row] = row_l[my_row] * alpha + red_sum[my_row * TPR];
            row_m[my_row] = m_new;
        }
        barrier();

        [[unroll]] for (uint j = 0u; j < ACC; j++) {
            const uint e = tid + j * WG;
            if (e < BQ * D4) {
                acc[j] *= row_alpha[e / D4];
            }
        }
        // Not unrolled: each pass is already ACC vec4 FMAs wide, and unrolling BK more times
        // made Lavapipe's compile of one variant take 5 s instead of 0.5.
        // Where WG is a multiple of D4, an invocation's ACC vec4s are one column d4 of the
        // output rows: each V vec4 is read once for all of them.
        [[dont_unroll]] for (uint c = 0u; c < BK; c++) {
            const vec4 vv = kv_tile[c * KSTRIDE + tid % D4];
            [[unroll]] for (uint j = 0u; j < ACC; j++) {
                const uint e = tid + j * WG;
                if (e < BQ * D4) {
                    const uint r = e / D4;
                    acc[j] += p_tile[r * BK + c] *
                              (WG % D4 == 0u ? vv : kv_tile[c * KSTRIDE + (e - r * D4)]);
                }
            }
        }
        barrier();
    }
    if (key_stop <= key_begin) {
        barrier();
    }
}

#endif
