/* Backward passes of embedding and cross-entropy (RoPE's is in layout.c, beside its forward:
 *    the same kernel with its BACKWARD constant).
 *
 *  - Embedding: embedding_backward_f32.comp, one workgroup per block of table rows scanning
 *    every id in order; each dtable element has one owner adding its terms in increasing row
 *    order, so there are no float atomics and repeated ids give the same bits every run.
 *    Cost: V * D zeroing, R * D additions, nblocks * R id reads (nblocks <= 256) and, per
 *    chunk of WG ids, a log2(WG)-step prefix sum that compacts the block's matches. Ids
 *    that all fall in one block serialise on that workgroup (R * D / WG adds each).
 *  - Cross-entropy: count_targets_u32.comp counts the valid rows into a scratch word on the
 *    GPU (no host round trip), then cross_entropy_backward_f32.comp writes every element. */
#include <math.h>

#include "../vk/runtime.h"

/* As in layout.c: a grid-stride loop covers any size; this is Vulkan's minimum
 * maxComputeWorkGroupCount[0]. */
#define MCL_MAX_GROUPS 65535u

/* Workgroups of the embedding backward: each reads all R ids, so more blocks cost more id
 * reads; 256 fill a GPU and keep the scan (256 * R shared-memory reads in all) small next to
 * the R * D additions for the usual D of hundreds or more. */
#define MCL_EMB_MAX_BLOCKS 256u
#define MCL_EMB_WG 128u
/* count_targets_u32 reduces in a power-of-2 shared-memory tree. */
#define MCL_COUNT_WG 128u

typedef struct emb_back_push {
    uint32_t rows, dim, vocab, block, nblocks;
} emb_back_push;

typedef struct count_push {
    uint32_t rows, vocab;
} count_push;

typedef struct ce_back_push {
    uint32_t n, vocab;
    float dloss;
} ce_back_push;

static uint32_t grid_groups(const mcl_kernel *kernel, uint64_t n)
{
    uint64_t groups = (n + mcl_kernel_local_size(kernel) - 1) / mcl_kernel_local_size(kernel);
    return groups > MCL_MAX_GROUPS ? MCL_MAX_GROUPS : (uint32_t)groups;
}

mcl_status mcl_embedding_backward(mcl_context *ctx, const mcl_tensor *ids, const mcl_tensor *dout,
                                  mcl_tensor *dtable)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!ids || !dout || !dtable)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_embedding_backward: NULL tensor");
    if (ids->ctx != ctx || dout->ctx != ctx || dtable->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT,
                        "mcl_embedding_backward: tensor of another context");
    if (ids->dtype != MCL_DTYPE_I32 || dout->dtype != MCL_DTYPE_F32 ||
        dtable->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_embedding_backward: ids are i32, dout and dtable f32");
    if (dtable->ndim != 2 || dout->ndim != ids->ndim + 1)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_embedding_backward: dtable is [V, D] and dout is ids' shape plus [D]");
    for (uint32_t i = 0; i < ids->ndim; i++) {
        if (dout->shape[i] != ids->shape[i])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_embedding_backward: dout is ids' shape plus [D]");
    }
    if (dout->shape[ids->ndim] != dtable->shape[1])
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_embedding_backward: dout's last dimension is the table's D");
    if (dtable == dout)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_embedding_backward: dtable aliases dout");
    if (mcl_tensor_numel(dout) > (int64_t)UINT32_MAX ||
        mcl_tensor_numel(dtable) > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_embedding_backward: more than 2^32-1 elements");
    int64_t vocab = dtable->shape[0], dim = dtable->shape[1];
    int64_t rows = mcl_tensor_numel(ids);

    uint32_t nblocks = vocab < (int64_t)MCL_EMB_MAX_BLOCKS ? (uint32_t)vocab : MCL_EMB_MAX_BLOCKS;
    if (nblocks == 0)
        return MCL_SUCCESS;
    uint32_t block = (uint32_t)((vocab + nblocks - 1) / nblocks);
    nblocks = (uint32_t)((vocab + block - 1) / block);
    emb_back_push push = {
        .rows = (uint32_t)rows,
        .dim = (uint32_t)dim,
        .vocab = (uint32_t)vocab,
        .block = block,
        .nblocks = nblocks,
    };
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_EMBEDDING_BACKWARD_F32,
        .binding_count = 3,
        .push_size = sizeof push,
        .local_size_x = MCL_EMB_WG,
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    mcl_tensor *reads[2] = {(mcl_tensor *)ids, (mcl_tensor *)dout};
    return mcl_dispatch(ctx, kernel, reads, 2, &dtable, 1, &push, nblocks, 1, 1);
}

mcl_status mcl_cross_entropy_backward(mcl_context *ctx, const mcl_tensor *logits,
                                      const mcl_tensor *targets, const mcl_tensor *lse,
                                      float dloss, mcl_tensor *dlogits)
{
    static const char op[] = "mcl_cross_entropy_backward";
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!logits || !targets || !lse || !dlogits)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: NULL tensor", op);
    if (logits->ctx != ctx || targets->ctx != ctx || lse->ctx != ctx || dlogits->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: tensor of another context", op);
    if (logits->dtype != MCL_DTYPE_F32 || targets->dtype != MCL_DTYPE_I32 ||
        lse->dtype != MCL_DTYPE_F32 || dlogits->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "%s: logits, lse and dlogits are f32, targets i32", op);
    if (logits->ndim != 2 || targets->ndim != 1 || targets->shape[0] != logits->shape[0] ||
        lse->ndim != 1 || lse->shape[0] != logits->shape[0] ||
        !mcl_tensor_same_shape(logits, dlogits))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: logits and dlogits [N, V], targets and lse [N]", op);
    if (!isfinite(dloss))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: dloss is not finite", op);
    if (dlogits == lse)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: dlogits aliases lse", op);
    int64_t rows = logits->shape[0], vocab = logits->shape[1];
    if (mcl_tensor_numel(logits) > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: more than 2^32-1 logits", op);

    mcl_kernel_desc count_desc = {
        .id = MCL_KERNEL_COUNT_TARGETS_U32,
        .binding_count = 2,
        .push_size = sizeof(count_push),
        .local_size_x = MCL_COUNT_WG,
    };
    int in_place = dlogits == logits;
    mcl_kernel_desc grad_desc = {
        .id = MCL_KERNEL_CROSS_ENTROPY_BACKWARD_F32,
        .binding_count = 5,
        .push_size = sizeof(ce_back_push),
        .spec_count = 1,
        .spec = {(uint32_t)in_place},
    };
    const mcl_kernel *count_kernel, *grad_kernel;
    mcl_status status;
    if ((status = mcl_kernel_get(ctx, &count_desc, &count_kernel)) != MCL_SUCCESS ||
        (status = mcl_kernel_get(ctx, &grad_desc, &grad_kernel)) != MCL_SUCCESS)
        return status;

    int64_t one = 1;
    mcl_tensor *count = NULL;
    if ((status = mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &one, &count)) != MCL_SUCCESS)
        return status;
    count_push cpush = {.rows = (uint32_t)rows, .vocab = (uint32_t)vocab};
    mcl_tensor *count_reads[1] = {(mcl_tensor *)targets};
    status = mcl_dispatch(ctx, count_kernel, count_reads, 1, &count, 1, &cpush, 1, 1, 1);
    if (status == MCL_SUCCESS) {
        ce_back_push push = {
            .n = (uint32_t)(rows * vocab),
            .vocab = (uint32_t)vocab,
            .dloss = dloss,
        };
        mcl_tensor *reads[4] = {(mcl_tensor *)logits, (mcl_tensor *)targets,
                                (mcl_tensor *)lse, count};
        status = mcl_dispatch(ctx, grad_kernel, reads, 4, &dlogits, 1, &push,
                                     grid_groups(grad_kernel, (uint64_t)push.n), 1, 1);
    }
    /* Safe with the dispatches still recorded: the memory is held until they have run. */
    mcl_tensor_destroy(count);
    return status;
}
