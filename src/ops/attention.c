/* Multi-head attention: tiled prefill and split-key decode. */
#include "../vk/context.h"

mcl_status mcl_attention(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                         const mcl_tensor *v, const mcl_attention_desc *desc, mcl_tensor *out)
{
    (void)q, (void)k, (void)v, (void)desc, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_attention is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}
