/* Element-wise operations. */
#include "../vk/context.h"

/* Push constants of add_f32.comp. */
typedef struct add_push {
    uint32_t n;
} add_push;

/* Workgroups beyond this make no difference to a grid-stride loop, and it stays below the
 * 65535 maxComputeWorkGroupCount[0] that Vulkan guarantees. */
#define MCL_MAX_ELEMENTWISE_GROUPS 65535u

mcl_status mcl_add(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *b, mcl_tensor *out)
{
    if (!ctx || !a || !b || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (a->ctx != ctx || b->ctx != ctx || out->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_add: tensor of another context");
    if (a->dtype != MCL_DTYPE_F32 || b->dtype != MCL_DTYPE_F32 || out->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_add takes f32 tensors");
    if (a->ndim != b->ndim || a->ndim != out->ndim)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_add: shapes differ");
    for (uint32_t i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i] || a->shape[i] != out->shape[i])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_add: shapes differ");
    }
    int64_t n = mcl_tensor_numel(a);
    if (n > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_add: more than 2^32-1 elements");

    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_simple(ctx, MCL_KERNEL_ADD_F32, 3, sizeof(add_push), &kernel);
    if (status != MCL_SUCCESS)
        return status;
    add_push push = {.n = (uint32_t)n};
    uint64_t groups = ((uint64_t)n + kernel->local_size_x - 1) / kernel->local_size_x;
    if (groups > MCL_MAX_ELEMENTWISE_GROUPS)
        groups = MCL_MAX_ELEMENTWISE_GROUPS;
    mcl_tensor *reads[2] = {(mcl_tensor *)a, (mcl_tensor *)b};
    return mcl_stream_dispatch(ctx, kernel, reads, 2, &out, 1, &push, (uint32_t)groups, 1, 1);
}

mcl_status mcl_binary(mcl_context *ctx, mcl_binary_op op, const mcl_tensor *a,
                      const mcl_tensor *b, mcl_tensor *out)
{
    if (op == MCL_BINARY_ADD)
        return mcl_add(ctx, a, b, out);
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_binary is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}

mcl_status mcl_scale(mcl_context *ctx, const mcl_tensor *x, float alpha, float beta,
                     mcl_tensor *out)
{
    (void)x, (void)alpha, (void)beta, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_scale is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}

mcl_status mcl_activate(mcl_context *ctx, mcl_activation act, const mcl_tensor *x,
                        mcl_tensor *out)
{
    (void)act, (void)x, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_activate is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}

mcl_status mcl_swiglu(mcl_context *ctx, const mcl_tensor *gate, const mcl_tensor *up,
                      mcl_tensor *out)
{
    (void)gate, (void)up, (void)out;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_swiglu is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}
