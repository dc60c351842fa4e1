// attention_tile.glsl: the flash-attention inner loop shared by attention_f32.comp (whole key
// range, writes the output) and attention_split_f32.comp (one slice of the keys, writes a
// partial result that attention_combine_f32.comp merges).
//
// A workgroup owns BQ query rows of one (batch, kv head) and walks the keys in tiles of BK:
// rows are (t, g) pairs, g in [0, G) the query heads that share the kv head (grouped-query),
// so a K/V tile loaded once serves all of them. Per key tile:
//   1. K tile -> shared memory (rows padded to D + 1 floats: the score loop reads one column
//      across rows, which would otherwise hit one bank);
//   2. scores S = Q K^T (Q was pre-scaled by scale * log2(e), so exp2 replaces exp), masked
//      keys set to NEG;
//   3. V tile -> the same shared buffer, while each row's max and sum are reduced by a tree
//      over its WG / BQ threads (shared memory, no subgroup operations: correct for any
//      subgroup size);
//   4. O = O * alpha + P V, with alpha = exp2(m_old - m_new) the online-softmax rescale.
// The T x S score matrix never exists; one BQ x BK tile of it lives in shared memory.
//
// Specialization constants (constant 0 is the workgroup size WG):
//   1: D   head dimension (exact)     2: BQ  query rows per workgroup, a power of 2 <= WG
//   3: BK  keys per tile
// Shared memory: 4 * (BQ * D + BK * (D + 1) + BQ * BK + 2 * WG + 4 * BQ) bytes; the host
// picks BQ and BK to fit the device's maxComputeSharedMemorySize.
#ifndef ATTENTION_TILE_GLSL
#define ATTENTION_TILE_GLSL

layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint D = 64;
layout(constant_id = 2) const uint BQ = 16;
layout(constant_id = 3) const uint BK = 32;

const uint WG = gl_WorkGroupSize.x;
const uint TPR = WG / BQ;                  // threads per row in the softmax reductions
const uint KSTRIDE = D + 1u;
const uint ACC = (BQ * D + WG - 1u) / WG;  // output elements each invocation accumulates

// A masked score, and the running max of a row that has seen no key yet. Finite, so that no
// step depends on how a driver treats infinities.
const float NEG = -3.0e38;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { float v[]; };

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
} pc;

shared float q_tile[BQ * D];
shared float kv_tile[BK * KSTRIDE];
shared float p_tile[BQ * BK];
shared float red_max[WG];
shared float red_sum[WG];
shared float row_m[BQ];      // running max, log2 domain
shared float row_l[BQ];      // running sum of exp2(score - row_m)
shared float row_alpha[BQ];  // rescale of this tile
shared uint row_limit[BQ];   // keys < row_limit are visible to the row

float acc[ACC];

// The q element (row rho of kv head hkv, batch b, column d) as an index into q and out.
uint q_index(uint b, uint hkv, uint rho, uint d) {
    const uint t = rho / pc.group;
    const uint hq = hkv * pc.group + (rho - t * pc.group);
    return ((b * pc.seq_q + t) * pc.heads_q + hq) * D + d;
}

uint kv_index(uint b, uint hkv, uint s, uint d) {
    return ((b * pc.seq_kv + s) * pc.heads_kv + hkv) * D + d;
}

// Keys visible to row rho: all kv_len, or with the causal mask those up to its position
// counted from the end of the cache.
uint visible_keys(uint rho) {
    if (pc.causal == 0u) {
        return pc.kv_len;
    }
    const int t = int(rho / pc.group);
    const int limit = t + int(pc.kv_len) - int(pc.seq_q) + 1;
    return uint(clamp(limit, 0, int(pc.kv_len)));
}

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
// On return acc[] holds the unnormalised output (element tid + j * WG of the BQ x D tile),
// and row_m / row_l each row's max and sum.
void attend(uint b, uint hkv, uint row0, uint key_begin, uint key_end) {
    const uint tid = gl_LocalInvocationID.x;
    const uint my_row = tid / TPR;
    const uint lane = tid - my_row * TPR;

    for (uint e = tid; e < BQ * D; e += WG) {
        const uint rho = row0 + e / D;
        q_tile[e] = rho < pc.rows ? q[q_index(b, hkv, rho, e % D)] * pc.scale_log2 : 0.0;
    }
    if (tid < BQ) {
        const uint rho = row0 + tid;
        row_m[tid] = NEG;
        row_l[tid] = 0.0;
        row_limit[tid] = rho < pc.rows ? min(visible_keys(rho), key_end) : 0u;
    }
    for (uint j = 0u; j < ACC; j++) {
        acc[j] = 0.0;
    }
    // The last row of the tile sees the most keys: no tile past its limit is needed.
    const uint last_row = min(row0 + BQ, pc.rows) - 1u;
    const uint key_stop = min(key_end, visible_keys(last_row));
    barrier();

    for (uint kt = key_begin; kt < key_stop; kt += BK) {
        for (uint e = tid; e < BK * D; e += WG) {
            const uint c = e / D;
            const uint d = e - c * D;
            kv_tile[c * KSTRIDE + d] = kt + c < key_stop ? k[kv_index(b, hkv, kt + c, d)] : 0.0;
        }
        barrier();

        for (uint e = tid; e < BQ * BK; e += WG) {
            const uint r = e / BK;
            const uint c = e - r * BK;
            float s = 0.0;
            for (uint d = 0u; d < D; d++) {
                s += q_tile[r * D + d] * kv_tile[c * KSTRIDE + d];
            }
            p_tile[e] = kt + c < row_limit[r] ? s : NEG;
        }
        barrier();

        for (uint e = tid; e < BK * D; e += WG) {
            const uint c = e / D;
            const uint d = e - c * D;
            kv_tile[c * KSTRIDE + d] = kt + c < key_stop ? v[kv_index(b, hkv, kt + c, d)] : 0.0;
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

        for (uint j = 0u; j < ACC; j++) {
            const uint e = tid + j * WG;
            if (e < BQ * D) {
                const uint r = e / D;
                const uint d = e - r * D;
                float o = acc[j] * row_alpha[r];
                for (uint c = 0u; c < BK; c++) {
                    o += p_tile[r * BK + c] * kv_tile[c * KSTRIDE + d];
                }
                acc[j] = o;
            }
        }
        barrier();
    }
}

#endif
