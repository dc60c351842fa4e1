/* Allocator and transfer benchmarks: CPU cost of tensor create+destroy pairs, upload /
 * download rates against a plain vkCmdCopyBuffer between the same kinds of memory, and how
 * fast a tensor reads right after its upload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "io/mapped.h"

/* Median CPU time of a tensor create+destroy pair, with a few hundred live tensors around. */
int bench_memory(bench *b)
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
        double start = bench_now();
        for (int i = 0; i < BATCH; i++) {
            mcl_tensor *t;
            if (mcl_tensor_create(b->ctx, MCL_DTYPE_F32, 1, &n, &t) != MCL_SUCCESS)
                return 1;
            mcl_tensor_destroy(t);
        }
        per_round[r] = (bench_now() - start) / BATCH;
    }
    bench_figure(b, "tensor create+destroy pair, 256 KiB, 300 live (median)",
           bench_median(per_round, ROUNDS) * 1e9, "ns");
    for (int i = 0; i < LIVE; i++)
        mcl_tensor_destroy(live[i]);
    return 0;
}

/* The stream read of t (n floats), ten times, each waited for, right after t's upload from
 * `host`: the first and the tenth read's rates. On NVIDIA a tensor written from a file's
 * imported pages read at host-memory speed for a while (docs/models.md, "Loading"); this
 * shows whether an upload by the path in use leaves a tensor slow to read. */
static int read_after_upload(bench *b, mcl_tensor *t, mcl_tensor *sink, const void *host,
                             uint64_t bytes, const char *from)
{
    stream_run s = {.x = t, .y = sink, .n4 = (uint32_t)(bytes / 16)};
    if (bench_stream_prepare(b, &s, 0) != MCL_SUCCESS ||
        mcl_tensor_upload(t, 0, host, bytes) != MCL_SUCCESS || mcl_finish(b->ctx) != MCL_SUCCESS)
        return 1;
    double rate[10];
    for (int i = 0; i < 10; i++) {
        double start = bench_now();
        if (bench_stream_once(b, &s, i) != MCL_SUCCESS || mcl_finish(b->ctx) != MCL_SUCCESS)
            return 1;
        rate[i] = (double)bytes / 1e9 / (bench_now() - start);
    }
    char name[160];
    snprintf(name, sizeof name, "a read of %llu MiB right after its upload from %s, the first",
             (unsigned long long)(bytes / MIB), from);
    bench_figure(b, name, rate[0], "GB/s");
    snprintf(name, sizeof name, "a read of %llu MiB right after its upload from %s, the tenth",
             (unsigned long long)(bytes / MIB), from);
    bench_figure(b, name, rate[9], "GB/s");
    return 0;
}

/* read_after_upload from anonymous memory and from a file's mapping (written to dir). */
static int reads_after_uploads(bench *b, uint64_t bytes)
{
    int64_t n = (int64_t)(bytes / 4);
    mcl_tensor *t = NULL, *sink = NULL;
    char path[256];
    snprintf(path, sizeof path, "/tmp/motifcl-bench-transfer-%d", (int)getpid());
    float *host = malloc(bytes);
    int rc = 1;
    FILE *f = NULL;
    if (!host || mcl_tensor_create(b->ctx, MCL_DTYPE_F32, 1, &n, &t) != MCL_SUCCESS ||
        mcl_tensor_create(b->ctx, MCL_DTYPE_F32, 1, &n, &sink) != MCL_SUCCESS)
        goto done;
    for (int64_t i = 0; i < n; i++)
        host[i] = (float)(i & 1023);
    if (read_after_upload(b, t, sink, host, bytes, "anonymous memory") != 0 ||
        !(f = fopen(path, "wb")) || fwrite(host, 1, bytes, f) != bytes || fclose(f) != 0) {
        if (f)
            fclose(f);
        goto done;
    }
    char why[256];
    mcl_mapped file = {0};
    if (mcl_mapped_open(path, &file, why, sizeof why) == MCL_SUCCESS) {
        rc = read_after_upload(b, t, sink, file.data, bytes, "a file's mapping");
        mcl_mapped_close(&file);
    }
done:
    unlink(path);
    free(host);
    mcl_tensor_destroy(t);
    mcl_tensor_destroy(sink);
    return rc;
}

int bench_transfer(bench *b)
{
    static const uint64_t sizes[] = {1 * MIB, 64 * MIB, 1024 * MIB};
    mcl_context *ctx = b->ctx;
    mcl_memory_stats stats = {.size = sizeof stats};
    mcl_context_memory_stats(ctx, &stats);
    const mcl_traits *traits = mcl_traits_of(ctx);
    const char *path = stats.zero_copy ? "zero-copy"
                       : traits->transfer == MCL_TRANSFER_STAGING
                           ? "staged (ring)"
                       : traits->external_host_memory
                           ? (traits->transfer == MCL_TRANSFER_IMPORT
                                  ? "imported caller memory"
                                  : "imported caller memory from 4 MiB, staged below")
                           : "staged (ring)";
    mcl_witness_set_note(b->witness, "transfer_path", path);
    if (!b->json)
        printf("transfer path: %s\n", path);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t bytes = sizes[k];
        if (bytes > traits->max_binding_bytes)
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
            double start = bench_now();
            mcl_tensor_upload(t, 0, host, bytes);
            mcl_finish(ctx);
            up[r] = bench_now() - start;
            start = bench_now();
            mcl_tensor_download(t, 0, host, bytes);
            down[r] = bench_now() - start;
        }
        /* The reference: the whole transfer as one vkCmdCopyBuffer between the tensor and a
         * host-visible buffer of the staging ring's memory type, data already in place. */
        mcl_raw_buffer *raw = NULL;
        int have_raw = mcl_raw_buffer_create(ctx, bytes, &raw) == MCL_SUCCESS;
        for (int r = 0; have_raw && r < reps; r++) {
            have_raw = mcl_raw_copy(ctx, raw, t, bytes, 1, &raw_up[r]) == MCL_SUCCESS &&
                       mcl_raw_copy(ctx, raw, t, bytes, 0, &raw_down[r]) == MCL_SUCCESS;
        }
        /* From and into pinned memory (mcl_host_alloc): no CPU copy, no page pinning. */
        double pin_up[32], pin_down[32];
        void *pinned = NULL;
        int have_pinned = mcl_host_alloc(ctx, bytes, &pinned) == MCL_SUCCESS;
        for (int r = 0; have_pinned && r < reps; r++) {
            double start = bench_now();
            mcl_tensor_upload(t, 0, pinned, bytes);
            pin_up[r] = bench_now() - start;
            start = bench_now();
            mcl_tensor_download(t, 0, pinned, bytes);
            pin_down[r] = bench_now() - start;
        }
        mcl_host_free(ctx, pinned);
        const double gb = (double)bytes / 1e9;
        char name[128];
        snprintf(name, sizeof name, "upload %llu MiB", (unsigned long long)(bytes / MIB));
        bench_figure(b, name, gb / bench_median(up, reps), "GB/s");
        snprintf(name, sizeof name, "download %llu MiB", (unsigned long long)(bytes / MIB));
        bench_figure(b, name, gb / bench_median(down, reps), "GB/s");
        if (have_raw && have_pinned) {
            double ru = gb / bench_median(raw_up, reps), rd = gb / bench_median(raw_down, reps);
            double pu = gb / bench_median(pin_up, reps), pd = gb / bench_median(pin_down, reps);
            snprintf(name, sizeof name, "upload %llu MiB from mcl_host_alloc memory",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, pu, "GB/s");
            snprintf(name, sizeof name, "download %llu MiB into mcl_host_alloc memory",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, pd, "GB/s");
            snprintf(name, sizeof name, "pinned upload %llu MiB vs plain copy",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, 100.0 * pu / ru, "%");
            snprintf(name, sizeof name, "pinned download %llu MiB vs plain copy",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, 100.0 * pd / rd, "%");
        }
        if (have_raw) {
            double ru = gb / bench_median(raw_up, reps), rd = gb / bench_median(raw_down, reps);
            snprintf(name, sizeof name, "plain vkCmdCopyBuffer host->device %llu MiB",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, ru, "GB/s");
            snprintf(name, sizeof name, "plain vkCmdCopyBuffer device->host %llu MiB",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, rd, "GB/s");
            snprintf(name, sizeof name, "upload %llu MiB vs plain copy",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, 100.0 * (gb / bench_median(up, reps)) / ru, "%");
            snprintf(name, sizeof name, "download %llu MiB vs plain copy",
                     (unsigned long long)(bytes / MIB));
            bench_figure(b, name, 100.0 * (gb / bench_median(down, reps)) / rd, "%");
        }
        mcl_raw_buffer_destroy(raw);
        mcl_tensor_destroy(t);
        free(host);
    }
    uint64_t read_bytes = 256 * MIB;
    if (read_bytes > traits->max_binding_bytes)
        read_bytes = traits->max_binding_bytes / 4096 * 4096;
    return reads_after_uploads(b, read_bytes);
}

