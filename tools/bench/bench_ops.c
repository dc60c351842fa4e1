/* Kernel benchmarks: the streaming limit, the arithmetic peaks, GEMV, GEMM, row operations
 * (bench_quant.c: the quantized ones), and the helpers they share (bench.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ops/ops_internal.h"
#include "pattern.h"

/* Operands rotate through enough copies to exceed the last-level cache several times over,
 * so that a figure is a memory figure (60 MB on an H200; llc= overrides, in MiB). */
int bench_copies_for(const bench *b, uint64_t bytes)
{
    if (b->hot)
        return 1;
    double llc = bench_arg(b, "llc", 64.0) * (double)MIB;
    int copies = (int)(4.0 * llc / (double)bytes) + 1;
    return copies > 16 ? 16 : copies;
}

mcl_tensor *bench_tensor_f32(bench *b, uint32_t ndim, const int64_t *shape, float value)
{
    mcl_tensor *t = NULL;
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_F32, .ndim = ndim};
    for (uint32_t i = 0; i < ndim; i++)
        desc.shape[i] = shape[i];
    if (mcl_tensor_create_ex(b->ctx, &desc, &t) != MCL_SUCCESS)
        return NULL;
    /* A GPU-written pattern is cheaper than an upload of gigabytes; as floats these are
     * arbitrary finite-or-not values, so fill with a constant through mcl_scale where it
     * matters (the rows benchmarks), and accept any bits for pure streaming. */
    (void)value;
    mcl_fill_pattern(b->ctx, t, 12345u);
    return t;
}

/* --- streaming -------------------------------------------------------------------------- */

mcl_status bench_stream_once(bench *b, void *user, int rep)
{
    (void)rep;
    stream_run *s = user;
    return mcl_dispatch(b->ctx, s->kernel, &s->x, 1, &s->y, 1, &s->n4, s->groups, 1, 1);
}

/* The streaming kernel (spec 0: read, 1: copy) over n4 vec4s: 256 invocations a workgroup,
 * 8 vec4s each at least, at most 65535 workgroups (the kernel loops over the rest). */
mcl_status bench_stream_prepare(bench *b, stream_run *s, uint32_t spec)
{
    s->groups = 65535u < s->n4 / 256 / 8 ? 65535u : s->n4 / 256 / 8;
    if (s->groups == 0)
        s->groups = 1;
    mcl_kernel_desc desc = {.id = MCL_KERNEL_BENCH_STREAM_F32,
                            .module = &mcl_spirv_tool_modules[MCL_KERNEL_BENCH_STREAM_F32],
                            .binding_count = 2,
                            .push_size = 4, .local_size_x = 256, .spec_count = 1,
                            .spec = {spec}};
    return mcl_kernel_get(b->ctx, &desc, &s->kernel);
}

/* One read, or with y a batch of `count` reads of distinct copies (a rotating start). */
mcl_status bench_stream_copies_once(bench *b, void *user, int rep)
{
    stream_copies_run *r = user;
    int count = r->y ? r->count : 1;
    for (int j = 0; j < count; j++) {
        if (r->chain && j > 0)
            mcl_record_barrier(b->ctx);
        r->s.x = r->x[(rep * count + j) % r->copies];
        if (r->y)
            r->s.y = r->y[j];
        mcl_status status = bench_stream_once(b, &r->s, rep);
        if (status != MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

int bench_stream(bench *b)
{
    if (b->stream_read_gbs > 0)
        return 0;
    mcl_context *ctx = b->ctx;
    uint64_t bytes = 1024 * MIB;
    if (bytes > mcl_traits_of(ctx)->max_binding_bytes)
        bytes = mcl_traits_of(ctx)->max_binding_bytes / 256 * 256;
    int64_t n = (int64_t)(bytes / 4);
    stream_run s = {.n4 = (uint32_t)(bytes / 16)};
    s.x = bench_tensor_f32(b, 1, &n, 1.0f);
    int64_t half = n / 2;
    mcl_tensor *y_small = bench_tensor_f32(b, 1, &n, 0.0f);
    if (!s.x || !y_small)
        return 1;
    if (bench_stream_prepare(b, &s, 0) != MCL_SUCCESS)
        return 1;
    s.y = y_small;
    double t = bench_gpu_time(b, b->repeat, bench_stream_once, &s);
    if (t <= 0)
        return 1;
    b->stream_read_gbs = (double)bytes / t / 1e9;
    char name[96];
    snprintf(name, sizeof name, "stream read %llu MiB (compute shader)",
             (unsigned long long)(bytes / MIB));
    bench_figure(b, name, b->stream_read_gbs, "GB/s");

    /* Copy: half the buffer into the other tensor's first half. */
    if (bench_stream_prepare(b, &s, 1) != MCL_SUCCESS)  /* the read's grid, as n4 is still */
        return 1;
    s.n4 = (uint32_t)(half / 4);
    t = bench_gpu_time(b, b->repeat, bench_stream_once, &s);
    if (t <= 0)
        return 1;
    b->stream_copy_gbs = 2.0 * (double)half * 4.0 / t / 1e9;
    snprintf(name, sizeof name, "stream copy %llu MiB -> %llu MiB (read + write)",
             (unsigned long long)(bytes / 2 / MIB), (unsigned long long)(bytes / 2 / MIB));
    bench_figure(b, name, b->stream_copy_gbs, "GB/s");
    mcl_tensor_destroy(s.x);
    mcl_tensor_destroy(y_small);
    return 0;
}

/* --- arithmetic peaks ------------------------------------------------------------------- */

typedef struct peak_run {
    const mcl_kernel *kernel;
    mcl_tensor *out;
    uint32_t push[4]; /* trips of the loop, x, y, w */
    uint32_t groups;
} peak_run;

static mcl_status peak_once(bench *b, void *user, int rep)
{
    (void)rep;
    peak_run *p = user;
    return mcl_dispatch(b->ctx, p->kernel, NULL, 0, &p->out, 1, p->push, p->groups, 1,
                               1);
}

/* bench_peak_f32.comp / bench_peak_dot.comp: CHAINS independent chains per invocation, STEPS
 * steps of each a trip of their loop. */
#define PEAK_CHAINS 16u
#define PEAK_STEPS 4u

/* Operations per second of one of the bench_peak kernels: `groups` workgroups of 256
 * invocations, each running PEAK_CHAINS chains of `steps` instructions (rounded down to whole
 * trips, at least one) of `ops` operations each. */
static double peak_rate(bench *b, mcl_kernel_id id, uint32_t groups, uint32_t steps,
                        double ops, mcl_tensor *out)
{
    const uint32_t trips = steps / PEAK_STEPS > 0 ? steps / PEAK_STEPS : 1;
    mcl_kernel_desc desc = {.id = id, .module = &mcl_spirv_tool_modules[id], .binding_count = 1,
                            .push_size = 16, .local_size_x = 256};
    peak_run p = {.out = out, .groups = groups,
                  /* x and y close to 1 and 0 keep the chains finite; w = (1, -1, 1, -1). */
                  .push = {trips, 0x3F7FFFF0u, 0x3A83126Fu, 0xFF01FF01u}};
    if (mcl_kernel_get(b->ctx, &desc, &p.kernel) != MCL_SUCCESS)
        return -1.0;
    double t = bench_gpu_time(b, b->repeat, peak_once, &p);
    double invocations = (double)groups * (double)mcl_kernel_local_size(p.kernel);
    return t > 0 ? invocations * PEAK_CHAINS * PEAK_STEPS * (double)trips * ops / t : -1.0;
}

/* The arithmetic limits, measured as bench_stream measures the memory's: FP32 fused
 * multiply-adds, and where the integer-dot feature is on, 8-bit packed dot products (the
 * instruction of the quantized kernels' integer-dot path). iter= sets the steps per chain
 * (4096: a few milliseconds on an H200; Lavapipe wants fewer). A kernel's rate is what it
 * reached: a lower bound of the device's. */
int bench_peak(bench *b)
{
    if (b->fma_tflops != 0)
        return b->fma_tflops < 0 || b->dot_tops < 0;
    const uint32_t groups = 4096;
    uint32_t steps = (uint32_t)bench_arg(b, "iter", 4096);
    if (steps < 1)
        steps = 1;
    int64_t n = (int64_t)groups * 256;
    mcl_tensor *out = bench_tensor_f32(b, 1, &n, 0.0f);
    if (!out) {
        b->fma_tflops = -1.0;
        return 1;
    }
    double fma = peak_rate(b, MCL_KERNEL_BENCH_PEAK_F32, groups, steps, 2.0, out);
    b->fma_tflops = fma > 0 ? fma / 1e12 : -1.0;
    if (fma > 0)
        bench_figure(b, "FP32 fused multiply-add rate (compute shader)", fma / 1e12, "TFLOP/s");
    else
        printf("%-58s unavailable: %s\n", "FP32 fused multiply-add rate",
               mcl_context_last_error(b->ctx));
    if (mcl_traits_of(b->ctx)->integer_dot) {
        double dot = peak_rate(b, MCL_KERNEL_BENCH_PEAK_DOT, groups, steps, 8.0, out);
        b->dot_tops = dot > 0 ? dot / 1e12 : -1.0;
        if (dot > 0)
            bench_figure(b, "8-bit dot product rate (compute shader, 8 ops per dot4)",
                         dot / 1e12, "TOPS");
        else
            printf("%-58s unavailable: %s\n", "8-bit dot product rate",
                   mcl_context_last_error(b->ctx));
    }
    mcl_tensor_destroy(out);
    return b->fma_tflops < 0 || b->dot_tops < 0;
}

/* --- GEMV ------------------------------------------------------------------------------- */

mcl_status bench_matmul_once(bench *b, void *user, int rep)
{
    mm_run *r = user;
    int i = rep % r->copies;
    return mcl_matmul(b->ctx, r->a[i], r->ta, r->b[i], r->tb, NULL, r->c);
}

void bench_mm_free(mm_run *r)
{
    for (int i = 0; i < r->copies; i++) {
        mcl_tensor_destroy(r->a[i]);
        mcl_tensor_destroy(r->b[i]);
    }
    mcl_tensor_destroy(r->c);
}

static int gemv_case(bench *b, int64_t n, int64_t k, int64_t rows)
{
    mm_run r = {.ta = MCL_NO_TRANSPOSE, .tb = MCL_TRANSPOSE};
    uint64_t weight_bytes = (uint64_t)n * (uint64_t)k * 4;
    r.copies = bench_copies_for(b, weight_bytes);
    int64_t sx[2] = {rows, k}, sw[2] = {n, k}, sy[2] = {rows, n};
    for (int i = 0; i < r.copies; i++) {
        r.a[i] = bench_tensor_f32(b, 2, sx, 0.5f);
        r.b[i] = bench_tensor_f32(b, 2, sw, 0.5f);
        if (!r.a[i] || !r.b[i]) {
            r.copies = i + 1;
            bench_mm_free(&r);
            return 1;
        }
    }
    r.c = bench_tensor_f32(b, 2, sy, 0.0f);
    double t = bench_gpu_time(b, b->repeat, bench_matmul_once, &r);
    bench_mm_free(&r);
    if (t <= 0)
        return 1;
    double gbs = (double)weight_bytes / t / 1e9;
    char name[128];
    snprintf(name, sizeof name, "gemv f32 %lldx%lld, %lld row%s: time", (long long)n,
             (long long)k, (long long)rows, rows > 1 ? "s" : "");
    bench_figure(b, name, t * 1e6, "us");
    snprintf(name, sizeof name, "gemv f32 %lldx%lld, %lld row%s: weights", (long long)n,
             (long long)k, (long long)rows, rows > 1 ? "s" : "");
    bench_figure(b, name, gbs, "GB/s");
    snprintf(name, sizeof name, "gemv f32 %lldx%lld, %lld row%s: of stream read", (long long)n,
             (long long)k, (long long)rows, rows > 1 ? "s" : "");
    bench_figure(b, name, 100.0 * gbs / b->stream_read_gbs, "%");
    return 0;
}

#define GEMV_MAX_SHAPES 16

/* The shapes of `shapes=NxK,...`; 0 on a malformed list. */
static int gemv_shapes(const char *list, int64_t shapes[][2], int cap)
{
    int count = 0;
    while (*list) {
        long long n, k;
        int used = 0;
        if (count == cap || sscanf(list, "%lldx%lld%n", &n, &k, &used) != 2 || n <= 0 ||
            k <= 0 || n > (1 << 24) || k > (1 << 24))
            return 0;
        shapes[count][0] = n;
        shapes[count][1] = k;
        count++;
        list += used;
        if (*list == ',')
            list++;
        else if (*list)
            return 0;
    }
    return count;
}

/* Every shape at its row counts, under the plan in force (tagged with it when `tag`). */
static int gemv_shapes_run(bench *b, int64_t shapes[][2], int count, int64_t rows, int tag)
{
    /* rows= alone, else one row and eight. */
    const int64_t cases[2] = {rows > 0 ? rows : 1, 8};
    const int case_count = rows > 0 ? 1 : 2;
    int rc = 0;
    for (int s = 0; s < count; s++) {
        for (int c = 0; c < case_count; c++) {
            const int64_t m = cases[c];
            uint32_t p[4];
            char text[96];
            if (tag) {
                if (mcl_gemv_f32_plan(b->ctx, (uint32_t)m, (uint32_t)shapes[s][0], p) !=
                    MCL_SUCCESS)
                    return 1;
                snprintf(text, sizeof text, "plan t=%u,g=%u,nr=%u,u=%u", p[0], p[1], p[2],
                         p[3]);
                b->figure_tag = text;
            }
            rc |= gemv_case(b, shapes[s][0], shapes[s][1], m);
            b->figure_tag = NULL;
        }
    }
    return rc;
}

typedef struct gemv_sweep {
    int64_t (*shapes)[2];
    int count;
    int64_t rows;
    int tag;
} gemv_sweep;

static int gemv_sweep_run(bench *b, void *user)
{
    gemv_sweep *g = user;
    return gemv_shapes_run(b, g->shapes, g->count, g->rows, g->tag);
}

int bench_gemv(bench *b)
{
    int64_t n = (int64_t)bench_arg(b, "n", 0), k = (int64_t)bench_arg(b, "k", 0);
    int64_t rows = (int64_t)bench_arg(b, "rows", 0);
    if (rows < 0 || rows > 8) {
        fprintf(stderr, "motifcl-bench gemv: rows= is 1..8\n");
        return 1;
    }
    int64_t shapes[GEMV_MAX_SHAPES][2] = {{14336, 4096}, {4096, 14336}};
    int count = 2;
    const char *list = bench_arg_text(b, "shapes");
    if (list && !(count = gemv_shapes(list, shapes, GEMV_MAX_SHAPES))) {
        fprintf(stderr, "motifcl-bench gemv: shapes= is NxK,... (at most %d)\n",
                GEMV_MAX_SHAPES);
        return 1;
    }
    if (n > 0 && k > 0) {
        shapes[0][0] = n;
        shapes[0][1] = k;
        count = 1;
        if (rows == 0)
            rows = 1;
    }
    gemv_sweep g = {shapes, count, rows, bench_arg_text(b, "plans") != NULL};
    return bench_each_plan(b, "MOTIFCL_GEMV_PLAN", gemv_sweep_run, &g);
}

/* --- GEMM ------------------------------------------------------------------------------- */

/* Finite values in [-1, 1): results of different tile shapes can then be compared. */
int bench_upload_random(mcl_tensor *t, uint32_t seed)
{
    size_t n = (size_t)mcl_tensor_numel(t);
    float *host = malloc(n * sizeof *host);
    if (!host)
        return 1;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        host[i] = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    mcl_status status = mcl_tensor_upload(t, 0, host, n * sizeof *host);
    free(host);
    return status != MCL_SUCCESS;
}

typedef struct gemm_cfg_run {
    mcl_tensor *a, *b, *c;
    mcl_gemm_config cfg;
    uint32_t m, n, k;
    int ta, tb;
} gemm_cfg_run;

static mcl_status gemm_cfg_once(bench *b, void *user, int rep)
{
    (void)rep;
    gemm_cfg_run *g = user;
    return mcl_gemm_dispatch(b->ctx, &g->cfg, g->a, g->ta, g->b, g->tb, NULL, g->c, g->m, g->n,
                             g->k, 1, 0, 0);
}

/* The sweep's tile shapes: `tiles=BMxBNxBK/TMxTN[d],...` where given (d: double-buffered),
 * else a fixed list. Returns how many were read into `out`, 0 on a malformed list. */
static size_t gemm_sweep_configs(const bench *b, mcl_gemm_config *out, size_t cap)
{
    static const mcl_gemm_config fixed[] = {
        {128, 128, 8, 16, 8, 0}, {128, 128, 16, 8, 8, 0}, {128, 128, 16, 8, 8, 1},
        {128, 128, 8, 8, 8, 1},  {64, 128, 16, 4, 8, 1},  {64, 64, 16, 4, 4, 1},
    };
    const char *list = NULL;
    for (int i = 0; i < b->arg_count; i++)
        if (strncmp(b->args[i], "tiles=", 6) == 0)
            list = b->args[i] + 6;
    if (!list) {
        size_t count = sizeof fixed / sizeof fixed[0];
        memcpy(out, fixed, (count < cap ? count : cap) * sizeof *out);
        return count < cap ? count : cap;
    }
    size_t count = 0;
    while (*list && count < cap) {
        mcl_gemm_config c = {0};
        int used = 0;
        if (sscanf(list, "%ux%ux%u/%ux%u%n", &c.bm, &c.bn, &c.bk, &c.tm, &c.tn, &used) != 5)
            return 0;
        list += used;
        if (*list == 'd') {
            c.db = 1;
            list++;
        }
        if (*list == ',')
            list++;
        else if (*list)
            return 0;
        out[count++] = c;
    }
    return count;
}

/* Seconds of one call and its wait: the first call of a tile creates its pipelines (or loads
 * them from the pipeline cache), which for the large tiles takes the NVIDIA compiler seconds
 * to a minute (docs/tuning.md, "The K step's unroll"). */
static double gemm_first_call(bench *b, mcl_status (*fn)(bench *, void *, int), void *user)
{
    double t0 = bench_now();
    if (fn(b, user, 0) != MCL_SUCCESS || mcl_finish(b->ctx) != MCL_SUCCESS)
        return -1.0;
    return bench_now() - t0;
}

static int gemm_case(bench *b, int64_t m, int64_t n, int64_t k, int ta, int tb, int sweep)
{
    mm_run r = {.ta = ta ? MCL_TRANSPOSE : MCL_NO_TRANSPOSE,
                .tb = tb ? MCL_TRANSPOSE : MCL_NO_TRANSPOSE,
                .copies = 1};
    int64_t sa[2] = {ta ? k : m, ta ? m : k}, sb[2] = {tb ? n : k, tb ? k : n}, sc[2] = {m, n};
    r.a[0] = bench_tensor_f32(b, 2, sa, 0.5f);
    r.b[0] = bench_tensor_f32(b, 2, sb, 0.5f);
    r.c = bench_tensor_f32(b, 2, sc, 0.0f);
    if (!r.a[0] || !r.b[0] || !r.c || bench_upload_random(r.a[0], 1) || bench_upload_random(r.b[0], 2)) {
        bench_mm_free(&r);
        return 1;
    }
    /* Compute-bound: operands stay hot; the first run warms them. */
    int reps = b->repeat < 10 ? b->repeat : 10;
    double first = gemm_first_call(b, bench_matmul_once, &r);
    double t = first >= 0 ? bench_gpu_time(b, reps, bench_matmul_once, &r) : -1.0;
    double flops = 2.0 * (double)m * (double)n * (double)k;
    char name[128];
    snprintf(name, sizeof name, "gemm f32 %s%s %lldx%lld * %lldx%lld", ta ? "T" : "N",
             tb ? "T" : "N",
             (long long)m, (long long)k, (long long)k, (long long)n);
    if (t > 0) {
        char line[160];
        snprintf(line, sizeof line, "%.100s: first call (creates its pipelines)", name);
        bench_figure(b, line, first, "s");
        snprintf(line, sizeof line, "%s: time", name);
        bench_figure(b, line, t * 1e6, "us");
        snprintf(line, sizeof line, "%s: rate", name);
        bench_figure(b, line, flops / t / 1e12, "TFLOP/s");
        if (b->peak_tflops > 0) {
            snprintf(line, sizeof line, "%s: of FP32 peak", name);
            bench_figure(b, line, 100.0 * flops / t / 1e12 / b->peak_tflops, "%");
        }
    }
    if (sweep) {
        /* Of the tiles of 128 accumulators an invocation the fixed list holds the library's
         * only (16 x 8 in steps of 8): their pipelines take the NVIDIA compiler 12 s or
         * more each. */
        mcl_gemm_config configs[32];
        size_t nconfigs = gemm_sweep_configs(b, configs, sizeof configs / sizeof configs[0]);
        if (nconfigs == 0)
            printf("tiles=: expected BMxBNxBK/TMxTN[d],...: no sweep\n");
        gemm_cfg_run g = {.a = r.a[0], .b = r.b[0], .c = r.c, .m = (uint32_t)m,
                          .n = (uint32_t)n, .k = (uint32_t)k, .ta = ta, .tb = tb};
        /* A tile shape's figure counts only if it computes what the default shape did. */
        size_t count = (size_t)(m * n);
        float *want = malloc(count * sizeof *want), *got = malloc(count * sizeof *got);
        if (!want || !got || mcl_tensor_download(r.c, 0, want, count * 4) != MCL_SUCCESS)
            count = 0;
        for (size_t i = 0; i < nconfigs && count; i++) {
            g.cfg = configs[i];
            double first_c = gemm_first_call(b, gemm_cfg_once, &g);
            double tc = first_c >= 0 ? bench_gpu_time(b, reps, gemm_cfg_once, &g) : -1.0;
            char line[200];
            snprintf(line, sizeof line, "%s: tile %ux%ux%u/%ux%u%s", name, g.cfg.bm, g.cfg.bn,
                     g.cfg.bk, g.cfg.tm, g.cfg.tn, g.cfg.db ? " db" : "");
            double err = 0.0, ref = 0.0;
            if (tc > 0 && mcl_tensor_download(r.c, 0, got, count * 4) == MCL_SUCCESS) {
                for (size_t q = 0; q < count; q++) {
                    double d = (double)got[q] - (double)want[q];
                    err += d * d;
                    ref += (double)want[q] * (double)want[q];
                }
            }
            if (tc <= 0)
                printf("%-58s unavailable: %s\n", line, mcl_context_last_error(b->ctx));
            else if (err <= 1e-9 * ref) {
                bench_figure(b, line, flops / tc / 1e12, "TFLOP/s");
                char first_line[240];
                snprintf(first_line, sizeof first_line, "%s, first call", line);
                bench_figure(b, first_line, first_c, "s");
            }
            else
                printf("%-58s result differs from the default tile: no figure\n", line);
        }
        free(want);
        free(got);
    }
    bench_mm_free(&r);
    return t > 0 ? 0 : 1;
}

int bench_gemm(bench *b)
{
    int64_t m = (int64_t)bench_arg(b, "m", 0), n = (int64_t)bench_arg(b, "n", 0);
    int64_t k = (int64_t)bench_arg(b, "k", 0);
    int sweep = (int)bench_arg(b, "sweep", 0);
    if (m > 0 && n > 0 && k > 0)
        return gemm_case(b, m, n, k, (int)bench_arg(b, "ta", 0), (int)bench_arg(b, "tb", 0),
                         sweep);
    int rc = 0;
    rc |= gemm_case(b, 4096, 512, 14336, 0, 0, sweep);
    rc |= gemm_case(b, 4096, 512, 14336, 0, 1, sweep);
    rc |= gemm_case(b, 4096, 4096, 4096, 0, 0, sweep);
    return rc;
}

/* --- row operations --------------------------------------------------------------------- */

typedef struct rows_run {
    mcl_tensor *x[16], *y[16], *w;
    int copies, op;
} rows_run;

static mcl_status rows_once(bench *b, void *user, int rep)
{
    rows_run *r = user;
    int i = rep % r->copies;
    switch (r->op) {
    case 0: return mcl_softmax(b->ctx, r->x[i], 1.0f, 0, r->y[i]);
    case 1: return mcl_rmsnorm(b->ctx, r->x[i], r->w, 1e-5f, r->y[i]);
    case 2: return mcl_add(b->ctx, r->x[i], r->y[i], r->y[i]);
    default: return mcl_scale(b->ctx, r->x[i], 0.5f, 1.0f, r->y[i]);
    }
}

int bench_rows(bench *b)
{
    static const char *const names[] = {"softmax", "rmsnorm", "add (y += x)", "scale"};
    /* Bytes each op must move at least: read x (and y for add), write y. */
    static const double traffic[] = {2.0, 2.0, 3.0, 2.0};
    int64_t rows = (int64_t)bench_arg(b, "rows", 4096), cols = (int64_t)bench_arg(b, "cols", 4096);
    int64_t shape[2] = {rows, cols};
    uint64_t bytes = (uint64_t)rows * (uint64_t)cols * 4;
    rows_run r = {.copies = bench_copies_for(b, 2 * bytes)};
    for (int i = 0; i < r.copies; i++) {
        r.x[i] = bench_tensor_f32(b, 2, shape, 1.0f);
        r.y[i] = bench_tensor_f32(b, 2, shape, 0.0f);
        /* Bounded, finite inputs: the hash pattern's bits are not all valid floats. */
        if (!r.x[i] || !r.y[i] || bench_upload_random(r.x[i], 3 + (uint32_t)i) ||
            bench_upload_random(r.y[i], 40 + (uint32_t)i))
            return 1;
    }
    r.w = bench_tensor_f32(b, 1, &cols, 1.0f);
    if (!r.w || bench_upload_random(r.w, 99))
        return 1;
    int rc = 0;
    for (r.op = 0; r.op < 4; r.op++) {
        double t = bench_gpu_time(b, b->repeat, rows_once, &r);
        char name[128];
        snprintf(name, sizeof name, "%s %lldx%lld", names[r.op], (long long)rows, (long long)cols);
        if (t <= 0) {
            printf("%-58s unavailable: %s\n", name, mcl_context_last_error(b->ctx));
            rc = 1;
            continue;
        }
        double gbs = traffic[r.op] * (double)bytes / t / 1e9;
        char line[160];
        snprintf(line, sizeof line, "%s: time", name);
        bench_figure(b, line, t * 1e6, "us");
        snprintf(line, sizeof line, "%s: bytes read + written", name);
        bench_figure(b, line, gbs, "GB/s");
        snprintf(line, sizeof line, "%s: of stream copy", name);
        bench_figure(b, line, 100.0 * gbs / b->stream_copy_gbs, "%");
    }
    for (int i = 0; i < r.copies; i++) {
        mcl_tensor_destroy(r.x[i]);
        mcl_tensor_destroy(r.y[i]);
    }
    mcl_tensor_destroy(r.w);
    return rc;
}
