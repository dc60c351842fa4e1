/* GPU dequantization of a block-quantised tensor (dequant_q.comp), with the decoders the
 * matmul kernels use. */
#include "matmul_quant.h"

/* Invocations per workgroup. */
#define DEQUANT_THREADS 256u
/* Vulkan guarantees 65535 workgroups per dimension. */
#define DEQUANT_MAX_GROUPS 65535u

typedef struct dequant_push {
    uint32_t blocks, dlo;
} dequant_push;

mcl_status mcl_dequantize_tensor_ex(mcl_context *ctx, const mcl_tensor *cq, mcl_tensor *out,
                                    uint32_t pb)
{
    mcl_tensor *q = (mcl_tensor *)cq;
    if (!ctx || !q || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (q->ctx != ctx || out->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT,
                        "mcl_dequantize_tensor: tensor of another context");
    int fmt = mcl_quant_format(q->dtype);
    if (fmt < 0 || out->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_dequantize_tensor takes a block-quantised q and an f32 out");
    int same = q->ndim == out->ndim;
    for (uint32_t i = 0; same && i < q->ndim; i++)
        same = q->shape[i] == out->shape[i];
    if (!same)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_dequantize_tensor: out must have q's shape");
    if (q->nbytes > mcl_traits_of(ctx)->max_binding_bytes)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_dequantize_tensor: a %s tensor of %llu bytes is larger than one "
                        "storage-buffer binding", mcl_dtype_name(q->dtype),
                        (unsigned long long)q->nbytes);
    /* Q6_K has one piece size: any non-zero pb means it. */
    uint32_t spec_pb = fmt == (int)MCL_QFMT_Q6_K || !pb ? MCL_QUANT_DEQUANT_PB : pb;
    uint32_t ppb = pb ? mcl_quant_pieces((uint32_t)fmt, spec_pb) : 0;
    if (pb && !ppb)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_dequantize_tensor: no pieces of %u bytes in %s", pb,
                        mcl_dtype_name(q->dtype));

    uint64_t per_block = (uint64_t)mcl_dtype_block_weights(q->dtype);
    uint64_t blocks = (uint64_t)mcl_tensor_numel(q) / per_block;
    uint64_t units = blocks * (pb ? ppb : per_block / 4);
    uint32_t k = (uint32_t)q->shape[q->ndim - 1];
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_DEQUANT_Q,
        .binding_count = 3,
        .push_size = sizeof(dequant_push),
        .local_size_x = DEQUANT_THREADS,
        .spec_count = 3,
        .spec = {(uint32_t)fmt, pb != 0, spec_pb},
    };
    weight_part w;
    mcl_status status = mcl_weight_part_views(ctx, q, (uint32_t)(mcl_tensor_numel(q) / k), k, 0,
                                          (uint32_t)(mcl_tensor_numel(q) / k), &w);
    if (status != MCL_SUCCESS)
        return status;
    const mcl_kernel *kernel;
    status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status == MCL_SUCCESS) {
        dequant_push push = {.blocks = (uint32_t)blocks, .dlo = w.dlo};
        uint32_t groups = (uint32_t)((units + mcl_kernel_local_size(kernel) - 1) / mcl_kernel_local_size(kernel));
        if (groups > DEQUANT_MAX_GROUPS)
            groups = DEQUANT_MAX_GROUPS;  /* the kernel loops over the rest */
        mcl_tensor *reads[2] = {w.body, w.d};
        status = mcl_dispatch(ctx, kernel, reads, 2, &out, 1, &push, groups, 1, 1);
    }
    mcl_weight_part_free(&w);
    return status;
}

mcl_status mcl_dequantize_tensor(mcl_context *ctx, const mcl_tensor *q, mcl_tensor *out)
{
    return mcl_dequantize_tensor_ex(ctx, q, out, MCL_QUANT_DEQUANT_PB);
}
