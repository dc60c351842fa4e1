/* Uploads and downloads between host memory and tensors.
 *
 * Three paths:
 *  - zero-copy, where tensors live in host-visible coherent memory (unified-memory devices:
 *    integrated GPUs, Lavapipe): a plain memcpy through the mapping, used only when no
 *    unfinished work touches the tensor, so the copy cannot overtake or be overtaken by it;
 *  - imported, for large transfers where the device can import host memory
 *    (VK_EXT_external_memory_host): the page-aligned middle of the caller's buffer becomes a
 *    VkBuffer and the GPU copies straight from or to it, at the bus's speed rather than a CPU
 *    memcpy's. The copy is submitted and waited for before the call returns, since the caller
 *    owns that memory again afterwards. The unaligned ends go through the ring;
 *  - pinned, when the caller's memory came from mcl_host_alloc(): one GPU copy straight from
 *    or to it (uploads wait for it, since the caller may reuse the memory on return);
 *  - staged, everywhere else: the bytes pass through a persistent mapped staging ring and a
 *    vkCmdCopyBuffer recorded in the ordered stream. Transfers larger than the ring stream
 *    through it in chunks, submitting between chunks.
 * MOTIFCL_TRANSFER=staging or =import forces a path (the tests use both on every device).
 * mcl_tensor_upload and mcl_tensor_download, and pinned memory (mcl_host_alloc), are here. */
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "quant/quant.h"
#include "core/alloc.h"

/* Bytes of host memory a split download converts at a time. */
#define MCL_SPLIT_CHUNK (16u << 20)

/* The smallest chunk worth recording before the ring is recycled: below it, submitting and
 * starting over with an empty ring is cheaper than many tiny copies. */
#define MCL_MIN_CHUNK (256u * 1024u)
/* Below this, pinning caller pages costs more than a memcpy through the ring. */
#define MCL_IMPORT_MIN (4u * 1024u * 1024u)

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
    return ctx->allocator.tensor_mappable && mcl_rt(t)->alloc.block->mapped;
}

/* Caller memory imported as a transfer buffer. */
typedef struct imported {
    VkBuffer buffer;
    VkDeviceMemory memory;
} imported;

static void import_release(mcl_context *ctx, imported *im)
{
    if (im->buffer)
        ctx->vk.vkDestroyBuffer(ctx->device, im->buffer, NULL);
    if (im->memory)
        ctx->vk.vkFreeMemory(ctx->device, im->memory, NULL);
}

/* Import [host, host + bytes), which is aligned to the import alignment. Returns 0 when the
 * driver refuses (some mappings cannot be imported): the caller falls back to the ring. */
static int import_host(mcl_context *ctx, void *host, uint64_t bytes, imported *im)
{
    *im = (imported){0};
    VkMemoryHostPointerPropertiesEXT props = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT,
    };
    const VkExternalMemoryHandleTypeFlagBits type =
        VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    if (ctx->vk.vkGetMemoryHostPointerPropertiesEXT(ctx->device, type, host, &props) !=
        VK_SUCCESS)
        return 0;
    VkExternalMemoryBufferCreateInfo external = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        .handleTypes = type,
    };
    VkBufferCreateInfo buffer_info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .pNext = &external,
        .size = bytes,
        .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    if (ctx->vk.vkCreateBuffer(ctx->device, &buffer_info, NULL, &im->buffer) != VK_SUCCESS)
        return 0;
    VkMemoryRequirements req;
    ctx->vk.vkGetBufferMemoryRequirements(ctx->device, im->buffer, &req);
    uint32_t types = req.memoryTypeBits & props.memoryTypeBits, chosen = UINT32_MAX;
    for (uint32_t i = 0; i < ctx->memory_properties.memoryTypeCount && chosen == UINT32_MAX; i++) {
        if (types & (1u << i))
            chosen = i;
    }
    VkImportMemoryHostPointerInfoEXT import_info = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
        .handleType = type,
        .pHostPointer = host,
    };
    VkMemoryAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = &import_info,
        .allocationSize = bytes,
        .memoryTypeIndex = chosen,
    };
    if (chosen == UINT32_MAX || req.size > bytes ||
        ctx->vk.vkAllocateMemory(ctx->device, &alloc_info, NULL, &im->memory) != VK_SUCCESS ||
        ctx->vk.vkBindBufferMemory(ctx->device, im->buffer, im->memory, 0) != VK_SUCCESS) {
        import_release(ctx, im);
        *im = (imported){0};
        return 0;
    }
    return 1;
}

/* The part of [host, host + bytes) that can be imported: [*lo, *hi) relative to host. */
static int import_span(const mcl_context *ctx, const void *host, uint64_t bytes, uint64_t *lo,
                       uint64_t *hi)
{
    const mcl_allocator *a = &ctx->allocator;
    uint64_t align = ctx->host_import_alignment;
    if (!(ctx->info.features_enabled & MCL_FEATURE_EXTERNAL_HOST_MEMORY) || align == 0 ||
        a->transfer_mode == MCL_TRANSFER_STAGING)
        return 0;
    uint64_t minimum = a->transfer_mode == MCL_TRANSFER_IMPORT ? align : MCL_IMPORT_MIN;
    uint64_t start = (uint64_t)(uintptr_t)host;
    uint64_t first = align_up(start, align), last = (start + bytes) / align * align;
    if (last <= first || last - first < minimum)
        return 0;
    *lo = first - start;
    *hi = last - start;
    return 1;
}

/* One GPU copy between an imported host range and a tensor, submitted and waited for. */
static mcl_status copy_imported(mcl_context *ctx, mcl_tensor *t, uint64_t offset, void *host,
                                uint64_t bytes, int upload, int *done)
{
    imported im;
    *done = 0;
    if (!import_host(ctx, host, bytes, &im))
        return MCL_SUCCESS;
    mcl_status status = mcl_stream_begin(ctx);
    if (status == MCL_SUCCESS) {
        mcl_stream_track(ctx, upload ? NULL : &t, upload ? 0 : 1, upload ? &t : NULL,
                         upload ? 1 : 0);
        VkBufferCopy region = {
            .srcOffset = upload ? 0 : mcl_rt(t)->alloc.offset + offset,
            .dstOffset = upload ? mcl_rt(t)->alloc.offset + offset : 0,
            .size = bytes,
        };
        ctx->vk.vkCmdCopyBuffer(mcl_stream_cmd(ctx), upload ? im.buffer : mcl_rt(t)->alloc.block->buffer,
                                upload ? mcl_rt(t)->alloc.block->buffer : im.buffer, 1, &region);
        if (!upload)
            mcl_stream_barrier_to_host(ctx);
        status = mcl_stream_finish(ctx);
    }
    /* Released only once the copy that used it cannot be running. */
    if (status != MCL_SUCCESS)
        ctx->vk.vkDeviceWaitIdle(ctx->device);
    import_release(ctx, &im);
    *done = status == MCL_SUCCESS;
    if (*done)
        ctx->allocator.imported_transfers++;
    return status;
}

static mcl_status upload_staged(mcl_context *ctx, mcl_tensor *dst, uint64_t offset,
                                const void *src, uint64_t bytes);
static mcl_status download_staged(mcl_context *ctx, mcl_tensor *src, uint64_t offset,
                                  void *dst, uint64_t bytes);

/* One GPU copy between pinned host memory and a tensor, submitted and waited for. */
static mcl_status copy_pinned(mcl_context *ctx, mcl_tensor *t, uint64_t offset, mcl_block *host,
                              uint64_t host_offset, uint64_t bytes, int upload)
{
    mcl_status status = mcl_stream_begin(ctx);
    if (status != MCL_SUCCESS)
        return status;
    mcl_stream_track(ctx, upload ? NULL : &t, upload ? 0 : 1, upload ? &t : NULL, upload ? 1 : 0);
    VkBufferCopy region = {
        .srcOffset = upload ? host_offset : mcl_rt(t)->alloc.offset + offset,
        .dstOffset = upload ? mcl_rt(t)->alloc.offset + offset : host_offset,
        .size = bytes,
    };
    ctx->vk.vkCmdCopyBuffer(mcl_stream_cmd(ctx), upload ? host->buffer : mcl_rt(t)->alloc.block->buffer,
                            upload ? mcl_rt(t)->alloc.block->buffer : host->buffer, 1, &region);
    if (!upload)
        mcl_stream_barrier_to_host(ctx);
    status = mcl_stream_finish(ctx);
    if (status == MCL_SUCCESS)
        ctx->allocator.pinned_transfers++;
    return status;
}

/* An upload, through imported host memory where import is 1 and the path allows it. */
static mcl_status transfer_upload(mcl_context *ctx, mcl_tensor *dst, uint64_t offset,
                                  const void *src, uint64_t bytes, int import)
{
    mcl_status status;
    uint64_t lo, hi;
    if (ctx->lost)
        return mcl_stream_lost(ctx);
    if (zero_copy(ctx, dst) && !mcl_stream_pending(ctx, dst)) {
        /* Host writes before the next submit are visible to it (coherent memory). */
        memcpy((char *)mcl_rt(dst)->alloc.block->mapped + mcl_rt(dst)->alloc.offset + offset, src, (size_t)bytes);
        return MCL_SUCCESS;
    }
    mcl_block *host;
    uint64_t host_offset;
    if (ctx->allocator.transfer_mode != MCL_TRANSFER_STAGING &&
        (host = mcl_host_block_find(ctx, src, bytes, &host_offset)) != NULL)
        return copy_pinned(ctx, dst, offset, host, host_offset, bytes, 1);
    if (import && import_span(ctx, src, bytes, &lo, &hi)) {
        /* Ends first, through the ring, so that one submit carries them with the middle. */
        const char *from = src;
        int done;
        if ((status = upload_staged(ctx, dst, offset, from, lo)) != MCL_SUCCESS ||
            (status = upload_staged(ctx, dst, offset + hi, from + hi, bytes - hi)) != MCL_SUCCESS)
            return status;
        status = copy_imported(ctx, dst, offset + lo, (void *)(uintptr_t)(from + lo), hi - lo, 1,
                               &done);
        if (status != MCL_SUCCESS || done)
            return status;
        return upload_staged(ctx, dst, offset + lo, from + lo, hi - lo);
    }
    return upload_staged(ctx, dst, offset, src, bytes);
}

mcl_status mcl_transfer_upload(mcl_context *ctx, mcl_tensor *dst, uint64_t offset,
                               const void *src, uint64_t bytes)
{
    return transfer_upload(ctx, dst, offset, src, bytes, 1);
}

static mcl_status upload_staged(mcl_context *ctx, mcl_tensor *dst, uint64_t offset,
                                const void *src, uint64_t bytes)
{
    mcl_status status;
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
            .dstOffset = mcl_rt(dst)->alloc.offset + offset,
            .size = chunk,
        };
        ctx->vk.vkCmdCopyBuffer(mcl_stream_cmd(ctx), ring->buffer, mcl_rt(dst)->alloc.block->buffer, 1,
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
    uint64_t lo, hi;
    if (ctx->lost)
        return mcl_stream_lost(ctx);
    if (zero_copy(ctx, src)) {
        /* Wait for whatever may still write it; coherent memory needs no invalidation. */
        if (mcl_stream_pending(ctx, src) && (status = mcl_stream_finish(ctx)) != MCL_SUCCESS)
            return status;
        memcpy(dst, (const char *)mcl_rt(src)->alloc.block->mapped + mcl_rt(src)->alloc.offset + offset,
               (size_t)bytes);
        return MCL_SUCCESS;
    }
    mcl_block *host;
    uint64_t host_offset;
    if (ctx->allocator.transfer_mode != MCL_TRANSFER_STAGING &&
        (host = mcl_host_block_find(ctx, dst, bytes, &host_offset)) != NULL)
        return copy_pinned(ctx, src, offset, host, host_offset, bytes, 0);
    if (import_span(ctx, dst, bytes, &lo, &hi)) {
        char *to = dst;
        int done;
        status = copy_imported(ctx, src, offset + lo, to + lo, hi - lo, 0, &done);
        if (status != MCL_SUCCESS)
            return status;
        if (!done && (status = download_staged(ctx, src, offset + lo, to + lo, hi - lo)) !=
                         MCL_SUCCESS)
            return status;
        if ((status = download_staged(ctx, src, offset, to, lo)) != MCL_SUCCESS)
            return status;
        return download_staged(ctx, src, offset + hi, to + hi, bytes - hi);
    }
    return download_staged(ctx, src, offset, dst, bytes);
}

static mcl_status download_staged(mcl_context *ctx, mcl_tensor *src, uint64_t offset,
                                  void *dst, uint64_t bytes)
{
    mcl_status status;
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
            .srcOffset = mcl_rt(src)->alloc.offset + offset,
            .dstOffset = ring_offset,
            .size = chunk,
        };
        ctx->vk.vkCmdCopyBuffer(mcl_stream_cmd(ctx), mcl_rt(src)->alloc.block->buffer, ring->buffer, 1,
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

static mcl_status check_range(const mcl_tensor *t, uint64_t offset, const void *ptr,
                              uint64_t bytes)
{
    if (!ptr || bytes == 0 || offset > t->nbytes || bytes > t->nbytes - offset)
        return mcl_fail(t->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "transfer of %llu bytes at offset %llu does not fit a tensor of %llu "
                        "bytes (or the host pointer is NULL)",
                        (unsigned long long)bytes, (unsigned long long)offset,
                        (unsigned long long)t->nbytes);
    /* vkCmdCopyBuffer needs no alignment, but the host side uses size_t. */
    if (bytes > SIZE_MAX)
        return mcl_fail(t->ctx, MCL_ERROR_TOO_LARGE, "transfer larger than the address space");
    return MCL_SUCCESS;
}

static mcl_status refuse_while_capturing(const mcl_tensor *t, const char *what)
{
    return mcl_fail(t->ctx, MCL_ERROR_INVALID_ARGUMENT, "%s during a graph capture", what);
}

/* An upload of GGUF bytes [offset, offset + bytes) of a tensor whose block type is split on
 * the device (quant.h): the split is written where the bytes go next, into the mapped tensor
 * (zero-copy) or into the staging ring, a ring's worth at a time, each piece one copy of body
 * bytes and one of d bytes. */
static mcl_status split_upload(mcl_tensor *t, const mcl_quant_layout *l, uint64_t offset,
                               const unsigned char *host, uint64_t bytes)
{
    mcl_context *ctx = t->ctx;
    uint64_t blocks = t->nbytes / l->block_bytes;
    uint64_t body_at, body_bytes, d_at, d_bytes;
    if (zero_copy(ctx, t) && !mcl_stream_pending(ctx, t)) {
        unsigned char *base = (unsigned char *)mcl_rt(t)->alloc.block->mapped + mcl_rt(t)->alloc.offset;
        mcl_quant_device_ranges(l, blocks, offset, bytes, &body_at, &body_bytes, &d_at,
                                &d_bytes);
        mcl_quant_split_to(l, offset, host, bytes, base + body_at, base + d_at);
        return MCL_SUCCESS;
    }
    while (bytes > 0) {
        mcl_block *ring;
        uint64_t ring_offset, granted;
        mcl_status status = ring_reserve(ctx, bytes, &ring, &ring_offset, &granted);
        if (status != MCL_SUCCESS)
            return status;
        /* Whole blocks where the range starts on one, so the split runs its fast loops. */
        uint64_t n = granted;
        if (n < bytes && offset % l->block_bytes == 0 && n >= l->block_bytes)
            n -= n % l->block_bytes;
        unsigned char *at = (unsigned char *)ring->mapped + ring_offset;
        mcl_quant_device_ranges(l, blocks, offset, n, &body_at, &body_bytes, &d_at, &d_bytes);
        mcl_quant_split_to(l, offset, host, n, at, at + body_bytes);
        if ((status = mcl_stream_begin(ctx)) != MCL_SUCCESS)
            return status;
        mcl_stream_track(ctx, NULL, 0, &t, 1);
        VkBufferCopy regions[2];
        uint32_t count = 0;
        if (body_bytes)
            regions[count++] = (VkBufferCopy){ring_offset, mcl_rt(t)->alloc.offset + body_at,
                                              body_bytes};
        if (d_bytes)
            regions[count++] = (VkBufferCopy){ring_offset + body_bytes,
                                              mcl_rt(t)->alloc.offset + d_at, d_bytes};
        ctx->vk.vkCmdCopyBuffer(mcl_stream_cmd(ctx), ring->buffer, mcl_rt(t)->alloc.block->buffer,
                                count, regions);
        host += n;
        offset += n;
        bytes -= n;
    }
    return MCL_SUCCESS;
}

/* A download of GGUF bytes [offset, offset + bytes) of a tensor whose block type is split on
 * the device: a chunk at a time, each chunk one transfer of body bytes and one of d bytes,
 * merged on the host. */
static mcl_status split_download(mcl_tensor *t, const mcl_quant_layout *l, uint64_t offset,
                                 void *host, uint64_t bytes)
{
    uint64_t blocks = t->nbytes / l->block_bytes;
    uint64_t chunk = bytes < MCL_SPLIT_CHUNK ? bytes : MCL_SPLIT_CHUNK;
    unsigned char *dev = mcl_mem_malloc((size_t)chunk);
    if (!dev)
        return mcl_fail(t->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = MCL_SUCCESS;
    for (uint64_t done = 0; status == MCL_SUCCESS && done < bytes; done += chunk) {
        uint64_t n = bytes - done < chunk ? bytes - done : chunk;
        unsigned char *at = (unsigned char *)host + done;
        uint64_t body_at, body_bytes, d_at, d_bytes;
        mcl_quant_device_ranges(l, blocks, offset + done, n, &body_at, &body_bytes, &d_at,
                                &d_bytes);
        if (body_bytes)
            status = mcl_transfer_download(t->ctx, t, body_at, dev, body_bytes);
        if (status == MCL_SUCCESS && d_bytes)
            status = mcl_transfer_download(t->ctx, t, d_at, dev + body_bytes, d_bytes);
        if (status == MCL_SUCCESS)
            mcl_quant_merge(l, offset + done, dev, n, at);
    }
    mcl_mem_free(dev);
    return status;
}

mcl_status mcl_tensor_zero(mcl_tensor *t)
{
    void *zeros = mcl_mem_calloc(1, t->nbytes);
    if (!zeros)
        return mcl_fail(t->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = mcl_tensor_upload(t, 0, zeros, t->nbytes);
    mcl_mem_free(zeros);
    return status;
}

static mcl_status upload_entered(mcl_tensor *t, uint64_t offset, const void *src, uint64_t bytes,
                                 int import)
{
    if (t->ctx->stream.capture)
        return refuse_while_capturing(t, "upload");
    mcl_status status = check_range(t, offset, src, bytes);
    if (status != MCL_SUCCESS)
        return status;
    mcl_quant_layout layout;
    if (mcl_quant_layout_of(t->dtype, &layout) && layout.split)
        return split_upload(t, &layout, offset, src, bytes);
    return transfer_upload(t->ctx, t, offset, src, bytes, import);
}

/* An upload inside the context's guard; import as transfer_upload's. */
static mcl_status upload_guarded(mcl_tensor *t, uint64_t offset, const void *src, uint64_t bytes,
                                 int import)
{
    if (!t)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(t->ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = upload_entered(t, offset, src, bytes, import);
    mcl_context_leave(t->ctx);
    return status;
}

mcl_status mcl_tensor_upload(mcl_tensor *t, uint64_t offset, const void *src, uint64_t bytes)
{
    return upload_guarded(t, offset, src, bytes, 1);
}

mcl_status mcl_tensor_upload_no_import(mcl_tensor *t, uint64_t offset, const void *src,
                                       uint64_t bytes)
{
    return upload_guarded(t, offset, src, bytes, 0);
}

static mcl_status download_entered(mcl_tensor *t, uint64_t offset, void *dst, uint64_t bytes)
{
    if (t->ctx->stream.capture)
        return refuse_while_capturing(t, "download");
    mcl_status status = check_range(t, offset, dst, bytes);
    if (status != MCL_SUCCESS)
        return status;
    mcl_quant_layout layout;
    if (mcl_quant_layout_of(t->dtype, &layout) && layout.split)
        return split_download(t, &layout, offset, dst, bytes);
    return mcl_transfer_download(t->ctx, t, offset, dst, bytes);
}

mcl_status mcl_tensor_download(mcl_tensor *t, uint64_t offset, void *dst, uint64_t bytes)
{
    if (!t)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(t->ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = download_entered(t, offset, dst, bytes);
    mcl_context_leave(t->ctx);
    return status;
}

mcl_status mcl_host_alloc(mcl_context *ctx, uint64_t bytes, void **out)
{
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    return mcl_host_memory_alloc(ctx, bytes, out);
}

void mcl_host_free(mcl_context *ctx, void *ptr)
{
    uint64_t offset;
    if (!ctx || !ptr || !mcl_host_block_find(ctx, ptr, 0, &offset) || offset != 0)
        return;
    /* Transfers through it are waited for before they return, but a failed one may have left
     * work behind: make sure nothing runs. */
    mcl_stream_finish(ctx);
    mcl_host_memory_free(ctx, ptr);
}
