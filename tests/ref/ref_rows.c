/* CPU references of the row operations, in double and two-pass where that is the obvious
 * formulation (the max before the exponentials, the mean before the variance). */
#include <math.h>

#include "ref.h"

void ref_softmax_f32(const float *x, size_t rows, size_t d, size_t tq, int causal, float scale,
                     float *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        /* Keys j <= i + (d - tq) are visible to query i; signed, as tq may exceed d. */
        long long limit = causal ? (long long)(r % tq) + (long long)d - (long long)tq
                                 : (long long)d - 1;
        size_t len = limit < 0 ? 0 : (size_t)(limit + 1 < (long long)d ? limit + 1 : (long long)d);
        double m = -INFINITY;
        for (size_t j = 0; j < len; j++)
            m = fmax(m, (double)scale * xr[j]);
        /* Every visible value -inf (an additive mask): no finite max to subtract, and the
         * row is all zeros, as when nothing is visible. */
        if (m == -INFINITY)
            len = 0;
        double s = 0.0;
        for (size_t j = 0; j < len; j++)
            s += exp((double)scale * xr[j] - m);
        for (size_t j = 0; j < d; j++)
            yr[j] = j < len && s > 0.0 ? (float)(exp((double)scale * xr[j] - m) / s) : 0.0f;
    }
}

void ref_reduce_rows_f32(int op, const float *x, size_t rows, size_t d, float *y)
{
    for (size_t r = 0; r < rows; r++) {
        double acc = op == REF_REDUCE_MAX ? -INFINITY : 0.0;
        for (size_t j = 0; j < d; j++)
            acc = op == REF_REDUCE_MAX ? fmax(acc, x[r * d + j]) : acc + x[r * d + j];
        y[r] = (float)(op == REF_REDUCE_MEAN ? acc / (double)d : acc);
    }
}

void ref_rmsnorm_f32(const float *x, const float *w, size_t rows, size_t d, float eps,
                     float *y)
{
    for (size_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (size_t j = 0; j < d; j++)
            ss += (double)x[r * d + j] * x[r * d + j];
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        for (size_t j = 0; j < d; j++)
            y[r * d + j] = (float)(x[r * d + j] * inv * (w ? w[j] : 1.0));
    }
}

void ref_layernorm_f32(const float *x, const float *w, const float *b, size_t rows, size_t d,
                       float eps, float *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        double mean = 0.0, var = 0.0;
        for (size_t j = 0; j < d; j++)
            mean += xr[j];
        mean /= (double)d;
        for (size_t j = 0; j < d; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= (double)d;
        double inv = 1.0 / sqrt(var + eps);
        for (size_t j = 0; j < d; j++)
            y[r * d + j] = (float)((xr[j] - mean) * inv * (w ? w[j] : 1.0) + (b ? b[j] : 0.0));
    }
}

void ref_layernorm_naive_f32(const float *x, size_t rows, size_t d, float eps, float *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float s = 0.0f, ss = 0.0f;
        for (size_t j = 0; j < d; j++) {
            s += xr[j];
            ss += xr[j] * xr[j];
        }
        float mean = s / (float)d;
        float var = ss / (float)d - mean * mean;
        float inv = 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
        for (size_t j = 0; j < d; j++)
            y[r * d + j] = (xr[j] - mean) * inv;
    }
}
