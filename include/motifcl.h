/*
 * motifcl.h - the public interface of MotifCL, a Vulkan compute runtime for small neural
 * networks, written first for legacy AMD GPUs (the RX 580 / Polaris) and correct on any
 * conformant Vulkan 1.2 device.
 *
 * SPDX-License-Identifier: MIT
 *
 * This header is the manual. Conventions that hold for every function unless its comment
 * says otherwise:
 *
 *  - Every fallible function returns an mcl_status; MCL_SUCCESS is 0. mcl_status_string()
 *    names any status. The library never aborts, never exits, and never prints unless a log
 *    callback is installed or the environment variable MOTIFCL_LOG asks it to.
 *  - Handles (mcl_context, mcl_tensor) are opaque. Every create has a destroy, and every
 *    destroy accepts NULL.
 *  - Descriptor structs begin with a `size` field that the caller sets to sizeof the struct
 *    it was compiled with, so that a newer library can read an older caller's struct. Fields
 *    that are 0 take the default documented beside them.
 *  - Sizes and byte offsets are 64-bit.
 *  - Threads: a context and everything created from it are externally synchronised: calls on
 *    one context must not overlap. Different contexts may be used from different threads
 *    at once. mcl_version*(), mcl_status_string() and mcl_dtype_*() may be called from any
 *    thread at any time.
 *  - Execution model: operations are recorded when called and run on the GPU at the next
 *    sync point (mcl_finish(), a download). Their results are visible to downloads, which
 *    are ordered after all work recorded before them.
 *
 * Stability: everything in this header outside the MOTIFCL_EXPERIMENTAL section is stable
 * within a major version: values of enums are pinned and enums only grow at the end.
 */
#ifndef MOTIFCL_H
#define MOTIFCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Version
 * ------------------------------------------------------------------------------------- */

#define MOTIFCL_VERSION_MAJOR 0
#define MOTIFCL_VERSION_MINOR 1
#define MOTIFCL_VERSION_PATCH 0
/** The version as one number: major * 10000 + minor * 100 + patch. */
#define MOTIFCL_VERSION_NUMBER \
    (MOTIFCL_VERSION_MAJOR * 10000 + MOTIFCL_VERSION_MINOR * 100 + MOTIFCL_VERSION_PATCH)

#if defined(_WIN32) && defined(MOTIFCL_SHARED_BUILD)
#define MCL_API __declspec(dllexport)
#elif defined(_WIN32) && defined(MOTIFCL_SHARED)
#define MCL_API __declspec(dllimport)
#elif defined(__GNUC__) || defined(__clang__)
#define MCL_API __attribute__((visibility("default")))
#else
#define MCL_API
#endif

/** The version of the library that is linked, as MOTIFCL_VERSION_NUMBER computes it.
 *  Compare with MOTIFCL_VERSION_NUMBER to detect a header/library mismatch. */
MCL_API unsigned mcl_version(void);

/** The linked library's version as "major.minor.patch". Static storage; never NULL. */
MCL_API const char *mcl_version_string(void);

/** The git commit the library was built from ("<40 hex digits>", with "-dirty" appended
 *  when the tree had uncommitted changes), or "unknown" when built outside a git checkout.
 *  Static storage; never NULL. */
MCL_API const char *mcl_git_commit(void);

/* ---------------------------------------------------------------------------------------
 * Status codes. Values are pinned: new codes are only ever appended.
 * ------------------------------------------------------------------------------------- */

typedef enum mcl_status {
    MCL_SUCCESS = 0,
    /** An argument is NULL where it may not be, out of range, or inconsistent. */
    MCL_ERROR_INVALID_ARGUMENT = 1,
    /** A host allocation (malloc) failed. The object the call worked on is unchanged. */
    MCL_ERROR_OUT_OF_HOST_MEMORY = 2,
    /** Device memory or the memory budget is exhausted. The context stays usable: free
     *  tensors and try again. */
    MCL_ERROR_OUT_OF_DEVICE_MEMORY = 3,
    /** No Vulkan loader (libvulkan) could be loaded, or it offers no Vulkan 1.1+ instance. */
    MCL_ERROR_VULKAN_UNAVAILABLE = 4,
    /** A loader was found but no device fits: none has a compute queue and Vulkan 1.2, or
     *  MOTIFCL_DEVICE / the descriptor named a device that does not exist. */
    MCL_ERROR_NO_DEVICE = 5,
    /** The device was lost (driver reset, hang). The context can only be destroyed. */
    MCL_ERROR_DEVICE_LOST = 6,
    /** A Vulkan call failed in a way no other status describes; the log says which. */
    MCL_ERROR_VULKAN = 7,
    /** The operation, data type or feature is not supported (by the library or the device). */
    MCL_ERROR_UNSUPPORTED = 8,
    /** Tensor shapes do not fit the operation. */
    MCL_ERROR_SHAPE_MISMATCH = 9,
    /** Tensor data types do not fit the operation. */
    MCL_ERROR_DTYPE_MISMATCH = 10,
    /** A size exceeds a device limit (maxStorageBufferRange, maxMemoryAllocationSize, ...)
     *  or the library's addressable range. */
    MCL_ERROR_TOO_LARGE = 11,
    /** A tensor belongs to another context than the one the call uses. */
    MCL_ERROR_WRONG_CONTEXT = 12,
    /** A required layer or extension is missing (for example the validation layer was
     *  requested but is not installed). */
    MCL_ERROR_LAYER_UNAVAILABLE = 13
} mcl_status;

/** A short English name of the status, e.g. "invalid argument". Never NULL: an unknown value
 *  gives "unknown status". Static storage. */
MCL_API const char *mcl_status_string(mcl_status status);

/* ---------------------------------------------------------------------------------------
 * Logging
 * ------------------------------------------------------------------------------------- */

typedef enum mcl_log_level {
    MCL_LOG_ERROR = 0,
    MCL_LOG_WARNING = 1,
    MCL_LOG_INFO = 2,
    MCL_LOG_DEBUG = 3
} mcl_log_level;

/** Receives one message, without a trailing newline. `message` is valid only during the
 *  call. Called on the thread that made the library call. */
typedef void (*mcl_log_fn)(void *user_data, mcl_log_level level, const char *message);

/* ---------------------------------------------------------------------------------------
 * Context: one Vulkan instance, device and compute queue, and everything recorded on it.
 * ------------------------------------------------------------------------------------- */

typedef struct mcl_context mcl_context;

/** Flags for mcl_context_desc.flags. */
enum {
    /** Load VK_LAYER_KHRONOS_validation and count its errors (mcl_context_validation_errors).
     *  Creation fails with MCL_ERROR_LAYER_UNAVAILABLE when the layer is not installed. */
    MCL_CONTEXT_VALIDATION = 1u << 0,
    /** With validation: also enable synchronization validation (missing or wrong barriers). */
    MCL_CONTEXT_VALIDATION_SYNC = 1u << 1,
    /** With validation: also enable GPU-assisted validation (out-of-bounds accesses inside
     *  shaders). Slow. */
    MCL_CONTEXT_VALIDATION_GPU_ASSISTED = 1u << 2,
    /** Ignore the MOTIFCL_VALIDATION, MOTIFCL_DEVICE and MOTIFCL_DEVICE_PROFILE environment
     *  variables: use only what the descriptor says. */
    MCL_CONTEXT_IGNORE_ENVIRONMENT = 1u << 3
};

/** How to create a context. Zero-initialise, set `size = sizeof(mcl_context_desc)`, then set
 *  what you need. */
typedef struct mcl_context_desc {
    /** sizeof(mcl_context_desc) as the caller compiled it. Required. */
    size_t size;
    /** Device to use, by index in the loader's enumeration order. -1 (or any negative value)
     *  means automatic: the MOTIFCL_DEVICE environment variable (an index or a substring of
     *  the device name) if set, otherwise the best device by type: discrete > integrated >
     *  virtual > CPU. Note that 0 selects device 0. */
    int32_t device_index;
    /** If not NULL and device_index is negative: a case-insensitive substring of the device
     *  name to choose. Takes precedence over MOTIFCL_DEVICE. */
    const char *device_name;
    /** MCL_CONTEXT_* flags. 0: no validation unless the environment variable
     *  MOTIFCL_VALIDATION is "1" (validation), "sync" (with synchronization validation) or
     *  "gpu" (with GPU-assisted validation). */
    uint32_t flags;
    /** Device profile to restrict the runtime to: NULL means the MOTIFCL_DEVICE_PROFILE
     *  environment variable, or none. "polaris" masks the features to what an RX 580 has
     *  (no shaderFloat16, no integer dot product). "none" means no restriction. An unknown
     *  name fails creation with MCL_ERROR_INVALID_ARGUMENT. */
    const char *device_profile;
    /** Log callback, or NULL. Receives messages at `log_level` and more severe. When NULL,
     *  messages go to stderr only if MOTIFCL_LOG is set (to error, warning, info or debug). */
    mcl_log_fn log_fn;
    /** Passed to log_fn unchanged. */
    void *log_user_data;
    /** Most verbose level passed to log_fn. 0 (MCL_LOG_ERROR) by default. */
    mcl_log_level log_level;
    /** Reserved for future fields; must be zero. */
    uint64_t reserved[8];
} mcl_context_desc;

/** Create a context. `desc` may be NULL for all defaults. On success `*out` receives the
 *  context, which the caller destroys with mcl_context_destroy(). On failure `*out` is set
 *  to NULL and the status says why: MCL_ERROR_VULKAN_UNAVAILABLE (no loader),
 *  MCL_ERROR_NO_DEVICE (no suitable device), MCL_ERROR_LAYER_UNAVAILABLE,
 *  MCL_ERROR_INVALID_ARGUMENT (bad descriptor or environment value), MCL_ERROR_VULKAN; the
 *  details go to the log callback (or stderr under MOTIFCL_LOG). */
MCL_API mcl_status mcl_context_create(const mcl_context_desc *desc, mcl_context **out);

/** Wait for all recorded work, then destroy the context. Tensors still alive are destroyed
 *  with it (their handles become invalid). Accepts NULL. */
MCL_API void mcl_context_destroy(mcl_context *ctx);

/** Submit all recorded work and wait until the GPU has finished it. */
MCL_API mcl_status mcl_finish(mcl_context *ctx);

/** Number of errors the validation layer has reported on this context so far (0 when
 *  validation is off). Warnings are not counted. */
MCL_API uint64_t mcl_context_validation_errors(const mcl_context *ctx);

/** The message of the most recent failed call on this context, or "" if none. Valid until
 *  the next call on the context. Never NULL for a non-NULL ctx. */
MCL_API const char *mcl_context_last_error(const mcl_context *ctx);

/* ---------------------------------------------------------------------------------------
 * Device information
 * ------------------------------------------------------------------------------------- */

typedef enum mcl_device_type {
    MCL_DEVICE_TYPE_OTHER = 0,
    MCL_DEVICE_TYPE_INTEGRATED = 1,
    MCL_DEVICE_TYPE_DISCRETE = 2,
    MCL_DEVICE_TYPE_VIRTUAL = 3,
    MCL_DEVICE_TYPE_CPU = 4
} mcl_device_type;

/** Optional device capabilities, as bits of mcl_device_info.features_*. */
enum {
    MCL_FEATURE_SUBGROUP_BASIC = 1u << 0,      /**< subgroup basic operations in compute */
    MCL_FEATURE_SUBGROUP_ARITHMETIC = 1u << 1, /**< subgroupAdd and friends in compute */
    MCL_FEATURE_SUBGROUP_SIZE_CONTROL = 1u << 2, /**< a required subgroup size can be set */
    MCL_FEATURE_STORAGE_8BIT = 1u << 3,        /**< 8-bit storage buffer access */
    MCL_FEATURE_STORAGE_16BIT = 1u << 4,       /**< 16-bit storage buffer access */
    MCL_FEATURE_SHADER_FLOAT16 = 1u << 5,      /**< float16 arithmetic in shaders */
    MCL_FEATURE_SHADER_INT8 = 1u << 6,         /**< int8 arithmetic in shaders */
    MCL_FEATURE_INTEGER_DOT_PRODUCT = 1u << 7, /**< VK_KHR_shader_integer_dot_product */
    MCL_FEATURE_INTEGER_DOT_ACCELERATED = 1u << 8, /**< 4x8-bit packed dot is accelerated */
    MCL_FEATURE_MEMORY_BUDGET = 1u << 9,       /**< VK_EXT_memory_budget */
    MCL_FEATURE_MEMORY_PRIORITY = 1u << 10,    /**< VK_EXT_memory_priority */
    MCL_FEATURE_BUFFER_DEVICE_ADDRESS = 1u << 11, /**< bufferDeviceAddress */
    MCL_FEATURE_SHADER_INT64 = 1u << 12,       /**< 64-bit integers in shaders */
    MCL_FEATURE_TIMESTAMPS = 1u << 13,         /**< timestamps on the compute queue */
    MCL_FEATURE_EXTERNAL_HOST_MEMORY = 1u << 14 /**< VK_EXT_external_memory_host: transfers
                                                     read and write caller memory directly */
};

/** Paths the quirk table, the device profile or the environment may disable, as bits of
 *  mcl_device_info.quirks. */
enum {
    MCL_QUIRK_NO_INTEGER_DOT = 1u << 0,        /**< integer dot product path disabled */
    MCL_QUIRK_NO_SUBGROUP_ARITHMETIC = 1u << 1, /**< subgroup reductions disabled */
    MCL_QUIRK_NO_FLOAT16 = 1u << 2,            /**< float16 arithmetic disabled */
    MCL_QUIRK_NO_SUBGROUP_SIZE_CONTROL = 1u << 3 /**< required subgroup size not used */
};

#define MCL_MAX_MEMORY_HEAPS 16
#define MCL_NAME_SIZE 256

/** One memory heap of the device. */
typedef struct mcl_memory_heap {
    uint64_t size;          /**< bytes */
    uint64_t budget;        /**< bytes this process may use (VK_EXT_memory_budget), else size */
    uint64_t usage;         /**< bytes in use by this process per the budget query, else 0 */
    uint32_t device_local;  /**< 1 for a device-local heap */
    uint32_t reserved;
} mcl_memory_heap;

/** What the context's device is and what the runtime chose. Set `size` before the query. */
typedef struct mcl_device_info {
    size_t size;                     /**< sizeof(mcl_device_info) as the caller compiled it */
    char name[MCL_NAME_SIZE];        /**< deviceName */
    char driver_name[MCL_NAME_SIZE]; /**< driverName (VkPhysicalDeviceDriverProperties) */
    char driver_info[MCL_NAME_SIZE]; /**< driverInfo, e.g. "Mesa 22.3.6 (LLVM 15.0.6)" */
    char profile[32];                /**< device profile in force: "none" or "polaris" */
    uint32_t device_index;           /**< index in the loader's enumeration */
    uint32_t vendor_id;              /**< PCI vendor id (0x1002 AMD, 0x10de NVIDIA, ...) */
    uint32_t device_id;
    uint32_t driver_id;              /**< VkDriverId */
    uint32_t driver_version;         /**< raw driverVersion, vendor-specific encoding */
    uint32_t api_version;            /**< the device's Vulkan version (VK_MAKE_API_VERSION) */
    mcl_device_type device_type;
    uint32_t subgroup_size;          /**< default subgroup size */
    uint32_t min_subgroup_size;      /**< with subgroup size control, else = subgroup_size */
    uint32_t max_subgroup_size;
    uint64_t max_storage_buffer_range;
    uint64_t max_memory_allocation_size;
    uint64_t min_storage_buffer_offset_alignment;
    uint32_t max_compute_shared_memory_size;
    uint32_t max_compute_workgroup_invocations;
    uint32_t max_compute_workgroup_size[3];
    uint32_t max_compute_workgroup_count[3];
    float timestamp_period_ns;       /**< nanoseconds per timestamp tick */
    uint32_t timestamp_valid_bits;   /**< 0 when the queue has no timestamps */
    uint64_t features_available;     /**< MCL_FEATURE_* the device offers */
    uint64_t features_enabled;       /**< MCL_FEATURE_* the runtime uses after the profile,
                                          quirks and environment */
    uint64_t quirks;                 /**< MCL_QUIRK_* in force */
    uint32_t memory_heap_count;
    uint32_t validation;             /**< MCL_CONTEXT_VALIDATION* flags in force */
    mcl_memory_heap memory_heaps[MCL_MAX_MEMORY_HEAPS];
    uint64_t reserved[16];
} mcl_device_info;

/** Fill `*info` with the context's device. The caller sets info->size first; the library
 *  writes at most that many bytes. Heap budgets are read at the time of the call. */
MCL_API mcl_status mcl_context_device_info(const mcl_context *ctx, mcl_device_info *info);

/** Name of an MCL_FEATURE_* bit ("subgroup-arithmetic", ...) or NULL if it is not exactly
 *  one known bit. The same names are used by MOTIFCL_DISABLE / MOTIFCL_FORCE. */
MCL_API const char *mcl_feature_name(uint64_t feature_bit);

/** Name of an MCL_QUIRK_* bit or NULL if it is not exactly one known bit. */
MCL_API const char *mcl_quirk_name(uint64_t quirk_bit);

/** Name of a device type ("discrete", "integrated", "virtual", "cpu", "other"). */
MCL_API const char *mcl_device_type_name(mcl_device_type type);

/* ---------------------------------------------------------------------------------------
 * Tensors: up to four dimensions, row-major (the last dimension is contiguous), in device
 * memory owned by the context.
 * ------------------------------------------------------------------------------------- */

typedef struct mcl_tensor mcl_tensor;

typedef enum mcl_dtype {
    MCL_DTYPE_F32 = 0,
    MCL_DTYPE_F16 = 1,
    MCL_DTYPE_I32 = 2,
    MCL_DTYPE_U8 = 3,
    /* Block-quantised types (GGUF layouts); reserved: creating them returns
     * MCL_ERROR_UNSUPPORTED in this version. */
    MCL_DTYPE_Q8_0 = 16,
    MCL_DTYPE_Q4_0 = 17,
    MCL_DTYPE_Q4_K = 18,
    MCL_DTYPE_Q5_K = 19,
    MCL_DTYPE_Q6_K = 20
} mcl_dtype;

#define MCL_MAX_DIMS 4

/** Name of a dtype ("f32", "q4_0", ...) or NULL for an unknown value. */
MCL_API const char *mcl_dtype_name(mcl_dtype dtype);

/** Bytes per element of a non-block dtype (4 for f32), or 0 for block and unknown types. */
MCL_API size_t mcl_dtype_size(mcl_dtype dtype);

/** Create a tensor of `ndim` (1..MCL_MAX_DIMS) dimensions `shape[0..ndim-1]` (each >= 1)
 *  and type `dtype`. Its contents are undefined until written. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (bad shape), MCL_ERROR_UNSUPPORTED (block types),
 *  MCL_ERROR_TOO_LARGE (more bytes than the device can address in one buffer),
 *  MCL_ERROR_OUT_OF_DEVICE_MEMORY. The tensor must be destroyed before its context, or is
 *  destroyed with it. */
MCL_API mcl_status mcl_tensor_create(mcl_context *ctx, mcl_dtype dtype, uint32_t ndim,
                                     const int64_t *shape, mcl_tensor **out);

/** How a tensor's memory is used; decides the pool it comes from and its residency priority
 *  (VK_EXT_memory_priority, where present). */
typedef enum mcl_memory_class {
    /** Activations and other tensors of ordinary lifetime (the default). */
    MCL_MEMORY_ACTIVATIONS = 0,
    /** Weights: long-lived, evicted last under memory pressure. */
    MCL_MEMORY_WEIGHTS = 1,
    /** Scratch: bump-allocated; its memory is reclaimed all at once when the last scratch
     *  tensor is destroyed (cheap to create, but nothing is reused before that). */
    MCL_MEMORY_SCRATCH = 2,
    MCL_MEMORY_CLASS_COUNT
} mcl_memory_class;

/** A tensor to create with mcl_tensor_create_ex(). Zero-initialise, set `size`. */
typedef struct mcl_tensor_desc {
    size_t size;                   /**< sizeof(mcl_tensor_desc). Required. */
    mcl_dtype dtype;
    uint32_t ndim;                 /**< 1..MCL_MAX_DIMS */
    int64_t shape[MCL_MAX_DIMS];   /**< shape[0..ndim-1], each >= 1 */
    mcl_memory_class memory_class; /**< 0: MCL_MEMORY_ACTIVATIONS */
    uint32_t reserved0;
    uint64_t reserved[4];          /**< must be zero */
} mcl_tensor_desc;

/** mcl_tensor_create() with a memory class. Same errors, plus MCL_ERROR_INVALID_ARGUMENT for
 *  a bad descriptor. */
MCL_API mcl_status mcl_tensor_create_ex(mcl_context *ctx, const mcl_tensor_desc *desc,
                                        mcl_tensor **out);

/** Destroy a tensor. Safe while recorded work still uses it: its memory is kept until that
 *  work has finished. Accepts NULL. */
MCL_API void mcl_tensor_destroy(mcl_tensor *tensor);

/** Copy `bytes` bytes from host memory `src` into the tensor at byte `offset`. Ordered after
 *  all work recorded before it and before all work recorded after it. `src` may be reused as
 *  soon as the call returns. Errors: MCL_ERROR_INVALID_ARGUMENT when the range does not lie
 *  inside the tensor or src is NULL. */
MCL_API mcl_status mcl_tensor_upload(mcl_tensor *tensor, uint64_t offset, const void *src,
                                     uint64_t bytes);

/** Copy `bytes` bytes from the tensor at byte `offset` into host memory `dst`. A sync point:
 *  submits recorded work and waits for it, so the data reflects every operation recorded
 *  before the call. */
MCL_API mcl_status mcl_tensor_download(mcl_tensor *tensor, uint64_t offset, void *dst,
                                       uint64_t bytes);

/** The tensor's type. */
MCL_API mcl_dtype mcl_tensor_dtype(const mcl_tensor *tensor);

/** The number of dimensions (1..MCL_MAX_DIMS). */
MCL_API uint32_t mcl_tensor_ndim(const mcl_tensor *tensor);

/** Dimension `axis` (0-based), or 0 if axis >= ndim. */
MCL_API int64_t mcl_tensor_dim(const mcl_tensor *tensor, uint32_t axis);

/** Number of elements (the product of the dimensions). */
MCL_API int64_t mcl_tensor_numel(const mcl_tensor *tensor);

/** Size of the tensor's data in bytes. */
MCL_API uint64_t mcl_tensor_nbytes(const mcl_tensor *tensor);

/* ---------------------------------------------------------------------------------------
 * Memory statistics
 * ------------------------------------------------------------------------------------- */

/** The tensor allocator's state. Set `size` before the query. */
typedef struct mcl_memory_stats {
    size_t size;                     /**< sizeof(mcl_memory_stats) as the caller compiled it */
    uint64_t bytes_allocated;        /**< bytes of live tensors */
    uint64_t bytes_allocated_peak;   /**< the most bytes_allocated has been */
    uint64_t bytes_reserved;         /**< device memory held for tensors (blocks, dedicated) */
    uint64_t staging_bytes;          /**< host-visible staging memory held */
    uint64_t allocation_count;       /**< live tensors' allocations */
    uint64_t block_count;            /**< pooled blocks */
    uint64_t dedicated_count;        /**< tensors with a memory allocation of their own */
    uint64_t block_size;             /**< bytes per pooled block on this device */
    uint64_t largest_free_range;     /**< largest free range inside the pooled blocks */
    uint32_t tensor_memory_type;     /**< Vulkan memory type index of tensors */
    uint32_t staging_memory_type;    /**< memory type of the staging ring */
    uint32_t zero_copy;              /**< 1 when transfers map tensor memory directly */
    uint32_t reserved0;
    uint64_t heap_reserved[MCL_MAX_MEMORY_HEAPS]; /**< device memory held, per heap */
    uint64_t reserved[8];
} mcl_memory_stats;

/** Fill `*stats`; the caller sets stats->size first. */
MCL_API mcl_status mcl_context_memory_stats(const mcl_context *ctx, mcl_memory_stats *stats);

/** The allocator's state as JSON (the statistics plus every block with its ranges), written
 *  snprintf-style into `buffer` of `capacity` bytes (NUL-terminated when capacity > 0;
 *  buffer may be NULL when capacity is 0). `*needed`, if not NULL, receives the full length
 *  including the NUL. Returns MCL_ERROR_TOO_LARGE when the text was truncated. */
MCL_API mcl_status mcl_context_memory_json(const mcl_context *ctx, char *buffer,
                                           size_t capacity, size_t *needed);

/* ---------------------------------------------------------------------------------------
 * Operations. Recorded on the context; they run at the next sync point.
 * ------------------------------------------------------------------------------------- */

/** out = a + b, element-wise, f32. All three tensors have the same shape and belong to
 *  `ctx`; `out` may alias `a` or `b`. Errors: MCL_ERROR_SHAPE_MISMATCH,
 *  MCL_ERROR_DTYPE_MISMATCH, MCL_ERROR_WRONG_CONTEXT. */
MCL_API mcl_status mcl_add(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *b,
                           mcl_tensor *out);

#ifdef __cplusplus
}
#endif

#endif /* MOTIFCL_H */
