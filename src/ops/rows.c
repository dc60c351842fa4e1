/* Row operations: softmax, reductions, RMSNorm, LayerNorm. One workgroup per row, rows
 * grid-strided over at most 65535 workgroups; the workgroup reduces with subgroup arithmetic
 * where the context enables it and with a shared-memory tree otherwise (shaders/reduce.glsl,
 * specialization constant 1). Rows whose length is a multiple of 4 take vec4 loads: tensors
 * start 256-byte aligned, so every such row does too. */
#include <math.h>

#include "../vk/runtime.h"
#include "ops_internal.h"

/* Push constants of softmax_f32.comp. */
typedef struct softmax_push {
    uint32_t d, rows, tq, causal;
    float sign; /* sign * c = scale * log2(e): the kernel takes the max of sign * x */
    float c;
} softmax_push;

/* Push constants of reduce_rows_f32.comp. */
typedef struct reduce_push {
    uint32_t d, rows;
} reduce_push;

/* Push constants of rmsnorm_f32.comp and layernorm_f32.comp. */
typedef struct norm_push {
    uint32_t d, rows;
    float eps;
} norm_push;

/* The 65535 maxComputeWorkGroupCount[0] that Vulkan guarantees; the kernels grid-stride
 * over rows beyond it. */
#define MCL_ROWS_MAX_GROUPS 65535u

#define LOG2_E 1.4426950408889634

int mcl_rows_use_subgroup(const mcl_context *ctx)
{
    return mcl_traits_of(ctx)->subgroup_arithmetic;
}

/* A row kernel's pipeline: spec constants after the path and vec4 switches are `extra`. */
static mcl_status row_kernel(mcl_context *ctx, mcl_kernel_id id, uint32_t bindings,
                             uint32_t push_size, uint32_t d, const uint32_t *extra,
                             uint32_t extra_count, const mcl_kernel **out)
{
    int vec4 = d % 4 == 0;
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = bindings,
        .push_size = push_size,
        .local_size_x = mcl_row_local_size(ctx, vec4 ? d / 4 : d),
        .spec_count = 2 + extra_count,
        .spec = {(uint32_t)mcl_rows_use_subgroup(ctx), (uint32_t)vec4},
    };
    for (uint32_t i = 0; i < extra_count; i++)
        desc.spec[2 + i] = extra[i];
    return mcl_kernel_get(ctx, &desc, out);
}

static uint32_t row_groups(uint32_t rows)
{
    return rows < MCL_ROWS_MAX_GROUPS ? rows : MCL_ROWS_MAX_GROUPS;
}

/* Checks shared by every row op on its input x: present, ours, f32, indexable in 32 bits.
 * Gives the row length and row count. */
static mcl_status check_rows(mcl_context *ctx, const char *op, const mcl_tensor *x,
                             const mcl_tensor *out, uint32_t *d, uint32_t *rows)
{
    /* Defined on every path: at -O3 GCC cannot see that mcl_fail never returns MCL_SUCCESS
     * (-Wmaybe-uninitialized in the callers). */
    *d = 0;
    *rows = 0;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!x || !out)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: a tensor is NULL", op);
    if (x->ctx != ctx || out->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: tensor of another context", op);
    if (x->dtype != MCL_DTYPE_F32 || out->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s takes f32 tensors", op);
    int64_t numel = mcl_tensor_numel(x);
    if (numel > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: more than 2^32-1 elements", op);
    *d = (uint32_t)x->shape[x->ndim - 1];
    *rows = (uint32_t)(numel / *d);
    return MCL_SUCCESS;
}

/* An optional per-column parameter (weight, bias): NULL, or f32 [d] of ctx, and not the
 * output, which other rows' workgroups would overwrite while this row still reads it. */
static mcl_status check_param(mcl_context *ctx, const char *op, const char *what,
                              const mcl_tensor *p, const mcl_tensor *out, uint32_t d)
{
    if (!p)
        return MCL_SUCCESS;
    if (p->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: %s of another context", op, what);
    if (p->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s: %s must be f32", op, what);
    if (p->ndim != 1 || p->shape[0] != (int64_t)d)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: %s must be [%u]", op, what, d);
    if (p == out)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: out must not alias %s", op, what);
    return MCL_SUCCESS;
}

mcl_status mcl_softmax(mcl_context *ctx, const mcl_tensor *x, float scale, int causal,
                       mcl_tensor *out)
{
    uint32_t d, rows;
    mcl_status status = check_rows(ctx, "mcl_softmax", x, out, &d, &rows);
    if (status != MCL_SUCCESS)
        return status;
    if (!mcl_tensor_same_shape(x, out))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_softmax: out must have x's shape");
    softmax_push push = {
        .d = d,
        .rows = rows,
        /* A 1-D x is one query row. */
        .tq = x->ndim >= 2 ? (uint32_t)x->shape[x->ndim - 2] : 1,
        .causal = causal ? 1 : 0,
        .sign = scale < 0.0f ? -1.0f : 1.0f,
        .c = (float)(fabs((double)scale) * LOG2_E),
    };
    const mcl_kernel *kernel;
    status = row_kernel(ctx, MCL_KERNEL_SOFTMAX_F32, 2, sizeof push, d, NULL, 0, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    mcl_tensor *read = (mcl_tensor *)x;
    return mcl_dispatch(ctx, kernel, &read, 1, &out, 1, &push, row_groups(rows), 1, 1);
}

mcl_status mcl_reduce_rows(mcl_context *ctx, mcl_reduce_op op, const mcl_tensor *x,
                           mcl_tensor *out)
{
    uint32_t d, rows;
    mcl_status status = check_rows(ctx, "mcl_reduce_rows", x, out, &d, &rows);
    if (status != MCL_SUCCESS)
        return status;
    if ((unsigned)op > MCL_REDUCE_MAX)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_reduce_rows: unknown op %d",
                        (int)op);
    /* out is x's shape without the last dimension; a 1-D x gives [1]. */
    int shape_ok;
    if (x->ndim == 1) {
        shape_ok = out->ndim == 1 && out->shape[0] == 1;
    } else {
        shape_ok = out->ndim == x->ndim - 1;
        for (uint32_t i = 0; shape_ok && i < out->ndim; i++)
            shape_ok = out->shape[i] == x->shape[i];
    }
    if (!shape_ok)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_reduce_rows: out must be x's shape without its last dimension");
    if (out == x)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_reduce_rows: out must not alias x");
    reduce_push push = {.d = d, .rows = rows};
    uint32_t spec_op = (uint32_t)op;
    const mcl_kernel *kernel;
    status = row_kernel(ctx, MCL_KERNEL_REDUCE_ROWS_F32, 2, sizeof push, d, &spec_op, 1, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    mcl_tensor *read = (mcl_tensor *)x;
    return mcl_dispatch(ctx, kernel, &read, 1, &out, 1, &push, row_groups(rows), 1, 1);
}

mcl_status mcl_rmsnorm(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                       float eps, mcl_tensor *out)
{
    uint32_t d, rows;
    mcl_status status = check_rows(ctx, "mcl_rmsnorm", x, out, &d, &rows);
    if (status != MCL_SUCCESS)
        return status;
    if (!mcl_tensor_same_shape(x, out))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_rmsnorm: out must have x's shape");
    if ((status = check_param(ctx, "mcl_rmsnorm", "weight", weight, out, d)) != MCL_SUCCESS)
        return status;
    norm_push push = {.d = d, .rows = rows, .eps = eps};
    uint32_t has_weight = weight != NULL;
    const mcl_kernel *kernel;
    status = row_kernel(ctx, MCL_KERNEL_RMSNORM_F32, 3, sizeof push, d, &has_weight, 1, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    /* An absent weight's binding still needs a buffer; x stands in, never read there. */
    mcl_tensor *reads[2] = {(mcl_tensor *)x, (mcl_tensor *)(weight ? weight : x)};
    return mcl_dispatch(ctx, kernel, reads, 2, &out, 1, &push, row_groups(rows), 1, 1);
}

mcl_status mcl_norm_q8(mcl_context *ctx, mcl_tensor *h, mcl_tensor *weight, float eps,
                       mcl_tensor *x, mcl_tensor *y, mcl_tensor *act)
{
    const char *op = "mcl_norm_q8";
    uint32_t d, rows;
    mcl_status status = check_rows(ctx, op, x, y, &d, &rows);
    if (status != MCL_SUCCESS)
        return status;
    if (!weight)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: NULL weight", op);
    if ((status = check_param(ctx, op, "weight", weight, y, d)) != MCL_SUCCESS)
        return status;
    if (!mcl_tensor_same_shape(x, y) || (h && !mcl_tensor_same_shape(h, x)) || d % 32 != 0)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: h, x and y of one shape, rows a multiple of 32 long", op);
    if ((h && (h->ctx != ctx || h->dtype != MCL_DTYPE_F32)) ||
        (act && (act->ctx != ctx || act->dtype != MCL_DTYPE_I32)))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s: h f32, act i32, of ctx", op);
    if (act && act->nbytes < (uint64_t)rows * (d / 32) * 10 * 4)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: act holds fewer than %u blocks", op,
                        rows * (d / 32));
    if (h == x || h == y || x == y || (act && (act == x || act == y || act == h)))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: the tensors must be distinct", op);
    norm_push push = {.d = d, .rows = rows, .eps = eps};
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_NORM_Q8_F32,
        .binding_count = 5,
        .push_size = sizeof push,
        .local_size_x = mcl_row_local_size(ctx, d / 4),
        .spec_count = 3,
        .spec = {(uint32_t)mcl_rows_use_subgroup(ctx), h != NULL, act != NULL},
    };
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_get(ctx, &desc, &kernel)) != MCL_SUCCESS)
        return status;
    if (mcl_kernel_local_size(kernel) % 8 != 0)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "%s: a workgroup of %u invocations", op,
                        mcl_kernel_local_size(kernel));
    /* Absent h and act: bindings that are never touched, filled by y. */
    mcl_tensor *reads[2] = {h ? h : y, weight};
    mcl_tensor *writes[3] = {x, y, act ? act : y};
    return mcl_dispatch(ctx, kernel, reads, 2, writes, 3, &push, row_groups(rows), 1, 1);
}

mcl_status mcl_layernorm(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *weight,
                         const mcl_tensor *bias, float eps, mcl_tensor *out)
{
    uint32_t d, rows;
    mcl_status status = check_rows(ctx, "mcl_layernorm", x, out, &d, &rows);
    if (status != MCL_SUCCESS)
        return status;
    if (!mcl_tensor_same_shape(x, out))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_layernorm: out must have x's shape");
    if ((status = check_param(ctx, "mcl_layernorm", "weight", weight, out, d)) != MCL_SUCCESS ||
        (status = check_param(ctx, "mcl_layernorm", "bias", bias, out, d)) != MCL_SUCCESS)
        return status;
    norm_push push = {.d = d, .rows = rows, .eps = eps};
    uint32_t flags[2] = {weight != NULL, bias != NULL};
    const mcl_kernel *kernel;
    status = row_kernel(ctx, MCL_KERNEL_LAYERNORM_F32, 4, sizeof push, d, flags, 2, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    /* Absent parameters' bindings still need a buffer; x stands in, never read there. */
    mcl_tensor *reads[3] = {(mcl_tensor *)x, (mcl_tensor *)(weight ? weight : x),
                            (mcl_tensor *)(bias ? bias : x)};
    return mcl_dispatch(ctx, kernel, reads, 3, &out, 1, &push, row_groups(rows), 1, 1);
}
