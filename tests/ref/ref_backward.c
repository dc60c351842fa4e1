/* CPU references of the backward passes, and double-precision forwards for the finite
 * difference checks (tests/test_backward.c). Everything is in double on double arrays, so a
 * central difference of a forward here has no float rounding in it, and the analytic
 * gradients below are written straight from the calculus, one formula per line. */
#include <math.h>

#include "ref.h"

static const double GELU_K = 0.79788456080286535588; /* sqrt(2 / pi) */
static const double GELU_C = 0.044715;

static double sigmoid(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

void ref_activate_fwd_d(int act, const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (act == REF_ACTIVATION_RELU)
            y[i] = v > 0.0 ? v : 0.0;
        else if (act == REF_ACTIVATION_GELU)
            y[i] = 0.5 * v * (1.0 + tanh(GELU_K * (v + GELU_C * v * v * v)));
        else
            y[i] = v * sigmoid(v);
    }
}

void ref_activate_bwd_d(int act, const double *x, const double *dy, double *dx, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i], d;
        if (act == REF_ACTIVATION_RELU) {
            d = v > 0.0 ? 1.0 : 0.0;
        } else if (act == REF_ACTIVATION_GELU) {
            /* d/dv 0.5 v (1 + tanh u) = 0.5 (1 + tanh u) + 0.5 v (1 - tanh^2 u) u' */
            double t = tanh(GELU_K * (v + GELU_C * v * v * v));
            double du = GELU_K * (1.0 + 3.0 * GELU_C * v * v);
            d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du;
        } else {
            double s = sigmoid(v);
            d = s + v * s * (1.0 - s);
        }
        dx[i] = dy[i] * d;
    }
}

void ref_swiglu_fwd_d(const double *gate, const double *up, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

void ref_swiglu_bwd_d(const double *gate, const double *up, const double *dy, double *dgate,
                      double *dup, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double g = gate[i], s = sigmoid(g);
        dup[i] = dy[i] * g * s;
        dgate[i] = dy[i] * up[i] * (s + g * s * (1.0 - s));
    }
}

void ref_softmax_fwd_d(const double *x, size_t rows, size_t d, size_t tq, int causal,
                       double scale, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * d;
        double *yr = y + r * d;
        long long limit = causal ? (long long)(r % tq) + (long long)d - (long long)tq
                                 : (long long)d - 1;
        size_t len = limit < 0 ? 0 : (size_t)(limit + 1 < (long long)d ? limit + 1 : (long long)d);
        double m = -INFINITY, s = 0.0;
        for (size_t j = 0; j < len; j++)
            m = fmax(m, scale * xr[j]);
        for (size_t j = 0; j < len; j++)
            s += exp(scale * xr[j] - m);
        for (size_t j = 0; j < d; j++)
            yr[j] = j < len ? exp(scale * xr[j] - m) / s : 0.0;
    }
}

void ref_softmax_bwd_d(const double *y, const double *dy, size_t rows, size_t d, double scale,
                       double *dx)
{
    for (size_t r = 0; r < rows; r++) {
        double dot = 0.0;
        for (size_t j = 0; j < d; j++)
            dot += dy[r * d + j] * y[r * d + j];
        for (size_t j = 0; j < d; j++)
            dx[r * d + j] = scale * y[r * d + j] * (dy[r * d + j] - dot);
    }
}

void ref_rmsnorm_fwd_d(const double *x, const double *w, size_t rows, size_t d, double eps,
                       double *y)
{
    for (size_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (size_t j = 0; j < d; j++)
            ss += x[r * d + j] * x[r * d + j];
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        for (size_t j = 0; j < d; j++)
            y[r * d + j] = x[r * d + j] * inv * (w ? w[j] : 1.0);
    }
}

void ref_rmsnorm_bwd_d(const double *x, const double *w, const double *dy, size_t rows,
                       size_t d, double eps, double *dx, double *dw)
{
    if (dw) {
        for (size_t j = 0; j < d; j++)
            dw[j] = 0.0;
    }
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * d, *dyr = dy + r * d;
        double ss = 0.0, sgx = 0.0;
        for (size_t j = 0; j < d; j++) {
            ss += xr[j] * xr[j];
            sgx += dyr[j] * (w ? w[j] : 1.0) * xr[j];
        }
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        /* y_j = x_j inv w_j, d inv / d x_k = -inv^3 x_k / d */
        for (size_t j = 0; j < d; j++) {
            double g = dyr[j] * (w ? w[j] : 1.0);
            dx[r * d + j] = inv * g - xr[j] * inv * inv * inv * sgx / (double)d;
            if (dw)
                dw[j] += dyr[j] * xr[j] * inv;
        }
    }
}

void ref_layernorm_fwd_d(const double *x, const double *w, const double *b, size_t rows,
                         size_t d, double eps, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * d;
        double mean = 0.0, var = 0.0;
        for (size_t j = 0; j < d; j++)
            mean += xr[j];
        mean /= (double)d;
        for (size_t j = 0; j < d; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= (double)d;
        double inv = 1.0 / sqrt(var + eps);
        for (size_t j = 0; j < d; j++)
            y[r * d + j] = (xr[j] - mean) * inv * (w ? w[j] : 1.0) + (b ? b[j] : 0.0);
    }
}

void ref_layernorm_bwd_d(const double *x, const double *w, const double *dy, size_t rows,
                         size_t d, double eps, int drop_mean_term, double *dx, double *dw,
                         double *db)
{
    for (size_t j = 0; j < d; j++) {
        if (dw)
            dw[j] = 0.0;
        if (db)
            db[j] = 0.0;
    }
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * d, *dyr = dy + r * d;
        double mean = 0.0, var = 0.0;
        for (size_t j = 0; j < d; j++)
            mean += xr[j];
        mean /= (double)d;
        for (size_t j = 0; j < d; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= (double)d;
        double inv = 1.0 / sqrt(var + eps);
        double mg = 0.0, mgx = 0.0;
        for (size_t j = 0; j < d; j++) {
            double g = dyr[j] * (w ? w[j] : 1.0);
            mg += g;
            mgx += g * (xr[j] - mean) * inv;
        }
        mg /= (double)d;
        mgx /= (double)d;
        if (drop_mean_term)
            mg = 0.0;
        for (size_t j = 0; j < d; j++) {
            double g = dyr[j] * (w ? w[j] : 1.0), xh = (xr[j] - mean) * inv;
            dx[r * d + j] = inv * (g - mg - xh * mgx);
            if (dw)
                dw[j] += dyr[j] * xh;
            if (db)
                db[j] += dyr[j];
        }
    }
}
