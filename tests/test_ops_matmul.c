/* mcl_matmul against a double-precision CPU reference: the matrix-vector path (1 to 8 rows
 * against a [N, K] weight) and the tiled GEMM in its NN, NT and TN forms, batched and not,
 * with and without bias, on shapes that cross every tile boundary (64 and 128 wide tiles, 16
 * deep K steps), that split K into slices summed by a second pass, and that take both the
 * vec4 and the scalar load paths.
 *
 * Tolerance: each output is a K-term FP32 sum whose rounding error grows like eps*sqrt(K)
 * relative to the terms (the GEMV's tree reduction and the GEMM's fma chain both do); for
 * K <= 4100 that is about 1e-5 relative, so NMSE (a squared relative error) of 1e-9 leaves
 * an order of magnitude of margin, and any indexing or tiling mistake gives NMSE near 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref/ref.h"
#include "ops/ops_internal.h"
#include "vk/inspect.h"

#define TOLERANCE 1e-9

static mcl_context *ctx;

typedef struct problem {
    int64_t batch, m, n, k;
    int ta, tb, shared_b, bias;
} problem;

static mcl_tensor *make(const float *data, uint32_t ndim, const int64_t *shape)
{
    return mcl_test_tensor(ctx, MCL_DTYPE_F32, ndim, shape, data);
}

/* Run one problem; returns its NMSE (and records it). `wrong_tb` computes the reference with
 * b's transpose flag flipped: the negative control. */
static double run(const problem *p, int wrong_tb)
{
    int64_t sa = p->batch * p->m * p->k, sb = (p->shared_b ? 1 : p->batch) * p->k * p->n;
    int64_t sc = p->batch * p->m * p->n;
    float *a = malloc((size_t)sa * 4), *b = malloc((size_t)sb * 4), *bias = malloc((size_t)p->n * 4);
    float *got = malloc((size_t)sc * 4), *want = malloc((size_t)sc * 4);
    assert_true(a && b && bias && got && want);
    mcl_fill_random(a, (size_t)sa, 11, -1, 1);
    mcl_fill_random(b, (size_t)sb, 12, -1, 1);
    mcl_fill_random(bias, (size_t)p->n, 13, -1, 1);

    int64_t shape_a[3] = {p->batch, p->ta ? p->k : p->m, p->ta ? p->m : p->k};
    int64_t shape_b[3] = {p->batch, p->tb ? p->n : p->k, p->tb ? p->k : p->n};
    int64_t shape_c[3] = {p->batch, p->m, p->n};
    int batched = p->batch > 1;
    mcl_tensor *ta = make(a, batched ? 3 : 2, batched ? shape_a : shape_a + 1);
    mcl_tensor *tb = make(b, batched && !p->shared_b ? 3 : 2,
                          batched && !p->shared_b ? shape_b : shape_b + 1);
    mcl_tensor *tc = make(NULL, batched ? 3 : 2, batched ? shape_c : shape_c + 1);
    mcl_tensor *tbias = p->bias ? make(bias, 1, &p->n) : NULL;
    assert_mcl_ok(mcl_matmul(ctx, ta, p->ta ? MCL_TRANSPOSE : MCL_NO_TRANSPOSE, tb,
                             p->tb ? MCL_TRANSPOSE : MCL_NO_TRANSPOSE, tbias, tc));
    assert_mcl_ok(mcl_tensor_download(tc, 0, got, (uint64_t)sc * 4));
    int ref_tb = wrong_tb ? !p->tb : p->tb;
    ref_matmul_f32(a, p->ta, b, ref_tb, p->bias ? bias : NULL, want, p->batch, p->m, p->n, p->k,
                   p->shared_b);
    double nmse = mcl_nmse(got, want, (size_t)sc);
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(tc);
    mcl_tensor_destroy(tbias);
    free(a);
    free(b);
    free(bias);
    free(got);
    free(want);
    return nmse;
}

static void check(const problem *p, const char *path)
{
    double nmse = run(p, 0);
    char name[160];
    snprintf(name, sizeof name, "%s %s%s batch=%lld m=%lld n=%lld k=%lld%s%s", path,
             p->ta ? "T" : "N", p->tb ? "T" : "N", (long long)p->batch, (long long)p->m,
             (long long)p->n, (long long)p->k, p->bias ? " bias" : "",
             p->shared_b && p->batch > 1 ? " shared-b" : "");
    printf("%-70s nmse %.3g\n", name, nmse);
    int passed = mcl_test_record(name, "nmse", nmse, TOLERANCE);
    if (!passed)
        fail_msg("%s: nmse %g above %g", name, nmse, TOLERANCE);
}

static void gemv_path(void **state)
{
    (void)state;
    static const problem cases[] = {
        {1, 1, 1, 1, 0, 1, 1, 0},
        {1, 1, 1031, 4096, 0, 1, 1, 1},   /* vec4 loads, four per step, and a tail */
        {1, 3, 37, 4099, 0, 1, 1, 0},     /* K not a multiple of 4: scalar loads */
        {1, 8, 257, 515, 0, 1, 1, 1},     /* the most rows the path takes */
        {2, 3, 129, 64, 0, 1, 1, 1},      /* batches of a 2-D weight fold into 6 rows */
        {4, 2, 100, 4096, 0, 1, 1, 1},    /* and into 8 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(&cases[i], "gemv");
}

/* The GEMV's edges, for every row count (one row reads x from memory, 2 to 8 stage it in
 * shared memory in chunks of K: 64, 96 or 128 vec4s depending on rows and device): K not a
 * multiple of the chunk, a whole number of chunks, shorter than one chunk and than one vec4
 * per invocation, K not a multiple of 4 (scalar loads, the last vec4 of a row 1 to 3 long),
 * and N not a multiple of the 32 rows of a staged workgroup (or the 4 of a direct one). */
static void gemv_edges(void **state)
{
    (void)state;
    static const int64_t nk[][2] = {
        {77, 1000},   /* 250 vec4s: 2.6 / 3.9 / 1.95 chunks of 96 / 64 / 128 */
        {33, 1001},   /* K % 4 == 1 */
        {31, 1002},   /* K % 4 == 2 */
        {65, 1535},   /* K % 4 == 3 */
        {40, 768},    /* exactly 2 chunks of 96, 3 of 64, 1.5 of 128 */
        {32, 512},    /* exactly 1 chunk of 128, 2 of 64; one workgroup's rows */
        {5, 36},      /* shorter than a chunk, fewer vec4s than invocations of a row group */
        {3, 7},       /* a single partial vec4 */
        {1, 1},
        {129, 4100},  /* many chunks and a tail */
    };
    for (size_t i = 0; i < sizeof nk / sizeof nk[0]; i++) {
        for (int64_t m = 1; m <= 8; m++) {
            problem p = {1, m, nk[i][0], nk[i][1], 0, 1, 1, (int)((i + (size_t)m) % 2)};
            check(&p, "gemv");
        }
    }
}

/* More workgroups than fit in one grid dimension (65535): the grid folds into a second one. */
static void gemv_large_grid(void **state)
{
    (void)state;
    static const problem cases[] = {
        {1, 1, 4 * 65535 + 5, 4, 0, 1, 1, 1},   /* one row: 4 rows of w per workgroup */
        {1, 2, 32 * 65535 + 7, 4, 0, 1, 1, 0},  /* staged: 32 rows of w per workgroup */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(&cases[i], "gemv");
}

/* MOTIFCL_GEMV_PLAN (a tuning override) reaches shapes the rule never takes: x read from
 * memory at several rows, 1, 2, 3 and 8 rows of w a row group, 1 to 3 vec4s a chunk,
 * workgroups of 64, 96 and 128 invocations. Each fits 32 KiB of
 * shared memory at 8 rows of x, so each must be taken (the plan query shows it) and still
 * compute the product at every row count on edge shapes. Plans that cannot fit (more
 * invocations than a workgroup holds; row groups that do not divide it; a key of the
 * quantized GEMV) are refused, and the rule's plan stays. */
static void gemv_plan_override(void **state)
{
    (void)state;
    enum { T = 1, G = 2, NR = 4, U = 8 };
    static const struct {
        const char *text;
        uint32_t keys;    /* the fields the override sets; 0: refused, the rule's plan stays */
        uint32_t plan[4]; /* t, g, nr, u where set */
    } plans[] = {
        {"u=0,nr=1", NR | U, {0, 0, 1, 0}},
        {"nr=8,u=1", NR | U, {0, 0, 8, 1}},
        {"nr=2,u=2", NR | U, {0, 0, 2, 2}},
        {"t=128,g=4,u=2", T | G | U, {128, 4, 0, 2}},
        {"t=64,g=2,nr=1,u=3", T | G | NR | U, {64, 2, 1, 3}},
        {"nr=3,u=2", NR | U, {0, 0, 3, 2}},
        {"t=96,g=3,u=1", T | G | U, {96, 3, 0, 1}},
        {"t=100000", 0, {0}},
        {"g=7", 0, {0}},
        {"st=1", 0, {0}},
    };
    static const int64_t nk[][2] = {{77, 1001}, {40, 768}, {3, 7}, {129, 4100}};
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        for (uint32_t m = 1; m <= 8; m++) {
            uint32_t rule[4], got[4];
            mcl_test_switch_env(ctx, "MOTIFCL_GEMV_PLAN", NULL);
            assert_mcl_ok(mcl_gemv_f32_plan(ctx, m, 77, rule));
            mcl_test_switch_env(ctx, "MOTIFCL_GEMV_PLAN", plans[i].text);
            assert_mcl_ok(mcl_gemv_f32_plan(ctx, m, 77, got));
            for (int f = 0; f < 4; f++) {
                uint32_t want = plans[i].keys & (1u << f) ? plans[i].plan[f] : rule[f];
                if (got[f] != want)
                    fail_msg("MOTIFCL_GEMV_PLAN=%s at %u rows: field %d is %u, %u expected",
                             plans[i].text, m, f, got[f], want);
            }
            for (size_t s = 0; s < sizeof nk / sizeof nk[0]; s++) {
                problem p = {1, m, nk[s][0], nk[s][1], 0, 1, 1, (int)((i + m + s) % 2)};
                check(&p, plans[i].text);
            }
        }
    }
    mcl_test_switch_env(ctx, "MOTIFCL_GEMV_PLAN", NULL);
}

/* The GEMV's rule where it was measured (H100, 8 rows of x, docs/tuning.md "FP32 GEMV"): 2
 * vec4s a chunk on the wide grid of 14336 rows of w (448 workgroups), 4 on 4096 rows (128),
 * and 4 at 2 to 4 rows of x on either; fewer where the shared memory does not hold the chunks
 * (3 on Lavapipe's 32 KiB); 2 on AMD and under the polaris profile; one row reads x from
 * memory. */
static void gemv_rule(void **state)
{
    (void)state;
    const mcl_traits *tr = mcl_inspect_traits(ctx);
    if (tr->gemv_f32.set) {
        mcl_test_note("gemv rule", "MOTIFCL_GEMV_PLAN is set: the rule is not consulted");
        return;
    }
    static const struct {
        uint32_t rows, n, steps;
    } cases[] = {{8, 14336, 2}, {8, 4096, 4}, {5, 8192, 2}, {5, 8160, 4},
                 {4, 14336, 4}, {2, 4096, 4}, {1, 14336, 0}};
    int passed = 1;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint32_t plan[4];
        assert_mcl_ok(mcl_gemv_f32_plan(ctx, cases[i].rows, cases[i].n, plan));
        uint32_t want = cases[i].steps;
        if (want && tr->device_class != MCL_CLASS_GENERIC)
            want = 2;
        /* Two chunks of `rows` x 32 lanes x `steps` vec4s must fit the shared memory. */
        while (want > 1 && 2ull * cases[i].rows * 32u * want * 16u + 4u > tr->max_shared_bytes)
            want--;
        char name[96];
        snprintf(name, sizeof name, "gemv plan for %u rows of x, %u of w: %u steps",
                 cases[i].rows, cases[i].n, plan[3]);
        int ok = plan[3] == want && plan[2] == (want ? 4u : 1u);
        printf("%-70s %s\n", name, ok ? "as the rule says" : "NOT the rule");
        passed &= mcl_test_record_bool(name, ok);
    }
    assert_true(passed);
}

static void gemm_path(void **state)
{
    (void)state;
    static const problem cases[] = {
        {1, 9, 1, 1, 0, 0, 1, 0},
        {1, 7, 13, 5, 0, 0, 1, 1},        /* smaller than one tile, scalar loads */
        {1, 129, 131, 67, 0, 0, 1, 1},    /* NN: three tiles each way, K steps with a tail */
        {1, 129, 131, 67, 0, 1, 1, 0},    /* NT */
        {1, 129, 131, 67, 1, 0, 1, 1},    /* TN */
        {1, 256, 192, 64, 0, 0, 1, 0},    /* exact multiples, vec4 everywhere */
        {1, 256, 192, 64, 1, 0, 1, 0},
        {1, 9, 300, 128, 0, 1, 1, 1},     /* 9 rows: just past the matrix-vector path */
        {3, 65, 33, 17, 0, 0, 0, 1},      /* batched a and b */
        {3, 65, 33, 17, 1, 0, 1, 0},      /* batched TN with a shared b */
        {2, 40, 70, 24, 0, 1, 0, 0},      /* batched NT */
        {1, 100, 70, 2050, 0, 0, 1, 1},   /* few tiles, long K: split into 8 K slices */
        {1, 100, 70, 2050, 0, 1, 1, 0},   /* split NT */
        {1, 100, 70, 2051, 1, 0, 1, 1},   /* split TN, K not a multiple of 4 */
        {2, 33, 65, 1030, 0, 0, 0, 1},    /* split, batched */
        {1, 1300, 1290, 96, 0, 0, 1, 1},  /* enough tiles for the 8 x 8 shapes: 128 x 64 */
        {1, 1300, 1290, 96, 1, 0, 1, 0},
        {1, 1300, 1280, 96, 0, 1, 1, 0},  /* 64 x 128 pads less */
        {1, 1280, 1300, 100, 0, 0, 1, 1}, /* 128 x 64 pads less */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(&cases[i], "gemm");
}

/* Every tile shape in both shared-memory schemes (single and double buffered), called
 * directly: the library picks one per device, so the other would go untested. The shapes run
 * several K steps with a tail, so the double buffer swaps several times. */
static void gemm_tile_variants(void **state)
{
    (void)state;
    /* The double-buffered scheme, which gemm_path does not reach (the library chooses the
     * single-buffered one); the 128 x 128 tiles of both device classes, 16 x 8 an invocation
     * in K steps of 8 and 8 x 8 in steps of 16 and 32 (AMD's waves of 64, the last for a
     * transposed B where the shared memory holds it; the 64 x 64 one runs where that does
     * not, Lavapipe's 32 KiB); few enough pipelines that a driver that compiles large tiles
     * slowly (12-14 s each on an H100, 59-66 s before their K step was unrolled 4 at a time)
     * keeps the suite short. */
    static const mcl_gemm_config configs[] = {
        {128, 128, 16, 8, 8, 1}, {64, 64, 16, 4, 4, 1}, {128, 128, 8, 16, 8, 0},
        {128, 128, 16, 8, 8, 0}, {128, 128, 32, 8, 8, 0}, {64, 64, 32, 4, 4, 0},
    };
    static const problem cases[] = {
        {1, 129, 131, 67, 0, 0, 1, 0},
        {1, 130, 70, 301, 0, 1, 1, 0},
        {1, 70, 140, 150, 1, 0, 1, 0},
    };
    int passed = 1;
    for (size_t c = 0; c < sizeof configs / sizeof *configs; c++) {
        const mcl_gemm_config *cfg = &configs[c];
        if (mcl_gemm_shared_bytes(cfg, cfg->db) > mcl_inspect_traits(ctx)->max_shared_bytes)
            continue;
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            const problem *p = &cases[i];
            size_t na = (size_t)(p->m * p->k), nb = (size_t)(p->k * p->n),
                   nc = (size_t)(p->m * p->n);
            float *a = mcl_test_random_floats(na, 21, -1, 1);
            float *b = mcl_test_random_floats(nb, 22, -1, 1);
            float *got = mcl_test_floats(nc), *want = mcl_test_floats(nc);
            int64_t sa[2] = {p->ta ? p->k : p->m, p->ta ? p->m : p->k};
            int64_t sb[2] = {p->tb ? p->n : p->k, p->tb ? p->k : p->n};
            int64_t sc[2] = {p->m, p->n};
            mcl_tensor *ta = make(a, 2, sa), *tb = make(b, 2, sb), *tc = make(NULL, 2, sc);
            assert_mcl_ok(mcl_gemm_dispatch(ctx, cfg, ta, p->ta, tb, p->tb, NULL, tc,
                                            (uint32_t)p->m, (uint32_t)p->n, (uint32_t)p->k, 1,
                                            0, 0));
            assert_mcl_ok(mcl_tensor_download(tc, 0, got, nc * 4));
            ref_matmul_f32(a, p->ta, b, p->tb, NULL, want, 1, p->m, p->n, p->k, 1);
            double nmse = mcl_nmse(got, want, nc);
            char name[160];
            snprintf(name, sizeof name, "gemm tile %ux%ux%u/%ux%u %s %s%s m=%lld n=%lld k=%lld",
                     cfg->bm, cfg->bn, cfg->bk, cfg->tm, cfg->tn,
                     cfg->db ? "double-buffered" : "single-buffered", p->ta ? "T" : "N",
                     p->tb ? "T" : "N", (long long)p->m, (long long)p->n, (long long)p->k);
            printf("%-78s nmse %.3g\n", name, nmse);
            passed &= mcl_test_record(name, "nmse", nmse, TOLERANCE);
            mcl_tensor_destroy(ta), mcl_tensor_destroy(tb), mcl_tensor_destroy(tc);
            free(a), free(b), free(got), free(want);
        }
    }
    assert_true(passed);
}

/* The tile rule (docs/tuning.md, "FP32 GEMM") on the training step's and the benchmark's
 * shapes: what a device is given is decided here, not by the shapes the tests above happen to
 * run. */
static void gemm_tile_rule(void **state)
{
    (void)state;
    if (mcl_inspect_traits(ctx)->gemm_f32_tile[0]) {
        mcl_test_note("gemm tile rule", "MOTIFCL_GEMM_TILE is set: the rule is not consulted");
        return;
    }
    static const struct {
        uint64_t m, n;
        uint32_t k;
        int tb;
        uint32_t bm, bn, tm, tn, bk;
    } cases[] = {
        {4096, 512, 14336, 0, 128, 128, 16, 8, 8}, /* long slices of K, no more padding */
        {4096, 512, 14336, 1, 128, 128, 16, 8, 8},
        {4096, 4096, 4096, 0, 128, 128, 16, 8, 8},
        {4096, 32000, 288, 1, 128, 64, 8, 8, 16},  /* short K */
        {4096, 288, 32000, 0, 128, 64, 8, 8, 16},  /* 128 x 128 would pad N from 288 to 384 */
        {32000, 288, 4096, 0, 128, 64, 8, 8, 16},
        {4096, 768, 288, 0, 128, 64, 8, 8, 16},    /* equal padding: 128 x 64 */
        {1300, 1280, 96, 0, 64, 128, 8, 8, 16},    /* 64 x 128 pads less */
        {4096, 288, 768, 1, 128, 64, 8, 8, 16},    /* 160 tiles, two slices of K */
        {4096, 288, 288, 1, 64, 64, 4, 4, 16},     /* 160 tiles, one slice: too few workgroups */
        {768, 288, 4096, 0, 128, 64, 8, 8, 16},    /* a weight's gradient: 30 tiles, 16 slices */
        {100, 70, 2050, 0, 64, 64, 4, 4, 16},
    };
    /* On AMD's waves of 64 (the polaris profile) the 128 x 128 tile is 8 x 8 an invocation in
     * K steps of 16, or 32 for a transposed B where the device's shared memory holds that. */
    const int wave64 = mcl_inspect_traits(ctx)->device_class == MCL_CLASS_AMD_WAVE64;
    const mcl_gemm_config deep = {.bm = 128, .bn = 128, .bk = 32, .tm = 8, .tn = 8};
    const int deep_fits =
        mcl_gemm_shared_bytes(&deep, 0) <= mcl_inspect_traits(ctx)->max_shared_bytes;
    int passed = 1;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mcl_gemm_config cfg;
        mcl_gemm_tiles(ctx, cases[i].m, cases[i].n, cases[i].k, 1, cases[i].tb, &cfg);
        uint32_t tm = cases[i].tm, tn = cases[i].tn, bk = cases[i].bk;
        if (wave64 && tm == 16) {
            tm = 8;
            bk = cases[i].tb && deep_fits ? 32 : 16;
        }
        int ok = cfg.bm == cases[i].bm && cfg.bn == cases[i].bn && cfg.tm == tm &&
                 cfg.tn == tn && cfg.bk == bk && !cfg.db;
        char name[120];
        snprintf(name, sizeof name, "gemm tile for %llux%llu, K %u%s: %ux%ux%u/%ux%u",
                 (unsigned long long)cases[i].m, (unsigned long long)cases[i].n, cases[i].k,
                 cases[i].tb ? " (B transposed)" : "", cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn);
        passed &= mcl_test_record_bool(name, ok);
    }
    /* The K step's unroll (docs/tuning.md, "The K step's unroll"): 512 multiply-adds of an
     * invocation at a time, so 4 values of K for 16 x 8 (8 took the NVIDIA compiler 59-66 s a
     * pipeline at the same rate), 8 for 8 x 8, the whole step below 64 accumulators. */
    static const struct {
        mcl_gemm_config cfg;
        uint32_t ku;
    } unrolls[] = {
        {{128, 128, 8, 16, 8, 0}, 4}, {{128, 64, 16, 8, 8, 0}, 8},
        {{128, 128, 32, 8, 8, 0}, 8}, {{64, 64, 16, 4, 4, 0}, 16},
    };
    const uint32_t forced = mcl_inspect_traits(ctx)->gemm_f32_unroll;
    for (size_t i = 0; i < sizeof unrolls / sizeof *unrolls && !forced; i++) {
        const mcl_gemm_config *cfg = &unrolls[i].cfg;
        uint32_t ku = mcl_gemm_unroll(ctx, cfg);
        char name[120];
        snprintf(name, sizeof name, "gemm tile %ux%ux%u/%ux%u: K step unrolled %u at a time",
                 cfg->bm, cfg->bn, cfg->bk, cfg->tm, cfg->tn, ku);
        passed &= mcl_test_record_bool(name, ku == unrolls[i].ku);
    }
    assert_true(passed);
}

/* The same comparison with a wrong reference must fail, or passing it means nothing. */
static void negative_control(void **state)
{
    (void)state;
    problem p = {1, 64, 64, 64, 0, 1, 1, 0};
    double nmse = run(&p, 1);
    int caught = nmse > TOLERANCE;
    mcl_test_record_bool("negative control: reference with b's transpose flipped is caught",
                         caught);
    assert_true(caught);
}

static void bad_arguments(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s24[2] = {2, 4}, s25[2] = {2, 5}, s5[1] = {5};
    mcl_tensor *a = make(NULL, 2, s23), *b = make(NULL, 2, s34), *c = make(NULL, 2, s24);
    mcl_tensor *wrong = make(NULL, 2, s25), *bias5 = make(NULL, 1, s5), *i32;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, s34, &i32));
    assert_mcl_ok(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, b, MCL_NO_TRANSPOSE, NULL, c));
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, b, MCL_NO_TRANSPOSE, NULL, wrong),
                     MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, b, MCL_TRANSPOSE, NULL, c),
                     MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, a, MCL_TRANSPOSE, b, MCL_TRANSPOSE, NULL, c),
                     MCL_ERROR_UNSUPPORTED);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, b, MCL_NO_TRANSPOSE, bias5, c),
                     MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, i32, MCL_NO_TRANSPOSE, NULL, c),
                     MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, b, MCL_NO_TRANSPOSE, NULL, a),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_matmul(ctx, a, (mcl_transpose)7, b, MCL_NO_TRANSPOSE, NULL, c),
                     MCL_ERROR_INVALID_ARGUMENT);
    mcl_tensor_destroy(a);
    mcl_tensor_destroy(b);
    mcl_tensor_destroy(c);
    mcl_tensor_destroy(wrong);
    mcl_tensor_destroy(bias5);
    mcl_tensor_destroy(i32);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemv_path),
        cmocka_unit_test(gemv_edges),
        cmocka_unit_test(gemv_large_grid),
        cmocka_unit_test(gemv_plan_override),
        cmocka_unit_test(gemv_rule),
        cmocka_unit_test(gemm_path),
        cmocka_unit_test(gemm_tile_variants),
        cmocka_unit_test(gemm_tile_rule),
        cmocka_unit_test(negative_control),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
