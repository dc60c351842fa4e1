/* The attention backward pass (mcl_attention_backward) against a CPU reference of the
 * gradients in double (tests/ref/ref_attention_backward.c) and against central finite
 * differences of a double forward, plus bit-for-bit determinism, exact zeros where no gradient
 * flows, the plans of devices with little shared memory or 128 invocations per workgroup, the
 * statistics taken from the forward, a graph replay, negative controls and bad arguments.
 *
 * Shapes: T = 1 (a single query, decode-like); primes T = 7, S = 13 with kv_length 11 < S,
 * causal (query t sees keys up to t + kv_length - T) and not; grouped-query Hq = 6 over Hkv = 2
 * and Hkv = 1; D = 48 (dim 288 over 6 heads), D = 1, 2, 5 (not whole vec4s) and D = 256 at
 * small T; T = 37 / S = 41 and 67 (no multiple of any tile); T > kv_length (queries that see
 * no key); an explicit scale; and B = 2, T = S = 256, Hq = 6, D = 48.
 *
 * Tolerances:
 *  - against the reference: NMSE <= 1e-9 for each of dq, dk and dv. The kernels differ from
 *    the reference by float rounding: scores and dP are f32 dot products of D terms (relative
 *    error ~ sqrt(D) 2^-24), P is an exp2 of a rounded difference (a few ulp), Di = dout . out
 *    uses the f32 forward output (relative error ~1e-6), and dk / dv sum up to T G = 1536
 *    terms in f32 (relative error ~ sqrt(1536) 2^-24 ~ 2e-6 typical). dS = P (dP - Di)
 *    subtracts nearly equal numbers where a row's dP are alike, which enlarges the relative
 *    error of single elements but not the normalised total: measured NMSEs are ~1e-14 to
 *    2e-13 on Lavapipe. 1e-9 leaves room for coarser exp2 on other drivers, and any real
 *    defect lands far above it: a causal edge one key off, a wrong kv head, or one dout
 *    element moved by 0.05 all give 1e-6 and more (the negative controls).
 *  - finite differences: max |got - fd| / max |fd| <= 1e-4 with fd = (L(x + h) - L(x - h))
 *    / 2h, h = 1e-3, L = sum(dout * attention) on a double forward; the truncation error is
 *    ~h^2 |L'''| ~1e-7 relative here, the float gradient's own error ~1e-6. The double
 *    reference is held to 1e-6 against the same differences.
 *  - determinism: two runs bit-identical; no-key queries and keys at or past kv_length:
 *    exactly +0.
 *
 * The training step's path, the forward writing the softmax statistics
 * (mcl_attention_stats) and the backward taking them (mcl_attention_backward_stats), is held
 * to the same tolerance on the same kinds of shape; its forward output bit-identical to the
 * unsplit mcl_attention's; statistics whose max is one off (P doubled) fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops_internal.h"
#include "ref/ref.h"
#include "vk/inspect.h"

#define REF_TOLERANCE 1e-9
#define FD_TOLERANCE 1e-4
#define FD_REF_TOLERANCE 1e-6
#define FD_STEP 1e-3

static mcl_context *ctx;

/* How run() gets the softmax statistics: 0, the backward finds them; 1, the forward's
 * (mcl_attention_stats); 2, the forward's with every row's max one less (a negative control).
 * With 1 or 2, out_same is cleared where the forward's output differs from mcl_attention's. */
static int stats_mode;
static int out_same = 1;

typedef struct bwd_case {
    int64_t batch, seq_q, seq_kv, heads_q, heads_kv, dim;
    int64_t kv_length;  /* 0: all */
    int causal;
    float scale;        /* 0: default */
    float q_range;      /* q drawn from [-q_range, q_range): larger is a peakier softmax */
} bwd_case;

typedef struct bwd_data {
    float *q, *k, *v, *out, *dout;
    float *dq, *dk, *dv;                /* the device's gradients */
    float *want_dq, *want_dk, *want_dv; /* the reference's */
    mcl_tensor *tq, *tk, *tv, *tout, *tdout, *tdq, *tdk, *tdv;
    size_t nq, nkv;
} bwd_data;

static int64_t kv_len_of(const bwd_case *c)
{
    return c->kv_length ? c->kv_length : c->seq_kv;
}

static double scale_of(const bwd_case *c)
{
    return c->scale != 0.0f ? (double)c->scale : 1.0 / sqrt((double)c->dim);
}

static mcl_attention_desc desc_of(const bwd_case *c)
{
    mcl_attention_desc desc = {
        .size = sizeof desc,
        .scale = c->scale,
        .causal = c->causal,
        .kv_length = c->kv_length,
    };
    return desc;
}

/* Random q, k, v, dout; out from the device's forward (what a training step would pass). */
static void setup(bwd_data *d, const bwd_case *c, uint32_t seed)
{
    int64_t q_shape[4] = {c->batch, c->seq_q, c->heads_q, c->dim};
    int64_t kv_shape[4] = {c->batch, c->seq_kv, c->heads_kv, c->dim};
    d->nq = (size_t)(c->batch * c->seq_q * c->heads_q * c->dim);
    d->nkv = (size_t)(c->batch * c->seq_kv * c->heads_kv * c->dim);
    d->q = mcl_test_random_floats(d->nq, seed, -c->q_range, c->q_range);
    d->k = mcl_test_random_floats(d->nkv, seed * 3 + 1, -1.0f, 1.0f);
    d->v = mcl_test_random_floats(d->nkv, seed * 5 + 2, -1.0f, 1.0f);
    d->dout = mcl_test_random_floats(d->nq, seed * 7 + 3, -1.0f, 1.0f);
    d->out = mcl_test_floats(d->nq);
    d->dq = mcl_test_floats(d->nq);
    d->want_dq = mcl_test_floats(d->nq);
    d->dk = mcl_test_floats(d->nkv);
    d->dv = mcl_test_floats(d->nkv);
    d->want_dk = mcl_test_floats(d->nkv);
    d->want_dv = mcl_test_floats(d->nkv);
    d->tq = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, q_shape, d->q);
    d->tk = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, kv_shape, d->k);
    d->tv = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, kv_shape, d->v);
    d->tout = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, q_shape, NULL);
    d->tdout = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, q_shape, d->dout);
    d->tdq = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, q_shape, NULL);
    d->tdk = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, kv_shape, NULL);
    d->tdv = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, kv_shape, NULL);
    mcl_attention_desc desc = desc_of(c);
    assert_mcl_ok(mcl_attention(ctx, d->tq, d->tk, d->tv, &desc, d->tout));
    assert_mcl_ok(mcl_tensor_download(d->tout, 0, d->out, d->nq * 4));
}

static void teardown(bwd_data *d)
{
    mcl_tensor *all[] = {d->tq, d->tk, d->tv, d->tout, d->tdout, d->tdq, d->tdk, d->tdv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(d->q), free(d->k), free(d->v), free(d->out), free(d->dout);
    free(d->dq), free(d->dk), free(d->dv);
    free(d->want_dq), free(d->want_dk), free(d->want_dv);
}

/* The reference gradients for case c with d->dout; causal_shift and kv_head_mode make it
 * wrong on purpose. */
static void reference(bwd_data *d, const bwd_case *c, int64_t causal_shift, int kv_head_mode)
{
    ref_attention_backward_f32(d->q, d->k, d->v, d->dout, d->want_dq, d->want_dk, d->want_dv,
                               c->batch, c->seq_q, c->seq_kv, c->heads_q, c->heads_kv, c->dim,
                               kv_len_of(c), c->causal, causal_shift, scale_of(c),
                               kv_head_mode);
}

/* NaN into every gradient element (each must be overwritten), run the backward on the device
 * and download dq, dk, dv. */
static void run(bwd_data *d, const bwd_case *c)
{
    for (size_t i = 0; i < d->nq; i++)
        d->dq[i] = NAN;
    for (size_t i = 0; i < d->nkv; i++)
        d->dk[i] = NAN;
    assert_mcl_ok(mcl_tensor_upload(d->tdq, 0, d->dq, d->nq * 4));
    assert_mcl_ok(mcl_tensor_upload(d->tdk, 0, d->dk, d->nkv * 4));
    assert_mcl_ok(mcl_tensor_upload(d->tdv, 0, d->dk, d->nkv * 4));
    mcl_attention_desc desc = desc_of(c);
    if (stats_mode == 0) {
        assert_mcl_ok(mcl_attention_backward(ctx, d->tq, d->tk, d->tv, d->tout, d->tdout, &desc,
                                             d->tdq, d->tdk, d->tdv));
    } else {
        size_t n = (size_t)(c->batch * c->heads_q * c->seq_q * 4);
        int64_t shape[1] = {(int64_t)n};
        float *st = mcl_test_floats(n), *out = mcl_test_floats(d->nq);
        for (size_t i = 0; i < n; i++)
            st[i] = NAN;
        mcl_tensor *stats = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, shape, st);
        /* The unsplit forward's output, then the same with the statistics. */
        assert_mcl_ok(mcl_attention_ex(ctx, d->tq, d->tk, d->tv, &desc, 1, NULL, d->tout));
        assert_mcl_ok(mcl_tensor_download(d->tout, 0, d->out, d->nq * 4));
        assert_mcl_ok(mcl_attention_stats(ctx, d->tq, d->tk, d->tv, &desc, d->tout, stats));
        assert_mcl_ok(mcl_tensor_download(d->tout, 0, out, d->nq * 4));
        out_same &= memcmp(out, d->out, d->nq * 4) == 0;
        if (stats_mode == 2) {
            assert_mcl_ok(mcl_tensor_download(stats, 0, st, n * 4));
            for (size_t i = 0; i < n; i += 4)
                st[i] -= 1.0f;
            assert_mcl_ok(mcl_tensor_upload(stats, 0, st, n * 4));
        }
        assert_mcl_ok(mcl_attention_backward_stats(ctx, d->tq, d->tk, d->tv, d->tout, d->tdout,
                                                   &desc, d->tdq, d->tdk, d->tdv, stats, 1));
        mcl_tensor_destroy(stats);
        free(st), free(out);
    }
    assert_mcl_ok(mcl_tensor_download(d->tdq, 0, d->dq, d->nq * 4));
    assert_mcl_ok(mcl_tensor_download(d->tdk, 0, d->dk, d->nkv * 4));
    assert_mcl_ok(mcl_tensor_download(d->tdv, 0, d->dv, d->nkv * 4));
}

static const char *describe(const bwd_case *c, char *buf, size_t size)
{
    snprintf(buf, size,
             "attention backward B=%lld T=%lld S=%lld Hq=%lld Hkv=%lld D=%lld kv=%lld%s%s",
             (long long)c->batch, (long long)c->seq_q, (long long)c->seq_kv,
             (long long)c->heads_q, (long long)c->heads_kv, (long long)c->dim,
             (long long)kv_len_of(c), c->causal ? " causal" : "",
             c->scale != 0.0f ? " scaled" : "");
    return buf;
}

/* Whether the gradients that must be exactly zero are +0: dk and dv of keys at or past
 * kv_length, dq of queries that see no key. */
static int zeros_where_nothing_flows(const bwd_data *d, const bwd_case *c)
{
    int ok = 1;
    int64_t kv_len = kv_len_of(c);
    for (int64_t b = 0; b < c->batch; b++) {
        for (int64_t s = kv_len; s < c->seq_kv; s++) {
            size_t at = (size_t)(((b * c->seq_kv + s) * c->heads_kv) * c->dim);
            for (size_t i = 0; i < (size_t)(c->heads_kv * c->dim); i++)
                ok &= d->dk[at + i] == 0.0f && !signbit(d->dk[at + i]) && d->dv[at + i] == 0.0f &&
                      !signbit(d->dv[at + i]);
        }
        for (int64_t t = 0; c->causal && t < c->seq_q; t++) {
            if (t + kv_len - c->seq_q + 1 > 0)
                break;
            size_t at = (size_t)(((b * c->seq_q + t) * c->heads_q) * c->dim);
            for (size_t i = 0; i < (size_t)(c->heads_q * c->dim); i++)
                ok &= d->dq[at + i] == 0.0f && !signbit(d->dq[at + i]);
        }
    }
    return ok;
}

/* Run each case against the reference; `tag` names the plan in the check names. A non-zero
 * shared_limit or invocation_limit stands in for the device's shared-memory limit or
 * invocations per workgroup while the backward is recorded (the forward that makes `out`
 * keeps the real ones). */
static int check_cases(const bwd_case *cases, size_t count, const char *tag, uint32_t seed0,
                       uint32_t shared_limit, uint32_t invocation_limit)
{
    int failed = 0;
    for (size_t i = 0; i < count; i++) {
        const bwd_case *c = &cases[i];
        bwd_data d;
        setup(&d, c, seed0 + (uint32_t)i * 17);
        reference(&d, c, 0, 0);
        mcl_traits *traits = mcl_inspect_traits(ctx);
        uint32_t saved = traits->max_shared_bytes, saved_invocations = traits->max_invocations;
        if (shared_limit)
            traits->max_shared_bytes = shared_limit;
        if (invocation_limit)
            traits->max_invocations = invocation_limit;
        run(&d, c);
        traits->max_shared_bytes = saved;
        traits->max_invocations = saved_invocations;
        double e_dq = mcl_nmse(d.dq, d.want_dq, d.nq);
        double e_dk = mcl_nmse(d.dk, d.want_dk, d.nkv);
        double e_dv = mcl_nmse(d.dv, d.want_dv, d.nkv);
        char name[160], full[240];
        describe(c, name, sizeof name);
        printf("%s%s: nmse dq %.3g dk %.3g dv %.3g\n", name, tag, e_dq, e_dk, e_dv);
        snprintf(full, sizeof full, "%s%s dq", name, tag);
        failed += !mcl_test_record(full, "nmse vs reference", e_dq, REF_TOLERANCE);
        snprintf(full, sizeof full, "%s%s dk", name, tag);
        failed += !mcl_test_record(full, "nmse vs reference", e_dk, REF_TOLERANCE);
        snprintf(full, sizeof full, "%s%s dv", name, tag);
        failed += !mcl_test_record(full, "nmse vs reference", e_dv, REF_TOLERANCE);
        int n = snprintf(full, sizeof full, "%s%s: exact zeros where no gradient flows", name,
                         tag);
        failed += n < 0 || (size_t)n >= sizeof full; /* a name cut short */
        failed += !mcl_test_record_bool(full, zeros_where_nothing_flows(&d, c));
        teardown(&d);
    }
    return failed;
}

static void backward_matches_reference(void **state)
{
    (void)state;
    static const bwd_case cases[] = {
        /* B, T, S, Hq, Hkv, D, kv, causal, scale, q range */
        {1, 1, 1, 1, 1, 8, 0, 0, 0.0f, 1.0f},
        {2, 1, 37, 6, 2, 48, 0, 1, 0.0f, 4.0f},     /* T = 1 against a cache */
        {1, 7, 13, 3, 1, 5, 11, 1, 0.0f, 2.0f},     /* primes, causal offset, kv < S */
        {2, 7, 13, 3, 3, 5, 11, 0, 0.0f, 2.0f},
        {1, 37, 41, 6, 2, 48, 0, 1, 0.0f, 4.0f},    /* GQA, no tile multiple */
        {2, 37, 41, 6, 1, 48, 39, 0, 0.0f, 2.0f},
        {1, 67, 67, 6, 2, 64, 0, 1, 0.0f, 4.0f},
        {1, 23, 100, 4, 4, 64, 90, 1, 0.0f, 4.0f},  /* T < kv_length < S */
        {1, 5, 3, 2, 1, 16, 0, 1, 0.0f, 1.0f},      /* queries 0, 1 see no key */
        {1, 19, 19, 2, 1, 1, 0, 1, 0.0f, 2.0f},     /* D = 1 */
        {2, 9, 11, 2, 2, 2, 10, 0, 0.3f, 2.0f},     /* D = 2, explicit scale */
        {1, 5, 9, 2, 1, 256, 0, 1, 0.0f, 1.0f},     /* D = 256 */
        {1, 3, 7, 1, 1, 256, 6, 0, 0.0f, 0.5f},
        {2, 256, 256, 6, 6, 48, 0, 1, 0.0f, 2.0f},  /* the training shape, B = 2 */
        {2, 256, 256, 6, 6, 48, 0, 0, 0.0f, 2.0f},
    };
    int failed = check_cases(cases, sizeof cases / sizeof cases[0], "", 11, 0, 0);
    assert_int_equal(failed, 0);
}

/* The plans of devices with less shared memory or fewer invocations per workgroup than this
 * one: the same code with smaller tiles, down to one query row per dq workgroup and one key
 * per dk / dv workgroup, and with workgroups of 128 invocations (Vulkan's minimum), whose
 * accumulator bound shrinks the tiles of large head dims. */
static void smaller_device_plans(void **state)
{
    (void)state;
    static const bwd_case cases[] = {
        {1, 37, 41, 6, 2, 48, 0, 1, 0.0f, 4.0f},
        {1, 7, 13, 3, 1, 5, 11, 1, 0.0f, 2.0f},
        {1, 19, 19, 2, 1, 1, 0, 1, 0.0f, 2.0f},
        {1, 11, 9, 2, 1, 256, 0, 1, 0.0f, 1.0f},
        {1, 5, 3, 2, 1, 16, 0, 1, 0.0f, 1.0f},
    };
    static const uint32_t limits[][2] = {{16384, 0}, {8192, 0}, {0, 128}, {16384, 128}};
    int failed = 0;
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        if (limits[i][0] > mcl_inspect_traits(ctx)->max_shared_bytes ||
            limits[i][1] > mcl_inspect_traits(ctx)->max_invocations)
            continue;
        char tag[80];
        if (limits[i][1] == 0)
            snprintf(tag, sizeof tag, " (%u bytes of shared memory)", limits[i][0]);
        else if (limits[i][0] == 0)
            snprintf(tag, sizeof tag, " (%u invocations)", limits[i][1]);
        else
            snprintf(tag, sizeof tag, " (%u bytes of shared memory, %u invocations)",
                     limits[i][0], limits[i][1]);
        failed += check_cases(cases, sizeof cases / sizeof cases[0], tag, 500, limits[i][0],
                              limits[i][1]);
    }
    assert_int_equal(failed, 0);
}

/* The training step's path: the softmax statistics from the forward. */
static void statistics_from_the_forward(void **state)
{
    (void)state;
    static const bwd_case cases[] = {
        {2, 1, 37, 6, 2, 48, 0, 1, 0.0f, 4.0f},
        {1, 7, 13, 3, 1, 5, 11, 1, 0.0f, 2.0f},
        {1, 37, 41, 6, 2, 48, 0, 1, 0.0f, 4.0f},
        {2, 37, 41, 6, 1, 48, 39, 0, 0.0f, 2.0f},
        {1, 5, 3, 2, 1, 16, 0, 1, 0.0f, 1.0f},      /* queries 0, 1 see no key */
        {1, 5, 9, 2, 1, 256, 0, 1, 0.0f, 1.0f},
        {2, 256, 256, 6, 6, 48, 0, 1, 0.0f, 2.0f},
    };
    stats_mode = 1;
    out_same = 1;
    int failed = check_cases(cases, sizeof cases / sizeof cases[0], " (the forward's statistics)",
                             900, 0, 0);
    failed += !mcl_test_record_bool("attention forward with its statistics: the output "
                                    "bit-identical to the unsplit mcl_attention's", out_same);
    /* Negative control: every row's max one less doubles P. */
    const bwd_case *c = &cases[2];
    bwd_data d;
    setup(&d, c, 901);
    reference(&d, c, 0, 0);
    stats_mode = 2;
    run(&d, c);
    stats_mode = 0;
    double e = mcl_nmse(d.dq, d.want_dq, d.nq) + mcl_nmse(d.dv, d.want_dv, d.nkv);
    printf("negative control: the forward's statistics with the max one less: nmse dq + dv "
           "%.3g\n", e);
    failed += !mcl_test_record_bool("negative control: statistics with the max one off are "
                                    "detected", e > REF_TOLERANCE);
    teardown(&d);
    assert_int_equal(failed, 0);
}

/* ---------------------------------------------------------------- finite differences */

static double fd_loss(const double *q, const double *k, const double *v, const double *dout,
                      double *out, const bwd_case *c, size_t nq)
{
    ref_attention_fwd_d(q, k, v, out, c->batch, c->seq_q, c->seq_kv, c->heads_q, c->heads_kv,
                        c->dim, kv_len_of(c), c->causal, scale_of(c));
    double total = 0.0;
    for (size_t i = 0; i < nq; i++)
        total += dout[i] * out[i];
    return total;
}

/* Central differences of L in every element of x (one of q, k, v as doubles). */
static void fd_gradient(double *x, size_t n, const double *q, const double *k, const double *v,
                        const double *dout, double *out, const bwd_case *c, size_t nq,
                        double *fd)
{
    for (size_t i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + FD_STEP;
        double up = fd_loss(q, k, v, dout, out, c, nq);
        x[i] = keep - FD_STEP;
        double down = fd_loss(q, k, v, dout, out, c, nq);
        x[i] = keep;
        fd[i] = (up - down) / (2.0 * FD_STEP);
    }
}

/* max |got - fd| / max |fd| over the three gradients together. */
static double fd_error(const float *const *got, const double *const *fd, const size_t *n)
{
    double err = 0.0, top = 0.0;
    for (int g = 0; g < 3; g++) {
        for (size_t i = 0; i < n[g]; i++) {
            err = fmax(err, fabs((double)got[g][i] - fd[g][i]));
            top = fmax(top, fabs(fd[g][i]));
        }
    }
    return top > 0.0 ? err / top : err;
}

static double *to_double(const float *x, size_t n)
{
    double *y = malloc(n * sizeof *y);
    assert_non_null(y);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

static void backward_matches_finite_differences(void **state)
{
    (void)state;
    static const bwd_case cases[] = {
        {1, 5, 7, 2, 1, 3, 6, 1, 0.0f, 2.0f},    /* causal, kv < S, GQA */
        {2, 3, 4, 2, 2, 2, 0, 0, 0.7f, 2.0f},    /* explicit scale */
        {1, 4, 3, 3, 1, 5, 0, 1, 0.0f, 2.0f},    /* T > kv: query 0 sees no key */
    };
    int failed = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bwd_case *c = &cases[ci];
        bwd_data d;
        setup(&d, c, 900 + (uint32_t)ci);
        run(&d, c);
        reference(&d, c, 0, 0);
        double *q = to_double(d.q, d.nq), *k = to_double(d.k, d.nkv);
        double *v = to_double(d.v, d.nkv), *dout = to_double(d.dout, d.nq);
        double *out = malloc(d.nq * sizeof *out), *fq = malloc(d.nq * sizeof *fq);
        double *fk = malloc(d.nkv * sizeof *fk), *fv = malloc(d.nkv * sizeof *fv);
        assert_true(out && fq && fk && fv);
        fd_gradient(q, d.nq, q, k, v, dout, out, c, d.nq, fq);
        fd_gradient(k, d.nkv, q, k, v, dout, out, c, d.nq, fk);
        fd_gradient(v, d.nkv, q, k, v, dout, out, c, d.nq, fv);
        const double *fd[3] = {fq, fk, fv};
        const size_t n[3] = {d.nq, d.nkv, d.nkv};
        const float *got[3] = {d.dq, d.dk, d.dv};
        const float *want[3] = {d.want_dq, d.want_dk, d.want_dv};
        double err = fd_error(got, fd, n), ref_err = fd_error(want, fd, n);
        char name[160], full[220];
        describe(c, name, sizeof name);
        printf("%s: finite-difference error %.3g (reference %.3g)\n", name, err, ref_err);
        snprintf(full, sizeof full, "%s fd", name);
        failed += !mcl_test_record(full, "max error / max |fd|", err, FD_TOLERANCE);
        snprintf(full, sizeof full, "%s reference fd", name);
        failed += !mcl_test_record(full, "max error / max |fd|", ref_err, FD_REF_TOLERANCE);
        free(q), free(k), free(v), free(dout), free(out), free(fq), free(fk), free(fv);
        teardown(&d);
    }
    assert_int_equal(failed, 0);
}

/* ---------------------------------------------------------------- determinism, graphs */

static void backward_is_deterministic(void **state)
{
    (void)state;
    static const bwd_case cases[] = {
        {2, 256, 256, 6, 6, 48, 0, 1, 0.0f, 2.0f},
        {1, 37, 41, 6, 1, 48, 39, 0, 0.0f, 4.0f},
    };
    int failed = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bwd_case *c = &cases[ci];
        bwd_data d;
        setup(&d, c, 77 + (uint32_t)ci);
        run(&d, c);
        float *dq = malloc(d.nq * 4), *dk = malloc(d.nkv * 4), *dv = malloc(d.nkv * 4);
        assert_true(dq && dk && dv);
        memcpy(dq, d.dq, d.nq * 4);
        memcpy(dk, d.dk, d.nkv * 4);
        memcpy(dv, d.dv, d.nkv * 4);
        run(&d, c);
        int same = memcmp(dq, d.dq, d.nq * 4) == 0 && memcmp(dk, d.dk, d.nkv * 4) == 0 &&
                   memcmp(dv, d.dv, d.nkv * 4) == 0;
        char name[160], full[220];
        describe(c, name, sizeof name);
        printf("%s: two runs %s\n", name, same ? "bit-identical" : "DIFFER");
        snprintf(full, sizeof full, "%s: two runs bit-identical", name);
        failed += !mcl_test_record_bool(full, same);
        free(dq), free(dk), free(dv);
        teardown(&d);
    }
    assert_int_equal(failed, 0);
}

/* The backward captured in a graph and replayed with a new dout: its statistics scratch,
 * destroyed by the op during the capture, must live on with the graph. */
static void graph_replays_backward(void **state)
{
    (void)state;
    const bwd_case c = {1, 37, 41, 6, 2, 48, 0, 1, 0.0f, 4.0f};
    bwd_data d;
    setup(&d, &c, 321);
    mcl_attention_desc desc = desc_of(&c);
    mcl_graph *graph = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_attention_backward(ctx, d.tq, d.tk, d.tv, d.tout, d.tdout, &desc, d.tdq,
                                         d.tdk, d.tdv));
    assert_mcl_ok(mcl_graph_end(ctx, &graph));
    int passed = 1;
    for (uint32_t replay = 0; replay < 2; replay++) {
        mcl_fill_random(d.dout, d.nq, 2000 + replay, -1.0f, 1.0f);
        assert_mcl_ok(mcl_tensor_upload(d.tdout, 0, d.dout, d.nq * 4));
        assert_mcl_ok(mcl_graph_replay(ctx, graph));
        assert_mcl_ok(mcl_tensor_download(d.tdq, 0, d.dq, d.nq * 4));
        assert_mcl_ok(mcl_tensor_download(d.tdk, 0, d.dk, d.nkv * 4));
        assert_mcl_ok(mcl_tensor_download(d.tdv, 0, d.dv, d.nkv * 4));
        reference(&d, &c, 0, 0);
        double e = fmax(mcl_nmse(d.dq, d.want_dq, d.nq),
                        fmax(mcl_nmse(d.dk, d.want_dk, d.nkv), mcl_nmse(d.dv, d.want_dv, d.nkv)));
        char name[96];
        snprintf(name, sizeof name, "graph: attention backward replay %u with a new dout",
                 replay + 1);
        printf("%s: worst nmse %.3g\n", name, e);
        passed &= mcl_test_record(name, "max nmse of dq, dk, dv", e, REF_TOLERANCE);
    }
    mcl_graph_destroy(graph);
    teardown(&d);
    assert_true(passed);
}

/* ---------------------------------------------------------------- negative controls */

/* A dout with one element moved by 0.05 must change every gradient beyond the tolerance, and
 * a reference with the causal edge one key off or the wrong kv head per query head must fail
 * it: the comparisons can tell. */
static void negative_controls(void **state)
{
    (void)state;
    static const bwd_case cases[] = {
        {1, 37, 41, 6, 2, 48, 0, 1, 0.0f, 2.0f},
        {1, 7, 13, 3, 1, 5, 11, 1, 0.0f, 2.0f},
    };
    int caught = 1;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bwd_case *c = &cases[ci];
        bwd_data d;
        setup(&d, c, 40 + (uint32_t)ci);
        reference(&d, c, 0, 0);
        /* The last query row sees every key, so the change reaches all of dk and dv. */
        size_t at = d.nq - (size_t)c->dim / 2 - 1;
        float keep = d.dout[at];
        d.dout[at] = keep + 0.05f;
        assert_mcl_ok(mcl_tensor_upload(d.tdout, 0, d.dout, d.nq * 4));
        d.dout[at] = keep;
        run(&d, c);
        double p_dq = mcl_nmse(d.dq, d.want_dq, d.nq);
        double p_dk = mcl_nmse(d.dk, d.want_dk, d.nkv);
        double p_dv = mcl_nmse(d.dv, d.want_dv, d.nkv);
        printf("negative control %zu: one dout element + 0.05: nmse dq %.3g dk %.3g dv %.3g\n",
               ci, p_dq, p_dk, p_dv);
        caught &= p_dq > REF_TOLERANCE && p_dk > REF_TOLERANCE && p_dv > REF_TOLERANCE;

        assert_mcl_ok(mcl_tensor_upload(d.tdout, 0, d.dout, d.nq * 4));
        run(&d, c);
        reference(&d, c, -1, 0);
        double s_dq = mcl_nmse(d.dq, d.want_dq, d.nq);
        double s_dk = mcl_nmse(d.dk, d.want_dk, d.nkv);
        reference(&d, c, 0, 1);
        double h_dq = mcl_nmse(d.dq, d.want_dq, d.nq);
        double h_dk = mcl_nmse(d.dk, d.want_dk, d.nkv);
        double h_dv = mcl_nmse(d.dv, d.want_dv, d.nkv);
        printf("negative control %zu: causal edge off by one nmse dq %.3g dk %.3g; wrong kv head "
               "nmse dq %.3g dk %.3g dv %.3g\n", ci, s_dq, s_dk, h_dq, h_dk, h_dv);
        caught &= s_dq > REF_TOLERANCE && s_dk > REF_TOLERANCE;
        if (c->heads_kv > 1 && c->heads_kv < c->heads_q)
            caught &= h_dq > REF_TOLERANCE && h_dk > REF_TOLERANCE && h_dv > REF_TOLERANCE;
        teardown(&d);
    }
    int passed = mcl_test_record_bool("negative controls: a perturbed dout, an off-by-one "
                                      "causal edge and a wrong kv head mapping are detected",
                                      caught);
    assert_true(passed);
}

/* ---------------------------------------------------------------- bad arguments */

static void bad_arguments(void **state)
{
    (void)state;
    const int64_t s_q[4] = {1, 4, 6, 64}, s_kv[4] = {1, 8, 2, 64}, s_kv4[4] = {1, 8, 4, 64};
    const int64_t s_3d[3] = {4, 6, 64}, s_kvd[4] = {1, 8, 2, 32}, s_qt[4] = {1, 5, 6, 64};
    const int64_t s_big[4] = {1, 2, 1, 512};
    mcl_tensor *q = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_q, NULL);
    mcl_tensor *k = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_kv, NULL);
    mcl_tensor *v = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_kv, NULL);
    mcl_tensor *out = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_q, NULL);
    mcl_tensor *dout = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_q, NULL);
    mcl_tensor *dq = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_q, NULL);
    mcl_tensor *dk = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_kv, NULL);
    mcl_tensor *dv = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_kv, NULL);
    mcl_tensor *k4 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_kv4, NULL);
    mcl_tensor *q3 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, s_3d, NULL);
    mcl_tensor *kd = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_kvd, NULL);
    mcl_tensor *qt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_qt, NULL);
    mcl_tensor *i32 = mcl_test_tensor(ctx, MCL_DTYPE_I32, 4, s_q, NULL);
    mcl_tensor *big[8];
    for (int i = 0; i < 8; i++)
        big[i] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_big, NULL);
    mcl_attention_desc desc = {.size = sizeof desc};

    EXPECT_STATUS(mcl_attention_backward(NULL, q, k, v, out, dout, NULL, dq, dk, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, NULL, k, v, out, dout, NULL, dq, dk, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, NULL, dout, NULL, dq, dk, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dq, dk, NULL), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, i32, NULL, dq, dk, dv), DTYPE);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, i32, dk, dv), DTYPE);
    /* Shapes: a 3-d q, dout or dq unlike q, dk unlike k, Hq not a multiple of Hkv, head dims
     * that disagree. */
    EXPECT_STATUS(mcl_attention_backward(ctx, q3, k, v, q3, q3, NULL, q3, dk, dv), SHAPE);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, qt, NULL, dq, dk, dv), SHAPE);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, qt, dk, dv), SHAPE);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dq, k4, dv), SHAPE);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k4, k4, out, dout, NULL, dq, dk, dv), SHAPE);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, kd, kd, out, dout, NULL, dq, kd, kd), SHAPE);
    /* Aliasing: an output that is an input, or two outputs that are one tensor. */
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, q, dk, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dout, dk, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, out, dk, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dq, k, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dq, dk, v), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dq, dv, dv), INVALID);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dq, dk, dk), INVALID);
    /* The descriptor: kv_length outside [0, S], a scale that is not finite, size unset. */
    desc.kv_length = 9;
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, &desc, dq, dk, dv), INVALID);
    desc.kv_length = -1;
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, &desc, dq, dk, dv), INVALID);
    desc.kv_length = 0;
    desc.scale = NAN;
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, &desc, dq, dk, dv), INVALID);
    desc.scale = 0.0f;
    desc.size = 0;
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, &desc, dq, dk, dv), INVALID);
    /* The statistics path: none given, too few floats, one that is an argument. */
    const int64_t s_few[1] = {95}; /* B x Hq x T x 4 = 96 */
    mcl_tensor *few = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s_few, NULL);
    EXPECT_STATUS(mcl_attention_stats(ctx, q, k, v, NULL, out, NULL), INVALID);
    EXPECT_STATUS(mcl_attention_stats(ctx, q, k, v, NULL, out, i32), SHAPE);
    EXPECT_STATUS(mcl_attention_stats(ctx, q, k, v, NULL, out, few), SHAPE);
    EXPECT_STATUS(mcl_attention_stats(ctx, q, k, v, NULL, out, q), INVALID);
    mcl_tensor_destroy(few);
    EXPECT_STATUS(mcl_attention_backward_stats(ctx, q, k, v, out, dout, NULL, dq, dk, dv, NULL,
                                               1),
                  INVALID);
    /* Head dim above 256. */
    EXPECT_STATUS(mcl_attention_backward(ctx, big[0], big[1], big[2], big[3], big[4], NULL,
                                         big[5], big[6], big[7]),
                  UNSUPPORTED);
    /* A tensor of another context. */
    mcl_context *other = mcl_test_context_without_subgroups();
    assert_non_null(other);
    mcl_tensor *foreign = mcl_test_tensor(other, MCL_DTYPE_F32, 4, s_kv, NULL);
    EXPECT_STATUS(mcl_attention_backward(ctx, q, k, v, out, dout, NULL, dq, foreign, dv),
                  MCL_ERROR_WRONG_CONTEXT);
    mcl_tensor_destroy(foreign);
    int other_clean = mcl_context_validation_errors(other) == 0;
    mcl_context_destroy(other);

    mcl_tensor *all[] = {q, k, v, out, dout, dq, dk, dv, k4, q3, kd, qt, i32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    for (int i = 0; i < 8; i++)
        mcl_tensor_destroy(big[i]);
    int passed = mcl_test_record("attention backward: bad arguments give the documented "
                                 "statuses", "wrong statuses", mcl_test_wrong_statuses, 0);
    passed &= mcl_test_record_bool("attention backward: the second context's validation is "
                                   "clean", other_clean);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backward_matches_reference),
        cmocka_unit_test(smaller_device_plans),
        cmocka_unit_test(statistics_from_the_forward),
        cmocka_unit_test(backward_matches_finite_differences),
        cmocka_unit_test(backward_is_deterministic),
        cmocka_unit_test(graph_replays_backward),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
