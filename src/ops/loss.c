/* Losses: softmax cross-entropy.
 *
 * Two dispatches: cross_entropy_f32 computes each row's logsumexp and loss (one workgroup per
 * row) into a scratch tensor, and mean_reduce_f32 averages the valid rows in one workgroup in
 * a fixed order. Summing rows with float atomics would make the loss depend on the order the
 * workgroups happened to finish in; this way a run repeats bit for bit. */
#include "../vk/runtime.h"

/* One workgroup per row; a grid-stride loop over rows covers more than this many. */
#define MCL_MAX_LOSS_GROUPS 65535u
/* Both kernels reduce in shared-memory trees, which need a power-of-2 workgroup; 128 is the
 * most Vulkan guarantees. A row of a 32k vocabulary gives each invocation 256 columns. */
#define MCL_LOSS_WG 128u

typedef struct cross_entropy_push {
    uint32_t rows, vocab, has_lse;
} cross_entropy_push;

typedef struct mean_push {
    uint32_t rows;
} mean_push;

static mcl_status loss_kernel(mcl_context *ctx, mcl_kernel_id id, uint32_t bindings,
                              uint32_t push_size, const mcl_kernel **out)
{
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = bindings,
        .push_size = push_size,
        .local_size_x = MCL_LOSS_WG,
    };
    return mcl_kernel_get(ctx, &desc, out);
}

mcl_status mcl_cross_entropy(mcl_context *ctx, const mcl_tensor *logits, const mcl_tensor *targets,
                             mcl_tensor *loss, mcl_tensor *lse)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!logits || !targets || !loss)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_cross_entropy: NULL tensor");
    if (logits->ctx != ctx || targets->ctx != ctx || loss->ctx != ctx || (lse && lse->ctx != ctx))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT,
                        "mcl_cross_entropy: tensor of another context");
    if (logits->dtype != MCL_DTYPE_F32 || targets->dtype != MCL_DTYPE_I32 ||
        loss->dtype != MCL_DTYPE_F32 || (lse && lse->dtype != MCL_DTYPE_F32))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_cross_entropy: logits, loss and lse are f32, targets i32");
    if (logits->ndim != 2 || targets->ndim != 1 || targets->shape[0] != logits->shape[0] ||
        loss->ndim != 1 || loss->shape[0] != 1 ||
        (lse && (lse->ndim != 1 || lse->shape[0] != logits->shape[0])))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_cross_entropy: logits [N, V], targets [N], loss [1], lse [N]");
    if (loss == logits || lse == logits || lse == loss)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_cross_entropy: outputs alias each other or the logits");
    int64_t rows = logits->shape[0], vocab = logits->shape[1];
    if (mcl_tensor_numel(logits) > (int64_t)UINT32_MAX || 2 * rows > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_cross_entropy: more than 2^32-1 logits");

    const mcl_kernel *row_kernel, *mean_kernel;
    mcl_status status;
    if ((status = loss_kernel(ctx, MCL_KERNEL_CROSS_ENTROPY_F32, 4, sizeof(cross_entropy_push),
                              &row_kernel)) != MCL_SUCCESS ||
        (status = loss_kernel(ctx, MCL_KERNEL_MEAN_REDUCE_F32, 2, sizeof(mean_push),
                              &mean_kernel)) != MCL_SUCCESS)
        return status;

    /* Per-row losses, then per-row valid flags: [2, N]. */
    int64_t scratch_shape[2] = {2, rows};
    mcl_tensor *scratch = NULL;
    if ((status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, scratch_shape, &scratch)) !=
        MCL_SUCCESS)
        return status;
    cross_entropy_push push = {
        .rows = (uint32_t)rows,
        .vocab = (uint32_t)vocab,
        .has_lse = lse != NULL,
    };
    /* Without an lse the kernel still has a binding 3: the loss stands in, unwritten there
     * (has_lse = 0) and written by the second dispatch. */
    mcl_tensor *row_reads[2] = {(mcl_tensor *)logits, (mcl_tensor *)targets};
    mcl_tensor *row_writes[2] = {scratch, lse ? lse : loss};
    uint32_t groups = rows > (int64_t)MCL_MAX_LOSS_GROUPS ? MCL_MAX_LOSS_GROUPS : (uint32_t)rows;
    status = mcl_dispatch(ctx, row_kernel, row_reads, 2, row_writes, 2, &push, groups, 1, 1);
    if (status == MCL_SUCCESS) {
        mean_push mpush = {.rows = (uint32_t)rows};
        status = mcl_dispatch(ctx, mean_kernel, &scratch, 1, &loss, 1, &mpush, 1, 1, 1);
    }
    /* Safe with the dispatches still recorded: the memory is held until they have run. */
    mcl_tensor_destroy(scratch);
    return status;
}
