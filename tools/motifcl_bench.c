/* motifcl-bench: figures with a witness. Benchmarks are programs, never timed assertions in
 * tests; every figure printed here is measured in this run and labelled so.
 *
 *   motifcl-bench memory     CPU cost of tensor create+destroy pairs (the allocator's path)
 *   motifcl-bench transfer   upload/download GB/s at 1 MiB, 64 MiB, 1 GiB against a plain
 *                            vkCmdCopyBuffer between the same kinds of memory
 * Options: --json (figures as JSON on stdout), --witness-dir DIR (default: the current
 * directory; MOTIFCL_WITNESS_DIR overrides), --repeat N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "motifcl.h"
#include "vk/context.h"
#include "witness.h"

#define MIB (UINT64_C(1) << 20)

typedef struct bench {
    mcl_context *ctx;
    mcl_witness *witness;
    int json, first_figure, repeat;
} bench;

static double now_seconds(void)
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

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void figure(bench *b, const char *name, double value, const char *unit)
{
    mcl_witness_add_figure(b->witness, name, value, unit, "measured");
    if (b->json)
        printf("%s\n    {\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"label\": "
               "\"measured\"}", b->first_figure ? "" : ",", name, value, unit);
    else
        printf("%-52s %12.3f %s (measured)\n", name, value, unit);
    b->first_figure = 0;
}

/* Median CPU time of a tensor create+destroy pair, with a few hundred live tensors around. */
static int bench_memory(bench *b)
{
    enum { LIVE = 300, BATCH = 20000, ROUNDS = 15 };
    mcl_tensor *live[LIVE];
    for (int i = 0; i < LIVE; i++) {
        int64_t n = 1024 * (1 + i % 17);
        if (mcl_tensor_create(b->ctx, MCL_DTYPE_F32, 1, &n, &live[i]) != MCL_SUCCESS)
            return 1;
    }
    double per_round[ROUNDS];
    int64_t n = 65536; /* 256 KiB */
    for (int r = 0; r < ROUNDS; r++) {
        double start = now_seconds();
        for (int i = 0; i < BATCH; i++) {
            mcl_tensor *t;
            if (mcl_tensor_create(b->ctx, MCL_DTYPE_F32, 1, &n, &t) != MCL_SUCCESS)
                return 1;
            mcl_tensor_destroy(t);
        }
        per_round[r] = (now_seconds() - start) / BATCH;
    }
    figure(b, "tensor create+destroy pair, 256 KiB, 300 live (median)",
           median(per_round, ROUNDS) * 1e9, "ns");
    for (int i = 0; i < LIVE; i++)
        mcl_tensor_destroy(live[i]);
    return 0;
}

/* A plain vkCmdCopyBuffer of `bytes` from `src` to `dst` buffers, submit and wait: the
 * reference the staged transfers are measured against. */
static double raw_copy_seconds(mcl_context *ctx, VkBuffer src, VkBuffer dst, uint64_t bytes)
{
    mcl_stream_finish(ctx);
    mcl_stream_begin(ctx);
    VkBufferCopy region = {.size = bytes};
    double start = now_seconds();
    ctx->vk.vkCmdCopyBuffer(mcl_stream_cmd(ctx), src, dst, 1, &region);
    mcl_stream_barrier_to_host(ctx);
    mcl_stream_finish(ctx);
    return now_seconds() - start;
}

static int bench_transfer(bench *b)
{
    static const uint64_t sizes[] = {1 * MIB, 64 * MIB, 1024 * MIB};
    mcl_context *ctx = b->ctx;
    mcl_memory_stats stats = {.size = sizeof stats};
    mcl_context_memory_stats(ctx, &stats);
    const char *path = stats.zero_copy ? "zero-copy"
                       : ctx->allocator.transfer_mode == MCL_TRANSFER_STAGING
                           ? "staged (ring)"
                       : (ctx->info.features_enabled & MCL_FEATURE_EXTERNAL_HOST_MEMORY)
                           ? (ctx->allocator.transfer_mode == MCL_TRANSFER_IMPORT
                                  ? "imported caller memory"
                                  : "imported caller memory from 4 MiB, staged below")
                           : "staged (ring)";
    mcl_witness_set_note(b->witness, "transfer_path", path);
    if (!b->json)
        printf("transfer path: %s\n", path);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t bytes = sizes[k];
        if (bytes > ctx->info.max_storage_buffer_range)
            continue;
        char *host = malloc(bytes);
        if (!host)
            return 1;
        memset(host, 1, bytes);
        mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_U8, .ndim = 1,
                                .shape = {(int64_t)bytes}};
        mcl_tensor *t;
        if (mcl_tensor_create_ex(ctx, &desc, &t) != MCL_SUCCESS) {
            free(host);
            continue;
        }
        double up[32], down[32], raw_up[32], raw_down[32];
        int reps = b->repeat < 32 ? b->repeat : 32;
        for (int r = 0; r < reps; r++) {
            double start = now_seconds();
            mcl_tensor_upload(t, 0, host, bytes);
            mcl_finish(ctx);
            up[r] = now_seconds() - start;
            start = now_seconds();
            mcl_tensor_download(t, 0, host, bytes);
            down[r] = now_seconds() - start;
        }
        /* The reference: the whole transfer as one vkCmdCopyBuffer between the tensor and a
         * host-visible buffer of the staging ring's memory type, data already in place. */
        mcl_block *raw = NULL;
        int have_raw = mcl_host_block_create(ctx, bytes, &raw) == MCL_SUCCESS;
        for (int r = 0; have_raw && r < reps; r++) {
            raw_up[r] = raw_copy_seconds(ctx, raw->buffer, t->alloc.block->buffer, bytes);
            raw_down[r] = raw_copy_seconds(ctx, t->alloc.block->buffer, raw->buffer, bytes);
        }
        const double gb = (double)bytes / 1e9;
        char name[128];
        snprintf(name, sizeof name, "upload %llu MiB", (unsigned long long)(bytes / MIB));
        figure(b, name, gb / median(up, reps), "GB/s");
        snprintf(name, sizeof name, "download %llu MiB", (unsigned long long)(bytes / MIB));
        figure(b, name, gb / median(down, reps), "GB/s");
        if (have_raw) {
            double ru = gb / median(raw_up, reps), rd = gb / median(raw_down, reps);
            snprintf(name, sizeof name, "plain vkCmdCopyBuffer host->device %llu MiB",
                     (unsigned long long)(bytes / MIB));
            figure(b, name, ru, "GB/s");
            snprintf(name, sizeof name, "plain vkCmdCopyBuffer device->host %llu MiB",
                     (unsigned long long)(bytes / MIB));
            figure(b, name, rd, "GB/s");
            snprintf(name, sizeof name, "upload %llu MiB vs plain copy",
                     (unsigned long long)(bytes / MIB));
            figure(b, name, 100.0 * (gb / median(up, reps)) / ru, "%");
            snprintf(name, sizeof name, "download %llu MiB vs plain copy",
                     (unsigned long long)(bytes / MIB));
            figure(b, name, 100.0 * (gb / median(down, reps)) / rd, "%");
            mcl_host_block_destroy(ctx, raw);
        }
        mcl_tensor_destroy(t);
        free(host);
    }
    return 0;
}

int main(int argc, char **argv)
{
    bench b = {.first_figure = 1, .repeat = 7};
    const char *what = NULL, *dir = getenv("MOTIFCL_WITNESS_DIR");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            b.json = 1;
        else if (strcmp(argv[i], "--witness-dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            b.repeat = atoi(argv[++i]);
        else if (!what && argv[i][0] != '-')
            what = argv[i];
        else
            what = "help";
    }
    if (!what || strcmp(what, "help") == 0 || b.repeat < 1) {
        fprintf(stderr, "usage: %s memory|transfer [--json] [--witness-dir DIR] [--repeat N]\n",
                argv[0]);
        return 1;
    }
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_status status = mcl_context_create(&desc, &b.ctx);
    if (status != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-bench: no context: %s\n", mcl_status_string(status));
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "motifcl-bench-%s", what);
    b.witness = mcl_witness_create("bench", name, argc, argv);
    mcl_witness_set_device(b.witness, b.ctx);
    if (b.json)
        printf("{\n  \"device\": \"%s\",\n  \"figures\": [", b.ctx->info.name);
    else
        printf("device: %s (%s)\n", b.ctx->info.name, b.ctx->info.driver_info);

    int rc;
    if (strcmp(what, "memory") == 0)
        rc = bench_memory(&b);
    else if (strcmp(what, "transfer") == 0)
        rc = bench_transfer(&b);
    else {
        fprintf(stderr, "motifcl-bench: unknown benchmark \"%s\"\n", what);
        rc = 1;
    }
    if (b.json)
        printf("\n  ]\n}\n");
    mcl_witness_set_device(b.witness, b.ctx);
    if (mcl_witness_write(b.witness, dir ? dir : ".", rc ? "failed" : "passed") != 0)
        fprintf(stderr, "motifcl-bench: could not write the witness into %s\n", dir ? dir : ".");
    mcl_witness_destroy(b.witness);
    mcl_context_destroy(b.ctx);
    return rc;
}
