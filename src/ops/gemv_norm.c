/* A product added to the residual stream, then the stream's RMSNorm (and on the integer-dot
 * path its quantization for the next product) as one dispatch (gemv_norm.glsl: the float
 * path's gemv_q_norm.comp, the integer-dot path's gemv_q_dot_norm.comp): a decode step's
 * output and down products, each with the norm that follows it. */
#include "matmul_quant.h"
#include "ops_internal.h"

/* Storage buffers the kernel binds. */
#define NORM_BINDINGS 9u
/* Its shared memory past the GEMV's: the norm's sums (a word a lane, 32 partial sums, the
 * last workgroup's flag) and on the integer-dot path q8_1.glsl's two words a lane. */
#define NORM_SHARED(lanes, dot) (((dot) ? 12ull : 4ull) * (lanes) + 4ull * 32 + 4)

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

mcl_status mcl_matmul_add_norm(mcl_context *ctx, mcl_tensor *a, mcl_tensor *act, mcl_tensor *w,
                               mcl_tensor *x, mcl_tensor *weight, float eps, mcl_tensor *y,
                               mcl_tensor *act_out, mcl_tensor *counter, int *fused)
{
    const char *op = "mcl_matmul_add_norm";
    if (!fused)
        return MCL_ERROR_INVALID_ARGUMENT;
    *fused = 0;
    if (!w || mcl_quant_format(w->dtype) < 0)
        return MCL_SUCCESS;
    quant_product p;
    mcl_status status = mcl_quant_check(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, x,
                                        MCL_QUANT_PATH_AUTO, &p);
    if (status != MCL_SUCCESS)
        return status;
    const mcl_traits *tr = mcl_traits_of(ctx);
    /* The integer-dot path with a quantization to write, or the float path without. */
    const int dot = p.path == MCL_QUANT_PATH_DOT;
    if ((p.path != MCL_QUANT_PATH_FLOAT && !dot) || dot != (act_out != NULL) ||
        p.rows > MCL_QUANT_GEMV_MAX_ROWS || p.part_rows < p.n || p.n % 32 != 0 ||
        tr->max_stage_buffers < NORM_BINDINGS)
        return MCL_SUCCESS;
    uint64_t act_bytes = (uint64_t)p.rows * MCL_QUANT_ACT_WORDS * 4;
    if (!weight || !y || (dot && !act) || !counter || weight->ctx != ctx || y->ctx != ctx ||
        (dot && (act->ctx != ctx || act_out->ctx != ctx)) || counter->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: a NULL tensor or another ctx's",
                        op);
    if (weight->dtype != MCL_DTYPE_F32 || y->dtype != MCL_DTYPE_F32 ||
        (dot && (act->dtype != MCL_DTYPE_I32 || act_out->dtype != MCL_DTYPE_I32)) ||
        counter->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s: weight and y f32, act, act_out "
                        "and counter i32", op);
    if (mcl_tensor_numel(weight) != p.n || !mcl_tensor_same_shape(x, y) ||
        (dot && (act->nbytes < act_bytes * (p.k / 32) ||
                 act_out->nbytes < act_bytes * (p.n / 32))) || counter->nbytes < 4)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: weight of %u elements, y of x's "
                        "shape, act and act_out their blocks, counter one element", op, p.n);
    if (x == y || a == x || a == y ||
        (dot && (act == act_out || act == x || act == y || act_out == x || act_out == y)))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: the tensors must be distinct", op);
    mcl_gemv_plan plan;
    mcl_gemv_plan_for(ctx, dot, p.fmt, p.rows, p.n, p.k, &plan);
    uint64_t lanes = (uint64_t)plan.t * plan.g;
    if (lanes % 8 != 0 || mcl_gemv_shared_bytes(p.fmt, &plan, p.rows) +
                                  NORM_SHARED(lanes, dot) > tr->max_shared_bytes)
        return MCL_SUCCESS;
    mcl_ctx_log(ctx, MCL_LOG_DEBUG, "gemv norm %s %ux%u, %u rows, %s: t=%u g=%u nr=%u u=%u "
                "pb=%u st=%u cvt=%u", mcl_dtype_name(w->dtype), p.n, p.k, p.rows,
                dot ? "dot" : "float", plan.t, plan.g, plan.nr, plan.u, plan.pb, plan.stage,
                plan.cvt);
    mcl_kernel_desc desc = {
        .id = dot ? MCL_KERNEL_GEMV_Q_DOT_NORM : MCL_KERNEL_GEMV_Q_NORM,
        .binding_count = NORM_BINDINGS,
        .push_size = sizeof(mcl_gemv_norm_push),
        .local_size_x = plan.t,
        .spec_count = dot ? 6 : 8,
        .spec = {p.fmt, p.rows, plan.nr, plan.g, plan.u, plan.pb, plan.stage, plan.cvt},
    };
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_exact(ctx, &desc, &kernel)) != MCL_SUCCESS)
        return status;
    weight_part part;
    if ((status = mcl_weight_part_views(ctx, w, p.n, p.k, 0, p.n, &part)) != MCL_SUCCESS)
        return status;
    mcl_gemv_norm_push push = {
        .base = {.n = p.n, .k = p.k, .ldc = p.n, .dlo = part.dlo},
        .eps = eps,
    };
    uint32_t gx, gy;
    mcl_quant_grid_2d(ceil_div(p.n, (uint64_t)plan.g * plan.nr), &gx, &gy);
    /* The float path reads a, and its unused quantization binding is y's. */
    mcl_tensor *in = dot ? act : a;
    mcl_tensor *reads[5] = {in, part.body, part.d, in, weight};
    mcl_tensor *writes[4] = {x, y, dot ? act_out : y, counter};
    mcl_profile_op(ctx, dot ? "matmul, residual and norm, integer dot"
                            : "matmul, residual and norm, float",
                   (double)part.body->nbytes + part.d->nbytes + 4.0 * p.rows * p.n * 3 +
                       (dot ? act_bytes * (p.k / 32 + p.n / 32) : 4.0 * p.rows * p.k),
                   2.0 * p.rows * p.n * p.k);
    status = mcl_dispatch(ctx, kernel, reads, 5, writes, 4, &push, gx, gy, 1);
    mcl_weight_part_free(&part);
    *fused = status == MCL_SUCCESS;
    return status;
}
