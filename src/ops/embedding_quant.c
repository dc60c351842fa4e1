/* mcl_embedding with a block-quantised table (embedding_q.comp): each output row is the table
 * row its id names, dequantized bit for bit as mcl_dequantize() gives it, or zeros for an id
 * outside [0, V).
 *
 * The table is bound as the quantized matmul binds its weight (matmul_quant.c): block bodies
 * and d values apart, in row ranges where the bodies exceed one storage-buffer binding
 * (maxStorageBufferRange, or MOTIFCL_MAX_BINDING). Each range is one dispatch over the whole
 * output that writes only the rows whose id lies in its range; the first also writes the zero
 * rows of bad ids. The dispatches write disjoint rows of out, and each row exactly once. */
#include "matmul_quant.h"
#include "ops_internal.h"

/* Vulkan guarantees 65535 workgroups per dimension; the kernel loops over the rest. */
#define EMBEDDING_Q_MAX_GROUPS 65535u

typedef struct embedding_q_push {
    uint32_t units, dim4, vocab, r0, part_rows, dlo, zeros;
} embedding_q_push;

mcl_status mcl_embedding_quant(mcl_context *ctx, mcl_tensor *table, mcl_tensor *ids,
                               mcl_tensor *out)
{
    int fmt = mcl_quant_format(table->dtype);
    int64_t vocab = table->shape[0], dim = table->shape[1];
    int64_t per_block = mcl_dtype_block_weights(table->dtype);
    if (fmt < 0)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_embedding: %s is not a block type",
                        mcl_dtype_name(table->dtype));
    /* Block tensors are created whole blocks along their last dimension; a table that is not
     * would leave the last block of every row short. */
    if (dim % per_block != 0)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_embedding: a %s table's D (%lld) must be a multiple of %lld",
                        mcl_dtype_name(table->dtype), (long long)dim, (long long)per_block);
    if (vocab > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_embedding: more than 2^32-1 table rows");
    uint32_t part_rows;
    mcl_status status = mcl_weight_part_rows(ctx, "mcl_embedding", table, (uint32_t)vocab,
                                             &part_rows);
    if (status != MCL_SUCCESS)
        return status;

    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_EMBEDDING_Q,
        .binding_count = 4,
        .push_size = sizeof(embedding_q_push),
        .spec_count = 1,
        .spec = {(uint32_t)fmt},
    };
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_get(ctx, &desc, &kernel)) != MCL_SUCCESS)
        return status;
    /* mcl_embedding checked rows * D against 2^32 - 1. */
    uint32_t units = (uint32_t)(mcl_tensor_numel(out) / 4);
    uint32_t local = mcl_kernel_local_size(kernel);
    uint32_t groups = units / local + (units % local != 0);
    if (groups > EMBEDDING_Q_MAX_GROUPS)
        groups = EMBEDDING_Q_MAX_GROUPS;
    for (uint64_t r0 = 0; status == MCL_SUCCESS && r0 < (uint64_t)vocab; r0 += part_rows) {
        uint32_t rows = (uint64_t)vocab - r0 < part_rows ? (uint32_t)(vocab - (int64_t)r0)
                                                         : part_rows;
        weight_part w;
        status = mcl_weight_part_views(ctx, table, (uint32_t)vocab, (uint32_t)dim,
                                       (uint32_t)r0, rows, &w);
        if (status != MCL_SUCCESS)
            break;
        embedding_q_push push = {
            .units = units,
            .dim4 = (uint32_t)(dim / 4),
            .vocab = (uint32_t)vocab,
            .r0 = (uint32_t)r0,
            .part_rows = rows,
            .dlo = w.dlo,
            .zeros = r0 == 0,
        };
        mcl_tensor *reads[3] = {w.body, w.d, ids};
        status = mcl_dispatch(ctx, kernel, reads, 3, &out, 1, &push, groups, 1, 1);
        mcl_weight_part_free(&w);
    }
    return status;
}
