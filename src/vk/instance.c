/* Loading Vulkan through volk, the instance with its optional validation layer and debug
 * messenger, and the Vulkan failures every file of the runtime reports through. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "core/alloc.h"

#if defined(_WIN32)
#include <windows.h>
static INIT_ONCE volk_once = INIT_ONCE_STATIC_INIT;
static VkResult volk_result = VK_ERROR_INITIALIZATION_FAILED;
static BOOL CALLBACK volk_init_once(PINIT_ONCE once, PVOID param, PVOID *context)
{
    (void)once; (void)param; (void)context;
    volk_result = volkInitialize();
    return TRUE;
}
VkResult mcl_volk_init(void)
{
    InitOnceExecuteOnce(&volk_once, volk_init_once, NULL, NULL);
    return volk_result;
}
#else
#include <pthread.h>
/* volk's loader functions are the library's one piece of process-wide state: they are
 * loaded once; every context loads its instance and device functions into its own tables. */
static pthread_once_t volk_once = PTHREAD_ONCE_INIT;
static VkResult volk_result = VK_ERROR_INITIALIZATION_FAILED;
static void volk_init_once(void)
{
    volk_result = volkInitialize();
}
VkResult mcl_volk_init(void)
{
    pthread_once(&volk_once, volk_init_once);
    return volk_result;
}
#endif

#define MCL_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

static const char *vk_result_name(VkResult result)
{
    switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    default: return "VkResult";
    }
}

mcl_status mcl_vk_fail(mcl_context *ctx, VkResult result, const char *what)
{
    mcl_status status = MCL_ERROR_VULKAN;
    if (result == VK_ERROR_OUT_OF_HOST_MEMORY)
        status = MCL_ERROR_OUT_OF_HOST_MEMORY;
    else if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        status = MCL_ERROR_OUT_OF_DEVICE_MEMORY;
    else if (result == VK_ERROR_DEVICE_LOST) {
        status = MCL_ERROR_DEVICE_LOST;
        ctx->lost = MCL_LOST_DEVICE;
    }
    return mcl_fail(ctx, status, "%s failed: %s (%d)", what, vk_result_name(result),
                    (int)result);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
debug_messenger(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                VkDebugUtilsMessageTypeFlagsEXT types,
                const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    mcl_context *ctx = user;
    (void)types;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        ctx->validation_errors++;
        mcl_log(MCL_LOG(ctx), MCL_LOG_ERROR, "validation: %s", data->pMessage);
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "validation: %s", data->pMessage);
    }
    return VK_FALSE;
}

static int layer_available(const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, NULL) != VK_SUCCESS || count == 0)
        return 0;
    VkLayerProperties *layers = mcl_mem_calloc(count, sizeof *layers);
    if (!layers)
        return 0;
    int found = 0;
    if (vkEnumerateInstanceLayerProperties(&count, layers) == VK_SUCCESS) {
        for (uint32_t i = 0; i < count && !found; i++)
            found = strcmp(layers[i].layerName, name) == 0;
    }
    mcl_mem_free(layers);
    return found;
}

/* volk's device-table loader calls the global vkGetDeviceProcAddr: it is set once, by the
 * first instance, under a lock, and never written again. The loader's vkGetDeviceProcAddr is
 * its own export, valid for every device whatever instance it was asked through. */
#if defined(_WIN32)
static SRWLOCK device_proc_lock = SRWLOCK_INIT;
#define device_proc_acquire() AcquireSRWLockExclusive(&device_proc_lock)
#define device_proc_release() ReleaseSRWLockExclusive(&device_proc_lock)
#else
static pthread_mutex_t device_proc_lock = PTHREAD_MUTEX_INITIALIZER;
#define device_proc_acquire() pthread_mutex_lock(&device_proc_lock)
#define device_proc_release() pthread_mutex_unlock(&device_proc_lock)
#endif

static mcl_status load_instance_fns(mcl_context *ctx)
{
    mcl_instance_fns *f = &ctx->vki;
#define MCL_LOAD(name) f->name = (PFN_##name)vkGetInstanceProcAddr(ctx->instance, #name)
    MCL_LOAD(vkDestroyInstance);
    MCL_LOAD(vkEnumeratePhysicalDevices);
    MCL_LOAD(vkGetPhysicalDeviceProperties);
    MCL_LOAD(vkGetPhysicalDeviceProperties2);
    MCL_LOAD(vkGetPhysicalDeviceFeatures2);
    MCL_LOAD(vkGetPhysicalDeviceQueueFamilyProperties);
    MCL_LOAD(vkGetPhysicalDeviceMemoryProperties);
    MCL_LOAD(vkGetPhysicalDeviceMemoryProperties2);
    MCL_LOAD(vkEnumerateDeviceExtensionProperties);
    MCL_LOAD(vkCreateDevice);
    MCL_LOAD(vkCreateDebugUtilsMessengerEXT);
    MCL_LOAD(vkDestroyDebugUtilsMessengerEXT);
    MCL_LOAD(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV);
#undef MCL_LOAD
    PFN_vkGetDeviceProcAddr device_proc =
        (PFN_vkGetDeviceProcAddr)vkGetInstanceProcAddr(ctx->instance, "vkGetDeviceProcAddr");
    if (!f->vkDestroyInstance || !f->vkEnumeratePhysicalDevices ||
        !f->vkGetPhysicalDeviceProperties || !f->vkGetPhysicalDeviceProperties2 ||
        !f->vkGetPhysicalDeviceFeatures2 || !f->vkGetPhysicalDeviceQueueFamilyProperties ||
        !f->vkGetPhysicalDeviceMemoryProperties || !f->vkGetPhysicalDeviceMemoryProperties2 ||
        !f->vkEnumerateDeviceExtensionProperties || !f->vkCreateDevice || !device_proc) {
        if (f->vkDestroyInstance)
            f->vkDestroyInstance(ctx->instance, NULL);
        ctx->instance = VK_NULL_HANDLE;
        return mcl_fail(ctx, MCL_ERROR_VULKAN_UNAVAILABLE,
                        "the Vulkan loader lacks a core 1.1 instance function");
    }
    device_proc_acquire();
    if (!vkGetDeviceProcAddr)
        vkGetDeviceProcAddr = device_proc;
    device_proc_release();
    return MCL_SUCCESS;
}

mcl_status mcl_instance_create(mcl_context *ctx, uint32_t validation)
{
    mcl_status status;
    uint32_t loader_version = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion)
        vkEnumerateInstanceVersion(&loader_version);
    if (loader_version < VK_API_VERSION_1_1)
        return mcl_fail(ctx, MCL_ERROR_VULKAN_UNAVAILABLE,
                        "the Vulkan loader offers only version %u.%u; 1.1 or newer is needed",
                        VK_API_VERSION_MAJOR(loader_version),
                        VK_API_VERSION_MINOR(loader_version));

    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "motifcl",
        .pEngineName = "MotifCL",
        .engineVersion = VK_MAKE_API_VERSION(0, MOTIFCL_VERSION_MAJOR, MOTIFCL_VERSION_MINOR,
                                             MOTIFCL_VERSION_PATCH),
        .apiVersion = VK_API_VERSION_1_3,
    };
    const char *layers[1];
    const char *extensions[1];
    uint32_t layer_count = 0, extension_count = 0;
    VkValidationFeatureEnableEXT enables[3];
    uint32_t enable_count = 0;
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = debug_messenger,
        .pUserData = ctx,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };

    if (validation & MCL_CONTEXT_VALIDATION) {
        if (!layer_available(MCL_VALIDATION_LAYER))
            return mcl_fail(ctx, MCL_ERROR_LAYER_UNAVAILABLE,
                            "validation was requested but %s is not installed "
                            "(Debian: vulkan-validationlayers)", MCL_VALIDATION_LAYER);
        layers[layer_count++] = MCL_VALIDATION_LAYER;
        extensions[extension_count++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        if (validation & MCL_CONTEXT_VALIDATION_SYNC)
            enables[enable_count++] = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
        if (validation & MCL_CONTEXT_VALIDATION_GPU_ASSISTED)
            enables[enable_count++] = VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT;
        features.enabledValidationFeatureCount = enable_count;
        features.pEnabledValidationFeatures = enables;
        messenger_info.pNext = enable_count ? &features : NULL;
        info.pNext = &messenger_info;
    }
    info.enabledLayerCount = layer_count;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = extension_count;
    info.ppEnabledExtensionNames = extensions;

    VkResult result = vkCreateInstance(&info, NULL, &ctx->instance);
    if (result == VK_ERROR_INCOMPATIBLE_DRIVER || result == VK_ERROR_INITIALIZATION_FAILED)
        return mcl_fail(ctx, MCL_ERROR_VULKAN_UNAVAILABLE,
                        "vkCreateInstance failed (%d): no usable Vulkan driver", (int)result);
    if (result != VK_SUCCESS)
        return mcl_vk_fail(ctx, result, "vkCreateInstance");
    if ((status = load_instance_fns(ctx)) != MCL_SUCCESS)
        return status;

    if (validation & MCL_CONTEXT_VALIDATION) {
        if (!ctx->vki.vkCreateDebugUtilsMessengerEXT || !ctx->vki.vkDestroyDebugUtilsMessengerEXT)
            return mcl_fail(ctx, MCL_ERROR_LAYER_UNAVAILABLE,
                            "validation was requested but %s is unavailable",
                            VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        messenger_info.pNext = NULL;
        result = ctx->vki.vkCreateDebugUtilsMessengerEXT(ctx->instance, &messenger_info, NULL,
                                                          &ctx->messenger);
        if (result != VK_SUCCESS)
            return mcl_vk_fail(ctx, result, "vkCreateDebugUtilsMessengerEXT");
    }
    ctx->info.validation = validation;
    return MCL_SUCCESS;
}
