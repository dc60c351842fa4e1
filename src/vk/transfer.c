/* Uploads and downloads between host memory and tensors.
 *
 * Two paths:
 *  - zero-copy, where tensors live in host-visible coherent memory (unified-memory devices:
 *    integrated GPUs, Lavapipe): a plain memcpy through the mapping, used only when no
 *    unfinished work touches the tensor, so the copy cannot overtake or be overtaken by it;
 *  - staged, everywhere else: the bytes pass through a persistent mapped staging ring and a
 *    vkCmdCopyBuffer recorded in the ordered stream. Transfers larger than the ring stream
 *    through it in chunks, submitting between chunks.
 * MOTIFCL_TRANSFER=staging forces the staged path (tests use it on unified-memory devices). */
#include <string.h>

#include "context.h"

/* The smallest chunk worth recording before the ring is recycled: below it, submitting and
 * starting over with an empty ring is cheaper than many tiny copies. */
#define MCL_MIN_CHUNK (256u * 1024u)

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

/* Room for `want` bytes (at most the ring's size) in the ring, submitting the open batch to
 * recycle the ring when it is too full. Returns the offset and the bytes granted. */
static mcl_status ring_reserve(mcl_context *ctx, uint64_t want, mcl_block **ring,
                               uint64_t *offset, uint64_t *granted)
{
    mcl_allocator *a = &ctx->allocator;
    mcl_status status = mcl_staging_ring(ctx, ring);
    if (status != MCL_SUCCESS)
        return status;
    uint64_t room = (*ring)->size - a->ring_head;
    if (room < want && room < MCL_MIN_CHUNK) {
        if ((status = mcl_stream_finish(ctx)) != MCL_SUCCESS)
            return status;
        room = (*ring)->size - a->ring_head;
    }
    *offset = a->ring_head;
    *granted = want < room ? want : room;
    a->ring_head = align_up(a->ring_head + *granted, 256);
    if (a->ring_head > (*ring)->size)
        a->ring_head = (*ring)->size;
    return MCL_SUCCESS;
}

static int zero_copy(const mcl_context *ctx, const mcl_tensor *t)
{
    return ctx->allocator.tensor_mappable && t->alloc.block->mapped;
}

mcl_status mcl_transfer_upload(mcl_context *ctx, mcl_tensor *dst, uint64_t offset,
                               const void *src, uint64_t bytes)
{
    mcl_status status;
    if (zero_copy(ctx, dst) && !mcl_stream_pending(ctx, dst)) {
        /* Host writes before the next submit are visible to it (coherent memory). */
        memcpy((char *)dst->alloc.block->mapped + dst->alloc.offset + offset, src, (size_t)bytes);
        return MCL_SUCCESS;
    }
    const char *from = src;
    while (bytes > 0) {
        mcl_block *ring;
        uint64_t ring_offset, chunk;
        if ((status = ring_reserve(ctx, bytes, &ring, &ring_offset, &chunk)) != MCL_SUCCESS)
            return status;
        memcpy((char *)ring->mapped + ring_offset, from, (size_t)chunk);
        if ((status = mcl_stream_begin(ctx)) != MCL_SUCCESS)
            return status;
        mcl_stream_track(ctx, NULL, 0, &dst, 1);
        VkBufferCopy region = {
            .srcOffset = ring_offset,
            .dstOffset = dst->alloc.offset + offset,
            .size = chunk,
        };
        ctx->vk.vkCmdCopyBuffer(ctx->stream.cmd, ring->buffer, dst->alloc.block->buffer, 1,
                                &region);
        from += chunk;
        offset += chunk;
        bytes -= chunk;
    }
    return MCL_SUCCESS;
}

mcl_status mcl_transfer_download(mcl_context *ctx, mcl_tensor *src, uint64_t offset, void *dst,
                                 uint64_t bytes)
{
    mcl_status status;
    if (zero_copy(ctx, src)) {
        /* Wait for whatever may still write it; coherent memory needs no invalidation. */
        if (mcl_stream_pending(ctx, src) && (status = mcl_stream_finish(ctx)) != MCL_SUCCESS)
            return status;
        memcpy(dst, (const char *)src->alloc.block->mapped + src->alloc.offset + offset,
               (size_t)bytes);
        return MCL_SUCCESS;
    }
    char *to = dst;
    while (bytes > 0) {
        mcl_block *ring;
        uint64_t ring_offset, chunk;
        if ((status = ring_reserve(ctx, bytes, &ring, &ring_offset, &chunk)) != MCL_SUCCESS)
            return status;
        if ((status = mcl_stream_begin(ctx)) != MCL_SUCCESS)
            return status;
        mcl_stream_track(ctx, &src, 1, NULL, 0);
        VkBufferCopy region = {
            .srcOffset = src->alloc.offset + offset,
            .dstOffset = ring_offset,
            .size = chunk,
        };
        ctx->vk.vkCmdCopyBuffer(ctx->stream.cmd, src->alloc.block->buffer, ring->buffer, 1,
                                &region);
        mcl_stream_barrier_to_host(ctx);
        if ((status = mcl_stream_finish(ctx)) != MCL_SUCCESS)
            return status;
        memcpy(to, (const char *)ring->mapped + ring_offset, (size_t)chunk);
        to += chunk;
        offset += chunk;
        bytes -= chunk;
    }
    return MCL_SUCCESS;
}
