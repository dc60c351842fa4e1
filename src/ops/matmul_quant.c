/* Matrix products with a block-quantised weight (c = a W^T, W [N, K] as stored in a GGUF
 * file): argument checks and recording. quant_plan.c chooses the path and each kernel's
 * plan; this file binds the weight and records the dispatches.
 *
 * Three paths:
 *  - float (every format): the weights are dequantized in the shader and multiplied in f32.
 *    gemv_q for 1..8 rows of a (decode), gemm_q with W's tiles dequantized into shared
 *    memory for more. The path an RX 580 runs (it has no packed 8-bit dot product).
 *  - integer dot: quantize_q8_1 quantizes a to 8 bits per 32 values, then gemv_q_dot (every
 *    format) / gemm_q_dot (Q8_0, Q4_0; the K types' GEMM is the float one) multiply packed
 *    int8 codes.
 *  - matrix (the GEMM, every format): gemm_q_mma rounds a's tiles and W's dequantized tiles
 *    to f16 in shared memory and multiplies them on cooperative matrices, accumulating in
 *    f32.
 *
 * Weights are stored in the device layout (shaders/quant.glsl, src/quant/device_layout.c):
 * Q8_0, Q4_0 and Q6_K keep their fp16 d apart from the block bodies, so that every body is
 * 16-byte aligned. A kernel binds the bodies and the d values as two buffers (weight_part).
 *
 * A weight larger than one binding (maxStorageBufferRange, or MOTIFCL_MAX_BINDING) is bound
 * in row ranges, views at offsets the device can bind; each writes its columns of c (the
 * kernels' ldc and c0), and the integer-dot path quantizes a once for all of them. */
#include "matmul_quant.h"

#include <string.h>

#include "ops_internal.h"
#include "quant/quant.h"

/* Element-wise kernels: invocations per workgroup. */
#define QUANT_THREADS 256u
/* Vulkan guarantees 65535 workgroups per dimension. */
#define QUANT_MAX_GROUPS 65535u

typedef struct gemm_push {
    uint32_t m, n, k, has_bias, ldc, c0, dlo;
} gemm_push;

typedef struct blocks_push {
    uint32_t blocks;
} blocks_push;

typedef struct gemm_q_push {
    uint32_t m, n, k, has_bias, ldc, c0, dlo, kc, kz;
} gemm_q_push;

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

/* A grid of `count` workgroups for kernels that index them as x + y * (groups in x). */
static void grid_2d(uint32_t count, uint32_t *gx, uint32_t *gy)
{
    *gx = count < QUANT_MAX_GROUPS ? count : QUANT_MAX_GROUPS;
    *gy = ceil_div(count, *gx);
}

mcl_status mcl_weight_part_views(mcl_context *ctx, mcl_tensor *w, uint32_t n, uint32_t k,
                                    uint32_t r0, uint32_t rows, weight_part *out)
{
    mcl_quant_layout l;
    mcl_quant_layout_of(w->dtype, &l);
    *out = (weight_part){0};
    uint64_t nb = k / (uint64_t)mcl_dtype_block_weights(w->dtype);
    uint64_t row_body = nb * l.body_bytes;
    mcl_status status = mcl_tensor_bytes_view(w, r0 * row_body, rows * row_body, &out->body);
    if (status != MCL_SUCCESS || !l.split) {
        out->d = out->body;
        return status;
    }
    uint64_t align = mcl_traits_of(ctx)->binding_alignment;
    if (align < 4)
        align = 4;
    uint64_t first = (uint64_t)n * row_body + 2 * r0 * nb;  /* byte of the part's first d */
    uint64_t at = first / align * align, end = (first + 2 * rows * nb + 3) / 4 * 4;
    out->dlo = (uint32_t)((first - at) / 2);
    status = mcl_tensor_bytes_view(w, at, end - at, &out->d);
    if (status != MCL_SUCCESS) {
        mcl_tensor_destroy(out->body);
        out->body = NULL;
    }
    return status;
}

void mcl_weight_part_free(weight_part *wp)
{
    if (wp->d != wp->body)
        mcl_tensor_destroy(wp->d);
    mcl_tensor_destroy(wp->body);
    *wp = (weight_part){0};
}

mcl_status mcl_kernel_exact(mcl_context *ctx, const mcl_kernel_desc *desc,
                            const mcl_kernel **out)
{
    mcl_status status = mcl_kernel_get(ctx, desc, out);
    if (status == MCL_SUCCESS && mcl_kernel_local_size(*out) != desc->local_size_x)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "quantized matmul needs %u invocations per "
                        "workgroup", desc->local_size_x);
    return status;
}

static uint32_t gcd_u32(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The shared memory gemv_q_dot_rms adds to a plan at `rows` rows of x of k values: the
 * rows' activations (10 words a block of 32) and q8_1.glsl's two words a lane. Its sums of
 * squares take workgroups of a multiple of 16 invocations (the callers check). */
static uint64_t rms_shared_bytes(const mcl_gemv_plan *plan, uint32_t rows, uint32_t k)
{
    return 4ull * rows * (k / 32) * MCL_QUANT_ACT_WORDS + 8ull * plan->t * plan->g;
}

/* The GEMV (float or integer dot): `x` is a (float) or its quantized form (dot), or with a
 * fold's norm a itself (the residual stream, gemv_q_dot_rms.comp). */
static mcl_status gemv_dispatch(mcl_context *ctx, int dot, uint32_t fmt, mcl_tensor *x,
                                const weight_part *w, mcl_tensor *bias, mcl_tensor *y,
                                uint32_t rows, uint32_t n, uint32_t k, uint32_t ldc, uint32_t c0,
                                const mcl_gemv_fold *fold)
{
    mcl_gemv_plan plan;
    mcl_gemv_plan_for(ctx, dot, fmt, rows, n, k, &plan);
    const int rms = fold && fold->norm;
    mcl_ctx_log(ctx, MCL_LOG_DEBUG,
                "gemv %s %ux%u, %u rows, %s%s: t=%u g=%u nr=%u u=%u pb=%u st=%u cvt=%u",
                mcl_dtype_name(mcl_quant_format_dtype(fmt)), n, k, rows, dot ? "dot" : "float",
                rms ? ", norm folded" : fold && fold->accumulate ? ", accumulated" : "", plan.t,
                plan.g, plan.nr, plan.u, plan.pb, plan.stage, plan.cvt);
    mcl_kernel_desc desc = {
        .id = rms ? MCL_KERNEL_GEMV_Q_DOT_RMS : dot ? MCL_KERNEL_GEMV_Q_DOT : MCL_KERNEL_GEMV_Q,
        .binding_count = rms ? 6 : 5,
        .push_size = sizeof(mcl_gemv_push),
        .local_size_x = plan.t,
        .spec_count = rms ? 8 : dot ? 6 : 8,
        .spec = {fmt, rows, plan.nr, plan.g, plan.u, plan.pb, rms ? 0 : plan.stage,
                 rms ? k / 32 : plan.cvt},
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    const uint32_t accumulate = fold && fold->accumulate;
    mcl_gemv_push push = {.n = n, .k = k, .has_bias = (bias != NULL) | accumulate << 1,
                          .ldc = ldc, .c0 = c0, .dlo = w->dlo, .eps = rms ? fold->eps : 0.0f};
    uint32_t gx, gy;
    grid_2d(ceil_div(n, (uint64_t)plan.g * plan.nr), &gx, &gy);
    mcl_tensor *reads[5] = {x, w->body, w->d, bias ? bias : x, rms ? fold->norm : NULL};
    mcl_profile_op(ctx,
                   rms ? "matmul gemv, integer dot, norm folded"
                       : dot ? "matmul gemv, integer dot" : "matmul gemv, float",
                   (double)w->body->nbytes + (double)w->d->nbytes + (double)x->nbytes +
                       4.0 * rows * n,
                   2.0 * rows * n * k);
    return mcl_dispatch(ctx, kernel, reads, rms ? 5 : 4, &y, 1, &push, gx, gy, 1);
}

/* Records a GEMM kernel (gemm_push, bindings: `in`, W's bodies and d values, bias, c) over
 * tiles of tile_m rows of a by tile_n rows of W. */
static mcl_status gemm_record(mcl_context *ctx, const mcl_kernel_desc *desc, mcl_tensor *in,
                              const weight_part *w, mcl_tensor *bias, mcl_tensor *c, uint32_t m,
                              uint32_t n, uint32_t k, uint32_t ldc, uint32_t c0, uint32_t tile_m,
                              uint32_t tile_n)
{
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_exact(ctx, desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t gx = ceil_div(n, tile_n), gy = ceil_div(m, tile_m);
    if (gx > QUANT_MAX_GROUPS || gy > QUANT_MAX_GROUPS)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "matmul grid beyond 65535 workgroups");
    gemm_push push = {.m = m, .n = n, .k = k, .has_bias = bias != NULL, .ldc = ldc, .c0 = c0,
                      .dlo = w->dlo};
    mcl_tensor *reads[4] = {in, w->body, w->d, bias ? bias : in};
    mcl_profile_op(ctx, "matmul gemm, quantized",
                   (double)w->body->nbytes + (double)w->d->nbytes + (double)in->nbytes +
                       4.0 * m * n,
                   2.0 * m * n * k);
    return mcl_dispatch(ctx, kernel, reads, 4, &c, 1, &push, gx, gy, 1);
}

/* The float GEMM: gemm_q over the plan's tile, K split into slices where the tiles are few
 * (their partial tiles summed by gemm_reduce_f32, which adds the bias). */
static mcl_status gemm_float(mcl_context *ctx, uint32_t fmt, mcl_tensor *a, const weight_part *w,
                             mcl_tensor *bias, mcl_tensor *c, uint32_t m, uint32_t n, uint32_t k,
                             uint32_t ldc, uint32_t c0)
{
    uint32_t bm, bn;
    mcl_quant_gemm_float_tile(ctx, m, n, &bm, &bn);
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMM_Q,
        .binding_count = 5,
        .push_size = sizeof(gemm_q_push),
        .local_size_x = 256,
        .spec_count = 6,
        .spec = {fmt, bm, bn, bm / 16, bn / 16, mcl_quant_gemm_unroll(ctx)},
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t gx = ceil_div(n, bn), gy = ceil_div(m, bm);
    if (gx > QUANT_MAX_GROUPS || gy > QUANT_MAX_GROUPS)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "matmul grid beyond 65535 workgroups");
    uint32_t slices = mcl_quant_gemm_slices(ctx, (uint64_t)gx * gy, m, n, k, ldc);
    /* Slices of whole K steps (gemm_q's BK = 16); the last may be shorter. */
    uint32_t kc = (ceil_div(k, slices) + 15) / 16 * 16;
    slices = ceil_div(k, kc);
    mcl_tensor *partial = NULL;
    if (slices > 1) {
        mcl_tensor_desc scratch = {.size = sizeof scratch, .dtype = MCL_DTYPE_F32, .ndim = 1,
                                   .shape = {(int64_t)slices * m * n},
                                   .memory_class = MCL_MEMORY_SCRATCH};
        if ((status = mcl_tensor_create_ex(ctx, &scratch, &partial)) != MCL_SUCCESS)
            return status;
    }
    mcl_ctx_log(ctx, MCL_LOG_DEBUG, "gemm %s %ux%u by %u rows, float: %ux%u tiles, %u slices",
                mcl_dtype_name(mcl_quant_format_dtype(fmt)), n, k, m, bm, bn, slices);
    gemm_q_push push = {.m = m, .n = n, .k = k, .has_bias = bias != NULL && !partial,
                        .ldc = ldc, .c0 = c0, .dlo = w->dlo, .kc = kc, .kz = m * n};
    mcl_tensor *reads[4] = {a, w->body, w->d, bias ? bias : a};
    mcl_tensor *out = partial ? partial : c;
    mcl_profile_op(ctx, "matmul gemm, float path",
                   (double)w->body->nbytes + (double)w->d->nbytes + (double)a->nbytes +
                       4.0 * m * n * slices,
                   2.0 * m * n * k);
    status = mcl_dispatch(ctx, kernel, reads, 4, &out, 1, &push, gx, gy, slices);
    if (status == MCL_SUCCESS && partial)
        status = mcl_gemm_reduce(ctx, partial, bias, c, m * n, n, slices);
    /* Safe at once: scratch memory stays reserved until the recorded work has run. */
    mcl_tensor_destroy(partial);
    return status;
}

static mcl_status gemm_dot(mcl_context *ctx, uint32_t fmt, mcl_tensor *act, const weight_part *w,
                           mcl_tensor *bias, mcl_tensor *c, uint32_t m, uint32_t n, uint32_t k,
                           uint32_t ldc, uint32_t c0)
{
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMM_Q_DOT,
        .binding_count = 5,
        .push_size = sizeof(gemm_push),
        .local_size_x = MCL_QUANT_DOT_THREADS,
        .spec_count = 1,
        .spec = {fmt},
    };
    return gemm_record(ctx, &desc, act, w, bias, c, m, n, k, ldc, c0, MCL_QUANT_DOT_TILE_M,
                       MCL_QUANT_DOT_TILE_N);
}

static mcl_status gemm_matrix(mcl_context *ctx, uint32_t fmt, mcl_tensor *a, const weight_part *w,
                              mcl_tensor *bias, mcl_tensor *c, uint32_t m, uint32_t n,
                              uint32_t k, uint32_t ldc, uint32_t c0)
{
    uint32_t bm = 128, bn = 64;
    mcl_quant_gemm_matrix_tile(ctx, m, &bm, &bn);
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMM_Q_MMA,
        .binding_count = 5,
        .push_size = sizeof(gemm_push),
        .local_size_x = MCL_QUANT_MMA_THREADS,
        .spec_count = 3,
        .spec = {fmt, bm, bn},
        .required_subgroup_size =
            mcl_traits_of(ctx)->subgroup_size_control ? MCL_QUANT_MMA_SUBGROUP : 0u,
    };
    return gemm_record(ctx, &desc, a, w, bias, c, m, n, k, ldc, c0, bm, bn);
}

mcl_status mcl_quantize_activations(mcl_context *ctx, mcl_tensor *a, uint32_t rows, uint32_t k,
                                    mcl_tensor *act)
{
    uint64_t blocks = (uint64_t)rows * (k / MCL_QUANT_LANE_WEIGHTS);
    if (!ctx || !a || !act || a->dtype != MCL_DTYPE_F32 || k % MCL_QUANT_LANE_WEIGHTS != 0 ||
        (uint64_t)rows * k * 4 > a->nbytes || blocks * MCL_QUANT_ACT_WORDS * 4 > act->nbytes)
        return MCL_ERROR_INVALID_ARGUMENT;
    const mcl_kernel *kernel;
    mcl_kernel_desc desc = {.id = MCL_KERNEL_QUANTIZE_Q8_1, .binding_count = 2,
                            .push_size = sizeof(blocks_push), .local_size_x = QUANT_THREADS};
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    blocks_push push = {.blocks = (uint32_t)blocks};
    /* Eight invocations a block (quantize_q8_1.comp). */
    uint32_t groups = ceil_div(blocks * 8, mcl_kernel_local_size(kernel));
    if (groups > QUANT_MAX_GROUPS)
        groups = QUANT_MAX_GROUPS;  /* the kernel loops over the rest */
    return mcl_dispatch(ctx, kernel, &a, 1, &act, 1, &push, groups, 1, 1);
}

mcl_status mcl_weight_part_rows(mcl_context *ctx, const char *op, const mcl_tensor *w,
                                uint32_t n, uint32_t *out)
{
    uint64_t limit = mcl_traits_of(ctx)->weight_part_bytes;
    mcl_quant_layout l;
    mcl_quant_layout_of(w->dtype, &l);
    uint64_t row_bytes = w->nbytes / n / l.block_bytes * l.body_bytes;
    *out = n;
    if (row_bytes * n <= limit)
        return MCL_SUCCESS;
    uint64_t align = mcl_traits_of(ctx)->binding_alignment;
    if (align < 4)
        align = 4;
    /* Rows whose bytes are a multiple of align. */
    uint64_t step = align / gcd_u32((uint32_t)(row_bytes % align), (uint32_t)align);
    uint64_t rows = limit / row_bytes / step * step;
    if (rows == 0)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "%s: a part of a %s tensor must hold a multiple of %llu rows of %llu "
                        "bytes to start at a multiple of %llu bytes; one storage-buffer binding "
                        "of %llu bytes holds fewer", op, mcl_dtype_name(w->dtype),
                        (unsigned long long)step, (unsigned long long)row_bytes,
                        (unsigned long long)align, (unsigned long long)limit);
    *out = (uint32_t)rows;
    return MCL_SUCCESS;
}

/* c[:, c0 .. c0 + n) = a W^T (+ bias) for the part of W of n rows that `w` binds: the integer-dot
 * path (a already quantized into `act`), the matrix GEMM, the GEMV, or the float GEMM. */
static mcl_status matmul_part(mcl_context *ctx, mcl_quant_path path, uint32_t fmt, mcl_tensor *a,
                              mcl_tensor *act, const weight_part *w, mcl_tensor *bias,
                              mcl_tensor *c, uint32_t rows, uint32_t n, uint32_t k, uint32_t ldc,
                              uint32_t c0, const mcl_gemv_fold *fold)
{
    if (fold)  /* mcl_matmul_folds: the integer-dot GEMV, one part */
        return gemv_dispatch(ctx, 1, fmt, fold->norm ? a : act, w, bias, c, rows, n, k, ldc, c0,
                             fold);
    if (path == MCL_QUANT_PATH_DOT)
        return rows <= MCL_QUANT_GEMV_MAX_ROWS
                   ? gemv_dispatch(ctx, 1, fmt, act, w, bias, c, rows, n, k, ldc, c0, NULL)
                   : gemm_dot(ctx, fmt, act, w, bias, c, rows, n, k, ldc, c0);
    if (path == MCL_QUANT_PATH_MATRIX)
        return gemm_matrix(ctx, fmt, a, w, bias, c, rows, n, k, ldc, c0);
    if (rows <= MCL_QUANT_GEMV_MAX_ROWS)
        return gemv_dispatch(ctx, 0, fmt, a, w, bias, c, rows, n, k, ldc, c0, NULL);
    return gemm_float(ctx, fmt, a, w, bias, c, rows, n, k, ldc, c0);
}


mcl_status mcl_linear_shapes_check(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                                   const mcl_tensor *bias, const mcl_tensor *c)
{
    if (a->ndim < 2 || c->ndim != a->ndim)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: a and c need the same rank >= 2");
    int64_t k = a->shape[a->ndim - 1], n = w->shape[0];
    if (w->shape[1] != k || c->shape[c->ndim - 1] != n)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: a is [..., %lld], W [%lld, %lld], c [..., %lld]",
                        (long long)k, (long long)n, (long long)w->shape[1],
                        (long long)c->shape[c->ndim - 1]);
    for (uint32_t i = 0; i + 1 < a->ndim; i++) {
        if (a->shape[i] != c->shape[i])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_matmul: a and c differ in dimension %u", i);
    }
    if (bias && mcl_tensor_numel(bias) != n)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: bias has %lld elements, not %lld",
                        (long long)mcl_tensor_numel(bias), (long long)n);
    return MCL_SUCCESS;
}

mcl_status mcl_quant_check(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                           mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c,
                           mcl_quant_path path, quant_product *p)
{
    if (!ctx || !a || !b || !c)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (a->ctx != ctx || b->ctx != ctx || c->ctx != ctx || (bias && bias->ctx != ctx))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_matmul: tensor of another context");
    int fmt = mcl_quant_format(b->dtype);
    if (fmt < 0)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_matmul: b is not block-quantised");
    if (a->dtype != MCL_DTYPE_F32 || c->dtype != MCL_DTYPE_F32 ||
        (bias && bias->dtype != MCL_DTYPE_F32))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_matmul with a %s weight takes f32 a, bias and c",
                        mcl_dtype_name(b->dtype));
    if ((ta != MCL_NO_TRANSPOSE && ta != MCL_TRANSPOSE) ||
        (tb != MCL_NO_TRANSPOSE && tb != MCL_TRANSPOSE))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_matmul: bad transpose flag");
    if ((unsigned)path > MCL_QUANT_PATH_MATRIX)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "quantized matmul: unknown path %d",
                        (int)path);
    if (tb != MCL_TRANSPOSE || ta != MCL_NO_TRANSPOSE || b->ndim != 2)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "mcl_matmul: a %s b must be the 2-D [N, K] weight with tb = "
                        "MCL_TRANSPOSE (c = a W^T), and a not transposed",
                        mcl_dtype_name(b->dtype));
    if (c == a || c == bias)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_matmul: c aliases an input");
    mcl_status status = mcl_linear_shapes_check(ctx, a, b, bias, c);
    if (status != MCL_SUCCESS)
        return status;
    int64_t k = a->shape[a->ndim - 1], n = b->shape[0];
    /* a's batch dimensions fold into rows: a and c are contiguous and W is shared. */
    uint32_t rows = (uint32_t)(mcl_tensor_numel(a) / k);
    int gemv = rows <= MCL_QUANT_GEMV_MAX_ROWS;
    if (path == MCL_QUANT_PATH_AUTO)
        path = gemv ? mcl_quant_path_select(ctx, b->dtype)
                    : mcl_quant_gemm_path_select(ctx, b->dtype);
    char why[160];
    if (mcl_quant_path_refusal(mcl_traits_of(ctx), path, (uint32_t)fmt, gemv, why, sizeof why))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "%s", why);
    *p = (quant_product){.fmt = (uint32_t)fmt, .rows = rows, .n = (uint32_t)n, .k = (uint32_t)k,
                         .path = path};
    return mcl_weight_part_rows(ctx, "quantized matmul", b, p->n, &p->part_rows);
}

mcl_status mcl_quantize_into_scratch(mcl_context *ctx, mcl_tensor *a, uint32_t rows, uint32_t k,
                                     mcl_tensor **act)
{
    uint64_t words = (uint64_t)rows * (k / MCL_QUANT_LANE_WEIGHTS) * MCL_QUANT_ACT_WORDS;
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_I32, .ndim = 1,
                            .shape = {(int64_t)words}, .memory_class = MCL_MEMORY_SCRATCH};
    mcl_status status = mcl_tensor_create_ex(ctx, &desc, act);
    if (status == MCL_SUCCESS)
        status = mcl_quantize_activations(ctx, a, rows, k, *act);
    return status;
}

mcl_status mcl_quant_record(mcl_context *ctx, const quant_product *p, mcl_tensor *a,
                            mcl_tensor *act, mcl_tensor *b, mcl_tensor *bias, mcl_tensor *c,
                            const mcl_gemv_fold *fold)
{
    /* W in parts of part_rows rows (one part where it fits one binding), each two views. */
    mcl_status status = MCL_SUCCESS;
    for (uint32_t c0 = 0; status == MCL_SUCCESS && c0 < p->n; c0 += p->part_rows) {
        uint32_t part = p->n - c0 < p->part_rows ? p->n - c0 : p->part_rows;
        weight_part w;
        status = mcl_weight_part_views(ctx, b, p->n, p->k, c0, part, &w);
        if (status != MCL_SUCCESS)
            break;
        status = matmul_part(ctx, p->path, p->fmt, a, act, &w, bias, c, p->rows, part, p->k,
                             p->n, c0, fold);
        mcl_weight_part_free(&w);
    }
    return status;
}

mcl_status mcl_matmul_quant_ex(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                               mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c,
                               mcl_quant_path path, mcl_quant_path *ran)
{
    quant_product p;
    mcl_status status = mcl_quant_check(ctx, a, ta, b, tb, bias, c, path, &p);
    if (status != MCL_SUCCESS)
        return status;
    /* The integer-dot path quantizes a once, into scratch, for every part of W. */
    mcl_tensor *act = NULL;
    if (p.path == MCL_QUANT_PATH_DOT)
        status = mcl_quantize_into_scratch(ctx, a, p.rows, p.k, &act);
    if (status == MCL_SUCCESS)
        status = mcl_quant_record(ctx, &p, a, act, b, bias, c, NULL);
    mcl_tensor_destroy(act);
    if (status == MCL_SUCCESS && ran)
        *ran = p.path;
    return status;
}


mcl_status mcl_matmul_quantized_input(mcl_context *ctx, mcl_tensor *a, mcl_tensor *act,
                                      mcl_tensor *w, mcl_tensor *c)
{
    quant_product p;
    mcl_status status = mcl_quant_check(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c,
                                    MCL_QUANT_PATH_DOT, &p);
    if (status != MCL_SUCCESS)
        return status;
    if (!act || act->ctx != ctx ||
        act->nbytes < (uint64_t)p.rows * (p.k / MCL_QUANT_LANE_WEIGHTS) * MCL_QUANT_ACT_WORDS * 4)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul_quantized_input: act is too small for a's quantization");
    return mcl_quant_record(ctx, &p, a, act, w, NULL, c, NULL);
}

/* The fused gate and up GEMV's plan for product p (of W_gate; W_up alike), its grid of
 * grid_rows rows of W (the product's, or the experts' pairs'): the GEMV's, with
 * whole blocks of 32 output rows a workgroup for the quantization (its row groups doubled up
 * to GLU_LANES invocations, then its rows per row group up to 4). Its lanes along K, and so
 * the pieces of a row in each lane's order and each product's sums, stay the GEMV's. 0 where
 * the fusion does not apply, or the workgroup or its shared memory (the partial sums of both
 * weights' rows, the SwiGLU rows, q8_1.glsl's two words a lane) is beyond the device: 5 rows
 * of a at most at 32 lanes and 48 KiB. */
#define GLU_LANES 256u
int mcl_glu_plan(mcl_context *ctx, const quant_product *p, uint32_t grid_rows, int rms,
                 mcl_gemv_plan *plan)
{
    const mcl_traits *tr = mcl_traits_of(ctx);
    if (p->path != MCL_QUANT_PATH_DOT || (p->fmt != MCL_QFMT_Q8_0 && p->fmt != MCL_QFMT_Q4_0) ||
        p->rows > MCL_QUANT_GEMV_MAX_ROWS || p->n % 32 != 0 || p->part_rows < p->n)
        return 0;
    mcl_gemv_plan_for(ctx, 1, p->fmt, p->rows, grid_rows, p->k, plan);
    while ((plan->g * plan->nr) % 32 != 0) {
        if (plan->t * plan->g * 2 <= GLU_LANES)
            plan->g *= 2;
        else if (plan->nr < 4)
            plan->nr *= 2;
        else
            return 0;
    }
    /* Pieces in flight: 8 a lane at most over both weights' rows (registers; the order of
     * each row's pieces, and so its sum, does not depend on them). */
    while (plan->u > 1 && 2 * plan->nr * plan->u > 8)
        plan->u /= 2;
    uint64_t lanes = (uint64_t)plan->t * plan->g;
    uint64_t shared = 4 * (2 * plan->nr * p->rows * lanes +
                           (uint64_t)p->rows * plan->g * plan->nr + 2 * lanes) +
                      (rms ? rms_shared_bytes(plan, p->rows, p->k) - 8 * lanes : 0);
    return (!rms || lanes % 16 == 0) && lanes <= tr->max_invocations &&
           plan->g <= tr->max_workgroup_size[1] &&
           plan->t <= tr->max_workgroup_size[0] && shared <= tr->max_shared_bytes;
}

/* Whether w_gate and w_up fuse on a (rms: with the norm folded): *applies, with the checked
 * product of w_gate in *p and the plan in *plan; a product the checks refuse, its status. */
static mcl_status glu_check(mcl_context *ctx, mcl_tensor *a, mcl_tensor *w_gate,
                            mcl_tensor *w_up, mcl_tensor *c, int rms, quant_product *p,
                            mcl_gemv_plan *plan, int *applies)
{
    *applies = 0;
    if (!w_gate || !w_up || mcl_quant_format(w_gate->dtype) < 0)
        return MCL_SUCCESS;
    quant_product pu;
    mcl_status status = mcl_quant_check(ctx, a, MCL_NO_TRANSPOSE, w_gate, MCL_TRANSPOSE, NULL, c,
                                        MCL_QUANT_PATH_AUTO, p);
    if (status == MCL_SUCCESS)
        status = mcl_quant_check(ctx, a, MCL_NO_TRANSPOSE, w_up, MCL_TRANSPOSE, NULL, c,
                                 MCL_QUANT_PATH_AUTO, &pu);
    if (status == MCL_SUCCESS)
        *applies = w_gate->dtype == w_up->dtype && pu.part_rows >= pu.n &&
                   mcl_glu_plan(ctx, p, p->n, rms, plan);
    return status;
}

int mcl_matmul_folds(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                     const mcl_tensor *c, int norm)
{
    quant_product p;
    if (!ctx || !a || !w || !c || mcl_quant_format(w->dtype) < 0 ||
        mcl_quant_check(ctx, (mcl_tensor *)a, MCL_NO_TRANSPOSE, (mcl_tensor *)w, MCL_TRANSPOSE,
                        NULL, (mcl_tensor *)c, MCL_QUANT_PATH_AUTO, &p) != MCL_SUCCESS ||
        p.path != MCL_QUANT_PATH_DOT || p.rows > MCL_QUANT_GEMV_MAX_ROWS || p.part_rows < p.n)
        return 0;
    if (!norm)
        return 1;
    mcl_gemv_plan plan;
    mcl_gemv_plan_for(ctx, 1, p.fmt, p.rows, p.n, p.k, &plan);
    return (plan.t * plan.g) % 16 == 0 &&
           mcl_gemv_shared_bytes(p.fmt, &plan, p.rows) + rms_shared_bytes(&plan, p.rows, p.k) <=
               mcl_traits_of(ctx)->max_shared_bytes;
}

int mcl_matmul_glu_folds(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w_gate,
                         const mcl_tensor *w_up, const mcl_tensor *c)
{
    quant_product p;
    mcl_gemv_plan plan;
    int applies = 0;
    return ctx && a && c &&
           glu_check(ctx, (mcl_tensor *)a, (mcl_tensor *)w_gate, (mcl_tensor *)w_up,
                     (mcl_tensor *)c, 1, &p, &plan, &applies) == MCL_SUCCESS &&
           applies;
}

mcl_status mcl_matmul_glu_q8(mcl_context *ctx, mcl_tensor *a, mcl_tensor *act,
                             mcl_tensor *w_gate, mcl_tensor *w_up, mcl_tensor *c,
                             mcl_tensor *act_out, const mcl_gemv_fold *fold, int *fused)
{
    const int rms = fold && fold->norm;
    if (!fused)
        return MCL_ERROR_INVALID_ARGUMENT;
    *fused = 0;
    quant_product p;
    mcl_gemv_plan plan;
    int applies;
    mcl_status status = glu_check(ctx, a, w_gate, w_up, c, rms, &p, &plan, &applies);
    if (status != MCL_SUCCESS || !applies)
        return status;
    if ((rms ? fold->norm->ctx != ctx || fold->norm->dtype != MCL_DTYPE_F32 ||
                   fold->norm->nbytes < 4ull * p.k
             : !act || act->ctx != ctx || act == act_out ||
                   act->nbytes < (uint64_t)p.rows * (p.k / 32) * MCL_QUANT_ACT_WORDS * 4) ||
        !act_out || act_out->ctx != ctx ||
        act_out->nbytes < (uint64_t)p.rows * (p.n / 32) * MCL_QUANT_ACT_WORDS * 4)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul_glu_q8: act (or the fold's norm) or act_out missing, too "
                        "small or one tensor");
    mcl_ctx_log(ctx, MCL_LOG_DEBUG, "gemv glu %s %ux%u, %u rows%s: t=%u g=%u nr=%u u=%u pb=%u",
                mcl_dtype_name(w_gate->dtype), p.n, p.k, p.rows, rms ? ", norm folded" : "",
                plan.t, plan.g, plan.nr, plan.u, plan.pb);
    mcl_kernel_desc desc = {
        .id = rms ? MCL_KERNEL_GEMV_Q_DOT_GLU_RMS : MCL_KERNEL_GEMV_Q_DOT_GLU,
        .binding_count = 7,
        .push_size = sizeof(mcl_gemv_push),
        .local_size_x = plan.t,
        .spec_count = rms ? 8 : 7,
        .spec = {p.fmt, p.rows, 2 * plan.nr, plan.g, plan.u, plan.pb, 0, p.k / 32},
    };
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_exact(ctx, &desc, &kernel)) != MCL_SUCCESS)
        return status;
    weight_part wg, wu;
    if ((status = mcl_weight_part_views(ctx, w_gate, p.n, p.k, 0, p.n, &wg)) != MCL_SUCCESS)
        return status;
    if ((status = mcl_weight_part_views(ctx, w_up, p.n, p.k, 0, p.n, &wu)) != MCL_SUCCESS) {
        mcl_weight_part_free(&wg);
        return status;
    }
    mcl_gemv_push push = {.n = p.n, .k = p.k, .ldc = p.n, .dlo = wg.dlo, .dlo_u = wu.dlo,
                          .eps = rms ? fold->eps : 0.0f};
    uint32_t gx, gy;
    grid_2d(ceil_div(p.n, (uint64_t)plan.g * plan.nr), &gx, &gy);
    mcl_tensor *in = rms ? a : act;
    mcl_tensor *reads[6] = {in, wg.body, wg.d, wu.body, wu.d, rms ? fold->norm : act};
    mcl_profile_op(ctx,
                   rms ? "matmul gate, up and swiglu, integer dot, norm folded"
                       : "matmul gate, up and swiglu, integer dot",
                   (double)wg.body->nbytes + wg.d->nbytes + wu.body->nbytes + wu.d->nbytes +
                       4.0 * p.rows * (p.k + p.n) / 32 * MCL_QUANT_ACT_WORDS,
                   4.0 * p.rows * p.n * p.k);
    status = mcl_dispatch(ctx, kernel, reads, 6, &act_out, 1, &push, gx, gy, 1);
    mcl_weight_part_free(&wu);
    mcl_weight_part_free(&wg);
    *fused = status == MCL_SUCCESS;
    return status;
}

mcl_status mcl_matmul_quant(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                            mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c)
{
    return mcl_matmul_quant_ex(ctx, a, ta, b, tb, bias, c, MCL_QUANT_PATH_AUTO, NULL);
}
