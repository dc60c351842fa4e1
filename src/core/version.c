/* Version, status and device-type names: the parts of the API that need no context (the data
 * types are in dtype.c). */
#include "motifcl.h"

#include "build_info.h"

#define MCL_STRINGIFY2(x) #x
#define MCL_STRINGIFY(x) MCL_STRINGIFY2(x)

unsigned mcl_version(void)
{
    return MOTIFCL_VERSION_NUMBER;
}

const char *mcl_version_string(void)
{
    return MCL_STRINGIFY(MOTIFCL_VERSION_MAJOR) "." MCL_STRINGIFY(
        MOTIFCL_VERSION_MINOR) "." MCL_STRINGIFY(MOTIFCL_VERSION_PATCH);
}

const char *mcl_git_commit(void)
{
    return mcl_build_commit;
}

const char *mcl_status_string(mcl_status status)
{
    switch (status) {
    case MCL_SUCCESS: return "success";
    case MCL_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case MCL_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case MCL_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case MCL_ERROR_VULKAN_UNAVAILABLE: return "Vulkan unavailable (no loader or no instance)";
    case MCL_ERROR_NO_DEVICE: return "no suitable Vulkan compute device";
    case MCL_ERROR_DEVICE_LOST: return "device lost";
    case MCL_ERROR_VULKAN: return "Vulkan error";
    case MCL_ERROR_UNSUPPORTED: return "unsupported";
    case MCL_ERROR_SHAPE_MISMATCH: return "shape mismatch";
    case MCL_ERROR_DTYPE_MISMATCH: return "dtype mismatch";
    case MCL_ERROR_TOO_LARGE: return "too large for the device";
    case MCL_ERROR_WRONG_CONTEXT: return "tensor belongs to another context";
    case MCL_ERROR_LAYER_UNAVAILABLE: return "required layer or extension unavailable";
    case MCL_ERROR_IO: return "file could not be opened or read";
    case MCL_ERROR_BAD_FILE: return "malformed file";
    case MCL_ERROR_CONTEXT_BUSY: return "context in use by another thread";
    case MCL_ERROR_CONTEXT_DESTROYED: return "context destroyed";
    }
    return "unknown status";
}

const char *mcl_device_type_name(mcl_device_type type)
{
    switch (type) {
    case MCL_DEVICE_TYPE_DISCRETE: return "discrete";
    case MCL_DEVICE_TYPE_INTEGRATED: return "integrated";
    case MCL_DEVICE_TYPE_VIRTUAL: return "virtual";
    case MCL_DEVICE_TYPE_CPU: return "cpu";
    case MCL_DEVICE_TYPE_OTHER: return "other";
    }
    return "other";
}
