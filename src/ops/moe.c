/* Mixtures of experts on the device: the routing (moe_route_f32.comp), the expert GEMVs that
 * read only the chosen experts' rows of a stack (gemv_q / gemv_q_dot in an experts mode for
 * block-quantised stacks: a workgroup per pair for decode, grouped by expert for a batch of
 * several rows; gemv_experts_f32.comp for f32 ones), and the weighted sum of the experts'
 * outputs (moe_combine_f32.comp). The expert of each (row, slot) pair is read from
 * an ids tensor on the device, so that a recorded step replays for any routing.
 *
 * Offsets. A stack may exceed one binding (a model's [E, N, K] expert tensor is one matrix
 * [E N, K]); it is bound in parts of whole experts, views whose byte offsets are computed here
 * in 64 bits, so that no expert straddles two bindings and every index a kernel computes is
 * relative to a part that one binding holds (below 4 GiB: 32 bits cannot wrap there). */
#include "matmul_quant.h"
#include "ops_internal.h"

#include "quant/quant.h"

/* moe_route_f32's workgroup: a power of two, at least MCL_MOE_MAX_USED lanes. */
#define ROUTE_WG 256u
/* moe_router_f32's shared memory: a row's partials (16 slices of 256 experts), route.glsl's
 * three arrays of ROUTE_WG and its choices, the last-workgroup flag. */
#define ROUTER_SHARED_BYTES (4u * (MCL_MOE_ROUTER_SLICES * MCL_MOE_MAX_EXPERTS + 3u * ROUTE_WG + \
                                   MCL_MOE_MAX_USED + 1u))
/* gemv_experts_f32: T lanes along K, G rows of W per workgroup. */
#define EXPERTS_F32_LANES 64u
#define EXPERTS_F32_ROWS 4u
/* Vulkan guarantees 65535 workgroups per dimension. */
#define MOE_MAX_GROUPS 65535u

static int ours(const mcl_context *ctx, const mcl_tensor *t)
{
    return t && t->ctx == ctx;
}

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

static uint32_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return (uint32_t)a;
}

/* ---- Routing --------------------------------------------------------------------------- */

mcl_status mcl_moe_route(mcl_context *ctx, mcl_tensor *logits, uint32_t k, int norm,
                         mcl_tensor *ids, mcl_tensor *weights)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!ours(ctx, logits) || !ours(ctx, ids) || !ours(ctx, weights))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_moe_route: a tensor is NULL or of another context");
    if (logits->dtype != MCL_DTYPE_F32 || ids->dtype != MCL_DTYPE_I32 ||
        weights->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_moe_route: logits and weights f32, ids i32");
    if (ids == weights)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_moe_route: ids is weights");
    uint64_t e = logits->ndim ? (uint64_t)logits->shape[logits->ndim - 1] : 0;
    if (e == 0 || e > MCL_MOE_MAX_EXPERTS || k == 0 || k > MCL_MOE_MAX_USED || k > e)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_moe_route: %llu experts (1..%u), %u chosen (1..%u, at most the "
                        "experts)", (unsigned long long)e, MCL_MOE_MAX_EXPERTS, k,
                        MCL_MOE_MAX_USED);
    uint64_t rows = (uint64_t)mcl_tensor_numel(logits) / e;
    if (rows == 0 || rows > UINT32_MAX / MCL_MOE_MAX_EXPERTS ||
        mcl_tensor_numel(ids) < (int64_t)(rows * k) ||
        mcl_tensor_numel(weights) < (int64_t)(rows * k))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_moe_route: %llu rows need ids and weights of %llu elements",
                        (unsigned long long)rows, (unsigned long long)(rows * k));
    uint32_t wg = ROUTE_WG;
    while (wg > mcl_traits_of(ctx)->max_invocations)
        wg /= 2;
    mcl_kernel_desc desc = {.id = MCL_KERNEL_MOE_ROUTE_F32, .binding_count = 3,
                            .push_size = 4 * sizeof(uint32_t), .local_size_x = wg};
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    struct {
        uint32_t e, k, norm, rows;
    } push = {(uint32_t)e, k, norm != 0, (uint32_t)rows};
    uint32_t gx = rows < MOE_MAX_GROUPS ? (uint32_t)rows : MOE_MAX_GROUPS;
    uint32_t gy = ceil_div(rows, gx);
    mcl_tensor *writes[2] = {ids, weights};
    return mcl_dispatch(ctx, kernel, &logits, 1, writes, 2, &push, gx, gy, 1);
}

/* moe_router_f32's slices of K: at most MCL_MOE_ROUTER_SLICES of a multiple of 128 values. */
static void router_slices(uint64_t k, uint32_t *slices, uint32_t *per)
{
    uint64_t p = (k + 128ull * MCL_MOE_ROUTER_SLICES - 1) / (128ull * MCL_MOE_ROUTER_SLICES) * 128;
    *per = (uint32_t)p;
    *slices = ceil_div(k, p);
}

mcl_status mcl_moe_router(mcl_context *ctx, const mcl_moe_router_args *a, int *done)
{
    if (!ctx || !a || !done)
        return MCL_ERROR_INVALID_ARGUMENT;
    *done = 0;
    mcl_tensor *x = a->x, *w = a->w;
    if (!ours(ctx, x) || !ours(ctx, w) || !ours(ctx, a->part) || !ours(ctx, a->counts) ||
        !ours(ctx, a->logits) || !ours(ctx, a->ids) || !ours(ctx, a->weights))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_moe_router: a tensor is NULL or of another context");
    uint64_t kdim = w->ndim == 2 ? (uint64_t)w->shape[1] : 0;
    uint64_t e = w->ndim == 2 ? (uint64_t)w->shape[0] : 0;
    uint64_t rows = kdim ? (uint64_t)mcl_tensor_numel(x) / kdim : 0;
    /* What the kernel does not take is the caller's to run apart, not an error. */
    if (w->dtype != MCL_DTYPE_F32 || x->dtype != MCL_DTYPE_F32 || kdim == 0 || kdim % 4 ||
        kdim > UINT32_MAX / 2 || e == 0 || e > MCL_MOE_MAX_EXPERTS || a->k == 0 ||
        a->k > MCL_MOE_MAX_USED || a->k > e || rows == 0 || rows > MOE_MAX_GROUPS ||
        (uint64_t)mcl_tensor_numel(x) != rows * kdim ||
        mcl_traits_of(ctx)->max_invocations < ROUTE_WG ||
        mcl_traits_of(ctx)->max_shared_bytes < ROUTER_SHARED_BYTES)
        return MCL_SUCCESS;
    uint32_t slices, per;
    router_slices(kdim, &slices, &per);
    if (a->part->dtype != MCL_DTYPE_F32 || a->counts->dtype != MCL_DTYPE_I32 ||
        a->logits->dtype != MCL_DTYPE_F32 || a->ids->dtype != MCL_DTYPE_I32 ||
        a->weights->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_moe_router: part, logits and weights f32, counts and ids i32");
    if ((uint64_t)mcl_tensor_numel(a->part) < rows * MCL_MOE_ROUTER_SLICES * e ||
        (uint64_t)mcl_tensor_numel(a->counts) < rows ||
        (uint64_t)mcl_tensor_numel(a->logits) < rows * e ||
        (uint64_t)mcl_tensor_numel(a->ids) < rows * a->k ||
        (uint64_t)mcl_tensor_numel(a->weights) < rows * a->k)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_moe_router: %llu rows of %llu experts need part of %llu, counts of "
                        "%llu, logits of %llu, ids and weights of %llu elements",
                        (unsigned long long)rows, (unsigned long long)e,
                        (unsigned long long)(rows * MCL_MOE_ROUTER_SLICES * e),
                        (unsigned long long)rows, (unsigned long long)(rows * e),
                        (unsigned long long)(rows * a->k));
    mcl_kernel_desc desc = {.id = MCL_KERNEL_MOE_ROUTER_F32, .binding_count = 7,
                            .push_size = 6 * sizeof(uint32_t), .local_size_x = ROUTE_WG};
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    struct {
        uint32_t k, e, used, norm, slices, per;
    } push = {(uint32_t)kdim, (uint32_t)e, a->k, a->norm != 0, slices, per};
    mcl_tensor *reads[2] = {x, w};
    mcl_tensor *writes[5] = {a->part, a->counts, a->logits, a->ids, a->weights};
    mcl_profile_op(ctx, "moe router and routing", 4.0 * (rows + e) * kdim,
                   2.0 * rows * e * kdim);
    status = mcl_dispatch(ctx, kernel, reads, 2, writes, 5, &push, slices, (uint32_t)rows, 1);
    *done = status == MCL_SUCCESS;
    return status;
}

/* ---- Expert GEMVs ---------------------------------------------------------------------- */

/* A checked expert product: shapes, the format (-1: f32), the path, experts per part. */
typedef struct experts_product {
    int fmt;
    mcl_quant_path path;
    uint32_t n, k, xrows, pairs, part_experts;
    uint64_t row_bytes; /* bytes of one row of W that a part binds (block bodies for a block
                         * type) */
} experts_product;

/* Experts per binding: all where the stack fits one, else the most that fit one and start
 * every part at an offset the device can bind. */
static mcl_status experts_per_part(mcl_context *ctx, uint32_t experts, experts_product *p)
{
    const mcl_traits *t = mcl_traits_of(ctx);
    uint64_t limit = t->weight_part_bytes, align = t->binding_alignment < 4 ? 4
                                                                            : t->binding_alignment;
    uint64_t expert_bytes = (uint64_t)p->n * p->row_bytes;
    p->part_experts = experts;
    if (expert_bytes * experts <= limit)
        return MCL_SUCCESS;
    uint64_t step = align / gcd_u64(expert_bytes % align, align);
    uint64_t count = limit / expert_bytes / step * step;
    if (count == 0)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_matmul_experts: a part must hold a multiple of %llu experts of "
                        "%llu bytes to start at a multiple of %llu bytes; one storage-buffer "
                        "binding of %llu bytes holds fewer", (unsigned long long)step,
                        (unsigned long long)expert_bytes, (unsigned long long)align,
                        (unsigned long long)limit);
    p->part_experts = (uint32_t)count;
    return MCL_SUCCESS;
}

static mcl_status experts_check(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *ids,
                                const mcl_experts_desc *d, mcl_tensor *y, experts_product *p)
{
    if (!ours(ctx, x) || !ours(ctx, w) || !ours(ctx, ids) || !ours(ctx, y) ||
        (d->act && !ours(ctx, d->act)))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul_experts: a tensor is NULL or of another context");
    p->fmt = mcl_quant_format(w->dtype);
    if ((p->fmt < 0 && w->dtype != MCL_DTYPE_F32) || x->dtype != MCL_DTYPE_F32 ||
        y->dtype != MCL_DTYPE_F32 || ids->dtype != MCL_DTYPE_I32 ||
        (d->act && d->act->dtype != MCL_DTYPE_I32))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_matmul_experts: W f32 or block-quantised, x and y f32, ids i32");
    if (y == x || y == ids || y == w || y == d->act)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_matmul_experts: y aliases an input");
    if (w->ndim != 2 || x->ndim < 2 || y->ndim < 2 || d->experts == 0 || d->slots == 0 ||
        d->experts > UINT32_MAX - d->id_base ||
        w->shape[0] % d->experts != 0 || w->shape[1] != x->shape[x->ndim - 1] ||
        w->shape[0] / d->experts > UINT32_MAX || w->shape[0] / d->experts !=
                                                     y->shape[y->ndim - 1] ||
        w->shape[1] > UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul_experts: W [experts x N, K] (%u experts), x [.., K], y [.., "
                        "N]", d->experts);
    p->n = (uint32_t)(w->shape[0] / d->experts);
    p->k = (uint32_t)w->shape[1];
    uint64_t xrows = (uint64_t)mcl_tensor_numel(x) / p->k;
    uint64_t pairs = (uint64_t)mcl_tensor_numel(y) / p->n;
    if (pairs != (d->per_slot ? xrows : xrows * d->slots) || pairs == 0 ||
        pairs > MOE_MAX_GROUPS || (uint64_t)mcl_tensor_numel(ids) < d->ids_first + pairs)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul_experts: %llu rows of x, %llu of y, %u slots (%s), ids of "
                        "%lld from %u: y needs a row per pair (at most %u), ids an id",
                        (unsigned long long)xrows, (unsigned long long)pairs, d->slots,
                        d->per_slot ? "a row of x per pair" : "x shared by a row's slots",
                        (long long)mcl_tensor_numel(ids), d->ids_first, MOE_MAX_GROUPS);
    p->xrows = (uint32_t)xrows;
    p->pairs = (uint32_t)pairs;
    if (p->fmt < 0) {
        p->path = MCL_QUANT_PATH_FLOAT;
        p->row_bytes = (uint64_t)p->k * 4;
    } else {
        mcl_quant_layout l;
        mcl_quant_layout_of(w->dtype, &l);
        p->row_bytes = p->k / (uint64_t)mcl_dtype_block_weights(w->dtype) * l.body_bytes;
        p->path = d->path == MCL_QUANT_PATH_AUTO ? mcl_quant_path_select(ctx, w->dtype)
                                                 : d->path;
        char why[160];
        if ((unsigned)p->path > MCL_QUANT_PATH_MATRIX)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_matmul_experts: unknown path %d", (int)p->path);
        if (p->path == MCL_QUANT_PATH_MATRIX)
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                            "mcl_matmul_experts: the expert GEMVs take the float or the "
                            "integer-dot path");
        if (mcl_quant_path_refusal(mcl_traits_of(ctx), p->path, (uint32_t)p->fmt, 1, why,
                                   sizeof why))
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_matmul_experts: %s", why);
        if (d->act && p->path == MCL_QUANT_PATH_DOT &&
            d->act->nbytes < (uint64_t)xrows * (p->k / MCL_QUANT_LANE_WEIGHTS) *
                                 MCL_QUANT_ACT_WORDS * 4)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_matmul_experts: act is too small for x's quantization");
    }
    return experts_per_part(ctx, d->experts, p);
}

/* The experts modes of gemv_q / gemv_q_dot (their EXPERTS constant, gemv_q.glsl). */
#define EXPERTS_PER_PAIR 1u
#define EXPERTS_GROUPED 2u
/* The grouped mode from this many rows of the batch (tokens) on: a prompt, or a batch of
 * several sequences; decode's one row (or a few) keeps a workgroup per pair, which spreads its
 * few pairs widest. The choice, and the grouped mode's rows of x per chunk, follow from the
 * batch alone, never from the stack's experts: an expert cache runs one product over its slots
 * and again over its pool (id_base), and each pair's values must be those of the same product
 * over the whole stack, bit for bit (the mode and the plan fix the order of summation). */
#define GROUPED_MIN_ROWS 4u
/* Rows of x a grouped workgroup multiplies at once: the GEMV kernels' most (8), or 4 where the
 * batch has fewer than 8 rows (an expert holds at most one pair a row: the slots of a row are
 * distinct experts, so a chunk longer than the rows could never fill). */
#define GROUPED_MAX_ROWS 8u

/* The grouped mode's rows of x per chunk for a batch of `pairs` pairs, `slots` a row; 0 where
 * the per-pair mode is the one to run. */
static uint32_t grouped_rows(uint32_t pairs, uint32_t slots)
{
    uint32_t rows = pairs / slots;
    if (rows < GROUPED_MIN_ROWS)
        return 0;
    return rows >= GROUPED_MAX_ROWS ? GROUPED_MAX_ROWS : GROUPED_MIN_ROWS;
}

/* mcl_matmul_experts_sum's: the weighted sum gemv_q_dot_sum adds after the products. */
typedef struct experts_sum {
    mcl_tensor *weights, *counts, *out;
    int accumulate;
} experts_sum;

/* One part of a block-quantised stack (experts [e0, e0 + count)), gemv_q or gemv_q_dot in an
 * experts mode: grouped (a workgroup per expert of the part, its pairs m at a time) for a
 * batch of several rows where the plan leaves room for the list of pairs in shared memory,
 * else per pair (a workgroup per pair, one row of x). With sum (per pair on the integer-dot
 * path, the caller's check) gemv_q_dot_sum, of the same plan, adds the weighted sum. */
static mcl_status experts_quant_part(mcl_context *ctx, const experts_product *p,
                                     const mcl_experts_desc *d, mcl_tensor *in,
                                     const weight_part *w, mcl_tensor *ids, mcl_tensor *y,
                                     uint32_t e0, uint32_t count, const experts_sum *sum)
{
    int dot = p->path == MCL_QUANT_PATH_DOT;
    uint32_t m = grouped_rows(p->pairs, d->slots), mode = EXPERTS_GROUPED;
    mcl_gemv_plan plan;
    if (m) {
        /* The grid the plan sizes its lanes for: the chunks of m pairs, as many as if every
         * chunk were full (of the batch, not of the part: see GROUPED_MIN_ROWS). */
        uint64_t grid_rows = (uint64_t)p->n * ceil_div(p->pairs, m);
        mcl_gemv_plan_reserving(ctx, dot, (uint32_t)p->fmt, m,
                                grid_rows > UINT32_MAX ? UINT32_MAX : (uint32_t)grid_rows, p->k,
                                MCL_GEMV_GROUPED_SHARED(m), &plan);
        if (mcl_gemv_shared_bytes((uint32_t)p->fmt, &plan, m) + MCL_GEMV_GROUPED_SHARED(m) >
            mcl_traits_of(ctx)->max_shared_bytes)
            m = 0;
    }
    if (!m) {
        /* The plan of one row of x; the grid it sizes its lanes for holds every pair's rows. */
        uint64_t grid_rows = (uint64_t)p->n * p->pairs;
        m = 1;
        mode = EXPERTS_PER_PAIR;
        mcl_gemv_plan_for(ctx, dot, (uint32_t)p->fmt, 1,
                          grid_rows > UINT32_MAX ? UINT32_MAX : (uint32_t)grid_rows, p->k, &plan);
    }
    mcl_ctx_log(ctx, MCL_LOG_DEBUG,
                "experts part [%u, %u): %s, %u rows of x a workgroup: t=%u g=%u nr=%u u=%u "
                "pb=%u st=%u cvt=%u", e0, e0 + count,
                mode == EXPERTS_GROUPED ? "grouped" : "per pair", m, plan.t, plan.g, plan.nr,
                plan.u, plan.pb, plan.stage, plan.cvt);
    mcl_kernel_desc desc = {
        .id = sum ? MCL_KERNEL_GEMV_Q_DOT_SUM : dot ? MCL_KERNEL_GEMV_Q_DOT : MCL_KERNEL_GEMV_Q,
        .binding_count = sum ? 8 : 5,
        .push_size = sizeof(mcl_gemv_push),
        .local_size_x = plan.t,
        .spec_count = dot ? 7 : 9,
    };
    const uint32_t spec_float[9] = {(uint32_t)p->fmt, m, plan.nr, plan.g, plan.u, plan.pb,
                                    plan.stage, plan.cvt, mode};
    const uint32_t spec_dot[7] = {(uint32_t)p->fmt, m, plan.nr, plan.g, plan.u, plan.pb, mode};
    for (uint32_t i = 0; i < desc.spec_count; i++)
        desc.spec[i] = dot ? spec_dot[i] : spec_float[i];
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    mcl_gemv_push push = {.n = p->n, .k = p->k, .ldc = p->n, .dlo = w->dlo,
                          .e_lo = d->id_base + e0,
                          .e_n = count, .xdiv = d->per_slot ? 1 : d->slots,
                          .xrows = p->xrows, .ids0 = d->ids_first, .pairs = p->pairs};
    uint32_t groups = ceil_div(p->n, (uint64_t)plan.g * plan.nr);
    uint32_t gx = groups < MOE_MAX_GROUPS ? groups : MOE_MAX_GROUPS, gy = ceil_div(groups, gx);
    mcl_tensor *reads[5] = {in, w->body, w->d, ids, sum ? sum->weights : NULL};
    /* Bytes: per pair, the chosen experts' rows at most once each; grouped, modeled as if the
     * pairs were spread evenly over the stack's experts, each of the part's read once per
     * chunk of m (and its ids scanned). */
    uint64_t chosen = p->pairs < count ? p->pairs : count;
    double bytes = (double)chosen * p->n * p->row_bytes;
    if (mode == EXPERTS_GROUPED)
        bytes = (double)count * ceil_div(ceil_div(p->pairs, d->experts), m) * p->n *
                    p->row_bytes + 4.0 * count * groups * p->pairs;
    mcl_profile_op(ctx,
                   sum ? "matmul experts and weighted sum, integer dot"
                   : mode == EXPERTS_GROUPED
                       ? (dot ? "matmul experts grouped, integer dot"
                              : "matmul experts grouped, float")
                       : (dot ? "matmul experts, integer dot" : "matmul experts, float"),
                   bytes + 4.0 * p->pairs * p->n, 2.0 * p->pairs * p->n * p->k);
    if (sum) {
        if ((uint64_t)gx * gy * (p->pairs / d->slots) > (uint64_t)mcl_tensor_numel(sum->counts))
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_matmul_experts_sum: counts holds fewer than %u a row",
                            gx * gy);
        push.dlo_u = d->slots;
        push.has_bias = sum->accumulate ? 2u : 0u;
        mcl_tensor *writes[3] = {y, sum->counts, sum->out};
        return mcl_dispatch(ctx, kernel, reads, 5, writes, 3, &push, gx, gy, p->pairs);
    }
    return mcl_dispatch(ctx, kernel, reads, 4, &y, 1, &push, gx, gy,
                        mode == EXPERTS_GROUPED ? count : p->pairs);
}

/* One part of an f32 stack: gemv_experts_f32, a workgroup per pair whatever the batch (the
 * grouped mode is the block-quantised kernels' only). */
static mcl_status experts_f32_part(mcl_context *ctx, const experts_product *p,
                                   const mcl_experts_desc *d, mcl_tensor *x, mcl_tensor *w,
                                   mcl_tensor *ids, mcl_tensor *y, uint32_t e0, uint32_t count)
{
    const mcl_traits *t = mcl_traits_of(ctx);
    uint32_t lanes = EXPERTS_F32_LANES, rows = EXPERTS_F32_ROWS;
    while (lanes * rows > t->max_invocations && rows > 1)
        rows /= 2;
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMV_EXPERTS_F32,
        .binding_count = 4,
        .push_size = 6 * sizeof(uint32_t),
        .local_size_x = lanes,
        .spec_count = 2,
        .spec = {rows, p->k % 4 == 0},
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    struct {
        uint32_t n, k, e_lo, e_n, xdiv, ids0;
    } push = {p->n, p->k, d->id_base + e0, count, d->per_slot ? 1 : d->slots, d->ids_first};
    uint32_t groups = ceil_div(p->n, rows);
    uint32_t gx = groups < MOE_MAX_GROUPS ? groups : MOE_MAX_GROUPS, gy = ceil_div(groups, gx);
    mcl_tensor *reads[3] = {x, w, ids};
    uint64_t chosen = p->pairs < count ? p->pairs : count;
    mcl_profile_op(ctx, "matmul experts, f32",
                   (double)chosen * p->n * p->row_bytes + 4.0 * p->pairs * p->n,
                   2.0 * p->pairs * p->n * p->k);
    return mcl_dispatch(ctx, kernel, reads, 3, &y, 1, &push, gx, gy, p->pairs);
}

mcl_status mcl_matmul_experts(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *ids,
                              const mcl_experts_desc *desc, mcl_tensor *y,
                              mcl_quant_path *ran)
{
    if (!ctx || !desc)
        return MCL_ERROR_INVALID_ARGUMENT;
    experts_product p = {0};
    mcl_status status = experts_check(ctx, x, w, ids, desc, y, &p);
    if (status != MCL_SUCCESS)
        return status;
    mcl_tensor *act = desc->act, *own = NULL;
    if (p.fmt >= 0 && p.path == MCL_QUANT_PATH_DOT && !act) {
        status = mcl_quantize_into_scratch(ctx, x, p.xrows, p.k, &own);
        act = own;
    }
    uint64_t n_total = (uint64_t)p.n * desc->experts;
    mcl_ctx_log(ctx, MCL_LOG_DEBUG, "experts %s %ux%u, %u experts (%u a part), %u pairs, %s",
                mcl_dtype_name(w->dtype), p.n, p.k, desc->experts, p.part_experts, p.pairs,
                p.path == MCL_QUANT_PATH_DOT ? "dot" : "float");
    for (uint32_t e0 = 0; status == MCL_SUCCESS && e0 < desc->experts; e0 += p.part_experts) {
        uint32_t count = desc->experts - e0 < p.part_experts ? desc->experts - e0
                                                             : p.part_experts;
        /* The part's first row and its bytes, in 64 bits: past 4 GiB of experts a 32-bit
         * product would wrap and bind another expert's rows. */
        uint64_t r0 = (uint64_t)e0 * p.n, rows = (uint64_t)count * p.n;
        if (p.fmt < 0) {
            mcl_tensor *view = NULL;
            status = mcl_tensor_bytes_view(w, r0 * p.row_bytes, rows * p.row_bytes, &view);
            if (status == MCL_SUCCESS)
                status = experts_f32_part(ctx, &p, desc, x, view, ids, y, e0, count);
            mcl_tensor_destroy(view);
            continue;
        }
        if (n_total > UINT32_MAX || r0 > UINT32_MAX || rows > UINT32_MAX) {
            status = mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                              "mcl_matmul_experts: more than 2^32 rows of experts");
            break;
        }
        weight_part wp;
        status = mcl_weight_part_views(ctx, w, (uint32_t)n_total, p.k, (uint32_t)r0,
                                       (uint32_t)rows, &wp);
        if (status != MCL_SUCCESS)
            break;
        status = experts_quant_part(ctx, &p, desc, p.path == MCL_QUANT_PATH_DOT ? act : x, &wp,
                                    ids, y, e0, count, NULL);
        mcl_weight_part_free(&wp);
    }
    /* Safe at once: scratch memory stays reserved until the recorded work has run. */
    mcl_tensor_destroy(own);
    if (status == MCL_SUCCESS && ran)
        *ran = p.path;
    return status;
}

mcl_status mcl_matmul_experts_glu_q8(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w_gate,
                                     mcl_tensor *w_up, mcl_tensor *ids,
                                     const mcl_experts_desc *desc, mcl_tensor *gate,
                                     mcl_tensor *act_out, int *fused)
{
    if (!ctx || !desc || !fused)
        return MCL_ERROR_INVALID_ARGUMENT;
    *fused = 0;
    experts_product p = {0}, pu = {0};
    mcl_status status = experts_check(ctx, x, w_gate, ids, desc, gate, &p);
    if (status == MCL_SUCCESS)
        status = experts_check(ctx, x, w_up, ids, desc, gate, &pu);
    if (status != MCL_SUCCESS)
        return status;
    uint64_t n_total = (uint64_t)p.n * desc->experts;
    quant_product qp = {.fmt = (uint32_t)p.fmt, .rows = 1, .n = p.n, .k = p.k, .part_rows = p.n,
                        .path = p.path};
    /* The plan's grid: every pair's rows, never the stack's experts (GROUPED_MIN_ROWS says why). */
    uint64_t grid_rows = (uint64_t)p.n * p.pairs;
    mcl_gemv_plan plan;
    if (w_gate->dtype != w_up->dtype || !desc->act || desc->per_slot ||
        grouped_rows(p.pairs, desc->slots) || p.part_experts < desc->experts ||
        pu.part_experts < desc->experts || n_total > UINT32_MAX ||
        !mcl_glu_plan(ctx, &qp, grid_rows > UINT32_MAX ? UINT32_MAX : (uint32_t)grid_rows, 0,
                      &plan))
        return MCL_SUCCESS;
    if (!act_out) {
        *fused = 1;
        return MCL_SUCCESS;
    }
    if (!ours(ctx, act_out) || act_out->dtype != MCL_DTYPE_I32 || act_out == desc->act ||
        act_out->nbytes < (uint64_t)p.pairs * (p.n / 32) * MCL_QUANT_ACT_WORDS * 4)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul_experts_glu_q8: act_out missing, too small or act");
    mcl_ctx_log(ctx, MCL_LOG_DEBUG, "experts glu %s %ux%u, %u pairs: t=%u g=%u nr=%u u=%u pb=%u",
                mcl_dtype_name(w_gate->dtype), p.n, p.k, p.pairs, plan.t, plan.g, plan.nr,
                plan.u, plan.pb);
    mcl_kernel_desc kd = {
        .id = MCL_KERNEL_GEMV_Q_DOT_GLU,
        .binding_count = 7,
        .push_size = sizeof(mcl_gemv_push),
        .local_size_x = plan.t,
        .spec_count = 7,
        .spec = {(uint32_t)p.fmt, 1, 2 * plan.nr, plan.g, plan.u, plan.pb, EXPERTS_PER_PAIR},
    };
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_exact(ctx, &kd, &kernel)) != MCL_SUCCESS)
        return status;
    weight_part wg, wu;
    status = mcl_weight_part_views(ctx, w_gate, (uint32_t)n_total, p.k, 0, (uint32_t)n_total,
                                   &wg);
    if (status != MCL_SUCCESS)
        return status;
    status = mcl_weight_part_views(ctx, w_up, (uint32_t)n_total, p.k, 0, (uint32_t)n_total, &wu);
    if (status != MCL_SUCCESS) {
        mcl_weight_part_free(&wg);
        return status;
    }
    mcl_gemv_push push = {.n = p.n, .k = p.k, .ldc = p.n, .dlo = wg.dlo, .e_lo = desc->id_base,
                          .e_n = desc->experts, .xdiv = desc->slots, .xrows = p.xrows,
                          .ids0 = desc->ids_first, .pairs = p.pairs, .dlo_u = wu.dlo};
    uint32_t groups = ceil_div(p.n, (uint64_t)plan.g * plan.nr);
    uint32_t gx = groups < MOE_MAX_GROUPS ? groups : MOE_MAX_GROUPS, gy = ceil_div(groups, gx);
    mcl_tensor *reads[6] = {desc->act, wg.body, wg.d, wu.body, wu.d, ids};
    uint64_t chosen = p.pairs < desc->experts ? p.pairs : desc->experts;
    mcl_profile_op(ctx, "matmul experts gate, up and swiglu, integer dot",
                   2.0 * chosen * p.n * p.row_bytes +
                       4.0 * p.pairs * (p.k + p.n) / 32 * MCL_QUANT_ACT_WORDS,
                   4.0 * p.pairs * p.n * p.k);
    status = mcl_dispatch(ctx, kernel, reads, 6, &act_out, 1, &push, gx, gy, p.pairs);
    mcl_weight_part_free(&wu);
    mcl_weight_part_free(&wg);
    *fused = status == MCL_SUCCESS;
    return status;
}

mcl_status mcl_matmul_experts_sum(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w,
                                  mcl_tensor *ids, const mcl_experts_desc *desc, mcl_tensor *y,
                                  const mcl_experts_sum_args *a, int *done)
{
    if (!ctx || !desc || !a || !done)
        return MCL_ERROR_INVALID_ARGUMENT;
    *done = 0;
    experts_product p = {0};
    mcl_status status = experts_check(ctx, x, w, ids, desc, y, &p);
    if (status != MCL_SUCCESS)
        return status;
    /* The whole stack in one part and its own ids (id_base 0): every pair is this dispatch's,
     * so every row it sums was written by it. */
    if (p.fmt < 0 || p.path != MCL_QUANT_PATH_DOT || !desc->act || !desc->per_slot ||
        grouped_rows(p.pairs, desc->slots) || p.part_experts < desc->experts ||
        desc->id_base != 0 || (uint64_t)p.n * desc->experts > UINT32_MAX)
        return MCL_SUCCESS;
    uint32_t rows = p.pairs / desc->slots;
    if (!ours(ctx, a->weights) || !ours(ctx, a->counts) || !ours(ctx, a->out))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul_experts_sum: a tensor is NULL or of another context");
    if (a->weights->dtype != MCL_DTYPE_F32 || a->counts->dtype != MCL_DTYPE_I32 ||
        a->out->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_matmul_experts_sum: weights and out f32, counts i32");
    if (a->out == y || a->out == x || a->out == a->weights || a->out == a->counts ||
        a->counts == y || a->counts == a->weights)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul_experts_sum: out and counts apart from the other tensors");
    if ((uint64_t)mcl_tensor_numel(a->out) != (uint64_t)rows * p.n ||
        (uint64_t)mcl_tensor_numel(a->weights) < p.pairs)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul_experts_sum: out [%u, %u], weights of %u", rows, p.n,
                        p.pairs);
    weight_part wp;
    status = mcl_weight_part_views(ctx, w, p.n * desc->experts, p.k, 0, p.n * desc->experts,
                                   &wp);
    if (status != MCL_SUCCESS)
        return status;
    experts_sum sum = {a->weights, a->counts, a->out, a->accumulate};
    status = experts_quant_part(ctx, &p, desc, desc->act, &wp, ids, y, 0, desc->experts, &sum);
    mcl_weight_part_free(&wp);
    *done = status == MCL_SUCCESS;
    return status;
}

int mcl_matmul_experts_quantizes(mcl_context *ctx, const mcl_tensor *w)
{
    if (!ctx || !w)
        return 0;
    int fmt = mcl_quant_format(w->dtype);
    char why[160];
    return fmt >= 0 && mcl_quant_path_select(ctx, w->dtype) == MCL_QUANT_PATH_DOT &&
           !mcl_quant_path_refusal(mcl_traits_of(ctx), MCL_QUANT_PATH_DOT, (uint32_t)fmt, 1, why,
                                   sizeof why);
}

/* ---- Weighted sum ---------------------------------------------------------------------- */

mcl_status mcl_moe_combine(mcl_context *ctx, mcl_tensor *y, mcl_tensor *weights, uint32_t k,
                           int accumulate, mcl_tensor *out)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!ours(ctx, y) || !ours(ctx, weights) || !ours(ctx, out))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_moe_combine: a tensor is NULL or of another context");
    if (y->dtype != MCL_DTYPE_F32 || weights->dtype != MCL_DTYPE_F32 ||
        out->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_moe_combine: f32 tensors");
    if (out == y || out == weights)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_moe_combine: out aliases an input");
    uint64_t dim = out->ndim ? (uint64_t)out->shape[out->ndim - 1] : 0;
    uint64_t rows = dim ? (uint64_t)mcl_tensor_numel(out) / dim : 0;
    if (k == 0 || k > MCL_MOE_MAX_USED || rows == 0 || rows > MOE_MAX_GROUPS ||
        dim > UINT32_MAX || (uint64_t)mcl_tensor_numel(y) != rows * k * dim ||
        (uint64_t)mcl_tensor_numel(weights) < rows * k)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_moe_combine: out [rows, D] (rows <= %u), y [rows x %u, D], "
                        "weights [rows, %u]", MOE_MAX_GROUPS, k, k);
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_simple(ctx, MCL_KERNEL_MOE_COMBINE_F32, 3,
                                          3 * sizeof(uint32_t), &kernel);
    if (status != MCL_SUCCESS)
        return status;
    struct {
        uint32_t dim, k, accumulate;
    } push = {(uint32_t)dim, k, accumulate != 0};
    uint64_t groups = ceil_div(dim, mcl_kernel_local_size(kernel));
    if (groups > MOE_MAX_GROUPS)
        groups = MOE_MAX_GROUPS;
    mcl_tensor *reads[2] = {y, weights};
    return mcl_dispatch(ctx, kernel, reads, 2, &out, 1, &push, (uint32_t)groups,
                        (uint32_t)rows, 1);
}
