/* Measurement support: timestamps, barriers and the raw-copy reference (measure.h). */
#include "measure.h"

#include <stdlib.h>
#include <time.h>

#include "private.h"
#include "core/alloc.h"

struct mcl_timer {
    mcl_context *ctx;
    VkQueryPool pool;
    uint32_t count;
};

mcl_status mcl_timer_create(mcl_context *ctx, uint32_t count, mcl_timer **out)
{
    *out = NULL;
    if (!(ctx->info.features_enabled & MCL_FEATURE_TIMESTAMPS))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "the device has no timestamps");
    mcl_timer *t = mcl_mem_calloc(1, sizeof *t);
    if (!t)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = count,
    };
    VkResult result = ctx->vk.vkCreateQueryPool(ctx->device, &info, NULL, &t->pool);
    if (result != VK_SUCCESS) {
        mcl_mem_free(t);
        return mcl_vk_fail(ctx, result, "vkCreateQueryPool");
    }
    t->ctx = ctx;
    t->count = count;
    *out = t;
    return MCL_SUCCESS;
}

void mcl_timer_destroy(mcl_timer *t)
{
    if (!t)
        return;
    mcl_stream_finish(t->ctx);
    t->ctx->vk.vkDestroyQueryPool(t->ctx->device, t->pool, NULL);
    mcl_mem_free(t);
}

mcl_status mcl_timer_reset(mcl_timer *t, uint32_t count)
{
    mcl_status status = mcl_stream_begin(t->ctx);
    if (status == MCL_SUCCESS)
        t->ctx->vk.vkCmdResetQueryPool(mcl_stream_cmd(t->ctx), t->pool, 0,
                                       count < t->count ? count : t->count);
    return status;
}

mcl_status mcl_timer_mark(mcl_timer *t, uint32_t index, int barrier)
{
    if (index >= t->count)
        return mcl_fail(t->ctx, MCL_ERROR_INVALID_ARGUMENT, "timestamp %u of %u", index,
                        t->count);
    mcl_status status = mcl_stream_begin(t->ctx);
    if (status != MCL_SUCCESS)
        return status;
    if (barrier)
        mcl_stream_full_barrier(t->ctx);
    t->ctx->vk.vkCmdWriteTimestamp(mcl_stream_cmd(t->ctx), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                   t->pool, index);
    return MCL_SUCCESS;
}

/* The first `count` timestamps, waited for, as seconds from timestamp 0 (masked to the
 * device's valid bits, converted with its period). */
static mcl_status since_first(mcl_timer *t, uint32_t count, double *seconds)
{
    mcl_context *ctx = t->ctx;
    uint64_t *ticks = mcl_mem_calloc(count ? count : 1, sizeof *ticks);
    if (!ticks)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    VkResult result = count == 0 ? VK_SUCCESS : ctx->vk.vkGetQueryPoolResults(
        ctx->device, t->pool, 0, count, count * sizeof *ticks, ticks, sizeof *ticks,
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    uint32_t bits = ctx->info.timestamp_valid_bits;
    uint64_t mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t delta = ((ticks[i] & mask) - (ticks[0] & mask)) & mask;
        seconds[i] = (double)delta * ctx->info.timestamp_period_ns * 1e-9;
    }
    mcl_mem_free(ticks);
    return result == VK_SUCCESS ? MCL_SUCCESS : mcl_vk_fail(ctx, result, "vkGetQueryPoolResults");
}

mcl_status mcl_timer_pairs(mcl_timer *t, uint32_t pairs, double *seconds)
{
    uint32_t needed = 2 * pairs;
    if (needed > t->count)
        return mcl_fail(t->ctx, MCL_ERROR_INVALID_ARGUMENT, "%u timestamps of %u", needed,
                        t->count);
    double *at = mcl_mem_calloc(needed ? needed : 1, sizeof *at);
    if (!at)
        return mcl_fail(t->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = since_first(t, needed, at);
    for (uint32_t r = 0; status == MCL_SUCCESS && r < pairs; r++)
        seconds[r] = at[2 * r + 1] - at[2 * r];
    mcl_mem_free(at);
    return status;
}

mcl_status mcl_timer_since_first(mcl_timer *t, uint32_t count, double *seconds)
{
    if (count == 0 || count > t->count)
        return mcl_fail(t->ctx, MCL_ERROR_INVALID_ARGUMENT, "%u timestamps of %u", count,
                        t->count);
    return since_first(t, count, seconds);
}

mcl_status mcl_record_barrier(mcl_context *ctx)
{
    mcl_status status = mcl_stream_begin(ctx);
    if (status == MCL_SUCCESS)
        mcl_stream_full_barrier(ctx);
    return status;
}

struct mcl_raw_buffer {
    mcl_context *ctx;
    mcl_block *block;
};

mcl_status mcl_raw_buffer_create(mcl_context *ctx, uint64_t bytes, mcl_raw_buffer **out)
{
    *out = NULL;
    mcl_raw_buffer *raw = mcl_mem_calloc(1, sizeof *raw);
    if (!raw)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = mcl_host_block_create(ctx, bytes, &raw->block);
    if (status != MCL_SUCCESS) {
        mcl_mem_free(raw);
        return status;
    }
    raw->ctx = ctx;
    *out = raw;
    return MCL_SUCCESS;
}

void mcl_raw_buffer_destroy(mcl_raw_buffer *raw)
{
    if (!raw)
        return;
    mcl_stream_finish(raw->ctx);
    mcl_host_block_destroy(raw->ctx, raw->block);
    mcl_mem_free(raw);
}

static double seconds_now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

mcl_status mcl_raw_copy(mcl_context *ctx, mcl_raw_buffer *raw, mcl_tensor *t, uint64_t bytes,
                        int upload, double *seconds)
{
    const mcl_allocation *a = &mcl_rt(t)->alloc;
    if (bytes > t->nbytes || bytes > raw->block->size)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "raw copy larger than its buffers");
    mcl_status status = mcl_stream_finish(ctx);
    if (status == MCL_SUCCESS)
        status = mcl_stream_begin(ctx);
    if (status != MCL_SUCCESS)
        return status;
    VkBufferCopy region = {.srcOffset = upload ? 0 : a->offset,
                           .dstOffset = upload ? a->offset : 0, .size = bytes};
    double start = seconds_now();
    ctx->vk.vkCmdCopyBuffer(mcl_stream_cmd(ctx), upload ? raw->block->buffer : a->block->buffer,
                            upload ? a->block->buffer : raw->block->buffer, 1, &region);
    mcl_stream_barrier_to_host(ctx);
    status = mcl_stream_finish(ctx);
    *seconds = seconds_now() - start;
    return status;
}
