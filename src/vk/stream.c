/* The ordered stream of work: dispatches, uploads and downloads append to the current slot's
 * command buffer, which is submitted at a sync point (mcl_finish, a download) or by a replay.
 * Transfers and dispatches share the stream, so an upload can never overtake work recorded
 * before it; while a graph is captured, commands go to its capture instead. Slots rotate: a
 * batch can be recorded while the previous one runs.
 *
 * Barriers: each tensor remembers the barrier epoch of its last read and last write. A
 * command that reads something written since the last barrier (read after write), or writes
 * something read or written since then (write after read/write), gets one global memory
 * barrier first; independent commands run without one. The epoch is not reset between
 * batches: a fence signal makes a batch's writes available, not visible to the next batch, so
 * a tensor written in one batch and read in the next still gets its barrier. */
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "core/alloc.h"

#define MCL_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)
#define MCL_ACCESS_ALL                                                                     \
    (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |  \
     VK_ACCESS_TRANSFER_WRITE_BIT)

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
    for (int i = 0; i < MCL_STREAM_SLOTS; i++) {
        VkCommandBufferAllocateInfo cmd_info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = s->pool,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
        };
        result = ctx->vk.vkAllocateCommandBuffers(ctx->device, &cmd_info, &s->slots[i].cmd);
        if (result != VK_SUCCESS)
            return mcl_vk_fail(ctx, result, "vkAllocateCommandBuffers");
        VkFenceCreateInfo fence_info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        result = ctx->vk.vkCreateFence(ctx->device, &fence_info, NULL, &s->slots[i].fence);
        if (result != VK_SUCCESS)
            return mcl_vk_fail(ctx, result, "vkCreateFence");
    }
    s->serial = 1;
    s->completed = 0;
    s->epoch = 1;
    return MCL_SUCCESS;
}

static void desc_pools_reset(mcl_context *ctx, mcl_desc_pools *p)
{
    for (uint32_t i = 0; i < p->count; i++)
        ctx->vk.vkResetDescriptorPool(ctx->device, p->pools[i], 0);
    p->current = 0;
    p->sets_in_current = 0;
}

void mcl_desc_pools_destroy(mcl_context *ctx, mcl_desc_pools *p)
{
    for (uint32_t i = 0; i < p->count; i++)
        ctx->vk.vkDestroyDescriptorPool(ctx->device, p->pools[i], NULL);
    mcl_mem_free(p->pools);
    memset(p, 0, sizeof *p);
}

static mcl_status desc_allocate(mcl_context *ctx, mcl_desc_pools *p,
                                VkDescriptorSetLayout layout, VkDescriptorSet *out)
{
    if (p->count == 0 || p->sets_in_current == MCL_DESCRIPTOR_POOL_SETS) {
        if (p->count > 0)
            p->current++;
        p->sets_in_current = 0;
        if (p->current >= p->count) {
            if (p->count == p->capacity) {
                uint32_t capacity = p->capacity ? 2 * p->capacity : 4;
                VkDescriptorPool *pools = mcl_mem_realloc(p->pools, capacity * sizeof *pools);
                if (!pools)
                    return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
                p->pools = pools;
                p->capacity = capacity;
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
            VkResult result =
                ctx->vk.vkCreateDescriptorPool(ctx->device, &info, NULL, &p->pools[p->count]);
            if (result != VK_SUCCESS)
                return mcl_vk_fail(ctx, result, "vkCreateDescriptorPool");
            p->current = p->count++;
        }
    }
    VkDescriptorSetAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = p->pools[p->current],
        .descriptorSetCount = 1,
        .pSetLayouts = &layout,
    };
    VkResult result = ctx->vk.vkAllocateDescriptorSets(ctx->device, &info, out);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkAllocateDescriptorSets");
    p->sets_in_current++;
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
            mcl_mem_free(d);
        } else {
            link = &d->next;
        }
    }
}

mcl_status mcl_stream_lost(mcl_context *ctx)
{
    return mcl_fail(ctx, MCL_ERROR_DEVICE_LOST, "the context's device was lost earlier (%s); "
                    "the context can only be destroyed",
                    ctx->lost == MCL_LOST_TIMEOUT ? "a wait for the GPU timed out"
                                                  : "VK_ERROR_DEVICE_LOST");
}

/* The fence timeout in nanoseconds (MOTIFCL_FENCE_TIMEOUT_MS, else the default). */
static uint64_t fence_timeout_ns(const mcl_context *ctx)
{
    uint64_t ms = ctx->env.fence_timeout_ms ? ctx->env.fence_timeout_ms
                                            : MCL_FENCE_TIMEOUT_MS_DEFAULT;
    return ms * UINT64_C(1000000);
}

/* Wait for a slot's batch and recycle what it held. A batch that does not finish within the
 * fence timeout, or a lost device, loses the context: the slot stays in flight (its memory is
 * released only when the context is destroyed, after vkDeviceWaitIdle). MOTIFCL_FAULT makes
 * one wait report a loss after waiting for real, so that what it held is recycled safely. */
static mcl_status slot_wait(mcl_context *ctx, mcl_slot *slot)
{
    mcl_stream *s = &ctx->stream;
    if (ctx->lost)
        return mcl_stream_lost(ctx);
    if (!slot->in_flight)
        return MCL_SUCCESS;
    uint64_t timeout_ns = fence_timeout_ns(ctx);
    VkResult result =
        ctx->vk.vkWaitForFences(ctx->device, 1, &slot->fence, VK_TRUE, timeout_ns);
    mcl_env_fault fault = ++ctx->fence_waits == ctx->env.fault_at ? ctx->env.fault
                                                                   : MCL_ENV_FAULT_NONE;
    if (result == VK_TIMEOUT) {
        ctx->lost = MCL_LOST_TIMEOUT;
        return mcl_fail(ctx, MCL_ERROR_DEVICE_LOST,
                        "vkWaitForFences timed out: the GPU did not finish a batch within %llu ms "
                        "(MOTIFCL_FENCE_TIMEOUT_MS); the context is lost",
                        (unsigned long long)(timeout_ns / 1000000));
    }
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkWaitForFences");
    ctx->vk.vkResetFences(ctx->device, 1, &slot->fence);
    slot->in_flight = 0;
    /* A fence's signal covers every batch submitted to the queue before it. */
    if (slot->serial > s->completed)
        s->completed = slot->serial;
    desc_pools_reset(ctx, &slot->desc);
    collect(ctx);
    if (fault == MCL_ENV_FAULT_TIMEOUT) {
        ctx->lost = MCL_LOST_TIMEOUT;
        return mcl_fail(ctx, MCL_ERROR_DEVICE_LOST,
                        "vkWaitForFences: timed out (MOTIFCL_FAULT=timeout@%llu); the context "
                        "is lost", (unsigned long long)ctx->env.fault_at);
    }
    if (fault == MCL_ENV_FAULT_DEVICE_LOST)
        return mcl_vk_fail(ctx, VK_ERROR_DEVICE_LOST,
                           "vkWaitForFences (MOTIFCL_FAULT=device_lost)");
    return ctx->profiler ? mcl_profile_slot_done(ctx, (uint32_t)(slot - s->slots)) : MCL_SUCCESS;
}

void mcl_stream_destroy(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    s->completed = UINT64_MAX;  /* the device is idle: everything has finished */
    collect(ctx);
    for (int i = 0; i < MCL_STREAM_SLOTS; i++) {
        mcl_desc_pools_destroy(ctx, &s->slots[i].desc);
        if (s->slots[i].fence)
            ctx->vk.vkDestroyFence(ctx->device, s->slots[i].fence, NULL);
    }
    if (s->pool)
        ctx->vk.vkDestroyCommandPool(ctx->device, s->pool, NULL);
    memset(s, 0, sizeof *s);
}

mcl_status mcl_stream_begin(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    if (ctx->lost)
        return mcl_stream_lost(ctx);
    if (s->capture || s->recording)
        return MCL_SUCCESS;
    mcl_slot *slot = &s->slots[s->current];
    mcl_status status = slot_wait(ctx, slot);
    if (status != MCL_SUCCESS)
        return status;
    ctx->vk.vkResetCommandBuffer(slot->cmd, 0);
    VkCommandBufferBeginInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VkResult result = ctx->vk.vkBeginCommandBuffer(slot->cmd, &info);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkBeginCommandBuffer");
    s->recording = 1;
    if (ctx->profiler)
        mcl_profile_slot_begin(ctx, s->current, slot->cmd);
    if (s->barrier_pending) {
        s->barrier_pending = 0;
        mcl_stream_full_barrier(ctx);
    }
    return MCL_SUCCESS;
}

VkCommandBuffer mcl_stream_cmd(const mcl_context *ctx)
{
    const mcl_stream *s = &ctx->stream;
    return s->capture ? s->capture->cmd : s->slots[s->current].cmd;
}

int mcl_capturing(const mcl_context *ctx)
{
    return ctx->stream.capture != NULL;
}

mcl_status mcl_stream_capture_begin(mcl_context *ctx, mcl_capture *capture)
{
    /* Work recorded so far belongs before the capture, not in it. */
    mcl_status status = mcl_stream_flush(ctx, VK_NULL_HANDLE, NULL);
    if (status == MCL_SUCCESS && ctx->profiler)
        status = mcl_profile_capture_begin(ctx, capture);
    if (status != MCL_SUCCESS)
        return status;
    ctx->stream.capture = capture;
    mcl_stream_full_barrier(ctx);
    return MCL_SUCCESS;
}

void mcl_stream_capture_end(mcl_context *ctx)
{
    if (!ctx->stream.capture)
        return;
    mcl_stream_full_barrier(ctx);
    ctx->stream.capture = NULL;
    /* Eager work before and after the capture met no barrier of its own in between: the
     * capture's barriers run only when it is replayed. */
    ctx->stream.barrier_pending = 1;
}

/* Note that the capture uses t: it stays alive while the capture exists. */
static void capture_use(mcl_capture *c, mcl_tensor_rt *t)
{
    for (uint32_t j = 0; j < c->tensor_count; j++) {
        if (c->tensors[j] == t)
            return;
    }
    if (c->tensor_count == c->tensor_capacity) {
        uint32_t capacity = c->tensor_capacity ? 2 * c->tensor_capacity : 16;
        mcl_tensor_rt **grown = mcl_mem_realloc(c->tensors, capacity * sizeof *grown);
        if (!grown) {
            c->failed = 1;
            return;
        }
        c->tensors = grown;
        c->tensor_capacity = capacity;
    }
    c->tensors[c->tensor_count++] = t;
    t->graph_refs++;
}

static void barrier(mcl_context *ctx, VkPipelineStageFlags dst_stages, VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = dst_access,
    };
    ctx->vk.vkCmdPipelineBarrier(mcl_stream_cmd(ctx), MCL_STAGES, dst_stages, 0, 1, &mb, 0, NULL,
                                 0, NULL);
    ctx->stream.epoch++;
}

void mcl_stream_full_barrier(mcl_context *ctx)
{
    barrier(ctx, MCL_STAGES, MCL_ACCESS_ALL);
}

/* A barrier between dispatches of a capture, which holds nothing but dispatches (transfers
 * are refused while capturing, and the capture's first and last barriers are full ones):
 * compute to compute. */
static void compute_barrier(mcl_context *ctx)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    ctx->vk.vkCmdPipelineBarrier(mcl_stream_cmd(ctx), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
                                 NULL);
    ctx->stream.epoch++;
}

void mcl_stream_barrier_to_host(mcl_context *ctx)
{
    barrier(ctx, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

void mcl_stream_track(mcl_context *ctx, mcl_tensor *const *reads, uint32_t read_count,
                      mcl_tensor *const *writes, uint32_t write_count)
{
    mcl_stream *s = &ctx->stream;
    int needed = 0;
    for (uint32_t i = 0; i < read_count && !needed; i++)
        needed = mcl_rt_root(reads[i])->write_epoch == s->epoch;
    for (uint32_t i = 0; i < write_count && !needed; i++) {
        const mcl_tensor_rt *w = mcl_rt_root(writes[i]);
        needed = w->write_epoch == s->epoch || w->read_epoch == s->epoch;
    }
    if (needed && s->capture)
        compute_barrier(ctx);
    else if (needed)
        mcl_stream_full_barrier(ctx);
    /* While capturing, the batch that will use a tensor is the replay's, set then. */
    uint64_t batch = s->capture ? 0 : s->serial;
    for (uint32_t i = 0; i < read_count; i++) {
        mcl_tensor_rt *r = mcl_rt_root(reads[i]);
        r->read_epoch = s->epoch;
        if (batch)
            r->last_batch = batch;
        if (s->capture)
            capture_use(s->capture, r);
    }
    for (uint32_t i = 0; i < write_count; i++) {
        mcl_tensor_rt *w = mcl_rt_root(writes[i]);
        w->write_epoch = s->epoch;
        if (batch)
            w->last_batch = batch;
        if (s->capture)
            capture_use(s->capture, w);
    }
}

static mcl_status dispatch_entered(mcl_context *ctx, const mcl_kernel *kernel,
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
    /* Only a block-quantised weight may exceed one binding (mcl_tensor_create_ex); the
     * operations that take one bind it in parts, and any other is refused here. */
    for (uint32_t i = 0; i < kernel->binding_count; i++) {
        const mcl_tensor *t = i < read_count ? reads[i] : writes[i - read_count];
        if (t->nbytes > ctx->info.max_storage_buffer_range)
            return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                            "a %s tensor of %llu bytes is larger than one storage-buffer binding "
                            "(maxStorageBufferRange %llu); only the quantized matmul and "
                            "mcl_embedding split one",
                            mcl_dtype_name(t->dtype), (unsigned long long)t->nbytes,
                            (unsigned long long)ctx->info.max_storage_buffer_range);
    }
    if ((status = mcl_stream_begin(ctx)) != MCL_SUCCESS)
        return status;
    VkDescriptorSet set;
    mcl_desc_pools *pools = s->capture ? &s->capture->desc : &s->slots[s->current].desc;
    if ((status = desc_allocate(ctx, pools, kernel->set_layout, &set)) != MCL_SUCCESS)
        return status;

    VkDescriptorBufferInfo buffers[MCL_MAX_BINDINGS];
    VkWriteDescriptorSet writes_info[MCL_MAX_BINDINGS];
    for (uint32_t i = 0; i < kernel->binding_count; i++) {
        const mcl_tensor *t = i < read_count ? reads[i] : writes[i - read_count];
        buffers[i] = (VkDescriptorBufferInfo){
            .buffer = mcl_rt(t)->alloc.block->buffer,
            .offset = mcl_rt(t)->alloc.offset,
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
    VkCommandBuffer cmd = mcl_stream_cmd(ctx);
    ctx->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel->pipeline);
    ctx->vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, kernel->layout, 0, 1,
                                    &set, 0, NULL);
    if (kernel->push_size)
        ctx->vk.vkCmdPushConstants(cmd, kernel->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                   kernel->push_size, push);
    int timed = ctx->profiler ? mcl_profile_before(ctx, cmd) : 0;
    ctx->vk.vkCmdDispatch(cmd, groups_x, groups_y, groups_z);
    if (ctx->profiler) {
        double bound = 0.0;
        for (uint32_t i = 0; i < kernel->binding_count; i++)
            bound += (double)(i < read_count ? reads[i] : writes[i - read_count])->nbytes;
        mcl_profile_after(ctx, cmd, kernel, bound, timed);
    }
    if (s->capture)
        s->capture->dispatches++;
    return MCL_SUCCESS;
}

mcl_status mcl_dispatch(mcl_context *ctx, const mcl_kernel *kernel, mcl_tensor *const *reads,
                        uint32_t read_count, mcl_tensor *const *writes, uint32_t write_count,
                        const void *push, uint32_t groups_x, uint32_t groups_y,
                        uint32_t groups_z)
{
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = dispatch_entered(ctx, kernel, reads, read_count, writes, write_count, push,
                              groups_x, groups_y, groups_z);
    mcl_context_leave(ctx);
    return status;
}

int mcl_stream_pending(const mcl_context *ctx, const mcl_tensor *t)
{
    return mcl_rt_root(t)->last_batch > ctx->stream.completed;
}

mcl_status mcl_stream_flush(mcl_context *ctx, VkCommandBuffer extra, uint64_t *serial_out)
{
    mcl_stream *s = &ctx->stream;
    mcl_slot *slot = &s->slots[s->current];
    VkCommandBuffer cmds[2];
    uint32_t count = 0;
    VkResult result;
    if (ctx->lost)
        return mcl_stream_lost(ctx);
    if (!s->recording && !extra)
        return MCL_SUCCESS;
    if (s->recording) {
        s->recording = 0;
        result = ctx->vk.vkEndCommandBuffer(slot->cmd);
        if (result != VK_SUCCESS)
            return mcl_vk_fail(ctx, result, "vkEndCommandBuffer");
        cmds[count++] = slot->cmd;
    } else {
        mcl_status status = slot_wait(ctx, slot);
        if (status != MCL_SUCCESS)
            return status;
    }
    if (extra)
        cmds[count++] = extra;
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = count,
        .pCommandBuffers = cmds,
    };
    result = ctx->vk.vkQueueSubmit(ctx->queue, 1, &submit, slot->fence);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkQueueSubmit");
    slot->in_flight = 1;
    slot->serial = s->serial;
    if (serial_out)
        *serial_out = s->serial;
    s->serial++;
    s->current = (s->current + 1) % MCL_STREAM_SLOTS;
    return MCL_SUCCESS;
}

mcl_status mcl_stream_finish(mcl_context *ctx)
{
    mcl_stream *s = &ctx->stream;
    mcl_status status = mcl_stream_flush(ctx, VK_NULL_HANDLE, NULL);
    if (status != MCL_SUCCESS)
        return status;
    for (int i = 0; i < MCL_STREAM_SLOTS; i++) {
        if ((status = slot_wait(ctx, &s->slots[i])) != MCL_SUCCESS)
            return status;
    }
    /* Nothing recorded or running: the staging ring is free again. */
    ctx->allocator.ring_head = 0;
    return MCL_SUCCESS;
}

void mcl_stream_release(mcl_context *ctx, mcl_allocation *alloc, uint64_t last_batch)
{
    mcl_stream *s = &ctx->stream;
    mcl_deferred *d = NULL;
    if (last_batch > s->completed)
        d = mcl_mem_malloc(sizeof *d);
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
