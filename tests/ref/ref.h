/* CPU reference implementations that the device suites compare against. Written for
 * clarity, not speed: a reference must be obviously right. */
#ifndef MCL_TEST_REF_H
#define MCL_TEST_REF_H

#include <stddef.h>
#include <stdint.h>

/* y[i] = a[i] + b[i] */
void ref_add_f32(const float *a, const float *b, float *y, size_t n);

/* c[p] = op(a[p]) op(b[p]) (+ bias) in double precision, rounded to float: a is stored
 * [batch][m][k] ([batch][k][m] with ta), b [batch][k][n] ([batch][n][k] with tb), or one
 * matrix for every batch when shared_b. */
void ref_matmul_f32(const float *a, int ta, const float *b, int tb, const float *bias, float *c,
                    int64_t batch, int64_t m, int64_t n, int64_t k, int shared_b);

/* The integer hash of shaders/hash.glsl. */
uint32_t ref_hash(uint32_t x);

/* What mcl_fill_pattern writes into word i. */
static inline uint32_t ref_pattern(uint32_t seed, uint32_t i)
{
    return ref_hash(seed ^ ref_hash(i));
}

/* Element-wise (ref_elementwise.c). Ops and activations take the values of mcl_binary_op and
 * mcl_activation; shapes are row-major, b broadcast onto a as mcl_binary() documents. */
enum { REF_BINARY_ADD = 0, REF_BINARY_SUB = 1, REF_BINARY_MUL = 2, REF_BINARY_DIV = 3 };
enum { REF_ACTIVATION_RELU = 0, REF_ACTIVATION_GELU = 1, REF_ACTIVATION_SILU = 2 };
void ref_binary_f32(int op, const float *a, const int64_t *a_shape, uint32_t a_ndim,
                    const float *b, const int64_t *b_shape, uint32_t b_ndim, float *y);
/* y = alpha * x + beta */
void ref_scale_f32(const float *x, float alpha, float beta, float *y, size_t n);
void ref_activate_f32(int act, const float *x, float *y, size_t n);
/* GELU in its erf form: not what MotifCL computes; a negative control tells them apart. */
void ref_gelu_erf_f32(const float *x, float *y, size_t n);
/* y = silu(gate) * up */
void ref_swiglu_f32(const float *gate, const float *up, float *y, size_t n);

/* Row operations (ref_rows.c) over `rows` rows of d elements, as motifcl.h documents them.
 * Softmax row r is query r % tq; reduce ops take mcl_reduce_op values; w and b may be NULL. */
enum { REF_REDUCE_SUM = 0, REF_REDUCE_MEAN = 1, REF_REDUCE_MAX = 2 };
void ref_softmax_f32(const float *x, size_t rows, size_t d, size_t tq, int causal, float scale,
                     float *y);
void ref_reduce_rows_f32(int op, const float *x, size_t rows, size_t d, float *y);
void ref_rmsnorm_f32(const float *x, const float *w, size_t rows, size_t d, float eps,
                     float *y);
void ref_layernorm_f32(const float *x, const float *w, const float *b, size_t rows, size_t d,
                       float eps, float *y);
/* LayerNorm with the variance as E[x^2] - E[x]^2 in float, which cancels when |mean| >> std:
 * wrong on purpose, for a negative control. No weight or bias. */
void ref_layernorm_naive_f32(const float *x, size_t rows, size_t d, float eps, float *y);

/* Layout (ref_layout.c). RoPE over x [batch, seq, heads, head_dim]: with exact_angle the
 * angle is position * theta_base^(-2i/head_dim) in double (the definition); without, it is
 * ref_rope_angle(), the float steps rope_f32.comp takes (double-float frequency and turns,
 * reduced to [-pi, pi]). Rotation in double either way. */
float ref_rope_angle(float theta_base, int64_t head_dim, int64_t pair, int64_t position);
void ref_rope_f32(const float *x, float *y, int64_t batch, int64_t seq, int64_t heads,
                  int64_t head_dim, int split_half, float theta_base, int64_t position_offset,
                  int exact_angle);
/* y[r, :] = table[ids[r], :], or zeros for an id outside [0, vocab). */
void ref_embedding_f32(const float *table, int64_t vocab, int64_t dim, const int32_t *ids,
                       int64_t rows, float *y);
/* y = x with axes permuted: y's dimension i is x's dimension perm[i]. */
void ref_permute_u32(const uint32_t *x, const int64_t *shape, uint32_t ndim,
                     const uint32_t *perm, uint32_t *y);
/* y = a and b joined along axis. */
void ref_concat_u32(const uint32_t *a, const int64_t *a_shape, const uint32_t *b,
                    const int64_t *b_shape, uint32_t ndim, uint32_t axis, uint32_t *y);

/* Attention (ref_attention.c): q [B, T, Hq, D], k, v [B, S, Hkv, D], out [B, T, Hq, D]; scores
 * in double, materialised. causal_shift (0 for the real thing) moves the causal edge and
 * kv_head_mode 1 maps query head h to kv head h % Hkv instead of h / (Hq / Hkv): both wrong on
 * purpose, for negative controls. A query that sees no key gets zeros. */
void ref_attention_f32(const float *q, const float *k, const float *v, float *out,
                       int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q,
                       int64_t heads_kv, int64_t dim, int64_t kv_len, int causal,
                       int64_t causal_shift, double scale, int kv_head_mode);

/* Loss (ref_loss.c): the mean cross-entropy over rows whose target lies in [0, vocab) (0 if
 * none), in double; lse (may be NULL) receives every row's logsumexp. divide_by_all_rows 1
 * divides by all rows instead: wrong on purpose, for a negative control. */
double ref_cross_entropy_f32(const float *logits, const int32_t *targets, int64_t rows,
                             int64_t vocab, float *lse, int divide_by_all_rows);

/* Backward passes (ref_backward.c), in double on double arrays: forwards for the finite
 * difference checks (the float references above round their outputs) and the analytic
 * gradients as motifcl.h documents them. w may be NULL (ones); dw, db may be NULL (not
 * wanted). drop_mean_term 1 leaves mean(g) out of LayerNorm's dx: wrong on purpose, for a
 * negative control. */
void ref_activate_fwd_d(int act, const double *x, double *y, size_t n);
void ref_activate_bwd_d(int act, const double *x, const double *dy, double *dx, size_t n);
void ref_swiglu_fwd_d(const double *gate, const double *up, double *y, size_t n);
void ref_swiglu_bwd_d(const double *gate, const double *up, const double *dy, double *dgate,
                      double *dup, size_t n);
void ref_softmax_fwd_d(const double *x, size_t rows, size_t d, size_t tq, int causal,
                       double scale, double *y);
void ref_softmax_bwd_d(const double *y, const double *dy, size_t rows, size_t d, double scale,
                       double *dx);
void ref_rmsnorm_fwd_d(const double *x, const double *w, size_t rows, size_t d, double eps,
                       double *y);
void ref_rmsnorm_bwd_d(const double *x, const double *w, const double *dy, size_t rows,
                       size_t d, double eps, double *dx, double *dw);
void ref_layernorm_fwd_d(const double *x, const double *w, const double *b, size_t rows,
                         size_t d, double eps, double *y);
void ref_layernorm_bwd_d(const double *x, const double *w, const double *dy, size_t rows,
                         size_t d, double eps, int drop_mean_term, double *dx, double *dw,
                         double *db);

/* Training (ref_train.c). RoPE backward: dx = R(-angle) dy with ref_rope_angle's angle;
 * wrong_sign 1 rotates by +angle (the forward), for a negative control. Embedding backward:
 * dtable[v] = sum of dout rows with id v (last_only 1 keeps only the last: wrong on purpose).
 * Cross-entropy backward: dloss * (softmax - onehot) / valid rows, zero for ignored rows
 * (divide_by_all_rows 1: wrong on purpose). Optimizer steps update double state in place. */
void ref_rope_backward_f32(const float *dy, float *dx, int64_t batch, int64_t seq,
                           int64_t heads, int64_t head_dim, int split_half, float theta_base,
                           int64_t position_offset, int wrong_sign);
void ref_embedding_backward_f32(const int32_t *ids, const float *dout, int64_t rows,
                                int64_t vocab, int64_t dim, float *dtable, int last_only);
void ref_cross_entropy_backward_f32(const float *logits, const int32_t *targets, int64_t rows,
                                    int64_t vocab, double dloss, float *dlogits,
                                    int divide_by_all_rows);
void ref_adamw_step(double *p, const float *g, double *m, double *v, size_t n, double lr,
                    double beta1, double beta2, double eps, double weight_decay, int64_t step);
/* velocity NULL: no momentum buffer. */
void ref_sgd_step(double *p, const float *g, double *velocity, size_t n, double lr,
                  double momentum, double weight_decay);
double ref_sum_squares(const float *x, size_t n);

/* Attention backward (ref_attention_backward.c). ref_attention_backward_f32: dq, dk, dv of
 * L = sum(dout * attention(q, k, v)) in double (shapes and arguments as ref_attention_f32,
 * causal_shift and kv_head_mode wrong on purpose when non-zero), rounded to float; keys at or
 * past kv_len and queries that see no key get zeros. ref_attention_fwd_d: the forward on
 * double arrays, for finite differences. */
void ref_attention_backward_f32(const float *q, const float *k, const float *v,
                                const float *dout, float *dq, float *dk, float *dv,
                                int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q,
                                int64_t heads_kv, int64_t dim, int64_t kv_len, int causal,
                                int64_t causal_shift, double scale, int kv_head_mode);
void ref_attention_fwd_d(const double *q, const double *k, const double *v, double *out,
                         int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q,
                         int64_t heads_kv, int64_t dim, int64_t kv_len, int causal,
                         double scale);

/* Mixtures of experts (ref_moe.c). Routing of rows of logits [rows, experts] (experts <= 256):
 * the softmax in double, the k largest probabilities (an exact tie to the lower index; to the
 * higher with ties_high, wrong on purpose for a negative control), their weights renormalised
 * to sum 1 where norm, else the softmax's. */
void ref_moe_route(const float *logits, int64_t rows, int64_t experts, int k, int norm,
                   int ties_high, int32_t *ids, double *weights);
/* out[r, :] (+)= sum_j weights[r, j] y[r k + j, :], in double, rounded to float. */
void ref_moe_combine(const float *y, const float *weights, int64_t rows, int k, int64_t dim,
                     float *out, int accumulate);

#endif
