/* CPU reference forward of a llama-family decoder (ref_llama.h), in double precision. */
#include "ref_llama.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The shape with its defaults filled in. */
typedef struct shape {
    int64_t D, L, H, Hkv, Dh, F, V, DQ, DKV;
} shape;

static int resolve(const ref_llama *m, shape *s)
{
    if (!m)
        return 0;
    s->D = m->dim;
    s->L = m->layers;
    s->H = m->heads;
    s->Hkv = m->kv_heads ? m->kv_heads : m->heads;
    s->Dh = m->head_dim ? m->head_dim : (m->heads > 0 ? m->dim / m->heads : 0);
    s->F = m->hidden;
    s->V = m->vocab;
    if (s->D < 1 || s->L < 0 || s->H < 1 || s->Hkv < 1 || s->F < 1 || s->V < 1 || s->Dh < 2)
        return 0;
    if (s->H % s->Hkv != 0 || s->Dh % 2 != 0)
        return 0;
    if (!(m->rope_theta > 0.0) || !(m->norm_eps >= 0.0))
        return 0;
    s->DQ = s->H * s->Dh;
    s->DKV = s->Hkv * s->Dh;
    return 1;
}

int ref_llama_valid(const ref_llama *m)
{
    shape s;
    if (!resolve(m, &s) || !m->token_embd || !m->output_norm || (s.L > 0 && !m->blk))
        return 0;
    if (!m->tied_output && !m->output)
        return 0;
    if (m->experts < 0 || m->shared_hidden < 0 || m->expert_hidden < 0 ||
        (m->experts > 0 && (m->experts_used < 1 || m->experts_used > m->experts)))
        return 0;
    for (int64_t l = 0; l < s.L; l++) {
        const ref_llama_layer *b = &m->blk[l];
        if (!b->attn_norm || !b->attn_q || !b->attn_k || !b->attn_v || !b->attn_output ||
            !b->ffn_norm)
            return 0;
        if (m->experts == 0 && (!b->ffn_gate || !b->ffn_up || !b->ffn_down))
            return 0;
        if (m->experts > 0 &&
            (!b->ffn_gate_inp || !b->ffn_gate_exps || !b->ffn_up_exps || !b->ffn_down_exps))
            return 0;
        if (m->shared_hidden > 0 && (!b->ffn_gate_inp_shexp || !b->ffn_gate_shexp ||
                                     !b->ffn_up_shexp || !b->ffn_down_shexp))
            return 0;
        if (m->qkv_bias && (!b->attn_q_bias || !b->attn_k_bias || !b->attn_v_bias))
            return 0;
    }
    return 1;
}

int ref_llama_kv_init(ref_llama_kv *kv, const ref_llama *m, int capacity)
{
    shape s;
    if (!kv)
        return -1;
    memset(kv, 0, sizeof *kv);
    if (!ref_llama_valid(m) || !resolve(m, &s) || capacity < 1)
        return -1;
    size_t n = (size_t)(s.L ? s.L : 1) * (size_t)capacity * (size_t)s.DKV;
    kv->k = calloc(n, sizeof *kv->k);
    kv->v = calloc(n, sizeof *kv->v);
    if (!kv->k || !kv->v) {
        ref_llama_kv_free(kv);
        return -1;
    }
    kv->capacity = capacity;
    kv->layers = (int)s.L;
    kv->width = (int)s.DKV;
    return 0;
}

void ref_llama_kv_free(ref_llama_kv *kv)
{
    if (!kv)
        return;
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

/* --- Building blocks ------------------------------------------------------------------- */

/* y[r, o] = sum_i x[r, i] w[o, i] (+ b[o]): y = x W^T (+ b) with W stored [out, in]. */
static void linear(const double *x, const float *w, const float *b, double *y, int64_t rows,
                   int64_t in, int64_t out)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t o = 0; o < out; o++) {
            double sum = 0.0;
            for (int64_t i = 0; i < in; i++)
                sum += x[r * in + i] * (double)w[o * in + i];
            y[r * out + o] = b ? sum + (double)b[o] : sum;
        }
    }
}

/* y = x / sqrt(mean(x^2) + eps) * w over rows of d. */
static void rmsnorm(const double *x, const float *w, double *y, int64_t rows, int64_t d,
                    double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * d;
        double ss = 0.0;
        for (int64_t j = 0; j < d; j++)
            ss += xr[j] * xr[j];
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        for (int64_t j = 0; j < d; j++)
            y[r * d + j] = xr[j] * inv * (double)w[j];
    }
}

/* One row of `heads` heads of width Dh rotated in place for position pos. */
static void rope_row(double *x, int64_t heads, int64_t Dh, int64_t pos, const ref_llama *m)
{
    int64_t half = Dh / 2;
    for (int64_t i = 0; i < half; i++) {
        double angle = (double)pos * pow(m->rope_theta, -2.0 * (double)i / (double)Dh);
        if (m->rope_freqs)
            angle /= (double)m->rope_freqs[i];
        double c = cos(angle), s = sin(angle);
        int64_t i0 = m->rope_interleaved ? 2 * i : i;
        int64_t i1 = m->rope_interleaved ? 2 * i + 1 : i + half;
        for (int64_t h = 0; h < heads; h++) {
            double *xh = x + h * Dh;
            double a = xh[i0], b = xh[i1];
            xh[i0] = a * c - b * s;
            xh[i1] = a * s + b * c;
        }
    }
}

/* The attention output of one query row q [H, Dh] at position pos over the cached keys and
 * values k, v [0..pos][Hkv * Dh] into out [H, Dh]; p is scratch of pos + 1. */
static void attend(const double *q, const double *k, const double *v, double *out, double *p,
                   int64_t pos, const shape *s)
{
    double scale = 1.0 / sqrt((double)s->Dh);
    int64_t group = s->H / s->Hkv;
    for (int64_t hq = 0; hq < s->H; hq++) {
        int64_t hk = hq / group;
        const double *qh = q + hq * s->Dh;
        double max = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j <= pos; j++) {
            const double *kj = k + j * s->DKV + hk * s->Dh;
            double dot = 0.0;
            for (int64_t d = 0; d < s->Dh; d++)
                dot += qh[d] * kj[d];
            p[j] = dot * scale;
            max = p[j] > max ? p[j] : max;
        }
        for (int64_t j = 0; j <= pos; j++) {
            p[j] = exp(p[j] - max);
            sum += p[j];
        }
        double *oh = out + hq * s->Dh;
        for (int64_t d = 0; d < s->Dh; d++) {
            double acc = 0.0;
            for (int64_t j = 0; j <= pos; j++)
                acc += p[j] * v[j * s->DKV + hk * s->Dh + d];
            oh[d] = acc / sum;
        }
    }
}

/* One SwiGLU feed-forward of width F on the row h [D]: out [D] += scale * (silu(h gate^T) *
 * (h up^T)) down^T; g, u scratch [F]. */
static void ffn_add(const double *h, const float *gate, const float *up, const float *down,
                    double scale, double *out, double *g, double *u, int64_t D, int64_t F)
{
    linear(h, gate, NULL, g, 1, D, F);
    linear(h, up, NULL, u, 1, D, F);
    for (int64_t i = 0; i < F; i++)
        g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
    for (int64_t d = 0; d < D; d++) {
        double acc = 0.0;
        for (int64_t i = 0; i < F; i++)
            acc += g[i] * (double)down[d * F + i];
        out[d] += scale * acc;
    }
}

/* The smallest routing margin since ref_llama_margin_reset() (ref_llama.h). */
static double routing_margin = 1.0;

void ref_llama_margin_reset(void)
{
    routing_margin = 1.0;
}

double ref_llama_margin(void)
{
    return routing_margin;
}

/* The mixture's feed-forward of one row h [D], added into x [D] (ref_llama.h); scratch: p
 * [experts], g and u [max(expert_hidden, shared_hidden)]. */
static void moe_add(const ref_llama *m, const ref_llama_layer *b, const double *h, double *x,
                    double *p, double *g, double *u, int64_t D, int64_t F)
{
    const int64_t E = m->experts, Fs = m->shared_hidden;
    linear(h, b->ffn_gate_inp, NULL, p, 1, D, E);
    double max = p[0], sum = 0.0;
    for (int64_t e = 1; e < E; e++)
        max = p[e] > max ? p[e] : max;
    for (int64_t e = 0; e < E; e++) {
        p[e] = exp(p[e] - max);
        sum += p[e];
    }
    for (int64_t e = 0; e < E; e++)
        p[e] /= sum;
    int chosen[256];
    double w[256], total = 0.0;
    for (int j = 0; j < m->experts_used; j++) {
        int best = -1;
        for (int64_t e = 0; e < E; e++) {
            int taken = 0;
            for (int i = 0; i < j; i++)
                taken |= chosen[i] == (int)e;
            if (!taken && (best < 0 || p[e] > p[best]))
                best = (int)e;
        }
        chosen[j] = best;
        w[j] = p[best];
        total += w[j];
    }
    /* The margin of this choice: the last chosen against the best left out. */
    double left_out = 0.0;
    for (int64_t e = 0; e < E; e++) {
        int taken = 0;
        for (int i = 0; i < m->experts_used; i++)
            taken |= chosen[i] == (int)e;
        if (!taken && p[e] > left_out)
            left_out = p[e];
    }
    if (m->experts_used < E && w[m->experts_used - 1] - left_out < routing_margin)
        routing_margin = w[m->experts_used - 1] - left_out;
    for (int j = 0; j < m->experts_used; j++) {
        const int64_t e = chosen[j];
        ffn_add(h, b->ffn_gate_exps + e * F * D, b->ffn_up_exps + e * F * D,
                b->ffn_down_exps + e * D * F, m->experts_norm ? w[j] / total : w[j], x, g, u,
                D, F);
    }
    if (Fs > 0) {
        double z = 0.0;
        for (int64_t d = 0; d < D; d++)
            z += h[d] * (double)b->ffn_gate_inp_shexp[d];
        ffn_add(h, b->ffn_gate_shexp, b->ffn_up_shexp, b->ffn_down_shexp, 1.0 / (1.0 + exp(-z)),
                x, g, u, D, Fs);
    }
}

/* --- The model ---------------------------------------------------------------------------- */

int ref_llama_forward_kv(const ref_llama *m, ref_llama_kv *kv, const int32_t *tokens, int T_,
                         double *logits)
{
    shape s;
    if (!ref_llama_valid(m) || !resolve(m, &s) || !kv || !kv->k || !kv->v || !tokens ||
        T_ < 1)
        return -1;
    if (kv->layers != s.L || kv->width != s.DKV || kv->length < 0 ||
        T_ > kv->capacity - kv->length)
        return -1;
    for (int t = 0; t < T_; t++)
        if (tokens[t] < 0 || tokens[t] >= s.V)
            return -1;
    const int64_t T = T_, D = s.D, DQ = s.DQ, DKV = s.DKV, start = kv->length;
    /* The feed-forward scratch: the dense width, or the widest expert. */
    const int64_t FE = m->experts > 0 && m->expert_hidden > 0 ? m->expert_hidden : s.F;
    const int64_t F = FE > m->shared_hidden ? FE : m->shared_hidden;

    double *x = malloc((size_t)(T * D) * sizeof *x);
    double *h = malloc((size_t)(T * D) * sizeof *h);
    double *q = malloc((size_t)(T * DQ) * sizeof *q);
    double *att = malloc((size_t)(T * DQ) * sizeof *att);
    double *g = malloc((size_t)(T * F) * sizeof *g);
    double *u = malloc((size_t)(T * F) * sizeof *u);
    double *tmp = malloc((size_t)(T * D) * sizeof *tmp);
    double *p = malloc((size_t)(start + T + m->experts) * sizeof *p);
    int ok = x && h && q && att && g && u && tmp && p && m->experts <= 256;
    if (ok) {
        for (int64_t t = 0; t < T; t++)
            for (int64_t d = 0; d < D; d++)
                x[t * D + d] = (double)m->token_embd[(int64_t)tokens[t] * D + d];
        for (int64_t l = 0; l < s.L; l++) {
            const ref_llama_layer *b = &m->blk[l];
            double *kc = kv->k + l * (int64_t)kv->capacity * DKV;
            double *vc = kv->v + l * (int64_t)kv->capacity * DKV;
            /* attention: the new positions' keys and values join the cache first */
            rmsnorm(x, b->attn_norm, h, T, D, m->norm_eps);
            linear(h, b->attn_q, m->qkv_bias ? b->attn_q_bias : NULL, q, T, D, DQ);
            linear(h, b->attn_k, m->qkv_bias ? b->attn_k_bias : NULL, kc + start * DKV, T, D,
                   DKV);
            linear(h, b->attn_v, m->qkv_bias ? b->attn_v_bias : NULL, vc + start * DKV, T, D,
                   DKV);
            for (int64_t t = 0; t < T; t++) {
                rope_row(q + t * DQ, s.H, s.Dh, start + t, m);
                rope_row(kc + (start + t) * DKV, s.Hkv, s.Dh, start + t, m);
            }
            for (int64_t t = 0; t < T; t++)
                attend(q + t * DQ, kc, vc, att + t * DQ, p, start + t, &s);
            linear(att, b->attn_output, NULL, tmp, T, DQ, D);
            for (int64_t i = 0; i < T * D; i++)
                x[i] += tmp[i];
            /* feed-forward */
            rmsnorm(x, b->ffn_norm, h, T, D, m->norm_eps);
            if (m->experts > 0) {
                for (int64_t t = 0; t < T; t++)
                    moe_add(m, b, h + t * D, x + t * D, p, g, u, D, FE);
                continue;
            }
            linear(h, b->ffn_gate, NULL, g, T, D, F);
            linear(h, b->ffn_up, NULL, u, T, D, F);
            for (int64_t i = 0; i < T * F; i++)
                g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
            linear(g, b->ffn_down, NULL, tmp, T, F, D);
            for (int64_t i = 0; i < T * D; i++)
                x[i] += tmp[i];
        }
        if (logits) {
            rmsnorm(x, m->output_norm, h, T, D, m->norm_eps);
            linear(h, m->tied_output ? m->token_embd : m->output, NULL, logits, T, D, s.V);
        }
        kv->length += (int)T;
    }
    free(x);
    free(h);
    free(q);
    free(att);
    free(g);
    free(u);
    free(tmp);
    free(p);
    return ok ? 0 : -1;
}

int ref_llama_forward(const ref_llama *m, const int32_t *tokens, int T, double *logits)
{
    ref_llama_kv kv;
    if (T < 1 || ref_llama_kv_init(&kv, m, T) != 0)
        return -1;
    int status = ref_llama_forward_kv(m, &kv, tokens, T, logits);
    ref_llama_kv_free(&kv);
    return status;
}
