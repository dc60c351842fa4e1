/* CPU references for the layout operations: RoPE, embedding, permute, concat. */
#include <float.h>
#include <math.h>

#include "ref.h"

/* ref_rope_angle() reproduces the shader's float roundings: every operation rounded to float
 * and none fused into fma. GCC contracts nothing in ISO C mode (-std=c11); clang contracts
 * within an expression unless told not to. */
#if FLT_EVAL_METHOD != 0
#error "ref_rope_angle needs float arithmetic evaluated in float (FLT_EVAL_METHOD 0)"
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* 2 pi; M_PI is not in strict C11. */
#define REF_TWO_PI 6.283185307179586476925

/* The double-float helpers of rope_f32.comp, step for step (see its opening comment): a value
 * is an unevaluated pair hi + lo of floats. */

/* Veltkamp's split: a = *hi + *lo exactly, each with at most 12 significant bits. */
static void df_split(float a, float *hi, float *lo)
{
    float scaled = 4097.0f * a;
    *hi = scaled - (scaled - a);
    *lo = a - *hi;
}

/* Dekker's product: a * b = *p + *e exactly. */
static void df_two_product(float a, float b, float *p, float *e)
{
    float ah, al, bh, bl;
    df_split(a, &ah, &al);
    df_split(b, &bh, &bl);
    *p = a * b;
    *e = (((ah * bh - *p) + ah * bl) + al * bh) + al * bl;
}

/* (ah + al) * (bh + bl), renormalised, into (*hi, *lo). */
static void df_mul(float ah, float al, float bh, float bl, float *hi, float *lo)
{
    float p, e;
    df_two_product(ah, bh, &p, &e);
    e = e + (ah * bl + al * bh);
    float sum = p + e;
    *lo = e - (sum - p);
    *hi = sum;
}

/* rope_record's float pair for v. */
static void df_from_double(double v, float *hi, float *lo)
{
    *hi = (float)v;
    *lo = (float)(v - (double)*hi);
}

float ref_rope_angle(float theta_base, int64_t head_dim, int64_t pair, int64_t position)
{
    /* The float steps of rope_f32.comp, in the same order, from the constants rope_record
     * passes: add, subtract and multiply are correctly rounded on the CPU and in Vulkan alike,
     * so these are the shader's bits. */
    float f_hi, f_lo;
    df_from_double(1.0 / REF_TWO_PI, &f_hi, &f_lo);
    for (int b = 0; b < 8; b++) {
        if (pair & (1 << b)) {
            float r_hi, r_lo;
            df_from_double(pow((double)theta_base, -2.0 * (double)(1u << b) / (double)head_dim),
                           &r_hi, &r_lo);
            df_mul(f_hi, f_lo, r_hi, r_lo, &f_hi, &f_lo);
        }
    }
    float pos = (float)position;
    float p, e;
    df_two_product(pos, f_hi, &p, &e);
    float turns_lo = e + pos * f_lo;
    /* nearbyintf in the default rounding mode: ties to even, as roundEven. */
    float u = (p - nearbyintf(p)) + turns_lo;
    float frac = u - nearbyintf(u);
    return frac * (float)REF_TWO_PI;
}

void ref_rope_f32(const float *x, float *y, int64_t batch, int64_t seq, int64_t heads,
                  int64_t head_dim, int split_half, float theta_base, int64_t position_offset,
                  int exact_angle)
{
    int64_t half = head_dim / 2;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t t = 0; t < seq; t++) {
            int64_t pos = position_offset + t;
            for (int64_t h = 0; h < heads; h++) {
                const float *xr = x + ((b * seq + t) * heads + h) * head_dim;
                float *yr = y + ((b * seq + t) * heads + h) * head_dim;
                for (int64_t i = 0; i < half; i++) {
                    double exponent = -2.0 * (double)i / (double)head_dim;
                    double angle = exact_angle
                                       ? (double)pos * pow((double)theta_base, exponent)
                                       : (double)ref_rope_angle(theta_base, head_dim, i, pos);
                    int64_t i0 = split_half ? i : 2 * i;
                    int64_t i1 = split_half ? i + half : 2 * i + 1;
                    double x0 = xr[i0], x1 = xr[i1];
                    yr[i0] = (float)(x0 * cos(angle) - x1 * sin(angle));
                    yr[i1] = (float)(x0 * sin(angle) + x1 * cos(angle));
                }
            }
        }
    }
}

void ref_embedding_f32(const float *table, int64_t vocab, int64_t dim, const int32_t *ids,
                       int64_t rows, float *y)
{
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t d = 0; d < dim; d++)
            y[r * dim + d] = ids[r] >= 0 && ids[r] < vocab ? table[ids[r] * dim + d] : 0.0f;
    }
}

void ref_permute_u32(const uint32_t *x, const int64_t *shape, uint32_t ndim,
                     const uint32_t *perm, uint32_t *y)
{
    int64_t n = 1, stride[4], dst_shape[4];
    for (uint32_t i = ndim; i-- > 0;) {
        stride[i] = n;
        n *= shape[i];
    }
    for (uint32_t i = 0; i < ndim; i++)
        dst_shape[i] = shape[perm[i]];
    /* Walk the destination in order; its coordinate i is the source's coordinate perm[i]. */
    for (int64_t j = 0; j < n; j++) {
        int64_t rest = j, src = 0;
        for (uint32_t i = ndim; i-- > 0;) {
            src += (rest % dst_shape[i]) * stride[perm[i]];
            rest /= dst_shape[i];
        }
        y[j] = x[src];
    }
}

void ref_concat_u32(const uint32_t *a, const int64_t *a_shape, const uint32_t *b,
                    const int64_t *b_shape, uint32_t ndim, uint32_t axis, uint32_t *y)
{
    int64_t outer = 1, inner = 1;
    for (uint32_t i = 0; i < axis; i++)
        outer *= a_shape[i];
    for (uint32_t i = axis + 1; i < ndim; i++)
        inner *= a_shape[i];
    int64_t na = a_shape[axis] * inner, nb = b_shape[axis] * inner;
    /* Each outer slice of the output is a's slice followed by b's. */
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < na; i++)
            *y++ = a[o * na + i];
        for (int64_t i = 0; i < nb; i++)
            *y++ = b[o * nb + i];
    }
}
