/* Choosing a device, negotiating optional features and recording what was chosen, then
 * creating the device and its compute queue. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "../core/env.h"
#include "core/alloc.h"

/* Vulkan 1.2 is the floor: it brings driver properties, 8/16-bit storage and
 * shaderFloat16/Int8 as core features, which every supported GPU driver offers. */
#define MCL_MIN_DEVICE_API VK_API_VERSION_1_2

static int has_extension(const VkExtensionProperties *exts, uint32_t count, const char *name)
{
    for (uint32_t i = 0; i < count; i++) {
        if (strcmp(exts[i].extensionName, name) == 0)
            return 1;
    }
    return 0;
}

static int type_rank(VkPhysicalDeviceType type)
{
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

/* The compute queue family of a device, preferring one with timestamps; UINT32_MAX if none.
 * The first 32 families are looked at, as mcl_device_create does: no allocation, so that
 * running out of memory cannot pass for a device without a compute queue. */
static uint32_t compute_family(const mcl_instance_fns *vki, VkPhysicalDevice physical)
{
    uint32_t count = 32, best = UINT32_MAX;
    VkQueueFamilyProperties families[32];
    vki->vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families);
    for (uint32_t i = 0; i < count; i++) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0)
            continue;
        if (best == UINT32_MAX ||
            (families[best].timestampValidBits == 0 && families[i].timestampValidBits > 0))
            best = i;
    }
    return best;
}

static int device_usable(const mcl_instance_fns *vki, VkPhysicalDevice physical)
{
    VkPhysicalDeviceProperties props;
    vki->vkGetPhysicalDeviceProperties(physical, &props);
    return props.apiVersion >= MCL_MIN_DEVICE_API && compute_family(vki, physical) != UINT32_MAX;
}

#define MCL_DEVICE_LIST_BYTES 384

/* The devices that exist, as "0 \"name\", 1 \"name\"" and where to read more, for the error
 * that no device matched. */
static const char *device_list(const mcl_instance_fns *vki, VkPhysicalDevice *devices,
                               uint32_t count, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < count && used < size; i++) {
        VkPhysicalDeviceProperties props;
        vki->vkGetPhysicalDeviceProperties(devices[i], &props);
        int n = snprintf(out + used, size - used, "%s%u \"%s\"", i ? ", " : "", i,
                         props.deviceName);
        used += n > 0 ? (size_t)n : 0;
    }
    if (used < size)
        snprintf(out + used, size - used, " (MOTIFCL_LOG=info says why a device is skipped)");
    return out;
}

mcl_status mcl_device_choose(mcl_context *ctx, const mcl_context_desc *desc)
{
    const mcl_instance_fns *vki = &ctx->vki;
    uint32_t count = 0;
    VkResult result = vki->vkEnumeratePhysicalDevices(ctx->instance, &count, NULL);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkEnumeratePhysicalDevices");
    if (count == 0)
        return mcl_fail(ctx, MCL_ERROR_NO_DEVICE, "the Vulkan loader reports no device");
    VkPhysicalDevice *devices = mcl_mem_calloc(count, sizeof *devices);
    if (!devices)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    result = vki->vkEnumeratePhysicalDevices(ctx->instance, &count, devices);
    if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
        mcl_mem_free(devices);
        return mcl_vk_fail(ctx, result, "vkEnumeratePhysicalDevices");
    }

    /* The descriptor first, then MOTIFCL_DEVICE (an index only when it is all digits). */
    const char *by_name = desc->device_name;
    int have_index = desc->device_index >= 0;
    uint64_t by_index = have_index ? (uint64_t)desc->device_index : 0;
    if (!have_index && !by_name && ctx->env.device[0]) {
        if (ctx->env.device_by_index) {
            have_index = 1;
            by_index = ctx->env.device_index;
        } else {
            by_name = ctx->env.device;
        }
    }

    mcl_status status = MCL_SUCCESS;
    long chosen = -1;
    if (have_index) {
        char names[MCL_DEVICE_LIST_BYTES];
        if (by_index >= count)
            status = mcl_fail(ctx, MCL_ERROR_NO_DEVICE,
                              "device index %llu requested but only %u device(s) exist: %s",
                              (unsigned long long)by_index, count,
                              device_list(vki, devices, count, names, sizeof names));
        else if (!device_usable(vki, devices[by_index]))
            status = mcl_fail(ctx, MCL_ERROR_NO_DEVICE,
                              "device %llu lacks Vulkan 1.2 or a compute queue",
                              (unsigned long long)by_index);
        else
            chosen = (long)by_index;
    } else {
        int best_rank = -1;
        for (uint32_t i = 0; i < count; i++) {
            VkPhysicalDeviceProperties props;
            vki->vkGetPhysicalDeviceProperties(devices[i], &props);
            if (by_name && !mcl_contains_nocase(props.deviceName, by_name))
                continue;
            if (!device_usable(vki, devices[i])) {
                mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "skipping %s: no Vulkan 1.2 or compute queue",
                        props.deviceName);
                continue;
            }
            if (type_rank(props.deviceType) > best_rank) {
                best_rank = type_rank(props.deviceType);
                chosen = i;
            }
        }
        char names[MCL_DEVICE_LIST_BYTES];
        if (chosen < 0)
            status = by_name ? mcl_fail(ctx, MCL_ERROR_NO_DEVICE,
                                        "no usable device's name contains \"%s\"; the devices: "
                                        "%s", by_name,
                                        device_list(vki, devices, count, names, sizeof names))
                             : mcl_fail(ctx, MCL_ERROR_NO_DEVICE,
                                        "none of %u device(s) has Vulkan 1.2 and a compute "
                                        "queue: %s", count,
                                        device_list(vki, devices, count, names, sizeof names));
    }
    if (chosen >= 0) {
        ctx->physical = devices[chosen];
        ctx->info.device_index = (uint32_t)chosen;
        ctx->queue_family = compute_family(vki, ctx->physical);
    }
    mcl_mem_free(devices);
    return status;
}

/* Everything the device offers that the runtime might use, queried in one chain. */
typedef struct device_caps {
    VkPhysicalDeviceFeatures2 features;
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control;
    VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot;
    VkPhysicalDeviceMemoryPriorityFeaturesEXT priority;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop;
    VkPhysicalDeviceProperties2 props;
    VkPhysicalDeviceVulkan11Properties p11;
    VkPhysicalDeviceVulkan12Properties p12;
    VkPhysicalDeviceSubgroupSizeControlProperties size_control_props;
    VkPhysicalDeviceShaderIntegerDotProductProperties int_dot_props;
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT host_import_props;
    VkPhysicalDeviceCooperativeMatrixPropertiesNV coop_props;
    VkPhysicalDeviceMaintenance4Properties m4_props; /* Vulkan 1.3: maxBufferSize */
    int has_m4;
    int has_size_control, has_int_dot, has_budget, has_priority, has_host_import, has_coop;
    int coop_f16; /* a 16 x 16 x 16 f16 -> f32 subgroup product is listed */
} device_caps;

/* Whether the device lists the cooperative-matrix shape the matrix kernels use: subgroup
 * scope, 16 x 16 x 16, f16 A and B, f32 C and D. */
static int coop_f16_listed(const mcl_instance_fns *vki, VkPhysicalDevice physical)
{
    uint32_t count = 0;
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV list_fn =
        vki->vkGetPhysicalDeviceCooperativeMatrixPropertiesNV;
    if (!list_fn || list_fn(physical, &count, NULL) != VK_SUCCESS || count == 0)
        return 0;
    VkCooperativeMatrixPropertiesNV *list = mcl_mem_calloc(count, sizeof *list);
    if (!list)
        return 0;
    for (uint32_t i = 0; i < count; i++)
        list[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    int found = 0;
    if (list_fn(physical, &count, list) >= 0) {
        for (uint32_t i = 0; i < count && !found; i++) {
            const VkCooperativeMatrixPropertiesNV *p = &list[i];
            found = p->MSize == 16 && p->NSize == 16 && p->KSize == 16 &&
                    p->AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                    p->BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                    p->CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                    p->DType == VK_COMPONENT_TYPE_FLOAT32_NV && p->scope == VK_SCOPE_SUBGROUP_NV;
        }
    }
    mcl_mem_free(list);
    return found;
}

static mcl_status query_caps(mcl_context *ctx, device_caps *caps, VkExtensionProperties *exts,
                             uint32_t ext_count)
{
    const mcl_instance_fns *vki = &ctx->vki;
    VkPhysicalDeviceProperties base;
    vki->vkGetPhysicalDeviceProperties(ctx->physical, &base);
    int api13 = base.apiVersion >= VK_API_VERSION_1_3;
    caps->has_size_control = api13 || has_extension(exts, ext_count,
                                                    VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    caps->has_int_dot = api13 || has_extension(exts, ext_count,
                                               VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    caps->has_budget = has_extension(exts, ext_count, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    caps->has_priority = has_extension(exts, ext_count, VK_EXT_MEMORY_PRIORITY_EXTENSION_NAME);
    caps->has_host_import =
        has_extension(exts, ext_count, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    caps->has_coop = has_extension(exts, ext_count, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    caps->has_m4 = api13;

    caps->features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    caps->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    caps->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    caps->size_control.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES;
    caps->int_dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    caps->priority.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PRIORITY_FEATURES_EXT;
    caps->coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    caps->features.pNext = &caps->v11;
    caps->v11.pNext = &caps->v12;
    void **tail = &caps->v12.pNext;
    if (caps->has_size_control) {
        *tail = &caps->size_control;
        tail = &caps->size_control.pNext;
    }
    if (caps->has_int_dot) {
        *tail = &caps->int_dot;
        tail = &caps->int_dot.pNext;
    }
    if (caps->has_priority) {
        *tail = &caps->priority;
        tail = &caps->priority.pNext;
    }
    if (caps->has_coop) {
        *tail = &caps->coop;
        tail = &caps->coop.pNext;
    }
    vki->vkGetPhysicalDeviceFeatures2(ctx->physical, &caps->features);

    caps->props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    caps->p11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES;
    caps->p12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES;
    caps->size_control_props.sType =
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES;
    caps->int_dot_props.sType =
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES;
    caps->props.pNext = &caps->p11;
    caps->p11.pNext = &caps->p12;
    tail = &caps->p12.pNext;
    if (caps->has_size_control) {
        *tail = &caps->size_control_props;
        tail = &caps->size_control_props.pNext;
    }
    if (caps->has_int_dot) {
        *tail = &caps->int_dot_props;
        tail = &caps->int_dot_props.pNext;
    }
    if (caps->has_host_import) {
        caps->host_import_props.sType =
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT;
        *tail = &caps->host_import_props;
        tail = &caps->host_import_props.pNext;
    }
    if (caps->has_coop) {
        caps->coop_props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV;
        *tail = &caps->coop_props;
        tail = &caps->coop_props.pNext;
    }
    if (caps->has_m4) {
        caps->m4_props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES;
        *tail = &caps->m4_props;
        tail = &caps->m4_props.pNext;
    }
    vki->vkGetPhysicalDeviceProperties2(ctx->physical, &caps->props);
    caps->coop_f16 = caps->has_coop && coop_f16_listed(&ctx->vki, ctx->physical);
    return MCL_SUCCESS;
}

static uint64_t available_features(const device_caps *caps, uint32_t timestamp_bits)
{
    uint64_t f = 0;
    const VkPhysicalDeviceVulkan11Properties *p11 = &caps->p11;
    if ((p11->subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (p11->subgroupSupportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT))
        f |= MCL_FEATURE_SUBGROUP_BASIC;
    if ((p11->subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (p11->subgroupSupportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT))
        f |= MCL_FEATURE_SUBGROUP_ARITHMETIC;
    if (caps->has_size_control && caps->size_control.subgroupSizeControl &&
        caps->size_control.computeFullSubgroups &&
        (caps->size_control_props.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT))
        f |= MCL_FEATURE_SUBGROUP_SIZE_CONTROL;
    if (caps->v12.storageBuffer8BitAccess)
        f |= MCL_FEATURE_STORAGE_8BIT;
    if (caps->v11.storageBuffer16BitAccess)
        f |= MCL_FEATURE_STORAGE_16BIT;
    if (caps->v12.shaderFloat16)
        f |= MCL_FEATURE_SHADER_FLOAT16;
    if (caps->v12.shaderInt8)
        f |= MCL_FEATURE_SHADER_INT8;
    if (caps->features.features.shaderInt64)
        f |= MCL_FEATURE_SHADER_INT64;
    if (caps->has_int_dot && caps->int_dot.shaderIntegerDotProduct) {
        f |= MCL_FEATURE_INTEGER_DOT_PRODUCT;
        if (caps->int_dot_props.integerDotProduct4x8BitPackedSignedAccelerated)
            f |= MCL_FEATURE_INTEGER_DOT_ACCELERATED;
    }
    if (caps->has_budget)
        f |= MCL_FEATURE_MEMORY_BUDGET;
    if (caps->has_priority && caps->priority.memoryPriority)
        f |= MCL_FEATURE_MEMORY_PRIORITY;
    if (caps->v12.bufferDeviceAddress)
        f |= MCL_FEATURE_BUFFER_DEVICE_ADDRESS;
    if (timestamp_bits > 0)
        f |= MCL_FEATURE_TIMESTAMPS;
    if (caps->has_host_import && caps->host_import_props.minImportedHostPointerAlignment > 0)
        f |= MCL_FEATURE_EXTERNAL_HOST_MEMORY;
    /* The matrix kernels run subgroups of 32, hold f16 values in shared memory, and declare
     * the Vulkan memory model (glslang writes cooperative-matrix code with it). With that
     * model enabled, every kernel's device-scope atomics and barriers (the GLSL default of
     * atomicAdd and memoryBarrierBuffer) need its device scope too. */
    if (caps->coop_f16 && caps->coop.cooperativeMatrix &&
        (caps->coop_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        caps->p11.subgroupSize == 32 && caps->v12.shaderFloat16 && caps->v12.vulkanMemoryModel &&
        caps->v12.vulkanMemoryModelDeviceScope)
        f |= MCL_FEATURE_COOPERATIVE_MATRIX;
    return f;
}

static void record_info(mcl_context *ctx, const device_caps *caps)
{
    const mcl_instance_fns *vki = &ctx->vki;
    const VkPhysicalDeviceProperties *p = &caps->props.properties;
    mcl_device_info *info = &ctx->info;
    snprintf(info->name, sizeof info->name, "%s", p->deviceName);
    snprintf(info->driver_name, sizeof info->driver_name, "%s", caps->p12.driverName);
    snprintf(info->driver_info, sizeof info->driver_info, "%s", caps->p12.driverInfo);
    info->vendor_id = p->vendorID;
    info->device_id = p->deviceID;
    info->driver_id = (uint32_t)caps->p12.driverID;
    info->driver_version = p->driverVersion;
    info->api_version = p->apiVersion;
    switch (p->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info->device_type = MCL_DEVICE_TYPE_DISCRETE; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info->device_type = MCL_DEVICE_TYPE_INTEGRATED; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info->device_type = MCL_DEVICE_TYPE_VIRTUAL; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info->device_type = MCL_DEVICE_TYPE_CPU; break;
    default: info->device_type = MCL_DEVICE_TYPE_OTHER; break;
    }
    info->subgroup_size = caps->p11.subgroupSize;
    info->min_subgroup_size = info->max_subgroup_size = caps->p11.subgroupSize;
    if (caps->has_size_control && caps->size_control_props.minSubgroupSize) {
        info->min_subgroup_size = caps->size_control_props.minSubgroupSize;
        info->max_subgroup_size = caps->size_control_props.maxSubgroupSize;
    }
    info->max_storage_buffer_range = p->limits.maxStorageBufferRange;
    info->max_memory_allocation_size = caps->p11.maxMemoryAllocationSize;
    /* A buffer may be as large as Vulkan 1.3 says, else as one allocation. */
    ctx->max_buffer_size = caps->has_m4 ? caps->m4_props.maxBufferSize
                                        : caps->p11.maxMemoryAllocationSize;
    info->min_storage_buffer_offset_alignment = p->limits.minStorageBufferOffsetAlignment;
    info->max_compute_shared_memory_size = p->limits.maxComputeSharedMemorySize;
    info->max_compute_workgroup_invocations = p->limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) {
        info->max_compute_workgroup_size[i] = p->limits.maxComputeWorkGroupSize[i];
        info->max_compute_workgroup_count[i] = p->limits.maxComputeWorkGroupCount[i];
    }
    info->timestamp_period_ns = p->limits.timestampPeriod;

    vki->vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory_properties);
    uint32_t heaps = ctx->memory_properties.memoryHeapCount;
    if (heaps > MCL_MAX_MEMORY_HEAPS)
        heaps = MCL_MAX_MEMORY_HEAPS;
    info->memory_heap_count = heaps;
    for (uint32_t i = 0; i < heaps; i++) {
        const VkMemoryHeap *heap = &ctx->memory_properties.memoryHeaps[i];
        info->memory_heaps[i].size = heap->size;
        info->memory_heaps[i].budget = heap->size;
        info->memory_heaps[i].device_local = (heap->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    }
}

mcl_status mcl_device_create(mcl_context *ctx)
{
    const mcl_instance_fns *vki = &ctx->vki;
    uint32_t ext_count = 0;
    VkResult result =
        vki->vkEnumerateDeviceExtensionProperties(ctx->physical, NULL, &ext_count, NULL);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkEnumerateDeviceExtensionProperties");
    VkExtensionProperties *exts = mcl_mem_calloc(ext_count ? ext_count : 1, sizeof *exts);
    if (!exts)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    result = vki->vkEnumerateDeviceExtensionProperties(ctx->physical, NULL, &ext_count, exts);
    if (result != VK_SUCCESS) {
        mcl_mem_free(exts);
        return mcl_vk_fail(ctx, result, "vkEnumerateDeviceExtensionProperties");
    }

    device_caps caps;
    memset(&caps, 0, sizeof caps);
    query_caps(ctx, &caps, exts, ext_count);

    uint32_t family_count = 0;
    vki->vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &family_count, NULL);
    VkQueueFamilyProperties families[32];
    if (family_count > 32)
        family_count = 32;
    vki->vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &family_count, families);
    ctx->info.timestamp_valid_bits = families[ctx->queue_family].timestampValidBits;

    record_info(ctx, &caps);
    ctx->info.features_available = available_features(&caps, ctx->info.timestamp_valid_bits);
    mcl_traits_decide(&ctx->info, &ctx->env, MCL_LOG(ctx), &ctx->head.traits);
    const VkPhysicalDeviceLimits *limits = &caps.props.properties.limits;
    ctx->head.traits.max_stage_buffers =
        limits->maxPerStageDescriptorStorageBuffers < limits->maxDescriptorSetStorageBuffers
            ? limits->maxPerStageDescriptorStorageBuffers
            : limits->maxDescriptorSetStorageBuffers;
    uint64_t on = ctx->info.features_enabled;
    int api13 = caps.props.properties.apiVersion >= VK_API_VERSION_1_3;

    /* Enable exactly what the runtime decided to use, so that a masked feature cannot be
     * used by accident (validation reports it). */
    VkPhysicalDeviceVulkan11Features v11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .storageBuffer16BitAccess = (on & MCL_FEATURE_STORAGE_16BIT) != 0,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .storageBuffer8BitAccess = (on & MCL_FEATURE_STORAGE_8BIT) != 0,
        .shaderFloat16 = (on & MCL_FEATURE_SHADER_FLOAT16) != 0,
        .shaderInt8 = (on & MCL_FEATURE_SHADER_INT8) != 0,
        .bufferDeviceAddress = (on & MCL_FEATURE_BUFFER_DEVICE_ADDRESS) != 0,
        .vulkanMemoryModel = (on & MCL_FEATURE_COOPERATIVE_MATRIX) != 0,
        .vulkanMemoryModelDeviceScope = (on & MCL_FEATURE_COOPERATIVE_MATRIX) != 0,
    };
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
        .subgroupSizeControl = VK_TRUE,
        .computeFullSubgroups = VK_TRUE,
    };
    VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .shaderIntegerDotProduct = VK_TRUE,
    };
    VkPhysicalDeviceMemoryPriorityFeaturesEXT priority = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PRIORITY_FEATURES_EXT,
        .memoryPriority = VK_TRUE,
    };
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .cooperativeMatrix = VK_TRUE,
    };
    VkPhysicalDeviceFeatures2 features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = &v11,
    };
    features.features.shaderInt64 = (on & MCL_FEATURE_SHADER_INT64) != 0;
    v11.pNext = &v12;
    void **tail = &v12.pNext;
    const char *enabled_exts[8];
    uint32_t enabled_ext_count = 0;
    if (on & MCL_FEATURE_SUBGROUP_SIZE_CONTROL) {
        *tail = &size_control;
        tail = &size_control.pNext;
        if (!api13)
            enabled_exts[enabled_ext_count++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    }
    if (on & MCL_FEATURE_INTEGER_DOT_PRODUCT) {
        *tail = &int_dot;
        tail = &int_dot.pNext;
        if (!api13)
            enabled_exts[enabled_ext_count++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    }
    if (on & MCL_FEATURE_MEMORY_PRIORITY) {
        *tail = &priority;
        tail = &priority.pNext;
        enabled_exts[enabled_ext_count++] = VK_EXT_MEMORY_PRIORITY_EXTENSION_NAME;
    }
    if (on & MCL_FEATURE_MEMORY_BUDGET)
        enabled_exts[enabled_ext_count++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    if (on & MCL_FEATURE_COOPERATIVE_MATRIX) {
        *tail = &coop;
        tail = &coop.pNext;
        enabled_exts[enabled_ext_count++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    if (on & MCL_FEATURE_EXTERNAL_HOST_MEMORY) {
        enabled_exts[enabled_ext_count++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
        ctx->host_import_alignment = caps.host_import_props.minImportedHostPointerAlignment;
    }
    /* Diagnostics: the driver's statistics of each compiled kernel (registers, spills). */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE,
    };
    if (ctx->head.traits.pipeline_stats) {
        if (has_extension(exts, ext_count,
                          VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
            *tail = &exec_props;
            tail = &exec_props.pNext;
            enabled_exts[enabled_ext_count++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
            ctx->pipeline_stats = 1;
        } else {
            mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "MOTIFCL_PIPELINE_STATS: the device has no "
                    "VK_KHR_pipeline_executable_properties");
        }
    }
    mcl_mem_free(exts);

    float queue_priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = ctx->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &queue_priority,
    };
    VkDeviceCreateInfo device_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &features,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue_info,
        .enabledExtensionCount = enabled_ext_count,
        .ppEnabledExtensionNames = enabled_exts,
    };
    result = vki->vkCreateDevice(ctx->physical, &device_info, NULL, &ctx->device);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkCreateDevice");
    volkLoadDeviceTable(&ctx->vk, ctx->device);
    ctx->vk.vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
    return MCL_SUCCESS;
}
