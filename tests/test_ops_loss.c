/* Softmax cross-entropy against the double-precision CPU reference: ignored rows (targets -1,
 * V, far out of range), all rows ignored, one row of one class, a 32k vocabulary with logits
 * near 1000, more rows than the 65535 workgroups of one dispatch dimension, and repeat runs.
 *
 * Tolerances:
 *  - loss: |got - want| / max(|want|, 1) <= 1e-5. Each row's logsumexp is m + log(s) with s a
 *    float sum of up to V / 128 exps per invocation merged over a 7-level tree: relative error
 *    of s at most ~(V / 128 + 7) * 2^-24 (1.5e-5 for V = 32003, far less typically), which is
 *    an absolute error of that size in log(s); the mean over rows averages it further. A row
 *    wrongly counted or left out moves the mean by ~1 / N relative (>= 3e-3 here).
 *  - lse: NMSE <= 1e-11 (RMS relative error ~3e-6; lse is >= log(V) in size, so the absolute
 *    error above is small relative to it).
 *  - all rows ignored: exactly 0, not NaN. Repeat runs: bit-identical (no atomics). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref/ref.h"

#define LOSS_TOLERANCE 1e-5
#define LSE_TOLERANCE 1e-11

static mcl_context *ctx;

typedef struct loss_case {
    int64_t rows, vocab;
    float lo, hi;       /* logits drawn from [lo, hi) */
    int ignore_every;   /* every ignore_every-th row gets a target outside [0, V); 0: none */
    int all_ignored;
    int want_lse;
} loss_case;

typedef struct loss_data {
    float *logits, *lse, *want_lse;
    int32_t *targets;
    double want;
    float loss;
    mcl_tensor *tl, *tt, *tloss, *tlse;
} loss_data;

static void setup(loss_data *d, const loss_case *c, uint32_t seed)
{
    static const int32_t bad[] = {-1, 0 /* V, set below */, 1 << 20, INT32_MIN, -100};
    size_t n = (size_t)(c->rows * c->vocab);
    d->logits = malloc(n * 4);
    d->targets = malloc((size_t)c->rows * 4);
    d->lse = malloc((size_t)c->rows * 4);
    d->want_lse = malloc((size_t)c->rows * 4);
    assert_true(d->logits && d->targets && d->lse && d->want_lse);
    mcl_fill_random(d->logits, n, seed, c->lo, c->hi);
    for (int64_t r = 0; r < c->rows; r++) {
        int ignored = c->all_ignored || (c->ignore_every && r % c->ignore_every == 1);
        int32_t b = bad[(r / (c->ignore_every ? c->ignore_every : 1)) % 5];
        d->targets[r] = ignored ? (b == 0 ? (int32_t)c->vocab : b)
                                : (int32_t)((r * 7919 + 13) % c->vocab);
    }
    d->want = ref_cross_entropy_f32(d->logits, d->targets, c->rows, c->vocab, d->want_lse, 0);
    int64_t l_shape[2] = {c->rows, c->vocab}, one = 1;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, l_shape, &d->tl));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &c->rows, &d->tt));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &one, &d->tloss));
    d->tlse = NULL;
    if (c->want_lse)
        assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &c->rows, &d->tlse));
    assert_mcl_ok(mcl_tensor_upload(d->tl, 0, d->logits, n * 4));
    assert_mcl_ok(mcl_tensor_upload(d->tt, 0, d->targets, (size_t)c->rows * 4));
}

static void run(loss_data *d, const loss_case *c)
{
    d->loss = NAN;
    assert_mcl_ok(mcl_tensor_upload(d->tloss, 0, &d->loss, 4));
    assert_mcl_ok(mcl_cross_entropy(ctx, d->tl, d->tt, d->tloss, d->tlse));
    assert_mcl_ok(mcl_tensor_download(d->tloss, 0, &d->loss, 4));
    if (d->tlse)
        assert_mcl_ok(mcl_tensor_download(d->tlse, 0, d->lse, (size_t)c->rows * 4));
}

static void teardown(loss_data *d)
{
    mcl_tensor_destroy(d->tl);
    mcl_tensor_destroy(d->tt);
    mcl_tensor_destroy(d->tloss);
    mcl_tensor_destroy(d->tlse);
    free(d->logits);
    free(d->targets);
    free(d->lse);
    free(d->want_lse);
}

static double loss_error(double got, double want)
{
    return fabs(got - want) / fmax(fabs(want), 1.0);
}

static void loss_matches_reference(void **state)
{
    (void)state;
    static const loss_case cases[] = {
        /* rows, vocab, lo, hi, ignore every, all ignored, lse */
        {67, 1000, -8.0f, 8.0f, 5, 0, 1},
        {1, 1, -3.0f, 3.0f, 0, 0, 1},
        {3, 7, -3.0f, 3.0f, 0, 0, 0},
        {300, 32003, 980.0f, 1020.0f, 7, 0, 0},
        {129, 257, -80.0f, 80.0f, 2, 0, 1},
        {70001, 3, -4.0f, 4.0f, 3, 0, 1},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const loss_case *c = &cases[i];
        loss_data d;
        setup(&d, c, (uint32_t)i + 1);
        run(&d, c);
        char name[128];
        snprintf(name, sizeof name, "cross-entropy N=%lld V=%lld logits [%g, %g)%s",
                 (long long)c->rows, (long long)c->vocab, (double)c->lo, (double)c->hi,
                 c->ignore_every ? " with ignored rows" : "");
        double err = loss_error(d.loss, d.want);
        printf("%s: loss %.9g want %.9g, error %.3g\n", name, (double)d.loss, d.want, err);
        failed += !mcl_test_record(name, "error / max(|loss|, 1)", err, LOSS_TOLERANCE);
        if (c->want_lse) {
            double nmse = mcl_nmse(d.lse, d.want_lse, (size_t)c->rows);
            printf("%s: lse nmse %.3g\n", name, nmse);
            strcat(name, " lse");
            failed += !mcl_test_record(name, "nmse", nmse, LSE_TOLERANCE);
        }
        teardown(&d);
    }
    assert_int_equal(failed, 0);
}

static void all_rows_ignored_give_zero(void **state)
{
    (void)state;
    const loss_case c = {5, 10, -2.0f, 2.0f, 0, 1, 1};
    loss_data d;
    setup(&d, &c, 3);
    run(&d, &c);
    printf("all rows ignored: loss %g\n", (double)d.loss);
    int passed = mcl_test_record_bool("cross-entropy with every row ignored is exactly 0",
                                      d.loss == 0.0f);
    passed &= mcl_test_record("cross-entropy with every row ignored: lse", "nmse",
                              mcl_nmse(d.lse, d.want_lse, 5), LSE_TOLERANCE);
    teardown(&d);
    assert_true(passed);
}

static void repeat_runs_are_identical(void **state)
{
    (void)state;
    const loss_case c = {257, 3001, -6.0f, 6.0f, 4, 0, 1};
    loss_data d;
    setup(&d, &c, 11);
    run(&d, &c);
    float first_loss = d.loss;
    float *first_lse = malloc((size_t)c.rows * 4);
    assert_non_null(first_lse);
    memcpy(first_lse, d.lse, (size_t)c.rows * 4);
    int same = 1;
    for (int i = 0; i < 3; i++) {
        run(&d, &c);
        same &= memcmp(&first_loss, &d.loss, 4) == 0 &&
                memcmp(first_lse, d.lse, (size_t)c.rows * 4) == 0;
    }
    int passed = mcl_test_record_bool("cross-entropy repeats bit for bit", same);
    free(first_lse);
    teardown(&d);
    assert_true(passed);
}

/* A loss captured in a graph and replayed with new logits: the per-row scratch, destroyed by
 * the op during the capture, must live on with the graph. */
static void graph_replays_loss(void **state)
{
    (void)state;
    const loss_case c = {67, 1000, -8.0f, 8.0f, 5, 0, 1};
    loss_data d;
    setup(&d, &c, 21);
    mcl_graph *graph = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_cross_entropy(ctx, d.tl, d.tt, d.tloss, d.tlse));
    assert_mcl_ok(mcl_graph_end(ctx, &graph));
    int passed = 1;
    size_t n = (size_t)(c.rows * c.vocab);
    for (uint32_t replay = 0; replay < 2; replay++) {
        mcl_fill_random(d.logits, n, 500 + replay, -8.0f, 8.0f);
        d.want = ref_cross_entropy_f32(d.logits, d.targets, c.rows, c.vocab, d.want_lse, 0);
        assert_mcl_ok(mcl_tensor_upload(d.tl, 0, d.logits, n * 4));
        assert_mcl_ok(mcl_graph_replay(ctx, graph));
        assert_mcl_ok(mcl_tensor_download(d.tloss, 0, &d.loss, 4));
        assert_mcl_ok(mcl_tensor_download(d.tlse, 0, d.lse, (size_t)c.rows * 4));
        char name[96];
        snprintf(name, sizeof name, "graph: cross-entropy replay %u with new logits", replay + 1);
        double err = loss_error(d.loss, d.want);
        printf("%s: error %.3g\n", name, err);
        passed &= mcl_test_record(name, "error / max(|loss|, 1)", err, LOSS_TOLERANCE);
        strcat(name, " lse");
        passed &= mcl_test_record(name, "nmse", mcl_nmse(d.lse, d.want_lse, (size_t)c.rows),
                                  LSE_TOLERANCE);
    }
    mcl_graph_destroy(graph);
    teardown(&d);
    assert_true(passed);
}

/* References that count ignored rows in the mean, or take the lse of the wrong row, must fail
 * the tolerances. */
static void negative_controls(void **state)
{
    (void)state;
    const loss_case c = {67, 1000, -8.0f, 8.0f, 5, 0, 1};
    loss_data d;
    setup(&d, &c, 1);
    run(&d, &c);
    double all_rows = ref_cross_entropy_f32(d.logits, d.targets, c.rows, c.vocab, NULL, 1);
    double err = loss_error(d.loss, all_rows);
    float first = d.want_lse[0];
    d.want_lse[0] = d.want_lse[1];
    d.want_lse[1] = first;
    double nmse = mcl_nmse(d.lse, d.want_lse, (size_t)c.rows);
    printf("negative controls: mean over all rows error %.3g, swapped lse rows nmse %.3g\n", err,
           nmse);
    int caught = err > LOSS_TOLERANCE && nmse > LSE_TOLERANCE;
    mcl_test_record_bool("negative control: a mean over ignored rows and swapped lse rows are "
                         "detected", caught);
    teardown(&d);
    assert_true(caught);
}


static void bad_arguments(void **state)
{
    (void)state;
    const int64_t s_logits[2] = {4, 10}, s4 = 4, s5 = 5, s1 = 1, s2 = 2, s3d[3] = {1, 4, 10};
    mcl_tensor *logits, *targets, *loss, *lse, *t5, *f4, *loss2, *l3, *i1;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, s_logits, &logits));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &s4, &targets));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &s1, &loss));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &s4, &lse));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &s5, &t5));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &s4, &f4));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &s2, &loss2));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 3, s3d, &l3));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &s1, &i1));

    EXPECT_STATUS(mcl_cross_entropy(NULL, logits, targets, loss, NULL), INVALID);
    EXPECT_STATUS(mcl_cross_entropy(ctx, logits, NULL, loss, NULL), INVALID);
    EXPECT_STATUS(mcl_cross_entropy(ctx, logits, f4, loss, NULL), DTYPE);
    EXPECT_STATUS(mcl_cross_entropy(ctx, logits, targets, i1, NULL), DTYPE);
    EXPECT_STATUS(mcl_cross_entropy(ctx, logits, t5, loss, NULL), SHAPE);
    EXPECT_STATUS(mcl_cross_entropy(ctx, logits, targets, loss2, NULL), SHAPE);
    EXPECT_STATUS(mcl_cross_entropy(ctx, logits, targets, loss, loss2), SHAPE);
    EXPECT_STATUS(mcl_cross_entropy(ctx, l3, targets, loss, NULL), SHAPE);
    EXPECT_STATUS(mcl_cross_entropy(ctx, logits, targets, lse, lse), SHAPE);

    mcl_tensor *all[] = {logits, targets, loss, lse, t5, f4, loss2, l3, i1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    int passed = mcl_test_record("cross-entropy: bad arguments give the documented statuses",
                                 "wrong statuses", mcl_test_wrong_statuses, 0);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loss_matches_reference),
        cmocka_unit_test(all_rows_ignored_give_zero),
        cmocka_unit_test(repeat_runs_are_identical),
        cmocka_unit_test(graph_replays_loss),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
