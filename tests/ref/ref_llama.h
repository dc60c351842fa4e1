/* CPU reference of a llama-family decoder's forward pass (llama 1-3, mistral, qwen2), in double
 * precision from host f32 weights: what an inference engine's logits are compared against.
 * Written for clarity, not speed: one plain loop nest per operation.
 *
 * The model (every weight [N, K] row-major, y = x W^T; t the position, 0-based):
 *   x = token_embd[token]
 *   per layer (blk[l]):
 *     h = rmsnorm(x; attn_norm)                       x / sqrt(mean(x^2) + eps) * w
 *     q = h attn_q^T (+ attn_q_bias) [heads, head_dim]; k, v likewise [kv_heads, head_dim]
 *     q, k rotated by RoPE: pair i of a head is elements (i, i + head_dim / 2) (Hugging Face's
 *       row order, MCL_ROPE_SPLIT_HALF), angle t * theta^(-2i / head_dim) (divided by
 *       rope_freqs[i] when given: llama 3.1's scaling, as llama.cpp applies rope_freqs.weight),
 *       computed in double: (a, b) -> (a cos - b sin, a sin + b cos)
 *     att = causal attention: query head hq over the keys and values of kv head
 *       hq / (heads / kv_heads) at positions 0..t, scores scaled by 1 / sqrt(head_dim)
 *     x = x + att attn_output^T
 *     h2 = rmsnorm(x; ffn_norm); x = x + (silu(h2 ffn_gate^T) * (h2 ffn_up^T)) ffn_down^T
 *   logits = rmsnorm(x; output_norm) output^T (tied_output: token_embd in place of output)
 *
 * A mixture of experts (experts > 0) replaces the feed-forward of every block: with h2 as
 * above, p = softmax(h2 ffn_gate_inp^T) over the experts; the experts_used largest of p (equal
 * ones: the lower index first) are the token's experts e_j with weights w_j = p_j, divided by
 * their sum where experts_norm is set (Mixtral) and as they are otherwise (qwen2moe);
 *   x = x + sum_j w_j (silu(h2 gate_e^T) * (h2 up_e^T)) down_e^T  (slice e of the _exps)
 * and with a shared expert (shared_hidden > 0, qwen2moe) also
 *   x = x + sigmoid(h2 . ffn_gate_inp_shexp) (silu(h2 gate_s^T) * (h2 up_s^T)) down_s^T.
 *
 * Weight names are GGUF's (token_embd.weight, blk.N.attn_q.weight, ...), and q and k are in
 * Hugging Face's row order, as mcl_model_open() gives them (docs/models.md).
 *
 * Incremental decoding: ref_llama_forward_kv() continues from a cache of the keys and values
 * of earlier positions. ref_llama_forward() is that with an empty cache, so the last row of a
 * forward over tokens[0..t] is by construction the logits a decode step at position t must
 * give; tests may compare a decode step against either. */
#ifndef MCL_TEST_REF_LLAMA_H
#define MCL_TEST_REF_LLAMA_H

#include <stdint.h>

/* One decoder block's weights. Biases are read only when ref_llama.qkv_bias is set. */
typedef struct ref_llama_layer {
    const float *attn_norm;   /* [dim] */
    const float *attn_q;      /* [heads * head_dim, dim] */
    const float *attn_k;      /* [kv_heads * head_dim, dim] */
    const float *attn_v;      /* [kv_heads * head_dim, dim] */
    const float *attn_q_bias; /* [heads * head_dim] */
    const float *attn_k_bias; /* [kv_heads * head_dim] */
    const float *attn_v_bias; /* [kv_heads * head_dim] */
    const float *attn_output; /* [dim, heads * head_dim] */
    const float *ffn_norm;    /* [dim] */
    const float *ffn_gate;    /* [hidden, dim] */
    const float *ffn_up;      /* [hidden, dim] */
    const float *ffn_down;    /* [dim, hidden] */
    /* A mixture's (ref_llama.experts > 0; the dense three above are then not read): */
    const float *ffn_gate_inp;      /* [experts, dim]: the router */
    const float *ffn_gate_exps;     /* [experts, expert_hidden, dim] */
    const float *ffn_up_exps;       /* [experts, expert_hidden, dim] */
    const float *ffn_down_exps;     /* [experts, dim, expert_hidden] */
    const float *ffn_gate_inp_shexp; /* [dim]: the shared expert's gate (shared_hidden > 0) */
    const float *ffn_gate_shexp;    /* [shared_hidden, dim] */
    const float *ffn_up_shexp;      /* [shared_hidden, dim] */
    const float *ffn_down_shexp;    /* [dim, shared_hidden] */
} ref_llama_layer;

/* A model: its shape and pointers to its weights (borrowed, never freed here). */
typedef struct ref_llama {
    int dim;
    int layers;
    int heads;
    int kv_heads;             /* 0 means heads */
    int head_dim;             /* 0 means dim / heads; any even width is accepted */
    int hidden;               /* the feed-forward width */
    int vocab;
    double norm_eps;          /* a file's float epsilon, widened: (double)1e-5f, not 1e-5 */
    double rope_theta;        /* RoPE's base, > 0 */
    const float *rope_freqs;  /* [head_dim / 2] divisors of each pair's frequency, or NULL */
    int qkv_bias;             /* 1: add attn_q_bias, attn_k_bias, attn_v_bias */
    int tied_output;          /* 1: token_embd is the output head (output is not read) */
    int rope_interleaved;     /* 0 (the model): pairs (i, i + head_dim / 2); 1: pairs
                                 (2i, 2i + 1), for negative controls and for q and k in
                                 llama.cpp's permuted file order */
    int experts;              /* 0: dense feed-forward blocks; else experts per block */
    int experts_used;         /* the experts each token takes, 1..experts */
    int expert_hidden;        /* each expert's feed-forward width; 0 means hidden */
    int experts_norm;         /* 1: the chosen experts' weights renormalised to sum 1 */
    int shared_hidden;        /* > 0: a shared expert of this width, with its sigmoid gate */
    const float *token_embd;  /* [vocab, dim] */
    const ref_llama_layer *blk; /* [layers] */
    const float *output_norm; /* [dim] */
    const float *output;      /* [vocab, dim] */
} ref_llama;

/* 1 if the model is one the reference computes: positive sizes, heads divisible by
 * kv_heads, an even head width, theta > 0, eps >= 0, and every weight it reads not NULL. */
int ref_llama_valid(const ref_llama *m);

/* Keys (after RoPE) and values of the positions run so far, per layer, in double. */
typedef struct ref_llama_kv {
    int capacity;             /* positions it can hold */
    int length;               /* positions held: the next token's position */
    int layers, width;        /* width = kv_heads * head_dim */
    double *k, *v;            /* [layers, capacity, width] */
} ref_llama_kv;

/* An empty cache of `capacity` positions for m. Returns 0, or -1 (invalid model or capacity,
 * out of memory; *kv is then empty and ref_llama_kv_free() may still be called). */
int ref_llama_kv_init(ref_llama_kv *kv, const ref_llama *m, int capacity);

/* Free what the cache holds (kv may be NULL; a freed cache may be freed again). */
void ref_llama_kv_free(ref_llama_kv *kv);

/* The logits [T, vocab] of `tokens` [T] at positions kv->length .. kv->length + T - 1, each
 * attending to every earlier position in the cache and in tokens; their keys and values are
 * appended (kv->length grows by T). logits may be NULL (only the cache is filled). Returns 0,
 * or -1 for an invalid model, T < 1, a token outside [0, vocab), a cache too short or made
 * for another shape, or memory exhausted (the cache is then unchanged). */
int ref_llama_forward_kv(const ref_llama *m, ref_llama_kv *kv, const int32_t *tokens, int T,
                         double *logits);

/* The logits [T, vocab] of tokens [T] at positions 0..T-1: ref_llama_forward_kv() on an empty
 * cache. Returns 0 or -1 as above. */
int ref_llama_forward(const ref_llama *m, const int32_t *tokens, int T, double *logits);

/* The smallest routing margin of a mixture's forward passes since the last reset: over every
 * row and layer, the probability of the last expert chosen less the best one not chosen (1
 * before any mixture ran). Where a path perturbs the activations (the integer-dot path's
 * 8-bit quantization moves a router probability by about 1e-3), a margin near that flips the
 * choice, and the logits then differ by far more than the path's rounding: a comparison with
 * the reference is only sound where the margins are well clear of it. Not thread-safe. */
void ref_llama_margin_reset(void);
double ref_llama_margin(void);

#endif
