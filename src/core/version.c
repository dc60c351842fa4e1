/* Version, status and type names: the parts of the API that need no context. */
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
    }
    return "unknown status";
}

const char *mcl_dtype_name(mcl_dtype dtype)
{
    switch (dtype) {
    case MCL_DTYPE_F32: return "f32";
    case MCL_DTYPE_F16: return "f16";
    case MCL_DTYPE_I32: return "i32";
    case MCL_DTYPE_U8: return "u8";
    case MCL_DTYPE_Q8_0: return "q8_0";
    case MCL_DTYPE_Q4_0: return "q4_0";
    case MCL_DTYPE_Q4_K: return "q4_k";
    case MCL_DTYPE_Q5_K: return "q5_k";
    case MCL_DTYPE_Q6_K: return "q6_k";
    }
    return NULL;
}

size_t mcl_dtype_size(mcl_dtype dtype)
{
    switch (dtype) {
    case MCL_DTYPE_F32: return 4;
    case MCL_DTYPE_F16: return 2;
    case MCL_DTYPE_I32: return 4;
    case MCL_DTYPE_U8: return 1;
    default: return 0;
    }
}

int64_t mcl_dtype_block_weights(mcl_dtype dtype)
{
    switch (dtype) {
    case MCL_DTYPE_Q8_0:
    case MCL_DTYPE_Q4_0: return 32;
    case MCL_DTYPE_Q4_K:
    case MCL_DTYPE_Q5_K:
    case MCL_DTYPE_Q6_K: return 256;
    default: return mcl_dtype_size(dtype) ? 1 : 0;
    }
}

size_t mcl_dtype_block_bytes(mcl_dtype dtype)
{
    switch (dtype) {
    case MCL_DTYPE_Q8_0: return 34;
    case MCL_DTYPE_Q4_0: return 18;
    case MCL_DTYPE_Q4_K: return 144;
    case MCL_DTYPE_Q5_K: return 176;
    case MCL_DTYPE_Q6_K: return 210;
    default: return mcl_dtype_size(dtype);
    }
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
