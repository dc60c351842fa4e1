/* Optimizers on the GPU: AdamW, SGD with momentum, gradient norm and clipping.
 *
 * Every update is element-wise, so each is one grid-stride kernel per tensor: an invocation
 * owns its elements and nothing races. One dispatch per tensor for now; a fused multi-tensor
 * dispatch (one descriptor array, offsets in a table) would save the per-dispatch cost on
 * models with many small tensors.
 *
 * The gradient norm is a deterministic two-level reduction: each tensor's dispatch writes one
 * partial sum of squares per workgroup into a scratch vector (a fixed workgroup count, so a
 * fixed split of the elements), and one workgroup adds the partials in a fixed order and
 * takes the square root. Clipping reads that norm on the GPU. */
#include <math.h>

#include "../vk/runtime.h"
#include "ops_internal.h"

/* Grid-stride kernels: more workgroups than this add nothing (Vulkan's minimum
 * maxComputeWorkGroupCount[0]). */
#define MCL_OPT_MAX_GROUPS 65535u
/* Workgroups of one tensor's sum of squares: enough to fill a GPU, few enough that the
 * second level (one workgroup) stays cheap. */
#define MCL_NORM_GROUPS 256u
/* reduce.glsl's shared array holds 256 partials; a power of two keeps the tree simple. */
#define MCL_NORM_WG 256u
/* What 0 means in mcl_adamw_desc without its _SET flag (motifcl.h; PyTorch's defaults). */
#define MCL_ADAMW_DEFAULT_BETA1 0.9f
#define MCL_ADAMW_DEFAULT_BETA2 0.999f
#define MCL_ADAMW_DEFAULT_EPS 1e-8f

typedef struct adamw_push {
    uint32_t n;
    float lr, beta1, beta2, eps, weight_decay, bc1, bc2;
} adamw_push;

typedef struct sgd_push {
    uint32_t n;
    float lr, momentum, weight_decay;
} sgd_push;

typedef struct sumsq_push {
    uint32_t n, offset;
} sumsq_push;

typedef struct finish_push {
    uint32_t count;
} finish_push;

typedef struct clip_push {
    uint32_t n;
    float max_norm;
} clip_push;

/* Check one f32 tensor of ctx with at most 2^32-1 elements; `what` names it in the error. */
static mcl_status check_f32(mcl_context *ctx, const char *op, const char *what, uint32_t i,
                            const mcl_tensor *t)
{
    if (!t)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: %s[%u] is NULL", op, what, i);
    if (t->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: %s[%u] is of another context", op,
                        what, i);
    if (t->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s: %s[%u] is not f32", op, what, i);
    if (mcl_tensor_numel(t) > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: %s[%u] has more than 2^32-1 elements",
                        op, what, i);
    return MCL_SUCCESS;
}

/* Record `id` over n elements with the grid capped; spec[0] is constant 1 when spec_count. */
static mcl_status dispatch_elements(mcl_context *ctx, mcl_kernel_id id, uint32_t spec_count,
                                    uint32_t spec0, uint64_t n, mcl_tensor *const *reads,
                                    uint32_t read_count, mcl_tensor *const *writes,
                                    uint32_t write_count, const void *push, uint32_t push_size)
{
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = read_count + write_count,
        .push_size = push_size,
        .spec_count = spec_count,
        .spec = {spec0},
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    if (n == 0)
        return MCL_SUCCESS;
    uint64_t groups = (n + mcl_kernel_local_size(kernel) - 1) / mcl_kernel_local_size(kernel);
    if (groups > MCL_OPT_MAX_GROUPS)
        groups = MCL_OPT_MAX_GROUPS;
    return mcl_dispatch(ctx, kernel, reads, read_count, writes, write_count, push,
                               (uint32_t)groups, 1, 1);
}

mcl_status mcl_adamw_step(mcl_context *ctx, const mcl_adamw_desc *desc, mcl_tensor *const *params,
                          mcl_tensor *const *grads, mcl_tensor *const *m, mcl_tensor *const *v,
                          uint32_t count)
{
    static const char op[] = "mcl_adamw_step";
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    float hyper[MCL_ADAMW_HYPER_COUNT];
    mcl_status checked = mcl_adamw_hyper(ctx, op, desc, 0.0f, hyper);
    if (checked != MCL_SUCCESS)
        return checked;
    if (count > 0 && (!params || !grads || !m || !v))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: NULL tensor array", op);
    for (uint32_t i = 0; i < count; i++) {
        mcl_status status;
        if ((status = check_f32(ctx, op, "params", i, params[i])) != MCL_SUCCESS ||
            (status = check_f32(ctx, op, "grads", i, grads[i])) != MCL_SUCCESS ||
            (status = check_f32(ctx, op, "m", i, m[i])) != MCL_SUCCESS ||
            (status = check_f32(ctx, op, "v", i, v[i])) != MCL_SUCCESS)
            return status;
        if (!mcl_tensor_same_shape(params[i], grads[i]) ||
            !mcl_tensor_same_shape(params[i], m[i]) || !mcl_tensor_same_shape(params[i], v[i]))
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "%s: params[%u], grads, m and v must have one shape", op, i);
        const mcl_tensor *t[4] = {params[i], grads[i], m[i], v[i]};
        for (int a = 0; a < 4; a++) {
            for (int b = a + 1; b < 4; b++) {
                if (t[a] == t[b])
                    return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                                    "%s: params[%u], grads, m and v must be distinct", op, i);
            }
        }
    }
    adamw_push push = {
        .lr = hyper[0],
        .beta1 = hyper[1],
        .beta2 = hyper[2],
        .eps = hyper[3],
        .weight_decay = hyper[4],
        .bc1 = hyper[5],
        .bc2 = hyper[6],
    };
    for (uint32_t i = 0; i < count; i++) {
        push.n = (uint32_t)mcl_tensor_numel(params[i]);
        mcl_tensor *writes[3] = {params[i], m[i], v[i]};
        mcl_status status = dispatch_elements(ctx, MCL_KERNEL_ADAMW_F32, 0, 0, push.n,
                                              &grads[i], 1, writes, 3, &push, sizeof push);
        if (status != MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

mcl_status mcl_sgd_step(mcl_context *ctx, const mcl_sgd_desc *desc, mcl_tensor *const *params,
                        mcl_tensor *const *grads, mcl_tensor *const *velocity, uint32_t count)
{
    static const char op[] = "mcl_sgd_step";
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!desc || desc->size < offsetof(mcl_sgd_desc, reserved))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: desc is NULL or desc->size is not set", op);
    const float lr = desc->lr, momentum = desc->momentum, weight_decay = desc->weight_decay;
    if (count > 0 && (!params || !grads))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: NULL tensor array", op);
    if (!isfinite(lr) || !isfinite(momentum) || !isfinite(weight_decay))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: non-finite hyper-parameter", op);
    if (!velocity && momentum != 0.0f)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: momentum %g needs a velocity", op, (double)momentum);
    for (uint32_t i = 0; i < count; i++) {
        mcl_status status;
        if ((status = check_f32(ctx, op, "params", i, params[i])) != MCL_SUCCESS ||
            (status = check_f32(ctx, op, "grads", i, grads[i])) != MCL_SUCCESS ||
            (velocity &&
             (status = check_f32(ctx, op, "velocity", i, velocity[i])) != MCL_SUCCESS))
            return status;
        if (!mcl_tensor_same_shape(params[i], grads[i]) ||
            (velocity && !mcl_tensor_same_shape(params[i], velocity[i])))
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "%s: params[%u], grads and velocity must have one shape", op, i);
        if (params[i] == grads[i] ||
            (velocity && (velocity[i] == params[i] || velocity[i] == grads[i])))
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "%s: params[%u], grads and velocity must be distinct", op, i);
    }
    sgd_push push = {.lr = lr, .momentum = momentum, .weight_decay = weight_decay};
    for (uint32_t i = 0; i < count; i++) {
        push.n = (uint32_t)mcl_tensor_numel(params[i]);
        /* Without a velocity the kernel's binding 2 is the parameter again, never touched
         * (HAS_VELOCITY false); one tensor twice among the writes is a plain write. */
        mcl_tensor *writes[2] = {params[i], velocity ? velocity[i] : params[i]};
        mcl_status status = dispatch_elements(ctx, MCL_KERNEL_SGD_F32, 1, velocity != NULL,
                                              push.n, &grads[i], 1, writes, 2, &push,
                                              sizeof push);
        if (status != MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

static mcl_status norm_kernel(mcl_context *ctx, mcl_kernel_id id, uint32_t push_size,
                              const mcl_kernel **out)
{
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = 2,
        .push_size = push_size,
        .local_size_x = MCL_NORM_WG,
    };
    return mcl_kernel_get(ctx, &desc, out);
}

mcl_status mcl_grad_norm(mcl_context *ctx, mcl_tensor *const *grads, uint32_t count,
                         mcl_tensor *norm)
{
    static const char op[] = "mcl_grad_norm";
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if ((count > 0 && !grads) || !norm)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: NULL argument", op);
    mcl_status status = check_f32(ctx, op, "norm", 0, norm);
    if (status != MCL_SUCCESS)
        return status;
    if (mcl_tensor_numel(norm) < 1)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: norm has no element", op);
    for (uint32_t i = 0; i < count; i++) {
        if ((status = check_f32(ctx, op, "grads", i, grads[i])) != MCL_SUCCESS)
            return status;
        if (grads[i] == norm)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: norm aliases grads[%u]", op,
                            i);
    }
    if ((uint64_t)count * MCL_NORM_GROUPS > UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: too many tensors", op);

    const mcl_kernel *partial_kernel, *finish_kernel;
    if ((status = norm_kernel(ctx, MCL_KERNEL_SUMSQ_PARTIAL_F32, sizeof(sumsq_push),
                              &partial_kernel)) != MCL_SUCCESS ||
        (status = norm_kernel(ctx, MCL_KERNEL_NORM_FINISH_F32, sizeof(finish_push),
                              &finish_kernel)) != MCL_SUCCESS)
        return status;
    /* The workgroup count per tensor depends on its size only, so the split of the sum (and
     * so its bits) does not change from run to run. */
    uint64_t total = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t n = (uint64_t)mcl_tensor_numel(grads[i]);
        uint64_t g = (n + mcl_kernel_local_size(partial_kernel) - 1) / mcl_kernel_local_size(partial_kernel);
        total += g < MCL_NORM_GROUPS ? g : MCL_NORM_GROUPS;
    }
    int64_t scratch_len = total > 0 ? (int64_t)total : 1;
    mcl_tensor *scratch = NULL;
    if ((status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &scratch_len, &scratch)) !=
        MCL_SUCCESS)
        return status;
    uint32_t offset = 0;
    for (uint32_t i = 0; i < count && status == MCL_SUCCESS; i++) {
        uint64_t n = (uint64_t)mcl_tensor_numel(grads[i]);
        uint64_t g = (n + mcl_kernel_local_size(partial_kernel) - 1) / mcl_kernel_local_size(partial_kernel);
        if (g > MCL_NORM_GROUPS)
            g = MCL_NORM_GROUPS;
        if (g == 0)
            continue;
        sumsq_push push = {.n = (uint32_t)n, .offset = offset};
        status = mcl_dispatch(ctx, partial_kernel, &grads[i], 1, &scratch, 1, &push,
                                     (uint32_t)g, 1, 1);
        offset += (uint32_t)g;
    }
    if (status == MCL_SUCCESS) {
        finish_push push = {.count = offset};
        status = mcl_dispatch(ctx, finish_kernel, &scratch, 1, &norm, 1, &push, 1, 1, 1);
    }
    /* Safe with the dispatches still recorded: the memory is held until they have run. */
    mcl_tensor_destroy(scratch);
    return status;
}

mcl_status mcl_clip_grads(mcl_context *ctx, mcl_tensor *const *grads, uint32_t count,
                          const mcl_tensor *norm, float max_norm)
{
    static const char op[] = "mcl_clip_grads";
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if ((count > 0 && !grads) || !norm)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: NULL argument", op);
    if (!(max_norm > 0.0f))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: max_norm must be positive", op);
    mcl_status status = check_f32(ctx, op, "norm", 0, norm);
    if (status != MCL_SUCCESS)
        return status;
    if (mcl_tensor_numel(norm) < 1)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: norm has no element", op);
    for (uint32_t i = 0; i < count; i++) {
        if ((status = check_f32(ctx, op, "grads", i, grads[i])) != MCL_SUCCESS)
            return status;
        if (grads[i] == norm)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: norm aliases grads[%u]", op,
                            i);
    }
    clip_push push = {.max_norm = max_norm};
    mcl_tensor *reads[1] = {(mcl_tensor *)norm};
    for (uint32_t i = 0; i < count; i++) {
        push.n = (uint32_t)mcl_tensor_numel(grads[i]);
        status = dispatch_elements(ctx, MCL_KERNEL_CLIP_SCALE_F32, 0, 0, push.n, reads, 1,
                                   &grads[i], 1, &push, sizeof push);
        if (status != MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

typedef struct adamw_fused_push {
    uint32_t n, decay_end;
} adamw_fused_push;

mcl_status mcl_adamw_fused(mcl_context *ctx, mcl_tensor *params, mcl_tensor *grads,
                           mcl_tensor *m, mcl_tensor *v, mcl_tensor *hyper, mcl_tensor *norm,
                           uint64_t decay_end)
{
    uint64_t n = (uint64_t)mcl_tensor_numel(params);
    if (n > UINT32_MAX || decay_end > n || mcl_tensor_numel(hyper) < MCL_ADAMW_HYPER_COUNT)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_adamw_fused: bad sizes");
    adamw_fused_push push = {.n = (uint32_t)n, .decay_end = (uint32_t)decay_end};
    mcl_tensor *reads[3] = {grads, hyper, norm};
    mcl_tensor *writes[3] = {params, m, v};
    return dispatch_elements(ctx, MCL_KERNEL_ADAMW_FUSED_F32, 0, 0, n, reads, 3, writes, 3,
                             &push, sizeof push);
}

mcl_status mcl_adamw_hyper(mcl_context *ctx, const char *op, const mcl_adamw_desc *desc,
                           float max_grad_norm, float hyper[MCL_ADAMW_HYPER_COUNT])
{
    if (!desc || desc->size < offsetof(mcl_adamw_desc, reserved))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: desc is NULL or desc->size is not set", op);
    const uint32_t known = MCL_ADAMW_BETA1_SET | MCL_ADAMW_BETA2_SET | MCL_ADAMW_EPS_SET;
    if (desc->flags & ~known)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", op,
                        (unsigned)(desc->flags & ~known));
    /* 0 takes the default unless the flag says the value is meant as given. */
    const int as_given[3] = {(desc->flags & MCL_ADAMW_BETA1_SET) != 0,
                             (desc->flags & MCL_ADAMW_BETA2_SET) != 0,
                             (desc->flags & MCL_ADAMW_EPS_SET) != 0};
    float beta1 = desc->beta1 != 0.0f || as_given[0] ? desc->beta1 : MCL_ADAMW_DEFAULT_BETA1;
    float beta2 = desc->beta2 != 0.0f || as_given[1] ? desc->beta2 : MCL_ADAMW_DEFAULT_BETA2;
    float eps = desc->eps != 0.0f || as_given[2] ? desc->eps : MCL_ADAMW_DEFAULT_EPS;
    if (!isfinite(desc->lr) || !(beta1 >= 0.0f && beta1 < 1.0f) ||
        !(beta2 >= 0.0f && beta2 < 1.0f) || !(eps >= 0.0f) || !isfinite(eps) ||
        !isfinite(desc->weight_decay) || desc->step < 1)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: lr and weight_decay must be finite, betas in [0, 1), eps >= 0 and "
                        "finite, and step >= 1", op);
    hyper[0] = desc->lr;
    hyper[1] = beta1;
    hyper[2] = beta2;
    hyper[3] = eps;
    hyper[4] = desc->weight_decay;
    /* The bias corrections in double on the host: beta^step for a large step underflows to
     * 0 cleanly, giving corrections of 1. */
    hyper[5] = (float)(1.0 - pow((double)beta1, (double)desc->step));
    hyper[6] = (float)(1.0 - pow((double)beta2, (double)desc->step));
    hyper[7] = isfinite(max_grad_norm) && max_grad_norm > 0.0f ? max_grad_norm : 0.0f;
    return MCL_SUCCESS;
}
