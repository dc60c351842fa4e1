/* CPU cost of mcl_tlsf alloc+free pairs. Build:
 *   cc -std=c11 -O2 -Isrc/vk src/vk/tlsf.c tools/bench_tlsf.c -o bench_tlsf
 * Prints the median over 21 batches of ns per pair for two workloads:
 * "steady" frees right after allocating (256 KiB, 256-byte aligned, with a
 * few hundred live allocations of mixed size around it); "churn" frees a
 * random live allocation and allocates a mixed-size replacement each step. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tlsf.h"

#define BATCHES 21
#define PAIRS_PER_BATCH 50000
#define LIVE 400

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_tlsf: %s failed (%d)\n", what, rc);
    exit(1);
}

static double median(double *v)
{
    qsort(v, BATCHES, sizeof *v, cmp_double);
    return v[BATCHES / 2];
}

int main(void)
{
    const uint64_t block = UINT64_C(1) << 32;
    mcl_tlsf *t;
    int rc = mcl_tlsf_create(block, &t);
    if (rc) die("create", rc);

    /* Fragment the block: allocate LIVE*2 mixed sizes, free every other. */
    uint64_t seed = 1, live[LIVE * 2];
    for (int i = 0; i < LIVE * 2; i++) {
        uint64_t size = 4096u + rng(&seed) % (4u << 20);
        if ((rc = mcl_tlsf_alloc(t, size, 256, &live[i]))) die("setup alloc", rc);
    }
    for (int i = 0; i < LIVE * 2; i += 2)
        if ((rc = mcl_tlsf_free(t, live[i]))) die("setup free", rc);
    for (int i = 0; i < LIVE; i++) live[i] = live[2 * i + 1];

    double steady[BATCHES], churn[BATCHES];
    volatile uint64_t sink = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int i = 0; i < PAIRS_PER_BATCH; i++) {
            uint64_t off;
            if ((rc = mcl_tlsf_alloc(t, 256u << 10, 256, &off))) die("alloc", rc);
            if ((rc = mcl_tlsf_free(t, off))) die("free", rc);
            sink += off;
        }
        steady[b] = (now_ns() - t0) / PAIRS_PER_BATCH;
    }
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int i = 0; i < PAIRS_PER_BATCH; i++) {
            size_t k = (size_t)(rng(&seed) % LIVE);
            if ((rc = mcl_tlsf_free(t, live[k]))) die("free", rc);
            uint64_t size = 1u + rng(&seed) % (4u << 20);
            if ((rc = mcl_tlsf_alloc(t, size, UINT64_C(1) << (rng(&seed) % 13u), &live[k])))
                die("alloc", rc);
        }
        churn[b] = (now_ns() - t0) / PAIRS_PER_BATCH;
    }
    struct mcl_tlsf_stats st;
    mcl_tlsf_stats(t, &st);
    printf("tlsf alloc+free, %" PRIu64 " live, %" PRIu64 " free ranges, %d x %d pairs\n",
           st.allocation_count, st.free_range_count, BATCHES, PAIRS_PER_BATCH);
    printf("steady 256 KiB: median %.1f ns per pair\n", median(steady));
    printf("churn mixed:    median %.1f ns per pair\n", median(churn));
    (void)sink;
    mcl_tlsf_destroy(t);
    return 0;
}
