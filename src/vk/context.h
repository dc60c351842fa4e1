/* The context and tensor as the library sees them. Internal: nothing here is public. */
#ifndef MCL_VK_CONTEXT_H
#define MCL_VK_CONTEXT_H

#include <stdint.h>

#include <volk.h>

#include "motifcl.h"
#include "../core/log.h"
#include "spirv_modules.h"

/* Descriptor sets a pool of the stream holds before another pool is chained. */
#define MCL_DESCRIPTOR_POOL_SETS 256
/* Storage buffers one kernel binds at most. */
#define MCL_MAX_BINDINGS 8

/* A pipeline for one embedded kernel, created on first use and kept for the context's
 * lifetime, so that no call pays for pipeline creation twice. */
typedef struct mcl_kernel {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t binding_count;
    uint32_t push_size;
    uint32_t local_size_x;
} mcl_kernel;

/* A device buffer with its memory. */
typedef struct mcl_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    uint64_t size;
    void *mapped;  /* host pointer for host-visible buffers, else NULL */
} mcl_buffer;

/* Something the GPU may still be using when the host lets go of it: released once the
 * batch it was last used in has finished. */
typedef struct mcl_deferred {
    struct mcl_deferred *next;
    uint64_t batch;             /* serial of the batch that must finish first */
    mcl_buffer buffer;
} mcl_deferred;

struct mcl_tensor {
    mcl_context *ctx;
    struct mcl_tensor *prev, *next;  /* the context's list of live tensors */
    mcl_dtype dtype;
    uint32_t ndim;
    int64_t shape[MCL_MAX_DIMS];
    uint64_t nbytes;
    mcl_buffer buffer;
    uint64_t last_batch;   /* serial of the last batch that used it */
    /* Hazard tracking inside the open batch: the barrier epoch of the last read and write. */
    uint64_t read_epoch;
    uint64_t write_epoch;
};

/* The open batch: one command buffer that ops append to until a sync point submits it. */
typedef struct mcl_stream {
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    int recording;                 /* cmd is begun and holds commands */
    uint64_t serial;               /* serial of the batch being recorded */
    uint64_t completed;            /* serial of the last batch known finished */
    uint64_t epoch;                /* bumped by each barrier; starts above every tensor's */
    VkDescriptorPool *desc_pools;  /* pools used by the open batch; reset when it finishes */
    uint32_t desc_pool_count, desc_pool_capacity;
    uint32_t desc_pool_current, desc_sets_in_current;
    mcl_deferred *deferred;        /* resources to free when their batch has finished */
    mcl_buffer *staging;           /* upload staging buffers of the open batch */
    uint32_t staging_count, staging_capacity;
} mcl_stream;

struct mcl_context {
    mcl_logger log;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    struct VolkDeviceTable vk;
    VkPhysicalDeviceMemoryProperties memory_properties;
    mcl_device_info info;          /* filled at creation; budgets refreshed on query */
    uint64_t validation_errors;    /* counted by the debug messenger */
    mcl_stream stream;
    mcl_kernel kernels[MCL_KERNEL_COUNT];
    VkPipelineCache pipeline_cache;
    mcl_tensor *tensors;           /* live tensors, destroyed with the context */
    char last_error[512];
};

/* Record a failure: log it and keep it as the context's last error. Returns `status`. */
mcl_status mcl_fail(mcl_context *ctx, mcl_status status, const char *fmt, ...)
    MCL_PRINTF(3, 4);

/* Map a VkResult to a status, logging `what` failed. */
mcl_status mcl_vk_fail(mcl_context *ctx, VkResult result, const char *what);

/* device.c: feature and quirk resolution, in quirks.c. */
void mcl_quirks_apply(mcl_context *ctx, const char *profile);
mcl_status mcl_profile_validate(const char *profile);

/* memory.c */
mcl_status mcl_buffer_create(mcl_context *ctx, uint64_t size, int host_visible,
                             mcl_buffer *out);
void mcl_buffer_destroy(mcl_context *ctx, mcl_buffer *buffer);

/* pipeline.c */
mcl_status mcl_kernel_get(mcl_context *ctx, mcl_kernel_id id, uint32_t binding_count,
                          uint32_t push_size, const mcl_kernel **out);
void mcl_kernels_destroy(mcl_context *ctx);

/* stream.c */
mcl_status mcl_stream_init(mcl_context *ctx);
void mcl_stream_destroy(mcl_context *ctx);
/* Record a dispatch of `kernel` over buffers `reads` (read-only) and `writes`, in binding
 * order: reads first, then writes. Emits the barriers the hazards need. */
mcl_status mcl_stream_dispatch(mcl_context *ctx, const mcl_kernel *kernel,
                               mcl_tensor *const *reads, uint32_t read_count,
                               mcl_tensor *const *writes, uint32_t write_count,
                               const void *push, uint32_t groups_x, uint32_t groups_y,
                               uint32_t groups_z);
mcl_status mcl_stream_upload(mcl_context *ctx, mcl_tensor *dst, uint64_t offset,
                             const void *src, uint64_t bytes);
mcl_status mcl_stream_download(mcl_context *ctx, mcl_tensor *src, uint64_t offset, void *dst,
                               uint64_t bytes);
mcl_status mcl_stream_finish(mcl_context *ctx);
/* Free `buffer` once the work recorded so far no longer needs it. */
void mcl_stream_release(mcl_context *ctx, mcl_buffer *buffer, uint64_t last_batch);

#endif
