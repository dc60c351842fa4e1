/* Layout operations: RoPE, embedding gather, copy, permute, concat. */
#include "../vk/context.h"

#define MCL_STUB(name) \
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, name " is not implemented yet") \
               : MCL_ERROR_INVALID_ARGUMENT

mcl_status mcl_rope(mcl_context *ctx, const mcl_tensor *x, mcl_rope_layout layout,
                    float theta_base, int64_t position_offset, mcl_tensor *out)
{
    (void)x, (void)layout, (void)theta_base, (void)position_offset, (void)out;
    MCL_STUB("mcl_rope");
}

mcl_status mcl_embedding(mcl_context *ctx, const mcl_tensor *table, const mcl_tensor *ids,
                         mcl_tensor *out)
{
    (void)table, (void)ids, (void)out;
    MCL_STUB("mcl_embedding");
}

mcl_status mcl_copy(mcl_context *ctx, const mcl_tensor *src, mcl_tensor *dst)
{
    (void)src, (void)dst;
    MCL_STUB("mcl_copy");
}

mcl_status mcl_permute(mcl_context *ctx, const mcl_tensor *src, const uint32_t *perm,
                       mcl_tensor *dst)
{
    (void)src, (void)perm, (void)dst;
    MCL_STUB("mcl_permute");
}

mcl_status mcl_concat(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *b, uint32_t axis,
                      mcl_tensor *out)
{
    (void)a, (void)b, (void)axis, (void)out;
    MCL_STUB("mcl_concat");
}
