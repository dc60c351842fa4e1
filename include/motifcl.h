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
 *  - NULL: each function's comment says which of its pointer arguments may be NULL (a line
 *    "NULL: ..."); no other may. A NULL where none is allowed makes a function that returns
 *    an mcl_status return MCL_ERROR_INVALID_ARGUMENT, and a getter return the value its
 *    comment names; it never crashes.
 *  - Descriptor structs begin with a `size` field that the caller sets to sizeof the struct
 *    it was compiled with, so that a newer library can read an older caller's struct. Fields
 *    that are 0 take the default documented beside them ("0 means ..."); where 0 is also a
 *    meaningful value, a flag of the descriptor says that the value is meant as given.
 *  - Sizes and byte offsets are 64-bit.
 *  - Threads: a context and everything created from it are externally synchronised: calls on
 *    one context must not overlap (a context may move between threads between calls).
 *    Where an overlap is seen, the later call returns MCL_ERROR_CONTEXT_BUSY; it is not
 *    seen everywhere, so the rule stands. Different contexts may be used from different
 *    threads at once.
 *  - Lifetimes: mcl_context_destroy() destroys the tensors and graphs made on the context
 *    and frees the device memory of its models, sessions and GPTs. Those three stay valid
 *    as handles: their destroy function must still be called, and any call that needs the
 *    device returns MCL_ERROR_CONTEXT_DESTROYED. mcl_version*(), mcl_git_commit(), mcl_status_string(), the *_name() functions,
 *    mcl_dtype_*(), mcl_quantize() and mcl_dequantize() may be called from any thread at any
 *    time.
 *  - Execution model: operations are recorded when called and run on the GPU at the next
 *    sync point (mcl_finish(), a download). Their results are visible to downloads, which
 *    are ordered after all work recorded before them.
 *
 * Stability: everything in this header outside the MOTIFCL_EXPERIMENTAL section is stable
 * within a major version: no function or type is removed or changed, values of enums are
 * pinned and enums only grow at the end (the ABI gate checks it against abi/).
 *
 * The MOTIFCL_EXPERIMENTAL section, at the end of this header, holds what is not yet
 * committed to: it is declared only where the program asks for it before the include,
 *
 *     #define MOTIFCL_EXPERIMENTAL
 *     #include <motifcl.h>
 *
 * and its functions are exported by the same shared library, but they may change or go away
 * in any release, minor and patch included. A program that uses them should check at run
 * time that it runs with the version it was built against (mcl_version() ==
 * MOTIFCL_VERSION_NUMBER).
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

#define MOTIFCL_VERSION_MAJOR 1
#define MOTIFCL_VERSION_MINOR 0
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
    MCL_ERROR_LAYER_UNAVAILABLE = 13,
    /** A file could not be opened or read (missing, unreadable, a directory); the message
     *  names it and the system's reason. */
    MCL_ERROR_IO = 14,
    /** A file's contents are malformed (a count, length or offset past its end, an
     *  inconsistent field); the message names the field. Nothing was read out of bounds. */
    MCL_ERROR_BAD_FILE = 15,
    /** Another thread is inside a call on the same context (calls on one context must not
     *  overlap). Nothing was done; the other call is unaffected. Detected where a call
     *  records, submits, waits or creates device objects, not everywhere. */
    MCL_ERROR_CONTEXT_BUSY = 16,
    /** The object's context was destroyed: the object now only accepts its destroy function
     *  (and the queries that need no device). */
    MCL_ERROR_CONTEXT_DESTROYED = 17
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
     *  variables: use only what the descriptor says. (MOTIFCL_PIPELINE_CACHE is ignored too;
     *  the pipeline cache still lives in the user's cache folder unless
     *  MCL_CONTEXT_NO_PIPELINE_CACHE says otherwise.) */
    MCL_CONTEXT_IGNORE_ENVIRONMENT = 1u << 3,
    /** Keep no persistent pipeline cache: read no cache file at creation, write none at
     *  destruction. Without this flag, the pipelines the driver compiled are kept in a file
     *  per device (vendor, device, pipelineCacheUUID) in $MOTIFCL_PIPELINE_CACHE, else
     *  $XDG_CACHE_HOME/motifcl, else $HOME/.cache/motifcl (folders created with mode 0700;
     *  no cache when neither variable is set). A file that is truncated, corrupt or from
     *  another device or driver version is ignored with a warning; failing to read or write
     *  one is a warning, never an error. Contexts in several processes may share the folder:
     *  each writes its file whole under a temporary name and renames it into place, so the
     *  last writer wins and no reader sees half a file. */
    MCL_CONTEXT_NO_PIPELINE_CACHE = 1u << 4
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

/** Create a context. On success `*out` receives the context, which the caller destroys with
 *  mcl_context_destroy(). On failure `*out` is set to NULL and the status says why:
 *  MCL_ERROR_VULKAN_UNAVAILABLE (no loader), MCL_ERROR_NO_DEVICE (no suitable device),
 *  MCL_ERROR_LAYER_UNAVAILABLE, MCL_ERROR_INVALID_ARGUMENT (bad descriptor or environment
 *  value), MCL_ERROR_VULKAN; the details go to the log callback (or stderr under
 *  MOTIFCL_LOG).
 *  NULL: desc may be (all defaults); out may not. */
MCL_API mcl_status mcl_context_create(const mcl_context_desc *desc, mcl_context **out);

/** Wait for all recorded work, then destroy the context. Tensors, graphs and host memory
 *  still alive are destroyed with it (their handles become invalid).
 *  NULL: ctx may be (nothing happens). */
MCL_API void mcl_context_destroy(mcl_context *ctx);

/** Submit all recorded work and wait until the GPU has finished it. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (during a graph capture), MCL_ERROR_DEVICE_LOST,
 *  MCL_ERROR_VULKAN.
 *  NULL: ctx may not be. */
MCL_API mcl_status mcl_finish(mcl_context *ctx);

/** Number of errors the validation layer has reported on this context so far (0 when
 *  validation is off). Warnings are not counted.
 *  NULL: ctx may not be (a NULL ctx gives 0). */
MCL_API uint64_t mcl_context_validation_errors(const mcl_context *ctx);

/** The message of the most recent failed call on this context, or "" if none. Owned by the
 *  context; valid until the next call on it. Never NULL.
 *  NULL: ctx may not be (a NULL ctx gives ""). */
MCL_API const char *mcl_context_last_error(const mcl_context *ctx);

/** 1 when the context has lost its device, else 0. A context is lost when Vulkan reports
 *  VK_ERROR_DEVICE_LOST (a driver reset, a hang the driver caught) or when a wait for the
 *  GPU takes longer than the fence timeout: 60 s, or MOTIFCL_FENCE_TIMEOUT_MS milliseconds
 *  (1 to 10^12) when the environment sets it. From then on every call that submits work or
 *  waits for it (ops, transfers, mcl_finish, replays) fails with MCL_ERROR_DEVICE_LOST, whose
 *  message says which of the two happened; the context can only be destroyed, which waits
 *  for the device to be idle (after a timeout that is as long as the GPU still runs: a
 *  driver that resets a hung GPU ends it), and a new context can be created.
 *  NULL: ctx may not be (a NULL ctx gives 0). */
MCL_API int mcl_context_is_lost(const mcl_context *ctx);

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
    MCL_FEATURE_EXTERNAL_HOST_MEMORY = 1u << 14, /**< VK_EXT_external_memory_host: transfers
                                                      read and write caller memory directly */
    MCL_FEATURE_COOPERATIVE_MATRIX = 1u << 15   /**< VK_NV_cooperative_matrix: subgroups of 32
                                                     multiply 16 x 16 f16 matrices into f32 */
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
 *  writes at most that many bytes. Heap budgets are read at the time of the call. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (info->size too small).
 *  NULL: neither ctx nor info may be. */
MCL_API mcl_status mcl_context_device_info(const mcl_context *ctx, mcl_device_info *info);

/** Name of an MCL_FEATURE_* bit ("subgroup-arithmetic", ...) or NULL if it is not exactly
 *  one known bit. The same names are used by MOTIFCL_DISABLE / MOTIFCL_FORCE. Static
 *  storage. */
MCL_API const char *mcl_feature_name(uint64_t feature_bit);

/** Name of an MCL_QUIRK_* bit or NULL if it is not exactly one known bit. Static storage. */
MCL_API const char *mcl_quirk_name(uint64_t quirk_bit);

/** Name of a device type ("discrete", "integrated", "virtual", "cpu", "other"; an unknown
 *  value gives "other"). Static storage; never NULL. */
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
    /* Block-quantised types, byte for byte GGUF's layouts (docs/quant-formats.md). A tensor of
     * these types has its last dimension a multiple of the block's weight count (32 for
     * Q8_0 and Q4_0, 256 for the K types); its bytes are a GGUF tensor's, rows of blocks, and
     * upload and download as such, in any byte range. (On the device, Q8_0, Q4_0 and Q6_K
     * keep each block's fp16 scale apart from its codes; the transfers convert.) */
    MCL_DTYPE_Q8_0 = 16,
    MCL_DTYPE_Q4_0 = 17,
    MCL_DTYPE_Q4_K = 18,
    MCL_DTYPE_Q5_K = 19,
    MCL_DTYPE_Q6_K = 20
} mcl_dtype;

#define MCL_MAX_DIMS 4

/** Name of a dtype ("f32", "q4_0", ...) or NULL for an unknown value. Static storage. */
MCL_API const char *mcl_dtype_name(mcl_dtype dtype);

/** Bytes per element of a non-block dtype (4 for f32), or 0 for block and unknown types. */
MCL_API size_t mcl_dtype_size(mcl_dtype dtype);

/** Weights per block: 32 for Q8_0 and Q4_0, 256 for Q4_K, Q5_K and Q6_K, 1 for the plain
 *  types, 0 for unknown values. */
MCL_API int64_t mcl_dtype_block_weights(mcl_dtype dtype);

/** Bytes per block (34 for Q8_0, 18 for Q4_0, 144 / 176 / 210 for Q4_K / Q5_K / Q6_K; the
 *  element size for plain types; 0 for unknown values). */
MCL_API size_t mcl_dtype_block_bytes(mcl_dtype dtype);

/** Quantize n floats (a multiple of the block's weight count) into blocks of `dtype` on the
 *  host, as a GGUF writer would lay them out (Q8_0 and Q4_0 byte for byte as ggml's reference
 *  quantizer; the K types by a simpler min-max method in the same format). `blocks` receives
 *  n / mcl_dtype_block_weights(dtype) * mcl_dtype_block_bytes(dtype) bytes; on an error
 *  nothing is written. Needs no context; may be called from any thread. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (NULL, n negative or not a multiple, non-finite input or one
 *  whose scale would overflow fp16), MCL_ERROR_UNSUPPORTED (not a block type).
 *  NULL: x and blocks only when n is 0. */
MCL_API mcl_status mcl_quantize(mcl_dtype dtype, const float *x, void *blocks, int64_t n);

/** Dequantize n weights of `dtype` blocks on the host (the reference the GPU matches) into
 *  y[0..n). Any bytes are accepted (a block whose scale is inf or NaN gives inf or NaN).
 *  Needs no context; may be called from any thread. Errors: MCL_ERROR_INVALID_ARGUMENT (NULL,
 *  n negative or not a multiple of the block's weight count), MCL_ERROR_UNSUPPORTED (not a
 *  block type).
 *  NULL: blocks and y only when n is 0. */
MCL_API mcl_status mcl_dequantize(mcl_dtype dtype, const void *blocks, float *y, int64_t n);

/** Create a tensor of `ndim` (1..MCL_MAX_DIMS) dimensions `shape[0..ndim-1]` (each >= 1)
 *  and type `dtype`. Its contents are undefined until written. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (bad shape, or a block type whose last dimension is not a
 *  multiple of its block's weight count),
 *  MCL_ERROR_TOO_LARGE (more bytes than the device can address in one buffer binding,
 *  maxStorageBufferRange; a block-quantised tensor may be larger, see mcl_matmul and
 *  mcl_embedding),
 *  MCL_ERROR_OUT_OF_DEVICE_MEMORY. On failure `*out` is set to NULL. The caller owns the
 *  tensor: it is destroyed with mcl_tensor_destroy() before its context, or with it (the
 *  handle is then gone: it must not be used or destroyed again).
 *  NULL: none of ctx, shape and out may be. */
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

/** mcl_tensor_create() with a memory class. Same errors and ownership, plus
 *  MCL_ERROR_INVALID_ARGUMENT for a bad descriptor.
 *  NULL: none of ctx, desc and out may be. */
MCL_API mcl_status mcl_tensor_create_ex(mcl_context *ctx, const mcl_tensor_desc *desc,
                                        mcl_tensor **out);

/** Destroy a tensor. Safe while recorded work or a graph still uses it: its memory is kept
 *  until that work has finished (or the graph is destroyed).
 *  NULL: tensor may be (nothing happens). */
MCL_API void mcl_tensor_destroy(mcl_tensor *tensor);

/** Copy `bytes` bytes from host memory `src` into the tensor at byte `offset`. Ordered after
 *  all work recorded before it and before all work recorded after it. `src` may be reused as
 *  soon as the call returns. Errors: MCL_ERROR_INVALID_ARGUMENT when bytes is 0, the range
 *  does not lie inside the tensor, or during a graph capture.
 *  NULL: neither tensor nor src may be. */
MCL_API mcl_status mcl_tensor_upload(mcl_tensor *tensor, uint64_t offset, const void *src,
                                     uint64_t bytes);

/** Copy `bytes` bytes from the tensor at byte `offset` into host memory `dst`. A sync point:
 *  submits recorded work and waits for it, so the data reflects every operation recorded
 *  before the call. Errors as mcl_tensor_upload(), plus those of mcl_finish().
 *  NULL: neither tensor nor dst may be. */
MCL_API mcl_status mcl_tensor_download(mcl_tensor *tensor, uint64_t offset, void *dst,
                                       uint64_t bytes);

/** Allocate `bytes` of pinned host memory that the device reads and writes directly. Uploads
 *  from it and downloads into it run at the bus's speed with no CPU copy (ordinary memory
 *  costs a memcpy through a staging buffer, or page pinning, which is several times slower
 *  on large transfers). `*out` receives a pointer aligned to 256 bytes; free it with
 *  mcl_host_free() before the context is destroyed (or the context frees it). Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (bytes 0), MCL_ERROR_OUT_OF_DEVICE_MEMORY (the host-visible heap
 *  or its budget is exhausted). On failure `*out` is set to NULL.
 *  NULL: neither ctx nor out may be. */
MCL_API mcl_status mcl_host_alloc(mcl_context *ctx, uint64_t bytes, void **out);

/** Free memory from mcl_host_alloc(). Waits for transfers that use it. A pointer that did
 *  not come from mcl_host_alloc() on ctx is ignored.
 *  NULL: ctx and ptr may be (nothing happens). */
MCL_API void mcl_host_free(mcl_context *ctx, void *ptr);

/** The tensor's type.
 *  NULL: tensor may not be (a NULL tensor gives MCL_DTYPE_F32, which then means nothing). */
MCL_API mcl_dtype mcl_tensor_dtype(const mcl_tensor *tensor);

/** The number of dimensions (1..MCL_MAX_DIMS).
 *  NULL: tensor may not be (a NULL tensor gives 0). */
MCL_API uint32_t mcl_tensor_ndim(const mcl_tensor *tensor);

/** Dimension `axis` (0-based), or 0 if axis >= ndim.
 *  NULL: tensor may not be (a NULL tensor gives 0). */
MCL_API int64_t mcl_tensor_dim(const mcl_tensor *tensor, uint32_t axis);

/** Number of elements (the product of the dimensions).
 *  NULL: tensor may not be (a NULL tensor gives 0). */
MCL_API int64_t mcl_tensor_numel(const mcl_tensor *tensor);

/** Size of the tensor's data in bytes.
 *  NULL: tensor may not be (a NULL tensor gives 0). */
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
    uint64_t block_size;             /**< bytes per pooled block on this device (a block made
                                          when the budget had no room for one may be smaller) */
    uint64_t largest_free_range;     /**< largest free range inside the pooled blocks */
    uint32_t tensor_memory_type;     /**< Vulkan memory type index of tensors */
    uint32_t staging_memory_type;    /**< memory type of the staging ring */
    uint32_t zero_copy;              /**< 1 when transfers map tensor memory directly */
    uint32_t reserved0;
    uint64_t heap_reserved[MCL_MAX_MEMORY_HEAPS]; /**< device memory held, per heap */
    uint64_t reserved[8];
} mcl_memory_stats;

/** Fill `*stats`; the caller sets stats->size first. Errors: MCL_ERROR_INVALID_ARGUMENT
 *  (stats->size too small).
 *  NULL: neither ctx nor stats may be. */
MCL_API mcl_status mcl_context_memory_stats(const mcl_context *ctx, mcl_memory_stats *stats);

/** The allocator's state as JSON (the statistics plus every block with its ranges), written
 *  snprintf-style into `buffer` of `capacity` bytes (NUL-terminated when capacity > 0).
 *  `*needed`, if not NULL, receives the full length including the NUL. Returns
 *  MCL_ERROR_TOO_LARGE when the text was truncated. The call and its snprintf contract are
 *  stable; the JSON's members are for people and tools to read and may gain, lose or rename
 *  members in any release.
 *  NULL: buffer may be when capacity is 0 (a size query), needed may be; ctx may not. */
MCL_API mcl_status mcl_context_memory_json(const mcl_context *ctx, char *buffer,
                                           size_t capacity, size_t *needed);

/** The context's device traits as JSON: what it decided at creation from the device, the
 *  quirk table, the device profile and the environment (the paths it takes, its limits, the
 *  tuning overrides in force). Written as mcl_context_memory_json() writes, with the same
 *  statuses; the call is stable, the JSON's members may change in any release.
 *  NULL: buffer may be when capacity is 0 (a size query), needed may be; ctx may not. */
MCL_API mcl_status mcl_context_traits_json(const mcl_context *ctx, char *buffer,
                                           size_t capacity, size_t *needed);

/* ---------------------------------------------------------------------------------------
 * Operations. Recorded on the context; they run at the next sync point.
 * ------------------------------------------------------------------------------------- */

/* Conventions for every operation below, unless its comment says otherwise:
 *  - ctx and the tensors are not NULL (MCL_ERROR_INVALID_ARGUMENT); the tensors that may be
 *    are named in the comment's "NULL:" line;
 *  - tensors are f32 and belong to `ctx` (MCL_ERROR_DTYPE_MISMATCH, MCL_ERROR_WRONG_CONTEXT);
 *  - "rows" are the last dimension; a tensor of shape [..., D] has numel / D rows;
 *  - outputs are created by the caller with the documented shape (MCL_ERROR_SHAPE_MISMATCH
 *    otherwise) and must not alias inputs unless the comment allows it;
 *  - the call records work and returns; results are visible to the next download;
 *  - an unknown enum value (op, activation, layout) is MCL_ERROR_INVALID_ARGUMENT, and more
 *    than 2^32 - 1 elements in one operand is MCL_ERROR_TOO_LARGE. */

/* --- Element-wise -------------------------------------------------------------------- */

typedef enum mcl_binary_op {
    MCL_BINARY_ADD = 0,
    MCL_BINARY_SUB = 1,
    MCL_BINARY_MUL = 2,
    MCL_BINARY_DIV = 3
} mcl_binary_op;

/** out = a (op) b, element-wise. `out` has a's shape; b broadcasts to it: aligned from the
 *  last dimension, each of b's dimensions equals a's or is 1, and b may have fewer
 *  dimensions (so a [T, D] plus a bias [D] adds the bias to every row). `out` may alias a or
 *  b.
 *  NULL: none of ctx, a, b and out may be. */
MCL_API mcl_status mcl_binary(mcl_context *ctx, mcl_binary_op op, const mcl_tensor *a,
                              const mcl_tensor *b, mcl_tensor *out);

/** out = a + b with mcl_binary()'s broadcasting. Errors: MCL_ERROR_SHAPE_MISMATCH (b does not
 *  broadcast to a, or out's shape is not a's), MCL_ERROR_DTYPE_MISMATCH,
 *  MCL_ERROR_WRONG_CONTEXT, MCL_ERROR_INVALID_ARGUMENT (NULL).
 *  NULL: none of ctx, a, b and out may be. */
MCL_API mcl_status mcl_add(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *b,
                           mcl_tensor *out);

/** out = alpha * x + beta, element-wise; `out` may alias x.
 *  NULL: none of ctx, x and out may be. */
MCL_API mcl_status mcl_scale(mcl_context *ctx, const mcl_tensor *x, float alpha, float beta,
                             mcl_tensor *out);

typedef enum mcl_activation {
    MCL_ACTIVATION_RELU = 0,
    MCL_ACTIVATION_GELU = 1, /**< tanh approximation: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) */
    MCL_ACTIVATION_SILU = 2  /**< x * sigmoid(x) */
} mcl_activation;

/** out = act(x), element-wise; `out` may alias x.
 *  NULL: none of ctx, x and out may be. */
MCL_API mcl_status mcl_activate(mcl_context *ctx, mcl_activation act, const mcl_tensor *x,
                                mcl_tensor *out);

/** out = silu(gate) * up, element-wise (the SwiGLU MLP's gating); all three the same shape;
 *  `out` may alias gate or up.
 *  NULL: none of ctx, gate, up and out may be. */
MCL_API mcl_status mcl_swiglu(mcl_context *ctx, const mcl_tensor *gate, const mcl_tensor *up,
                              mcl_tensor *out);

/* --- Row operations ------------------------------------------------------------------ */

/** out = softmax(scale * x) over each row. With `causal`, x is viewed as [..., Tq, Tk] (a
 *  1-D x counts as Tq = 1) and element j of query row i is masked (excluded, output 0) when
 *  j > i + (Tk - Tq), so the last query attends to every key. A row with nothing visible
 *  (Tq > Tk) or whose visible inputs are all -inf comes out as zeros, not NaN. `out` has x's
 *  shape and may alias it.
 *  NULL: none of ctx, x and out may be. */
MCL_API mcl_status mcl_softmax(mcl_context *ctx, const mcl_tensor *x, float scale, int causal,
                               mcl_tensor *out);

typedef enum mcl_reduce_op {
    MCL_REDUCE_SUM = 0,
    MCL_REDUCE_MEAN = 1,
    MCL_REDUCE_MAX = 2
} mcl_reduce_op;

/** out[r] = reduce(x[r, :]) per row. `out` has x's shape without its last dimension (a 1-D x
 *  gives out of shape [1]) and must not alias x.
 *  NULL: none of ctx, x and out may be. */
MCL_API mcl_status mcl_reduce_rows(mcl_context *ctx, mcl_reduce_op op, const mcl_tensor *x,
                                   mcl_tensor *out);

/** out = x / sqrt(mean(x^2) + eps) * weight per row; weight is 1-D [D]. `out` has x's shape
 *  and may alias x, not weight.
 *  NULL: weight may be (ones); ctx, x and out may not. */
MCL_API mcl_status mcl_rmsnorm(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                               float eps, mcl_tensor *out);

/** out = (x - mean) / sqrt(var + eps) * weight + bias per row (biased variance); weight and
 *  bias are 1-D [D]. `out` has x's shape and may alias x, not weight or bias.
 *  NULL: weight (ones) and bias (zeros) may be; ctx, x and out may not. */
MCL_API mcl_status mcl_layernorm(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                                 const mcl_tensor *bias, float eps, mcl_tensor *out);

/* --- Matrix products ----------------------------------------------------------------- */

typedef enum mcl_transpose {
    MCL_NO_TRANSPOSE = 0,
    MCL_TRANSPOSE = 1
} mcl_transpose;

/** c = op(a) . op(b) (+ bias), f32, where op(a) is [..., M, K] and op(b) is [..., K, N]:
 *  a is stored [..., M, K] (or [..., K, M] with ta = MCL_TRANSPOSE), b [..., K, N] (or
 *  [..., N, K] with tb = MCL_TRANSPOSE: the usual [out, in] weight layout, y = x W^T).
 *  Leading dimensions are batch dimensions: c and a share them; b either shares them or is
 *  2-D and applies to every batch. bias is [N]. c is [..., M, N] and must not alias a, b or
 *  bias. Both transposed (TT) is MCL_ERROR_UNSUPPORTED. Small M (decode: 1 to 8 rows) takes a
 *  matrix-vector path. b may also be block-quantised: see below.
 *  NULL: bias may be (no bias); ctx, a, b and c may not. */
MCL_API mcl_status mcl_matmul(mcl_context *ctx, const mcl_tensor *a, mcl_transpose ta,
                              const mcl_tensor *b, mcl_transpose tb, const mcl_tensor *bias,
                              mcl_tensor *c);

/* b of a block-quantised type (a weight matrix as stored in a GGUF file) is accepted by
 * mcl_matmul() as the 2-D [N, K] operand with tb = MCL_TRANSPOSE and a not transposed
 * (otherwise MCL_ERROR_UNSUPPORTED): c = a W^T, a f32 [..., M, K] whose batch dimensions fold
 * into rows, K matching (else MCL_ERROR_SHAPE_MISMATCH). Three paths:
 *  - float: W is dequantized in the shader; the result equals an f32 matmul with
 *    mcl_dequantize()'d weights up to the order of summation. Every device runs it, and it is
 *    the only path under the polaris profile;
 *  - integer dot (where the device's packed 8-bit dot product is accelerated and no quirk
 *    disables it; every format up to 8 rows of a, Q8_0 and Q4_0 beyond where the matrix
 *    path does not run, the K types' larger products taking the float path): a is quantized
 *    on the GPU to 8 bits per 32 values (about 0.4% RMS error on the activations), so
 *    results differ slightly between devices and paths;
 *  - matrix (more than 8 rows of a, every format, where the device has cooperative matrices:
 *    MCL_FEATURE_COOPERATIVE_MATRIX): a and the dequantized W are rounded to f16 (2^-11
 *    relative; an element of a beyond 65504 in magnitude becomes infinite) and multiplied on
 *    the device's matrix units, accumulating in f32.
 * MOTIFCL_QUANT_PATH=float|dot or MOTIFCL_DISABLE (integer-dot, cooperative-matrix) /
 * MOTIFCL_FORCE=integer-dot choose.
 * A weight larger than one storage-buffer binding (maxStorageBufferRange) is multiplied in
 * row ranges, each bound at its own offset; mcl_embedding reads a table that large the same
 * way, and every other operation refuses a tensor that large (MCL_ERROR_TOO_LARGE),
 * mcl_dequantize_tensor included. */

/** out = the f32 values of the block-quantised tensor q (same shape), bit-identical to
 *  mcl_dequantize() (NaN payloads aside). Errors: MCL_ERROR_DTYPE_MISMATCH (q not a block type
 *  or out not f32), MCL_ERROR_SHAPE_MISMATCH.
 *  NULL: none of ctx, q and out may be. */
MCL_API mcl_status mcl_dequantize_tensor(mcl_context *ctx, const mcl_tensor *q, mcl_tensor *out);

/* --- Layout -------------------------------------------------------------------------- */

typedef enum mcl_rope_layout {
    /** Pairs are adjacent elements (2i, 2i+1) of each head (GPT-J, the original llama). */
    MCL_ROPE_INTERLEAVED = 0,
    /** Pairs are (i, i + D/2): the first and second half of each head (GPT-NeoX, HF llama). */
    MCL_ROPE_SPLIT_HALF = 1
} mcl_rope_layout;

/** Rotary position embedding. x is [B, T, H, Dh] with Dh even and at most 512; position of
 *  token t is position_offset + t (the KV cache's length during decode), in [0, 2^24); pair
 *  i of a head rotates by angle position * theta_base^(-2i/Dh), reduced to [-pi, pi] in
 *  double-float (pairs of f32) before the device's f32 sin/cos. The angle is within about
 *  5e-7 rad of the exact one at any position (an f32 position times an f32 frequency is off
 *  by up to about 0.01 rad near 2^17) and, for theta_base up to 1e13, has the same bits on
 *  every device. `out` has x's shape and may alias it.
 *  NULL: none of ctx, x and out may be. */
MCL_API mcl_status mcl_rope(mcl_context *ctx, const mcl_tensor *x, mcl_rope_layout layout,
                            float theta_base, int64_t position_offset, mcl_tensor *out);

/** out[..., :] = table[ids[...], :]. table is [V, D] f32, ids is i32 of up to 3 dimensions,
 *  out is ids' shape plus [D] (f32). An id outside [0, V) yields a row of zeros (never a read
 *  out of bounds).
 *  table may also be of a block type (MCL_DTYPE_Q8_0, Q4_0, Q4_K, Q5_K, Q6_K; a GGUF
 *  token_embd.weight as stored), D a multiple of the block's weight count: each row is
 *  dequantized on the device, bit-identical to mcl_dequantize() of that row (NaN payloads
 *  aside). Such a table may be larger than one storage-buffer binding (it is then read in
 *  row ranges, one dispatch each).
 *  Errors: MCL_ERROR_DTYPE_MISMATCH (table neither f32 nor a block type, out not f32, ids not
 *  i32), MCL_ERROR_SHAPE_MISMATCH (table not 2-D, out not ids' shape plus [D], a block
 *  table's D not a multiple of its block), MCL_ERROR_TOO_LARGE (out, or an f32 table, of
 *  more than 2^32-1 elements; a block table whose rows one binding cannot hold at offsets
 *  the device can bind).
 *  NULL: none of ctx, table, ids and out may be. */
MCL_API mcl_status mcl_embedding(mcl_context *ctx, const mcl_tensor *table,
                                 const mcl_tensor *ids, mcl_tensor *out);

/** dst = src, bit for bit, for tensors of the same number of elements and element size
 *  (shapes and dtypes may differ: a reshape or a reinterpretation; a block-quantised tensor
 *  copies only to one of its own type, else MCL_ERROR_DTYPE_MISMATCH) whose byte count is a
 *  multiple of 4 (else MCL_ERROR_UNSUPPORTED). src == dst does nothing.
 *  NULL: none of ctx, src and dst may be. */
MCL_API mcl_status mcl_copy(mcl_context *ctx, const mcl_tensor *src, mcl_tensor *dst);

/** dst = src with its axes permuted: dst dimension i is src dimension perm[i], for the
 *  first ndim entries of perm (a permutation of 0..ndim-1). Any 4-byte dtype; dst must not
 *  alias src.
 *  NULL: none of ctx, src, perm and dst may be. */
MCL_API mcl_status mcl_permute(mcl_context *ctx, const mcl_tensor *src, const uint32_t *perm,
                               mcl_tensor *dst);

/** out = a and b joined along `axis`; all other dimensions equal. Any 4-byte dtype; out must
 *  not alias a or b.
 *  NULL: none of ctx, a, b and out may be. */
MCL_API mcl_status mcl_concat(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *b,
                              uint32_t axis, mcl_tensor *out);

/* --- Attention ----------------------------------------------------------------------- */

/** Options of mcl_attention(). Zero-initialise, set `size`. */
typedef struct mcl_attention_desc {
    size_t size;         /**< sizeof(mcl_attention_desc). Required. */
    float scale;         /**< score scale; 0 means 1/sqrt(D) */
    int32_t causal;      /**< 1: query t sees keys up to t + (kv_length - T) */
    int64_t kv_length;   /**< keys in use (a KV cache's fill); 0 means all S */
    uint64_t reserved[4];
} mcl_attention_desc;

/** Multi-head attention, out = softmax(scale q k^T [+ causal mask]) v per head, computed in
 *  tiles without materialising the T x S score matrix. q is [B, T, Hq, D]; k and v are
 *  [B, S, Hkv, D] with Hq a multiple of Hkv; only the first kv_length positions of k and v
 *  are read. out is [B, T, Hq, D] and must not alias q, k or v. D is at most 256 (else
 *  MCL_ERROR_UNSUPPORTED). A query that sees no key (causal with T > kv_length) gets zeros.
 *  kv_length outside [0, S] or a non-finite scale is MCL_ERROR_INVALID_ARGUMENT. T = 1
 *  against a long cache (decode) takes a path split over the keys.
 *  Grouped-query heads: with G = Hq / Hkv, query head h attends with kv head h / G (integer
 *  division), so consecutive query heads share a kv head: heads 0..G-1 use kv head 0, heads
 *  G..2G-1 kv head 1, and so on (the llama / HF repeat_kv order, not h % Hkv). Hkv = Hq is
 *  ordinary multi-head attention, Hkv = 1 multi-query.
 *  NULL: desc may be (defaults); ctx, q, k, v and out may not. */
MCL_API mcl_status mcl_attention(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                                 const mcl_tensor *v, const mcl_attention_desc *desc,
                                 mcl_tensor *out);

/** Gradients of mcl_attention() for q, k and v, given its inputs, its output `out` and the
 *  gradient `dout` of out (out's shape), with the same desc. The softmax is recomputed in
 *  tiles from q and k (no T x S matrix is stored); dk and dv of kv head j sum the
 *  contributions of the query heads that share it, j * G .. j * G + G - 1 (G = Hq / Hkv, the
 *  forward's mapping), in a fixed order without float atomics, so the same inputs give the
 *  same bits. dq has q's shape, dk and dv have k's; they are overwritten (positions past
 *  kv_length get zeros) and must not alias any input or each other. The same limits as the
 *  forward (D at most 256).
 *  NULL: desc may be (defaults); no tensor and not ctx. */
MCL_API mcl_status mcl_attention_backward(mcl_context *ctx, const mcl_tensor *q,
                                          const mcl_tensor *k, const mcl_tensor *v,
                                          const mcl_tensor *out, const mcl_tensor *dout,
                                          const mcl_attention_desc *desc, mcl_tensor *dq,
                                          mcl_tensor *dk, mcl_tensor *dv);

/* --- Loss ---------------------------------------------------------------------------- */

/** Softmax cross-entropy: loss[0] = mean, over the rows r whose target lies in [0, V), of
 *  logsumexp(logits[r]) - logits[r, targets[r]]. logits is [N, V] f32, targets [N] i32 (a
 *  target outside [0, V), such as -1 for padding, excludes its row), loss [1] (0 when every
 *  row is excluded). lse is [N] and receives each row's logsumexp, which the backward pass
 *  needs. loss and lse must not alias logits.
 *  NULL: lse may be (not computed); ctx, logits, targets and loss may not. */
MCL_API mcl_status mcl_cross_entropy(mcl_context *ctx, const mcl_tensor *logits,
                                     const mcl_tensor *targets, mcl_tensor *loss,
                                     mcl_tensor *lse);

/* ---------------------------------------------------------------------------------------
 * Backward passes (training). Gradients are f32 and have the shape of what they are the
 * gradient of. Unless a comment says otherwise an output gradient is overwritten, not
 * accumulated, and reductions over rows are deterministic (no float atomics): the same inputs
 * give the same bits on the same device.
 * ------------------------------------------------------------------------------------- */

/** dx = dy * act'(x), element-wise (GELU in the tanh form of mcl_activate). dx may alias dy,
 *  not x.
 *  NULL: none of ctx, x, dy and dx may be. */
MCL_API mcl_status mcl_activate_backward(mcl_context *ctx, mcl_activation act,
                                         const mcl_tensor *x, const mcl_tensor *dy,
                                         mcl_tensor *dx);

/** Gradients of out = silu(gate) * up: dgate = dy * up * silu'(gate), dup = dy * silu(gate).
 *  All five tensors have one shape; dgate and dup are distinct and must not alias the
 *  inputs.
 *  NULL: none of ctx, gate, up, dy, dgate and dup may be. */
MCL_API mcl_status mcl_swiglu_backward(mcl_context *ctx, const mcl_tensor *gate,
                                       const mcl_tensor *up, const mcl_tensor *dy,
                                       mcl_tensor *dgate, mcl_tensor *dup);

/** Gradient of y = softmax(scale * x) per row, from its output y: dx = scale * y * (dy -
 *  sum(dy * y)). Masked (causal) positions have y = 0 and get dx = 0. dx may alias dy, not y.
 *  NULL: none of ctx, y, dy and dx may be. */
MCL_API mcl_status mcl_softmax_backward(mcl_context *ctx, const mcl_tensor *y,
                                        const mcl_tensor *dy, float scale, mcl_tensor *dx);

/** Gradients of mcl_rmsnorm: dx (x's shape) and dweight [D] (the sum over rows,
 *  overwritten). dx may alias x or dy; no output may alias weight, and dweight no other
 *  tensor. dweight takes rows x D floats of scratch memory while it is computed.
 *  NULL: weight may be (ones, as in the forward), and dweight (not computed); ctx, x, dy
 *  and dx may not. */
MCL_API mcl_status mcl_rmsnorm_backward(mcl_context *ctx, const mcl_tensor *x,
                                        const mcl_tensor *weight, const mcl_tensor *dy, float eps,
                                        mcl_tensor *dx, mcl_tensor *dweight);

/** Gradients of mcl_layernorm: dx, dweight [D] and dbias [D] (sums over rows, overwritten),
 *  with mcl_rmsnorm_backward's aliasing rules and scratch memory.
 *  NULL: weight may be (ones, as in the forward), and dweight and dbias (not computed);
 *  ctx, x, dy and dx may not. */
MCL_API mcl_status mcl_layernorm_backward(mcl_context *ctx, const mcl_tensor *x,
                                          const mcl_tensor *weight, const mcl_tensor *dy,
                                          float eps, mcl_tensor *dx, mcl_tensor *dweight,
                                          mcl_tensor *dbias);

/** Gradient of mcl_rope: the rotation by the opposite angle. Same arguments as the forward;
 *  dx may alias dy.
 *  NULL: none of ctx, dy and dx may be. */
MCL_API mcl_status mcl_rope_backward(mcl_context *ctx, const mcl_tensor *dy,
                                     mcl_rope_layout layout, float theta_base,
                                     int64_t position_offset, mcl_tensor *dx);

/** Gradient of mcl_embedding for the table: dtable[v] = sum of dout rows whose id is v
 *  (overwritten; rows no id selects are zero; ids outside [0, V) contribute nothing). The sum
 *  runs in a fixed order, so repeated ids give the same bits every time. dtable must not
 *  alias dout.
 *  NULL: none of ctx, ids, dout and dtable may be. */
MCL_API mcl_status mcl_embedding_backward(mcl_context *ctx, const mcl_tensor *ids,
                                          const mcl_tensor *dout, mcl_tensor *dtable);

/** Gradient of mcl_cross_entropy for the logits, given the lse it produced:
 *  dlogits[r] = dloss * (softmax(logits[r]) - onehot(targets[r])) / valid_rows for rows whose
 *  target lies in [0, V), zero for the others. dloss must be finite. dlogits may alias
 *  logits, not lse.
 *  NULL: none of ctx, logits, targets, lse and dlogits may be. */
MCL_API mcl_status mcl_cross_entropy_backward(mcl_context *ctx, const mcl_tensor *logits,
                                              const mcl_tensor *targets, const mcl_tensor *lse,
                                              float dloss, mcl_tensor *dlogits);

/* --- Optimizers ----------------------------------------------------------------------- */

/** Flags of mcl_adamw_desc.flags. Without its flag a field that is 0 takes its default; with
 *  it the field is used as given, 0 included. */
enum {
    /** Use beta1 as given: 0 keeps no running mean (m is the latest gradient). */
    MCL_ADAMW_BETA1_SET = 1u << 0,
    /** Use beta2 as given: 0 keeps no running second moment (v is the latest g^2). */
    MCL_ADAMW_BETA2_SET = 1u << 1,
    /** Use eps as given. With eps 0 the update divides by sqrt(v) alone: where v is 0 (every
     *  gradient of the element 0 so far, or with beta2 0 its gradient of this step 0) the
     *  parameter becomes NaN or infinite, as in PyTorch. */
    MCL_ADAMW_EPS_SET = 1u << 2
};

/** AdamW hyper-parameters for one step. Zero-initialise, set `size`. */
typedef struct mcl_adamw_desc {
    size_t size;          /**< sizeof(mcl_adamw_desc). Required. */
    float lr;             /**< learning rate of this step (the schedule is the caller's); used
                               as given, finite */
    float beta1;          /**< first-moment decay in [0, 1): 0 means 0.9 unless flags has
                               MCL_ADAMW_BETA1_SET */
    float beta2;          /**< second-moment decay in [0, 1): 0 means 0.999 unless flags has
                               MCL_ADAMW_BETA2_SET */
    float eps;            /**< added to sqrt(v), >= 0: 0 means 1e-8 unless flags has
                               MCL_ADAMW_EPS_SET */
    float weight_decay;   /**< decoupled, p -= lr * weight_decay * p; used as given, 0 means
                               none */
    uint32_t flags;       /**< MCL_ADAMW_*_SET; any other bit is MCL_ERROR_INVALID_ARGUMENT */
    int64_t step;         /**< 1 for the first step: bias correction 1 - beta^step. Required
                               (>= 1) */
    uint64_t reserved[4]; /**< must be zero */
} mcl_adamw_desc;

/** One AdamW step over `count` parameters: params[i], grads[i] and the moments m[i], v[i] (zero
 *  before the first step) have one shape each and are distinct tensors. Decay is applied
 *  first (p -= lr * weight_decay * p), then the bias-corrected update
 *  p -= lr * (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + eps). Everything runs on
 *  the GPU. The hyper-parameters are recorded as they are at the call: a captured graph
 *  replays the same step (a schedule needs a new capture). count 0 does nothing. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (desc->size not set, a value out of its range, unknown flags,
 *  tensors not distinct), MCL_ERROR_SHAPE_MISMATCH, MCL_ERROR_DTYPE_MISMATCH (not f32),
 *  MCL_ERROR_WRONG_CONTEXT, MCL_ERROR_TOO_LARGE (more than 2^32 - 1 elements in a tensor).
 *  NULL: the four arrays when count is 0; never ctx, desc or an array entry. */
MCL_API mcl_status mcl_adamw_step(mcl_context *ctx, const mcl_adamw_desc *desc,
                                  mcl_tensor *const *params, mcl_tensor *const *grads,
                                  mcl_tensor *const *m, mcl_tensor *const *v, uint32_t count);

/** SGD hyper-parameters for one step. Zero-initialise, set `size`. Every field is used as
 *  given: 0 is each one's default and a meaningful value at once (no momentum, no decay), so
 *  no flag is needed. */
typedef struct mcl_sgd_desc {
    size_t size;          /**< sizeof(mcl_sgd_desc). Required. */
    float lr;             /**< learning rate of this step (the schedule is the caller's); finite */
    float momentum;       /**< velocity decay, finite: 0 means none (plain SGD, no velocity
                               needed) */
    float weight_decay;   /**< L2 decay added to the gradient, finite: 0 means none */
    uint32_t reserved0;   /**< must be zero */
    uint64_t reserved[4]; /**< must be zero */
} mcl_sgd_desc;

/** One SGD step over `count` parameters: velocity = momentum * velocity + grad + weight_decay
 *  * p; p -= lr * velocity (without a velocity: p -= lr * (grad + weight_decay * p)).
 *  params[i], grads[i] and velocity[i] (zero before the first step) have one shape each and
 *  are distinct tensors. Recorded as mcl_adamw_step() is. count 0 does nothing. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (desc->size not set, a non-finite value, momentum not 0
 *  without a velocity, tensors not distinct), MCL_ERROR_SHAPE_MISMATCH,
 *  MCL_ERROR_DTYPE_MISMATCH, MCL_ERROR_WRONG_CONTEXT, MCL_ERROR_TOO_LARGE.
 *  NULL: velocity may be (no velocity; then desc->momentum must be 0); params and grads when
 *  count is 0; never ctx, desc or an array entry. */
MCL_API mcl_status mcl_sgd_step(mcl_context *ctx, const mcl_sgd_desc *desc,
                                mcl_tensor *const *params, mcl_tensor *const *grads,
                                mcl_tensor *const *velocity, uint32_t count);

/** norm[0] = the L2 norm of all `count` gradients together (deterministic; 0 for count 0;
 *  inf if the sum of squares overflows f32). norm is an f32 tensor of at least 1 element,
 *  not one of the gradients. It takes a scratch tensor of a few floats per gradient.
 *  NULL: grads when count is 0; never ctx, norm or an entry of grads. */
MCL_API mcl_status mcl_grad_norm(mcl_context *ctx, mcl_tensor *const *grads, uint32_t count,
                                 mcl_tensor *norm);

/** Scale every gradient by min(1, max_norm / norm[0]) on the GPU, with norm from
 *  mcl_grad_norm(): clipping without a round trip to the host. Gradients under the limit are
 *  left bit-identical; a NaN norm leaves them unchanged, an inf norm zeroes them. max_norm
 *  must be > 0 (+inf never clips; else MCL_ERROR_INVALID_ARGUMENT).
 *  NULL: grads when count is 0; never ctx, norm or an entry of grads. */
MCL_API mcl_status mcl_clip_grads(mcl_context *ctx, mcl_tensor *const *grads, uint32_t count,
                                  const mcl_tensor *norm, float max_norm);

/* ---------------------------------------------------------------------------------------
 * Recorded sequences (replay). Capture a sequence of operations once, then submit it again
 * and again with the same tensors: one submit instead of one recording per op.
 * ------------------------------------------------------------------------------------- */

typedef struct mcl_graph mcl_graph;

/** Start capturing: until mcl_graph_end(), operations on ctx are recorded into a graph
 *  instead of the stream and do not run. Uploads, downloads and mcl_finish() during a
 *  capture return MCL_ERROR_INVALID_ARGUMENT. Work recorded before the call is submitted.
 *  Errors: MCL_ERROR_INVALID_ARGUMENT (a capture is already running).
 *  NULL: ctx may not be. */
MCL_API mcl_status mcl_graph_begin(mcl_context *ctx);

/** End the capture and return the graph (owned by the caller; destroy with
 *  mcl_graph_destroy(), or the context destroys it). Tensors the graph uses are kept alive
 *  until the graph is destroyed, even if the caller destroys their handles. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (no capture running); on failure `*out` is set to NULL.
 *  NULL: neither ctx nor out may be. */
MCL_API mcl_status mcl_graph_end(mcl_context *ctx, mcl_graph **out);

/** Submit the graph's work, ordered after everything recorded before and before everything
 *  recorded after. Returns without waiting; the next sync point waits. The tensors' current
 *  contents are used: upload new inputs, replay, download outputs. Errors:
 *  MCL_ERROR_WRONG_CONTEXT (a graph of another context), MCL_ERROR_INVALID_ARGUMENT (during a
 *  capture).
 *  NULL: neither ctx nor graph may be. */
MCL_API mcl_status mcl_graph_replay(mcl_context *ctx, mcl_graph *graph);

/** Destroy a graph (waits for its last replay; on a lost context it does not wait, and the
 *  context frees the graph when it is destroyed).
 *  NULL: graph may be (nothing happens). */
MCL_API void mcl_graph_destroy(mcl_graph *graph);

/* =======================================================================================
 * EXPERIMENTAL. Declared only where MOTIFCL_EXPERIMENTAL is defined before this header is
 * included. Exported by the same library, but outside the stability promise and the ABI
 * baseline: anything here may change or go away in any release. Moved out of this section,
 * a function becomes stable.
 *
 *  - mcl_matmul_multi: its shape (arrays of weights, biases and outputs, at most
 *    MCL_MATMUL_MULTI_MAX) follows what the integer-dot path can share today; a fused
 *    projection or a recorded graph may serve the same need.
 *  - mcl_graph_dispatch_count: a number that describes the kernels of this release (fusing
 *    kernels changes it), useful to tests and benchmarks, not a property of the graph.
 *  - mcl_gpt_*: the training model, whose configuration, parameter layout and optimizer
 *    control are still growing.
 *  - mcl_model_*: model files; the options and the description grow with the architectures.
 *  - mcl_session_*: inference; the cache's options, logits on the device and the sampler's
 *    place (host or device) are still moving.
 *  - mcl_profiler_*: the GPU profiler; the operations' names and what they declare grow
 *    with the kernels.
 *  - mcl_counter_linear_*: the counter-state synapse of the memory-native training paths,
 *    a research path whose state format and update may still change.
 * ===================================================================================== */
#ifdef MOTIFCL_EXPERIMENTAL

/* --- Several weights applied to one input -------------------------------------------- */

/** The most weights one mcl_matmul_multi() call takes. */
#define MCL_MATMUL_MULTI_MAX 16

/** c[i] = a W[i]^T (+ bias[i]) for i < count: several weights applied to one input, such as
 *  the query, key and value projections of a layer, or SwiGLU's gate and up. W[i] is a 2-D
 *  [N_i, K] weight, f32 or block-quantised (in any mix); a is f32 [..., K] and c[i] f32
 *  [..., N_i]. Each product is what mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w[i], MCL_TRANSPOSE,
 *  bias[i], c[i]) computes, on the path it would take; on the integer-dot path a is quantized
 *  once for all of them (mcl_matmul quantizes it per call, and each product then waits for its
 *  quantization). The products are independent: nothing orders them after one another.
 *  bias[i] NULL means no bias for product i, bias NULL none for any. 1 <= count <=
 *  MCL_MATMUL_MULTI_MAX. Every argument is checked before anything is recorded, with
 *  mcl_matmul's statuses; besides, MCL_ERROR_DTYPE_MISMATCH for a weight of another type and
 *  MCL_ERROR_INVALID_ARGUMENT for an output that is also an input or another output. A
 *  failure while recording (MCL_ERROR_OUT_OF_DEVICE_MEMORY, MCL_ERROR_VULKAN) can leave the
 *  products before it recorded.
 *  NULL: bias may be, and so may its entries; never ctx, a, w, c or an entry of w or c. */
MCL_API mcl_status mcl_matmul_multi(mcl_context *ctx, const mcl_tensor *a, uint32_t count,
                                    const mcl_tensor *const *w, const mcl_tensor *const *bias,
                                    mcl_tensor *const *c);

/* --- Graph inspection ---------------------------------------------------------------- */

/** Number of dispatches the graph holds (what this release's kernels make of the captured
 *  operations).
 *  NULL: graph may not be (a NULL graph gives 0). */
MCL_API uint32_t mcl_graph_dispatch_count(const mcl_graph *graph);

/* --- A GPT-style decoder --------------------------------------------------------------
 * Token embedding, pre-norm blocks of RMSNorm, causal grouped-query attention with RoPE and
 * a SwiGLU MLP, a final RMSNorm and a head (tied to the embedding or its own), trained with
 * AdamW, everything on the GPU. Parameters live in one f32 tensor (and gradients and AdamW
 * moments in three more of the same size), so that an optimizer step is a few dispatches and
 * a checkpoint one transfer. A model belongs to its context: destroy it before the context.
 * ------------------------------------------------------------------------------------- */

typedef struct mcl_gpt mcl_gpt;

/** A model's shape, for mcl_gpt_create(). Zero-initialise, set `size`. The stories15M shape
 *  is vocab 32000, dim 288, layers 6, heads 6, hidden 768, max_seq 256. */
typedef struct mcl_gpt_desc {
    size_t size;            /**< sizeof(mcl_gpt_desc). Required. */
    int32_t vocab;          /**< tokens: ids in [0, vocab) */
    int32_t dim;            /**< model width */
    int32_t layers;
    int32_t heads;          /**< query heads; dim / heads (even, at most 256) per head */
    int32_t kv_heads;       /**< key/value heads, dividing heads (query head h uses kv head
                                 h / (heads / kv_heads), as in mcl_attention); 0 means heads */
    int32_t hidden;         /**< SwiGLU hidden width */
    int32_t max_seq;        /**< longest sequence */
    int32_t tied_head;      /**< 1: the head is the token embedding (logits = h E^T) */
    mcl_rope_layout rope_layout;
    float rope_theta;       /**< 0 means 10000 */
    float norm_eps;         /**< 0 means 1e-5 */
    uint32_t flags;         /**< MCL_GPT_* bits; 0: the ordinary pre-norm block */
    int32_t reversible_anchor; /**< with MCL_GPT_REVERSIBLE: A, the backward keeps the inputs
                                 of blocks 0, A, 2A, ... and reconstructs the others; 0 means
                                 none but block 0's (the embedding, kept anyway), 1 every
                                 block's (no inversion); must be 0 without the flag. Read only
                                 when `size` covers it (0 otherwise) */
    uint32_t counter_c;     /**< with MCL_GPT_COUNTER (experimental section): the counter range
                                 C of the blocks' linear layers, 0 meaning 11; must be 0
                                 without it. Read only when `size` covers it */
    uint64_t reserved[3];
} mcl_gpt_desc;

/** mcl_gpt_desc.flags: reversible blocks (docs/reversible.md). Each block holds two residual
 *  streams: x1 = x2 = the token embedding before block 0; block l computes
 *  y1 = x1 + F(x2) and y2 = x2 + G(y1), F being the attention sub-block (RMSNorm, q/k/v,
 *  RoPE, causal attention, wo) and G the MLP sub-block (RMSNorm, gate/up, SwiGLU, down); the
 *  final RMSNorm reads (y1 + y2) / 2 of the last block. The parameters are those of the
 *  ordinary model (same names, shapes and layout); the function differs. The forward pass
 *  keeps no activations of the blocks; the backward pass reconstructs each block's inputs
 *  (x2 = y2 - G(y1), x1 = y1 - F(x2)) except where reversible_anchor keeps them, recomputing
 *  F's and G's activations in one scratch set shared by every block: activation memory
 *  does not grow with depth (with anchors every A blocks: two [B*T, dim] tensors per anchor). */
#define MCL_GPT_REVERSIBLE 1u

/** Where one parameter lies in mcl_gpt_parameters(): `offset` and `count` in floats, the
 *  shape as stored (a weight matrix is [out, in]: y = x W^T). */
typedef struct mcl_gpt_param_info {
    const char *name;       /**< e.g. "tok_embedding", "layers.3.wq", "final_norm"; owned by
                                 the model */
    int64_t offset;
    int64_t count;
    uint32_t ndim;
    int64_t shape[2];
} mcl_gpt_param_info;

/** Create a model with freshly initialised parameters (normal, std 0.02, the output
 *  projections of each block scaled by 1/sqrt(2 layers), norm weights 1; a fixed function
 *  of seed on every device). The caller owns the model (mcl_gpt_destroy()). Invalid shapes
 *  are MCL_ERROR_INVALID_ARGUMENT with a message naming the field; on failure `*out` is set
 *  to NULL.
 *  NULL: none of ctx, desc and out may be. */
MCL_API mcl_status mcl_gpt_create(mcl_context *ctx, const mcl_gpt_desc *desc, uint64_t seed,
                                  mcl_gpt **out);

/** Destroy a model and the tensors it owns. Safe while recorded work or a graph still uses
 *  them: their memory is kept until that work has finished.
 *  NULL: gpt may be (nothing happens). */
MCL_API void mcl_gpt_destroy(mcl_gpt *gpt);

/** The model's configuration into `*desc`, with defaults filled in.
 *  NULL: neither gpt nor desc may be. */
MCL_API mcl_status mcl_gpt_config(const mcl_gpt *gpt, mcl_gpt_desc *desc);

/** The number of parameter values: the floats of mcl_gpt_parameters() that belong to a
 *  parameter (the sum of every mcl_gpt_param_info.count).
 *  NULL: gpt may not be (a NULL gpt gives 0). */
MCL_API int64_t mcl_gpt_param_numel(const mcl_gpt *gpt);

/** The number of parameter tensors, indices 0 .. count-1 of mcl_gpt_param().
 *  NULL: gpt may not be (a NULL gpt gives 0). */
MCL_API uint32_t mcl_gpt_param_count(const mcl_gpt *gpt);

/** The placement of parameter `index` into `*info` (index >= mcl_gpt_param_count() is
 *  MCL_ERROR_INVALID_ARGUMENT).
 *  NULL: neither gpt nor info may be. */
MCL_API mcl_status mcl_gpt_param(const mcl_gpt *gpt, uint32_t index, mcl_gpt_param_info *info);

/** The f32 tensor holding every parameter, laid out as mcl_gpt_param() says (gaps between
 *  parameters are zero). Owned by the model; upload and download through it.
 *  NULL: gpt may not be (a NULL gpt gives NULL). */
MCL_API mcl_tensor *mcl_gpt_parameters(mcl_gpt *gpt);

/** The f32 tensor holding every gradient, laid out as mcl_gpt_parameters(). Owned by the
 *  model.
 *  NULL: gpt may not be (a NULL gpt gives NULL). */
MCL_API mcl_tensor *mcl_gpt_gradients(mcl_gpt *gpt);

/** Record a forward pass over tokens [B, T] (i32, T <= max_seq). With targets [B, T] (i32; a
 *  target outside [0, vocab) excludes its position), loss [1] receives the mean cross-entropy
 *  and the pass keeps what mcl_gpt_backward() needs. Activations for [B, T] are allocated on
 *  the first call with that shape and reused (a new shape replaces them).
 *  NULL: targets and loss may both be (inference), not one alone; gpt and tokens may not. */
MCL_API mcl_status mcl_gpt_forward(mcl_gpt *gpt, const mcl_tensor *tokens,
                                   const mcl_tensor *targets, mcl_tensor *loss);

/** The logits [B * T, vocab] of the last forward pass (owned by the model; valid until the
 *  next forward pass), or NULL before the first.
 *  NULL: gpt may not be (a NULL gpt gives NULL). */
MCL_API mcl_tensor *mcl_gpt_logits(mcl_gpt *gpt);

/** Record the backward pass of the last forward pass (which had targets): every gradient is
 *  overwritten. It reads that pass's tokens and targets tensors, which must still exist.
 *  Errors: MCL_ERROR_INVALID_ARGUMENT (no forward pass with targets).
 *  NULL: gpt may not be. */
MCL_API mcl_status mcl_gpt_backward(mcl_gpt *gpt);

/** Set the optimizer's hyper-parameters for the next step or replay: desc as for
 *  mcl_adamw_step() (its step counts from 1; its flags apply), weight decay applied to the
 *  weight matrices only, and gradients clipped to an L2 norm of max_grad_norm (0 or +inf: no
 *  clipping; negative or NaN: MCL_ERROR_INVALID_ARGUMENT). The values go to a small device
 *  tensor that the recorded step reads, so a captured training step follows a learning-rate
 *  schedule: set, then replay. Not during a capture (MCL_ERROR_INVALID_ARGUMENT).
 *  NULL: neither gpt nor desc may be. */
MCL_API mcl_status mcl_gpt_set_optimizer(mcl_gpt *gpt, const mcl_adamw_desc *desc,
                                         float max_grad_norm);

/** Record one optimizer step: the gradient norm, clipping and AdamW over every parameter
 *  (a few dispatches), with the hyper-parameters last set (none set yet:
 *  MCL_ERROR_INVALID_ARGUMENT).
 *  NULL: gpt may not be. */
MCL_API mcl_status mcl_gpt_step(mcl_gpt *gpt);

/** The L2 norm of the gradients before clipping, measured by the last recorded step: an f32
 *  tensor [1] owned by the model (0 before any step).
 *  NULL: gpt may not be (a NULL gpt gives NULL). */
MCL_API mcl_tensor *mcl_gpt_grad_norm(mcl_gpt *gpt);

/** The optimizer step last set by mcl_gpt_set_optimizer() (or stored in the checkpoint the
 *  model was loaded from); 0 before any.
 *  NULL: gpt may not be (a NULL gpt gives 0). */
MCL_API int64_t mcl_gpt_optimizer_step(const mcl_gpt *gpt);

/** Write a checkpoint (docs/gpt-checkpoint.md: the configuration, the parameters, the AdamW
 *  moments and step) to path, replacing it only once it is complete. A sync point. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (the file cannot be written; the message says why),
 *  MCL_ERROR_OUT_OF_HOST_MEMORY, and those of mcl_tensor_download().
 *  NULL: neither gpt nor path may be. */
MCL_API mcl_status mcl_gpt_save(mcl_gpt *gpt, const char *path);

/** Create a model from a checkpoint written by mcl_gpt_save(); the caller owns it as one from
 *  mcl_gpt_create(). A file that is not one, is truncated or is of an unknown version is
 *  MCL_ERROR_INVALID_ARGUMENT with a message; on failure `*out` is set to NULL.
 *  NULL: none of ctx, path and out may be. */
MCL_API mcl_status mcl_gpt_load(mcl_context *ctx, const char *path, mcl_gpt **out);

/** The inversion drift of a reversible model's last backward pass: the largest relative L2
 *  error ||reconstructed - kept|| / ||kept|| over the kept block inputs (blocks 0, A, 2A, ...;
 *  each stream on its own; x1 is reconstructed from the kept x2) into `*max_relative`. 0
 *  with reversible_anchor 1 (nothing is reconstructed). The errors are measured on the
 *  device during the backward pass (a few small dispatches per kept block); this call reads
 *  them back, a sync point. Errors: MCL_ERROR_INVALID_ARGUMENT (not a reversible model, or
 *  no backward pass yet with the current batch shape), those of mcl_tensor_download().
 *  NULL: neither gpt nor max_relative may be. */
MCL_API mcl_status mcl_gpt_reversible_drift(mcl_gpt *gpt, float *max_relative);

/* --- Model files ------------------------------------------------------------------------
 * A language model read from a GGUF file (as llama.cpp's converter and quantizer write them)
 * or a Hugging Face checkpoint (safetensors with its config.json, sharded or not): its
 * architecture and hyperparameters, its weights in device memory, its tokenizer. The
 * architectures read are those mcl_model_architecture_name() lists (llama 1, 2 and 3 and
 * TinyLlama, mistral, qwen2); anything else is refused with that list. A model belongs to its
 * context: close it before the context.
 *
 * Tensors keep GGUF's names ("token_embd.weight", "blk.3.attn_q.weight", "output.weight"; a
 * checkpoint's names are mapped to these) and the library's shapes: a weight is [N, K] (rows
 * first, y = x W^T). The query and key projections are in Hugging Face's row order, which
 * pairs element i of a head with element i + head_dim / 2 for RoPE (MCL_ROPE_SPLIT_HALF):
 * llama.cpp's converter stores them permuted for its interleaved RoPE, and the loader undoes
 * that, so the same weights from either file give the same tensors.
 * ------------------------------------------------------------------------------------- */

typedef struct mcl_model mcl_model;

/** Progress of a load: `done` of `total` bytes of weights on the device so far. */
typedef void (*mcl_progress_fn)(void *user_data, uint64_t done, uint64_t total);

/** mcl_model_desc.flags. */
enum {
    /** Read the metadata, the tensor list and the tokenizer; no weights go to the device. */
    MCL_MODEL_NO_WEIGHTS = 1u << 0,
    /** Store 2-D weights as weight_type on the device: MCL_DTYPE_Q8_0 or MCL_DTYPE_Q4_0
     *  quantizes f32, f16 and bf16 weights with the library's quantizer (block-quantised ones
     *  stay as they are); MCL_DTYPE_F32 dequantizes block-quantised ones. Without the flag
     *  weights keep their file's type (f16 and bf16 become f32). */
    MCL_MODEL_WEIGHT_TYPE_SET = 1u << 1,
    /** A mixture's expert stacks in host memory that the device reads (system memory on a
     *  device with memory of its own; the same memory where memory is unified), outside
     *  memory_budget and device_bytes: a session's expert cache
     *  (mcl_session_desc.expert_budget) then keeps the experts in use in device memory. Without
     *  a cache every expert is read across the bus. */
    MCL_MODEL_EXPERTS_IN_HOST_MEMORY = 1u << 2
};

/** How to open a model. Zero-initialise, set `size`. */
typedef struct mcl_model_desc {
    size_t size;                /**< sizeof(mcl_model_desc). Required. */
    uint32_t flags;             /**< MCL_MODEL_*; 0 means all weights, as stored */
    mcl_dtype weight_type;      /**< with MCL_MODEL_WEIGHT_TYPE_SET, see there */
    uint64_t memory_budget;     /**< device bytes the weights may take; 0 means the device
                                     heap's budget. A model that needs more is refused before
                                     anything is uploaded */
    mcl_progress_fn progress;   /**< NULL: no progress */
    void *progress_user_data;
    uint64_t reserved[8];
} mcl_model_desc;

/** Open a model: `path` is a .gguf file, a .safetensors file (with config.json beside it), a
 *  model.safetensors.index.json, or a folder holding config.json and model.safetensors or
 *  model.safetensors.index.json. The caller owns the model (mcl_model_close()).
 *  MCL_ERROR_IO (the file cannot be read), MCL_ERROR_BAD_FILE (malformed; the message names
 *  the field), MCL_ERROR_UNSUPPORTED (an architecture, tensor type, RoPE scaling or tokenizer
 *  the library does not read, named, with what it reads), MCL_ERROR_OUT_OF_DEVICE_MEMORY
 *  (more than the budget: the message says how much it needs), MCL_ERROR_OUT_OF_HOST_MEMORY;
 *  on failure *out is NULL and nothing stays allocated.
 *  NULL: desc may be (the defaults); ctx, path and out may not. */
MCL_API mcl_status mcl_model_open(mcl_context *ctx, const char *path,
                                  const mcl_model_desc *desc, mcl_model **out);

/** Release the model and its tensors (work recorded with them runs first).
 *  NULL: model may be (nothing happens). */
MCL_API void mcl_model_close(mcl_model *model);

/** mcl_model_info.rope_scaling. */
enum {
    MCL_ROPE_SCALING_NONE = 0,
    /** Llama 3.1's frequency scaling: factor, low and high frequency factors, the original
     *  context; the per-pair factors are the tensor "rope_freqs.weight". */
    MCL_ROPE_SCALING_LLAMA3 = 1
};

/** What a model file is, and what loading it took. */
typedef struct mcl_model_info {
    size_t size;                /**< sizeof(mcl_model_info) as the caller compiled it */
    char architecture[32];      /**< "llama", "mistral", "qwen2", "qwen2moe" */
    char name[128];             /**< the file's name for the model (general.name), or "" */
    char format[32];            /**< "gguf 3", "gguf 2", "safetensors" */
    char tokenizer[32];         /**< "llama" (SentencePiece-style), "gpt2" (byte-level BPE) */
    char pre_tokenizer[32];     /**< the BPE pre-tokenizer ("gpt-2", "llama-bpe", "qwen2") */
    uint32_t vocab;             /**< tokens */
    uint32_t dim;               /**< model width */
    uint32_t layers;
    uint32_t heads;             /**< query heads */
    uint32_t kv_heads;          /**< key/value heads (query head h uses h / (heads / kv_heads)) */
    uint32_t head_dim;
    uint32_t hidden;            /**< feed-forward (SwiGLU) width */
    uint32_t context_length;    /**< the longest context the model was trained for */
    float norm_eps;             /**< RMSNorm's epsilon */
    float rope_theta;           /**< RoPE's base */
    uint32_t rope_scaling;      /**< MCL_ROPE_SCALING_* */
    float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    uint32_t rope_original_context;
    uint32_t tied_output;       /**< 1: no output.weight, the embedding is the head */
    uint32_t qkv_bias;          /**< 1: the q, k and v projections have biases (qwen2) */
    int32_t bos, eos;           /**< token ids, -1 for none */
    uint64_t parameters;        /**< weights in the file, elements */
    uint64_t file_bytes;        /**< bytes of the file(s) */
    uint64_t device_bytes;      /**< device memory the weights take (or would take: 0 with
                                     MCL_MODEL_NO_WEIGHTS) */
    double load_seconds;        /**< wall time of mcl_model_open */
    uint32_t experts;           /**< 0: dense feed-forward blocks; else a mixture of this many
                                     experts per block (Mixtral-style llama, qwen2moe) */
    uint32_t experts_used;      /**< the experts each token is routed to */
    uint32_t expert_hidden;     /**< each expert's feed-forward width */
    uint32_t experts_norm;      /**< 1: the chosen experts' softmax weights renormalised to sum
                                     1 (Mixtral); 0: taken as they are (qwen2moe) */
    uint32_t shared_hidden;     /**< > 0: a shared expert of this width behind a sigmoid gate
                                     (qwen2moe) */
    uint64_t reserved[8];
} mcl_model_info;

/** Fill `*info`; the caller sets info->size first.
 *  NULL: neither model nor info may be. */
MCL_API mcl_status mcl_model_file_info(const mcl_model *model, mcl_model_info *info);

/** One tensor of the model. */
typedef struct mcl_model_tensor_info {
    size_t size;                /**< sizeof(mcl_model_tensor_info) as the caller compiled it */
    const char *name;           /**< GGUF's name; owned by the model */
    const char *file_type;      /**< its type in the file: "f32", "f16", "bf16", "q4_0", ... */
    mcl_dtype dtype;            /**< its type on the device; -1 where the library does not read
                                     the file's type (opened with MCL_MODEL_NO_WEIGHTS) */
    uint32_t ndim;
    int64_t shape[4];           /**< the library's order: a weight is [N, K] */
    mcl_tensor *tensor;         /**< owned by the model; NULL when opened with
                                     MCL_MODEL_NO_WEIGHTS */
} mcl_model_tensor_info;

/** The number of tensors, and tensor `index` of them (MCL_ERROR_INVALID_ARGUMENT past the
 *  end).
 *  NULL: model may not be (a NULL model has 0); neither may info. */
MCL_API uint32_t mcl_model_tensor_count(const mcl_model *model);
MCL_API mcl_status mcl_model_tensor(const mcl_model *model, uint32_t index,
                                    mcl_model_tensor_info *info);

/** The device tensor named `name`, or NULL (no such tensor, or no weights loaded).
 *  NULL: neither may be (NULL gives NULL). */
MCL_API mcl_tensor *mcl_model_find_tensor(const mcl_model *model, const char *name);

/** The metadata value of `key` as text, written as mcl_context_memory_json() writes: a
 *  number, true or false, a string as it is, an array as [a, b, ...] (of at most 64
 *  elements, then "...").  MCL_ERROR_INVALID_ARGUMENT for a key the file does not have.
 *  A checkpoint's metadata is its config.json, keys as they are there.
 *  NULL: buffer may be when capacity is 0, needed may be; model and key may not. */
MCL_API mcl_status mcl_model_metadata(const mcl_model *model, const char *key, char *buffer,
                                      size_t capacity, size_t *needed);

/** mcl_model_tokenize() flags. */
enum {
    /** Put BOS first where the vocabulary asks for it (it has a BOS id and its add_bos_token
     *  is true, or absent for a model whose default is true: "llama" and llama 3's BPE), as
     *  llama.cpp does; prepend mcl_model_info.bos yourself to have it regardless. */
    MCL_TOKENIZE_ADD_BOS = 1u << 0,
    /** Control tokens written in the text ("<s>", "<|endoftext|>") become their ids;
     *  user-defined tokens always do. Matching is leftmost-longest. */
    MCL_TOKENIZE_PARSE_SPECIAL = 1u << 1,
    /** Put EOS last where the vocabulary asks for it (add_eos_token). */
    MCL_TOKENIZE_ADD_EOS = 1u << 2
};

/** The token ids of `length` bytes of UTF-8 text (invalid UTF-8 is encoded byte by byte).
 *  *count receives how many ids the text needs; MCL_ERROR_TOO_LARGE when that is more than
 *  `capacity`, the first `capacity` written.
 *  NULL: tokens may be when capacity is 0 (a count query); text may be when length is 0;
 *  model and count may not. */
MCL_API mcl_status mcl_model_tokenize(const mcl_model *model, const char *text, size_t length,
                                      uint32_t flags, int32_t *tokens, uint32_t capacity,
                                      uint32_t *count);

/** The text of `count` token ids, written as mcl_context_memory_json() writes (NUL-terminated
 *  UTF-8; control tokens such as BOS give no text). MCL_ERROR_INVALID_ARGUMENT for an id
 *  outside the vocabulary.
 *  NULL: buffer may be when capacity is 0, needed may be, tokens when count is 0; model may
 *  not. */
MCL_API mcl_status mcl_model_detokenize(const mcl_model *model, const int32_t *tokens,
                                        uint32_t count, char *buffer, size_t capacity,
                                        size_t *needed);

/** The architectures mcl_model_open() reads: the name of number `index`, NULL past the last. */
MCL_API const char *mcl_model_architecture_name(uint32_t index);

/* --- Inference sessions (experimental) ------------------------------------------------ *
 * A session runs a model opened with its weights (mcl_model_open) over token sequences: each
 * sequence has its own key/value cache of context_length positions on the device. Feeding a
 * sequence tokens appends them to it (a prompt runs as one pass of many rows, a token of
 * decode as one row); feeding several sequences one token each runs them as one batch. The
 * model must outlive the session. A session is not thread-safe. */

typedef struct mcl_session mcl_session;

/** How to create a session. Zero-initialise, set `size`. */
typedef struct mcl_session_desc {
    size_t size;                /**< sizeof(mcl_session_desc). Required. */
    uint32_t context_length;    /**< positions per sequence; 0 means the model's, at most 4096,
                                     lowered to what the memory budget holds */
    uint32_t sequences;         /**< sequences the session holds; 0 means 1 */
    uint32_t batch_tokens;      /**< prompt tokens per pass (longer prompts run in several);
                                     0 means 512 */
    mcl_dtype kv_type;          /**< the cache's element type: MCL_DTYPE_F32 (the default),
                                     or MCL_DTYPE_F16 (half the memory; k and v rounded to
                                     f16) where the device stores 16-bit values */
    uint64_t memory_budget;     /**< device bytes the cache and the activations may take; 0
                                     means what the device heap has left */
    uint64_t expert_budget;     /**< a mixture's: device bytes of its expert caches, all
                                     layers together, each layer getting as many slots
                                     (mcl_session_expert_stats); 0 means none: the
                                     experts are used where the model holds them, as is a
                                     budget that holds every expert of a model whose experts
                                     are in device memory (in host memory,
                                     MCL_MODEL_EXPERTS_IN_HOST_MEMORY, every expert then gets
                                     a slot). A budget of fewer slots a layer than the experts
                                     a token uses is MCL_ERROR_INVALID_ARGUMENT. Ignored for a
                                     dense model. MCL_EXPERT_BUDGET_AUTO: chosen by the
                                     session (below) */
    uint64_t reserved[7];
} mcl_session_desc;

/** mcl_session_desc.expert_budget: the experts of a model whose stacks are in host memory
 *  (MCL_MODEL_EXPERTS_IN_HOST_MEMORY) take the session's device memory (memory_budget, which
 *  then also counts the expert caches, or what the device has left) that the activations and a
 *  cache of context_length positions (0: the model's, at most 4096) leave, less a sixteenth of
 *  it for the allocator, as many slots a layer as that holds (a slot for every expert at
 *  most). Where that is fewer than the experts a token uses, MCL_ERROR_OUT_OF_DEVICE_MEMORY
 *  says how much is needed. No cache where the stacks are in device memory. */
#define MCL_EXPERT_BUDGET_AUTO UINT64_MAX

/** Create a session over `model`. MCL_ERROR_UNSUPPORTED (a model the engine does not run
 *  yet, named; a kv_type other than f32 and f16, or f16 on a device without 16-bit
 *  storage), MCL_ERROR_OUT_OF_DEVICE_MEMORY (an explicit
 *  context_length whose cache is over the budget: the message says how much it needs),
 *  MCL_ERROR_INVALID_ARGUMENT (a model opened without weights).
 *  NULL: desc may be (the defaults); model and out may not. */
MCL_API mcl_status mcl_session_create(mcl_model *model, const mcl_session_desc *desc,
                                      mcl_session **out);

/** Release the session and its device memory (work recorded with it runs first).
 *  NULL: session may be. */
MCL_API void mcl_session_destroy(mcl_session *session);

/** The context length, and the sequences, the session was created with. */
MCL_API uint32_t mcl_session_context_length(const mcl_session *session);
MCL_API uint32_t mcl_session_sequences(const mcl_session *session);

/** Append `count` tokens to sequence `seq` and run the model over them. `logits`, when not
 *  NULL, receives the vocab logits of the last token; without it the call may return while
 *  the device still works (mcl_session_sample, a download or mcl_finish() waits for it). MCL_ERROR_TOO_LARGE when the sequence
 *  would pass the context length (nothing is appended), MCL_ERROR_INVALID_ARGUMENT for a
 *  token outside the vocabulary, count 0 or seq out of range.
 *  NULL: logits may be; session and tokens may not. */
MCL_API mcl_status mcl_session_feed(mcl_session *session, uint32_t seq, const int32_t *tokens,
                                    uint32_t count, float *logits);

/** Append one token to each of `count` distinct sequences `seqs` and run them as one batch.
 *  `logits`, when not NULL, receives count x vocab logits in the order of seqs. Errors as
 *  mcl_session_feed's, for any of the sequences (then nothing is appended to any).
 *  NULL: logits may be; session, seqs and tokens may not. */
MCL_API mcl_status mcl_session_feed_batch(mcl_session *session, const uint32_t *seqs,
                                          const int32_t *tokens, uint32_t count,
                                          float *logits);

/** Tokens in sequence `seq` so far (0 past the last sequence). */
MCL_API uint32_t mcl_session_length(const mcl_session *session, uint32_t seq);

/** Empty sequence `seq`; the others are untouched. */
MCL_API mcl_status mcl_session_reset(mcl_session *session, uint32_t seq);

/** How to choose a token from logits. Zero-initialised (with `size` set) it is greedy. Applied
 *  in this order: penalties over the last penalty_last_n tokens of the sequence, top-k,
 *  temperature, top-p, min-p, then a draw. Each truncation is a cut on the logit: tokens
 *  equal to the token at a cut are kept with it. The draw is exact for the kept tokens'
 *  probabilities (exp(logit / temperature), normalised over them). */
typedef struct mcl_sampler_desc {
    size_t size;                /**< sizeof(mcl_sampler_desc). Required. */
    float temperature;          /**< <= 0: greedy (the most likely token, the lowest id of
                                     equals) */
    uint32_t top_k;             /**< 0: all tokens; else the k most likely (and any equal to
                                     the k-th) */
    float top_p;                /**< 0 or 1: off; else keep the most likely tokens whose
                                     probabilities sum to at least top_p */
    float min_p;                /**< 0: off; else drop tokens below min_p x the top one's */
    float repeat_penalty;       /**< 0 or 1: off; else divide a positive logit of a token seen
                                     in the window by it, multiply a negative one */
    float frequency_penalty;    /**< subtracted from a logit once per time the token was seen */
    float presence_penalty;     /**< subtracted once from a logit of a token seen at all */
    uint32_t penalty_last_n;    /**< the window of the penalties; 0 means 64 */
    uint64_t seed;              /**< the draw's seed: the same seed, logits and history give
                                     the same token */
    uint64_t reserved[8];
} mcl_sampler_desc;

/** Choose a token for sequence `seq` from the logits of its last fed token (the sequence's
 *  random state advances by one draw). The choice runs on the device, which hands back the
 *  token alone; where the penalty window holds more than 256 distinct tokens, the host
 *  chooses from the downloaded logits instead, the same way. MCL_ERROR_INVALID_ARGUMENT when
 *  the sequence has no logits yet (nothing fed) or seq is out of range.
 *  NULL: desc may be (greedy); session and token may not. */
MCL_API mcl_status mcl_session_sample(mcl_session *session, uint32_t seq,
                                      const mcl_sampler_desc *desc, int32_t *token);

/** mcl_session_sample for `count` distinct sequences under one desc, in one dispatch:
 *  tokens[i] for seqs[i]. Errors as mcl_session_sample's, for any of them (then no draw is
 *  made for any).
 *  NULL: desc may be (greedy); session, seqs and tokens may not. */
MCL_API mcl_status mcl_session_sample_batch(mcl_session *session, const uint32_t *seqs,
                                            uint32_t count, const mcl_sampler_desc *desc,
                                            int32_t *tokens);

/** A session's expert cache (mcl_session_desc.expert_budget). Each mixture layer keeps
 *  `slots` of its experts in device memory; the layer's stacks stay where the model holds them
 *  (the pool). On the device, after the routing of each batch: an expert the batch uses that is
 *  resident is a hit; one that is not takes the slot of the least recently used expert that the
 *  batch does not use (a miss: its bytes are copied into the slot); where every slot is the
 *  batch's (a prompt's batch may use more experts than there are slots), the expert is read
 *  from the pool in place. Counts are per layer and batch, summed over both. */
typedef struct mcl_expert_stats {
    size_t size;                /**< sizeof(mcl_expert_stats). Required. */
    uint32_t experts;           /**< experts of all mixture layers (0: a dense model) */
    uint32_t slots;             /**< cache slots per layer; 0: no cache (every expert used in
                                     place, nothing counted) */
    uint32_t resident;          /**< experts in a slot now, all layers */
    uint32_t reserved0;
    uint64_t cache_bytes;       /**< device bytes of the slots, all layers */
    uint64_t hits;              /**< experts found resident */
    uint64_t misses;            /**< experts copied into a slot */
    uint64_t pool_reads;        /**< experts read from the pool in place */
    uint64_t bytes_moved;       /**< bytes copied into slots */
    uint64_t bytes_read_in_place; /**< bytes of the experts read from the pool in place */
    uint64_t reserved[4];
} mcl_expert_stats;

/** The expert cache's counts so far (a sync point: waits for the work recorded before it).
 *  MCL_ERROR_INVALID_ARGUMENT for a stats->size too small.
 *  NULL: neither may be. */
MCL_API mcl_status mcl_session_expert_stats(mcl_session *session, mcl_expert_stats *stats);

/* --- The GPU profiler ------------------------------------------------------------------- */

/** One line of a profile: one kernel variant under one operation's name. */
typedef struct mcl_profile_row {
    /** sizeof(mcl_profile_row) as the caller compiled it: set in rows[0] before the call. */
    size_t size;
    /** The operation ("matmul q4_0 gemv", ...), or the kernel's module where the op named
     *  none. */
    char op[48];
    /** The kernel's module with its workgroup size and constants, "gemv_q[x=64,4,2]". */
    char kernel[96];
    /** Dispatches timed. */
    uint64_t count;
    /** Their GPU time, summed (seconds). */
    double seconds;
    /** Bytes the op declared it moves and FLOPs it declared it does, summed over the same
     *  dispatches (bytes default to the sizes of the buffers bound): bytes / seconds against
     *  the device's streaming rate is the line's fraction of the memory limit. */
    double bytes;
    double flops;
    /** Reserved; zero. */
    uint64_t reserved[4];
} mcl_profile_row;

/** Start profiling: a timestamp before and after every dispatch recorded from now on (and in
 *  every graph captured from now on, read back after each of its replays, which then waits
 *  for it), summed per kernel variant and operation. Clears an earlier profile. Work recorded
 *  before is finished first. MOTIFCL_PROFILE=1 starts one at context creation and prints its
 *  table to stderr at destruction (an absolute path there: its JSON into that file). The cost:
 *  two timestamps per dispatch, and a wait after each profiled graph replay.
 *  Errors: MCL_ERROR_UNSUPPORTED (no timestamps on the compute queue),
 *  MCL_ERROR_INVALID_ARGUMENT (during a graph capture).
 *  NULL: ctx may not be. */
MCL_API mcl_status mcl_profiler_start(mcl_context *ctx);

/** Finish the work recorded, read its timestamps and stop profiling; the profile stays for
 *  mcl_profiler_rows() and mcl_profiler_json() until the next start.
 *  NULL: ctx may not be. */
MCL_API mcl_status mcl_profiler_stop(mcl_context *ctx);

/** The profile's lines, the most GPU time first: up to `capacity` into rows (rows[0].size set
 *  by the caller), their number into `*count`. Lines of batches still running are not in yet
 *  (mcl_profiler_stop or mcl_finish reads them). Returns MCL_ERROR_TOO_LARGE when more lines
 *  exist than fit.
 *  NULL: rows may be when capacity is 0 (a count query); ctx and count may not be. */
MCL_API mcl_status mcl_profiler_rows(const mcl_context *ctx, mcl_profile_row *rows,
                                     uint32_t capacity, uint32_t *count);

/** The totals: the dispatches' time summed, the time from the first to the last timestamp of
 *  each batch summed (its excess over the first is time between dispatches: barriers, copies,
 *  idle), and the dispatches not timed because a batch held more than the profiler's 4,096.
 *  NULL: any output may be; ctx may not. */
MCL_API mcl_status mcl_profiler_totals(const mcl_context *ctx, double *dispatch_seconds,
                                       double *span_seconds, uint64_t *dropped);

/** The profile as JSON (totals, then the lines with their share), snprintf-style as
 *  mcl_context_memory_json.
 *  NULL: buffer may be when capacity is 0, needed may be; ctx may not. */
MCL_API mcl_status mcl_profiler_json(const mcl_context *ctx, char *buffer, size_t capacity,
                                     size_t *needed);

/* --- Counter-state linear layer ---------------------------------------------------------
 * A linear layer y = x W^T (W is out x in) whose weights are small automata instead of floats
 * (the memory-native training paths, counter-state synapse): each weight is a ternary value
 * t in {-1, 0, 1} and a residual counter c in [-(C - 1), C - 1], packed as a 6-bit code
 * (t + 1) * (2C - 1) + (c + C - 1), four codes in three bytes (byte0 = k0 | (k1 & 3) << 6,
 * byte1 = (k1 >> 2) & 15 | (k2 & 15) << 4, byte2 = (k2 >> 4) & 3 | k3 << 2), row-major. Each
 * row o has an f32 scale s[o] and an f32 RMS moment v[o]; W[o, i] = s[o] * t[o, i]. Persistent
 * state: 0.75 + 8 / in bytes per weight; no f32 master weight, no per-weight moment, no dense
 * weight gradient. The update is fused into the backward pass (mcl_counter_linear_backward).
 * A layer belongs to its context (destroyed with it, its handle still to be destroyed).
 * ------------------------------------------------------------------------------------- */

typedef struct mcl_counter_linear mcl_counter_linear;

/** The default and the largest counter range C: 3 x (2C - 1) states must fit in 6 bits. */
#define MCL_COUNTER_DEFAULT_C 11
#define MCL_COUNTER_MAX_C 11

/** A layer's shape, for mcl_counter_linear_create(). Zero-initialise, set `size`. */
typedef struct mcl_counter_linear_desc {
    size_t size;          /**< sizeof(mcl_counter_linear_desc). Required. */
    int64_t out;          /**< rows of W, >= 1 */
    int64_t in;           /**< columns of W: >= 16 and a multiple of 16 (an update invocation
                               owns 16 weights, three whole 32-bit words of the state) */
    uint32_t C;           /**< counter range, 1..MCL_COUNTER_MAX_C: 0 means 11 */
    uint32_t reserved0;   /**< must be zero */
    uint64_t reserved[4]; /**< must be zero */
} mcl_counter_linear_desc;

/** Create a layer: every weight t = 0, c = 0 (code (2C - 1) + C - 1), s = 1, v = 0. Errors:
 *  MCL_ERROR_INVALID_ARGUMENT (desc->size not set, a shape or C out of range, reserved fields
 *  not zero), MCL_ERROR_TOO_LARGE (out x in at 2^32 or beyond, out past 1048560), the tensor
 *  creation statuses.
 *  NULL: none of ctx, desc, layer (*layer is NULL after a failure). */
MCL_API mcl_status mcl_counter_linear_create(mcl_context *ctx,
                                             const mcl_counter_linear_desc *desc,
                                             mcl_counter_linear **layer);

/** Destroy a layer and its tensors (safe after its context's destruction).
 *  NULL: layer may be (nothing happens). */
MCL_API void mcl_counter_linear_destroy(mcl_counter_linear *layer);

/** The layer's tensors, owned by it (never destroy them): the packed state (u8, out x in x 3 /
 *  4 bytes, the format above), the row scales s (f32 [out]) and the row moments v (f32
 *  [out]). A caller may upload to and download from them (a checkpoint, a test).
 *  NULL: layer may be (then NULL, as after the context's destruction). */
MCL_API mcl_tensor *mcl_counter_linear_state(const mcl_counter_linear *layer);
MCL_API mcl_tensor *mcl_counter_linear_scale(const mcl_counter_linear *layer);
MCL_API mcl_tensor *mcl_counter_linear_moment(const mcl_counter_linear *layer);

/** Set the layer from f32 weights w [out, in] on the host, row by row: with
 *  delta = threshold_ratio x mean_i |w[o, i]|, t = sign(w) where |w| > delta and 0 elsewhere
 *  (threshold_ratio 0.7 is the ternary-weight-network rule; 0 keeps every nonzero sign);
 *  s[o] = the mean |w| of the weights with t != 0 (the row's mean |w| if none is), clamped to
 *  [1e-5, 10] as the update clamps it; c = 0 and v = 0. MCL_ERROR_INVALID_ARGUMENT for a
 *  threshold_ratio that is negative or not finite, or a non-finite weight; the upload's
 *  statuses.
 *  NULL: none of layer, w. */
MCL_API mcl_status mcl_counter_linear_from_f32(mcl_counter_linear *layer, const float *w,
                                               float threshold_ratio);

/** Decode the layer for inspection (waits for recorded work): w [out, in] = s[o] x t[o, i]
 *  (the weight the forward pass uses), and, where given, t and c of every weight.
 *  NULL: w, t and c may be (each is then not written); layer may not. */
MCL_API mcl_status mcl_counter_linear_to_f32(mcl_counter_linear *layer, float *w, int8_t *t,
                                             int8_t *c);

/** y = x W^T with W decoded from the packed state in the shader (no dense W is made, not even
 *  as scratch): x f32 [..., in], y f32 [..., out] with the same leading dimensions, y not x.
 *  Recorded. Errors: MCL_ERROR_INVALID_ARGUMENT (y is x), MCL_ERROR_SHAPE_MISMATCH,
 *  MCL_ERROR_DTYPE_MISMATCH, MCL_ERROR_WRONG_CONTEXT, MCL_ERROR_TOO_LARGE (more than 1048560
 *  rows), MCL_ERROR_CONTEXT_DESTROYED.
 *  NULL: none of layer, x, y. */
MCL_API mcl_status mcl_counter_linear_forward(mcl_counter_linear *layer, const mcl_tensor *x,
                                              mcl_tensor *y);

/** Flags of mcl_counter_update_desc.flags: without its flag a field that is 0 takes its
 *  default; with it the field is used as given. */
enum {
    MCL_COUNTER_BETA_SET = 1u << 0 /**< use beta as given (0: v is this step's mean G^2) */
};

/** The update fused into mcl_counter_linear_backward(). Zero-initialise, set `size`. */
typedef struct mcl_counter_update_desc {
    size_t size;          /**< sizeof(mcl_counter_update_desc). Required. */
    float lr;             /**< used as given, finite and >= 0 (the spec's default is 3e-3); 0
                               with lr_scale 0 leaves every t and c as they are */
    float lr_scale;       /**< learning rate of the row scales, finite and >= 0: 0 (the
                               default) keeps s */
    float beta;           /**< RMS moment decay in [0, 1): 0 means 0.9 unless
                               MCL_COUNTER_BETA_SET */
    float eps;            /**< floor of sqrt(v), finite and > 0: 0 means 1e-3 */
    uint32_t seed;        /**< this step's seed of the stochastic rounding, used as given
                               (the spec's default is 12345): give each step its own */
    uint32_t flags;       /**< MCL_COUNTER_*_SET; any other bit is MCL_ERROR_INVALID_ARGUMENT */
    uint64_t reserved[4]; /**< must be zero */
} mcl_counter_update_desc;

/** The layer's backward pass for x f32 [..., in] and grad_out f32 [..., out] (the same leading
 *  dimensions, N rows): grad_x = grad_out W with W decoded as in the forward pass (the W
 *  before this call's update), then, where `update` is given, the update of the memory-native
 *  spec with G = grad_out^T x, recomputed per tile of W and never stored:
 *    per row: gsq = mean_i G^2; v = beta v + (1 - beta) gsq; D = max(sqrt(v), eps);
 *             gs = sum_i G t / sqrt(in); s' = clamp(s - lr_scale gs, 1e-5, 10)
 *    per weight: tick = -lr (G / D) (C / s'), computed as val = c (s / s') + G k with
 *             k = (-lr / D) (C / s') per row; r = floor(val) + (u < frac(val)) with
 *             u = (h(seed ^ h(o in + i)) & 0xffffff) / 2^24; carry = trunc(r / C),
 *             t' = clamp(t + carry, -1, 1), c' = r - carry C, or sign(r) (C - 1) where t'
 *             was clamped; then s = s'.
 *  Every sum has a fixed order and every operation is rounded on its own, so the state after
 *  the update is a function of the inputs alone (tests/ref/ref_counter.c repeats it; the
 *  row's division and square root are the device's, correctly rounded on Lavapipe).
 *  Non-finite gradients leave valid but unspecified codes. Recorded: grad_x one dispatch, the
 *  update three (row statistics, row factors, the weights) and two scratch tensors of
 *  8 x out x (ceil(in / 64) + 1) bytes together. Errors: those of the forward pass, and
 *  MCL_ERROR_INVALID_ARGUMENT for a bad update descriptor or grad_x aliasing an input.
 *  NULL: grad_x may be (not computed), update may be (no update); not layer, x, grad_out. */
MCL_API mcl_status mcl_counter_linear_backward(mcl_counter_linear *layer, const mcl_tensor *x,
                                               const mcl_tensor *grad_out, mcl_tensor *grad_x,
                                               const mcl_counter_update_desc *update);

/* --- The GPT with counter-state linear layers ----------------------------------------- */

/** mcl_gpt_desc.flags: the blocks' seven linear layers (wq, wk, wv, wo, w_gate, w_up, w_down)
 *  are counter-state layers (mcl_counter_linear, C = mcl_gpt_desc.counter_c) instead of f32
 *  parameters; the embedding, the norms and the head stay f32 with AdamW. dim and hidden must
 *  be multiples of 16. mcl_gpt_param() and mcl_gpt_parameters() then hold the f32 parameters
 *  only, and the layers are reached through mcl_gpt_counter_layer(). The layers' update is
 *  fused into mcl_gpt_backward(): that call records each block's grad_x passes with the
 *  weights of the forward pass, then their updates with the parameters of
 *  mcl_gpt_set_counter_update();
 *  mcl_gpt_step() then steps the f32 parameters (the gradient-norm clip sees their gradients
 *  only). Combines with MCL_GPT_REVERSIBLE. Checkpoints hold the layers' states, scales and
 *  moments and the hash seed (docs/gpt-checkpoint.md, version 3). */
#define MCL_GPT_COUNTER 2u

/** The linear layers of a block, for mcl_gpt_counter_layer(). */
typedef enum mcl_gpt_linear {
    MCL_GPT_WQ = 0,
    MCL_GPT_WK = 1,
    MCL_GPT_WV = 2,
    MCL_GPT_WO = 3,
    MCL_GPT_W_GATE = 4,
    MCL_GPT_W_UP = 5,
    MCL_GPT_W_DOWN = 6
} mcl_gpt_linear;

/** Layer `which` of block `layer` of a model made with MCL_GPT_COUNTER, owned by the model
 *  (never destroy it; read and write its tensors, convert it with mcl_counter_linear_to_f32()
 *  and mcl_counter_linear_from_f32()). NULL for another model, a block or layer out of range.
 *  NULL: gpt may be (then NULL). */
MCL_API mcl_counter_linear *mcl_gpt_counter_layer(mcl_gpt *gpt, int32_t layer,
                                                  mcl_gpt_linear which);

/** The counter layers' update for the next backward passes and replays: lr, lr_scale, beta
 *  and eps as for mcl_counter_linear_backward() (defaults for zeros likewise), and `seed`,
 *  the base seed of the stochastic rounding. The seed of a step is a function of the base seed
 *  and the step last set by mcl_gpt_set_optimizer() (the layers are told apart within it), so
 *  a captured step replays with a new seed each step. Until called: lr 3e-3, lr_scale 0,
 *  beta 0.9, eps 1e-3, seed 12345. Not during a capture. Errors: MCL_ERROR_INVALID_ARGUMENT
 *  (a model without MCL_GPT_COUNTER, a bad descriptor as for mcl_counter_linear_backward()).
 *  NULL: neither gpt nor desc may be. */
MCL_API mcl_status mcl_gpt_set_counter_update(mcl_gpt *gpt,
                                              const mcl_counter_update_desc *desc);

#endif /* MOTIFCL_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif

#endif /* MOTIFCL_H */
