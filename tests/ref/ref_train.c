/* CPU references for the backward passes of the layout and loss ops and for the optimizers,
 * in double precision. */
#include <math.h>

#include "ref.h"

void ref_rope_backward_f32(const float *dy, float *dx, int64_t batch, int64_t seq,
                           int64_t heads, int64_t head_dim, int split_half, float theta_base,
                           int64_t position_offset, int wrong_sign)
{
    int64_t half = head_dim / 2;
    for (int64_t row = 0; row < batch * seq * heads; row++) {
        int64_t pos = position_offset + (row / heads) % seq;
        for (int64_t i = 0; i < half; i++) {
            /* The transpose of the forward's rotation: R(a)^T = R(-a). */
            double a = (double)ref_rope_angle(theta_base, head_dim, i, pos);
            double s = wrong_sign ? sin(a) : -sin(a), c = cos(a);
            int64_t i0 = row * head_dim + (split_half ? i : 2 * i);
            int64_t i1 = split_half ? i0 + half : i0 + 1;
            double y0 = dy[i0], y1 = dy[i1];
            dx[i0] = (float)(y0 * c - y1 * s);
            dx[i1] = (float)(y0 * s + y1 * c);
        }
    }
}

void ref_embedding_backward_f32(const int32_t *ids, const float *dout, int64_t rows,
                                int64_t vocab, int64_t dim, float *dtable, int last_only)
{
    for (int64_t v = 0; v < vocab; v++) {
        for (int64_t d = 0; d < dim; d++) {
            double sum = 0.0;
            for (int64_t r = 0; r < rows; r++) {
                if (ids[r] == v)
                    sum = last_only ? dout[r * dim + d] : sum + dout[r * dim + d];
            }
            dtable[v * dim + d] = (float)sum;
        }
    }
}

void ref_cross_entropy_backward_f32(const float *logits, const int32_t *targets, int64_t rows,
                                    int64_t vocab, double dloss, float *dlogits,
                                    int divide_by_all_rows)
{
    int64_t valid = 0;
    for (int64_t r = 0; r < rows; r++)
        valid += targets[r] >= 0 && targets[r] < vocab;
    double scale = divide_by_all_rows ? dloss / (double)rows
                                      : (valid > 0 ? dloss / (double)valid : 0.0);
    for (int64_t r = 0; r < rows; r++) {
        const float *x = logits + r * vocab;
        int ok = targets[r] >= 0 && targets[r] < vocab;
        double max = -INFINITY, sum = 0.0;
        for (int64_t c = 0; c < vocab; c++)
            max = x[c] > max ? x[c] : max;
        for (int64_t c = 0; c < vocab; c++)
            sum += exp((double)x[c] - max);
        for (int64_t c = 0; c < vocab; c++) {
            double p = exp((double)x[c] - max) / sum;
            dlogits[r * vocab + c] = ok ? (float)(scale * (p - (c == targets[r]))) : 0.0f;
        }
    }
}

void ref_adamw_step(double *p, const float *g, double *m, double *v, size_t n, double lr,
                    double beta1, double beta2, double eps, double weight_decay, int64_t step)
{
    double bc1 = 1.0 - pow(beta1, (double)step), bc2 = 1.0 - pow(beta2, (double)step);
    for (size_t i = 0; i < n; i++) {
        p[i] -= lr * weight_decay * p[i];
        m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0 - beta2) * (double)g[i] * g[i];
        p[i] -= lr * (m[i] / bc1) / (sqrt(v[i] / bc2) + eps);
    }
}

void ref_sgd_step(double *p, const float *g, double *velocity, size_t n, double lr,
                  double momentum, double weight_decay)
{
    for (size_t i = 0; i < n; i++) {
        double u = g[i] + weight_decay * p[i];
        if (velocity) {
            velocity[i] = momentum * velocity[i] + u;
            u = velocity[i];
        }
        p[i] -= lr * u;
    }
}

double ref_sum_squares(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}
