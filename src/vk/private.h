/* The runtime's own structs and the functions its files call one another by: private to
 * src/vk. The layers above include runtime.h only.
 *
 * The files, lowest first; each calls only files above it in this list (none calls back up):
 *   instance.c     volk, the instance, the validation messenger, Vulkan failures
 *   traits.c       device traits (pure: no device, no environment)
 *   device.c       device choice, feature queries, device creation
 *   tlsf.c, memory.c, memory_stats.c    blocks, pools, the staging ring, statistics
 *   pipeline_cache.c   the pipeline cache and its file per device
 *   pipeline.c     embedded SPIR-V -> pipelines
 *   stream.c       recording, barriers, submission, captures, deferred frees
 *   tensor.c       tensor objects and views
 *   graph.c        captured sequences and their replay
 *   transfer.c     uploads and downloads, pinned host memory
 *   context.c      the context's life and queries: the entry points that stitch the rest */
#ifndef MCL_VK_PRIVATE_H
#define MCL_VK_PRIVATE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <stdatomic.h>
#include <volk.h>

#include "runtime.h"
#include "tlsf.h"

/* Descriptor sets a pool of the stream holds before another pool is chained. */
#define MCL_DESCRIPTOR_POOL_SETS 256
/* Storage buffers one kernel binds at most (the decode attention binds 9; every device the
 * library runs on allows far more a stage). */
#define MCL_MAX_BINDINGS 12

/* A pipeline for one (kernel, specialization) pair, created on first use and kept for the
 * context's lifetime, so that no call pays for pipeline creation twice. */
struct mcl_kernel {
    struct mcl_kernel *next;         /* other variants of the same module */
    mcl_kernel_desc desc;            /* with local_size_x resolved */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t binding_count;
    uint32_t push_size;
    uint32_t local_size_x;
};

/* Usages every block buffer carries: kernels bind tensors as storage buffers, transfers copy
 * to and from them. */
#define MCL_BUFFER_USAGE                                                                      \
    (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |                  \
     VK_BUFFER_USAGE_TRANSFER_DST_BIT)

/* One VkDeviceMemory bound to one VkBuffer, sub-allocated by TLSF (ordinary tensors), by a
 * bump allocator (scratch), or holding a single tensor (dedicated). */
typedef struct mcl_block {
    struct mcl_block *next;
    VkDeviceMemory memory;
    VkBuffer buffer;
    uint64_t size;        /* usable bytes */
    uint64_t reserved;    /* bytes of device memory it holds (>= size) */
    void *mapped;         /* host pointer when the memory type is host-visible */
    uint32_t type;        /* memory type index */
    mcl_memory_class cls;
    int dedicated;
    uint64_t live;        /* allocations in it */
    mcl_tlsf *tlsf;
    mcl_linear linear;
} mcl_block;

/* Where a tensor's bytes are: a range of a block's buffer. */
typedef struct mcl_allocation {
    mcl_block *block;
    uint64_t offset;
    uint64_t size;
} mcl_allocation;

/* Host-visible memory that kernels read in place (system memory on a discrete device, over
 * the bus; ordinary tensor memory where memory is unified): a class of the runtime's own, past
 * the public ones, each tensor an allocation of its own. */
#define MCL_MEMORY_HOST_POOL ((mcl_memory_class)MCL_MEMORY_CLASS_COUNT)

typedef struct mcl_allocator {
    uint32_t tensor_type, staging_type;
    uint32_t host_pool_type;      /* MCL_MEMORY_HOST_POOL's memory type */
    int tensor_mappable;          /* tensors are host-visible and coherent: zero-copy */
    mcl_transfer_mode transfer_mode;
    uint64_t imported_transfers;  /* copies that went through imported host memory */
    uint64_t pinned_transfers;    /* copies straight from or to mcl_host_alloc memory */
    uint64_t block_size, alignment, ring_size;
    mcl_block *pools[MCL_MEMORY_CLASS_COUNT];
    mcl_block *dedicated;
    mcl_block *ring;              /* staging ring, host-visible, mapped */
    mcl_block *host_blocks;       /* pinned memory handed out by mcl_host_alloc */
    uint64_t ring_head;           /* bytes of the ring used by the open batch */
    uint64_t heap_reserved[VK_MAX_MEMORY_HEAPS];
    uint64_t bytes_reserved, bytes_allocated, bytes_allocated_peak;
    uint64_t allocation_count, block_count, dedicated_count;
} mcl_allocator;

/* Something the GPU may still be using when the host lets go of it: released once the
 * batch it was last used in has finished. */
typedef struct mcl_deferred {
    struct mcl_deferred *next;
    uint64_t batch;             /* serial of the batch that must finish first */
    mcl_allocation alloc;
} mcl_deferred;

/* A tensor as the runtime keeps it: what the ops see (runtime.h) first, then its memory and
 * the state that orders and frees it. */
typedef struct mcl_tensor_rt {
    struct mcl_tensor t;
    struct mcl_tensor_rt *prev, *next;  /* the context's list of live tensors */
    mcl_memory_class cls;
    mcl_allocation alloc;
    uint64_t last_batch;   /* serial of the last batch that used it */
    uint32_t graph_refs;   /* graphs that use it: its memory outlives its handle until 0 */
    int orphaned;          /* destroyed by the caller while graphs still used it */
    /* A view (mcl_tensor_view) shares its owner's memory; hazards, batches and graph
     * references are tracked on the owner, so a view and its owner order like one tensor. */
    struct mcl_tensor_rt *owner;
    /* Hazard tracking inside the open batch: the barrier epoch of the last read and write. */
    uint64_t read_epoch;
    uint64_t write_epoch;
} mcl_tensor_rt;

/* A handle is the head of its mcl_tensor_rt (runtime.h's view of it). */
_Static_assert(offsetof(mcl_tensor_rt, t) == 0, "struct mcl_tensor heads mcl_tensor_rt");

/* The runtime's side of a tensor handle. */
static inline mcl_tensor_rt *mcl_rt(const mcl_tensor *t)
{
    return (mcl_tensor_rt *)(uintptr_t)t;
}

/* The tensor that tracks t's hazards: t's owner for a view, else t. */
static inline mcl_tensor_rt *mcl_rt_root(const mcl_tensor *t)
{
    mcl_tensor_rt *r = mcl_rt(t);
    return r->owner ? r->owner : r;
}

/* Descriptor pools of one batch or graph: chained as they fill, reset together. */
typedef struct mcl_desc_pools {
    VkDescriptorPool *pools;
    uint32_t count, capacity;
    uint32_t current, sets_in_current;
} mcl_desc_pools;

/* Batches rotate through a few slots, so that one can be recorded while earlier ones run. */
#define MCL_STREAM_SLOTS 2

/* What a graph captured: its command buffer and descriptor sets, the tensors its commands
 * use (kept alive while it exists), and its dispatches. */
typedef struct mcl_profile_batch mcl_profile_batch;
typedef struct mcl_profiler mcl_profiler;

typedef struct mcl_capture {
    VkCommandBuffer cmd;
    mcl_profile_batch *profile;    /* its timestamps, when captured while profiling */
    mcl_desc_pools desc;
    mcl_tensor_rt **tensors;
    uint32_t tensor_count, tensor_capacity;
    uint32_t dispatches;
    int failed;                    /* a use could not be recorded: the capture is unusable */
} mcl_capture;

typedef struct mcl_slot {
    VkCommandBuffer cmd;
    VkFence fence;
    uint64_t serial;           /* batch submitted from this slot, while in_flight */
    int in_flight;
    mcl_desc_pools desc;       /* descriptor sets of that batch */
} mcl_slot;

/* The ordered stream of work: ops append to the current slot's command buffer until a sync
 * point (or a replay) submits it. */
typedef struct mcl_stream {
    VkCommandPool pool;
    mcl_slot slots[MCL_STREAM_SLOTS];
    uint32_t current;              /* slot being recorded */
    int recording;                 /* its command buffer is begun */
    uint64_t serial;               /* serial of the batch being recorded */
    uint64_t completed;            /* every batch up to this serial has finished */
    uint64_t epoch;                /* bumped by each barrier; starts above every tensor's */
    mcl_deferred *deferred;        /* allocations to free when their batch has finished */
    mcl_capture *capture;          /* the capture being recorded, or NULL */
    int barrier_pending;           /* the next batch starts with a full barrier */
} mcl_stream;

/* The instance-level functions a context calls, loaded from its own instance. volk's global
 * instance table is never filled: filling it per instance is a write every other context's
 * thread may be reading (the header lets contexts live on different threads), and functions of
 * an extension that one instance enabled are not valid on another. */
typedef struct mcl_instance_fns {
    PFN_vkDestroyInstance vkDestroyInstance;
    PFN_vkEnumeratePhysicalDevices vkEnumeratePhysicalDevices;
    PFN_vkGetPhysicalDeviceProperties vkGetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2;
    PFN_vkGetPhysicalDeviceFeatures2 vkGetPhysicalDeviceFeatures2;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties vkGetPhysicalDeviceQueueFamilyProperties;
    PFN_vkGetPhysicalDeviceMemoryProperties vkGetPhysicalDeviceMemoryProperties;
    PFN_vkGetPhysicalDeviceMemoryProperties2 vkGetPhysicalDeviceMemoryProperties2;
    PFN_vkEnumerateDeviceExtensionProperties vkEnumerateDeviceExtensionProperties;
    PFN_vkCreateDevice vkCreateDevice;
    PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT;          /* validation */
    PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT;        /* validation */
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV
        vkGetPhysicalDeviceCooperativeMatrixPropertiesNV;                      /* may be NULL */
} mcl_instance_fns;
/* Why a context counts its device as lost (mcl_context.lost). */
typedef enum mcl_lost {
    MCL_LOST_NO = 0,
    MCL_LOST_DEVICE,       /* a call returned VK_ERROR_DEVICE_LOST */
    MCL_LOST_TIMEOUT,      /* a fence did not signal within the fence timeout */
} mcl_lost;

struct mcl_context {
    mcl_context_head head;         /* first: the ops' view (runtime.h) */
    mcl_env_settings env;          /* what the environment asked for (nothing, if ignored) */
    VkInstance instance;
    mcl_instance_fns vki;          /* its functions */
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    struct VolkDeviceTable vk;
    VkPhysicalDeviceMemoryProperties memory_properties;
    mcl_device_info info;          /* filled at creation; budgets refreshed on query */
    uint64_t max_buffer_size;      /* maxBufferSize (Vulkan 1.3), else maxMemoryAllocationSize */
    uint64_t validation_errors;    /* counted by the debug messenger */
    mcl_stream stream;
    mcl_allocator allocator;
    uint64_t host_import_alignment; /* minImportedHostPointerAlignment, when enabled */
    int pipeline_stats;            /* log compiled-kernel statistics (enabled on the device) */
    uint32_t pipelines_created;    /* and the seconds vkCreateComputePipelines took for them */
    double pipeline_seconds;
    mcl_kernel *kernels[MCL_KERNEL_COUNT];     /* variants, per module */
    VkShaderModule modules[MCL_KERNEL_COUNT];  /* created on first use */
    VkPipelineCache pipeline_cache;
    char *pipeline_cache_path;     /* its file (pipeline_cache.c), NULL when not persistent */
    uint64_t pipeline_cache_loaded_bytes;  /* driver data given to it from the file, 0 if none */
    uint64_t pipeline_cache_loaded_sum;    /* that data's checksum: unchanged data is not saved */
    mcl_tensor_rt *tensors;        /* live tensors, destroyed with the context */
    struct mcl_graph *graphs;      /* live graphs, destroyed with the context */
    mcl_profiler *profiler;        /* profiler.c, NULL until first started */
    mcl_child *children;           /* models, sessions, GPTs: released with the context */
    uint32_t child_count;          /* adopted and not yet disowned (released ones too) */
    int destroyed;                 /* mcl_context_destroy ran; kept for the children */
    _Atomic(uintptr_t) caller;     /* the thread inside a guarded call (mcl_context_enter) */
    uint32_t depth;                /* its nesting, touched by that thread only */
    /* The device was lost or a fence wait timed out: every later submission or wait fails
     * with MCL_ERROR_DEVICE_LOST; only destruction is left (mcl_context_is_lost). */
    mcl_lost lost;
    uint64_t fence_waits;          /* fence waits so far, for MOTIFCL_FAULT */
};

/* mcl_traits_of and mcl_diag_of read the head of a context (runtime.h). */
_Static_assert(offsetof(struct mcl_context, head) == 0, "mcl_context_head heads mcl_context");

/* The context's logger. */
#define MCL_LOG(ctx) (&(ctx)->head.diag.log)

/* context.c: calls on one context must not overlap (motifcl.h). The calls that record,
 * submit, wait or create device objects enter the context first: a second thread that
 * arrives while another is inside is refused with MCL_ERROR_CONTEXT_BUSY (nothing else of
 * the context is touched), and every call after the context was destroyed with
 * MCL_ERROR_CONTEXT_DESTROYED. Nested entries from the same thread are counted. */
mcl_status mcl_context_enter(mcl_context *ctx);
void mcl_context_leave(mcl_context *ctx);

/* profiler.c: hooks of the stream (stream.c) and graphs (graph.c); each does nothing while
 * no profile runs. */
void mcl_profiler_destroy(mcl_context *ctx);
void mcl_profile_batch_destroy(mcl_context *ctx, mcl_profile_batch *batch);
mcl_status mcl_profile_capture_begin(mcl_context *ctx, mcl_capture *capture);
void mcl_profile_slot_begin(mcl_context *ctx, uint32_t slot, VkCommandBuffer cmd);
mcl_status mcl_profile_slot_done(mcl_context *ctx, uint32_t slot);
/* Around a dispatch: the first writes its start (1: timed), the second its end and row. */
int mcl_profile_before(mcl_context *ctx, VkCommandBuffer cmd);
void mcl_profile_after(mcl_context *ctx, VkCommandBuffer cmd, const mcl_kernel *kernel,
                       double bound_bytes, int timed);
/* After a replay of a graph with timestamps: waits for it and reads them. */
mcl_status mcl_profile_replayed(mcl_context *ctx, mcl_capture *capture);
/* The profile as a table; what MOTIFCL_PROFILE asks for, at the context's destruction. */
void mcl_profiler_print(const mcl_context *ctx, FILE *out);
void mcl_profiler_env_report(mcl_context *ctx);

/* instance.c */
VkResult mcl_volk_init(void);
mcl_status mcl_instance_create(mcl_context *ctx, uint32_t validation);
/* Map a VkResult to a status, logging `what` failed; VK_ERROR_DEVICE_LOST marks the
 * context lost. */
mcl_status mcl_vk_fail(mcl_context *ctx, VkResult result, const char *what);

/* device.c */
mcl_status mcl_device_choose(mcl_context *ctx, const mcl_context_desc *desc);
/* Query the chosen device, decide the traits (traits.c), create the device and its queue. */
mcl_status mcl_device_create(mcl_context *ctx);

/* memory.c */
mcl_status mcl_memory_init(mcl_context *ctx);
void mcl_memory_destroy(mcl_context *ctx);
mcl_status mcl_alloc(mcl_context *ctx, uint64_t size, mcl_memory_class cls, mcl_allocation *out);
/* Free at once: the caller knows the GPU no longer uses it (see mcl_stream_release). */
void mcl_free(mcl_context *ctx, mcl_allocation *alloc);
/* The staging ring, created on first use. */
mcl_status mcl_staging_ring(mcl_context *ctx, mcl_block **out);
/* A host-visible block of the staging memory type, outside the pools (benchmarks). */
mcl_status mcl_host_block_create(mcl_context *ctx, uint64_t size, mcl_block **out);
void mcl_host_block_destroy(mcl_context *ctx, mcl_block *block);
/* Pinned host memory (mcl_host_alloc): a mapped block on the context's list, and its removal
 * (the caller has made sure no work uses it). */
mcl_status mcl_host_memory_alloc(mcl_context *ctx, uint64_t bytes, void **out);
void mcl_host_memory_free(mcl_context *ctx, void *ptr);
/* The mcl_host_alloc block holding [ptr, ptr + bytes), with ptr's offset in it, or NULL. */
mcl_block *mcl_host_block_find(const mcl_context *ctx, const void *ptr, uint64_t bytes,
                               uint64_t *offset);
void mcl_memory_stats_fill(const mcl_context *ctx, mcl_memory_stats *stats);

/* pipeline_cache.c */
/* Bytes of MotifCL's header in front of the driver's data in a cache file. */
#define MCL_PIPELINE_CACHE_HEADER 32
/* What a cache file must have been written for: this device's VkPhysicalDeviceProperties. */
typedef struct mcl_pipeline_cache_expect {
    uint32_t vendor_id, device_id, driver_version;
    uint8_t uuid[VK_UUID_SIZE];    /* pipelineCacheUUID */
} mcl_pipeline_cache_expect;
/* Why the bytes of a cache file (`size` of them) may not be given to the driver, or NULL when
 * they may: then *data and *data_size are the driver's part. Checks MotifCL's header (magic,
 * format version, driver version, data size, FNV-1a 64 checksum of the data) and the Vulkan
 * header at the front of the data (headerSize, headerVersion, vendorID, deviceID,
 * pipelineCacheUUID). Pure: no device, no file; reads nothing outside [file, file + size). */
const char *mcl_pipeline_cache_check(const void *file, size_t size,
                                     const mcl_pipeline_cache_expect *want, const void **data,
                                     size_t *data_size);
/* MotifCL's header for `data_size` bytes of driver data at `data`, into `out`. */
void mcl_pipeline_cache_header(uint8_t out[MCL_PIPELINE_CACHE_HEADER], uint32_t driver_version,
                               const void *data, size_t data_size);
/* Create ctx->pipeline_cache, from the device's cache file unless `persistent` is 0, the
 * environment says off, or there is no cache folder. A file that cannot be used is a
 * warning; only vkCreatePipelineCache failing without data fails. */
mcl_status mcl_pipeline_cache_create(mcl_context *ctx, int persistent);
/* Save the cache to its file if pipelines were created since it was loaded and its data
 * changed (failures are warnings), then destroy it. */
void mcl_pipeline_cache_destroy(mcl_context *ctx);

/* pipeline.c */
void mcl_kernels_destroy(mcl_context *ctx);

/* stream.c */
mcl_status mcl_stream_init(mcl_context *ctx);
void mcl_stream_destroy(mcl_context *ctx);
mcl_status mcl_stream_finish(mcl_context *ctx);
/* Begin the open batch's command buffer if it is not yet recording. */
mcl_status mcl_stream_begin(mcl_context *ctx);
/* The command buffer commands go to: the capture's while capturing, else the open batch's
 * (begun by mcl_stream_begin). */
VkCommandBuffer mcl_stream_cmd(const mcl_context *ctx);
/* Submit the open batch without waiting; `extra`, if not VK_NULL_HANDLE, is submitted right
 * after it in the same vkQueueSubmit. Returns the serial the submission carries. */
mcl_status mcl_stream_flush(mcl_context *ctx, VkCommandBuffer extra, uint64_t *serial);
/* A full barrier between everything before and everything after, in the current buffer. */
void mcl_stream_full_barrier(mcl_context *ctx);
/* Record into `capture` (its command buffer begun) instead of the open batch, until
 * mcl_stream_capture_end; the open batch is submitted first. */
mcl_status mcl_stream_capture_begin(mcl_context *ctx, mcl_capture *capture);
void mcl_stream_capture_end(mcl_context *ctx);
/* Descriptor sets from a pool chain. */
void mcl_desc_pools_destroy(mcl_context *ctx, mcl_desc_pools *pools);
/* Emit a barrier if the next command conflicts with earlier ones, then mark its accesses. */
void mcl_stream_track(mcl_context *ctx, mcl_tensor *const *reads, uint32_t read_count,
                      mcl_tensor *const *writes, uint32_t write_count);
/* A barrier making transfer and shader writes visible to the host. */
void mcl_stream_barrier_to_host(mcl_context *ctx);
/* Free `alloc` once the work recorded so far no longer needs it. */
void mcl_stream_release(mcl_context *ctx, mcl_allocation *alloc, uint64_t last_batch);
/* Whether recorded or submitted work that has not finished may use `t`. */
int mcl_stream_pending(const mcl_context *ctx, const mcl_tensor *t);
/* MCL_ERROR_DEVICE_LOST, with why the context is lost, for a call made after the loss. */
mcl_status mcl_stream_lost(mcl_context *ctx);

/* tensor.c */
/* Free a tensor's memory once no batch or graph can use it. */
void mcl_tensor_release(mcl_tensor_rt *t);

/* graph.c */
/* Destroy every graph of the context (at context destruction). */
void mcl_graphs_destroy_all(mcl_context *ctx);

/* transfer.c */
mcl_status mcl_transfer_upload(mcl_context *ctx, mcl_tensor *dst, uint64_t offset,
                               const void *src, uint64_t bytes);
mcl_status mcl_transfer_download(mcl_context *ctx, mcl_tensor *src, uint64_t offset, void *dst,
                                 uint64_t bytes);

#endif
