/* The context's life: creation in order (profile, instance, device, memory, stream),
 * destruction in reverse, and the queries on it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "core/alloc.h"

mcl_status mcl_context_create(const mcl_context_desc *desc, mcl_context **out)
{
    mcl_context_desc defaults = {.size = sizeof defaults, .device_index = -1};
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    /* Read only the fields the caller's struct has: an older caller's is shorter. */
    if (desc) {
        if (desc->size < offsetof(mcl_context_desc, reserved))
            return MCL_ERROR_INVALID_ARGUMENT;
        memcpy(&defaults, desc, desc->size < sizeof defaults ? desc->size : sizeof defaults);
    }
    desc = &defaults;

    mcl_context *ctx = mcl_mem_calloc(1, sizeof *ctx);
    if (!ctx)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    /* The environment is read here and nowhere else; its settings become the traits. */
    if (desc->flags & MCL_CONTEXT_IGNORE_ENVIRONMENT)
        mcl_env_defaults(&ctx->env);
    else
        mcl_env_read(&ctx->env);
    mcl_logger_init(MCL_LOG(ctx), desc->log_fn, desc->log_user_data, desc->log_level,
                    ctx->env.log_level);
    if (ctx->env.problems[0])
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "%s", ctx->env.problems);
    ctx->info.size = sizeof ctx->info;

    mcl_status status = MCL_SUCCESS;
    if (ctx->env.transfer == MCL_ENV_TRANSFER_INVALID) {
        status = mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                          "MOTIFCL_TRANSFER=\"%s\": expected auto, staging or import",
                          ctx->env.transfer_text);
        goto fail;
    }
    const char *profile = desc->device_profile;
    if (!profile && ctx->env.profile[0])
        profile = ctx->env.profile;
    if (!profile)
        profile = "none";
    if (!mcl_profile_known(profile)) {
        status = mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                          "unknown device profile \"%s\" (known: none, polaris)", profile);
        goto fail;
    }
    snprintf(ctx->info.profile, sizeof ctx->info.profile, "%.*s",
             (int)sizeof ctx->info.profile - 1, profile);

    uint32_t validation = desc->flags & (MCL_CONTEXT_VALIDATION | MCL_CONTEXT_VALIDATION_SYNC |
                                         MCL_CONTEXT_VALIDATION_GPU_ASSISTED);
    validation |= ctx->env.validation;
    if (validation)
        validation |= MCL_CONTEXT_VALIDATION;

    if (mcl_volk_init() != VK_SUCCESS) {
        status = mcl_fail(ctx, MCL_ERROR_VULKAN_UNAVAILABLE,
                          "no Vulkan loader could be loaded (Debian: libvulkan1)");
        goto fail;
    }
    if ((status = mcl_instance_create(ctx, validation)) != MCL_SUCCESS)
        goto fail;
    if ((status = mcl_device_choose(ctx, desc)) != MCL_SUCCESS)
        goto fail;
    if ((status = mcl_device_create(ctx)) != MCL_SUCCESS)
        goto fail;
    status = mcl_pipeline_cache_create(ctx, !(desc->flags & MCL_CONTEXT_NO_PIPELINE_CACHE));
    if (status != MCL_SUCCESS)
        goto fail;
    if ((status = mcl_memory_init(ctx)) != MCL_SUCCESS)
        goto fail;
    if ((status = mcl_stream_init(ctx)) != MCL_SUCCESS)
        goto fail;

    if (ctx->env.gpu_profile && mcl_profiler_start(ctx) != MCL_SUCCESS)
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "MOTIFCL_PROFILE: %s",
                ctx->head.diag.last_error);
    mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "device %u: %s (%s, %s), profile %s, validation %s",
            ctx->info.device_index, ctx->info.name, ctx->info.driver_name, ctx->info.driver_info,
            ctx->info.profile, validation ? "on" : "off");
    ctx->head.diag.last_error[0] = '\0';
    *out = ctx;
    return MCL_SUCCESS;

fail:
    mcl_context_destroy(ctx);
    return status;
}

/* A token per thread: the address of a thread-local byte. */
static _Thread_local char thread_token;

mcl_status mcl_context_enter(mcl_context *ctx)
{
    uintptr_t self = (uintptr_t)&thread_token;
    uintptr_t inside = atomic_load_explicit(&ctx->caller, memory_order_relaxed);
    if (inside == self) {
        ctx->depth++;
        return MCL_SUCCESS;
    }
    uintptr_t none = 0;
    if (!atomic_compare_exchange_strong_explicit(&ctx->caller, &none, self,
                                                 memory_order_acquire, memory_order_relaxed))
        return MCL_ERROR_CONTEXT_BUSY; /* the other thread owns the diagnostics too */
    if (ctx->destroyed) {
        atomic_store_explicit(&ctx->caller, 0, memory_order_release);
        return MCL_ERROR_CONTEXT_DESTROYED;
    }
    ctx->depth = 1;
    return MCL_SUCCESS;
}

void mcl_context_leave(mcl_context *ctx)
{
    if (--ctx->depth == 0)
        atomic_store_explicit(&ctx->caller, 0, memory_order_release);
}

void mcl_context_adopt(mcl_context *ctx, mcl_child *child, void (*release)(mcl_child *child))
{
    child->release = release;
    child->next = ctx->children;
    ctx->children = child;
    ctx->child_count++;
}

void mcl_context_disown(mcl_context *ctx, mcl_child *child)
{
    for (mcl_child **link = &ctx->children; *link; link = &(*link)->next) {
        if (*link == child) {
            *link = child->next;
            break;
        }
    }
    child->next = NULL;
    if (--ctx->child_count == 0 && ctx->destroyed)
        mcl_mem_free(ctx);
}

mcl_status mcl_context_check(const mcl_context *ctx)
{
    return ctx->destroyed ? MCL_ERROR_CONTEXT_DESTROYED : MCL_SUCCESS;
}

void mcl_context_destroy(mcl_context *ctx)
{
    if (!ctx || ctx->destroyed)
        return;
    if (ctx->device) {
        ctx->vk.vkDeviceWaitIdle(ctx->device);
        /* Lost, nothing more is submitted: what the device held (a timed-out batch's graph,
         * its tensors' memory) can go now. */
        if (ctx->lost)
            ctx->stream.completed = UINT64_MAX;
        mcl_profiler_env_report(ctx);
        /* Newest first: a session goes before the model it reads. A released object leaves
         * the list but keeps the context's memory alive until it is destroyed. */
        while (ctx->children) {
            mcl_child *child = ctx->children;
            ctx->children = child->next;
            child->next = NULL;
            child->release(child);
        }
        mcl_graphs_destroy_all(ctx);
        while (ctx->tensors)
            mcl_tensor_destroy(&ctx->tensors->t);
        mcl_profiler_destroy(ctx);
        mcl_stream_destroy(ctx);
        mcl_memory_destroy(ctx);
        mcl_kernels_destroy(ctx);
        mcl_pipeline_cache_destroy(ctx);
        ctx->vk.vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->messenger)
        ctx->vki.vkDestroyDebugUtilsMessengerEXT(ctx->instance, ctx->messenger, NULL);
    if (ctx->instance)
        ctx->vki.vkDestroyInstance(ctx->instance, NULL);
    if (ctx->child_count == 0) {
        mcl_mem_free(ctx);
        return;
    }
    /* What is left is read by the children's destroy functions: the flag, the count, the
     * list, and the handles (now null). */
    ctx->destroyed = 1;
    ctx->device = VK_NULL_HANDLE;
    ctx->instance = VK_NULL_HANDLE;
    ctx->messenger = VK_NULL_HANDLE;
}

mcl_status mcl_finish(mcl_context *ctx)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    if (ctx->stream.capture)
        status = mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_finish during a graph capture");
    else
        status = mcl_stream_finish(ctx);
    mcl_context_leave(ctx);
    return status;
}

uint64_t mcl_context_validation_errors(const mcl_context *ctx)
{
    return ctx ? ctx->validation_errors : 0;
}

const char *mcl_context_last_error(const mcl_context *ctx)
{
    return ctx ? ctx->head.diag.last_error : "";
}

int mcl_context_is_lost(const mcl_context *ctx)
{
    return ctx && ctx->lost != MCL_LOST_NO;
}

mcl_status mcl_context_device_info(const mcl_context *ctx, mcl_device_info *info)
{
    if (!ctx || !info || info->size < offsetof(mcl_device_info, reserved))
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_device_info current = ctx->info;
    if (ctx->info.features_enabled & MCL_FEATURE_MEMORY_BUDGET) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
        };
        VkPhysicalDeviceMemoryProperties2 props = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
            .pNext = &budget,
        };
        ctx->vki.vkGetPhysicalDeviceMemoryProperties2(ctx->physical, &props);
        for (uint32_t i = 0; i < current.memory_heap_count; i++) {
            current.memory_heaps[i].budget = budget.heapBudget[i];
            current.memory_heaps[i].usage = budget.heapUsage[i];
        }
    }
    size_t size = info->size < sizeof current ? info->size : sizeof current;
    current.size = info->size;
    memcpy(info, &current, size);
    return MCL_SUCCESS;
}

uint64_t mcl_device_memory_left(const mcl_context *ctx)
{
    mcl_device_info info = {.size = sizeof info};
    if (mcl_context_device_info(ctx, &info) != MCL_SUCCESS || info.memory_heap_count == 0)
        return 0;
    uint64_t best = 0;
    int any_local = 0;
    for (uint32_t h = 0; h < info.memory_heap_count; h++)
        any_local |= info.memory_heaps[h].device_local;
    for (uint32_t h = 0; h < info.memory_heap_count; h++) {
        const mcl_memory_heap *heap = &info.memory_heaps[h];
        if (any_local && !heap->device_local)
            continue;
        uint64_t left = heap->budget > heap->usage ? heap->budget - heap->usage : 0;
        if (left > best)
            best = left;
    }
    return best;
}

mcl_status mcl_context_traits_json(const mcl_context *ctx, char *buffer, size_t capacity,
                                   size_t *needed)
{
    if (!ctx || (!buffer && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    size_t length = mcl_traits_json(&ctx->head.traits, buffer, capacity);
    if (needed)
        *needed = length + 1;
    return length < capacity ? MCL_SUCCESS : MCL_ERROR_TOO_LARGE;
}
