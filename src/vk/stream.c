/* The ordered stream of work: dispatches, uploads and downloads append to one command buffer,
 * which is submitted at a sync point (mcl_finish, a download). Transfers and dispatches share
 * the stream, so an upload can never overtake work recorded before it.
 *
 * Barriers: each tensor remembers the barrier epoch of its last read and last write in the
 * open batch. A command that reads something written since the last barrier (read after
 * write), or writes something read or written since then (write after read/write), gets one
 * global memory barrier first; independent commands run without one. */
#include <stdlib.h>
#include <string.h>

#include "context.h"

#define MCL_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)

mcl_status mcl_stream_init(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    VkResult result;
    VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = ctx->queue_family,
    };
    result = ctx->vk.vkCreateCommandPool(ctx->device, &pool_info, NULL, &s->pool);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cmd_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = s->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    result = ctx->vk.vkAllocateCommandBuffers(ctx->device, &cmd_info, &s->cmd);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    result = ctx->vk.vkCreateFence(ctx->device, &fence_info, NULL, &s->fence);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkCreateFence");
    s->serial = 1;
    s->completed = 0;
    s->epoch = 1;
    return MCL_SUCCESS;
}

/* Free what finished batches no longer need. */
static void collect(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    mcl_deferred **link = &s->deferred;
    while (*link) {
        mcl_deferred *d = *link;
        if (d->batch <= s->completed) {
            *link = d->next;
            mcl_free(ctx, &d->alloc);
            free(d);
        } else {
            link = &d->next;
        }
    }
    ctx->allocator.ring_head = 0;
    for (uint32_t i = 0; i < s->desc_pool_count; i++)
        ctx->vk.vkResetDescriptorPool(ctx->device, s->desc_pools[i], 0);
    s->desc_pool_current = 0;
    s->desc_sets_in_current = 0;
}

void mcl_stream_destroy(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    s->completed = UINT64_MAX;  /* the device is idle: everything has finished */
    collect(ctx);
    for (uint32_t i = 0; i < s->desc_pool_count; i++)
        ctx->vk.vkDestroyDescriptorPool(ctx->device, s->desc_pools[i], NULL);
    free(s->desc_pools);
    if (s->fence)
        ctx->vk.vkDestroyFence(ctx->device, s->fence, NULL);
    if (s->pool)
        ctx->vk.vkDestroyCommandPool(ctx->device, s->pool, NULL);
    memset(s, 0, sizeof *s);
}

mcl_status mcl_stream_begin(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    if (s->recording)
        return MCL_SUCCESS;
    VkCommandBufferBeginInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VkResult result = ctx->vk.vkBeginCommandBuffer(s->cmd, &info);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkBeginCommandBuffer");
    s->recording = 1;
    return MCL_SUCCESS;
}

static void barrier(mcl_context *ctx, VkPipelineStageFlags dst_stages, VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = dst_access,
    };
    ctx->vk.vkCmdPipelineBarrier(ctx->stream.cmd, MCL_STAGES, dst_stages, 0, 1, &mb, 0, NULL, 0,
                                 NULL);
    ctx->stream.epoch++;
}

/* Emit a barrier if the command about to be recorded conflicts with an earlier one since the
 * last barrier, then mark its accesses. */
void mcl_stream_track(mcl_context *ctx, mcl_tensor *const *reads, uint32_t read_count,
                      mcl_tensor *const *writes, uint32_t write_count)
{
    mcl_stream *s = &ctx->stream;
    int needed = 0;
    for (uint32_t i = 0; i < read_count && !needed; i++)
        needed = reads[i]->write_epoch == s->epoch;
    for (uint32_t i = 0; i < write_count && !needed; i++)
        needed = writes[i]->write_epoch == s->epoch || writes[i]->read_epoch == s->epoch;
    if (needed)
        barrier(ctx, MCL_STAGES,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    for (uint32_t i = 0; i < read_count; i++) {
        reads[i]->read_epoch = s->epoch;
        reads[i]->last_batch = s->serial;
    }
    for (uint32_t i = 0; i < write_count; i++) {
        writes[i]->write_epoch = s->epoch;
        writes[i]->last_batch = s->serial;
    }
}

static mcl_status allocate_set(mcl_context *ctx, VkDescriptorSetLayout layout,
                               VkDescriptorSet *out)
{
    mcl_stream *s = &ctx->stream;
    if (s->desc_pool_count == 0 || s->desc_sets_in_current == MCL_DESCRIPTOR_POOL_SETS) {
        if (s->desc_pool_count > 0)
            s->desc_pool_current++;
        s->desc_sets_in_current = 0;
        if (s->desc_pool_current >= s->desc_pool_count) {
            if (s->desc_pool_count == s->desc_pool_capacity) {
                uint32_t capacity = s->desc_pool_capacity ? 2 * s->desc_pool_capacity : 4;
                VkDescriptorPool *pools = realloc(s->desc_pools, capacity * sizeof *pools);
                if (!pools)
                    return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
                s->desc_pools = pools;
                s->desc_pool_capacity = capacity;
            }
            VkDescriptorPoolSize size = {
                .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .descriptorCount = MCL_DESCRIPTOR_POOL_SETS * MCL_MAX_BINDINGS,
            };
            VkDescriptorPoolCreateInfo info = {
                .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                .maxSets = MCL_DESCRIPTOR_POOL_SETS,
                .poolSizeCount = 1,
                .pPoolSizes = &size,
            };
            VkResult result = ctx->vk.vkCreateDescriptorPool(ctx->device, &info, NULL,
                                                             &s->desc_pools[s->desc_pool_count]);
            if (result != VK_SUCCESS)
                return mcl_vk_fail(ctx, result, "vkCreateDescriptorPool");
            s->desc_pool_current = s->desc_pool_count++;
        }
    }
    VkDescriptorSetAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = s->desc_pools[s->desc_pool_current],
        .descriptorSetCount = 1,
        .pSetLayouts = &layout,
    };
    VkResult result = ctx->vk.vkAllocateDescriptorSets(ctx->device, &info, out);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkAllocateDescriptorSets");
    s->desc_sets_in_current++;
    return MCL_SUCCESS;
}

mcl_status mcl_stream_dispatch(mcl_context *ctx, const mcl_kernel *kernel,
                               mcl_tensor *const *reads, uint32_t read_count,
                               mcl_tensor *const *writes, uint32_t write_count,
                               const void *push, uint32_t groups_x, uint32_t groups_y,
                               uint32_t groups_z)
{
    mcl_stream *s = &ctx->stream;
    mcl_status status;
    if (read_count + write_count != kernel->binding_count)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "dispatch binds %u buffers, kernel has %u",
                        read_count + write_count, kernel->binding_count);
    if ((status = mcl_stream_begin(ctx)) != MCL_SUCCESS)
        return status;
    VkDescriptorSet set;
    if ((status = allocate_set(ctx, kernel->set_layout, &set)) != MCL_SUCCESS)
        return status;

    VkDescriptorBufferInfo buffers[MCL_MAX_BINDINGS];
    VkWriteDescriptorSet writes_info[MCL_MAX_BINDINGS];
    for (uint32_t i = 0; i < kernel->binding_count; i++) {
        const mcl_tensor *t = i < read_count ? reads[i] : writes[i - read_count];
        buffers[i] = (VkDescriptorBufferInfo){
            .buffer = t->alloc.block->buffer,
            .offset = t->alloc.offset,
            .range = t->nbytes,
        };
        writes_info[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &buffers[i],
        };
    }
    ctx->vk.vkUpdateDescriptorSets(ctx->device, kernel->binding_count, writes_info, 0, NULL);

    mcl_stream_track(ctx, reads, read_count, writes, write_count);
    ctx->vk.vkCmdBindPipeline(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel->pipeline);
    ctx->vk.vkCmdBindDescriptorSets(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel->layout, 0, 1,
                                    &set, 0, NULL);
    if (kernel->push_size)
        ctx->vk.vkCmdPushConstants(s->cmd, kernel->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                   kernel->push_size, push);
    ctx->vk.vkCmdDispatch(s->cmd, groups_x, groups_y, groups_z);
    return MCL_SUCCESS;
}

void mcl_stream_barrier_to_host(mcl_context *ctx)
{
    barrier(ctx, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

int mcl_stream_pending(const mcl_context *ctx, const mcl_tensor *t)
{
    return t->last_batch > ctx->stream.completed;
}

mcl_status mcl_stream_finish(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    VkResult result;
    if (!s->recording)
        return MCL_SUCCESS;
    s->recording = 0;
    result = ctx->vk.vkEndCommandBuffer(s->cmd);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkEndCommandBuffer");
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &s->cmd,
    };
    result = ctx->vk.vkQueueSubmit(ctx->queue, 1, &submit, s->fence);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkQueueSubmit");
    result = ctx->vk.vkWaitForFences(ctx->device, 1, &s->fence, VK_TRUE, UINT64_MAX);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkWaitForFences");
    ctx->vk.vkResetFences(ctx->device, 1, &s->fence);
    ctx->vk.vkResetCommandBuffer(s->cmd, 0);
    s->completed = s->serial++;
    /* The epoch carries over: a fence signal makes the batch's writes available but does not
     * make them visible to the next batch, so a tensor written last batch and read in the
     * next still gets a barrier. */
    collect(ctx);
    return MCL_SUCCESS;
}

void mcl_stream_release(mcl_context *ctx, mcl_allocation *alloc, uint64_t last_batch)
{
    mcl_stream *s = &ctx->stream;
    mcl_deferred *d = NULL;
    if (last_batch > s->completed)
        d = malloc(sizeof *d);
    if (!d) {
        /* Either nothing pending uses it, or no memory to defer: then wait for the GPU. */
        if (last_batch > s->completed)
            mcl_stream_finish(ctx);
        mcl_free(ctx, alloc);
        return;
    }
    d->batch = last_batch;
    d->alloc = *alloc;
    d->next = s->deferred;
    s->deferred = d;
    *alloc = (mcl_allocation){0};
}
