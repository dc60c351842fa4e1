/* Row-level entry points: sizes, argument checks, and dispatch to the per-format workers. */
#include <math.h>

#include "quant/quant_internal.h"

typedef void (*quantize_fn)(const float *x, void *blocks, int64_t nblocks);
typedef void (*dequantize_fn)(const void *blocks, float *y, int64_t nblocks);

typedef struct format_info {
    int64_t block_elems;
    size_t block_bytes;
    float max_abs; /* largest accepted |x|: the block scale must fit in fp16 */
    quantize_fn quantize;
    dequantize_fn dequantize;
} format_info;

static const format_info *format_of(mcl_dtype type)
{
    static const format_info q8_0 = {MCL_QK8_0, MCL_BLOCK_Q8_0_BYTES, MCL_Q8_0_MAX_ABS,
                                     mcl_q8_0_quantize, mcl_q8_0_dequantize};
    static const format_info q4_0 = {MCL_QK4_0, MCL_BLOCK_Q4_0_BYTES, MCL_Q4_0_MAX_ABS,
                                     mcl_q4_0_quantize, mcl_q4_0_dequantize};
    static const format_info q4_k = {MCL_QK_K, MCL_BLOCK_Q4_K_BYTES, MCL_K_MAX_ABS,
                                     mcl_q4_k_quantize, mcl_q4_k_dequantize};
    static const format_info q5_k = {MCL_QK_K, MCL_BLOCK_Q5_K_BYTES, MCL_K_MAX_ABS,
                                     mcl_q5_k_quantize, mcl_q5_k_dequantize};
    static const format_info q6_k = {MCL_QK_K, MCL_BLOCK_Q6_K_BYTES, MCL_K_MAX_ABS,
                                     mcl_q6_k_quantize, mcl_q6_k_dequantize};
    switch (type) {
    case MCL_DTYPE_Q8_0: return &q8_0;
    case MCL_DTYPE_Q4_0: return &q4_0;
    case MCL_DTYPE_Q4_K: return &q4_k;
    case MCL_DTYPE_Q5_K: return &q5_k;
    case MCL_DTYPE_Q6_K: return &q6_k;
    default: return NULL;
    }
}

int64_t mcl_quant_block_elems(mcl_dtype type)
{
    const format_info *f = format_of(type);
    return f ? f->block_elems : 0;
}

size_t mcl_quant_block_bytes(mcl_dtype type)
{
    const format_info *f = format_of(type);
    return f ? f->block_bytes : 0;
}

size_t mcl_quant_row_size(mcl_dtype type, int64_t n)
{
    const format_info *f = format_of(type);
    if (!f || n < 0 || n % f->block_elems != 0)
        return 0;
    uint64_t nblocks = (uint64_t)(n / f->block_elems);
    if (nblocks > SIZE_MAX / f->block_bytes)
        return 0;
    return (size_t)nblocks * f->block_bytes;
}

/* Shared checks; on success *out is the format and the caller may run it. */
static int check_row(mcl_dtype type, const void *src, const void *dst, int64_t n,
                     const format_info **out)
{
    const format_info *f = format_of(type);
    if (!f)
        return MCL_ERROR_UNSUPPORTED;
    if (n < 0 || n % f->block_elems != 0 || (n > 0 && (!src || !dst)))
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_quant_row_size(type, n) == 0 && n > 0)
        return MCL_ERROR_INVALID_ARGUMENT; /* does not fit in size_t */
    *out = f;
    return MCL_SUCCESS;
}

int mcl_quantize_row(mcl_dtype type, const float *x, void *blocks, int64_t n)
{
    const format_info *f = NULL;
    int status = check_row(type, x, blocks, n, &f);
    if (status != MCL_SUCCESS)
        return status;
    /* Checked up front so that a refused row leaves `blocks` untouched. The negated
     * comparison also rejects NaN. */
    for (int64_t i = 0; i < n; i++) {
        if (!(fabsf(x[i]) <= f->max_abs))
            return MCL_ERROR_INVALID_ARGUMENT;
    }
    f->quantize(x, blocks, n / f->block_elems);
    return MCL_SUCCESS;
}

int mcl_dequantize_row(mcl_dtype type, const void *blocks, float *y, int64_t n)
{
    const format_info *f = NULL;
    int status = check_row(type, blocks, y, n, &f);
    if (status != MCL_SUCCESS)
        return status;
    f->dequantize(blocks, y, n / f->block_elems);
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
