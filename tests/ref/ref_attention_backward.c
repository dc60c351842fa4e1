/* CPU references for the attention backward pass: the gradients straight from the calculus,
 * with the whole score row materialised in double, and a forward on double arrays for the
 * finite-difference checks (no float rounding in it). For one query row with visible keys
 * j < n, P = softmax(scale q k_j), out = sum P_j v_j, and for a loss L with dL/dout = g:
 *   dv_j += P_j g,   dP_j = g . v_j,   dS_j = P_j (dP_j - sum_i P_i dP_i),
 *   dq   += scale sum_j dS_j k_j,   dk_j += scale dS_j q. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

/* Keys query t sees, as mcl_attention defines it. */
static int64_t visible_keys(int64_t t, int64_t seq_q, int64_t kv_len, int causal,
                            int64_t causal_shift)
{
    int64_t visible = causal ? t + kv_len - seq_q + 1 + causal_shift : kv_len;
    if (visible > kv_len)
        visible = kv_len;
    return visible < 0 ? 0 : visible;
}

void ref_attention_fwd_d(const double *q, const double *k, const double *v, double *out,
                         int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q,
                         int64_t heads_kv, int64_t dim, int64_t kv_len, int causal,
                         double scale)
{
    double *p = malloc((size_t)(kv_len > 0 ? kv_len : 1) * sizeof *p);
    if (!p)
        return;
    int64_t group = heads_q / heads_kv;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t t = 0; t < seq_q; t++) {
            for (int64_t h = 0; h < heads_q; h++) {
                int64_t hk = h / group;
                const double *qr = q + ((b * seq_q + t) * heads_q + h) * dim;
                double *yr = out + ((b * seq_q + t) * heads_q + h) * dim;
                int64_t visible = visible_keys(t, seq_q, kv_len, causal, 0);
                double max = -INFINITY, sum = 0.0;
                for (int64_t s = 0; s < visible; s++) {
                    const double *kr = k + ((b * seq_kv + s) * heads_kv + hk) * dim;
                    double dot = 0.0;
                    for (int64_t d = 0; d < dim; d++)
                        dot += qr[d] * kr[d];
                    p[s] = scale * dot;
                    max = fmax(max, p[s]);
                }
                for (int64_t s = 0; s < visible; s++) {
                    p[s] = exp(p[s] - max);
                    sum += p[s];
                }
                for (int64_t d = 0; d < dim; d++) {
                    double acc = 0.0;
                    for (int64_t s = 0; s < visible; s++)
                        acc += p[s] * v[((b * seq_kv + s) * heads_kv + hk) * dim + d];
                    yr[d] = visible > 0 ? acc / sum : 0.0;
                }
            }
        }
    }
    free(p);
}

void ref_attention_backward_f32(const float *q, const float *k, const float *v,
                                const float *dout, float *dq, float *dk, float *dv,
                                int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q,
                                int64_t heads_kv, int64_t dim, int64_t kv_len, int causal,
                                int64_t causal_shift, double scale, int kv_head_mode)
{
    size_t nkv = (size_t)(batch * seq_kv * heads_kv * dim);
    double *p = malloc((size_t)(kv_len > 0 ? kv_len : 1) * sizeof *p);
    double *dp = malloc((size_t)(kv_len > 0 ? kv_len : 1) * sizeof *dp);
    double *gq = malloc((size_t)dim * sizeof *gq);
    double *gk = calloc(nkv, sizeof *gk), *gv = calloc(nkv, sizeof *gv);
    if (!p || !dp || !gq || !gk || !gv)
        goto done;
    int64_t group = heads_q / heads_kv;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t t = 0; t < seq_q; t++) {
            for (int64_t h = 0; h < heads_q; h++) {
                int64_t hk = kv_head_mode ? h % heads_kv : h / group;
                int64_t row = ((b * seq_q + t) * heads_q + h) * dim;
                const float *qr = q + row, *gr = dout + row;
                int64_t visible = visible_keys(t, seq_q, kv_len, causal, causal_shift);
                double max = -INFINITY, sum = 0.0, di = 0.0;
                for (int64_t s = 0; s < visible; s++) {
                    const float *kr = k + ((b * seq_kv + s) * heads_kv + hk) * dim;
                    double dot = 0.0;
                    for (int64_t d = 0; d < dim; d++)
                        dot += (double)qr[d] * (double)kr[d];
                    p[s] = scale * dot;
                    max = fmax(max, p[s]);
                }
                for (int64_t s = 0; s < visible; s++) {
                    p[s] = exp(p[s] - max);
                    sum += p[s];
                }
                for (int64_t s = 0; s < visible; s++) {
                    const float *vr = v + ((b * seq_kv + s) * heads_kv + hk) * dim;
                    p[s] /= sum;
                    dp[s] = 0.0;
                    for (int64_t d = 0; d < dim; d++)
                        dp[s] += (double)gr[d] * (double)vr[d];
                    di += p[s] * dp[s];
                }
                for (int64_t d = 0; d < dim; d++)
                    gq[d] = 0.0;
                for (int64_t s = 0; s < visible; s++) {
                    int64_t kv_row = ((b * seq_kv + s) * heads_kv + hk) * dim;
                    double ds = p[s] * (dp[s] - di);
                    for (int64_t d = 0; d < dim; d++) {
                        gq[d] += scale * ds * (double)k[kv_row + d];
                        gk[kv_row + d] += scale * ds * (double)qr[d];
                        gv[kv_row + d] += p[s] * (double)gr[d];
                    }
                }
                /* A query that sees no key contributes nothing and gets a zero gradient. */
                for (int64_t d = 0; d < dim; d++)
                    dq[row + d] = (float)gq[d];
            }
        }
    }
    for (size_t i = 0; i < nkv; i++) {
        dk[i] = (float)gk[i];
        dv[i] = (float)gv[i];
    }
done:
    free(p);
    free(dp);
    free(gq);
    free(gk);
    free(gv);
}
