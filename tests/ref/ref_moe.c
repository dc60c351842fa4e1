/* A mixture of experts' routing and weighted sum (ref.h), in double: the routing as
 * ref_llama.c's moe_add chooses. */
#include <math.h>

#include "ref.h"

void ref_moe_route(const float *logits, int64_t rows, int64_t experts, int k, int norm,
                   int ties_high, int32_t *ids, double *weights)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *l = logits + r * experts;
        double p[256], max = l[0], sum = 0.0;
        for (int64_t e = 1; e < experts; e++)
            max = l[e] > max ? l[e] : max;
        for (int64_t e = 0; e < experts; e++) {
            p[e] = exp((double)l[e] - max);
            sum += p[e];
        }
        for (int64_t e = 0; e < experts; e++)
            p[e] /= sum;
        int chosen[256];
        double total = 0.0;
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int64_t e = 0; e < experts; e++) {
                int taken = 0;
                for (int i = 0; i < j; i++)
                    taken |= chosen[i] == (int)e;
                if (!taken && (best < 0 || p[e] > p[best] || (ties_high && p[e] == p[best])))
                    best = (int)e;
            }
            chosen[j] = best;
            total += p[best];
        }
        for (int j = 0; j < k; j++) {
            ids[r * k + j] = chosen[j];
            weights[r * k + j] = norm ? p[chosen[j]] / total : p[chosen[j]];
        }
    }
}

void ref_moe_combine(const float *y, const float *weights, int64_t rows, int k, int64_t dim,
                     float *out, int accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t d = 0; d < dim; d++) {
            double sum = accumulate ? (double)out[r * dim + d] : 0.0;
            for (int j = 0; j < k; j++)
                sum += (double)weights[r * k + j] * (double)y[(r * k + j) * dim + d];
            out[r * dim + d] = (float)sum;
        }
    }
}
