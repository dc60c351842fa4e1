/* Backward passes of the element-wise and row operations.
 *
 * Element-wise gradients (activations, SwiGLU) are grid-stride kernels over the elements.
 * Row gradients (softmax, RMSNorm, LayerNorm) take one workgroup per row, reduce with
 * shaders/reduce.glsl on the path the context chooses (mcl_rows_use_subgroup), and
 * grid-stride over rows beyond 65535 workgroups, like the forward kernels in rows.c.
 *
 * dweight and dbias are sums over rows. They must not use float atomics (the contract
 * promises the same bits for the same inputs), so the norm kernel writes each row's
 * contribution into a rows x D scratch tensor and column_sum_f32.comp adds the rows in a
 * fixed order: per chunk of rows into partials, then the partials (two passes, so that
 * thousands of rows still spread over many workgroups). The chunking depends only on the
 * row count, never on the device, so the bits do not either. dbias needs no scratch: it is
 * the column sum of dy itself. */
#include "../vk/runtime.h"
#include "ops_internal.h"

typedef struct elem_push {
    uint32_t n;
} elem_push;

typedef struct softmax_bwd_push {
    uint32_t d, rows;
    float scale;
} softmax_bwd_push;

typedef struct norm_bwd_push {
    uint32_t d, rows;
    float eps;
} norm_bwd_push;

typedef struct colsum_push {
    uint32_t d, rows, chunk_rows;
} colsum_push;

/* unary_backward_f32.comp's OP values (unary_f32.comp's numbering). */
enum { UNARY_RELU = 1, UNARY_GELU = 2, UNARY_SILU = 3 };

/* Vulkan guarantees 65535 workgroups per dimension; the kernels grid-stride beyond. */
#define MAX_GROUPS 65535u
/* column_sum_f32.comp: rows per chunk of the first pass. 64 rows keep each invocation's
 * sequential float sum short (its rounding error grows with the count) while leaving
 * rows / 64 chunks of workgroups for the GPU to spread. */
#define COLSUM_CHUNK 64u
/* And the workgroup of the column sum: columns side by side. */
#define COLSUM_WG 64u


/* Same shape for all, and few enough elements for the kernels' 32-bit indices. */
static mcl_status check_same(mcl_context *ctx, const char *op, const mcl_tensor *const *t,
                             uint32_t count, uint32_t *n)
{
    for (uint32_t i = 1; i < count; i++) {
        if (!mcl_tensor_same_shape(t[0], t[i]))
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: tensors must have one shape",
                            op);
    }
    int64_t numel = mcl_tensor_numel(t[0]);
    if (numel > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: more than 2^32-1 elements", op);
    *n = (uint32_t)numel;
    return MCL_SUCCESS;
}

static uint32_t groups_for(uint64_t work, uint32_t local)
{
    uint64_t g = (work + local - 1) / local;
    if (g == 0)
        g = 1;
    return g > MAX_GROUPS ? MAX_GROUPS : (uint32_t)g;
}

/* An element-wise kernel: default workgroup, spec constants after it as given. */
static mcl_status elem_kernel(mcl_context *ctx, mcl_kernel_id id, uint32_t bindings,
                              const uint32_t *spec, uint32_t spec_count,
                              const mcl_kernel **out)
{
    mcl_kernel_desc desc = {.id = id, .binding_count = bindings, .push_size = sizeof(elem_push),
                            .spec_count = spec_count};
    for (uint32_t i = 0; i < spec_count; i++)
        desc.spec[i] = spec[i];
    return mcl_kernel_get(ctx, &desc, out);
}

mcl_status mcl_activate_backward(mcl_context *ctx, mcl_activation act, const mcl_tensor *x,
                                 const mcl_tensor *dy, mcl_tensor *dx)
{
    static const char *op = "mcl_activate_backward";
    const mcl_tensor *t[3] = {x, dy, dx};
    mcl_status status = mcl_ops_check_f32(ctx, op, t, 3);
    if (status != MCL_SUCCESS)
        return status;
    static const uint32_t ops[] = {
        [MCL_ACTIVATION_RELU] = UNARY_RELU,
        [MCL_ACTIVATION_GELU] = UNARY_GELU,
        [MCL_ACTIVATION_SILU] = UNARY_SILU,
    };
    if ((unsigned)act >= sizeof ops / sizeof ops[0])
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: unknown activation %d", op,
                        (int)act);
    elem_push push = {0};
    if ((status = check_same(ctx, op, t, 3, &push.n)) != MCL_SUCCESS)
        return status;
    /* dx may alias dy (each element is read and written by one invocation), not x: the
     * contract does not promise it, and dx == x would be a gradient overwriting the
     * activation it is the gradient of, almost certainly a caller's mistake. */
    if (dx == x)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: dx must not alias x", op);
    const mcl_kernel *kernel;
    if ((status = elem_kernel(ctx, MCL_KERNEL_UNARY_BACKWARD_F32, 3, &ops[act], 1, &kernel)) !=
        MCL_SUCCESS)
        return status;
    mcl_tensor *reads[2] = {(mcl_tensor *)x, (mcl_tensor *)dy};
    return mcl_dispatch(ctx, kernel, reads, 2, &dx, 1, &push,
                               groups_for(push.n, mcl_kernel_local_size(kernel)), 1, 1);
}

mcl_status mcl_swiglu_backward(mcl_context *ctx, const mcl_tensor *gate, const mcl_tensor *up,
                               const mcl_tensor *dy, mcl_tensor *dgate, mcl_tensor *dup)
{
    static const char *op = "mcl_swiglu_backward";
    const mcl_tensor *t[5] = {gate, up, dy, dgate, dup};
    mcl_status status = mcl_ops_check_f32(ctx, op, t, 5);
    if (status != MCL_SUCCESS)
        return status;
    elem_push push = {0};
    if ((status = check_same(ctx, op, t, 5, &push.n)) != MCL_SUCCESS)
        return status;
    /* dgate is written from up and gate, dup from gate: an output aliasing an input would
     * let one invocation's write be read by the other output's formula (documented). */
    for (int i = 0; i < 3; i++) {
        if (t[i] == dgate || t[i] == dup)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "%s: dgate and dup must not alias the inputs", op);
    }
    if (dgate == dup)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: dgate and dup must differ", op);
    const mcl_kernel *kernel;
    if ((status = elem_kernel(ctx, MCL_KERNEL_SWIGLU_BACKWARD_F32, 5, NULL, 0, &kernel)) !=
        MCL_SUCCESS)
        return status;
    mcl_tensor *reads[3] = {(mcl_tensor *)gate, (mcl_tensor *)up, (mcl_tensor *)dy};
    mcl_tensor *writes[2] = {dgate, dup};
    return mcl_dispatch(ctx, kernel, reads, 3, writes, 2, &push,
                               groups_for(push.n, mcl_kernel_local_size(kernel)), 1, 1);
}


static mcl_status row_kernel(mcl_context *ctx, mcl_kernel_id id, uint32_t bindings,
                             uint32_t push_size, uint32_t d, const uint32_t *extra,
                             uint32_t extra_count, const mcl_kernel **out)
{
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = bindings,
        .push_size = push_size,
        .local_size_x = mcl_row_local_size(ctx, d),
        .spec_count = 1 + extra_count,
        .spec = {(uint32_t)mcl_rows_use_subgroup(ctx)},
    };
    for (uint32_t i = 0; i < extra_count; i++)
        desc.spec[1 + i] = extra[i];
    return mcl_kernel_get(ctx, &desc, out);
}

/* Row length and count of x (already checked non-NULL, f32, of ctx). */
static mcl_status row_dims(mcl_context *ctx, const char *op, const mcl_tensor *x, uint32_t *d,
                           uint32_t *rows)
{
    int64_t numel = mcl_tensor_numel(x);
    if (numel > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: more than 2^32-1 elements", op);
    *d = (uint32_t)x->shape[x->ndim - 1];
    *rows = (uint32_t)(numel / *d);
    return MCL_SUCCESS;
}

mcl_status mcl_softmax_backward(mcl_context *ctx, const mcl_tensor *y, const mcl_tensor *dy,
                                float scale, mcl_tensor *dx)
{
    static const char *op = "mcl_softmax_backward";
    const mcl_tensor *t[3] = {y, dy, dx};
    mcl_status status = mcl_ops_check_f32(ctx, op, t, 3);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t n = 0, d = 0, rows = 0;
    if ((status = check_same(ctx, op, t, 3, &n)) != MCL_SUCCESS ||
        (status = row_dims(ctx, op, y, &d, &rows)) != MCL_SUCCESS)
        return status;
    /* The contract lets dx alias dy only. The kernel would survive dx == y (each element is
     * read and written by one invocation, after the row's sum), but overwriting the
     * forward's output with its gradient is almost certainly a caller's mistake. */
    if (dx == y)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: dx must not alias y", op);
    softmax_bwd_push push = {.d = d, .rows = rows, .scale = scale};
    const mcl_kernel *kernel;
    if ((status = row_kernel(ctx, MCL_KERNEL_SOFTMAX_BACKWARD_F32, 3, sizeof push, d, NULL, 0,
                             &kernel)) != MCL_SUCCESS)
        return status;
    mcl_tensor *reads[2] = {(mcl_tensor *)y, (mcl_tensor *)dy};
    return mcl_dispatch(ctx, kernel, reads, 2, &dx, 1, &push, groups_for(rows, 1), 1, 1);
}

/* out[d] = the sum over rows of x [rows, d], in a fixed order (see the top of the file). */
static mcl_status column_sum(mcl_context *ctx, mcl_tensor *x, uint32_t rows, uint32_t d,
                             mcl_tensor *out, mcl_tensor *given)
{
    mcl_kernel_desc desc = {.id = MCL_KERNEL_COLUMN_SUM_F32, .binding_count = 2,
                            .push_size = sizeof(colsum_push), .local_size_x = COLSUM_WG};
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t groups_x = groups_for(d, mcl_kernel_local_size(kernel));
    uint32_t chunks = (rows + COLSUM_CHUNK - 1) / COLSUM_CHUNK;
    if (chunks <= 1) {
        colsum_push push = {.d = d, .rows = rows, .chunk_rows = rows};
        return mcl_dispatch(ctx, kernel, &x, 1, &out, 1, &push, groups_x, 1, 1);
    }
    /* Chunks are a grid dimension: beyond 65535 of them, make them longer instead. */
    uint32_t chunk_rows = COLSUM_CHUNK;
    if (chunks > MAX_GROUPS) {
        chunk_rows = (rows + MAX_GROUPS - 1) / MAX_GROUPS;
        chunks = (rows + chunk_rows - 1) / chunk_rows;
    }
    /* Partials [chunks, d]; released once the recorded work has used it. */
    mcl_tensor_desc pd = {.size = sizeof pd, .dtype = MCL_DTYPE_F32, .ndim = 2,
                          .shape = {(int64_t)chunks, (int64_t)d},
                          .memory_class = MCL_MEMORY_SCRATCH};
    mcl_tensor *partial = NULL;
    if (given && mcl_tensor_numel(given) >= (int64_t)chunks * d)
        partial = given;
    else if ((status = mcl_tensor_create_ex(ctx, &pd, &partial)) != MCL_SUCCESS)
        return status;
    colsum_push p1 = {.d = d, .rows = rows, .chunk_rows = chunk_rows};
    status = mcl_dispatch(ctx, kernel, &x, 1, &partial, 1, &p1, groups_x, chunks, 1);
    if (status == MCL_SUCCESS) {
        colsum_push p2 = {.d = d, .rows = chunks, .chunk_rows = chunks};
        status = mcl_dispatch(ctx, kernel, &partial, 1, &out, 1, &p2, groups_x, 1, 1);
    }
    if (partial != given)
        mcl_tensor_destroy(partial);
    return status;
}

/* An optional [d] f32 tensor of ctx (a weight, or a dweight / dbias output). */
static mcl_status check_vector(mcl_context *ctx, const char *op, const char *what,
                               const mcl_tensor *p, uint32_t d)
{
    if (!p)
        return MCL_SUCCESS;
    if (p->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: %s of another context", op, what);
    if (p->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s: %s must be f32", op, what);
    if (p->ndim != 1 || p->shape[0] != (int64_t)d)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: %s must be [%u]", op, what, d);
    return MCL_SUCCESS;
}

/* RMSNorm and LayerNorm backward: the row kernel, then the column sums. */
static mcl_status norm_backward(mcl_context *ctx, const char *op, mcl_kernel_id id,
                                const mcl_tensor *x, const mcl_tensor *weight,
                                const mcl_tensor *dy, float eps, mcl_tensor *dx,
                                mcl_tensor *dweight, mcl_tensor *dbias, mcl_tensor *scratch,
                                mcl_tensor *partial)
{
    const mcl_tensor *t[3] = {x, dy, dx};
    mcl_status status = mcl_ops_check_f32(ctx, op, t, 3);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t n = 0, d = 0, rows = 0;
    if ((status = check_same(ctx, op, t, 3, &n)) != MCL_SUCCESS ||
        (status = row_dims(ctx, op, x, &d, &rows)) != MCL_SUCCESS)
        return status;
    if ((status = check_vector(ctx, op, "weight", weight, d)) != MCL_SUCCESS ||
        (status = check_vector(ctx, op, "dweight", dweight, d)) != MCL_SUCCESS ||
        (status = check_vector(ctx, op, "dbias", dbias, d)) != MCL_SUCCESS)
        return status;
    /* Every row reads the weight, so no output may be it. dx may alias x or dy (the kernel
     * writes dx[j] after the row's last read, in the invocation that read it). dweight and
     * dbias are written after the row kernel, but passing them as an input or as another
     * output is a mistake the results would hide. */
    if (weight && (weight == dx || weight == dweight || weight == dbias))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: an output aliases the weight",
                        op);
    const mcl_tensor *sums[2] = {dweight, dbias};
    for (int i = 0; i < 2; i++) {
        if (sums[i] && (sums[i] == x || sums[i] == dy || sums[i] == dx))
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "%s: dweight / dbias alias x, dy or dx", op);
    }
    if (dweight && dweight == dbias)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: dweight aliases dbias", op);

    if (scratch && dweight) {
        const mcl_tensor *all[8] = {x, weight, dy, dx, dweight, dbias, scratch, partial};
        if ((status = mcl_ops_check_f32(ctx, op, all + 6, partial ? 2 : 1)) != MCL_SUCCESS)
            return status;
        if (mcl_tensor_numel(scratch) < (int64_t)rows * d)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: scratch holds fewer than "
                            "%u x %u floats", op, rows, d);
        for (int i = 0; i < 7; i++) {
            if (all[i] && (all[i] == partial || (i < 6 && all[i] == scratch)))
                return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: scratch aliases an "
                                "argument", op);
        }
    }
    /* The scratch for dweight: each row's dy * xhat, summed over rows afterwards; the
     * caller's, where given. */
    mcl_tensor *prod = NULL;
    if (dweight && scratch) {
        prod = scratch;
    } else if (dweight) {
        mcl_tensor_desc pd = {.size = sizeof pd, .dtype = MCL_DTYPE_F32, .ndim = 2,
                              .shape = {(int64_t)rows, (int64_t)d},
                              .memory_class = MCL_MEMORY_SCRATCH};
        if ((status = mcl_tensor_create_ex(ctx, &pd, &prod)) != MCL_SUCCESS)
            return status;
    }
    /* dbias first: dx may alias dy, and the row kernel would overwrite it. */
    mcl_tensor *made = prod == scratch ? NULL : prod;
    if (dbias && (status = column_sum(ctx, (mcl_tensor *)dy, rows, d, dbias, NULL)) !=
                     MCL_SUCCESS) {
        mcl_tensor_destroy(made);
        return status;
    }
    norm_bwd_push push = {.d = d, .rows = rows, .eps = eps};
    uint32_t flags[2] = {weight != NULL, prod != NULL};
    const mcl_kernel *kernel;
    status = row_kernel(ctx, id, 5, sizeof push, d, flags, 2, &kernel);
    if (status == MCL_SUCCESS) {
        /* Absent tensors' bindings still need a buffer; x and dx stand in, never accessed
         * there (the spec constants switch those accesses off). */
        mcl_tensor *reads[3] = {(mcl_tensor *)x, (mcl_tensor *)(weight ? weight : x),
                                (mcl_tensor *)dy};
        mcl_tensor *writes[2] = {dx, prod ? prod : dx};
        status = mcl_dispatch(ctx, kernel, reads, 3, writes, 2, &push,
                                     groups_for(rows, 1), 1, 1);
    }
    if (status == MCL_SUCCESS && prod)
        status = column_sum(ctx, prod, rows, d, dweight, scratch ? partial : NULL);
    mcl_tensor_destroy(made);
    return status;
}

mcl_status mcl_rmsnorm_backward(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                                const mcl_tensor *dy, float eps, mcl_tensor *dx,
                                mcl_tensor *dweight)
{
    return norm_backward(ctx, "mcl_rmsnorm_backward", MCL_KERNEL_RMSNORM_BACKWARD_F32, x,
                         weight, dy, eps, dx, dweight, NULL, NULL, NULL);
}

mcl_status mcl_rmsnorm_backward_scratch(mcl_context *ctx, const mcl_tensor *x,
                                        const mcl_tensor *weight, const mcl_tensor *dy,
                                        float eps, mcl_tensor *dx, mcl_tensor *dweight,
                                        mcl_tensor *scratch, mcl_tensor *partial)
{
    return norm_backward(ctx, "mcl_rmsnorm_backward", MCL_KERNEL_RMSNORM_BACKWARD_F32, x,
                         weight, dy, eps, dx, dweight, NULL, scratch, partial);
}

mcl_status mcl_layernorm_backward(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                                  const mcl_tensor *dy, float eps, mcl_tensor *dx,
                                  mcl_tensor *dweight, mcl_tensor *dbias)
{
    return norm_backward(ctx, "mcl_layernorm_backward", MCL_KERNEL_LAYERNORM_BACKWARD_F32, x,
                         weight, dy, eps, dx, dweight, dbias, NULL, NULL);
}
