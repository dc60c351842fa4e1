/* Quantized GEMV and GEMM benchmarks: every format on every path, against stream reads of
 * the same bytes, alone, batched, chained and as kernels alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* --- quantized GEMV / GEMM -------------------------------------------------------------- */

/* Weights of `dtype` [n, k], quantized on the host from random values, so that the kernels
 * decode realistic scales. */
static mcl_tensor *quant_weights(bench *b, mcl_dtype dtype, int64_t n, int64_t k)
{
    int64_t shape[2] = {n, k};
    mcl_tensor *t = NULL;
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = dtype, .ndim = 2,
                            .shape = {shape[0], shape[1]}, .memory_class = MCL_MEMORY_WEIGHTS};
    if (mcl_tensor_create_ex(b->ctx, &desc, &t) != MCL_SUCCESS)
        return NULL;
    uint64_t row_bytes = (uint64_t)(k / mcl_dtype_block_weights(dtype)) * mcl_dtype_block_bytes(dtype);
    float *row = malloc((size_t)k * sizeof *row);
    unsigned char *blocks = malloc((size_t)(row_bytes * (uint64_t)n));
    if (!row || !blocks) {
        free(row);
        free(blocks);
        mcl_tensor_destroy(t);
        return NULL;
    }
    uint32_t x = 12345;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < k; j++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            row[j] = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
        }
        mcl_quantize(dtype, row, blocks + (uint64_t)i * row_bytes, k);
    }
    mcl_status status = mcl_tensor_upload(t, 0, blocks, row_bytes * (uint64_t)n);
    free(row);
    free(blocks);
    if (status != MCL_SUCCESS) {
        mcl_tensor_destroy(t);
        return NULL;
    }
    return t;
}

/* GEMVs (and their stream reads) timed together; each against its own copy of the weights. */
#define QGEMV_BATCH 8

/* The streaming read of bench_stream over `bytes` (rounded down to whole vec4s), rotated through
 * as many copies as a GEMV over weights of that size: the ceiling of the GEMV at its own size,
 * whose bandwidth can differ from the 1 GiB stream's (ramp-up and tail of a short dispatch, and
 * a last-level cache that holds a single copy of these weights). GB/s, or negative. With
 * cold copies, `*batch_gbs` receives the same read batched as the GEMVs are (up to
 * QGEMV_BATCH distinct copies between one pair of timestamps, nothing ordered between them):
 * the batched GEMV's own ceiling; and `*chain_gbs` the same batch with a barrier between the
 * reads, each waiting for the one before as a decoder's dependent GEMVs do: the chained GEMV's
 * ceiling. Else they are negative. */
static double stream_read_same(bench *b, uint64_t bytes, const char *name, double *batch_gbs,
                               double *chain_gbs)
{
    mcl_tensor *x[16] = {NULL}, *y[QGEMV_BATCH] = {NULL};
    stream_copies_run r = {.s = {.n4 = (uint32_t)(bytes / 16)}, .x = x,
                           .copies = bench_copies_for(b, bytes)};
    *batch_gbs = -1.0;
    *chain_gbs = -1.0;
    int ok = r.s.n4 > 0 && bench_stream_prepare(b, &r.s, 0) == MCL_SUCCESS;
    /* The read kernel writes at most one vec4 per invocation. */
    int64_t n = (int64_t)r.s.n4 * 4, ny = (int64_t)r.s.groups * 256 * 4;
    for (int i = 0; i < r.copies && ok; i++)
        ok = (x[i] = bench_tensor_f32(b, 1, &n, 1.0f)) != NULL;
    r.s.y = ok ? bench_tensor_f32(b, 1, &ny, 0.0f) : NULL;
    mcl_tensor *single_y = r.s.y;
    double t = r.s.y ? bench_gpu_time(b, b->repeat, bench_stream_copies_once, &r) : -1.0;
    r.count = r.copies < QGEMV_BATCH ? r.copies : QGEMV_BATCH;
    double tb = -1.0, tc = -1.0;
    if (t > 0 && r.count >= 2) {
        for (int j = 0; j < r.count && ok; j++)
            ok = (y[j] = bench_tensor_f32(b, 1, &ny, 0.0f)) != NULL;
        r.y = y;
        if (ok)
            tb = bench_gpu_time(b, b->repeat, bench_stream_copies_once, &r);
        r.chain = 1;
        if (ok && tb > 0)
            tc = bench_gpu_time(b, b->repeat, bench_stream_copies_once, &r);
    }
    for (int i = 0; i < r.copies; i++)
        mcl_tensor_destroy(x[i]);
    for (int j = 0; j < QGEMV_BATCH; j++)
        mcl_tensor_destroy(y[j]);
    mcl_tensor_destroy(single_y);
    char line[224];
    snprintf(line, sizeof line, "%s: stream read of the same bytes", name);
    if (t <= 0) {
        printf("%-58s unavailable: %s\n", line, mcl_context_last_error(b->ctx));
        return -1.0;
    }
    double gbs = (double)r.s.n4 * 16.0 / t / 1e9;
    bench_figure(b, line, gbs, "GB/s");
    if (tb > 0) {
        *batch_gbs = (double)r.count * (double)r.s.n4 * 16.0 / tb / 1e9;
        snprintf(line, sizeof line, "%s: the same batched x%d", name, r.count);
        bench_figure(b, line, *batch_gbs, "GB/s");
    }
    if (tc > 0) {
        *chain_gbs = (double)r.count * (double)r.s.n4 * 16.0 / tc / 1e9;
        snprintf(line, sizeof line, "%s: the same chained x%d", name, r.count);
        bench_figure(b, line, *chain_gbs, "GB/s");
    }
    return gbs;
}

typedef struct qbatch_run {
    const mm_run *r;
    mcl_tensor *c[QGEMV_BATCH];
    mcl_tensor *act; /* r->a[0] quantized, for qkernel_once */
    int count;
    int chain; /* a barrier between the GEMVs: each waits for the one before */
} qbatch_run;

/* Independent outputs, as where several weights of a layer read the same input: the benchmark
 * orders nothing between these GEMVs, so the GPU may overlap one's tail with the next one's
 * start. Barriers the library itself records between them (the integer-dot path quantizes x
 * into scratch before each GEMV) are part of the figure. */
static mcl_status qbatch_once(bench *b, void *user, int rep)
{
    qbatch_run *q = user;
    const mm_run *r = q->r;
    for (int j = 0; j < q->count; j++) {
        /* Distinct copies within a run (count <= copies), a rotating start across runs. */
        int i = (rep * q->count + j) % r->copies;
        if (q->chain && j > 0)
            mcl_record_barrier(b->ctx);
        mcl_status status = mcl_matmul(b->ctx, r->a[i], r->ta, r->b[i], r->tb, NULL, q->c[j]);
        if (status != MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

/* The same batch as one mcl_matmul_multi call: the weights share their input (as a layer's
 * query, key and value projections do), so the integer-dot path quantizes it once for all. */
static mcl_status qmulti_once(bench *b, void *user, int rep)
{
    qbatch_run *q = user;
    const mm_run *r = q->r;
    const mcl_tensor *w[QGEMV_BATCH];
    for (int j = 0; j < q->count; j++)
        w[j] = r->b[(rep * q->count + j) % r->copies];
    return mcl_matmul_multi(b->ctx, r->a[0], (uint32_t)q->count, w, NULL, q->c);
}

/* The same batch on the integer-dot path with its input quantized beforehand, outside the timed
 * region: the GEMV kernels alone, without the quantization and the wait for it. */
static mcl_status qkernel_once(bench *b, void *user, int rep)
{
    qbatch_run *q = user;
    const mm_run *r = q->r;
    for (int j = 0; j < q->count; j++) {
        if (q->chain && j > 0)
            mcl_record_barrier(b->ctx);
        mcl_status status = mcl_matmul_quantized_input(b->ctx, r->a[0], q->act,
                                                       r->b[(rep * q->count + j) % r->copies],
                                                       q->c[j]);
        if (status != MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

/* The figures of a batch of `count` GEMVs over `bytes` of weights each that took t seconds
 * (`what`: "batched", "chained", "one input" for mcl_matmul_multi's, ...), also against the
 * same-size stream read batched the same way (`same_what`, "batched" or "chained": its
 * `same_gbs`); 1 where it did not run. */
static int qbatch_report(bench *b, const char *name, const char *what, int count,
                         uint64_t bytes, double t, const char *same_what, double same_gbs)
{
    char line[224];
    if (t <= 0) {
        snprintf(line, sizeof line, "%s: %s x%d", name, what, count);
        printf("%-58s unavailable: %s\n", line, mcl_context_last_error(b->ctx));
        return 1;
    }
    double gbs = (double)count * (double)bytes / t / 1e9;
    snprintf(line, sizeof line, "%s: %s x%d, per GEMV", name, what, count);
    bench_figure(b, line, t / count * 1e6, "us");
    snprintf(line, sizeof line, "%s: %s weights", name, what);
    bench_figure(b, line, gbs, "GB/s");
    snprintf(line, sizeof line, "%s: %s, of stream read", name, what);
    bench_figure(b, line, 100.0 * gbs / b->stream_read_gbs, "%");
    if (same_gbs > 0) {
        snprintf(line, sizeof line, "%s: %s, of same-size %s stream read", name, what,
                 same_what);
        bench_figure(b, line, 100.0 * gbs / same_gbs, "%");
    }
    return 0;
}

static uint64_t quant_bytes(mcl_dtype dtype, int64_t n, int64_t k)
{
    return (uint64_t)(n * k / mcl_dtype_block_weights(dtype)) * mcl_dtype_block_bytes(dtype);
}

/* `same_gbs`: stream_read_same over these weights' bytes; not positive when unavailable. */
static int qgemv_case(bench *b, mcl_dtype dtype, int64_t n, int64_t k, int64_t rows,
                      double same_gbs, double same_batch_gbs, double same_chain_gbs)
{
    mm_run r = {.ta = MCL_NO_TRANSPOSE, .tb = MCL_TRANSPOSE};
    uint64_t weight_bytes = quant_bytes(dtype, n, k);
    r.copies = bench_copies_for(b, weight_bytes);
    int64_t sx[2] = {rows, k}, sy[2] = {rows, n};
    r.b[0] = quant_weights(b, dtype, n, k);
    r.a[0] = bench_tensor_f32(b, 2, sx, 0.5f);
    if (!r.b[0] || !r.a[0] || bench_upload_random(r.a[0], 5)) {
        r.copies = 1;
        bench_mm_free(&r);
        return 1;
    }
    /* Further copies of the same weights, device to device. */
    for (int i = 1; i < r.copies; i++) {
        mcl_tensor_desc desc = {.size = sizeof desc, .dtype = dtype, .ndim = 2,
                                .shape = {n, k}, .memory_class = MCL_MEMORY_WEIGHTS};
        r.a[i] = r.a[0];
        r.b[i] = NULL;
        if (mcl_tensor_create_ex(b->ctx, &desc, &r.b[i]) != MCL_SUCCESS ||
            mcl_copy(b->ctx, r.b[0], r.b[i]) != MCL_SUCCESS) {
            mcl_tensor_destroy(r.b[i]);
            r.copies = i;
            break;
        }
    }
    r.c = bench_tensor_f32(b, 2, sy, 0.0f);
    double t = r.c ? bench_gpu_time(b, b->repeat, bench_matmul_once, &r) : -1.0;
    /* Batched: only with cold copies to spread the batch over (none with --hot). */
    qbatch_run q = {.r = &r, .count = r.copies < QGEMV_BATCH ? r.copies : QGEMV_BATCH};
    double tb = -1.0, tm = -1.0, tk = -1.0, tc = -1.0, tkc = -1.0;
    const mcl_quant_path path = mcl_quant_path_select(b->ctx, dtype);
    const int dot = path == MCL_QUANT_PATH_DOT;
    if (t > 0 && q.count >= 2) {
        int ok = 1;
        for (int j = 0; j < q.count && ok; j++)
            ok = (q.c[j] = bench_tensor_f32(b, 2, sy, 0.0f)) != NULL;
        if (ok)
            tb = bench_gpu_time(b, b->repeat, qbatch_once, &q);
        q.chain = 1;
        if (ok && tb > 0)
            tc = bench_gpu_time(b, b->repeat, qbatch_once, &q);
        q.chain = 0;
        /* On the float path the two batches record the same dispatches. */
        if (ok && dot && tb > 0)
            tm = bench_gpu_time(b, b->repeat, qmulti_once, &q);
        if (ok && dot && tm > 0) {
            int64_t words = rows * (k / 32) * 10;
            ok = mcl_tensor_create(b->ctx, MCL_DTYPE_I32, 1, &words, &q.act) == MCL_SUCCESS &&
                 mcl_quantize_activations(b->ctx, r.a[0], (uint32_t)rows, (uint32_t)k, q.act) ==
                     MCL_SUCCESS;
            if (ok)
                tk = bench_gpu_time(b, b->repeat, qkernel_once, &q);
            q.chain = 1;
            if (ok && tk > 0)
                tkc = bench_gpu_time(b, b->repeat, qkernel_once, &q);
            q.chain = 0;
            mcl_tensor_destroy(q.act);
        }
        for (int j = 0; j < q.count; j++)
            mcl_tensor_destroy(q.c[j]);
    }
    for (int i = 1; i < r.copies; i++)
        r.a[i] = NULL;
    bench_mm_free(&r);
    char name[128];
    snprintf(name, sizeof name, "gemv %s %lldx%lld, %lld row%s", mcl_dtype_name(dtype),
             (long long)n, (long long)k, (long long)rows, rows > 1 ? "s" : "");
    if (t <= 0) {
        printf("%-58s unavailable: %s\n", name, mcl_context_last_error(b->ctx));
        return 1;
    }
    double gbs = (double)weight_bytes / t / 1e9, share = gbs / b->stream_read_gbs;
    char line[224];
    snprintf(line, sizeof line, "%s: time", name);
    bench_figure(b, line, t * 1e6, "us");
    snprintf(line, sizeof line, "%s: weights", name);
    bench_figure(b, line, gbs, "GB/s");
    snprintf(line, sizeof line, "%s: of stream read", name);
    bench_figure(b, line, 100.0 * share, "%");
    if (same_gbs > 0) {
        snprintf(line, sizeof line, "%s: of same-size stream read", name);
        bench_figure(b, line, 100.0 * gbs / same_gbs, "%");
    }
    /* Several rows: each weight takes `rows` multiply-adds, and at the measured arithmetic
     * rate of the path (bench_peak) that alone caps the weights' rate, before any decoding,
     * load or scale; modeled from the two measurements. */
    double peak_ops = dot ? b->dot_tops : b->fma_tflops; /* 2 per multiply-add, both */
    if (rows > 1 && peak_ops > 0) {
        double macs = peak_ops * 1e12 / 2.0;
        double bound = macs / (double)rows * (double)weight_bytes / (double)(n * k) / 1e9;
        snprintf(line, sizeof line, "%s: arithmetic bound (measured peak), of stream read",
                 name);
        bench_modeled(b, line, 100.0 * bound / b->stream_read_gbs, "%");
    }
    /* The RX 580 streams 256 GB/s; at the same efficiency, its decode would read weights at
     * this rate. Modeled: no RX 580 ran. Only for the float path, the one an RX 580 runs (it
     * has no packed 8-bit dot product). */
    if (path == MCL_QUANT_PATH_FLOAT) {
        snprintf(line, sizeof line, "%s: RX 580 at this efficiency (float path)", name);
        bench_modeled(b, line, BENCH_RX580_GBS * share, "GB/s");
    }
    if (q.count < 2)
        return 0;
    int rc = qbatch_report(b, name, "batched", q.count, weight_bytes, tb, "batched",
                           same_batch_gbs);
    /* Chained: each GEMV waits for the one before, as a decoder's dependent products do. */
    rc |= qbatch_report(b, name, "chained", q.count, weight_bytes, tc, "chained",
                        same_chain_gbs);
    /* The same model from the batched share: GEMVs back to back leave out the fixed cost of a
     * lone dispatch (its start and its tail), microseconds that are a large part of one GEMV's
     * time at the H200's rate but a few percent of it at 256 GB/s. Modeled as well. */
    if (tb > 0 && path == MCL_QUANT_PATH_FLOAT) {
        double batched = (double)q.count * (double)weight_bytes / tb / 1e9 / b->stream_read_gbs;
        snprintf(line, sizeof line, "%s: RX 580 at the batched efficiency (float path)", name);
        bench_modeled(b, line, BENCH_RX580_GBS * batched, "GB/s");
    }
    if (!dot)
        return rc;
    rc |= qbatch_report(b, name, "one input", q.count, weight_bytes, tm, "batched",
                        same_batch_gbs);
    rc |= qbatch_report(b, name, "chained kernels alone", q.count, weight_bytes, tkc,
                        "chained", same_chain_gbs);
    return rc | qbatch_report(b, name, "kernels alone", q.count, weight_bytes,
                              tk, "batched", same_batch_gbs);
}

/* One quantized GEMM along a given path. */
typedef struct qgemm_run {
    mm_run r;
    mcl_quant_path path;
} qgemm_run;

static mcl_status qgemm_once(bench *b, void *user, int rep)
{
    (void)rep;
    qgemm_run *q = user;
    return mcl_matmul_quant_ex(b->ctx, q->r.a[0], MCL_NO_TRANSPOSE, q->r.b[0], MCL_TRANSPOSE,
                               NULL, q->r.c, q->path, NULL);
}

/* One GEMV case under the plan in force, its figures tagged with the plan it took where
 * `tag` (plans=, bench_each_plan). */
typedef struct qgemv_sweep {
    mcl_dtype dtype;
    int64_t n, k, rows;
    double same_gbs, same_batch_gbs, same_chain_gbs;
    int tag;
} qgemv_sweep;

static int qgemv_sweep_run(bench *b, void *user)
{
    qgemv_sweep *q = user;
    char text[96];
    if (q->tag) {
        int dot = mcl_quant_path_select(b->ctx, q->dtype) == MCL_QUANT_PATH_DOT;
        mcl_gemv_plan p;
        if (mcl_quant_gemv_plan(b->ctx, dot, q->dtype, (uint32_t)q->rows, (uint32_t)q->n,
                                (uint32_t)q->k, &p) != MCL_SUCCESS)
            return 1;
        snprintf(text, sizeof text, "%s plan t=%u,g=%u,nr=%u,u=%u,pb=%u,st=%u,cvt=%u",
                 dot ? "dot" : "float", p.t, p.g, p.nr, p.u, p.pb, p.stage, p.cvt);
        b->figure_tag = text;
    }
    int rc = qgemv_case(b, q->dtype, q->n, q->k, q->rows, q->same_gbs, q->same_batch_gbs,
                        q->same_chain_gbs);
    b->figure_tag = NULL;
    return rc;
}

int bench_qgemv(bench *b)
{
    static const mcl_dtype types[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K,
                                      MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
    int64_t shapes[2][2] = {{14336, 4096}, {4096, 14336}};
    int shape_count = 2;
    static const int64_t row_cases[2] = {1, 8};
    /* Filters (`quant` alone), to spend less device time: rows= one row case, fmt= one index
     * of types[], gemm=0 no quantized GEMM; n= and k= (both) one GEMV shape of W instead of
     * the two, to tell a kernel's own rate from the fixed cost of a dispatch at these
     * sizes. */
    int64_t only_rows = b->quant_filters ? (int64_t)bench_arg(b, "rows", 0) : 0;
    int only_fmt = b->quant_filters ? (int)bench_arg(b, "fmt", -1) : -1;
    int64_t only_n = b->quant_filters ? (int64_t)bench_arg(b, "n", 0) : 0;
    int64_t only_k = b->quant_filters ? (int64_t)bench_arg(b, "k", 0) : 0;
    if (only_n > 0 || only_k > 0) {
        if (only_n <= 0 || only_k <= 0 || only_k % 256 != 0 || only_n > (1 << 20) ||
            only_k > (1 << 20)) {
            fprintf(stderr, "motifcl-bench quant: n= and k= go together, 0 < n <= 2^20, k a "
                            "multiple of 256 up to 2^20\n");
            return 1;
        }
        shapes[0][0] = only_n;
        shapes[0][1] = only_k;
        shape_count = 1;
    }
    int row_cases_run = 0;
    for (int c = 0; c < 2; c++)
        row_cases_run += only_rows <= 0 || only_rows == row_cases[c];
    int rc = 0;
    for (int f = 0; f < (int)(sizeof types / sizeof types[0]) && row_cases_run; f++) {
        if (only_fmt >= 0 && only_fmt != f)
            continue;
        for (int s = 0; s < shape_count; s++) {
            int64_t n = shapes[s][0], k = shapes[s][1];
            char name[96];
            snprintf(name, sizeof name, "gemv %s %lldx%lld", mcl_dtype_name(types[f]),
                     (long long)n, (long long)k);
            double same_batch_gbs, same_chain_gbs;
            double same_gbs = stream_read_same(b, quant_bytes(types[f], n, k), name,
                                               &same_batch_gbs, &same_chain_gbs);
            if (same_gbs <= 0)
                rc = 1;
            for (int c = 0; c < 2; c++) {
                if (only_rows > 0 && only_rows != row_cases[c])
                    continue;
                qgemv_sweep q = {types[f], n, k, row_cases[c], same_gbs, same_batch_gbs,
                                 same_chain_gbs, bench_arg_text(b, "plans") != NULL};
                rc |= bench_each_plan(b, "MOTIFCL_QUANT_GEMV_PLAN", qgemv_sweep_run, &q);
            }
        }
    }
    if (b->quant_filters && bench_arg(b, "gemm", 1) == 0)
        return rc;
    /* Prefill: 512 rows against the 4096 x 14336 weight (FLOP rate), on every path the
     * device has for the format; "gemm <type> ...: rate" is the path mcl_matmul takes. */
    static const mcl_dtype gemm_types[] = {MCL_DTYPE_Q4_0, MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_K,
                                           MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
    static const mcl_quant_path paths[] = {MCL_QUANT_PATH_MATRIX, MCL_QUANT_PATH_DOT,
                                           MCL_QUANT_PATH_FLOAT};
    static const char *const path_names[] = {"matrix", "dot", "float"};
    mcl_device_info info = {.size = sizeof info};
    uint64_t on = mcl_context_device_info(b->ctx, &info) == MCL_SUCCESS ? info.features_enabled
                                                                         : 0;
    for (size_t f = 0; f < sizeof gemm_types / sizeof gemm_types[0]; f++) {
        if (only_fmt >= 0 && gemm_types[f] != types[only_fmt])
            continue;
        qgemm_run r = {.r = {.ta = MCL_NO_TRANSPOSE, .tb = MCL_TRANSPOSE, .copies = 1}};
        int64_t sx[2] = {512, 14336}, sy[2] = {512, 4096};
        r.r.b[0] = quant_weights(b, gemm_types[f], 4096, 14336);
        r.r.a[0] = bench_tensor_f32(b, 2, sx, 0.5f);
        r.r.c = bench_tensor_f32(b, 2, sy, 0.0f);
        if (!r.r.b[0] || !r.r.a[0] || !r.r.c || bench_upload_random(r.r.a[0], 6)) {
            bench_mm_free(&r.r);
            rc = 1;
            continue;
        }
        int dot_gemm = gemm_types[f] == MCL_DTYPE_Q4_0 || gemm_types[f] == MCL_DTYPE_Q8_0;
        mcl_quant_path own = mcl_quant_gemm_path_select(b->ctx, gemm_types[f]);
        for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
            if ((paths[p] == MCL_QUANT_PATH_MATRIX && !(on & MCL_FEATURE_COOPERATIVE_MATRIX)) ||
                (paths[p] == MCL_QUANT_PATH_DOT &&
                 (!(on & MCL_FEATURE_INTEGER_DOT_PRODUCT) || !dot_gemm)))
                continue;
            r.path = paths[p];
            double t = bench_gpu_time(b, b->repeat < 10 ? b->repeat : 10, qgemm_once, &r);
            char line[160];
            snprintf(line, sizeof line, "gemm %s 512x14336 * (4096x14336)^T: %s%s",
                     mcl_dtype_name(gemm_types[f]), path_names[p],
                     paths[p] == own ? " (its path), rate" : ", rate");
            if (t > 0)
                bench_figure(b, line, 2.0 * 512 * 4096 * 14336 / t / 1e12, "TFLOP/s");
            else
                printf("%-58s unavailable: %s\n", line, mcl_context_last_error(b->ctx));
        }
        bench_mm_free(&r.r);
    }
    return rc;
}
