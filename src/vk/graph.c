/* Recorded sequences: capture a sequence of operations once into a command buffer of its
 * own, then submit it again and again. A replay costs one vkQueueSubmit whatever the number
 * of dispatches, which is the point on drivers where a submit costs 150-200 us.
 *
 * Ordering: the graph's command buffer begins and ends with a full barrier, so its work is
 * ordered after everything submitted before a replay and before everything after. The
 * command buffer may be pending more than once (simultaneous use): replays queue up without
 * the host waiting, and the queue runs them in order. */
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "core/alloc.h"

struct mcl_graph {
    mcl_context *ctx;
    struct mcl_graph *next;        /* the context's list of graphs */
    mcl_capture cap;               /* its commands, descriptor sets and tensors */
    uint64_t last_serial;          /* batch of the latest replay */
};

static mcl_status graph_begin_entered(mcl_context *ctx)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (ctx->stream.capture)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "a capture is already running");
    mcl_graph *g = mcl_mem_calloc(1, sizeof *g);
    if (!g)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    g->ctx = ctx;
    VkCommandBufferAllocateInfo cmd_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->stream.pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkResult result = ctx->vk.vkAllocateCommandBuffers(ctx->device, &cmd_info, &g->cap.cmd);
    if (result != VK_SUCCESS) {
        mcl_mem_free(g);
        return mcl_vk_fail(ctx, result, "vkAllocateCommandBuffers");
    }
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
    };
    result = ctx->vk.vkBeginCommandBuffer(g->cap.cmd, &begin);
    mcl_status status = result == VK_SUCCESS ? mcl_stream_capture_begin(ctx, &g->cap)
                                             : mcl_vk_fail(ctx, result, "vkBeginCommandBuffer");
    if (status != MCL_SUCCESS) {
        if (result == VK_SUCCESS)
            ctx->vk.vkEndCommandBuffer(g->cap.cmd);
        ctx->vk.vkFreeCommandBuffers(ctx->device, ctx->stream.pool, 1, &g->cap.cmd);
        mcl_profile_batch_destroy(ctx, g->cap.profile);
        mcl_mem_free(g);
        return status;
    }
    g->next = ctx->graphs;
    ctx->graphs = g;
    return MCL_SUCCESS;
}

mcl_status mcl_graph_begin(mcl_context *ctx)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = graph_begin_entered(ctx);
    mcl_context_leave(ctx);
    return status;
}

/* The graph whose capture is running, or NULL. */
static mcl_graph *capturing_graph(const mcl_context *ctx)
{
    for (mcl_graph *g = ctx->graphs; g; g = g->next) {
        if (ctx->stream.capture == &g->cap)
            return g;
    }
    return NULL;
}

static mcl_status graph_end_entered(mcl_context *ctx, mcl_graph **out)
{
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_graph *g = capturing_graph(ctx);
    if (!g)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "no capture is running");
    mcl_stream_capture_end(ctx);
    VkResult result = ctx->vk.vkEndCommandBuffer(g->cap.cmd);
    if (result != VK_SUCCESS || g->cap.failed) {
        mcl_graph_destroy(g);
        return result != VK_SUCCESS ? mcl_vk_fail(ctx, result, "vkEndCommandBuffer")
                                    : mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY,
                                               "out of host memory while capturing");
    }
    *out = g;
    return MCL_SUCCESS;
}

mcl_status mcl_graph_end(mcl_context *ctx, mcl_graph **out)
{
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = graph_end_entered(ctx, out);
    mcl_context_leave(ctx);
    return status;
}

static mcl_status graph_replay_entered(mcl_context *ctx, mcl_graph *g)
{
    if (!ctx || !g)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (g->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "graph of another context");
    if (ctx->stream.capture)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "cannot replay while capturing");
    uint64_t serial;
    mcl_status status = mcl_stream_flush(ctx, g->cap.cmd, &serial);
    if (status != MCL_SUCCESS)
        return status;
    g->last_serial = serial;
    for (uint32_t i = 0; i < g->cap.tensor_count; i++)
        g->cap.tensors[i]->last_batch = serial;
    return g->cap.profile ? mcl_profile_replayed(ctx, &g->cap) : MCL_SUCCESS;
}

mcl_status mcl_graph_replay(mcl_context *ctx, mcl_graph *g)
{
    if (!ctx || !g)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = graph_replay_entered(ctx, g);
    mcl_context_leave(ctx);
    return status;
}

uint32_t mcl_graph_dispatch_count(const mcl_graph *g)
{
    return g ? g->cap.dispatches : 0;
}

void mcl_graph_destroy(mcl_graph *g)
{
    if (!g)
        return;
    mcl_context *ctx = g->ctx;
    if (ctx->stream.capture == &g->cap) {
        mcl_stream_capture_end(ctx);
        ctx->vk.vkEndCommandBuffer(g->cap.cmd);
    }
    if (g->last_serial > ctx->stream.completed && mcl_stream_finish(ctx) != MCL_SUCCESS &&
        g->last_serial > ctx->stream.completed) {
        /* The context is lost (a wait timed out, or the device was lost) and the last replay
         * may still be running: its command buffer and descriptor sets stay on the context's
         * list until mcl_context_destroy has waited for the device. */
        return;
    }
    for (mcl_graph **link = &ctx->graphs; *link; link = &(*link)->next) {
        if (*link == g) {
            *link = g->next;
            break;
        }
    }
    for (uint32_t i = 0; i < g->cap.tensor_count; i++) {
        mcl_tensor_rt *t = g->cap.tensors[i];
        if (--t->graph_refs == 0 && t->orphaned)
            mcl_tensor_release(t);
    }
    mcl_mem_free(g->cap.tensors);
    mcl_desc_pools_destroy(ctx, &g->cap.desc);
    ctx->vk.vkFreeCommandBuffers(ctx->device, ctx->stream.pool, 1, &g->cap.cmd);
    mcl_profile_batch_destroy(ctx, g->cap.profile);
    mcl_mem_free(g);
}

void mcl_graphs_destroy_all(mcl_context *ctx)
{
    while (ctx->graphs)
        mcl_graph_destroy(ctx->graphs);
}
