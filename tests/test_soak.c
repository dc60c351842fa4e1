/* Soak: many cycles of context create, model open, a session decoding a few tokens, and
 * teardown, with the host and device memory recorded at each cycle; they must stay flat.
 *
 *   host: the library's live allocations (mcl_mem_live) after each teardown, exactly as
 *         before the first cycle; the process's resident set (/proc/self/statm) may grow by
 *         at most RSS_TOLERANCE between the end of the warm-up and the last cycle, and, in a
 *         run of LONG_RUN cycles or more, by at most RSS_TOLERANCE_LONG over its second half.
 *         On Lavapipe the resident set grows by about 4 MiB over the first 80 cycles (the C
 *         library's and the driver's heaps settling) and is flat to within 100 KiB from
 *         there to cycle 500: a brief run catches a large leak, a long one a small leak. The
 *         suite runs it alone (RUN_SERIAL): on an H100 the resident set grew by 11.4 MiB
 *         with 16 suites beside it, by at most 0.7 MiB alone;
 *   device: the context's allocator statistics with the model and the session open (bytes
 *         of live tensors, bytes reserved in blocks) the same at every cycle, and no tensor
 *         bytes left once the session and the model are closed.
 * MOTIFCL_SOAK_CYCLES sets the number of cycles (default 50, the suite's brief run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "model_fixtures.h"
#include "core/alloc.h"

#define DEFAULT_CYCLES 50
#define WARMUP 10
/* Resident-set growth allowed after the warm-up (heaps still settling; a leak of 200 KiB a
 * cycle fails 50 cycles), and over the second half of a long run (a leak of 10 KiB a cycle
 * fails 200 cycles). */
#define RSS_TOLERANCE (8u << 20)
#define LONG_RUN 200
#define RSS_TOLERANCE_LONG (1u << 20)

static char gguf_path[512];

/* The process's resident set in bytes (Linux), or 0. */
static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long pages = 0, resident = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%llu %llu", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

typedef struct cycle_figures {
    int64_t live;               /* mcl_mem_live() after teardown */
    uint64_t rss;               /* after teardown */
    uint64_t device_allocated;  /* with the model and session open */
    uint64_t device_reserved;
    uint64_t device_left;       /* tensor bytes after the session and model closed */
} cycle_figures;

static void cycle(cycle_figures *out)
{
    static const int32_t prompt[5] = {1, 17, 42, 99, 5};
    mcl_context_desc cd = {.size = sizeof cd, .device_index = -1};
    mcl_context *ctx = NULL;
    mcl_model *m = NULL;
    mcl_session *s = NULL;
    float logits[128];
    assert_mcl_ok(mcl_context_create(&cd, &ctx));
    assert_mcl_ok(mcl_model_open(ctx, gguf_path, NULL, &m));
    mcl_session_desc sd = {.size = sizeof sd, .sequences = 1, .batch_tokens = 8};
    assert_mcl_ok(mcl_session_create(m, &sd, &s));
    assert_mcl_ok(mcl_session_feed(s, 0, prompt, 5, logits));
    for (int t = 0; t < 4; t++) {
        int32_t next = 0;
        assert_mcl_ok(mcl_session_sample(s, 0, NULL, &next));
        assert_mcl_ok(mcl_session_feed(s, 0, &next, 1, logits));
    }
    mcl_memory_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_context_memory_stats(ctx, &st));
    out->device_allocated = st.bytes_allocated;
    out->device_reserved = st.bytes_reserved + st.staging_bytes;
    mcl_session_destroy(s);
    mcl_model_close(m);
    assert_mcl_ok(mcl_finish(ctx));
    assert_mcl_ok(mcl_context_memory_stats(ctx, &st));
    out->device_left = st.bytes_allocated;
    mcl_context_destroy(ctx);
    out->live = mcl_mem_live();
    out->rss = rss_bytes();
}

static void soak(void **state)
{
    (void)state;
    int cycles = DEFAULT_CYCLES;
    const char *v = getenv("MOTIFCL_SOAK_CYCLES");
    if (v && *v)
        cycles = atoi(v);
    assert_true(cycles > WARMUP);
    int64_t live0 = mcl_mem_live();
    uint64_t rss0 = rss_bytes();
    cycle_figures first = {0}, warm = {0}, half = {0}, c = {0};
    uint64_t rss_max = 0;
    int live_wrong = 0, device_wrong = 0;
    printf("cycle  live allocations  RSS (KiB)  device allocated  device reserved  left\n");
    for (int i = 1; i <= cycles; i++) {
        cycle(&c);
        if (i == 1)
            first = c;
        if (i == WARMUP)
            warm = c;
        if (i == cycles / 2)
            half = c;
        if (i > WARMUP && c.rss > rss_max)
            rss_max = c.rss;
        live_wrong += c.live != live0;
        device_wrong += c.device_allocated != first.device_allocated ||
                        c.device_reserved != first.device_reserved || c.device_left != 0;
        if (i <= 2 || i == WARMUP || i % 10 == 0 || i == cycles)
            printf("%5d  %16lld  %9llu  %16llu  %15llu  %4llu\n", i, (long long)c.live,
                   (unsigned long long)(c.rss >> 10), (unsigned long long)c.device_allocated,
                   (unsigned long long)c.device_reserved, (unsigned long long)c.device_left);
    }
    uint64_t growth = c.rss > warm.rss ? c.rss - warm.rss : 0;
    printf("%d cycles: library live allocations %lld before, %lld after every cycle "
           "(%d differ); RSS %llu KiB before, %llu KiB after warm-up (cycle %d), %llu KiB at "
           "the end (growth after warm-up %lld KiB, peak %llu KiB); device %llu bytes of "
           "tensors and %llu bytes reserved per cycle (%d cycles differ)\n",
           cycles, (long long)live0, (long long)c.live, live_wrong,
           (unsigned long long)(rss0 >> 10), (unsigned long long)(warm.rss >> 10), WARMUP,
           (unsigned long long)(c.rss >> 10), (long long)growth / 1024,
           (unsigned long long)(rss_max >> 10), (unsigned long long)first.device_allocated,
           (unsigned long long)first.device_reserved, device_wrong);
    mcl_test_record_figure("soak: cycles", cycles, "cycles");
    mcl_test_record_figure("soak: RSS after warm-up", (double)warm.rss, "bytes");
    mcl_test_record_figure("soak: RSS at the end", (double)c.rss, "bytes");
    mcl_test_record_figure("soak: device bytes reserved per cycle",
                           (double)first.device_reserved, "bytes");
    assert_true(mcl_test_record_bool("soak: library live allocations flat (exact)",
                                     live_wrong == 0));
    assert_true(mcl_test_record_bool("soak: device memory the same every cycle, none left",
                                     device_wrong == 0));
    assert_true(mcl_test_record("soak: RSS growth after warm-up", "bytes", (double)growth,
                                RSS_TOLERANCE));
    if (cycles >= LONG_RUN) {
        uint64_t late = c.rss > half.rss ? c.rss - half.rss : 0;
        printf("RSS over the second half (cycles %d to %d): %llu KiB to %llu KiB\n", cycles / 2,
               cycles, (unsigned long long)(half.rss >> 10), (unsigned long long)(c.rss >> 10));
        assert_true(mcl_test_record("soak: RSS growth over the second half", "bytes",
                                    (double)late, RSS_TOLERANCE_LONG));
    }
}

/* Negative control: the checks above see a cycle that keeps one library allocation. */
static void negative_control(void **state)
{
    (void)state;
    int64_t live0 = mcl_mem_live();
    void *kept = mcl_mem_malloc(64);
    assert_non_null(kept);
    int seen = mcl_mem_live() != live0;
    mcl_mem_free(kept);
    assert_true(mcl_test_record_bool("negative control: one kept allocation changes the live "
                                     "count",
                                     seen && mcl_mem_live() == live0));
}

static int setup(void **state)
{
    if (mcl_test_scratch_setup(state) != 0)
        return -1;
    model_fixture_desc d = {0};
    d.dim = 64;
    d.layers = 2;
    d.heads = 2;
    d.kv_heads = 1;
    d.hidden = 128;
    d.vocab = 128;
    d.context = 32;
    d.seed = 9;
    model_fixture f;
    if (model_fixture_create(&d, &f) != MCL_SUCCESS)
        return -1;
    snprintf(gguf_path, sizeof gguf_path, "%s/soak.gguf", mcl_test_scratch_dir());
    mcl_status s = model_fixture_write_gguf(&f, gguf_path);
    model_fixture_free(&f);
    return s == MCL_SUCCESS ? 0 : -1;
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(negative_control),
        cmocka_unit_test(soak),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, setup, mcl_test_scratch_teardown));
}
