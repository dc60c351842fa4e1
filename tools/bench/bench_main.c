/* motifcl-bench: figures with a witness. Benchmarks are programs, never timed assertions in
 * tests; every figure printed is measured in the run that prints it, or labelled modeled.
 *
 *   motifcl-bench stream              streaming read and copy bandwidth (the memory limit)
 *   motifcl-bench gemv [n= k= rows=]  matrix-vector products against the streaming limit
 *                                     (shapes=NxK,... several shapes; plans=P/P/... each
 *                                     MOTIFCL_GEMV_PLAN in turn, `rule` for none, every figure
 *                                     tagged with the plan the GEMV took)
 *   motifcl-bench peak [iter=]         FP32 fused multiply-add and 8-bit dot product rates
 *                                     (the arithmetic limits)
 *   motifcl-bench gemm [m= n= k=]     matrix products against the FP32 peak
 *   motifcl-bench rows [rows= cols=]  softmax, RMSNorm, element-wise against the copy limit
 *   motifcl-bench quant [fmt= rows= gemm= n= k= plans=]
 *                                     GEMV with Q8_0/Q4_0/K-quant weights against a stream
 *                                     read of the same bytes, alone, batched and chained
 *                                     (each waiting for the one before) (and, on
 *                                     the integer-dot path, batched on one input through
 *                                     mcl_matmul_multi, and the GEMV kernels alone on an
 *                                     input quantized beforehand; on the float path, a
 *                                     modeled RX 580 decode rate from the single-call and
 *                                     the batched shares); the GEMM of every format along
 *                                     each path the device has. fmt=0..4 only
 *                                     Q8_0, Q4_0, Q4_K, Q5_K or Q6_K;
 *                                     rows=1 or 8 only that row case; gemm=0 no GEMM;
 *                                     n= k= the GEMVs of W [n, k] only (k a multiple of
 *                                     256)
 *                                     (these filters apply to `quant` alone, not `all`);
 *                                     plans=P/P/... each MOTIFCL_QUANT_GEMV_PLAN in turn,
 *                                     `rule` for none, every GEMV figure tagged with the
 *                                     path and plan it took;
 *                                     at 8 rows also the bound that the path's measured
 *                                     arithmetic rate (peak) sets, modeled
 *   motifcl-bench replay              CPU cost per dispatch of a replayed sequence
 *   motifcl-bench memory              CPU cost of tensor create+destroy pairs
 *   motifcl-bench transfer            upload/download GB/s against a plain vkCmdCopyBuffer, and
 *                                     a read right after an upload (anonymous memory, a mapping)
 *   motifcl-bench decode              a session's prefill and decode on a llama-shaped model
 *                                     of random weights made on the device (file=1: a
 *                                     GGUF file) (shape=7b|1b type=q4_0|q8_0|q4_K|f32
 *                                     prompt=N tokens=M seqs=S repeat=R kv=f32|f16;
 *                                     shape=mixtral|moe-small expert_mib=M: an expert cache),
 *                                     against the stream read; per-op GPU times of a step
 *   motifcl-bench prefill             the same, the prompt pass alone, repeat=R times
 *   motifcl-bench all                 stream, peak, gemv, gemm, rows, replay
 * Options: --json, --witness-dir DIR (default: MOTIFCL_WITNESS_DIR, else .), --repeat N,
 * --hot (cached operands: no rotation through copies larger than the last-level cache),
 * --peak TFLOPS (FP32 peak; default from a table of known devices), --warmup SECONDS (each
 * measurement first runs its operation for this long, 2 by default, so that the GPU's
 * clocks have ramped up). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "vk/inspect.h"

/* FP32 (non-tensor) peaks from vendors' datasheets, used only to express GEMM figures as a
 * fraction of the device; they are modeled, not measured. */
static const struct {
    const char *name;
    double tflops;
} fp32_peaks[] = {
    {"H200", 67.0},
    {"H100", 67.0},
    {"RX 580", 6.17},
    {"Radeon RX 580", 6.17},
};

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void emit(bench *b, const char *name, double value, const char *unit, const char *label)
{
    char tagged[256];
    if (b->figure_tag) {
        snprintf(tagged, sizeof tagged, "%s [%s]", name, b->figure_tag);
        name = tagged;
    }
    mcl_witness_add_figure(b->witness, name, value, unit, label);
    if (b->json)
        printf("%s\n    {\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"label\": \"%s\"}",
               b->first_figure ? "" : ",", name, value, unit, label);
    else
        printf("%-58s %12.5g %-8s (%s)\n", name, value, unit, label);
    fflush(stdout);
    b->first_figure = 0;
}

void bench_figure(bench *b, const char *name, double value, const char *unit)
{
    emit(b, name, value, unit, "measured");
}

void bench_modeled(bench *b, const char *name, double value, const char *unit)
{
    emit(b, name, value, unit, "modeled");
}

/* A whole finite number, or the program ends naming the option: a typo must not run a
 * benchmark with 0 in its place. */
static double number_or_exit(const char *option, const char *text)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v)) {
        fprintf(stderr, "motifcl-bench: %s \"%s\" is not a number\n", option, text);
        exit(1);
    }
    return v;
}

const char *bench_arg_text(const bench *b, const char *key)
{
    size_t len = strlen(key);
    for (int i = 0; i < b->arg_count; i++) {
        if (strncmp(b->args[i], key, len) == 0 && b->args[i][len] == '=')
            return b->args[i] + len + 1;
    }
    return NULL;
}

double bench_arg(const bench *b, const char *key, double fallback)
{
    const char *text = bench_arg_text(b, key);
    return text ? number_or_exit(key, text) : fallback;
}

#define PLAN_TEXT 128

int bench_each_plan(bench *b, const char *variable, int (*fn)(bench *, void *), void *user)
{
    const char *plans = bench_arg_text(b, "plans");
    if (!plans)
        return fn(b, user);
    for (const char *c = plans;; c++) {
        size_t len = strcspn(c, "/");
        if (len == 0 || len >= PLAN_TEXT) {
            fprintf(stderr, "motifcl-bench: plans= is P/P/..., each as %s (under %d "
                            "characters) or `rule`\n", variable, PLAN_TEXT);
            return 1;
        }
        c += len;
        if (*c == '\0')
            break;
    }
    const char *had = getenv(variable);
    char *saved = had ? strdup(had) : NULL;
    char plan[PLAN_TEXT];
    int rc = 0;
    mcl_witness_set_note(b->witness, "plans", plans);
    while (*plans) {
        size_t len = strcspn(plans, "/");
        memcpy(plan, plans, len);
        plan[len] = '\0';
        if (strcmp(plan, "rule") == 0)
            unsetenv(variable);
        else
            setenv(variable, plan, 1);
        mcl_inspect_reread_environment(b->ctx);
        rc |= fn(b, user);
        plans += len;
        if (*plans == '/')
            plans++;
    }
    if (saved)
        setenv(variable, saved, 1);
    else
        unsetenv(variable);
    free(saved);
    mcl_inspect_reread_environment(b->ctx);
    return rc;
}

double bench_gpu_time(bench *b, int reps, mcl_status (*fn)(bench *, void *, int), void *user)
{
    mcl_context *ctx = b->ctx;
    uint32_t needed = 2 * (uint32_t)reps;
    if (b->timer_count < needed) {
        mcl_timer_destroy(b->timer);
        b->timer = NULL;
        b->timer_count = 0;
        if (mcl_timer_create(ctx, needed, &b->timer) != MCL_SUCCESS)
            return -1.0;
        b->timer_count = needed;
    }
    /* Warm up: an idle GPU runs its cores at a fraction of their clock (345 MHz against
     * 1980 MHz seen on an H200) and ramps up only under sustained load, so without this a
     * compute-bound figure measures the idle clock. On the H200 half a second was not enough:
     * a GEMM measured first ran at the same low rate as without warm-up.
     * The clock starts after the first run, which compiles the pipelines (tens of seconds for
     * some GEMM tiles on that driver, with the GPU idle throughout). */
    if (fn(b, user, 0) != MCL_SUCCESS || mcl_finish(ctx) != MCL_SUCCESS)
        return -1.0;
    double warm_start = bench_now();
    for (int w = 1; w < 2 || bench_now() - warm_start < b->warmup_s; w++) {
        if (fn(b, user, w) != MCL_SUCCESS || mcl_finish(ctx) != MCL_SUCCESS)
            return -1.0;
    }
    if (mcl_finish(ctx) != MCL_SUCCESS || mcl_timer_reset(b->timer, needed) != MCL_SUCCESS)
        return -1.0;
    for (int r = 0; r < reps; r++) {
        if (mcl_timer_mark(b->timer, 2 * (uint32_t)r, 1) != MCL_SUCCESS ||
            fn(b, user, r) != MCL_SUCCESS ||
            mcl_timer_mark(b->timer, 2 * (uint32_t)r + 1, 0) != MCL_SUCCESS)
            return -1.0;
    }
    if (mcl_finish(ctx) != MCL_SUCCESS)
        return -1.0;
    double *seconds = calloc((size_t)reps, sizeof *seconds);
    if (!seconds)
        return -1.0;
    mcl_status result = mcl_timer_pairs(b->timer, (uint32_t)reps, seconds);
    double result_seconds = result == MCL_SUCCESS ? bench_median(seconds, reps) : -1.0;
    free(seconds);
    return result_seconds;
}

void bench_profile_report(bench *b, const char *what, double per, double plain_s,
                          double profiled_s)
{
    uint32_t n = 0;
    mcl_profiler_rows(b->ctx, NULL, 0, &n);
    mcl_profile_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return;
    rows[0].size = sizeof *rows;
    double sum = 0.0, span = 0.0;
    uint64_t dropped = 0;
    if (mcl_profiler_rows(b->ctx, rows, n, &n) != MCL_SUCCESS ||
        mcl_profiler_totals(b->ctx, &sum, &span, &dropped) != MCL_SUCCESS) {
        free(rows);
        return;
    }
    printf("profile of %s, per %s: %.3f ms in dispatches, %.3f ms first to last timestamp; "
           "profiled %.3f ms against %.3f ms unprofiled (the profiler's cost)%s\n",
           what, per > 1 ? "step" : "run", sum / per * 1e3, span / per * 1e3, profiled_s * 1e3,
           plain_s * 1e3, dropped ? "; some dispatches untimed (over 4,096 in a batch)" : "");
    printf("%9s %6s %7s %9s %6s %9s %6s  %-28s %s\n", "ms", "share", "count", "GB/s", "strm",
           "GFLOP/s", "peak", "op", "kernel");
    for (uint32_t i = 0; i < n; i++) {
        const mcl_profile_row *r = &rows[i];
        double sec = r->seconds > 0 ? r->seconds : 1e-30;
        double gbs = r->bytes / sec * 1e-9, gflops = r->flops / sec * 1e-9;
        char strm[16] = "", peak[16] = "";
        if (b->stream_read_gbs > 0)
            snprintf(strm, sizeof strm, "%.0f%%", 100.0 * gbs / b->stream_read_gbs);
        if (b->peak_tflops > 0 && r->flops > 0)
            snprintf(peak, sizeof peak, "%.0f%%", 100.0 * gflops / (b->peak_tflops * 1e3));
        printf("%9.4f %5.1f%% %7.1f %9.1f %6s %9.1f %6s  %-28s %s\n", r->seconds / per * 1e3,
               sum > 0 ? 100.0 * r->seconds / sum : 0.0, (double)r->count / per, gbs, strm,
               gflops, peak, r->op, r->kernel);
    }
    free(rows);
    size_t needed = 0;
    mcl_profiler_json(b->ctx, NULL, 0, &needed);
    char *json = malloc(needed ? needed : 1);
    if (json && mcl_profiler_json(b->ctx, json, needed, NULL) == MCL_SUCCESS)
        mcl_witness_set_note(b->witness, "profile", json);
    free(json);
}

void bench_witness_device(bench *b)
{
    mcl_device_info info = {.size = sizeof info};
    char traits[2048] = "";
    mcl_context_device_info(b->ctx, &info);
    mcl_context_traits_json(b->ctx, traits, sizeof traits, NULL);
    mcl_witness_set_device(b->witness, &info, mcl_context_validation_errors(b->ctx), traits);
}

static double table_peak(const char *device)
{
    for (size_t i = 0; i < sizeof fp32_peaks / sizeof fp32_peaks[0]; i++) {
        if (strstr(device, fp32_peaks[i].name))
            return fp32_peaks[i].tflops;
    }
    return 0.0;
}

int main(int argc, char **argv)
{
    bench b = {.first_figure = 1, .repeat = 20, .warmup_s = 2.0};
    const char *what = NULL, *dir = getenv("MOTIFCL_WITNESS_DIR");
    double peak = 0.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            b.json = 1;
        else if (strcmp(argv[i], "--profile") == 0)
            b.profile = 1;
        else if (strcmp(argv[i], "--hot") == 0)
            b.hot = 1;
        else if (strcmp(argv[i], "--witness-dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            b.repeat = (int)number_or_exit("--repeat", argv[++i]);
        else if (strcmp(argv[i], "--peak") == 0 && i + 1 < argc)
            peak = number_or_exit("--peak", argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
            b.warmup_s = number_or_exit("--warmup", argv[++i]);
        else if (strchr(argv[i], '=') && b.arg_count < 16)
            b.args[b.arg_count++] = argv[i];
        else if (!what && argv[i][0] != '-')
            what = argv[i];
        else
            what = "help";
    }
    if (!what || strcmp(what, "help") == 0 || b.repeat < 1 || b.repeat > 1000) {
        fprintf(stderr, "usage: %s stream|peak|gemv|gemm|rows|quant|replay|memory|transfer|"
                        "train|load|decode|prefill|all [key=value ...] [--json] [--hot] "
                        "[--repeat N] [--peak TFLOPS] [--warmup S] [--profile] "
                        "[--witness-dir DIR]\n", argv[0]);
        return 1;
    }
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_status status = mcl_context_create(&desc, &b.ctx);
    if (status != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-bench: no context: %s\n", mcl_status_string(status));
        return 2;
    }
    mcl_device_info info = {.size = sizeof info};
    mcl_context_device_info(b.ctx, &info);
    char name[64];
    snprintf(name, sizeof name, "motifcl-bench-%s", what);
    b.witness = mcl_witness_create("bench", name, argc, argv);
    b.peak_tflops = peak > 0 ? peak : table_peak(info.name);
    mcl_witness_set_note(b.witness, "operands", b.hot ? "hot (cached)" : "cold (rotated copies)");
    if (b.json)
        printf("{\n  \"device\": \"%s\",\n  \"figures\": [", info.name);
    else
        printf("device: %s (%s), operands %s\n", info.name, info.driver_info,
               b.hot ? "hot (cached)" : "cold (rotated through copies beyond the cache)");
    if (b.peak_tflops > 0)
        bench_modeled(&b, "FP32 peak (datasheet or --peak)", b.peak_tflops, "TFLOP/s");

    int all = strcmp(what, "all") == 0, rc = 0, known = all;
    if (all || strcmp(what, "stream") == 0 || strcmp(what, "gemv") == 0 ||
        strcmp(what, "rows") == 0 || strcmp(what, "quant") == 0) {
        rc |= bench_stream(&b);
        known = 1;
    }
    if (all || strcmp(what, "peak") == 0 || strcmp(what, "quant") == 0) {
        rc |= bench_peak(&b);
        known = 1;
    }
    if (all || strcmp(what, "gemv") == 0)
        rc |= bench_gemv(&b);
    if (all || strcmp(what, "gemm") == 0) {
        rc |= bench_gemm(&b);
        known = 1;
    }
    if (all || strcmp(what, "rows") == 0)
        rc |= bench_rows(&b);
    if (all || strcmp(what, "quant") == 0) {
        /* Under `all`, rows= belongs to the gemv and rows benchmarks, not to quant's filter. */
        b.quant_filters = !all;
        rc |= bench_qgemv(&b);
    }
    if (all || strcmp(what, "replay") == 0) {
        rc |= bench_replay(&b);
        known = 1;
    }
    if (strcmp(what, "memory") == 0) {
        rc |= bench_memory(&b);
        known = 1;
    }
    if (strcmp(what, "transfer") == 0) {
        rc |= bench_transfer(&b);
        known = 1;
    }
    if (strcmp(what, "train") == 0) {
        rc |= bench_train(&b);
        known = 1;
    }
    if (strcmp(what, "load") == 0) {
        rc |= bench_load(&b);
        known = 1;
    }
    if (strcmp(what, "decode") == 0 || strcmp(what, "prefill") == 0) {
        rc |= bench_decode(&b, strcmp(what, "prefill") == 0);
        known = 1;
    }
    if (!known) {
        fprintf(stderr, "motifcl-bench: unknown benchmark \"%s\"\n", what);
        rc = 1;
    }
    if (b.json)
        printf("\n  ]\n}\n");
    bench_witness_device(&b);
    if (mcl_witness_write(b.witness, dir ? dir : ".", rc ? "failed" : "passed") != 0) {
        fprintf(stderr, "motifcl-bench: could not write the witness into %s\n", dir ? dir : ".");
        rc = 1;
    }
    mcl_witness_destroy(b.witness);
    mcl_timer_destroy(b.timer);
    mcl_context_destroy(b.ctx);
    return rc;
}
