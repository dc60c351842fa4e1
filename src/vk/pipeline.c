/* Embedded SPIR-V -> shader modules and compute pipelines, created once per (kernel,
 * specialization) and kept for the context's lifetime. Nothing is read from disk: the modules
 * are compiled into the library (cmake/spirv-embed.cmake). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "private.h"
#include "core/alloc.h"

/* Default workgroup size: a multiple of every subgroup size in use (8 on Lavapipe, 32 on
 * NVIDIA, 64 on GCN). Vulkan guarantees only 128 invocations, so it is clamped to the
 * device's maxComputeWorkGroupInvocations. */
#define MCL_DEFAULT_LOCAL_SIZE 256u

static int same_variant(const mcl_kernel_desc *a, const mcl_kernel_desc *b)
{
    if (a->local_size_x != b->local_size_x || a->spec_count != b->spec_count ||
        a->required_subgroup_size != b->required_subgroup_size ||
        a->binding_count != b->binding_count || a->push_size != b->push_size)
        return 0;
    return memcmp(a->spec, b->spec, a->spec_count * sizeof a->spec[0]) == 0;
}

/* The module a request names: its own (a tool's kernel), else the library's. */
static const mcl_spirv_module *module_of(const mcl_kernel_desc *desc)
{
    return desc->module ? desc->module : &mcl_spirv_modules[desc->id];
}

static mcl_status module_get(mcl_context *ctx, const mcl_kernel_desc *desc, VkShaderModule *out)
{
    mcl_kernel_id id = desc->id;
    if (!ctx->modules[id]) {
        const mcl_spirv_module *spv = module_of(desc);
        if (!spv->word_count)
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                            "kernel %u is not in the library (a tool's kernel)", (unsigned)id);
        VkShaderModuleCreateInfo info = {
            .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
            .codeSize = spv->word_count * sizeof(uint32_t),
            .pCode = spv->words,
        };
        VkResult result = ctx->vk.vkCreateShaderModule(ctx->device, &info, NULL, &ctx->modules[id]);
        if (result != VK_SUCCESS)
            return mcl_vk_fail(ctx, result, "vkCreateShaderModule");
    }
    *out = ctx->modules[id];
    return MCL_SUCCESS;
}

static void kernel_free(mcl_context *ctx, mcl_kernel *k)
{
    if (k->pipeline)
        ctx->vk.vkDestroyPipeline(ctx->device, k->pipeline, NULL);
    if (k->layout)
        ctx->vk.vkDestroyPipelineLayout(ctx->device, k->layout, NULL);
    if (k->set_layout)
        ctx->vk.vkDestroyDescriptorSetLayout(ctx->device, k->set_layout, NULL);
    mcl_mem_free(k);
}

/* MOTIFCL_PIPELINE_STATS: the driver's statistics of a compiled kernel (register count, local
 * memory, instruction counts: whatever the driver reports), one info line each. */
/* A kernel's constants as "x=<workgroup size>,<constant 1>,..." for log lines. */
static void spec_string(const mcl_kernel_desc *want, char *spec, size_t size)
{
    int used = snprintf(spec, size, "x=%u", want->local_size_x);
    for (uint32_t i = 0; i < want->spec_count && used > 0 && (size_t)used < size; i++)
        used += snprintf(spec + used, size - (size_t)used, ",%u", want->spec[i]);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void log_statistics(mcl_context *ctx, VkPipeline pipeline, const mcl_kernel_desc *want)
{
    char spec[160];
    spec_string(want, spec, sizeof spec);
    VkPipelineExecutableInfoKHR exec = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                        .pipeline = pipeline};
    VkPipelineExecutableStatisticKHR stats[32];
    uint32_t count = 32;
    for (uint32_t i = 0; i < count; i++)
        stats[i] = (VkPipelineExecutableStatisticKHR){
            .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    VkResult result = ctx->vk.vkGetPipelineExecutableStatisticsKHR(ctx->device, &exec, &count,
                                                                   stats);
    if (result != VK_SUCCESS && result != VK_INCOMPLETE)
        return;
    for (uint32_t i = 0; i < count; i++) {
        const VkPipelineExecutableStatisticKHR *st = &stats[i];
        double v = st->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR
                       ? (double)st->value.b32
                   : st->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR
                       ? (double)st->value.i64
                   : st->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR
                       ? (double)st->value.u64
                       : st->value.f64;
        mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "kernel %s [%s]: %s = %g",
                module_of(want)->name, spec, st->name, v);
    }
}

static mcl_status kernel_get_entered(mcl_context *ctx, const mcl_kernel_desc *request,
                                     const mcl_kernel **out)
{
    mcl_kernel_desc want = *request;
    if (want.local_size_x == 0)
        want.local_size_x = MCL_DEFAULT_LOCAL_SIZE;
    if (want.local_size_x > ctx->info.max_compute_workgroup_invocations)
        want.local_size_x = ctx->info.max_compute_workgroup_invocations;
    if (want.binding_count > MCL_MAX_BINDINGS || want.spec_count > MCL_MAX_SPEC ||
        want.id >= MCL_KERNEL_COUNT)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "bad kernel request");
    if (want.binding_count > ctx->head.traits.max_stage_buffers)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "kernel %s binds %u storage buffers, the device %u at most",
                        module_of(&want)->name, want.binding_count,
                        ctx->head.traits.max_stage_buffers);
    for (mcl_kernel *k = ctx->kernels[want.id]; k; k = k->next) {
        if (same_variant(&k->desc, &want)) {
            *out = k;
            return MCL_SUCCESS;
        }
    }

    mcl_status status;
    VkResult result;
    VkShaderModule module = VK_NULL_HANDLE;
    if ((status = module_get(ctx, &want, &module)) != MCL_SUCCESS)
        return status;
    mcl_kernel *k = mcl_mem_calloc(1, sizeof *k);
    if (!k)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    k->desc = want;

    VkDescriptorSetLayoutBinding bindings[MCL_MAX_BINDINGS];
    for (uint32_t i = 0; i < want.binding_count; i++) {
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    }
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = want.binding_count,
        .pBindings = bindings,
    };
    result = ctx->vk.vkCreateDescriptorSetLayout(ctx->device, &set_info, NULL, &k->set_layout);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreateDescriptorSetLayout");
        goto fail;
    }
    VkPushConstantRange push_range = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .size = want.push_size,
    };
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &k->set_layout,
        .pushConstantRangeCount = want.push_size ? 1 : 0,
        .pPushConstantRanges = want.push_size ? &push_range : NULL,
    };
    result = ctx->vk.vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &k->layout);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreatePipelineLayout");
        goto fail;
    }

    uint32_t values[1 + MCL_MAX_SPEC];
    VkSpecializationMapEntry entries[1 + MCL_MAX_SPEC];
    values[0] = want.local_size_x;
    for (uint32_t i = 0; i < want.spec_count; i++)
        values[1 + i] = want.spec[i];
    for (uint32_t i = 0; i <= want.spec_count; i++)
        entries[i] = (VkSpecializationMapEntry){
            .constantID = i, .offset = i * (uint32_t)sizeof(uint32_t), .size = sizeof(uint32_t)};
    VkSpecializationInfo spec = {
        .mapEntryCount = 1 + want.spec_count,
        .pMapEntries = entries,
        .dataSize = (1 + want.spec_count) * sizeof(uint32_t),
        .pData = values,
    };
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = want.required_subgroup_size,
    };
    int fixed_subgroup = want.required_subgroup_size &&
                         (ctx->info.features_enabled & MCL_FEATURE_SUBGROUP_SIZE_CONTROL);
    if (want.required_subgroup_size && !fixed_subgroup) {
        status = mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                          "kernel %s wants subgroup size %u but subgroup size control is off",
                          module_of(&want)->name, want.required_subgroup_size);
        goto fail;
    }
    VkComputePipelineCreateInfo pipeline_info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = ctx->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .pNext = fixed_subgroup ? &subgroup : NULL,
            .flags = fixed_subgroup ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = module,
            .pName = "main",
            .pSpecializationInfo = &spec,
        },
        .layout = k->layout,
    };
    double started = seconds_now();
    result = ctx->vk.vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1,
                                              &pipeline_info, NULL, &k->pipeline);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreateComputePipelines");
        goto fail;
    }
    /* Compiling is the first call's hidden cost (seconds a kernel on some drivers): each one
     * at debug level, the total when the context goes. */
    double took = seconds_now() - started;
    ctx->pipelines_created++;
    ctx->pipeline_seconds += took;
    if (mcl_log_enabled(MCL_LOG(ctx), MCL_LOG_DEBUG)) {
        char specs[160];
        spec_string(&want, specs, sizeof specs);
        mcl_log(MCL_LOG(ctx), MCL_LOG_DEBUG, "kernel %s [%s]: pipeline created in %.1f ms",
                module_of(&want)->name, specs, 1e3 * took);
    }
    if (ctx->pipeline_stats)
        log_statistics(ctx, k->pipeline, &want);
    k->binding_count = want.binding_count;
    k->push_size = want.push_size;
    k->local_size_x = want.local_size_x;
    k->next = ctx->kernels[want.id];
    ctx->kernels[want.id] = k;
    *out = k;
    return MCL_SUCCESS;

fail:
    kernel_free(ctx, k);
    return status;
}

mcl_status mcl_kernel_get(mcl_context *ctx, const mcl_kernel_desc *request, const mcl_kernel **out)
{
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = kernel_get_entered(ctx, request, out);
    mcl_context_leave(ctx);
    return status;
}

mcl_status mcl_kernel_simple(mcl_context *ctx, mcl_kernel_id id, uint32_t binding_count,
                             uint32_t push_size, const mcl_kernel **out)
{
    mcl_kernel_desc desc = {.id = id, .binding_count = binding_count, .push_size = push_size};
    return mcl_kernel_get(ctx, &desc, out);
}

void mcl_kernels_destroy(mcl_context *ctx)
{
    if (ctx->pipelines_created)
        mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "%u pipelines created in %.2f s",
                ctx->pipelines_created, ctx->pipeline_seconds);
    for (int i = 0; i < MCL_KERNEL_COUNT; i++) {
        while (ctx->kernels[i]) {
            mcl_kernel *k = ctx->kernels[i];
            ctx->kernels[i] = k->next;
            kernel_free(ctx, k);
        }
        if (ctx->modules[i])
            ctx->vk.vkDestroyShaderModule(ctx->device, ctx->modules[i], NULL);
        ctx->modules[i] = VK_NULL_HANDLE;
    }
}

uint32_t mcl_kernel_local_size(const mcl_kernel *kernel)
{
    return kernel->local_size_x;
}

const char *mcl_kernel_desc_name(const mcl_kernel_desc *desc)
{
    const char *name = module_of(desc)->name;
    return name ? name : "(a tool's kernel)";
}
