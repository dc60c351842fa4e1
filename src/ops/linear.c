/* The public matrix products: mcl_matmul (an f32 b in matmul.c, a block-quantised one in
 * matmul_quant.c) and mcl_matmul_multi, several weights applied to one input (on the
 * integer-dot path that input is quantized once for all, where each mcl_matmul quantizes its
 * own and the GEMV then waits for it). */
#include "matmul_quant.h"
#include "ops_internal.h"

mcl_status mcl_matmul(mcl_context *ctx, const mcl_tensor *a, mcl_transpose ta,
                      const mcl_tensor *b, mcl_transpose tb, const mcl_tensor *bias,
                      mcl_tensor *c)
{
    if (!ctx || !a || !b || !c)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_dtype_block_weights(b->dtype) > 1)
        return mcl_matmul_quant(ctx, (mcl_tensor *)a, ta, (mcl_tensor *)b, tb,
                                (mcl_tensor *)bias, c);
    return mcl_matmul_f32(ctx, a, ta, b, tb, bias, c);
}

/* Checks c = a W^T for an f32 W as mcl_matmul takes it in mcl_matmul_multi (W 2-D [N, K] and
 * transposed, a [..., K]); records nothing. */
static mcl_status f32_check(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                            const mcl_tensor *bias, const mcl_tensor *c)
{
    if (a->ctx != ctx || w->ctx != ctx || c->ctx != ctx || (bias && bias->ctx != ctx))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_matmul: tensor of another context");
    if (a->dtype != MCL_DTYPE_F32 || c->dtype != MCL_DTYPE_F32 ||
        (bias && bias->dtype != MCL_DTYPE_F32))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_matmul takes f32 tensors");
    if (w->ndim != 2)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_matmul_multi: W must be 2-D");
    return mcl_linear_shapes_check(ctx, a, w, bias, c);
}

/* mcl_matmul_multi_ex, with `given` (where not NULL) the integer-dot path's quantization of a
 * made by the caller. */
static mcl_status multi(mcl_context *ctx, const mcl_tensor *ca, mcl_tensor *given,
                        uint32_t count, const mcl_tensor *const *w,
                        const mcl_tensor *const *bias, mcl_tensor *const *c, mcl_quant_path path,
                        const mcl_gemv_fold *fold)
{
    mcl_tensor *a = (mcl_tensor *)ca;
    if (!ctx || !a || !w || !c || count == 0 || count > MCL_MATMUL_MULTI_MAX)
        return MCL_ERROR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < count; i++) {
        if (!w[i] || !c[i])
            return MCL_ERROR_INVALID_ARGUMENT;
        int aliased = c[i] == a;
        for (uint32_t j = 0; j < count; j++)
            aliased |= c[i] == w[j] || (bias && c[i] == bias[j]) || (j < i && c[i] == c[j]);
        if (aliased)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_matmul_multi: output %u is also an input or another output", i);
    }
    quant_product p[MCL_MATMUL_MULTI_MAX];
    for (uint32_t i = 0; i < count; i++) {
        mcl_tensor *wi = (mcl_tensor *)w[i], *bi = bias ? (mcl_tensor *)bias[i] : NULL;
        mcl_status status;
        if (wi->dtype == MCL_DTYPE_F32) {
            status = f32_check(ctx, a, wi, bi, c[i]);
        } else if (mcl_quant_format(wi->dtype) < 0) {
            status = mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                              "mcl_matmul_multi: weight %u is %s, not f32 or block-quantised", i,
                              mcl_dtype_name(wi->dtype));
        } else {
            status = mcl_quant_check(ctx, a, MCL_NO_TRANSPOSE, wi, MCL_TRANSPOSE, bi, c[i], path,
                                     &p[i]);
        }
        if (status != MCL_SUCCESS)
            return status;
    }
    /* One quantization of a serves every product on the integer-dot path. */
    mcl_tensor *act = NULL;
    mcl_status status = MCL_SUCCESS;
    for (uint32_t i = 0; fold && i < count; i++)
        if (!mcl_matmul_folds(ctx, a, w[i], c[i], fold->norm != NULL))
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_matmul_multi: product %u cannot take the fold", i);
    if (fold && fold->norm)
        given = NULL;
    for (uint32_t i = 0; given && i < count; i++)
        if (w[i]->dtype != MCL_DTYPE_F32 && p[i].path == MCL_QUANT_PATH_DOT &&
            given->nbytes < (uint64_t)p[i].rows * (p[i].k / MCL_QUANT_LANE_WEIGHTS) *
                                MCL_QUANT_ACT_WORDS * 4)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_matmul_multi: the given quantization is too small for a");
    for (uint32_t i = 0; i < count && status == MCL_SUCCESS; i++) {
        mcl_tensor *bi = bias ? (mcl_tensor *)bias[i] : NULL;
        if (w[i]->dtype == MCL_DTYPE_F32) {
            status = mcl_matmul_f32(ctx, a, MCL_NO_TRANSPOSE, w[i], MCL_TRANSPOSE, bi, c[i]);
            continue;
        }
        if (p[i].path == MCL_QUANT_PATH_DOT && !act && !given && !(fold && fold->norm))
            status = mcl_quantize_into_scratch(ctx, a, p[i].rows, p[i].k, &act);
        if (status == MCL_SUCCESS)
            status = mcl_quant_record(ctx, &p[i], a, given ? given : act, (mcl_tensor *)w[i],
                                      bi, c[i], fold);
    }
    mcl_tensor_destroy(act);
    return status;
}

mcl_status mcl_matmul_multi_ex(mcl_context *ctx, const mcl_tensor *a, uint32_t count,
                               const mcl_tensor *const *w, const mcl_tensor *const *bias,
                               mcl_tensor *const *c, mcl_quant_path path)
{
    return multi(ctx, a, NULL, count, w, bias, c, path, NULL);
}

mcl_status mcl_matmul_multi_given(mcl_context *ctx, const mcl_tensor *a, mcl_tensor *act,
                                  uint32_t count, const mcl_tensor *const *w,
                                  const mcl_tensor *const *bias, mcl_tensor *const *c)
{
    return multi(ctx, a, act, count, w, bias, c, MCL_QUANT_PATH_AUTO, NULL);
}

mcl_status mcl_matmul_multi_fold(mcl_context *ctx, const mcl_tensor *a, mcl_tensor *act,
                                 uint32_t count, const mcl_tensor *const *w,
                                 const mcl_tensor *const *bias, mcl_tensor *const *c,
                                 const mcl_gemv_fold *fold)
{
    return multi(ctx, a, act, count, w, bias, c, MCL_QUANT_PATH_AUTO, fold);
}

int mcl_matmul_quantizes(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                         const mcl_tensor *c)
{
    quant_product p;
    if (!ctx || !a || !w || !c || mcl_quant_format(w->dtype) < 0)
        return 0;
    return mcl_quant_check(ctx, (mcl_tensor *)a, MCL_NO_TRANSPOSE, (mcl_tensor *)w,
                           MCL_TRANSPOSE, NULL, (mcl_tensor *)c, MCL_QUANT_PATH_AUTO, &p) ==
               MCL_SUCCESS &&
           p.path == MCL_QUANT_PATH_DOT;
}

mcl_status mcl_matmul_multi(mcl_context *ctx, const mcl_tensor *a, uint32_t count,
                            const mcl_tensor *const *w, const mcl_tensor *const *bias,
                            mcl_tensor *const *c)
{
    return mcl_matmul_multi_ex(ctx, a, count, w, bias, c, MCL_QUANT_PATH_AUTO);
}
