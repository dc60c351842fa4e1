/* Test patterns written by the GPU. */
#include "../vk/runtime.h"
#include "ops_internal.h"

typedef struct pattern_push {
    uint32_t n;
    uint32_t seed;
} pattern_push;

/* Enough workgroups to fill the device; the shader's grid-stride loop covers the rest. */
#define MCL_MAX_PATTERN_GROUPS 65535u

mcl_status mcl_fill_pattern(mcl_context *ctx, mcl_tensor *t, uint32_t seed)
{
    if (!ctx || !t)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (t->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_fill_pattern: tensor of another context");
    if (mcl_dtype_size(t->dtype) != 4)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_fill_pattern takes 4-byte elements");
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_simple(ctx, MCL_KERNEL_FILL_PATTERN_U32, 1, sizeof(pattern_push),
                                       &kernel);
    if (status != MCL_SUCCESS)
        return status;
    pattern_push push = {.n = (uint32_t)(t->nbytes / 4), .seed = seed};
    uint64_t groups = (push.n + (uint64_t)mcl_kernel_local_size(kernel) - 1) / mcl_kernel_local_size(kernel);
    if (groups > MCL_MAX_PATTERN_GROUPS)
        groups = MCL_MAX_PATTERN_GROUPS;
    return mcl_dispatch(ctx, kernel, NULL, 0, &t, 1, &push, (uint32_t)groups, 1, 1);
}
