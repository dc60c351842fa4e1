/* CPU references of the element-wise operations (and the shared integer hash). Arithmetic
 * that Vulkan requires to be correctly rounded (add, sub, mul, div) is done in float, as the
 * GPU does; transcendental maps are done in double and rounded once. */
#include <math.h>

#include "ref.h"

void ref_add_f32(const float *a, const float *b, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

uint32_t ref_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

static float binary_one(int op, float a, float b)
{
    switch (op) {
    case REF_BINARY_ADD:
        return a + b;
    case REF_BINARY_SUB:
        return a - b;
    case REF_BINARY_MUL:
        return a * b;
    default:
        return a / b;
    }
}

void ref_binary_f32(int op, const float *a, const int64_t *a_shape, uint32_t a_ndim,
                    const float *b, const int64_t *b_shape, uint32_t b_ndim, float *y)
{
    size_t n = 1;
    for (uint32_t d = 0; d < a_ndim; d++)
        n *= (size_t)a_shape[d];
    for (size_t i = 0; i < n; i++) {
        /* Walk a's coordinates from the last dimension; b's aligned dimension of extent 1
         * repeats (contributes nothing to b's index). */
        size_t rest = i, bi = 0, b_step = 1;
        for (uint32_t k = 0; k < a_ndim; k++) {
            size_t coord = rest % (size_t)a_shape[a_ndim - 1 - k];
            rest /= (size_t)a_shape[a_ndim - 1 - k];
            if (k < b_ndim) {
                size_t extent = (size_t)b_shape[b_ndim - 1 - k];
                if (extent != 1)
                    bi += coord * b_step;
                b_step *= extent;
            }
        }
        y[i] = binary_one(op, a[i], b[bi]);
    }
}

void ref_scale_f32(const float *x, float alpha, float beta, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)((double)alpha * x[i] + beta);
}

static double silu(double x)
{
    return x / (1.0 + exp(-x));
}

void ref_activate_f32(int act, const float *x, float *y, size_t n)
{
    /* The tanh form, literally as motifcl.h documents it. */
    const double k = sqrt(2.0 / 3.14159265358979323846);
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        switch (act) {
        case REF_ACTIVATION_RELU:
            y[i] = (float)(v > 0.0 ? v : 0.0);
            break;
        case REF_ACTIVATION_GELU:
            y[i] = (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
            break;
        default:
            y[i] = (float)silu(v);
            break;
        }
    }
}

void ref_gelu_erf_f32(const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0))));
}

void ref_swiglu_f32(const float *gate, const float *up, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)(silu(gate[i]) * up[i]);
}
