/* Pieces shared by the operation families. */
#include "../vk/runtime.h"
#include "ops_internal.h"

/* shaders/reduce.glsl's MCL_REDUCE_MAX_WG: its shared scratch holds this many partials. */
#define MCL_ROWS_MAX_WG 256u
/* Fewer invocations than this per row would leave most of a 64-wide GCN wave idle. */
#define MCL_ROWS_MIN_WG 64u

mcl_status mcl_ops_check_f32(mcl_context *ctx, const char *op, const mcl_tensor *const *t,
                             uint32_t count)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < count; i++) {
        if (!t[i])
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: a tensor is NULL", op);
    }
    for (uint32_t i = 0; i < count; i++) {
        if (t[i]->ctx != ctx)
            return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: tensor of another context", op);
    }
    for (uint32_t i = 0; i < count; i++) {
        if (t[i]->dtype != MCL_DTYPE_F32)
            return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s takes f32 tensors", op);
    }
    return MCL_SUCCESS;
}

uint32_t mcl_row_local_size(const mcl_context *ctx, uint64_t units)
{
    uint32_t limit = MCL_ROWS_MAX_WG;
    while (limit > mcl_traits_of(ctx)->max_invocations)
        limit /= 2;
    uint32_t size = MCL_ROWS_MIN_WG;
    while (size < limit && size < units)
        size *= 2;
    return size < limit ? size : limit;
}
