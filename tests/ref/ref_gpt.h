/* CPU reference of the GPT-style decoder's training step (mcl_gpt_*): forward, loss,
 * gradients of every parameter, gradient clipping and AdamW, all in double precision.
 * Written for clarity, not speed: one plain loop nest per operation, the backward pass
 * written from the calculus one step at a time.
 *
 * The model (every weight matrix stored [out, in], y = x W^T; rows are the B * T token
 * positions, batch-major):
 *   x = tok_embedding[tokens]                          (an id outside [0, V): a zero row)
 *   per layer l:
 *     h = rmsnorm(x; attn_norm)                        x / sqrt(mean(x^2) + eps) * w
 *     q = h wq^T [B, T, H, Dh], k = h wk^T, v = h wv^T [B, T, Hkv, Dh]
 *     q, k rotated by RoPE at position t (0-based in the sequence): pair i of a head (2i, 2i+1)
 *       interleaved or (i, i + Dh/2) split-half, by angle t * theta^(-2i/Dh):
 *       (a, b) -> (a cos - b sin, a sin + b cos)
 *     att = causal attention per (b, query head hq) with key head hq / (H / Hkv),
 *       scale 1 / sqrt(Dh), softmax over keys 0..t
 *     x = x + att wo^T
 *     h2 = rmsnorm(x; mlp_norm); s = silu(h2 w_gate^T) * (h2 w_up^T); x = x + s w_down^T
 *   hf = rmsnorm(x; final_norm); logits = hf head^T (tied: hf tok_embedding^T)
 *   loss = mean over positions whose target lies in [0, V) of logsumexp(logits) - logits[target]
 *     (0 when no position is valid).
 *
 * Parameters, in index order: "tok_embedding" [V, D]; per layer "layers.<l>.attn_norm" [D],
 * ".wq" [H*Dh, D], ".wk" [Hkv*Dh, D], ".wv" [Hkv*Dh, D], ".wo" [D, H*Dh], ".mlp_norm" [D],
 * ".w_gate" [F, D], ".w_up" [F, D], ".w_down" [D, F]; "final_norm" [D]; "head" [V, D] when
 * not tied. The functions read them from one flat array at per-parameter offsets (in
 * elements), so that they can consume a flat buffer laid out as mcl_gpt_param()
 * reports; gradients are written at the same offsets. */
#ifndef MCL_TEST_REF_GPT_H
#define MCL_TEST_REF_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"

/* The values of mcl_rope_layout. */
enum { REF_ROPE_INTERLEAVED = 0, REF_ROPE_SPLIT_HALF = 1 };

/* A model's shape, as mcl_gpt_desc. Zeros take the same defaults: kv_heads 0 means heads,
 * rope_theta 0 means 10000, norm_eps 0 means 1e-5 (the float 1e-5f, widened, as the GPU's
 * float configuration holds it). exact_rope_angle 0 computes each RoPE angle with
 * ref_rope_angle() (the float steps mcl_rope takes, then used in double); 1 computes
 * t * theta^(-2i/Dh) in double. The rotation itself is in double either way. */
typedef struct ref_gpt_config {
    int vocab;
    int dim;
    int layers;
    int heads;
    int kv_heads;
    int hidden;
    int tied_head;
    int rope_layout;      /* REF_ROPE_INTERLEAVED or REF_ROPE_SPLIT_HALF */
    float rope_theta;
    float norm_eps;
    int exact_rope_angle;
} ref_gpt_config;

/* The fields of an mcl_gpt_desc (exact_rope_angle 0: the angles mcl_rope computes). */
ref_gpt_config ref_gpt_config_from_mcl(const mcl_gpt_desc *config);

/* 1 if the shape is one the reference accepts (positive sizes, dim divisible by heads into
 * an even head width, heads divisible by kv_heads), else 0. */
int ref_gpt_config_valid(const ref_gpt_config *cfg);

/* Number of parameter tensors: 2 + 9 layers, plus 1 for an untied head. */
int ref_gpt_param_tensors(const ref_gpt_config *cfg);

/* The index-th parameter: its name (snprintf into buf), its shape (returns ndim, 1 or 2;
 * shape may be NULL), its element count, and whether AdamW decays it (1 for the 2-D ones:
 * embedding, weight matrices, head; 0 for norm weights). An index out of range gives "",
 * 0, 0 and 0. */
void ref_gpt_param_name(const ref_gpt_config *cfg, int index, char *buf, size_t size);
int ref_gpt_param_shape(const ref_gpt_config *cfg, int index, int64_t shape[2]);
int64_t ref_gpt_param_numel(const ref_gpt_config *cfg, int index);
int ref_gpt_param_decays(const ref_gpt_config *cfg, int index);

/* Packed offsets, one per parameter in index order, each parameter right after the
 * previous; returns the total number of elements. */
int64_t ref_gpt_packed_offsets(const ref_gpt_config *cfg, int64_t *offsets);

/* Forward (and backward) over tokens [B, T] with targets [B, T]. params holds every
 * parameter at offsets[i]. Returns the loss, or NaN for an invalid configuration, B or T
 * below 1, or memory exhausted. logits, if not NULL, receives [B * T, V] (every row, ignored
 * targets included). grads, if not NULL, receives the gradient of the loss for every
 * parameter at the same offsets (each parameter's range overwritten; what lies between
 * parameters is left as it is); a tied embedding gets both its contributions. */
double ref_gpt_forward_backward(const ref_gpt_config *cfg, const float *params,
                                const int64_t *offsets, const int32_t *tokens,
                                const int32_t *targets, int B, int T, double *grads,
                                double *logits);
/* The same with double parameters (finite differences, training in double). */
double ref_gpt_forward_backward_d(const ref_gpt_config *cfg, const double *params,
                                  const int64_t *offsets, const int32_t *tokens,
                                  const int32_t *targets, int B, int T, double *grads,
                                  double *logits);

/* Optimizer hyper-parameters, as mcl_gpt_set_optimizer() takes them. beta1, beta2, eps 0
 * mean 0.9f, 0.999f, 1e-8f (the float defaults of mcl_adamw_step, widened). step counts
 * from 1 (bias correction 1 - beta^step). max_grad_norm <= 0, infinite or NaN: no
 * clipping. */
typedef struct ref_gpt_adamw {
    double lr;
    double beta1;
    double beta2;
    double eps;
    double weight_decay;
    int64_t step;
    double max_grad_norm;
} ref_gpt_adamw;

/* One optimizer step of mcl_gpt_step() on double parameters and moments (at offsets, as
 * above; m and v zero before the first step), updated in place. Exactly one of grads_f and
 * grads_d is used (grads_f when not NULL). norm = the L2 norm of every parameter's gradient
 * together, in double; if clipping is on and norm > max_grad_norm, every gradient is
 * multiplied by max_grad_norm / norm (a NaN norm clips nothing, an infinite one zeroes
 * them); then per element: p -= lr * wd * p (2-D parameters only), m = b1 m + (1 - b1) g,
 * v = b2 v + (1 - b2) g^2, p -= lr * (m / (1 - b1^step)) / (sqrt(v / (1 - b2^step)) + eps).
 * The gradients are not modified. Returns norm (before clipping). */
double ref_gpt_step(const ref_gpt_config *cfg, const int64_t *offsets, double *params,
                    const float *grads_f, const double *grads_d, double *m, double *v,
                    const ref_gpt_adamw *opt);

#endif
