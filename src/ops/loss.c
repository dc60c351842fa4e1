/* Losses: softmax cross-entropy. */
#include "../vk/context.h"

mcl_status mcl_cross_entropy(mcl_context *ctx, const mcl_tensor *logits, const mcl_tensor *targets,
                             mcl_tensor *loss, mcl_tensor *lse)
{
    (void)logits, (void)targets, (void)loss, (void)lse;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_cross_entropy is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}
