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

#include "graph.h"

struct mcl_graph {
    mcl_context *ctx;
    struct mcl_graph *next;        /* the context's list of graphs */
    VkCommandBuffer cmd;
    mcl_desc_pools desc;
    mcl_tensor **tensors;
    uint32_t tensor_count, tensor_capacity;
    uint32_t dispatches;
    uint64_t last_serial;          /* batch of the latest replay */
    int failed;                    /* a use could not be recorded: the graph is unusable */
};

VkCommandBuffer mcl_graph_cmd(const mcl_graph *g)
{
    return g->cmd;
}

mcl_desc_pools *mcl_graph_desc_pools(mcl_graph *g)
{
    return &g->desc;
}

void mcl_graph_count_dispatch(mcl_graph *g)
{
    g->dispatches++;
}

void mcl_graph_use(mcl_graph *g, mcl_tensor *const *tensors, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        mcl_tensor *t = tensors[i];
        uint32_t j = 0;
        while (j < g->tensor_count && g->tensors[j] != t)
            j++;
        if (j < g->tensor_count)
            continue;
        if (g->tensor_count == g->tensor_capacity) {
            uint32_t capacity = g->tensor_capacity ? 2 * g->tensor_capacity : 16;
            mcl_tensor **grown = realloc(g->tensors, capacity * sizeof *grown);
            if (!grown) {
                g->failed = 1;
                return;
            }
            g->tensors = grown;
            g->tensor_capacity = capacity;
        }
        g->tensors[g->tensor_count++] = t;
        t->graph_refs++;
    }
}

mcl_status mcl_graph_begin(mcl_context *ctx)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (ctx->stream.capture)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "a capture is already running");
    /* Work recorded so far belongs before the graph, not in it. */
    mcl_status status = mcl_stream_flush(ctx, VK_NULL_HANDLE, NULL);
    if (status != MCL_SUCCESS)
        return status;
    mcl_graph *g = calloc(1, sizeof *g);
    if (!g)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    g->ctx = ctx;
    VkCommandBufferAllocateInfo cmd_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->stream.pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkResult result = ctx->vk.vkAllocateCommandBuffers(ctx->device, &cmd_info, &g->cmd);
    if (result != VK_SUCCESS) {
        free(g);
        return mcl_vk_fail(ctx, result, "vkAllocateCommandBuffers");
    }
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
    };
    result = ctx->vk.vkBeginCommandBuffer(g->cmd, &begin);
    if (result != VK_SUCCESS) {
        ctx->vk.vkFreeCommandBuffers(ctx->device, ctx->stream.pool, 1, &g->cmd);
        free(g);
        return mcl_vk_fail(ctx, result, "vkBeginCommandBuffer");
    }
    ctx->stream.capture = g;
    mcl_stream_full_barrier(ctx);
    g->next = ctx->graphs;
    ctx->graphs = g;
    return MCL_SUCCESS;
}

mcl_status mcl_graph_end(mcl_context *ctx, mcl_graph **out)
{
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_graph *g = ctx->stream.capture;
    if (!g)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "no capture is running");
    mcl_stream_full_barrier(ctx);
    ctx->stream.capture = NULL;
    /* Eager work before and after the capture met no barrier of its own in between: the
     * graph's barriers run only when it is replayed. */
    ctx->stream.barrier_pending = 1;
    VkResult result = ctx->vk.vkEndCommandBuffer(g->cmd);
    if (result != VK_SUCCESS || g->failed) {
        mcl_graph_destroy(g);
        return result != VK_SUCCESS ? mcl_vk_fail(ctx, result, "vkEndCommandBuffer")
                                    : mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY,
                                               "out of host memory while capturing");
    }
    *out = g;
    return MCL_SUCCESS;
}

mcl_status mcl_graph_replay(mcl_context *ctx, mcl_graph *g)
{
    if (!ctx || !g)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (g->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "graph of another context");
    if (ctx->stream.capture)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "cannot replay while capturing");
    uint64_t serial;
    mcl_status status = mcl_stream_flush(ctx, g->cmd, &serial);
    if (status != MCL_SUCCESS)
        return status;
    g->last_serial = serial;
    for (uint32_t i = 0; i < g->tensor_count; i++)
        g->tensors[i]->last_batch = serial;
    return MCL_SUCCESS;
}

uint32_t mcl_graph_dispatch_count(const mcl_graph *g)
{
    return g ? g->dispatches : 0;
}

void mcl_graph_destroy(mcl_graph *g)
{
    if (!g)
        return;
    mcl_context *ctx = g->ctx;
    if (ctx->stream.capture == g) {
        ctx->vk.vkEndCommandBuffer(g->cmd);
        ctx->stream.capture = NULL;
        ctx->stream.barrier_pending = 1;
    }
    if (g->last_serial > ctx->stream.completed)
        mcl_stream_finish(ctx);
    for (mcl_graph **link = &ctx->graphs; *link; link = &(*link)->next) {
        if (*link == g) {
            *link = g->next;
            break;
        }
    }
    for (uint32_t i = 0; i < g->tensor_count; i++) {
        mcl_tensor *t = g->tensors[i];
        if (--t->graph_refs == 0 && t->orphaned)
            mcl_tensor_release(t);
    }
    free(g->tensors);
    mcl_desc_pools_destroy(ctx, &g->desc);
    ctx->vk.vkFreeCommandBuffers(ctx->device, ctx->stream.pool, 1, &g->cmd);
    free(g);
}

void mcl_graphs_destroy_all(mcl_context *ctx)
{
    while (ctx->graphs)
        mcl_graph_destroy(ctx->graphs);
}
