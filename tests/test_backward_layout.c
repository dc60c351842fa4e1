/* Backward passes of RoPE, embedding and cross-entropy against the double-precision CPU
 * references and against central finite differences (double, on a CPU forward), plus
 * determinism, ignored rows, in-place use, a graph replay, negative controls and bad
 * arguments.
 *
 * Tolerances:
 *  - against the references: NMSE <= 1e-11 (RoPE: one float rotation with the same angle
 *    bits, relative error a few 1e-7; cross-entropy: exp in float of x - lse, relative error
 *    ~1e-6 on each probability at these sizes, NMSE ~1e-12; embedding: float sums of at most
 *    ~20 terms in the reference's order, relative error ~1e-6 at worst).
 *  - finite differences: max |got - fd| / max |fd| <= 1e-4, fd = (L(x + h) - L(x - h)) / 2h
 *    in double with h = 1e-3 on L = sum(w * forward(x)) (RoPE, embedding: linear, so the
 *    difference is exact up to double rounding) or L = dloss * mean cross-entropy (smooth:
 *    truncation ~h^2 |L'''| ~1e-7 here). The float gradient's own error is ~1e-6 relative.
 *  - embedding with repeated ids: two runs bit-identical. Every row ignored: exactly zero. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref/ref.h"

#define REF_TOLERANCE 1e-11
#define FD_TOLERANCE 1e-4
#define FD_STEP 1e-3
#define FD_SAMPLES 48

static mcl_context *ctx;

static double max_abs(const double *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

/* max |got[idx[k]] - fd[k]| / max |fd|: the finite-difference check. */
static double fd_error(const float *got, const size_t *idx, const double *fd, size_t k)
{
    double err = 0.0;
    for (size_t i = 0; i < k; i++)
        err = fmax(err, fabs((double)got[idx[i]] - fd[i]));
    double scale = max_abs(fd, k);
    return scale > 0.0 ? err / scale : err;
}

static size_t sample_index(size_t k, size_t n)
{
    return (size_t)(((uint64_t)k * 2654435761u + 17u) % n);
}

/* ---------------------------------------------------------------- RoPE */

typedef struct rope_shape {
    int64_t b, t, h, dh, offset;
    int split;
} rope_shape;

/* L = sum(w * rope(x)) in double, with the shader's angle (ref_rope_angle). */
static double rope_loss(const double *x, const float *w, const rope_shape *s, float theta)
{
    double total = 0.0;
    int64_t half = s->dh / 2;
    for (int64_t row = 0; row < s->b * s->t * s->h; row++) {
        int64_t pos = s->offset + (row / s->h) % s->t;
        for (int64_t i = 0; i < half; i++) {
            double a = (double)ref_rope_angle(theta, s->dh, i, pos);
            int64_t i0 = row * s->dh + (s->split ? i : 2 * i);
            int64_t i1 = s->split ? i0 + half : i0 + 1;
            total += w[i0] * (x[i0] * cos(a) - x[i1] * sin(a)) +
                     w[i1] * (x[i0] * sin(a) + x[i1] * cos(a));
        }
    }
    return total;
}

static void rope_backward_matches(void **state)
{
    (void)state;
    static const rope_shape shapes[] = {
        {2, 5, 3, 16, 7, 0},
        {2, 5, 3, 16, 7, 1},
        {1, 33, 2, 64, 1000, 1},
    };
    const float theta = 10000.0f;
    int failed = 0;
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const rope_shape *s = &shapes[c];
        int64_t shape[4] = {s->b, s->t, s->h, s->dh};
        size_t n = (size_t)(s->b * s->t * s->h * s->dh);
        float *dy = mcl_test_random_floats(n, 100 + (uint32_t)c, -1.0f, 1.0f);
        float *x = mcl_test_random_floats(n, 200 + (uint32_t)c, -1.0f, 1.0f);
        float *got = mcl_test_floats(n), *want = mcl_test_floats(n), *round = mcl_test_floats(n);
        mcl_tensor *tdy = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, dy);
        mcl_tensor *tdx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, NULL);
        mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, x);
        mcl_rope_layout layout = s->split ? MCL_ROPE_SPLIT_HALF : MCL_ROPE_INTERLEAVED;
        assert_mcl_ok(mcl_rope_backward(ctx, tdy, layout, theta, s->offset, tdx));
        assert_mcl_ok(mcl_tensor_download(tdx, 0, got, n * 4));
        ref_rope_backward_f32(dy, want, s->b, s->t, s->h, s->dh, s->split, theta, s->offset, 0);
        char name[128];
        snprintf(name, sizeof name, "rope backward [%lld,%lld,%lld,%lld] offset %lld %s",
                 (long long)s->b, (long long)s->t, (long long)s->h, (long long)s->dh,
                 (long long)s->offset, s->split ? "split-half" : "interleaved");
        double nmse = mcl_nmse(got, want, n);
        printf("%s: nmse %.3g\n", name, nmse);
        failed += !mcl_test_record(name, "nmse vs reference", nmse, REF_TOLERANCE);

        /* Finite differences of L = sum(dy * rope(x)) give dL/dx = rope_backward(dy). */
        double *xd = malloc(n * sizeof *xd), fd[FD_SAMPLES];
        size_t idx[FD_SAMPLES];
        assert_non_null(xd);
        for (size_t i = 0; i < n; i++)
            xd[i] = x[i];
        for (size_t k = 0; k < FD_SAMPLES; k++) {
            idx[k] = sample_index(k, n);
            double keep = xd[idx[k]];
            xd[idx[k]] = keep + FD_STEP;
            double up = rope_loss(xd, dy, s, theta);
            xd[idx[k]] = keep - FD_STEP;
            double down = rope_loss(xd, dy, s, theta);
            xd[idx[k]] = keep;
            fd[k] = (up - down) / (2.0 * FD_STEP);
        }
        double err = fd_error(got, idx, fd, FD_SAMPLES);
        printf("%s: finite-difference error %.3g\n", name, err);
        char fd_name[160];
        snprintf(fd_name, sizeof fd_name, "%s fd", name);
        failed += !mcl_test_record(fd_name, "max error / max |fd|", err, FD_TOLERANCE);
        free(xd);

        /* The transpose of a rotation is its inverse: backward(forward(x)) = x, in place. */
        assert_mcl_ok(mcl_rope(ctx, tx, layout, theta, s->offset, tx));
        assert_mcl_ok(mcl_rope_backward(ctx, tx, layout, theta, s->offset, tx));
        assert_mcl_ok(mcl_tensor_download(tx, 0, round, n * 4));
        nmse = mcl_nmse(round, x, n);
        printf("%s: in-place backward(forward(x)) nmse %.3g\n", name, nmse);
        strcat(name, " in-place round trip");
        failed += !mcl_test_record(name, "nmse vs x", nmse, REF_TOLERANCE);

        mcl_tensor_destroy(tdy);
        mcl_tensor_destroy(tdx);
        mcl_tensor_destroy(tx);
        free(dy), free(x), free(got), free(want), free(round);
    }
    assert_int_equal(failed, 0);
}

/* ---------------------------------------------------------------- embedding */

typedef struct emb_case {
    int64_t rows, vocab, dim;
} emb_case;

static void make_ids(int32_t *ids, int64_t rows, int64_t vocab, uint32_t seed)
{
    /* Ids drawn from a range a little wider than [0, V) on both sides, so that some are out
     * of range, and from few values, so that most repeat. */
    float *u = mcl_test_random_floats((size_t)rows, seed, 0.0f, 1.0f);
    for (int64_t r = 0; r < rows; r++)
        ids[r] = (int32_t)floorf(u[r] * (float)(vocab + 6)) - 3;
    ids[0] = INT32_MIN;
    if (rows > 1)
        ids[rows - 1] = INT32_MAX;
    free(u);
}

static void embedding_backward_matches(void **state)
{
    (void)state;
    static const emb_case cases[] = {{300, 50, 40}, {2048, 1000, 64}, {7, 3, 300}, {1, 1, 1}};
    int failed = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const emb_case *e = &cases[c];
        size_t nout = (size_t)(e->rows * e->dim), ntab = (size_t)(e->vocab * e->dim);
        int32_t *ids = malloc((size_t)e->rows * 4);
        assert_non_null(ids);
        make_ids(ids, e->rows, e->vocab, 300 + (uint32_t)c);
        float *dout = mcl_test_random_floats(nout, 400 + (uint32_t)c, -1.0f, 1.0f);
        float *got = mcl_test_floats(ntab), *again = mcl_test_floats(ntab);
        float *want = mcl_test_floats(ntab);
        int64_t dshape[2] = {e->rows, e->dim}, tshape[2] = {e->vocab, e->dim};
        mcl_tensor *tids = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &e->rows, ids);
        mcl_tensor *tdout = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, dshape, dout);
        mcl_tensor *ttab = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, tshape, NULL);
        /* NaN first: every element must be overwritten, the unselected rows with zero. */
        for (size_t i = 0; i < ntab; i++)
            got[i] = NAN;
        assert_mcl_ok(mcl_tensor_upload(ttab, 0, got, ntab * 4));
        assert_mcl_ok(mcl_embedding_backward(ctx, tids, tdout, ttab));
        assert_mcl_ok(mcl_tensor_download(ttab, 0, got, ntab * 4));
        assert_mcl_ok(mcl_embedding_backward(ctx, tids, tdout, ttab));
        assert_mcl_ok(mcl_tensor_download(ttab, 0, again, ntab * 4));
        ref_embedding_backward_f32(ids, dout, e->rows, e->vocab, e->dim, want, 0);
        char name[128];
        snprintf(name, sizeof name, "embedding backward R=%lld V=%lld D=%lld", (long long)e->rows,
                 (long long)e->vocab, (long long)e->dim);
        double nmse = mcl_nmse(got, want, ntab);
        printf("%s: nmse %.3g\n", name, nmse);
        failed += !mcl_test_record(name, "nmse vs reference", nmse, REF_TOLERANCE);
        char det[160];
        snprintf(det, sizeof det, "%s repeats bit for bit", name);
        failed += !mcl_test_record_bool(det, memcmp(got, again, ntab * 4) == 0);

        /* Finite differences of L = sum(dout * embedding(table)) in the table's entries. */
        double fd[FD_SAMPLES];
        size_t idx[FD_SAMPLES];
        for (size_t k = 0; k < FD_SAMPLES; k++) {
            idx[k] = sample_index(k, ntab);
            int64_t v = (int64_t)idx[k] / e->dim, d = (int64_t)idx[k] % e->dim;
            double up = 0.0, down = 0.0;
            /* Only the selected entry moves; L's other terms cancel in the difference. */
            for (int64_t r = 0; r < e->rows; r++) {
                if (ids[r] == v) {
                    up += dout[r * e->dim + d] * (1.0 + FD_STEP);
                    down += dout[r * e->dim + d] * (1.0 - FD_STEP);
                }
            }
            fd[k] = (up - down) / (2.0 * FD_STEP);
        }
        double err = fd_error(got, idx, fd, FD_SAMPLES);
        printf("%s: finite-difference error %.3g\n", name, err);
        strcat(name, " fd");
        failed += !mcl_test_record(name, "max error / max |fd|", err, FD_TOLERANCE);

        mcl_tensor_destroy(tids);
        mcl_tensor_destroy(tdout);
        mcl_tensor_destroy(ttab);
        free(ids), free(dout), free(got), free(again), free(want);
    }
    assert_int_equal(failed, 0);
}

/* ---------------------------------------------------------------- cross-entropy */

/* dloss * mean over valid rows of (lse - x[target]), in double. */
static double ce_loss(const double *x, const int32_t *targets, int64_t rows, int64_t vocab,
                      double dloss)
{
    double total = 0.0;
    int64_t valid = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (targets[r] < 0 || targets[r] >= vocab)
            continue;
        const double *xr = x + r * vocab;
        double max = -INFINITY, sum = 0.0;
        for (int64_t c = 0; c < vocab; c++)
            max = fmax(max, xr[c]);
        for (int64_t c = 0; c < vocab; c++)
            sum += exp(xr[c] - max);
        total += max + log(sum) - xr[targets[r]];
        valid++;
    }
    return valid ? dloss * total / (double)valid : 0.0;
}

typedef struct ce_case {
    int64_t rows, vocab;
    int ignore_every;   /* every ignore_every-th row is ignored; 1: all; 0: none */
    int in_place;
    float dloss;
} ce_case;

/* Runs the forward for lse, then the backward; returns the gradient (malloc'd). */
static float *ce_run(const ce_case *e, const float *logits, const int32_t *targets)
{
    size_t n = (size_t)(e->rows * e->vocab);
    int64_t shape[2] = {e->rows, e->vocab}, one = 1;
    mcl_tensor *tl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, logits);
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &e->rows, targets);
    mcl_tensor *tloss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    mcl_tensor *tlse = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &e->rows, NULL);
    mcl_tensor *tdl = e->in_place ? tl : mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, NULL);
    assert_mcl_ok(mcl_cross_entropy(ctx, tl, tt, tloss, tlse));
    assert_mcl_ok(mcl_cross_entropy_backward(ctx, tl, tt, tlse, e->dloss, tdl));
    float *got = mcl_test_floats(n);
    assert_mcl_ok(mcl_tensor_download(tdl, 0, got, n * 4));
    if (!e->in_place)
        mcl_tensor_destroy(tdl);
    mcl_tensor_destroy(tl);
    mcl_tensor_destroy(tt);
    mcl_tensor_destroy(tloss);
    mcl_tensor_destroy(tlse);
    return got;
}

static int32_t *ce_targets(const ce_case *e)
{
    int32_t *t = malloc((size_t)e->rows * 4);
    assert_non_null(t);
    static const int32_t bad[] = {-1, -100, 1 << 20, INT32_MIN};
    for (int64_t r = 0; r < e->rows; r++) {
        int ignored = e->ignore_every == 1 || (e->ignore_every && r % e->ignore_every == 1);
        t[r] = ignored ? (r % 5 == 4 ? (int32_t)e->vocab : bad[r % 4])
                       : (int32_t)((r * 7919 + 13) % e->vocab);
    }
    return t;
}

static void cross_entropy_backward_matches(void **state)
{
    (void)state;
    static const ce_case cases[] = {
        {37, 101, 4, 0, 1.0f},
        {37, 101, 4, 1, 2.5f},
        {9, 1000, 0, 0, 0.75f},
        {1, 1, 0, 0, 1.0f},
    };
    int failed = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const ce_case *e = &cases[c];
        size_t n = (size_t)(e->rows * e->vocab);
        float *logits = mcl_test_random_floats(n, 500 + (uint32_t)c, -4.0f, 4.0f);
        int32_t *targets = ce_targets(e);
        float *got = ce_run(e, logits, targets), *want = mcl_test_floats(n);
        ref_cross_entropy_backward_f32(logits, targets, e->rows, e->vocab, e->dloss, want, 0);
        char name[128];
        snprintf(name, sizeof name, "cross-entropy backward N=%lld V=%lld dloss %g%s%s",
                 (long long)e->rows, (long long)e->vocab, (double)e->dloss,
                 e->ignore_every ? " with ignored rows" : "", e->in_place ? " in place" : "");
        double nmse = mcl_nmse(got, want, n);
        printf("%s: nmse %.3g\n", name, nmse);
        failed += !mcl_test_record(name, "nmse vs reference", nmse, REF_TOLERANCE);

        double *xd = malloc(n * sizeof *xd), fd[FD_SAMPLES];
        size_t idx[FD_SAMPLES];
        assert_non_null(xd);
        for (size_t i = 0; i < n; i++)
            xd[i] = logits[i];
        for (size_t k = 0; k < FD_SAMPLES; k++) {
            idx[k] = sample_index(k, n);
            double keep = xd[idx[k]];
            xd[idx[k]] = keep + FD_STEP;
            double up = ce_loss(xd, targets, e->rows, e->vocab, e->dloss);
            xd[idx[k]] = keep - FD_STEP;
            double down = ce_loss(xd, targets, e->rows, e->vocab, e->dloss);
            xd[idx[k]] = keep;
            fd[k] = (up - down) / (2.0 * FD_STEP);
        }
        double err = fd_error(got, idx, fd, FD_SAMPLES);
        printf("%s: finite-difference error %.3g\n", name, err);
        strcat(name, " fd");
        failed += !mcl_test_record(name, "max error / max |fd|", err, FD_TOLERANCE);
        free(xd), free(logits), free(targets), free(got), free(want);
    }
    assert_int_equal(failed, 0);
}

static void cross_entropy_backward_all_ignored(void **state)
{
    (void)state;
    const ce_case e = {5, 10, 1, 0, 1.0f};
    float *logits = mcl_test_random_floats(50, 9, -2.0f, 2.0f);
    int32_t *targets = ce_targets(&e);
    float *got = ce_run(&e, logits, targets);
    int zero = 1;
    for (size_t i = 0; i < 50; i++)
        zero &= got[i] == 0.0f && !signbit(got[i]);
    printf("cross-entropy backward, every row ignored: %s\n", zero ? "all +0" : "NOT zero");
    int passed = mcl_test_record_bool("cross-entropy backward with every row ignored is exactly "
                                      "zero (no NaN)", zero);
    free(logits), free(targets), free(got);
    assert_true(passed);
}

/* The cross-entropy backward captured in a graph and replayed with new logits: its valid-row
 * count, a scratch word destroyed by the op during the capture, must live on with the graph
 * and be recomputed on every replay (new targets change the count). */
static void graph_replays_cross_entropy_backward(void **state)
{
    (void)state;
    ce_case e = {37, 101, 4, 0, 1.0f};
    size_t n = (size_t)(e.rows * e.vocab);
    int64_t shape[2] = {e.rows, e.vocab}, one = 1;
    float *logits = mcl_test_floats(n), *got = mcl_test_floats(n), *want = mcl_test_floats(n);
    mcl_tensor *tl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, NULL);
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &e.rows, NULL);
    mcl_tensor *tloss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    mcl_tensor *tlse = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &e.rows, NULL);
    mcl_tensor *tdl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, NULL);
    mcl_graph *graph = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_cross_entropy(ctx, tl, tt, tloss, tlse));
    assert_mcl_ok(mcl_cross_entropy_backward(ctx, tl, tt, tlse, e.dloss, tdl));
    assert_mcl_ok(mcl_graph_end(ctx, &graph));
    int passed = 1;
    for (int replay = 0; replay < 2; replay++) {
        e.ignore_every = replay == 0 ? 4 : 2;
        int32_t *targets = ce_targets(&e);
        mcl_fill_random(logits, n, 800u + (uint32_t)replay, -4.0f, 4.0f);
        assert_mcl_ok(mcl_tensor_upload(tl, 0, logits, n * 4));
        assert_mcl_ok(mcl_tensor_upload(tt, 0, targets, (size_t)e.rows * 4));
        assert_mcl_ok(mcl_graph_replay(ctx, graph));
        assert_mcl_ok(mcl_tensor_download(tdl, 0, got, n * 4));
        ref_cross_entropy_backward_f32(logits, targets, e.rows, e.vocab, e.dloss, want, 0);
        double nmse = mcl_nmse(got, want, n);
        char name[96];
        snprintf(name, sizeof name, "graph: cross-entropy backward replay %d (ignore every %d)",
                 replay + 1, e.ignore_every);
        printf("%s: nmse %.3g\n", name, nmse);
        passed &= mcl_test_record(name, "nmse vs reference", nmse, REF_TOLERANCE);
        free(targets);
    }
    mcl_graph_destroy(graph);
    mcl_tensor *all[] = {tl, tt, tloss, tlse, tdl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(logits), free(got), free(want);
    assert_true(passed);
}

/* Wrong references must fail the tolerances the real ones pass. */
static void negative_controls(void **state)
{
    (void)state;
    int caught = 1;
    /* RoPE: rotating by +angle (the forward) is not the backward. */
    {
        int64_t shape[4] = {2, 5, 3, 16};
        size_t n = 480;
        float *dy = mcl_test_random_floats(n, 100, -1.0f, 1.0f);
        float *got = mcl_test_floats(n), *wrong = mcl_test_floats(n);
        mcl_tensor *tdy = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, dy);
        mcl_tensor *tdx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, NULL);
        assert_mcl_ok(mcl_rope_backward(ctx, tdy, MCL_ROPE_INTERLEAVED, 10000.0f, 7, tdx));
        assert_mcl_ok(mcl_tensor_download(tdx, 0, got, n * 4));
        ref_rope_backward_f32(dy, wrong, 2, 5, 3, 16, 0, 10000.0f, 7, 1);
        double nmse = mcl_nmse(got, wrong, n);
        printf("negative control: rope backward vs the forward rotation nmse %.3g\n", nmse);
        caught &= nmse > REF_TOLERANCE;
        mcl_tensor_destroy(tdy);
        mcl_tensor_destroy(tdx);
        free(dy), free(got), free(wrong);
    }
    /* Embedding: keeping only the last of repeated ids. */
    {
        int64_t rows = 300, shape[2] = {300, 40}, tshape[2] = {50, 40};
        int32_t ids[300];
        make_ids(ids, rows, 50, 300);
        float *dout = mcl_test_random_floats(12000, 400, -1.0f, 1.0f);
        float *got = mcl_test_floats(2000), *wrong = mcl_test_floats(2000);
        mcl_tensor *tids = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &rows, ids);
        mcl_tensor *tdout = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, dout);
        mcl_tensor *ttab = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, tshape, NULL);
        assert_mcl_ok(mcl_embedding_backward(ctx, tids, tdout, ttab));
        assert_mcl_ok(mcl_tensor_download(ttab, 0, got, 8000));
        ref_embedding_backward_f32(ids, dout, rows, 50, 40, wrong, 1);
        double nmse = mcl_nmse(got, wrong, 2000);
        printf("negative control: embedding backward vs last-id-wins nmse %.3g\n", nmse);
        caught &= nmse > REF_TOLERANCE;
        mcl_tensor_destroy(tids);
        mcl_tensor_destroy(tdout);
        mcl_tensor_destroy(ttab);
        free(dout), free(got), free(wrong);
    }
    /* Cross-entropy: dividing by all rows instead of the valid ones. */
    {
        const ce_case e = {37, 101, 4, 0, 1.0f};
        float *logits = mcl_test_random_floats(3737, 500, -4.0f, 4.0f);
        int32_t *targets = ce_targets(&e);
        float *got = ce_run(&e, logits, targets), *wrong = mcl_test_floats(3737);
        ref_cross_entropy_backward_f32(logits, targets, 37, 101, 1.0, wrong, 1);
        double nmse = mcl_nmse(got, wrong, 3737);
        printf("negative control: cross-entropy backward over all rows nmse %.3g\n", nmse);
        caught &= nmse > REF_TOLERANCE;
        free(logits), free(targets), free(got), free(wrong);
    }
    int passed = mcl_test_record_bool("negative controls: forward rotation, last id wins and a "
                                      "mean over all rows are detected", caught);
    assert_true(passed);
}

static void bad_arguments(void **state)
{
    (void)state;
    const int64_t s4[4] = {1, 2, 2, 4}, s4odd[4] = {1, 2, 2, 3}, s3[3] = {2, 2, 4};
    const int64_t sl[2] = {4, 10}, n4 = 4, n5 = 5, st[2] = {10, 8}, sd[2] = {4, 8},
                  sd7[2] = {4, 7};
    mcl_tensor *r4 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s4, NULL);
    mcl_tensor *r4b = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s4, NULL);
    mcl_tensor *r4i = mcl_test_tensor(ctx, MCL_DTYPE_I32, 4, s4, NULL);
    mcl_tensor *rodd = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s4odd, NULL);
    mcl_tensor *r3 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, s3, NULL);
    mcl_tensor *logits = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, sl, NULL);
    mcl_tensor *dl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, sl, NULL);
    mcl_tensor *tg = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &n4, NULL);
    mcl_tensor *tg5 = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &n5, NULL);
    mcl_tensor *lse = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &n4, NULL);
    mcl_tensor *table = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, st, NULL);
    mcl_tensor *dout = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, sd, NULL);
    mcl_tensor *dout7 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, sd7, NULL);

    EXPECT_STATUS(mcl_rope_backward(NULL, r4, MCL_ROPE_INTERLEAVED, 1e4f, 0, r4b), INVALID);
    EXPECT_STATUS(mcl_rope_backward(ctx, NULL, MCL_ROPE_INTERLEAVED, 1e4f, 0, r4b), INVALID);
    EXPECT_STATUS(mcl_rope_backward(ctx, r4i, MCL_ROPE_INTERLEAVED, 1e4f, 0, r4b), DTYPE);
    EXPECT_STATUS(mcl_rope_backward(ctx, r3, MCL_ROPE_INTERLEAVED, 1e4f, 0, r3), SHAPE);
    EXPECT_STATUS(mcl_rope_backward(ctx, rodd, MCL_ROPE_INTERLEAVED, 1e4f, 0, rodd), SHAPE);
    EXPECT_STATUS(mcl_rope_backward(ctx, r4, (mcl_rope_layout)7, 1e4f, 0, r4b), INVALID);
    EXPECT_STATUS(mcl_rope_backward(ctx, r4, MCL_ROPE_INTERLEAVED, -1.0f, 0, r4b), INVALID);
    EXPECT_STATUS(mcl_rope_backward(ctx, r4, MCL_ROPE_INTERLEAVED, 1e4f, -1, r4b), INVALID);

    EXPECT_STATUS(mcl_embedding_backward(NULL, tg, dout, table), INVALID);
    EXPECT_STATUS(mcl_embedding_backward(ctx, tg, NULL, table), INVALID);
    EXPECT_STATUS(mcl_embedding_backward(ctx, lse, dout, table), DTYPE);
    EXPECT_STATUS(mcl_embedding_backward(ctx, tg5, dout, table), SHAPE);
    EXPECT_STATUS(mcl_embedding_backward(ctx, tg, dout7, table), SHAPE);
    EXPECT_STATUS(mcl_embedding_backward(ctx, tg, dout, r3), SHAPE);

    EXPECT_STATUS(mcl_cross_entropy_backward(NULL, logits, tg, lse, 1.0f, dl), INVALID);
    EXPECT_STATUS(mcl_cross_entropy_backward(ctx, logits, tg, NULL, 1.0f, dl), INVALID);
    EXPECT_STATUS(mcl_cross_entropy_backward(ctx, logits, lse, lse, 1.0f, dl), DTYPE);
    EXPECT_STATUS(mcl_cross_entropy_backward(ctx, logits, tg5, lse, 1.0f, dl), SHAPE);
    EXPECT_STATUS(mcl_cross_entropy_backward(ctx, logits, tg, lse, 1.0f, table), SHAPE);
    EXPECT_STATUS(mcl_cross_entropy_backward(ctx, logits, tg, lse, NAN, dl), INVALID);

    mcl_tensor *all[] = {r4, r4b, r4i, rodd, r3, logits, dl, tg, tg5, lse, table, dout, dout7};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    int passed = mcl_test_record("backward layout ops: bad arguments give the documented "
                                 "statuses", "wrong statuses", mcl_test_wrong_statuses, 0);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rope_backward_matches),
        cmocka_unit_test(embedding_backward_matches),
        cmocka_unit_test(cross_entropy_backward_matches),
        cmocka_unit_test(cross_entropy_backward_all_ignored),
        cmocka_unit_test(graph_replays_cross_entropy_backward),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
