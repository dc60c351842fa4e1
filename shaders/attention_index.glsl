// attention_index.glsl: the index arithmetic and head-vector loads that the attention
// kernels share (attention_tile.glsl for the forward, attention_backward_common.glsl for the
// backward). The including file declares before it: the specialization constant D (head
// dimension), buffers q, k and v, and push constants `pc` with seq_q, seq_kv, kv_len,
// heads_q, heads_kv, group and causal as in attention_tile.glsl.
#ifndef ATTENTION_INDEX_GLSL
#define ATTENTION_INDEX_GLSL

// Index of element 0 of row rho's head vector (kv head hkv, batch b) in q and tensors of
// q's shape (out, dout, dq).
uint q_base(uint b, uint hkv, uint rho) {
    const uint t = rho / pc.group;
    const uint hq = hkv * pc.group + (rho - t * pc.group);
    return ((b * pc.seq_q + t) * pc.heads_q + hq) * D;
}

// The k/v batch that query batch b reads: b itself, unless the including kernel maps it.
#ifndef KV_BATCH
#define KV_BATCH(b) (b)
#endif

// Index of element 0 of key s's head vector in k and tensors of k's shape (v, dk, dv).
uint kv_base(uint b, uint hkv, uint s) {
    return ((KV_BATCH(b) * pc.seq_kv + s) * pc.heads_kv + hkv) * D;
}

// Elements d4 * 4 .. d4 * 4 + 3 of a head vector, zero past D.
vec4 load_q(uint base, uint d4) {
    vec4 r = vec4(0.0);
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        if (d4 * 4u + i < D) {
            r[i] = q[base + d4 * 4u + i];
        }
    }
    return r;
}

vec4 load_k(uint base, uint d4) {
    vec4 r = vec4(0.0);
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        if (d4 * 4u + i < D) {
            r[i] = float(k[base + d4 * 4u + i]);
        }
    }
    return r;
}

vec4 load_v(uint base, uint d4) {
    vec4 r = vec4(0.0);
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
        if (d4 * 4u + i < D) {
            r[i] = float(v[base + d4 * 4u + i]);
        }
    }
    return r;
}

// The keys in use: the push constant, unless the including kernel reads them from a buffer.
#ifndef KV_LEN
#define KV_LEN pc.kv_len
#endif

// Keys visible to row rho: all kv_len, or with the causal mask those up to its position
// counted from the end of the cache.
uint visible_keys(uint rho) {
    if (pc.causal == 0u) {
        return KV_LEN;
    }
    const int t = int(rho / pc.group);
    const int limit = t + int(KV_LEN) - int(pc.seq_q) + 1;
    return uint(clamp(limit, 0, int(KV_LEN)));
}

#endif
