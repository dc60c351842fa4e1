/* Test patterns written by the GPU (fill_pattern_u32.comp): a kernel of the tools and the
 * tests, linked into them and not shipped in the library. */
#include "pattern.h"

#include <string.h>

#include "vk/runtime.h"

typedef struct pattern_push {
    uint32_t n;
    uint32_t seed;
    uint32_t stride;
    uint32_t value;
    uint32_t floats;
    uint32_t signs;
    uint32_t whole;
} pattern_push;

/* Enough workgroups to fill the device; the shader's grid-stride loop covers the rest. */
#define MCL_MAX_PATTERN_GROUPS 65535u

static mcl_status fill(mcl_context *ctx, mcl_tensor *t, uint32_t seed, uint32_t stride,
                       uint32_t value, uint32_t floats, uint32_t signs, uint32_t whole)
{
    if (!ctx || !t)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (t->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_fill_pattern: tensor of another context");
    if (t->nbytes % 4 != 0 || t->nbytes / 4 > UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_fill_pattern: %llu bytes are not a whole number of words below 2^32",
                        (unsigned long long)t->nbytes);
    const mcl_kernel_desc desc = {
        .id = MCL_KERNEL_FILL_PATTERN_U32,
        .module = &mcl_spirv_tool_modules[MCL_KERNEL_FILL_PATTERN_U32],
        .binding_count = 1,
        .push_size = sizeof(pattern_push),
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t local = mcl_kernel_local_size(kernel);
    pattern_push push = {.n = (uint32_t)(t->nbytes / 4), .seed = seed, .stride = stride,
                         .value = value, .floats = floats, .signs = signs,
                         .whole = whole};
    uint64_t groups = (push.n + (uint64_t)local - 1) / local;
    if (groups > MCL_MAX_PATTERN_GROUPS)
        groups = MCL_MAX_PATTERN_GROUPS;
    return mcl_dispatch(ctx, kernel, NULL, 0, &t, 1, &push, (uint32_t)groups, 1, 1);
}

mcl_status mcl_fill_pattern_ex(mcl_context *ctx, mcl_tensor *t, uint32_t seed, uint32_t stride,
                               uint32_t value)
{
    return fill(ctx, t, seed, stride, value, 0, 0, 0);
}

mcl_status mcl_fill_pattern_signed(mcl_context *ctx, mcl_tensor *t, uint32_t seed,
                                   uint32_t stride, uint32_t value, uint32_t signs, int whole)
{
    return fill(ctx, t, seed, stride, value, 0, signs, whole != 0);
}

mcl_status mcl_fill_uniform(mcl_context *ctx, mcl_tensor *t, uint32_t seed, float scale)
{
    if (!ctx || !t)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (t->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_fill_uniform takes f32 tensors");
    uint32_t bits;
    memcpy(&bits, &scale, 4);
    return fill(ctx, t, seed, 0, bits, 1, 0, 0);
}

mcl_status mcl_fill_pattern(mcl_context *ctx, mcl_tensor *t, uint32_t seed)
{
    if (!ctx || !t)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_dtype_size(t->dtype) != 4)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_fill_pattern takes 4-byte elements");
    return fill(ctx, t, seed, 0, 0, 0, 0, 0);
}
