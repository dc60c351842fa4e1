/* motifcl-bench decode's figures of a mixture's expert cache (expert_mib=M): two more decode
 * runs under the cache, the rates at which the device reads host memory and uploads through
 * the staging path, and what two models make of them (a prefetch's ceiling, an RX 580). */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

/* Bytes of the host-to-device measurements: larger than the caches, and within one binding on
 * any device (Vulkan's least maxStorageBufferRange). */
#define HOST_RATE_BYTES (128ull << 20)

/* The device reading host memory (a copy out of a host-pool tensor into a device tensor), and
 * an upload through the staging path: GB/s each, the best of three; the first into *read. */
static int host_rates(bench *b, const char *label, double *read)
{
    int64_t n = (int64_t)(HOST_RATE_BYTES / 4);
    mcl_tensor *host = NULL, *dev = NULL;
    float *data = calloc((size_t)n, sizeof *data);
    int rc = 1;
    if (!data || mcl_tensor_create_host_pool(b->ctx, MCL_DTYPE_F32, 1, &n, &host) != MCL_SUCCESS ||
        mcl_tensor_create(b->ctx, MCL_DTYPE_F32, 1, &n, &dev) != MCL_SUCCESS ||
        mcl_tensor_upload(host, 0, data, HOST_RATE_BYTES) != MCL_SUCCESS ||
        mcl_finish(b->ctx) != MCL_SUCCESS)
        goto done;
    double best_read = 1e30, best_upload = 1e30;
    for (int i = 0; i < 3; i++) {
        double t0 = bench_now();
        if (mcl_copy(b->ctx, host, dev) != MCL_SUCCESS || mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
        double t1 = bench_now();
        if (mcl_tensor_upload(dev, 0, data, HOST_RATE_BYTES) != MCL_SUCCESS ||
            mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
        double t2 = bench_now();
        best_read = t1 - t0 < best_read ? t1 - t0 : best_read;
        best_upload = t2 - t1 < best_upload ? t2 - t1 : best_upload;
    }
    char name[160];
    *read = HOST_RATE_BYTES / best_read / 1e9;
    snprintf(name, sizeof name, "%s: the device reading host memory (a copy of 128 MiB)", label);
    bench_figure(b, name, *read, "GB/s");
    snprintf(name, sizeof name, "%s: an upload through the staging path (128 MiB)", label);
    bench_figure(b, name, HOST_RATE_BYTES / best_upload / 1e9, "GB/s");
    rc = 0;
done:
    mcl_tensor_destroy(host);
    mcl_tensor_destroy(dev);
    free(data);
    return rc;
}

/* What a decode run under the expert cache measured: seconds a token, and the bytes a token
 * took across the bus (experts copied into slots and experts read in place). */
typedef struct expert_figures {
    double seconds, bus_bytes;
} expert_figures;

/* One more decode run of `steps` tokens under the expert cache: tokens/s, hit rate and bytes
 * moved per token (the counts' differences over the run). Each step feeds the token sampled
 * after the last or, with varied, the prompt's next token (distinct tokens, where the sampled
 * ones repeat). */
static int expert_decode(bench *b, mcl_session *s, const int32_t *tokens, uint32_t prompt,
                         uint32_t steps, const char *label, int varied, expert_figures *out)
{
    mcl_expert_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    /* The prompt's pass finished before the clock starts: mcl_session_feed returns with it
     * still running, and the first token would wait for it. */
    if (mcl_session_reset(s, 0) != MCL_SUCCESS ||
        mcl_session_feed(s, 0, tokens, prompt, NULL) != MCL_SUCCESS ||
        mcl_finish(b->ctx) != MCL_SUCCESS ||
        mcl_session_expert_stats(s, &before) != MCL_SUCCESS)
        return 1;
    double t0 = bench_now();
    int32_t next = tokens[0];
    for (uint32_t i = 0; i < steps; i++) {
        if (mcl_session_feed(s, 0, &next, 1, NULL) != MCL_SUCCESS ||
            mcl_session_sample(s, 0, NULL, &next) != MCL_SUCCESS)
            return 1;
        if (varied)
            next = tokens[(i + 1) % prompt];
    }
    double t = (bench_now() - t0) / steps;
    if (mcl_session_expert_stats(s, &after) != MCL_SUCCESS)
        return 1;
    uint64_t hits = after.hits - before.hits, misses = after.misses - before.misses;
    uint64_t in_place = after.pool_reads - before.pool_reads;
    char name[200];
    const char *how = varied ? ", the prompt's tokens fed" : "";
    if (!varied) {
        snprintf(name, sizeof name, "%s: expert cache, %u slots a layer (%.0f MiB)", label,
                 after.slots, (double)after.cache_bytes / 1048576.0);
        bench_figure(b, name, after.slots, "slots");
    }
    snprintf(name, sizeof name, "%s: decode under the expert cache, one sequence%s", label, how);
    bench_figure(b, name, 1.0 / t, "tokens/s");
    snprintf(name, sizeof name, "%s: expert hit rate over the decode%s", label, how);
    bench_figure(b, name, hits + misses + in_place
                              ? 100.0 * (double)hits / (double)(hits + misses + in_place)
                              : 0.0, "%");
    double moved = (double)(after.bytes_moved - before.bytes_moved) / steps;
    double read_in_place =
        (double)(after.bytes_read_in_place - before.bytes_read_in_place) / steps;
    snprintf(name, sizeof name, "%s: expert bytes moved per decoded token%s", label, how);
    bench_figure(b, name, moved / 1048576.0, "MiB");
    snprintf(name, sizeof name, "%s: expert bytes read in place per decoded token%s", label,
             how);
    bench_figure(b, name, read_in_place / 1048576.0, "MiB");
    out->seconds = t;
    out->bus_bytes = moved + read_in_place;
    return 0;
}

/* What two models make of a decode run under the expert cache, each labelled modeled. The
 * token's time is split into the bus's part (its bytes at the rate the device read host
 * memory in this run, at most the token's time) and the rest (the step's own work, measured
 * minus the bus's part).
 * - A prefetch of the next layer's experts can at best run the bus's part beside the rest:
 *   a token then takes the longer of the two, not their sum. The ceiling of any prefetch,
 *   however well it guesses, on this routing.
 * - An RX 580 under the same budget and routing: the same bus bytes at BENCH_RX580_BUS_GBS,
 *   the rest scaled by the stream rates (this run's measured against the card's 256 GB/s), as
 *   if its share of the stream read were this device's; dispatch latencies, which do not
 *   scale so, are left out. */
static void expert_models(bench *b, const expert_figures *f, double host_read_gbs,
                          const char *label, const char *how)
{
    if (host_read_gbs <= 0 || f->seconds <= 0)
        return;
    /* At most the token: the copy measured apart can run slower than the step's own copies
     * did (an H100 at cf442cd: 100.5 ms of bytes at its rate in a token of 98.9 ms), and a
     * prefetch's ceiling below the measured rate would be no ceiling. */
    double bus = f->bus_bytes / (host_read_gbs * 1e9);
    if (bus > f->seconds)
        bus = f->seconds;
    double rest = f->seconds - bus;
    char name[240];
    snprintf(name, sizeof name, "%s: under the expert cache, the bus's part of a token%s",
             label, how);
    bench_modeled(b, name, bus * 1e3, "ms");
    snprintf(name, sizeof name,
             "%s: under the expert cache, a perfect prefetch's ceiling (bus beside the rest)%s",
             label, how);
    bench_modeled(b, name, 1.0 / (bus > rest ? bus : rest), "tokens/s");
    if (b->stream_read_gbs <= 0)
        return;
    double rx = f->bus_bytes / (BENCH_RX580_BUS_GBS * 1e9) +
                rest * b->stream_read_gbs / BENCH_RX580_GBS;
    snprintf(name, sizeof name,
             "%s: an RX 580 under this expert budget and routing (bus at %.0f GB/s, the rest "
             "at %.0f GB/s)%s", label, BENCH_RX580_BUS_GBS, BENCH_RX580_GBS, how);
    bench_modeled(b, name, 1.0 / rx, "tokens/s");
}

int bench_expert_run(bench *b, mcl_session *s, const int32_t *tokens, uint32_t prompt,
                     uint32_t steps, const char *label)
{
    expert_figures sampled, varied;
    double host_read = 0;
    if (expert_decode(b, s, tokens, prompt, steps, label, 0, &sampled) != 0 ||
        expert_decode(b, s, tokens, prompt, steps, label, 1, &varied) != 0 ||
        host_rates(b, label, &host_read) != 0)
        return 1;
    expert_models(b, &sampled, host_read, label, "");
    expert_models(b, &varied, host_read, label, ", the prompt's tokens fed");
    return 0;
}
