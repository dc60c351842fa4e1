/* CPU reference of the GPT training step (ref_gpt.h), in double precision. */
#include "ref_gpt.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

/* Parameters of one layer, in index order after the embedding. */
enum { P_ATTN_NORM, P_WQ, P_WK, P_WV, P_WO, P_MLP_NORM, P_W_GATE, P_W_UP, P_W_DOWN, P_PER_LAYER };
static const char *const layer_names[P_PER_LAYER] = {"attn_norm", "wq",     "wk",
                                                     "wv",        "wo",     "mlp_norm",
                                                     "w_gate",    "w_up",   "w_down"};

/* The configuration with its defaults filled in. */
typedef struct shape {
    int64_t V, D, L, H, Hkv, Dh, F;
    int tied, split_half, exact_angle;
    float theta;
    double eps;
} shape;

static int resolve(const ref_gpt_config *cfg, shape *s)
{
    if (!cfg)
        return 0;
    s->V = cfg->vocab;
    s->D = cfg->dim;
    s->L = cfg->layers;
    s->H = cfg->heads;
    s->Hkv = cfg->kv_heads ? cfg->kv_heads : cfg->heads;
    s->F = cfg->hidden;
    s->tied = cfg->tied_head != 0;
    s->split_half = cfg->rope_layout == REF_ROPE_SPLIT_HALF;
    s->exact_angle = cfg->exact_rope_angle != 0;
    s->theta = cfg->rope_theta != 0.0f ? cfg->rope_theta : 10000.0f;
    s->eps = (double)(cfg->norm_eps != 0.0f ? cfg->norm_eps : 1e-5f);
    if (s->V < 1 || s->D < 1 || s->L < 0 || s->H < 1 || s->Hkv < 1 || s->F < 1)
        return 0;
    if (s->D % s->H != 0 || s->H % s->Hkv != 0)
        return 0;
    s->Dh = s->D / s->H;
    if (s->Dh % 2 != 0)
        return 0;
    if (cfg->rope_layout != REF_ROPE_INTERLEAVED && cfg->rope_layout != REF_ROPE_SPLIT_HALF)
        return 0;
    return 1;
}

ref_gpt_config ref_gpt_config_from_mcl(const mcl_gpt_desc *config)
{
    ref_gpt_config c;
    memset(&c, 0, sizeof c);
    c.vocab = config->vocab;
    c.dim = config->dim;
    c.layers = config->layers;
    c.heads = config->heads;
    c.kv_heads = config->kv_heads;
    c.hidden = config->hidden;
    c.tied_head = config->tied_head;
    c.rope_layout = (int)config->rope_layout;
    c.rope_theta = config->rope_theta;
    c.norm_eps = config->norm_eps;
    c.exact_rope_angle = 0;
    return c;
}

int ref_gpt_config_valid(const ref_gpt_config *cfg)
{
    shape s;
    return resolve(cfg, &s);
}

int ref_gpt_param_tensors(const ref_gpt_config *cfg)
{
    shape s;
    if (!resolve(cfg, &s))
        return 0;
    return (int)(2 + P_PER_LAYER * s.L + (s.tied ? 0 : 1));
}

/* What the index-th parameter is: kind -1 the embedding, -2 the final norm, -3 the head,
 * else a P_* of layer *layer. Returns 0 for an index out of range. */
static int classify(const shape *s, int index, int *kind, int64_t *layer)
{
    int64_t n = 2 + P_PER_LAYER * s->L + (s->tied ? 0 : 1);
    if (index < 0 || index >= n)
        return 0;
    *layer = -1;
    if (index == 0) {
        *kind = -1;
    } else if (index <= P_PER_LAYER * s->L) {
        *layer = (index - 1) / P_PER_LAYER;
        *kind = (int)((index - 1) % P_PER_LAYER);
    } else if (index == 1 + P_PER_LAYER * s->L) {
        *kind = -2;
    } else {
        *kind = -3;
    }
    return 1;
}

void ref_gpt_param_name(const ref_gpt_config *cfg, int index, char *buf, size_t size)
{
    shape s;
    int kind;
    int64_t layer;
    if (!buf || size == 0)
        return;
    buf[0] = '\0';
    if (!resolve(cfg, &s) || !classify(&s, index, &kind, &layer))
        return;
    if (kind == -1)
        snprintf(buf, size, "tok_embedding");
    else if (kind == -2)
        snprintf(buf, size, "final_norm");
    else if (kind == -3)
        snprintf(buf, size, "head");
    else
        snprintf(buf, size, "layers.%lld.%s", (long long)layer, layer_names[kind]);
}

int ref_gpt_param_shape(const ref_gpt_config *cfg, int index, int64_t shape_out[2])
{
    shape s;
    int kind;
    int64_t layer, dims[2] = {0, 0};
    int ndim = 0;
    if (resolve(cfg, &s) && classify(&s, index, &kind, &layer)) {
        ndim = 2;
        switch (kind) {
        case -1:
        case -3: dims[0] = s.V; dims[1] = s.D; break;
        case -2:
        case P_ATTN_NORM:
        case P_MLP_NORM: ndim = 1; dims[0] = s.D; break;
        case P_WQ: dims[0] = s.H * s.Dh; dims[1] = s.D; break;
        case P_WK:
        case P_WV: dims[0] = s.Hkv * s.Dh; dims[1] = s.D; break;
        case P_WO: dims[0] = s.D; dims[1] = s.H * s.Dh; break;
        case P_W_GATE:
        case P_W_UP: dims[0] = s.F; dims[1] = s.D; break;
        default: dims[0] = s.D; dims[1] = s.F; break; /* P_W_DOWN */
        }
    }
    if (shape_out) {
        shape_out[0] = dims[0];
        shape_out[1] = dims[1];
    }
    return ndim;
}

int64_t ref_gpt_param_numel(const ref_gpt_config *cfg, int index)
{
    int64_t d[2];
    int ndim = ref_gpt_param_shape(cfg, index, d);
    return ndim == 0 ? 0 : ndim == 1 ? d[0] : d[0] * d[1];
}

int ref_gpt_param_decays(const ref_gpt_config *cfg, int index)
{
    return ref_gpt_param_shape(cfg, index, NULL) == 2;
}

int64_t ref_gpt_packed_offsets(const ref_gpt_config *cfg, int64_t *offsets)
{
    int n = ref_gpt_param_tensors(cfg);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        offsets[i] = total;
        total += ref_gpt_param_numel(cfg, i);
    }
    return total;
}

/* --- Building blocks, double in and out ----------------------------------------------- */

/* y[n, o] = sum_i x[n, i] w[o, i]: y = x W^T with W stored [out, in]. */
static void linear(const double *x, const double *w, double *y, int64_t rows, int64_t in,
                   int64_t out)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t o = 0; o < out; o++) {
            double sum = 0.0;
            for (int64_t i = 0; i < in; i++)
                sum += x[r * in + i] * w[o * in + i];
            y[r * out + o] = sum;
        }
    }
}

/* The backward of y = x W^T: dx[n, i] += sum_o dy[n, o] w[o, i] (dx may be NULL) and
 * dw[o, i] += sum_n dy[n, o] x[n, i]. */
static void linear_backward(const double *x, const double *w, const double *dy, double *dx,
                            double *dw, int64_t rows, int64_t in, int64_t out)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t o = 0; o < out; o++) {
            double g = dy[r * out + o];
            for (int64_t i = 0; i < in; i++) {
                if (dx)
                    dx[r * in + i] += g * w[o * in + i];
                dw[o * in + i] += g * x[r * in + i];
            }
        }
    }
}

/* RoPE in place over x [B, T, heads, Dh]: sign +1 rotates by +angle (the forward), -1 by
 * -angle (its transpose, the backward). cosines and sines are [T, Dh / 2]. */
static void rope(double *x, const double *cosv, const double *sinv, int64_t B, int64_t T,
                 int64_t heads, int64_t Dh, int split_half, double sign)
{
    int64_t half = Dh / 2;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < T; t++) {
            for (int64_t h = 0; h < heads; h++) {
                double *xr = x + ((b * T + t) * heads + h) * Dh;
                for (int64_t i = 0; i < half; i++) {
                    double c = cosv[t * half + i], s = sign * sinv[t * half + i];
                    int64_t i0 = split_half ? i : 2 * i;
                    int64_t i1 = split_half ? i + half : 2 * i + 1;
                    double a = xr[i0], bb = xr[i1];
                    xr[i0] = a * c - bb * s;
                    xr[i1] = a * s + bb * c;
                }
            }
        }
    }
}

/* Causal attention: q [B, T, H, Dh], k, v [B, T, Hkv, Dh], out [B, T, H, Dh], probabilities
 * p [B, H, T, T] (row t: keys 0..t, zeros after). */
static void attention(const double *q, const double *k, const double *v, double *out,
                      double *p, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh)
{
    double scale = 1.0 / sqrt((double)Dh);
    int64_t group = H / Hkv;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t hq = 0; hq < H; hq++) {
            int64_t hk = hq / group;
            for (int64_t t = 0; t < T; t++) {
                const double *qr = q + ((b * T + t) * H + hq) * Dh;
                double *pr = p + ((b * H + hq) * T + t) * T;
                double max = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= t; j++) {
                    const double *kr = k + ((b * T + j) * Hkv + hk) * Dh;
                    double dot = 0.0;
                    for (int64_t d = 0; d < Dh; d++)
                        dot += qr[d] * kr[d];
                    pr[j] = scale * dot;
                    max = pr[j] > max ? pr[j] : max;
                }
                for (int64_t j = 0; j <= t; j++) {
                    pr[j] = exp(pr[j] - max);
                    sum += pr[j];
                }
                for (int64_t j = 0; j < T; j++)
                    pr[j] = j <= t ? pr[j] / sum : 0.0;
                double *orow = out + ((b * T + t) * H + hq) * Dh;
                for (int64_t d = 0; d < Dh; d++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j <= t; j++)
                        acc += pr[j] * v[((b * T + j) * Hkv + hk) * Dh + d];
                    orow[d] = acc;
                }
            }
        }
    }
}

/* The backward of attention(), given its probabilities: dq (overwritten), dk and dv
 * (overwritten; each sums over the query heads that share the key head). With
 * S = scale q k^T, P = softmax(S), out = P v:
 *   dP[t, j] = dout[t] . v[j];  dv[j] += P[t, j] dout[t];
 *   dS[t, j] = P[t, j] (dP[t, j] - sum_j' P[t, j'] dP[t, j']);
 *   dq[t] += scale sum_j dS[t, j] k[j];  dk[j] += scale dS[t, j] q[t]. */
static void attention_backward(const double *q, const double *k, const double *v,
                               const double *p, const double *dout, double *dq, double *dk,
                               double *dv, double *dp, int64_t B, int64_t T, int64_t H,
                               int64_t Hkv, int64_t Dh)
{
    double scale = 1.0 / sqrt((double)Dh);
    int64_t group = H / Hkv;
    memset(dq, 0, (size_t)(B * T * H * Dh) * sizeof *dq);
    memset(dk, 0, (size_t)(B * T * Hkv * Dh) * sizeof *dk);
    memset(dv, 0, (size_t)(B * T * Hkv * Dh) * sizeof *dv);
    for (int64_t b = 0; b < B; b++) {
        for (int64_t hq = 0; hq < H; hq++) {
            int64_t hk = hq / group;
            for (int64_t t = 0; t < T; t++) {
                const double *pr = p + ((b * H + hq) * T + t) * T;
                const double *gr = dout + ((b * T + t) * H + hq) * Dh;
                const double *qr = q + ((b * T + t) * H + hq) * Dh;
                double *dqr = dq + ((b * T + t) * H + hq) * Dh;
                double dot = 0.0;
                for (int64_t j = 0; j <= t; j++) {
                    const double *vr = v + ((b * T + j) * Hkv + hk) * Dh;
                    double *dvr = dv + ((b * T + j) * Hkv + hk) * Dh;
                    double acc = 0.0;
                    for (int64_t d = 0; d < Dh; d++) {
                        acc += gr[d] * vr[d];
                        dvr[d] += pr[j] * gr[d];
                    }
                    dp[j] = acc;
                    dot += pr[j] * acc;
                }
                for (int64_t j = 0; j <= t; j++) {
                    double ds = pr[j] * (dp[j] - dot);
                    const double *kr = k + ((b * T + j) * Hkv + hk) * Dh;
                    double *dkr = dk + ((b * T + j) * Hkv + hk) * Dh;
                    for (int64_t d = 0; d < Dh; d++) {
                        dqr[d] += scale * ds * kr[d];
                        dkr[d] += scale * ds * qr[d];
                    }
                }
            }
        }
    }
}

/* --- The model --------------------------------------------------------------------------- */

/* Activations of one layer that the backward pass needs. */
typedef struct layer_acts {
    double *x_in;   /* [N, D] residual stream entering the layer */
    double *h;      /* [N, D] rmsnorm(x_in; attn_norm) */
    double *q;      /* [N, H*Dh] after RoPE */
    double *k;      /* [N, Hkv*Dh] after RoPE */
    double *v;      /* [N, Hkv*Dh] */
    double *p;      /* [B, H, T, T] attention probabilities */
    double *att;    /* [N, H*Dh] attention output */
    double *x_mid;  /* [N, D] after the attention residual */
    double *h2;     /* [N, D] rmsnorm(x_mid; mlp_norm) */
    double *g;      /* [N, F] gate */
    double *u;      /* [N, F] up */
    double *s;      /* [N, F] silu(g) * u */
} layer_acts;

/* One block of doubles carved into named arrays. */
typedef struct arena {
    double *base;
    size_t used, size;
} arena;

static double *take(arena *a, int64_t n)
{
    double *p = a->base + a->used;
    a->used += (size_t)n;
    assert(a->used <= a->size);
    return p;
}

double ref_gpt_forward_backward_d(const ref_gpt_config *cfg, const double *params,
                                  const int64_t *offsets, const int32_t *tokens,
                                  const int32_t *targets, int B_, int T_, double *grads,
                                  double *logits_out)
{
    shape s;
    if (!resolve(cfg, &s) || !params || !offsets || !tokens || !targets || B_ < 1 || T_ < 1)
        return NAN;
    const int64_t B = B_, T = T_, N = B * T, V = s.V, D = s.D, H = s.H, Hkv = s.Hkv,
                  Dh = s.Dh, F = s.F, L = s.L, DQ = H * Dh, DKV = Hkv * Dh, half = Dh / 2;
    const int n_params = ref_gpt_param_tensors(cfg);

    /* Parameter addresses. */
#define PARAM(i) (params + offsets[(i)])
#define LAYER_PARAM(l, kind) PARAM(1 + P_PER_LAYER * (l) + (kind))
    const double *emb = PARAM(0);
    const double *final_norm = PARAM(1 + P_PER_LAYER * L);
    const double *head = s.tied ? emb : PARAM(2 + P_PER_LAYER * L);

    /* Every array, in one allocation: the activations of each layer, then the rest. */
    size_t per_layer = (size_t)(N * D * 4 + N * DQ * 2 + N * DKV * 2 + B * H * T * T + N * F * 3);
    size_t rest = (size_t)(N * D * 5 + N * V * 2 + T * half * 2 + T + N * DQ * 2 + N * DKV * 2 +
                           N * F * 3 + D);
    size_t total = per_layer * (size_t)L + rest;
    arena a = {calloc(total ? total : 1, sizeof(double)), 0, total};
    layer_acts *acts = calloc((size_t)(L ? L : 1), sizeof *acts);
    if (!a.base || !acts) {
        free(a.base);
        free(acts);
        return NAN;
    }
    for (int64_t l = 0; l < L; l++) {
        layer_acts *A = &acts[l];
        A->x_in = take(&a, N * D);
        A->h = take(&a, N * D);
        A->q = take(&a, N * DQ);
        A->k = take(&a, N * DKV);
        A->v = take(&a, N * DKV);
        A->p = take(&a, B * H * T * T);
        A->att = take(&a, N * DQ);
        A->x_mid = take(&a, N * D);
        A->h2 = take(&a, N * D);
        A->g = take(&a, N * F);
        A->u = take(&a, N * F);
        A->s = take(&a, N * F);
    }
    double *x_final = take(&a, N * D), *hf = take(&a, N * D), *logits = take(&a, N * V);
    double *cosv = take(&a, T * half), *sinv = take(&a, T * half);

    /* RoPE angles, [T, Dh / 2]. */
    for (int64_t t = 0; t < T; t++) {
        for (int64_t i = 0; i < half; i++) {
            double angle = s.exact_angle
                               ? (double)t * pow((double)s.theta, -2.0 * (double)i / (double)Dh)
                               : (double)ref_rope_angle(s.theta, Dh, i, t);
            cosv[t * half + i] = cos(angle);
            sinv[t * half + i] = sin(angle);
        }
    }

    /* Forward. */
    double *x = L > 0 ? acts[0].x_in : x_final;
    for (int64_t r = 0; r < N; r++) {
        int ok = tokens[r] >= 0 && tokens[r] < V;
        for (int64_t d = 0; d < D; d++)
            x[r * D + d] = ok ? emb[(int64_t)tokens[r] * D + d] : 0.0;
    }
    for (int64_t l = 0; l < L; l++) {
        layer_acts *A = &acts[l];
        ref_rmsnorm_fwd_d(A->x_in, LAYER_PARAM(l, P_ATTN_NORM), (size_t)N, (size_t)D, s.eps,
                          A->h);
        linear(A->h, LAYER_PARAM(l, P_WQ), A->q, N, D, DQ);
        linear(A->h, LAYER_PARAM(l, P_WK), A->k, N, D, DKV);
        linear(A->h, LAYER_PARAM(l, P_WV), A->v, N, D, DKV);
        rope(A->q, cosv, sinv, B, T, H, Dh, s.split_half, 1.0);
        rope(A->k, cosv, sinv, B, T, Hkv, Dh, s.split_half, 1.0);
        attention(A->q, A->k, A->v, A->att, A->p, B, T, H, Hkv, Dh);
        linear(A->att, LAYER_PARAM(l, P_WO), A->x_mid, N, DQ, D);
        for (int64_t i = 0; i < N * D; i++)
            A->x_mid[i] += A->x_in[i];
        ref_rmsnorm_fwd_d(A->x_mid, LAYER_PARAM(l, P_MLP_NORM), (size_t)N, (size_t)D, s.eps,
                          A->h2);
        linear(A->h2, LAYER_PARAM(l, P_W_GATE), A->g, N, D, F);
        linear(A->h2, LAYER_PARAM(l, P_W_UP), A->u, N, D, F);
        ref_swiglu_fwd_d(A->g, A->u, A->s, (size_t)(N * F));
        double *x_out = l + 1 < L ? acts[l + 1].x_in : x_final;
        linear(A->s, LAYER_PARAM(l, P_W_DOWN), x_out, N, F, D);
        for (int64_t i = 0; i < N * D; i++)
            x_out[i] += A->x_mid[i];
    }
    ref_rmsnorm_fwd_d(x_final, final_norm, (size_t)N, (size_t)D, s.eps, hf);
    linear(hf, head, logits, N, D, V);
    if (logits_out)
        memcpy(logits_out, logits, (size_t)(N * V) * sizeof *logits);

    /* Loss: the mean over valid rows of logsumexp - logit[target]. */
    double *dp = take(&a, T); /* attention_backward's scratch, one row of scores */
    int64_t valid = 0;
    double loss_sum = 0.0;
    double *dlogits = take(&a, N * V);
    for (int64_t r = 0; r < N; r++) {
        const double *z = logits + r * V;
        double max = -INFINITY, sum = 0.0;
        for (int64_t c = 0; c < V; c++)
            max = z[c] > max ? z[c] : max;
        for (int64_t c = 0; c < V; c++)
            sum += exp(z[c] - max);
        double lse = max + log(sum);
        if (targets[r] >= 0 && targets[r] < V) {
            valid++;
            loss_sum += lse - z[targets[r]];
            /* dlogits before the division by valid rows: softmax - onehot. */
            for (int64_t c = 0; c < V; c++)
                dlogits[r * V + c] = exp(z[c] - lse) - (c == targets[r] ? 1.0 : 0.0);
        }
    }
    double loss = valid > 0 ? loss_sum / (double)valid : 0.0;

    if (grads) {
        for (int i = 0; i < n_params; i++)
            memset(grads + offsets[i], 0, (size_t)ref_gpt_param_numel(cfg, i) * sizeof *grads);
#define GRAD(i) (grads + offsets[(i)])
#define LAYER_GRAD(l, kind) GRAD(1 + P_PER_LAYER * (l) + (kind))
        double *d_emb = GRAD(0);
        double *d_head = s.tied ? d_emb : GRAD(2 + P_PER_LAYER * L);
        double *dx = take(&a, N * D), *dtmp = take(&a, N * D), *dh = take(&a, N * D);
        double *dq = take(&a, N * DQ), *datt = take(&a, N * DQ);
        double *dk = take(&a, N * DKV), *dv = take(&a, N * DKV);
        double *ds = take(&a, N * F), *dg = take(&a, N * F), *du = take(&a, N * F);
        double *dw_norm = take(&a, D);

        for (int64_t i = 0; i < N * V; i++)
            dlogits[i] = valid > 0 ? dlogits[i] / (double)valid : 0.0;

        /* logits = hf head^T */
        memset(dh, 0, (size_t)(N * D) * sizeof *dh);
        linear_backward(hf, head, dlogits, dh, d_head, N, D, V);
        /* hf = rmsnorm(x_final; final_norm) */
        ref_rmsnorm_bwd_d(x_final, final_norm, dh, (size_t)N, (size_t)D, s.eps, dx, dw_norm);
        for (int64_t j = 0; j < D; j++)
            GRAD(1 + P_PER_LAYER * L)[j] += dw_norm[j];

        for (int64_t l = L - 1; l >= 0; l--) {
            layer_acts *A = &acts[l];
            /* x_out = x_mid + s w_down^T */
            memset(ds, 0, (size_t)(N * F) * sizeof *ds);
            linear_backward(A->s, LAYER_PARAM(l, P_W_DOWN), dx, ds, LAYER_GRAD(l, P_W_DOWN), N,
                            F, D);
            /* s = silu(g) * u */
            ref_swiglu_bwd_d(A->g, A->u, ds, dg, du, (size_t)(N * F));
            /* g = h2 w_gate^T, u = h2 w_up^T */
            memset(dh, 0, (size_t)(N * D) * sizeof *dh);
            linear_backward(A->h2, LAYER_PARAM(l, P_W_GATE), dg, dh, LAYER_GRAD(l, P_W_GATE), N,
                            D, F);
            linear_backward(A->h2, LAYER_PARAM(l, P_W_UP), du, dh, LAYER_GRAD(l, P_W_UP), N, D,
                            F);
            /* h2 = rmsnorm(x_mid; mlp_norm); the residual passes dx through unchanged */
            ref_rmsnorm_bwd_d(A->x_mid, LAYER_PARAM(l, P_MLP_NORM), dh, (size_t)N, (size_t)D,
                              s.eps, dtmp, dw_norm);
            for (int64_t j = 0; j < D; j++)
                LAYER_GRAD(l, P_MLP_NORM)[j] += dw_norm[j];
            for (int64_t i = 0; i < N * D; i++)
                dx[i] += dtmp[i];

            /* x_mid = x_in + att wo^T */
            memset(datt, 0, (size_t)(N * DQ) * sizeof *datt);
            linear_backward(A->att, LAYER_PARAM(l, P_WO), dx, datt, LAYER_GRAD(l, P_WO), N, DQ,
                            D);
            attention_backward(A->q, A->k, A->v, A->p, datt, dq, dk, dv, dp, B, T, H, Hkv, Dh);
            /* q, k = RoPE(h wq^T), RoPE(h wk^T): the transpose of a rotation is the rotation
             * by the opposite angle */
            rope(dq, cosv, sinv, B, T, H, Dh, s.split_half, -1.0);
            rope(dk, cosv, sinv, B, T, Hkv, Dh, s.split_half, -1.0);
            memset(dh, 0, (size_t)(N * D) * sizeof *dh);
            linear_backward(A->h, LAYER_PARAM(l, P_WQ), dq, dh, LAYER_GRAD(l, P_WQ), N, D, DQ);
            linear_backward(A->h, LAYER_PARAM(l, P_WK), dk, dh, LAYER_GRAD(l, P_WK), N, D, DKV);
            linear_backward(A->h, LAYER_PARAM(l, P_WV), dv, dh, LAYER_GRAD(l, P_WV), N, D, DKV);
            /* h = rmsnorm(x_in; attn_norm) */
            ref_rmsnorm_bwd_d(A->x_in, LAYER_PARAM(l, P_ATTN_NORM), dh, (size_t)N, (size_t)D,
                              s.eps, dtmp, dw_norm);
            for (int64_t j = 0; j < D; j++)
                LAYER_GRAD(l, P_ATTN_NORM)[j] += dw_norm[j];
            for (int64_t i = 0; i < N * D; i++)
                dx[i] += dtmp[i];
        }
        /* x = tok_embedding[tokens]: rows with an id outside [0, V) take no gradient */
        for (int64_t r = 0; r < N; r++) {
            if (tokens[r] < 0 || tokens[r] >= V)
                continue;
            for (int64_t d = 0; d < D; d++)
                d_emb[(int64_t)tokens[r] * D + d] += dx[r * D + d];
        }
#undef GRAD
#undef LAYER_GRAD
    }
#undef PARAM
#undef LAYER_PARAM
    free(a.base);
    free(acts);
    return loss;
}

double ref_gpt_forward_backward(const ref_gpt_config *cfg, const float *params,
                                const int64_t *offsets, const int32_t *tokens,
                                const int32_t *targets, int B, int T, double *grads,
                                double *logits)
{
    int n = ref_gpt_param_tensors(cfg);
    if (n == 0 || !params || !offsets)
        return NAN;
    /* The parameters widened at the same offsets (gaps left zero). */
    int64_t end = 0;
    for (int i = 0; i < n; i++) {
        int64_t e = offsets[i] + ref_gpt_param_numel(cfg, i);
        end = e > end ? e : end;
    }
    double *p = calloc((size_t)(end ? end : 1), sizeof *p);
    if (!p)
        return NAN;
    for (int i = 0; i < n; i++) {
        int64_t count = ref_gpt_param_numel(cfg, i);
        for (int64_t j = 0; j < count; j++)
            p[offsets[i] + j] = params[offsets[i] + j];
    }
    double loss = ref_gpt_forward_backward_d(cfg, p, offsets, tokens, targets, B, T, grads,
                                             logits);
    free(p);
    return loss;
}

double ref_gpt_step(const ref_gpt_config *cfg, const int64_t *offsets, double *params,
                    const float *grads_f, const double *grads_d, double *m, double *v,
                    const ref_gpt_adamw *opt)
{
    int n = ref_gpt_param_tensors(cfg);
    if (n == 0 || !offsets || !params || (!grads_f && !grads_d) || !m || !v || !opt)
        return NAN;
#define G(j) (grads_f ? (double)grads_f[(j)] : grads_d[(j)])
    double ss = 0.0;
    for (int i = 0; i < n; i++) {
        int64_t count = ref_gpt_param_numel(cfg, i);
        for (int64_t j = offsets[i]; j < offsets[i] + count; j++)
            ss += G(j) * G(j);
    }
    double norm = sqrt(ss);
    double clip = 1.0;
    double max_norm = opt->max_grad_norm;
    if (max_norm > 0.0 && isfinite(max_norm) && norm > max_norm)
        clip = max_norm / norm; /* 0 for an infinite norm; a NaN norm never compares greater */

    double beta1 = opt->beta1 != 0.0 ? opt->beta1 : (double)0.9f;
    double beta2 = opt->beta2 != 0.0 ? opt->beta2 : (double)0.999f;
    double eps = opt->eps != 0.0 ? opt->eps : (double)1e-8f;
    double bc1 = 1.0 - pow(beta1, (double)opt->step);
    double bc2 = 1.0 - pow(beta2, (double)opt->step);
    for (int i = 0; i < n; i++) {
        int64_t count = ref_gpt_param_numel(cfg, i);
        double wd = ref_gpt_param_decays(cfg, i) ? opt->weight_decay : 0.0;
        for (int64_t j = offsets[i]; j < offsets[i] + count; j++) {
            double g = G(j) * clip;
            params[j] -= opt->lr * wd * params[j];
            m[j] = beta1 * m[j] + (1.0 - beta1) * g;
            v[j] = beta2 * v[j] + (1.0 - beta2) * g * g;
            params[j] -= opt->lr * (m[j] / bc1) / (sqrt(v[j] / bc2) + eps);
        }
    }
#undef G
    return norm;
}
