/* CPU reference for attention: the whole score row in double precision, then softmax and the
 * weighted sum of values, straight from the definition. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"

void ref_attention_f32(const float *q, const float *k, const float *v, float *out,
                       int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q,
                       int64_t heads_kv, int64_t dim, int64_t kv_len, int causal,
                       int64_t causal_shift, double scale, int kv_head_mode)
{
    double *scores = malloc((size_t)kv_len * sizeof *scores);
    double *acc = malloc((size_t)dim * sizeof *acc);
    if (!scores || !acc) {
        free(scores);
        free(acc);
        return;
    }
    int64_t group = heads_q / heads_kv;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t t = 0; t < seq_q; t++) {
            for (int64_t h = 0; h < heads_q; h++) {
                int64_t hk = kv_head_mode ? h % heads_kv : h / group;
                const float *qr = q + ((b * seq_q + t) * heads_q + h) * dim;
                float *yr = out + ((b * seq_q + t) * heads_q + h) * dim;
                /* Query t sees keys s <= t + (kv_len - T). */
                int64_t visible = causal ? t + kv_len - seq_q + 1 + causal_shift : kv_len;
                if (visible > kv_len)
                    visible = kv_len;
                double max = -INFINITY, sum = 0.0;
                for (int64_t s = 0; s < visible; s++) {
                    const float *kr = k + ((b * seq_kv + s) * heads_kv + hk) * dim;
                    double dot = 0.0;
                    for (int64_t d = 0; d < dim; d++)
                        dot += (double)qr[d] * (double)kr[d];
                    scores[s] = scale * dot;
                    if (scores[s] > max)
                        max = scores[s];
                }
                for (int64_t d = 0; d < dim; d++)
                    acc[d] = 0.0;
                for (int64_t s = 0; s < visible; s++) {
                    double p = exp(scores[s] - max);
                    const float *vr = v + ((b * seq_kv + s) * heads_kv + hk) * dim;
                    sum += p;
                    for (int64_t d = 0; d < dim; d++)
                        acc[d] += p * (double)vr[d];
                }
                /* A query that sees no key gets zeros, as the kernel defines it. */
                for (int64_t d = 0; d < dim; d++)
                    yr[d] = visible > 0 ? (float)(acc[d] / sum) : 0.0f;
            }
        }
    }
    free(scores);
    free(acc);
}
