/* Row-level entry points: sizes, argument checks, and dispatch to the per-format workers. */
#include <math.h>

#include "quant/quant_internal.h"

typedef void (*quantize_fn)(const float *x, void *blocks, int64_t nblocks);
typedef void (*dequantize_fn)(const void *blocks, float *y, int64_t nblocks);

/* A block format: its row of the data-type table (core/dtype.h: block weights and bytes) and
 * what quantizing adds to it. */
typedef struct format_info {
    int64_t block_elems;
    size_t block_bytes;
    float max_abs; /* largest accepted |x|: the block scale must fit in fp16 */
    quantize_fn quantize;
    dequantize_fn dequantize;
} format_info;

/* The format of a block type, or 0 for any other value. */
static int format_of(mcl_dtype type, format_info *out)
{
    static const struct {
        mcl_dtype dtype;
        float max_abs;
        quantize_fn quantize;
        dequantize_fn dequantize;
    } formats[] = {
        {MCL_DTYPE_Q8_0, MCL_Q8_0_MAX_ABS, mcl_q8_0_quantize, mcl_q8_0_dequantize},
        {MCL_DTYPE_Q4_0, MCL_Q4_0_MAX_ABS, mcl_q4_0_quantize, mcl_q4_0_dequantize},
        {MCL_DTYPE_Q4_K, MCL_K_MAX_ABS, mcl_q4_k_quantize, mcl_q4_k_dequantize},
        {MCL_DTYPE_Q5_K, MCL_K_MAX_ABS, mcl_q5_k_quantize, mcl_q5_k_dequantize},
        {MCL_DTYPE_Q6_K, MCL_K_MAX_ABS, mcl_q6_k_quantize, mcl_q6_k_dequantize},
    };
    const mcl_dtype_traits *t = mcl_dtype_traits_of(type);
    if (!t || !t->is_block)
        return 0;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (formats[i].dtype == type) {
            *out = (format_info){t->block_weights, t->block_bytes, formats[i].max_abs,
                                 formats[i].quantize, formats[i].dequantize};
            return 1;
        }
    }
    return 0;
}

size_t mcl_quant_row_size(mcl_dtype type, int64_t n)
{
    format_info f;
    if (!format_of(type, &f) || n < 0 || n % f.block_elems != 0)
        return 0;
    uint64_t nblocks = (uint64_t)(n / f.block_elems);
    if (nblocks > SIZE_MAX / f.block_bytes)
        return 0;
    return (size_t)nblocks * f.block_bytes;
}

/* Shared checks; on success *f is the format and the caller may run it. */
static int check_row(mcl_dtype type, const void *src, const void *dst, int64_t n,
                     format_info *f)
{
    if (!format_of(type, f))
        return MCL_ERROR_UNSUPPORTED;
    if (n < 0 || n % f->block_elems != 0 || (n > 0 && (!src || !dst)))
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_quant_row_size(type, n) == 0 && n > 0)
        return MCL_ERROR_INVALID_ARGUMENT; /* does not fit in size_t */
    return MCL_SUCCESS;
}

int mcl_quantize_row(mcl_dtype type, const float *x, void *blocks, int64_t n)
{
    format_info f;
    int status = check_row(type, x, blocks, n, &f);
    if (status != MCL_SUCCESS)
        return status;
    /* Checked up front so that a refused row leaves `blocks` untouched. The negated
     * comparison also rejects NaN. */
    for (int64_t i = 0; i < n; i++) {
        if (!(fabsf(x[i]) <= f.max_abs))
            return MCL_ERROR_INVALID_ARGUMENT;
    }
    f.quantize(x, blocks, n / f.block_elems);
    return MCL_SUCCESS;
}

int mcl_dequantize_row(mcl_dtype type, const void *blocks, float *y, int64_t n)
{
    format_info f;
    int status = check_row(type, blocks, y, n, &f);
    if (status != MCL_SUCCESS)
        return status;
    f.dequantize(blocks, y, n / f.block_elems);
    return MCL_SUCCESS;
}

mcl_status mcl_quantize(mcl_dtype dtype, const float *x, void *blocks, int64_t n)
{
    return (mcl_status)mcl_quantize_row(dtype, x, blocks, n);
}

mcl_status mcl_dequantize(mcl_dtype dtype, const void *blocks, float *y, int64_t n)
{
    return (mcl_status)mcl_dequantize_row(dtype, blocks, y, n);
}
