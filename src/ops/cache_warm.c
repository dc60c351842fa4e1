/* A read of a tensor's bytes into the device's last-level cache (cache_warm_u32.comp), which a
 * decode step records beside a dispatch that leaves memory idle, on the weights of the
 * products that follow it. */
#include "ops_internal.h"

#include "../vk/runtime.h"

/* cache_warm_u32.comp's WARM_LOADS: 16-byte loads an invocation. */
#define MCL_WARM_LOADS 16u

mcl_status mcl_cache_warm(mcl_context *ctx, mcl_tensor *t, uint64_t offset, uint64_t bytes,
                          mcl_tensor *sink)
{
    if (!ctx || !t || !sink || t->ctx != ctx || sink->ctx != ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (sink->nbytes < 16 || sink == t)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_cache_warm: the sink holds 4 words and is not the tensor read");
    /* A hint: a tensor beyond one binding (a weight bound in parts) is left alone. */
    if (t->nbytes > mcl_traits_of(ctx)->max_binding_bytes)
        return MCL_SUCCESS;
    if (offset > t->nbytes)
        offset = t->nbytes;
    if (bytes > t->nbytes - offset)
        bytes = t->nbytes - offset;
    /* One binding's words fit 32 bits (maxStorageBufferRange is a uint32_t). */
    uint64_t first = offset / 16, count = bytes / 16;
    if (count == 0)
        return MCL_SUCCESS;
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_simple(ctx, MCL_KERNEL_CACHE_WARM_U32, 2, 8, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    /* A hint again: past what one row of 65535 workgroups reads, the stretch is cut short. */
    uint64_t per = (uint64_t)mcl_kernel_local_size(kernel) * MCL_WARM_LOADS;
    if (count > 65535 * per)
        count = 65535 * per;
    uint64_t groups = (count + per - 1) / per;
    struct {
        uint32_t first, count;
    } push = {(uint32_t)first, (uint32_t)count};
    mcl_profile_op(ctx, "cache warm", (double)count * 16, 0);
    return mcl_dispatch(ctx, kernel, &t, 1, &sink, 1, &push, (uint32_t)groups, 1, 1);
}
