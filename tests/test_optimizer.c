/* Optimizers against the double-precision CPU references: several AdamW and SGD steps (weight
 * decay, momentum, defaults), AdamW's descriptor flags (beta1 = 0, beta2 = 0 and eps = 0 used
 * as given with their MCL_ADAMW_*_SET flags, the defaults without them), the gradient norm
 * over several tensors (with a repeat run and no tensor at all), clipping below and above the
 * threshold, negative controls and bad arguments.
 *
 * Tolerances:
 *  - AdamW / SGD: NMSE <= 1e-10 of params and state after 5 steps. The GPU keeps float state
 *    and does a handful of float operations per element and step (relative error ~1e-7 each);
 *    the reference keeps double state. Float rounding alone gives NMSE ~1e-14; a missing bias
 *    correction or a coupled weight decay moves params by ~lr, NMSE >= 1e-6. The flag cases
 *    are told apart by the same limit: beta1 0 against 0.9 changes the moment m entirely,
 *    and eps 0 against 1e-8 with gradients of scale 1e-9 changes each update about tenfold.
 *  - grad norm: |got - want| / want <= 1e-5: float sums of squares of at most a few hundred
 *    terms per invocation plus 8-level trees, relative error ~1e-6 worst case; leaving out
 *    the 1000-element tensor changes the norm by ~1e-3 here. Repeat run: bit-identical.
 *  - clipping: below the threshold the gradients are bit-identical; above it NMSE <= 1e-12
 *    against grad * max_norm / norm, and the new norm is max_norm within 1e-5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref/ref.h"

#define STEP_TOLERANCE 1e-10
#define NORM_TOLERANCE 1e-5
#define CLIP_TOLERANCE 1e-12
#define STEPS 5
#define NT 3

static mcl_context *ctx;
static const int64_t sizes[NT] = {1000, 37, 70001};

typedef struct opt_state {
    mcl_tensor *p[NT], *g[NT], *m[NT], *v[NT];
    double *rp[NT], *rm[NT], *rv[NT];
    float *grads[NT];
} opt_state;

static void state_create(opt_state *s, uint32_t seed)
{
    for (int i = 0; i < NT; i++) {
        size_t n = (size_t)sizes[i];
        float *p0 = mcl_test_random_floats(n, seed + (uint32_t)i, -1.0f, 1.0f);
        float *zero = calloc(n, 4);
        s->rp[i] = malloc(n * sizeof(double));
        s->rm[i] = calloc(n, sizeof(double));
        s->rv[i] = calloc(n, sizeof(double));
        assert_true(zero && s->rp[i] && s->rm[i] && s->rv[i]);
        for (size_t k = 0; k < n; k++)
            s->rp[i][k] = p0[k];
        s->p[i] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &sizes[i], p0);
        s->g[i] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &sizes[i], NULL);
        s->m[i] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &sizes[i], zero);
        s->v[i] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &sizes[i], zero);
        s->grads[i] = mcl_test_floats(n);
        free(p0), free(zero);
    }
}

static void new_grads(opt_state *s, uint32_t seed, float scale)
{
    for (int i = 0; i < NT; i++) {
        mcl_fill_random(s->grads[i], (size_t)sizes[i], seed + 97u * (uint32_t)i, -scale, scale);
        assert_mcl_ok(mcl_tensor_upload(s->g[i], 0, s->grads[i], (size_t)sizes[i] * 4));
    }
}

static void state_destroy(opt_state *s)
{
    for (int i = 0; i < NT; i++) {
        mcl_tensor_destroy(s->p[i]);
        mcl_tensor_destroy(s->g[i]);
        mcl_tensor_destroy(s->m[i]);
        mcl_tensor_destroy(s->v[i]);
        free(s->rp[i]), free(s->rm[i]), free(s->rv[i]), free(s->grads[i]);
    }
}

/* NMSE of a tensor against double values. */
static double tensor_nmse(mcl_tensor *t, const double *want, size_t n)
{
    float *got = mcl_test_floats(n), *w = mcl_test_floats(n);
    assert_mcl_ok(mcl_tensor_download(t, 0, got, n * 4));
    for (size_t i = 0; i < n; i++)
        w[i] = (float)want[i];
    double e = mcl_nmse(got, w, n);
    free(got), free(w);
    return e;
}

/* The hyper-parameters a CPU reference runs AdamW with. */
typedef struct adamw_ref {
    double beta1, beta2, eps;
    int no_bias_correction; /* negative control */
} adamw_ref;

/* What mcl_adamw_desc documents: 0 means the default unless the field's flag is set. */
static adamw_ref documented(const mcl_adamw_desc *d)
{
    adamw_ref r = {
        .beta1 = d->beta1 != 0.0f || (d->flags & MCL_ADAMW_BETA1_SET) ? d->beta1 : 0.9f,
        .beta2 = d->beta2 != 0.0f || (d->flags & MCL_ADAMW_BETA2_SET) ? d->beta2 : 0.999f,
        .eps = d->eps != 0.0f || (d->flags & MCL_ADAMW_EPS_SET) ? d->eps : 1e-8f,
    };
    return r;
}

/* AdamW for STEPS steps on the GPU with desc and gradients in [-grad_scale, grad_scale],
 * against the reference run with `ref`. Returns the worst NMSE over params and moments. */
static double run_adamw(const mcl_adamw_desc *desc, float grad_scale, adamw_ref ref)
{
    opt_state s;
    state_create(&s, 10);
    for (int64_t step = 1; step <= STEPS; step++) {
        new_grads(&s, 1000u + (uint32_t)step, grad_scale);
        mcl_adamw_desc d = *desc;
        d.step = step;
        assert_mcl_ok(mcl_adamw_step(ctx, &d, s.p, s.g, s.m, s.v, NT));
        for (int i = 0; i < NT; i++)
            ref_adamw_step(s.rp[i], s.grads[i], s.rm[i], s.rv[i], (size_t)sizes[i], desc->lr,
                           ref.beta1, ref.beta2, ref.eps, desc->weight_decay,
                           ref.no_bias_correction ? 100000 : step);
    }
    double worst = 0.0;
    for (int i = 0; i < NT; i++) {
        worst = fmax(worst, tensor_nmse(s.p[i], s.rp[i], (size_t)sizes[i]));
        worst = fmax(worst, tensor_nmse(s.m[i], s.rm[i], (size_t)sizes[i]));
        worst = fmax(worst, tensor_nmse(s.v[i], s.rv[i], (size_t)sizes[i]));
    }
    state_destroy(&s);
    return worst;
}

static void adamw_matches(void **state)
{
    (void)state;
    mcl_adamw_desc defaults = {.size = sizeof defaults, .lr = 1e-2f, .weight_decay = 0.1f};
    mcl_adamw_desc explicit_ = {.size = sizeof explicit_, .lr = 3e-3f, .beta1 = 0.8f,
                                .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.0f};
    double e1 = run_adamw(&defaults, 1.0f, documented(&defaults));
    double e2 = run_adamw(&explicit_, 1.0f, documented(&explicit_));
    printf("adamw %d steps, default betas, weight decay 0.1: worst nmse %.3g\n", STEPS, e1);
    printf("adamw %d steps, betas 0.8/0.95, eps 1e-6, no decay: worst nmse %.3g\n", STEPS, e2);
    int passed = mcl_test_record("adamw 5 steps, defaults, weight decay 0.1",
                                 "worst nmse of p, m, v", e1, STEP_TOLERANCE);
    passed &= mcl_test_record("adamw 5 steps, explicit betas and eps", "worst nmse of p, m, v",
                              e2, STEP_TOLERANCE);
    assert_true(passed);
}

/* 0 as a value: beta1 = 0 with MCL_ADAMW_BETA1_SET runs with beta1 = 0, and without the flag
 * the same descriptor runs with the default 0.9 (the negative control: each run matches its
 * own reference and not the other's). Likewise beta2 = 0 and eps = 0 with their flags, with
 * gradients small enough (1e-9) that eps = 1e-8 would dominate the update. */
static void adamw_zero_with_flags(void **state)
{
    (void)state;
    mcl_adamw_desc set = {.size = sizeof set, .lr = 1e-2f, .beta1 = 0.0f, .weight_decay = 0.1f,
                          .flags = MCL_ADAMW_BETA1_SET};
    mcl_adamw_desc unset = set;
    unset.flags = 0;
    const adamw_ref beta1_zero = {.beta1 = 0.0, .beta2 = 0.999f, .eps = 1e-8f};
    const adamw_ref beta1_default = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
    double set_zero = run_adamw(&set, 1.0f, beta1_zero);
    double set_default = run_adamw(&set, 1.0f, beta1_default);
    double unset_default = run_adamw(&unset, 1.0f, beta1_default);
    double unset_zero = run_adamw(&unset, 1.0f, beta1_zero);

    mcl_adamw_desc tiny = {.size = sizeof tiny, .lr = 1e-2f, .beta2 = 0.0f, .eps = 0.0f,
                           .flags = MCL_ADAMW_BETA2_SET | MCL_ADAMW_EPS_SET};
    const adamw_ref zeros = {.beta1 = 0.9f, .beta2 = 0.0, .eps = 0.0};
    const adamw_ref defaults = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
    double tiny_zeros = run_adamw(&tiny, 1e-9f, zeros);
    double tiny_defaults = run_adamw(&tiny, 1e-9f, defaults);

    printf("adamw beta1 0 with the flag: nmse %.3g against beta1 0, %.3g against 0.9\n",
           set_zero, set_default);
    printf("adamw beta1 0 without the flag: nmse %.3g against 0.9, %.3g against beta1 0\n",
           unset_default, unset_zero);
    printf("adamw beta2 0 and eps 0 with flags, gradients 1e-9: nmse %.3g against them, %.3g "
           "against the defaults\n", tiny_zeros, tiny_defaults);
    int passed = mcl_test_record("adamw beta1 = 0 with MCL_ADAMW_BETA1_SET runs beta1 = 0",
                                 "worst nmse of p, m, v", set_zero, STEP_TOLERANCE);
    passed &= mcl_test_record("adamw beta1 = 0 without the flag runs the default 0.9",
                              "worst nmse of p, m, v", unset_default, STEP_TOLERANCE);
    passed &= mcl_test_record("adamw beta2 = 0 and eps = 0 with their flags run as given",
                              "worst nmse of p, m, v", tiny_zeros, STEP_TOLERANCE);
    int caught = set_default > STEP_TOLERANCE && unset_zero > STEP_TOLERANCE &&
                 tiny_defaults > STEP_TOLERANCE;
    passed &= mcl_test_record_bool("negative controls: with the flag the default is not taken, "
                                   "without it 0 is not", caught);
    assert_true(passed);
}

static double run_sgd(float lr, float momentum, float wd, int with_velocity)
{
    opt_state s;
    state_create(&s, 20);
    for (int step = 1; step <= STEPS; step++) {
        new_grads(&s, 2000u + (uint32_t)step, 1.0f);
        /* m serves as the velocity (zero at first). */
        mcl_sgd_desc d = {.size = sizeof d, .lr = lr, .momentum = momentum, .weight_decay = wd};
        assert_mcl_ok(mcl_sgd_step(ctx, &d, s.p, s.g, with_velocity ? s.m : NULL, NT));
        for (int i = 0; i < NT; i++)
            ref_sgd_step(s.rp[i], s.grads[i], with_velocity ? s.rm[i] : NULL, (size_t)sizes[i],
                         lr, momentum, wd);
    }
    double worst = 0.0;
    for (int i = 0; i < NT; i++) {
        worst = fmax(worst, tensor_nmse(s.p[i], s.rp[i], (size_t)sizes[i]));
        if (with_velocity)
            worst = fmax(worst, tensor_nmse(s.m[i], s.rm[i], (size_t)sizes[i]));
    }
    state_destroy(&s);
    return worst;
}

static void sgd_matches(void **state)
{
    (void)state;
    double e1 = run_sgd(0.05f, 0.9f, 0.01f, 1), e2 = run_sgd(0.1f, 0.0f, 0.05f, 0);
    printf("sgd %d steps, momentum 0.9, weight decay 0.01: worst nmse %.3g\n", STEPS, e1);
    printf("sgd %d steps, no velocity, weight decay 0.05: worst nmse %.3g\n", STEPS, e2);
    int passed = mcl_test_record("sgd 5 steps, momentum 0.9, weight decay 0.01",
                                 "worst nmse of p, velocity", e1, STEP_TOLERANCE);
    passed &= mcl_test_record("sgd 5 steps, no velocity, weight decay 0.05", "nmse of p", e2,
                              STEP_TOLERANCE);
    assert_true(passed);
}

/* ---------------------------------------------------------------- norm and clipping */

#define NG 4
static const int64_t gsizes[NG] = {1, 1000, 70001, 300000};

typedef struct grad_set {
    mcl_tensor *t[NG], *norm;
    float *data[NG];
    double want;
} grad_set;

static void grads_create(grad_set *g, float scale)
{
    double sum = 0.0;
    for (int i = 0; i < NG; i++) {
        g->data[i] = mcl_test_random_floats((size_t)gsizes[i], 50u + (uint32_t)i, -scale, scale);
        g->t[i] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &gsizes[i], g->data[i]);
        sum += ref_sum_squares(g->data[i], (size_t)gsizes[i]);
    }
    int64_t one = 1;
    g->norm = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    g->want = sqrt(sum);
}

static void grads_destroy(grad_set *g)
{
    for (int i = 0; i < NG; i++) {
        mcl_tensor_destroy(g->t[i]);
        free(g->data[i]);
    }
    mcl_tensor_destroy(g->norm);
}

static float norm_of(grad_set *g, uint32_t count)
{
    float got = NAN;
    assert_mcl_ok(mcl_grad_norm(ctx, g->t, count, g->norm));
    assert_mcl_ok(mcl_tensor_download(g->norm, 0, &got, 4));
    return got;
}

static void grad_norm_matches(void **state)
{
    (void)state;
    grad_set g;
    grads_create(&g, 0.01f);
    float got = norm_of(&g, NG), again = norm_of(&g, NG), none = norm_of(&g, 0);
    double err = fabs(got - g.want) / g.want;
    printf("grad norm of %d tensors: %.9g want %.9g, error %.3g; repeat %s; no tensor %g\n", NG,
           (double)got, g.want, err, memcmp(&got, &again, 4) == 0 ? "identical" : "DIFFERS",
           (double)none);
    int passed = mcl_test_record("grad norm over 4 tensors (1 to 300000 elements)",
                                 "relative error", err, NORM_TOLERANCE);
    passed &= mcl_test_record_bool("grad norm repeats bit for bit", memcmp(&got, &again, 4) == 0);
    passed &= mcl_test_record_bool("grad norm of no tensor is 0", none == 0.0f);
    grads_destroy(&g);
    assert_true(passed);
}

static void clip_only_above_threshold(void **state)
{
    (void)state;
    grad_set g;
    grads_create(&g, 0.01f);
    float norm = norm_of(&g, NG);
    int passed = 1;
    /* Above the norm: nothing may change, not even by a rounding (no multiply by 1). */
    assert_mcl_ok(mcl_clip_grads(ctx, g.t, NG, g.norm, norm * 1.5f));
    int same = 1;
    for (int i = 0; i < NG; i++) {
        size_t n = (size_t)gsizes[i];
        float *got = mcl_test_floats(n);
        assert_mcl_ok(mcl_tensor_download(g.t[i], 0, got, n * 4));
        same &= memcmp(got, g.data[i], n * 4) == 0;
        free(got);
    }
    printf("clip with max_norm above the norm: gradients %s\n", same ? "unchanged" : "CHANGED");
    passed &= mcl_test_record_bool("clip below the threshold leaves gradients bit-identical",
                                   same);
    /* Below the norm: everything scales by max_norm / norm. */
    float max_norm = norm * 0.3f;
    assert_mcl_ok(mcl_clip_grads(ctx, g.t, NG, g.norm, max_norm));
    double worst = 0.0;
    for (int i = 0; i < NG; i++) {
        size_t n = (size_t)gsizes[i];
        float *got = mcl_test_floats(n), *want = mcl_test_floats(n);
        assert_mcl_ok(mcl_tensor_download(g.t[i], 0, got, n * 4));
        for (size_t k = 0; k < n; k++)
            want[k] = (float)((double)g.data[i][k] * max_norm / norm);
        worst = fmax(worst, mcl_nmse(got, want, n));
        free(got), free(want);
    }
    float after = norm_of(&g, NG);
    double err = fabs(after - max_norm) / max_norm;
    printf("clip to 0.3 of the norm: worst nmse %.3g, new norm error %.3g\n", worst, err);
    passed &= mcl_test_record("clip above the threshold scales by max_norm / norm", "nmse",
                              worst, CLIP_TOLERANCE);
    passed &= mcl_test_record("clipped gradients have norm max_norm", "relative error", err,
                              NORM_TOLERANCE);
    grads_destroy(&g);
    assert_true(passed);
}

/* Norm and clipping captured in a graph and replayed with new gradients: the partial sums'
 * scratch, destroyed by the op during the capture, must live on with the graph, and the
 * clip must read the norm the replay computed. */
static void graph_replays_norm_and_clip(void **state)
{
    (void)state;
    grad_set g;
    grads_create(&g, 0.01f);
    const float max_norm = 1.0f;
    mcl_graph *graph = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_grad_norm(ctx, g.t, NG, g.norm));
    assert_mcl_ok(mcl_clip_grads(ctx, g.t, NG, g.norm, max_norm));
    assert_mcl_ok(mcl_graph_end(ctx, &graph));
    int passed = 1;
    /* Gradients of scale 0.001 (norm ~0.35, kept) and 0.1 (norm ~35, clipped to 1). */
    static const float scales[2] = {0.001f, 0.1f};
    for (int replay = 0; replay < 2; replay++) {
        double sum = 0.0;
        for (int i = 0; i < NG; i++) {
            mcl_fill_random(g.data[i], (size_t)gsizes[i], 700u + (uint32_t)(10 * replay + i),
                            -scales[replay], scales[replay]);
            assert_mcl_ok(mcl_tensor_upload(g.t[i], 0, g.data[i], (size_t)gsizes[i] * 4));
            sum += ref_sum_squares(g.data[i], (size_t)gsizes[i]);
        }
        assert_mcl_ok(mcl_graph_replay(ctx, graph));
        float got = NAN;
        assert_mcl_ok(mcl_tensor_download(g.norm, 0, &got, 4));
        double want = sqrt(sum), factor = want > max_norm ? max_norm / want : 1.0;
        double worst = 0.0;
        for (int i = 0; i < NG; i++) {
            size_t n = (size_t)gsizes[i];
            float *out = mcl_test_floats(n), *ref = mcl_test_floats(n);
            assert_mcl_ok(mcl_tensor_download(g.t[i], 0, out, n * 4));
            for (size_t k = 0; k < n; k++)
                ref[k] = (float)(g.data[i][k] * factor);
            worst = fmax(worst, mcl_nmse(out, ref, n));
            free(out), free(ref);
        }
        double err = fabs(got - want) / want;
        printf("graph replay %d: norm %.6g (error %.3g), clipped gradients nmse %.3g\n",
               replay + 1, (double)got, err, worst);
        char name[96];
        snprintf(name, sizeof name, "graph: norm replay %d with new gradients", replay + 1);
        passed &= mcl_test_record(name, "relative error", err, NORM_TOLERANCE);
        snprintf(name, sizeof name, "graph: clip replay %d (%s)", replay + 1,
                 factor < 1.0 ? "clipped" : "kept");
        passed &= mcl_test_record(name, "nmse", worst, CLIP_TOLERANCE);
    }
    mcl_graph_destroy(graph);
    grads_destroy(&g);
    assert_true(passed);
}

/* Wrong references must fail: AdamW without bias correction, a norm missing one tensor. */
static void negative_controls(void **state)
{
    (void)state;
    mcl_adamw_desc d = {.size = sizeof d, .lr = 1e-2f, .weight_decay = 0.1f};
    adamw_ref no_bias_correction = documented(&d);
    no_bias_correction.no_bias_correction = 1;
    double adam = run_adamw(&d, 1.0f, no_bias_correction);
    grad_set g;
    grads_create(&g, 0.01f);
    float got = norm_of(&g, NG);
    double partial = sqrt(g.want * g.want - ref_sum_squares(g.data[1], (size_t)gsizes[1]));
    double err = fabs(got - partial) / partial;
    grads_destroy(&g);
    printf("negative controls: adamw without bias correction nmse %.3g, norm missing a tensor "
           "error %.3g\n", adam, err);
    int caught = adam > STEP_TOLERANCE && err > NORM_TOLERANCE;
    mcl_test_record_bool("negative controls: no bias correction and a missing tensor are "
                         "detected", caught);
    assert_true(caught);
}

static void bad_arguments(void **state)
{
    (void)state;
    const int64_t n4 = 4, n5 = 5, one = 1;
    mcl_tensor *p = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &n4, NULL);
    mcl_tensor *g = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &n4, NULL);
    mcl_tensor *m = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &n4, NULL);
    mcl_tensor *v = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &n4, NULL);
    mcl_tensor *g5 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &n5, NULL);
    mcl_tensor *gi = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &n4, NULL);
    mcl_tensor *norm = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    mcl_tensor *P[1] = {p}, *G[1] = {g}, *M[1] = {m}, *V[1] = {v}, *G5[1] = {g5}, *GI[1] = {gi};
    mcl_tensor *NULLT[1] = {NULL};
    mcl_adamw_desc d = {.size = sizeof d, .lr = 1e-3f, .step = 1};
    mcl_adamw_desc nosize = d, step0 = d, badbeta = d, negbeta = d, negeps = d, badflag = d;
    nosize.size = 0;
    step0.step = 0;
    badbeta.beta1 = 1.0f;
    negbeta.beta2 = -0.5f;
    negbeta.flags = MCL_ADAMW_BETA2_SET;
    negeps.eps = -1e-8f;
    negeps.flags = MCL_ADAMW_EPS_SET;
    badflag.flags = 1u << 7;
    mcl_sgd_desc sd = {.size = sizeof sd, .lr = 0.1f, .momentum = 0.9f};
    mcl_sgd_desc sd_plain = {.size = sizeof sd_plain, .lr = 0.1f};
    mcl_sgd_desc sd_nosize = sd_plain, sd_nan = sd_plain;
    sd_nosize.size = 0;
    sd_nan.lr = NAN;

    EXPECT_STATUS(mcl_adamw_step(NULL, &d, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, NULL, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &nosize, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &step0, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &badbeta, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &negbeta, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &negeps, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &badflag, P, G, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &d, P, NULL, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &d, P, NULLT, M, V, 1), INVALID);
    EXPECT_STATUS(mcl_adamw_step(ctx, &d, P, G5, M, V, 1), SHAPE);
    EXPECT_STATUS(mcl_adamw_step(ctx, &d, P, GI, M, V, 1), DTYPE);
    EXPECT_STATUS(mcl_adamw_step(ctx, &d, P, G, M, M, 1), INVALID);

    EXPECT_STATUS(mcl_sgd_step(NULL, &sd_plain, P, G, NULL, 1), INVALID);
    EXPECT_STATUS(mcl_sgd_step(ctx, NULL, P, G, NULL, 1), INVALID);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd_nosize, P, G, NULL, 1), INVALID);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd, P, G, NULL, 1), INVALID);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd_nan, P, G, NULL, 1), INVALID);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd_plain, NULL, G, NULL, 1), INVALID);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd_plain, P, NULLT, NULL, 1), INVALID);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd, P, G5, V, 1), SHAPE);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd, P, GI, V, 1), DTYPE);
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd, P, P, V, 1), INVALID);
    /* count 0 takes NULL arrays and does nothing. */
    EXPECT_STATUS(mcl_sgd_step(ctx, &sd_plain, NULL, NULL, NULL, 0), MCL_SUCCESS);
    EXPECT_STATUS(mcl_adamw_step(ctx, &d, NULL, NULL, NULL, NULL, 0), MCL_SUCCESS);

    EXPECT_STATUS(mcl_grad_norm(NULL, G, 1, norm), INVALID);
    EXPECT_STATUS(mcl_grad_norm(ctx, G, 1, NULL), INVALID);
    EXPECT_STATUS(mcl_grad_norm(ctx, GI, 1, norm), DTYPE);
    EXPECT_STATUS(mcl_grad_norm(ctx, G, 1, gi), DTYPE);
    EXPECT_STATUS(mcl_grad_norm(ctx, G, 1, g), INVALID);

    EXPECT_STATUS(mcl_clip_grads(NULL, G, 1, norm, 1.0f), INVALID);
    EXPECT_STATUS(mcl_clip_grads(ctx, G, 1, norm, 0.0f), INVALID);
    EXPECT_STATUS(mcl_clip_grads(ctx, G, 1, norm, NAN), INVALID);
    EXPECT_STATUS(mcl_clip_grads(ctx, GI, 1, norm, 1.0f), DTYPE);
    EXPECT_STATUS(mcl_clip_grads(ctx, G, 1, g, 1.0f), INVALID);

    mcl_tensor *all[] = {p, g, m, v, g5, gi, norm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    int passed = mcl_test_record("optimizers: bad arguments give the documented statuses",
                                 "wrong statuses", mcl_test_wrong_statuses, 0);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(adamw_matches),
        cmocka_unit_test(adamw_zero_with_flags),
        cmocka_unit_test(sgd_matches),
        cmocka_unit_test(grad_norm_matches),
        cmocka_unit_test(clip_only_above_threshold),
        cmocka_unit_test(graph_replays_norm_and_clip),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
