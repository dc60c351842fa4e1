/* The runtime as the layers above it see it (src/ops, src/model, the tests and tools): the
 * descriptive part of a tensor, the context's traits and error state, kernels, dispatches
 * and views. Everything else of the runtime (Vulkan handles, memory blocks, the recording
 * stream) is private to src/vk (private.h). */
#ifndef MCL_VK_RUNTIME_H
#define MCL_VK_RUNTIME_H

#include <stdint.h>

#include "motifcl.h"
#include "../core/diag.h"
#include "spirv_modules.h"
#include "traits.h"

/* A tensor: its context, type and shape. The runtime keeps its memory and hazard state
 * behind it (private.h); ops read these fields and never write them. */
struct mcl_tensor {
    mcl_context *ctx;
    mcl_dtype dtype;
    uint32_t ndim;
    int64_t shape[MCL_MAX_DIMS];
    uint64_t nbytes; /* bytes of the tensor's data (GGUF bytes for a block type) */
};

/* What every context begins with: its error state and its device traits. */
typedef struct mcl_context_head {
    mcl_diag diag;
    mcl_traits traits;
} mcl_context_head;

/* The traits of ctx, decided when it was created. */
static inline const mcl_traits *mcl_traits_of(const mcl_context *ctx)
{
    return &((const mcl_context_head *)(const void *)ctx)->traits;
}

/* The error state of ctx (NULL for a NULL ctx). */
static inline mcl_diag *mcl_diag_of(const mcl_context *ctx)
{
    return ctx ? &((mcl_context_head *)(void *)(uintptr_t)ctx)->diag : NULL;
}

/* Record a failure on ctx: logged, and kept as its last error. Evaluates to the status. */
#define mcl_fail(ctx, ...) mcl_diag_fail(mcl_diag_of(ctx), __VA_ARGS__)
/* Log to ctx's logger. */
#define mcl_ctx_log(ctx, ...) mcl_log(&mcl_diag_of(ctx)->log, __VA_ARGS__)

/* Specialization constants a kernel variant may set besides the workgroup size. */
#define MCL_MAX_SPEC 12

/* Which pipeline an op wants: an embedded module, its interface, and its specialization.
 * Constant 0 is the workgroup's x size (local_size_x_id = 0); spec[i] is constant i + 1. */
typedef struct mcl_kernel_desc {
    mcl_kernel_id id;
    const mcl_spirv_module *module;  /* NULL: the library's own module of id (a tool passes
                                      * its kernel from mcl_spirv_tool_modules) */
    uint32_t binding_count;          /* storage buffers at bindings 0..binding_count-1 */
    uint32_t push_size;              /* bytes of push constants */
    uint32_t local_size_x;           /* 0: 256, clamped to the device's limit */
    uint32_t spec_count;
    uint32_t spec[MCL_MAX_SPEC];
    uint32_t required_subgroup_size; /* 0: the driver's choice */
} mcl_kernel_desc;

/* A pipeline for one (kernel, specialization), created on first use and kept for the
 * context's lifetime. */
typedef struct mcl_kernel mcl_kernel;

mcl_status mcl_kernel_get(mcl_context *ctx, const mcl_kernel_desc *desc,
                          const mcl_kernel **out);
/* The common case: no specialization beyond the default workgroup size. */
mcl_status mcl_kernel_simple(mcl_context *ctx, mcl_kernel_id id, uint32_t binding_count,
                             uint32_t push_size, const mcl_kernel **out);
/* The workgroup's x size the kernel was created with (its desc's, resolved). */
uint32_t mcl_kernel_local_size(const mcl_kernel *kernel);
/* The name of the module a request names: its spirv/ file's stem, the library's or a tool's. */
const char *mcl_kernel_desc_name(const mcl_kernel_desc *desc);

/* Record a dispatch of `kernel` over buffers `reads` (read-only) and `writes`, in binding
 * order: reads first, then writes. The runtime adds the barriers the hazards need, keeps the
 * tensors alive while the work may run, and refuses a tensor larger than one binding. */
mcl_status mcl_dispatch(mcl_context *ctx, const mcl_kernel *kernel, mcl_tensor *const *reads,
                        uint32_t read_count, mcl_tensor *const *writes, uint32_t write_count,
                        const void *push, uint32_t groups_x, uint32_t groups_y,
                        uint32_t groups_z);

/* An object made on a context that holds device resources of its own (a model, a session, a
 * trainable GPT): the context releases them when it is destroyed first, newest first, and
 * keeps its own memory until the last such object is destroyed, so that destroying one after
 * its context is safe. `release` frees the object's tensors and graphs and clears its
 * pointers to them; the object's destroy function must then free only its host memory. */
typedef struct mcl_child {
    struct mcl_child *next;
    void (*release)(struct mcl_child *child);
} mcl_child;
void mcl_context_adopt(mcl_context *ctx, mcl_child *child, void (*release)(mcl_child *child));
/* At the end of the object's destroy function (ctx may be freed by it). */
void mcl_context_disown(mcl_context *ctx, mcl_child *child);
/* MCL_SUCCESS while ctx has not been destroyed; else MCL_ERROR_CONTEXT_DESTROYED (for the
 * entry points of the objects above, which outlive it as handles only). */
mcl_status mcl_context_check(const mcl_context *ctx);

/* What the next dispatch stands for, for the profiler (profiler.c): the operation's name
 * (static storage), the bytes it must move and the FLOPs it does. Without it, a dispatch counts
 * under its kernel's name with the bytes of the buffers it binds. Nothing while no profile
 * runs; cheap either way. */
void mcl_profile_op(mcl_context *ctx, const char *op, double bytes, double flops);

/* The device-local memory left: the largest device-local heap's budget less its use (the
 * largest heap's where none is device-local); the default budget of a model's weights and a
 * session's cache. */
uint64_t mcl_device_memory_left(const mcl_context *ctx);

/* Whether ctx is capturing a graph (recorded work then runs only on replay). */
int mcl_capturing(const mcl_context *ctx);

/* A tensor over `shape` at byte `offset` of owner's memory (offset a multiple of the device's
 * storage buffer offset alignment, the range within owner; not of Q8_0, Q4_0 or Q6_K, whose
 * device layout keeps a row's bytes in two places). It is not on the context's list:
 * its creator destroys it with mcl_tensor_destroy() before the owner. */
mcl_status mcl_tensor_view(mcl_tensor *owner, uint64_t offset, mcl_dtype dtype, uint32_t ndim,
                           const int64_t *shape, mcl_tensor **out);

/* mcl_tensor_create in host-visible memory that kernels read in place: system memory on a
 * device with memory of its own (reads cross the bus), ordinary tensor memory where memory is
 * unified. Each such tensor is an allocation of its own (a model's expert stacks). */
mcl_status mcl_tensor_create_host_pool(mcl_context *ctx, mcl_dtype dtype, uint32_t ndim,
                                       const int64_t *shape, mcl_tensor **out);

/* Whether t (or the tensor t views) lives in that host-visible memory. */
int mcl_tensor_in_host_pool(const mcl_tensor *t);

/* A 1-D u8 tensor over `bytes` at byte `offset` of owner's allocation (which may extend past
 * owner's bytes: a split block type's padding), offset aligned as mcl_tensor_view's. */
mcl_status mcl_tensor_bytes_view(mcl_tensor *owner, uint64_t offset, uint64_t bytes,
                                 mcl_tensor **out);

/* mcl_tensor_upload that never imports src (VK_EXT_external_memory_host): for a file's
 * mapped pages. On an H100 (driver 580.159.04) a tensor written by a copy from a file's
 * imported pages was then read at about 45 GB/s, the device's rate over host memory, for
 * hundreds of milliseconds: a model's products and prefill several times slower (docs/models.md,
 * "Loading"). */
mcl_status mcl_tensor_upload_no_import(mcl_tensor *t, uint64_t offset, const void *src,
                                       uint64_t bytes);

/* t's bytes set to zero (an upload of zeros). */
mcl_status mcl_tensor_zero(mcl_tensor *t);

/* Whether two tensors have the same dimensions. */
int mcl_tensor_same_shape(const mcl_tensor *a, const mcl_tensor *b);

#endif
