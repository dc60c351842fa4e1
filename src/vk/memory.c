/* Device buffers and their memory.
 *
 * Each buffer has its own VkDeviceMemory for now. That is simple and correct, but costly on
 * some drivers when tensors are many: the pooled allocator (TLSF over large blocks) replaces
 * it behind the same two functions. */
#include "context.h"

/* The first memory type that allows `type_bits` and has all of `required`, preferring one
 * that also has `preferred`; UINT32_MAX if none. */
static uint32_t find_memory_type(const VkPhysicalDeviceMemoryProperties *props,
                                 uint32_t type_bits, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred)
{
    uint32_t fallback = UINT32_MAX;
    for (uint32_t i = 0; i < props->memoryTypeCount; i++) {
        VkMemoryPropertyFlags flags = props->memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (flags & required) != required)
            continue;
        if ((flags & preferred) == preferred)
            return i;
        if (fallback == UINT32_MAX)
            fallback = i;
    }
    return fallback;
}

mcl_status mcl_buffer_create(mcl_context *ctx, uint64_t size, int host_visible,
                             mcl_buffer *out)
{
    mcl_status status;
    VkResult result;
    *out = (mcl_buffer){0};
    if (size == 0)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "a buffer of 0 bytes was requested");
    if (size > ctx->info.max_memory_allocation_size)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "%llu bytes exceed the device's maxMemoryAllocationSize (%llu)",
                        (unsigned long long)size,
                        (unsigned long long)ctx->info.max_memory_allocation_size);

    VkBufferCreateInfo buffer_info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    result = ctx->vk.vkCreateBuffer(ctx->device, &buffer_info, NULL, &out->buffer);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkCreateBuffer");

    VkMemoryRequirements req;
    ctx->vk.vkGetBufferMemoryRequirements(ctx->device, out->buffer, &req);
    VkMemoryPropertyFlags required = host_visible ? (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                                                  : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    VkMemoryPropertyFlags preferred = host_visible ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0;
    uint32_t type = find_memory_type(&ctx->memory_properties, req.memoryTypeBits, required,
                                     required | preferred);
    if (type == UINT32_MAX && !host_visible)
        type = find_memory_type(&ctx->memory_properties, req.memoryTypeBits, 0, 0);
    if (type == UINT32_MAX) {
        status = mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "no memory type fits a %s buffer",
                          host_visible ? "host-visible" : "device");
        goto fail;
    }

    VkMemoryAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    result = ctx->vk.vkAllocateMemory(ctx->device, &alloc_info, NULL, &out->memory);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkAllocateMemory");
        goto fail;
    }
    result = ctx->vk.vkBindBufferMemory(ctx->device, out->buffer, out->memory, 0);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkBindBufferMemory");
        goto fail;
    }
    if (host_visible) {
        result = ctx->vk.vkMapMemory(ctx->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped);
        if (result != VK_SUCCESS) {
            status = mcl_vk_fail(ctx, result, "vkMapMemory");
            goto fail;
        }
    }
    out->size = size;
    return MCL_SUCCESS;

fail:
    mcl_buffer_destroy(ctx, out);
    return status;
}

void mcl_buffer_destroy(mcl_context *ctx, mcl_buffer *buffer)
{
    if (buffer->buffer)
        ctx->vk.vkDestroyBuffer(ctx->device, buffer->buffer, NULL);
    if (buffer->memory)
        ctx->vk.vkFreeMemory(ctx->device, buffer->memory, NULL);
    *buffer = (mcl_buffer){0};
}
