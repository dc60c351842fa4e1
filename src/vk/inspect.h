/* What the test suites look at and provoke inside the runtime, beyond runtime.h: where a
 * tensor's bytes are, which transfer paths ran, a device narrowed by hand, and a call the
 * validation layer must report. Not for the library's own use. */
#ifndef MCL_VK_INSPECT_H
#define MCL_VK_INSPECT_H

#include "runtime.h"

/* Where a tensor's bytes are: its block (an identity, to compare) and the range in it. */
typedef struct mcl_placement {
    const void *block;
    uint64_t offset, size;
} mcl_placement;
mcl_placement mcl_inspect_placement(const mcl_tensor *t);

/* The property flags (VkMemoryPropertyFlags) of the memory type that holds t's bytes. */
uint32_t mcl_inspect_memory_flags(const mcl_tensor *t);

/* Transfers that went through imported caller memory, and straight from or to
 * mcl_host_alloc memory, since the context was created. */
void mcl_inspect_transfers(const mcl_context *ctx, uint64_t *imported, uint64_t *pinned);

/* The context's traits, writable: a test narrows the device (less shared memory, say) to
 * reach the plans a smaller device gets. */
mcl_traits *mcl_inspect_traits(mcl_context *ctx);

/* Read the environment again into the context's plan switches (MOTIFCL_QUANT_PATH and
 * MOTIFCL_FORCE's choice of the quantized path, MOTIFCL_QUANT_GEMV_PLAN and the GEMM tuning
 * overrides, MOTIFCL_MAX_BINDING), as if the context were created now; its device, features
 * and limits stay as they are. A context reads the environment only when it is created: a
 * test that varies a switch calls this after setenv. */
void mcl_inspect_reread_environment(mcl_context *ctx);

/* Make a Vulkan call that breaks a valid-usage rule (a buffer of size 0), so that a test can
 * show the validation layer's errors are counted. */
void mcl_inspect_invalid_call(mcl_context *ctx);

#endif
