/* Sampling on the device (sample_f32.comp) and the scatter of a batch's rows into the rows
 * of their sequences (scatter_rows_u32.comp): the ops a session's decode loop ends with, so
 * that the host reads back token ids instead of logits. */
#include "ops_internal.h"

#include "../vk/runtime.h"

/* sample_f32.comp's workgroup: its reductions hold at most MCL_REDUCE_MAX_WG (256). */
#define SAMPLE_WG 256u

static int ours(const mcl_context *ctx, const mcl_tensor *t)
{
    return t && t->ctx == ctx;
}

mcl_status mcl_sample_rows(mcl_context *ctx, mcl_tensor *logits, mcl_tensor *params,
                           uint32_t stride, uint32_t count, mcl_tensor *tokens)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!ours(ctx, logits) || !ours(ctx, params) || !ours(ctx, tokens))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_sample_rows: a tensor is NULL or of another context");
    if (logits->dtype != MCL_DTYPE_F32 || params->dtype != MCL_DTYPE_I32 ||
        tokens->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_sample_rows: logits f32, params and tokens i32");
    if (logits->ndim != 2)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_sample_rows: logits [rows, vocab]");
    uint64_t vocab = (uint64_t)logits->shape[1];
    if (count == 0 || stride < MCL_SAMPLE_HEADER || vocab == 0 || vocab > UINT32_MAX ||
        params->nbytes < 4ull * stride * count || tokens->nbytes < 4ull * count ||
        count > 65535)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_sample_rows: %u rows need params of %u words each and a token "
                        "each", count, stride);
    struct {
        uint32_t vocab, stride;
    } push = {(uint32_t)vocab, stride};
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_SAMPLE_F32,
        .binding_count = 3,
        .push_size = sizeof push,
        .local_size_x = SAMPLE_WG <= mcl_traits_of(ctx)->max_invocations
                            ? SAMPLE_WG
                            : mcl_traits_of(ctx)->max_invocations,
        .spec_count = 1,
        .spec = {(uint32_t)mcl_rows_use_subgroup(ctx)},
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    mcl_tensor *reads[2] = {logits, params};
    return mcl_dispatch(ctx, kernel, reads, 2, &tokens, 1, &push, count, 1, 1);
}

mcl_status mcl_scatter_rows(mcl_context *ctx, mcl_tensor *src, mcl_tensor *idx,
                            uint32_t offset, mcl_tensor *dst)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!ours(ctx, src) || !ours(ctx, idx) || !ours(ctx, dst))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_scatter_rows: a tensor is NULL or of another context");
    if (mcl_dtype_size(src->dtype) != 4 || dst->dtype != src->dtype ||
        idx->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_scatter_rows: src and dst of one 4-byte dtype, idx i32");
    if (src->ndim != 2 || dst->ndim != 2 || src->shape[1] != dst->shape[1] ||
        src->shape[0] > 65535 || (uint64_t)offset + (uint64_t)src->shape[0] >
                                     (uint64_t)mcl_tensor_numel(idx) ||
        src->shape[1] > UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_scatter_rows: src [rows, width] and dst [*, width], idx holding "
                        "rows indices from offset");
    struct {
        uint32_t width, offset;
    } push = {(uint32_t)src->shape[1], offset};
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_simple(ctx, MCL_KERNEL_SCATTER_ROWS_U32, 3, sizeof push,
                                          &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t size = mcl_kernel_local_size(kernel);
    uint64_t groups = (src->shape[1] + size - 1) / size;
    if (groups > 65535)
        groups = 65535;
    mcl_tensor *reads[2] = {src, idx};
    return mcl_dispatch(ctx, kernel, reads, 2, &dst, 1, &push, (uint32_t)groups,
                        (uint32_t)src->shape[0], 1);
}
