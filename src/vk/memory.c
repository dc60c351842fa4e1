/* The tensor allocator: large VkDeviceMemory blocks, each bound to one VkBuffer, with tensors
 * sub-allocated from them (TLSF for ordinary tensors, a bump allocator for scratch), and
 * dedicated allocations for tensors too large for a block. Offsets and sizes are 64-bit
 * throughout; a tensor is (block, offset, size) and is bound with a descriptor offset.
 *
 * Budget: a new block is refused with MCL_ERROR_OUT_OF_DEVICE_MEMORY when it would take the
 * heap past its budget (VK_EXT_memory_budget) or, without that extension, past the heap's
 * size. A small tensor that finds no room in the pools and no budget for a whole new block
 * takes a smaller block (the block size halved until it fits, down to the tensor's own
 * size), then an allocation of its own, before it is refused. The context stays usable:
 * free tensors and allocate again. */
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "core/alloc.h"

#define MIB (UINT64_C(1) << 20)
/* Block size: large enough that block allocations are rare (one vkAllocateMemory per tensor
 * made training steps 20x slower on one driver), small enough that a small heap (the RX
 * 580's 8 GiB, Lavapipe's 2 GiB) is not carved into a few huge pieces. */
#define MCL_BLOCK_SIZE_MAX (256 * MIB)
#define MCL_BLOCK_SIZE_MIN (16 * MIB)
/* Tensors above this fraction of a block get their own allocation. */
#define MCL_DEDICATED_FRACTION 4
/* Tensor offsets: above minStorageBufferOffsetAlignment, so that rows start on a cache line
 * and wide loads stay aligned. */
#define MCL_TENSOR_ALIGNMENT 256u
/* Staging ring: bounded so that a 1 GiB upload streams through it in chunks. */
#define MCL_RING_SIZE_MAX (64 * MIB)
#define MCL_RING_ALIGNMENT 256u

static const float class_priority[MCL_MEMORY_CLASS_COUNT] = {
    [MCL_MEMORY_ACTIVATIONS] = 0.75f,
    [MCL_MEMORY_WEIGHTS] = 1.0f,   /* evicted last: re-uploading weights is the costliest */
    [MCL_MEMORY_SCRATCH] = 0.5f,
};
#define MCL_STAGING_PRIORITY 0.25f

static int popcount(uint32_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

static uint32_t pick_type(const VkPhysicalDeviceMemoryProperties *props, uint32_t type_bits,
                          VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                          VkMemoryPropertyFlags avoided)
{
    uint32_t best = UINT32_MAX;
    int best_score = 0;
    for (uint32_t i = 0; i < props->memoryTypeCount; i++) {
        VkMemoryPropertyFlags flags = props->memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (flags & required) != required)
            continue;
        int score = popcount(flags & preferred) * 2 - popcount(flags & avoided);
        /* Prefer the larger heap among equals: a 256 MiB BAR heap is no home for tensors. */
        if (best == UINT32_MAX || score > best_score ||
            (score == best_score &&
             props->memoryHeaps[props->memoryTypes[i].heapIndex].size >
                 props->memoryHeaps[props->memoryTypes[best].heapIndex].size)) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

static uint32_t heap_of(const mcl_context *ctx, uint32_t type)
{
    return ctx->memory_properties.memoryTypes[type].heapIndex;
}

mcl_status mcl_memory_init(mcl_context *ctx)
{
    mcl_allocator *a = &ctx->allocator;
    const VkPhysicalDeviceMemoryProperties *props = &ctx->memory_properties;

    /* Every storage buffer of these usages has the same memory type bits: ask a probe. */
    VkBufferCreateInfo probe_info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = 65536,
        .usage = MCL_BUFFER_USAGE,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkBuffer probe;
    VkResult result = ctx->vk.vkCreateBuffer(ctx->device, &probe_info, NULL, &probe);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkCreateBuffer");
    VkMemoryRequirements req;
    ctx->vk.vkGetBufferMemoryRequirements(ctx->device, probe, &req);
    ctx->vk.vkDestroyBuffer(ctx->device, probe, NULL);

    /* Unified memory (integrated GPUs, Lavapipe): device-local memory the host can map, so
     * transfers are plain copies. Discrete: device-local, avoiding host-visible types, which
     * without resizable BAR sit in a small window of the heap. */
    int unified = ctx->info.device_type == MCL_DEVICE_TYPE_INTEGRATED ||
                  ctx->info.device_type == MCL_DEVICE_TYPE_CPU;
    VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                 VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    a->tensor_type = pick_type(props, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                               unified ? host : 0, unified ? 0 : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    if (a->tensor_type == UINT32_MAX)
        a->tensor_type = pick_type(props, req.memoryTypeBits, 0, 0, 0);
    a->staging_type = pick_type(props, req.memoryTypeBits, host,
                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                unified ? 0 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (a->tensor_type == UINT32_MAX || a->staging_type == UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "no memory type fits storage buffers");
    /* The host pool: host-visible and coherent, outside device-local memory (not the small
     * BAR window) where the device has its own; the tensors' type where memory is unified
     * or no such type exists. */
    a->host_pool_type = unified ? UINT32_MAX
                                : pick_type(props, req.memoryTypeBits, host, 0,
                                            VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (a->host_pool_type == UINT32_MAX)
        a->host_pool_type = a->tensor_type;
    VkMemoryPropertyFlags tensor_flags = props->memoryTypes[a->tensor_type].propertyFlags;
    a->tensor_mappable = (tensor_flags & host) == host;

    a->transfer_mode = ctx->head.traits.transfer;
    if (a->transfer_mode != MCL_TRANSFER_AUTO)
        a->tensor_mappable = 0;

    uint64_t heap = props->memoryHeaps[heap_of(ctx, a->tensor_type)].size;
    uint64_t block = MCL_BLOCK_SIZE_MAX;
    while (block > MCL_BLOCK_SIZE_MIN && block > heap / 8)
        block /= 2;
    if (block > ctx->info.max_memory_allocation_size)
        block = ctx->info.max_memory_allocation_size;
    a->block_size = block;
    a->alignment = MCL_TENSOR_ALIGNMENT;
    if (ctx->info.min_storage_buffer_offset_alignment > a->alignment)
        a->alignment = ctx->info.min_storage_buffer_offset_alignment;
    uint64_t staging_heap = props->memoryHeaps[heap_of(ctx, a->staging_type)].size;
    a->ring_size = MCL_RING_SIZE_MAX;
    while (a->ring_size > MIB && a->ring_size > staging_heap / 32)
        a->ring_size /= 2;
    return MCL_SUCCESS;
}

/* Whether `size` more bytes fit the heap of `type` within its budget. */
static int within_budget(mcl_context *ctx, uint32_t type, uint64_t size)
{
    uint32_t heap = heap_of(ctx, type);
    if (ctx->info.features_enabled & MCL_FEATURE_MEMORY_BUDGET) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
        };
        VkPhysicalDeviceMemoryProperties2 props = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
            .pNext = &budget,
        };
        ctx->vki.vkGetPhysicalDeviceMemoryProperties2(ctx->physical, &props);
        if (budget.heapBudget[heap] > 0)
            return budget.heapUsage[heap] + size <= budget.heapBudget[heap];
    }
    return ctx->allocator.heap_reserved[heap] + size <=
           ctx->memory_properties.memoryHeaps[heap].size;
}

static void block_destroy(mcl_context *ctx, mcl_block *b);
static void unlink_block(mcl_block **list, mcl_block *b);

/* Give the empty blocks kept for reuse back to the heap. */
static void trim_empty_blocks(mcl_context *ctx)
{
    mcl_allocator *a = &ctx->allocator;
    for (int c = 0; c < MCL_MEMORY_CLASS_COUNT; c++) {
        mcl_block *b = a->pools[c];
        while (b) {
            mcl_block *next = b->next;
            if (b->live == 0) {
                unlink_block(&a->pools[c], b);
                a->block_count--;
                block_destroy(ctx, b);
            }
            b = next;
        }
    }
}

/* Whether `size` more bytes fit the budget, once the empty blocks kept for reuse have been
 * given back if they do not fit otherwise. */
static int budget_allows(mcl_context *ctx, uint32_t type, uint64_t size)
{
    if (within_budget(ctx, type, size))
        return 1;
    trim_empty_blocks(ctx);
    return within_budget(ctx, type, size);
}

/* One VkDeviceMemory with a VkBuffer over all of it. */
static mcl_status block_create(mcl_context *ctx, uint32_t type, uint64_t size, float priority,
                               mcl_block **out)
{
    mcl_status status;
    VkResult result;
    if (!budget_allows(ctx, type, size))
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_DEVICE_MEMORY,
                        "%llu more bytes would exceed the memory budget of heap %u",
                        (unsigned long long)size, heap_of(ctx, type));
    mcl_block *b = mcl_mem_calloc(1, sizeof *b);
    if (!b)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    b->type = type;
    b->size = size;

    VkBufferCreateInfo buffer_info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = MCL_BUFFER_USAGE,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    result = ctx->vk.vkCreateBuffer(ctx->device, &buffer_info, NULL, &b->buffer);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreateBuffer");
        goto fail;
    }
    VkMemoryRequirements req;
    ctx->vk.vkGetBufferMemoryRequirements(ctx->device, b->buffer, &req);
    if (!(req.memoryTypeBits & (1u << type))) {
        status = mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "memory type %u does not fit a buffer", type);
        goto fail;
    }
    VkMemoryPriorityAllocateInfoEXT priority_info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_PRIORITY_ALLOCATE_INFO_EXT,
        .priority = priority,
    };
    VkMemoryAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = (ctx->info.features_enabled & MCL_FEATURE_MEMORY_PRIORITY) ? &priority_info : NULL,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    result = ctx->vk.vkAllocateMemory(ctx->device, &alloc_info, NULL, &b->memory);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkAllocateMemory");
        goto fail;
    }
    result = ctx->vk.vkBindBufferMemory(ctx->device, b->buffer, b->memory, 0);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkBindBufferMemory");
        goto fail;
    }
    VkMemoryPropertyFlags flags = ctx->memory_properties.memoryTypes[type].propertyFlags;
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        result = ctx->vk.vkMapMemory(ctx->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
        if (result != VK_SUCCESS) {
            status = mcl_vk_fail(ctx, result, "vkMapMemory");
            goto fail;
        }
    }
    b->reserved = req.size;
    ctx->allocator.heap_reserved[heap_of(ctx, type)] += req.size;
    ctx->allocator.bytes_reserved += req.size;
    *out = b;
    return MCL_SUCCESS;

fail:
    if (b->memory)
        ctx->vk.vkFreeMemory(ctx->device, b->memory, NULL);
    if (b->buffer)
        ctx->vk.vkDestroyBuffer(ctx->device, b->buffer, NULL);
    mcl_mem_free(b);
    return status;
}

static void block_destroy(mcl_context *ctx, mcl_block *b)
{
    ctx->allocator.heap_reserved[heap_of(ctx, b->type)] -= b->reserved;
    ctx->allocator.bytes_reserved -= b->reserved;
    mcl_tlsf_destroy(b->tlsf);
    ctx->vk.vkDestroyBuffer(ctx->device, b->buffer, NULL);
    ctx->vk.vkFreeMemory(ctx->device, b->memory, NULL);
    mcl_mem_free(b);
}

static void unlink_block(mcl_block **list, mcl_block *b)
{
    for (mcl_block **link = list; *link; link = &(*link)->next) {
        if (*link == b) {
            *link = b->next;
            return;
        }
    }
}

static mcl_status alloc_dedicated(mcl_context *ctx, uint64_t size, mcl_memory_class cls,
                                  mcl_allocation *out)
{
    mcl_allocator *a = &ctx->allocator;
    mcl_block *b;
    int host = cls == MCL_MEMORY_HOST_POOL;
    mcl_status status = block_create(ctx, host ? a->host_pool_type : a->tensor_type, size,
                                     host ? class_priority[MCL_MEMORY_WEIGHTS]
                                          : class_priority[cls], &b);
    if (status != MCL_SUCCESS)
        return status;
    b->dedicated = 1;
    b->next = a->dedicated;
    a->dedicated = b;
    a->dedicated_count++;
    *out = (mcl_allocation){.block = b, .offset = 0, .size = size};
    return MCL_SUCCESS;
}

static mcl_status alloc_pooled(mcl_context *ctx, uint64_t size, mcl_memory_class cls,
                               mcl_allocation *out)
{
    mcl_allocator *a = &ctx->allocator;
    mcl_block **pool = &a->pools[cls];
    uint64_t offset;
    for (mcl_block *b = *pool; b; b = b->next) {
        int rc = cls == MCL_MEMORY_SCRATCH
                     ? mcl_linear_alloc(&b->linear, size, a->alignment, &offset)
                     : mcl_tlsf_alloc(b->tlsf, size, a->alignment, &offset);
        if (rc == 0) {
            b->live++;
            *out = (mcl_allocation){.block = b, .offset = offset, .size = size};
            return MCL_SUCCESS;
        }
    }
    /* No room in the pool. A whole new block where the budget allows one; else the largest
     * halving of the block size that the budget allows and the tensor fits; else the tensor
     * takes an allocation of exactly its size (refused there if even that does not fit). */
    uint64_t need = (size + a->alignment - 1) / a->alignment * a->alignment;
    uint64_t block_size = a->block_size;
    while (block_size / 2 >= need && !budget_allows(ctx, a->tensor_type, block_size))
        block_size /= 2;
    if (block_size != a->block_size) {
        if (!budget_allows(ctx, a->tensor_type, block_size)) {
            mcl_ctx_log(ctx, MCL_LOG_INFO,
                        "allocator: no budget for a block of %llu bytes (the smallest that "
                        "holds the tensor); a tensor of %llu bytes takes an allocation of "
                        "its own",
                        (unsigned long long)block_size, (unsigned long long)size);
            return alloc_dedicated(ctx, size, cls, out);
        }
        mcl_ctx_log(ctx, MCL_LOG_INFO,
                    "allocator: no budget for a block of %llu bytes; a block of %llu bytes "
                    "for a tensor of %llu bytes",
                    (unsigned long long)a->block_size, (unsigned long long)block_size,
                    (unsigned long long)size);
    }
    mcl_block *b;
    mcl_status status = block_create(ctx, a->tensor_type, block_size, class_priority[cls], &b);
    if (status != MCL_SUCCESS)
        return status;
    int rc = cls == MCL_MEMORY_SCRATCH ? mcl_linear_init(&b->linear, block_size)
                                       : mcl_tlsf_create(block_size, &b->tlsf);
    if (rc == 0)
        rc = cls == MCL_MEMORY_SCRATCH
                 ? mcl_linear_alloc(&b->linear, size, a->alignment, &offset)
                 : mcl_tlsf_alloc(b->tlsf, size, a->alignment, &offset);
    if (rc != 0) {
        block_destroy(ctx, b);
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "block bookkeeping failed (%d)", rc);
    }
    b->cls = cls;
    b->live = 1;
    b->next = *pool;
    *pool = b;
    a->block_count++;
    *out = (mcl_allocation){.block = b, .offset = offset, .size = size};
    return MCL_SUCCESS;
}

mcl_status mcl_alloc(mcl_context *ctx, uint64_t size, mcl_memory_class cls, mcl_allocation *out)
{
    mcl_allocator *a = &ctx->allocator;
    mcl_status status;
    *out = (mcl_allocation){0};
    if (size == 0 || (unsigned)cls > (unsigned)MCL_MEMORY_HOST_POOL)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "bad allocation request");
    if (size > ctx->info.max_memory_allocation_size) {
        /* Past maxMemoryAllocationSize an allocation may fail, and Vulkan lets it be tried:
         * drivers that report 4 GiB there (NVIDIA's) make larger ones. One buffer holds it
         * where maxBufferSize allows; the driver's refusal is the answer otherwise. */
        if (size > ctx->max_buffer_size)
            return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                            "%llu bytes exceed the device's maxBufferSize (%llu)",
                            (unsigned long long)size, (unsigned long long)ctx->max_buffer_size);
        mcl_ctx_log(ctx, MCL_LOG_INFO,
                    "allocator: %llu bytes are past maxMemoryAllocationSize (%llu): tried as "
                    "one allocation", (unsigned long long)size,
                    (unsigned long long)ctx->info.max_memory_allocation_size);
        status = alloc_dedicated(ctx, size, cls, out);
        if (status == MCL_ERROR_OUT_OF_DEVICE_MEMORY || status == MCL_ERROR_OUT_OF_HOST_MEMORY)
            return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                            "%llu bytes exceed the device's maxMemoryAllocationSize (%llu), and "
                            "the driver refused them as one allocation",
                            (unsigned long long)size,
                            (unsigned long long)ctx->info.max_memory_allocation_size);
    } else if (size > a->block_size / MCL_DEDICATED_FRACTION || cls == MCL_MEMORY_HOST_POOL)
        status = alloc_dedicated(ctx, size, cls, out);
    else
        status = alloc_pooled(ctx, size, cls, out);
    if (status != MCL_SUCCESS)
        return status;
    a->bytes_allocated += size;
    a->allocation_count++;
    if (a->bytes_allocated > a->bytes_allocated_peak)
        a->bytes_allocated_peak = a->bytes_allocated;
    return MCL_SUCCESS;
}

void mcl_free(mcl_context *ctx, mcl_allocation *alloc)
{
    mcl_allocator *a = &ctx->allocator;
    mcl_block *b = alloc->block;
    if (!b)
        return;
    a->bytes_allocated -= alloc->size;
    a->allocation_count--;
    if (b->dedicated) {
        unlink_block(&a->dedicated, b);
        a->dedicated_count--;
        block_destroy(ctx, b);
    } else {
        if (b->tlsf)
            mcl_tlsf_free(b->tlsf, alloc->offset);
        b->live--;
        if (b->live == 0) {
            /* Keep one empty block per class for the next allocation; free the rest, so
             * memory returns to the heap once a workload shrinks. */
            mcl_linear_reset(&b->linear);
            int empty_others = 0;
            for (mcl_block *o = a->pools[b->cls]; o; o = o->next)
                empty_others += o != b && o->live == 0;
            if (empty_others) {
                unlink_block(&a->pools[b->cls], b);
                a->block_count--;
                block_destroy(ctx, b);
            }
        }
    }
    *alloc = (mcl_allocation){0};
}

mcl_status mcl_staging_ring(mcl_context *ctx, mcl_block **out)
{
    mcl_allocator *a = &ctx->allocator;
    if (!a->ring) {
        mcl_status status = block_create(ctx, a->staging_type, a->ring_size,
                                         MCL_STAGING_PRIORITY, &a->ring);
        if (status != MCL_SUCCESS)
            return status;
        if (!a->ring->mapped) {
            block_destroy(ctx, a->ring);
            a->ring = NULL;
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "staging memory cannot be mapped");
        }
    }
    *out = a->ring;
    return MCL_SUCCESS;
}

mcl_status mcl_host_block_create(mcl_context *ctx, uint64_t size, mcl_block **out)
{
    return block_create(ctx, ctx->allocator.staging_type, size, MCL_STAGING_PRIORITY, out);
}

void mcl_host_block_destroy(mcl_context *ctx, mcl_block *block)
{
    if (block)
        block_destroy(ctx, block);
}

mcl_status mcl_host_memory_alloc(mcl_context *ctx, uint64_t bytes, void **out)
{
    *out = NULL;
    if (bytes == 0)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_host_alloc of 0 bytes");
    if (bytes > ctx->info.max_memory_allocation_size)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_host_alloc beyond maxMemoryAllocationSize");
    mcl_block *b;
    mcl_status status = mcl_host_block_create(ctx, bytes, &b);
    if (status != MCL_SUCCESS)
        return status;
    if (!b->mapped) {
        mcl_host_block_destroy(ctx, b);
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "host-visible memory cannot be mapped");
    }
    b->next = ctx->allocator.host_blocks;
    ctx->allocator.host_blocks = b;
    *out = b->mapped;
    return MCL_SUCCESS;
}

void mcl_host_memory_free(mcl_context *ctx, void *ptr)
{
    for (mcl_block **link = &ctx->allocator.host_blocks; *link; link = &(*link)->next) {
        mcl_block *b = *link;
        if (b->mapped == ptr) {
            *link = b->next;
            block_destroy(ctx, b);
            return;
        }
    }
}

mcl_block *mcl_host_block_find(const mcl_context *ctx, const void *ptr, uint64_t bytes,
                               uint64_t *offset)
{
    const char *p = ptr;
    for (mcl_block *b = ctx->allocator.host_blocks; b; b = b->next) {
        const char *base = b->mapped;
        if (p >= base && (uint64_t)(p - base) <= b->size && bytes <= b->size - (uint64_t)(p - base)) {
            *offset = (uint64_t)(p - base);
            return b;
        }
    }
    return NULL;
}

void mcl_memory_destroy(mcl_context *ctx)
{
    mcl_allocator *a = &ctx->allocator;
    while (a->host_blocks) {
        mcl_block *b = a->host_blocks;
        a->host_blocks = b->next;
        block_destroy(ctx, b);
    }
    for (int c = 0; c < MCL_MEMORY_CLASS_COUNT; c++) {
        while (a->pools[c]) {
            mcl_block *b = a->pools[c];
            a->pools[c] = b->next;
            block_destroy(ctx, b);
        }
    }
    while (a->dedicated) {
        mcl_block *b = a->dedicated;
        a->dedicated = b->next;
        block_destroy(ctx, b);
    }
    if (a->ring)
        block_destroy(ctx, a->ring);
    a->ring = NULL;
}

void mcl_memory_stats_fill(const mcl_context *ctx, mcl_memory_stats *s)
{
    const mcl_allocator *a = &ctx->allocator;
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->bytes_allocated = a->bytes_allocated;
    s->bytes_allocated_peak = a->bytes_allocated_peak;
    s->bytes_reserved = a->bytes_reserved;
    s->allocation_count = a->allocation_count;
    s->block_count = a->block_count;
    s->dedicated_count = a->dedicated_count;
    s->block_size = a->block_size;
    s->staging_bytes = a->ring ? a->ring->reserved : 0;
    s->tensor_memory_type = a->tensor_type;
    s->staging_memory_type = a->staging_type;
    s->zero_copy = (uint32_t)a->tensor_mappable;
    for (int c = 0; c < MCL_MEMORY_CLASS_COUNT; c++) {
        for (const mcl_block *b = a->pools[c]; b; b = b->next) {
            uint64_t largest;
            if (b->tlsf) {
                struct mcl_tlsf_stats ts;
                mcl_tlsf_stats(b->tlsf, &ts);
                largest = ts.largest_free_range;
            } else {
                largest = b->linear.size - b->linear.used;
            }
            if (largest > s->largest_free_range)
                s->largest_free_range = largest;
        }
    }
    uint32_t heaps = ctx->memory_properties.memoryHeapCount;
    for (uint32_t h = 0; h < heaps && h < MCL_MAX_MEMORY_HEAPS; h++)
        s->heap_reserved[h] = a->heap_reserved[h];
}
