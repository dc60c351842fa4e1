/* Matrix products with block-quantised weights, and GPU dequantization. */
#include "../vk/context.h"
#include "ops_internal.h"

mcl_status mcl_matmul_quant(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                            mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c)
{
    (void)a, (void)ta, (void)b, (void)tb, (void)bias, (void)c;
    return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "quantized matmul is not implemented yet");
}

mcl_status mcl_dequantize_tensor(mcl_context *ctx, const mcl_tensor *q, mcl_tensor *out)
{
    (void)q, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_dequantize_tensor is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}
