/* Test hooks into the runtime (inspect.h). */
#include "inspect.h"

#include <string.h>

#include "private.h"

mcl_placement mcl_inspect_placement(const mcl_tensor *t)
{
    const mcl_allocation *a = &mcl_rt(t)->alloc;
    return (mcl_placement){.block = a->block, .offset = a->offset, .size = a->size};
}

uint32_t mcl_inspect_memory_flags(const mcl_tensor *t)
{
    const mcl_block *b = mcl_rt(t)->alloc.block;
    return (uint32_t)t->ctx->memory_properties.memoryTypes[b->type].propertyFlags;
}

void mcl_inspect_transfers(const mcl_context *ctx, uint64_t *imported, uint64_t *pinned)
{
    *imported = ctx->allocator.imported_transfers;
    *pinned = ctx->allocator.pinned_transfers;
}

mcl_traits *mcl_inspect_traits(mcl_context *ctx)
{
    return &ctx->head.traits;
}

void mcl_inspect_reread_environment(mcl_context *ctx)
{
    mcl_env_settings env;
    mcl_env_read(&env);
    mcl_device_info info = ctx->info;
    mcl_traits now, *t = &ctx->head.traits;
    mcl_traits_decide(&info, &env, NULL, &now);
    t->quant_dot = now.quant_dot && t->integer_dot;
    t->quant_matrix = now.quant_matrix && t->cooperative_matrix;
    t->gemv = now.gemv;
    t->gemv_f32 = now.gemv_f32;
    t->gemm_slices = now.gemm_slices;
    t->gemm_unroll = now.gemm_unroll;
    t->gemm_f32_unroll = now.gemm_f32_unroll;
    memcpy(t->gemm_float_tile, now.gemm_float_tile, sizeof t->gemm_float_tile);
    memcpy(t->gemm_matrix_tile, now.gemm_matrix_tile, sizeof t->gemm_matrix_tile);
    t->attention_splits = now.attention_splits;
    t->attention_wg = now.attention_wg;
    t->attention_f32 = now.attention_f32;
    t->engine_split_glu = now.engine_split_glu;
    t->engine_split_moe = now.engine_split_moe;
    t->counter_rows = now.counter_rows;
    t->weight_part_bytes = t->max_binding_bytes;
    if (env.max_binding && env.max_binding < t->max_binding_bytes)
        t->weight_part_bytes = env.max_binding;
}

void mcl_inspect_invalid_call(mcl_context *ctx)
{
    /* A buffer of size 0 is invalid usage (VUID-VkBufferCreateInfo-size-00912). */
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = 0,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
    };
    VkBuffer buffer = VK_NULL_HANDLE;
    VkResult r = ctx->vk.vkCreateBuffer(ctx->device, &info, NULL, &buffer);
    if (r == VK_SUCCESS && buffer)
        ctx->vk.vkDestroyBuffer(ctx->device, buffer, NULL);
}
