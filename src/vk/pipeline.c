/* Embedded SPIR-V -> shader modules and compute pipelines, created once per kernel and kept
 * for the context's lifetime. Nothing is read from disk: the modules are compiled into the
 * library (cmake/spirv-embed.cmake). */
#include "context.h"

/* Workgroup size for element-wise kernels: a multiple of every subgroup size in use (8 on
 * Lavapipe, 32 on NVIDIA, 64 on GCN). Vulkan guarantees only 128 invocations, so it is
 * clamped to the device's maxComputeWorkGroupInvocations. */
#define MCL_DEFAULT_LOCAL_SIZE 256u

mcl_status mcl_kernel_get(mcl_context *ctx, mcl_kernel_id id, uint32_t binding_count,
                          uint32_t push_size, const mcl_kernel **out)
{
    mcl_kernel *k = &ctx->kernels[id];
    mcl_status status;
    VkResult result;
    if (k->pipeline) {
        *out = k;
        return MCL_SUCCESS;
    }
    if (binding_count > MCL_MAX_BINDINGS)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "kernel %s: too many bindings",
                        mcl_spirv_modules[id].name);

    const mcl_spirv_module *spv = &mcl_spirv_modules[id];
    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = spv->word_count * sizeof(uint32_t),
        .pCode = spv->words,
    };
    result = ctx->vk.vkCreateShaderModule(ctx->device, &module_info, NULL, &k->module);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreateShaderModule");
        goto fail;
    }

    VkDescriptorSetLayoutBinding bindings[MCL_MAX_BINDINGS];
    for (uint32_t i = 0; i < binding_count; i++) {
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    }
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = binding_count,
        .pBindings = bindings,
    };
    result = ctx->vk.vkCreateDescriptorSetLayout(ctx->device, &set_info, NULL, &k->set_layout);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreateDescriptorSetLayout");
        goto fail;
    }

    VkPushConstantRange push_range = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .size = push_size,
    };
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &k->set_layout,
        .pushConstantRangeCount = push_size ? 1 : 0,
        .pPushConstantRanges = push_size ? &push_range : NULL,
    };
    result = ctx->vk.vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &k->layout);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreatePipelineLayout");
        goto fail;
    }

    uint32_t local_size = MCL_DEFAULT_LOCAL_SIZE;
    if (local_size > ctx->info.max_compute_workgroup_invocations)
        local_size = ctx->info.max_compute_workgroup_invocations;
    VkSpecializationMapEntry entry = {.constantID = 0, .offset = 0, .size = sizeof local_size};
    VkSpecializationInfo spec = {
        .mapEntryCount = 1,
        .pMapEntries = &entry,
        .dataSize = sizeof local_size,
        .pData = &local_size,
    };
    VkComputePipelineCreateInfo pipeline_info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = k->module,
            .pName = "main",
            .pSpecializationInfo = &spec,
        },
        .layout = k->layout,
    };
    result = ctx->vk.vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1,
                                              &pipeline_info, NULL, &k->pipeline);
    if (result != VK_SUCCESS) {
        status = mcl_vk_fail(ctx, result, "vkCreateComputePipelines");
        goto fail;
    }
    k->binding_count = binding_count;
    k->push_size = push_size;
    k->local_size_x = local_size;
    *out = k;
    return MCL_SUCCESS;

fail:
    if (k->layout)
        ctx->vk.vkDestroyPipelineLayout(ctx->device, k->layout, NULL);
    if (k->set_layout)
        ctx->vk.vkDestroyDescriptorSetLayout(ctx->device, k->set_layout, NULL);
    if (k->module)
        ctx->vk.vkDestroyShaderModule(ctx->device, k->module, NULL);
    *k = (mcl_kernel){0};
    return status;
}

void mcl_kernels_destroy(mcl_context *ctx)
{
    for (int i = 0; i < MCL_KERNEL_COUNT; i++) {
        mcl_kernel *k = &ctx->kernels[i];
        if (k->pipeline)
            ctx->vk.vkDestroyPipeline(ctx->device, k->pipeline, NULL);
        if (k->layout)
            ctx->vk.vkDestroyPipelineLayout(ctx->device, k->layout, NULL);
        if (k->set_layout)
            ctx->vk.vkDestroyDescriptorSetLayout(ctx->device, k->set_layout, NULL);
        if (k->module)
            ctx->vk.vkDestroyShaderModule(ctx->device, k->module, NULL);
        *k = (mcl_kernel){0};
    }
}
