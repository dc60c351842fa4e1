/* Row operations: softmax, reductions, RMSNorm, LayerNorm. */
#include "../vk/context.h"

mcl_status mcl_softmax(mcl_context *ctx, const mcl_tensor *x, float scale, int causal,
                       mcl_tensor *out)
{
    (void)x, (void)scale, (void)causal, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_softmax is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}

mcl_status mcl_reduce_rows(mcl_context *ctx, mcl_reduce_op op, const mcl_tensor *x,
                           mcl_tensor *out)
{
    (void)op, (void)x, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_reduce_rows is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}

mcl_status mcl_rmsnorm(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                       float eps, mcl_tensor *out)
{
    (void)x, (void)weight, (void)eps, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_rmsnorm is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}

mcl_status mcl_layernorm(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                         const mcl_tensor *bias, float eps, mcl_tensor *out)
{
    (void)x, (void)weight, (void)bias, (void)eps, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_layernorm is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}
