/* Row operations against the CPU references: softmax (scale, causal mask with Tq < Tk,
 * Tq = Tk and Tq > Tk, -inf inputs), reduce_rows (sum, mean, max), RMSNorm and LayerNorm,
 * each on both reduction paths of the same device: the harness context (subgroup arithmetic,
 * where the device has it) and a second context created with
 * MOTIFCL_DISABLE=subgroup-arithmetic (the shared-memory tree). Also aliasing (out == x),
 * bad arguments and negative controls.
 *
 * Tolerances (normalised MSE against tests/ref, which works in double):
 *  - reduce max: 0. A max is exact in any order.
 *  - everything else: 1e-10. The GPU sums in float in another order than the reference
 *    (a relative error near sqrt(D) * 6e-8 for these inputs, NMSE ~1e-13 at D = 12289), and
 *    Vulkan lets exp2 err by 3 + 2|x| ulp and inversesqrt by 2 ulp; drivers differ by a few
 *    ulp. 1e-10 (a relative error of ~1e-5) covers that with room, and is still far below
 *    what a wrong mask, a missing max subtraction or a cancelling variance gives (the
 *    negative controls show each is caught).
 *
 * Shapes: 1, primes, row lengths that are and are not multiples of 4 (the vec4 and scalar
 * variants) and of the workgroup, rows longer than a workgroup (4097, 12288, 12289), many
 * rows (3000 x 257), more rows than the 65535 workgroups a dispatch may have (70000 x 3,
 * grid-strided), and a large one (1024 x 4096). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops_internal.h"
#include "ref/ref.h"

#define TOL_EXACT 0.0
#define TOL_ROWS 1e-10

/* The two reduction paths: the harness context and the one without subgroup arithmetic. */
typedef struct path {
    mcl_context *ctx;
    const char *name;
} path;

static mcl_context *ctx;
static mcl_context *ctx_tree;
static path paths[2];

typedef struct shape {
    uint32_t ndim;
    int64_t dims[4];
} shape;

static const shape row_shapes[] = {
    {1, {1}},         {1, {4099}},       {2, {7, 13}},     {2, {5, 8}},
    {2, {1, 4099}},   {2, {2, 4097}},    {2, {3, 12289}},  {2, {4, 12288}},
    {2, {3000, 257}}, {3, {2, 3, 64}},   {2, {70000, 3}},  {2, {1024, 4096}},
};
#define ROW_SHAPES (sizeof row_shapes / sizeof row_shapes[0])

static size_t numel(const shape *s)
{
    size_t n = 1;
    for (uint32_t i = 0; i < s->ndim; i++)
        n *= (size_t)s->dims[i];
    return n;
}

static size_t row_len(const shape *s)
{
    return (size_t)s->dims[s->ndim - 1];
}

static void shape_name(const shape *s, char *buf, size_t size)
{
    int len = snprintf(buf, size, "[");
    for (uint32_t i = 0; i < s->ndim && len > 0 && (size_t)len < size; i++)
        len += snprintf(buf + len, size - (size_t)len, i ? ",%lld" : "%lld",
                        (long long)s->dims[i]);
    if (len > 0 && (size_t)len < size)
        snprintf(buf + len, size - (size_t)len, "]");
}

static mcl_tensor *device(mcl_context *c, const shape *s, const float *data)
{
    mcl_tensor *t;
    assert_mcl_ok(mcl_tensor_create(c, MCL_DTYPE_F32, s->ndim, s->dims, &t));
    if (data)
        assert_mcl_ok(mcl_tensor_upload(t, 0, data, numel(s) * sizeof(float)));
    return t;
}

static void download(mcl_tensor *t, float *dst, size_t n)
{
    assert_mcl_ok(mcl_tensor_download(t, 0, dst, n * sizeof(float)));
}

static int record(const char *what, const path *p, const shape *s, const char *extra,
                  const float *got, const float *want, size_t n, double tol)
{
    char sn[64], name[256];
    shape_name(s, sn, sizeof sn);
    snprintf(name, sizeof name, "%s %s%s [%s]", what, sn, extra, p->name);
    double nmse = mcl_nmse(got, want, n);
    printf("%s: nmse %.3g\n", name, nmse);
    return mcl_test_record(name, "nmse", nmse, tol);
}

/* The reduction path each context takes is the one its features say, and on a device with
 * subgroup arithmetic the two contexts take different ones: both paths run below. */
static void reduction_paths(void **state)
{
    (void)state;
    mcl_device_info info = {.size = sizeof info}, tree = {.size = sizeof tree};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    assert_mcl_ok(mcl_context_device_info(ctx_tree, &tree));
    int has = (info.features_enabled & MCL_FEATURE_SUBGROUP_ARITHMETIC) != 0;
    int ok = mcl_test_record_bool("harness context: subgroup path iff subgroup arithmetic",
                                  mcl_rows_use_subgroup(ctx) == has);
    ok &= mcl_test_record_bool("MOTIFCL_DISABLE=subgroup-arithmetic context: tree path",
                               !(tree.features_enabled & MCL_FEATURE_SUBGROUP_ARITHMETIC) &&
                                   mcl_rows_use_subgroup(ctx_tree) == 0);
    if (info.features_available & MCL_FEATURE_SUBGROUP_ARITHMETIC) {
        ok &= mcl_test_record_bool("both reduction paths run on this device",
                                   mcl_rows_use_subgroup(ctx) && !mcl_rows_use_subgroup(ctx_tree));
    } else {
        mcl_test_note("reduction_paths", "no subgroup arithmetic: only the tree path ran");
    }
    char size[32];
    snprintf(size, sizeof size, "%u", info.subgroup_size);
    mcl_test_note("subgroup_size", size);
    assert_true(ok);
}

/* softmax over s with the given options on path p, against the reference; x is drawn from
 * [lo, hi). Returns whether it passed. */
static int check_softmax(const path *p, const shape *s, float scale, int causal, float lo,
                         float hi, int in_place, uint32_t seed)
{
    size_t n = numel(s), d = row_len(s), rows = n / d;
    size_t tq = s->ndim >= 2 ? (size_t)s->dims[s->ndim - 2] : 1;
    float *x = mcl_test_random_floats(n, seed, lo, hi), *want = mcl_test_floats(n), *got = mcl_test_floats(n);
    ref_softmax_f32(x, rows, d, tq, causal, scale, want);
    mcl_tensor *tx = device(p->ctx, s, x);
    mcl_tensor *ty = in_place ? tx : device(p->ctx, s, NULL);
    assert_mcl_ok(mcl_softmax(p->ctx, tx, scale, causal, ty));
    download(ty, got, n);
    char extra[96];
    snprintf(extra, sizeof extra, " scale %g%s%s", scale, causal ? " causal" : "",
             in_place ? " in place" : "");
    int passed = record("softmax", p, s, extra, got, want, n, TOL_ROWS);
    if (!in_place)
        mcl_tensor_destroy(ty);
    mcl_tensor_destroy(tx);
    free(x);
    free(want);
    free(got);
    return passed;
}

static void softmax_plain(void **state)
{
    (void)state;
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        for (size_t k = 0; k < ROW_SHAPES; k++)
            passed &= check_softmax(&paths[pi], &row_shapes[k], 1.0f, 0, -8.0f, 8.0f, k % 2,
                                    (uint32_t)(10 + k));
    }
    assert_true(passed);
}

/* Inputs of +-200 overflow exp() unless the row max is subtracted first; a scale below 1
 * and a negative one go through the same folded multiply. */
static void softmax_scale_and_range(void **state)
{
    (void)state;
    static const shape shapes[] = {{2, {3, 4099}}, {2, {8, 1024}}, {2, {33, 7}}};
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            passed &= check_softmax(&paths[pi], &shapes[k], 1.0f, 0, -200.0f, 200.0f, 0,
                                    (uint32_t)(50 + k));
            passed &= check_softmax(&paths[pi], &shapes[k], 0.125f, 0, -8.0f, 8.0f, 1,
                                    (uint32_t)(60 + k));
            passed &= check_softmax(&paths[pi], &shapes[k], -0.7f, 0, -8.0f, 8.0f, 0,
                                    (uint32_t)(70 + k));
        }
    }
    assert_true(passed);
}

/* The causal rule j > i + (Tk - Tq) with Tq < Tk (a query block against a longer cache),
 * Tq = Tk, a mask boundary inside a vec4, a 1-D x (one query: nothing masked), and
 * Tq > Tk, where the first Tq - Tk queries see no key at all and must come out as zeros. */
static void softmax_causal(void **state)
{
    (void)state;
    static const shape shapes[] = {
        {3, {2, 5, 9}}, {2, {6, 6}}, {3, {3, 6, 16}}, {3, {1, 3, 4099}},
        {3, {2, 64, 64}}, {2, {40, 1000}}, {1, {9}}, {2, {7, 4}}, {3, {2, 9, 8}},
    };
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
            passed &= check_softmax(&paths[pi], &shapes[k], 0.5f, 1, -8.0f, 8.0f, k % 2,
                                    (uint32_t)(80 + k));

        /* Tq > Tk: rows with nothing visible are exact zeros (no NaN). */
        const shape s = {2, {7, 4}};
        float x[28], y[28];
        mcl_fill_random(x, 28, 91, -8.0f, 8.0f);
        mcl_tensor *t = device(paths[pi].ctx, &s, x);
        assert_mcl_ok(mcl_softmax(paths[pi].ctx, t, 1.0f, 1, t));
        download(t, y, 28);
        int zeros = 1;
        for (size_t i = 0; i < 3 * 4; i++) /* queries 0..2 see keys j <= i - 3 */
            zeros &= y[i] == 0.0f;
        char name[128];
        snprintf(name, sizeof name, "softmax causal Tq > Tk: rows with no visible key are 0 [%s]",
                 paths[pi].name);
        passed &= mcl_test_record_bool(name, zeros);
        mcl_tensor_destroy(t);
    }
    assert_true(passed);
}

/* -inf entries, as an additive mask would leave them: they get probability 0, and a row of
 * nothing but -inf comes out as zeros rather than NaN. */
static void softmax_infinite_inputs(void **state)
{
    (void)state;
    static const shape shapes[] = {{2, {4, 12}}, {2, {4, 13}}, {2, {4, 300}}};
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            const shape *s = &shapes[k];
            size_t n = numel(s), d = row_len(s);
            float *x = mcl_test_random_floats(n, (uint32_t)(95 + k), -8.0f, 8.0f);
            float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
            for (size_t j = 0; j < d; j++) {
                x[1 * d + j] = -INFINITY;      /* row 1: all masked */
                if (j % 2)
                    x[2 * d + j] = -INFINITY;  /* row 2: every other one */
            }
            x[3 * d + d - 1] = -INFINITY;      /* row 3: the last one */
            ref_softmax_f32(x, n / d, d, 1, 0, 1.0f, want);
            mcl_tensor *t = device(paths[pi].ctx, s, x);
            assert_mcl_ok(mcl_softmax(paths[pi].ctx, t, 1.0f, 0, t));
            download(t, got, n);
            passed &= record("softmax with -inf inputs", &paths[pi], s, "", got, want, n,
                             TOL_ROWS);
            mcl_tensor_destroy(t);
            free(x);
            free(want);
            free(got);
        }
    }
    assert_true(passed);
}

static const char *reduce_names[] = {"sum", "mean", "max"};

static void reduce_rows(void **state)
{
    (void)state;
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        for (size_t k = 0; k < ROW_SHAPES; k++) {
            const shape *s = &row_shapes[k];
            size_t n = numel(s), d = row_len(s), rows = n / d;
            shape so = {s->ndim > 1 ? s->ndim - 1 : 1, {1}};
            for (uint32_t i = 0; i + 1 < s->ndim; i++)
                so.dims[i] = s->dims[i];
            float *x = mcl_test_random_floats(n, (uint32_t)(200 + k), -1.0f, 1.0f);
            float *want = mcl_test_floats(rows), *got = mcl_test_floats(rows);
            mcl_tensor *tx = device(paths[pi].ctx, s, x), *ty = device(paths[pi].ctx, &so, NULL);
            for (int op = REF_REDUCE_SUM; op <= REF_REDUCE_MAX; op++) {
                ref_reduce_rows_f32(op, x, rows, d, want);
                assert_mcl_ok(mcl_reduce_rows(paths[pi].ctx, (mcl_reduce_op)op, tx, ty));
                download(ty, got, rows);
                char what[32];
                snprintf(what, sizeof what, "reduce %s", reduce_names[op]);
                passed &= record(what, &paths[pi], s, "", got, want, rows,
                                 op == REF_REDUCE_MAX ? TOL_EXACT : TOL_ROWS);
            }
            mcl_tensor_destroy(tx);
            mcl_tensor_destroy(ty);
            free(x);
            free(want);
            free(got);
        }
    }
    assert_true(passed);
}

static void rmsnorm(void **state)
{
    (void)state;
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        for (size_t k = 0; k < ROW_SHAPES; k++) {
            const shape *s = &row_shapes[k];
            size_t n = numel(s), d = row_len(s), rows = n / d;
            const shape sw = {1, {(int64_t)d}};
            float *x = mcl_test_random_floats(n, (uint32_t)(300 + k), -3.0f, 3.0f);
            float *w = mcl_test_random_floats(d, (uint32_t)(400 + k), 0.5f, 1.5f);
            float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
            /* With a weight and without, in place and not, in turn. */
            int with_weight = k % 2 == 0, in_place = (k / 2) % 2 == 1;
            ref_rmsnorm_f32(x, with_weight ? w : NULL, rows, d, 1e-5f, want);
            mcl_tensor *tx = device(paths[pi].ctx, s, x), *tw = device(paths[pi].ctx, &sw, w);
            mcl_tensor *ty = in_place ? tx : device(paths[pi].ctx, s, NULL);
            assert_mcl_ok(mcl_rmsnorm(paths[pi].ctx, tx, with_weight ? tw : NULL, 1e-5f, ty));
            download(ty, got, n);
            char extra[64];
            snprintf(extra, sizeof extra, "%s%s", with_weight ? " weight" : " no weight",
                     in_place ? " in place" : "");
            passed &= record("rmsnorm", &paths[pi], s, extra, got, want, n, TOL_ROWS);
            if (!in_place)
                mcl_tensor_destroy(ty);
            mcl_tensor_destroy(tx);
            mcl_tensor_destroy(tw);
            free(x);
            free(w);
            free(want);
            free(got);
        }
    }
    assert_true(passed);
}

/* LayerNorm of x drawn from [offset - 2, offset + 2); `variant` picks weight and bias. */
static int check_layernorm(const path *p, const shape *s, float offset, int variant,
                           int in_place, uint32_t seed)
{
    size_t n = numel(s), d = row_len(s), rows = n / d;
    const shape sp = {1, {(int64_t)d}};
    float *x = mcl_test_random_floats(n, seed, offset - 2.0f, offset + 2.0f);
    float *w = mcl_test_random_floats(d, seed + 1, 0.5f, 1.5f), *b = mcl_test_random_floats(d, seed + 2, -1.0f, 1.0f);
    float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
    int use_w = variant & 1, use_b = (variant >> 1) & 1;
    ref_layernorm_f32(x, use_w ? w : NULL, use_b ? b : NULL, rows, d, 1e-5f, want);
    mcl_tensor *tx = device(p->ctx, s, x), *tw = device(p->ctx, &sp, w),
               *tb = device(p->ctx, &sp, b);
    mcl_tensor *ty = in_place ? tx : device(p->ctx, s, NULL);
    assert_mcl_ok(mcl_layernorm(p->ctx, tx, use_w ? tw : NULL, use_b ? tb : NULL, 1e-5f, ty));
    download(ty, got, n);
    char extra[96];
    snprintf(extra, sizeof extra, " offset %g%s%s%s", offset, use_w ? " weight" : "",
             use_b ? " bias" : "", in_place ? " in place" : "");
    int passed = record("layernorm", p, s, extra, got, want, n, TOL_ROWS);
    if (!in_place)
        mcl_tensor_destroy(ty);
    mcl_tensor_destroy(tx);
    mcl_tensor_destroy(tw);
    mcl_tensor_destroy(tb);
    free(x);
    free(w);
    free(b);
    free(want);
    free(got);
    return passed;
}

static void layernorm(void **state)
{
    (void)state;
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        for (size_t k = 0; k < ROW_SHAPES; k++)
            passed &= check_layernorm(&paths[pi], &row_shapes[k], 0.0f, (int)(k % 4),
                                      (k / 4) % 2 == 1, (uint32_t)(500 + 3 * k));
        /* Far from zero, where a variance from E[x^2] - E[x]^2 cancels (negative_controls
         * shows that it would fail here). */
        static const shape far[] = {{2, {8, 4096}}, {2, {8, 257}}, {2, {3, 12289}}};
        for (size_t k = 0; k < sizeof far / sizeof far[0]; k++)
            passed &= check_layernorm(&paths[pi], &far[k], 1000.0f, 3, k % 2 == 1,
                                      (uint32_t)(600 + 3 * k));
    }
    assert_true(passed);
}

/* One batch, several dependent row ops, some in place: each reads what the last wrote. */
static void chained(void **state)
{
    (void)state;
    const shape s = {2, {19, 300}}, sw = {1, {300}}, so = {1, {19}};
    size_t n = numel(&s);
    float *x = mcl_test_random_floats(n, 701, -2.0f, 2.0f), *w = mcl_test_random_floats(300, 702, 0.5f, 1.5f);
    float *t = mcl_test_floats(n), *want = mcl_test_floats(19), *got = mcl_test_floats(19);
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        mcl_context *c = paths[pi].ctx;
        mcl_tensor *tx = device(c, &s, x), *tw = device(c, &sw, w), *ty = device(c, &s, NULL),
                   *to = device(c, &so, NULL);
        assert_mcl_ok(mcl_rmsnorm(c, tx, tw, 1e-6f, ty));          /* y = rmsnorm(x) w */
        assert_mcl_ok(mcl_softmax(c, ty, 2.0f, 0, ty));            /* y = softmax(2 y) */
        assert_mcl_ok(mcl_layernorm(c, ty, NULL, tw, 1e-5f, tx));  /* x = layernorm(y) + w */
        assert_mcl_ok(mcl_reduce_rows(c, MCL_REDUCE_MAX, tx, to)); /* o = max(x) */
        ref_rmsnorm_f32(x, w, 19, 300, 1e-6f, t);
        ref_softmax_f32(t, 19, 300, 19, 0, 2.0f, t);
        ref_layernorm_f32(t, NULL, w, 19, 300, 1e-5f, t);
        ref_reduce_rows_f32(REF_REDUCE_MAX, t, 19, 300, want);
        download(to, got, 19);
        passed &= record("chained rmsnorm, softmax, layernorm, max", &paths[pi], &s, "", got,
                         want, 19, TOL_ROWS);
        mcl_tensor_destroy(tx);
        mcl_tensor_destroy(tw);
        mcl_tensor_destroy(ty);
        mcl_tensor_destroy(to);
    }
    free(x);
    free(w);
    free(t);
    free(want);
    free(got);
    assert_true(passed);
}

/* The comparisons can fail at the tolerances used above: a reference off in one row, a
 * softmax reference that forgets the causal mask, and LayerNorm with the cancelling
 * E[x^2] - E[x]^2 variance on data far from zero are all caught. */
static void negative_controls(void **state)
{
    (void)state;
    const path *p = &paths[0];
    int all = 1;

    const shape s = {2, {16, 100}}, so = {1, {16}};
    float *x = mcl_test_random_floats(1600, 801, -1.0f, 1.0f), *want = mcl_test_floats(16), *got = mcl_test_floats(16);
    mcl_tensor *tx = device(p->ctx, &s, x), *to = device(p->ctx, &so, NULL);
    assert_mcl_ok(mcl_reduce_rows(p->ctx, MCL_REDUCE_SUM, tx, to));
    download(to, got, 16);
    ref_reduce_rows_f32(REF_REDUCE_SUM, x, 16, 100, want);
    want[5] *= 1.001f;
    int caught = mcl_nmse(got, want, 16) > TOL_ROWS;
    all &= mcl_test_record_bool("negative control: a reference wrong in one row is detected",
                                caught);
    mcl_tensor_destroy(tx);
    mcl_tensor_destroy(to);
    free(x);
    free(want);
    free(got);

    const shape c = {3, {2, 5, 9}};
    size_t n = numel(&c);
    x = mcl_test_random_floats(n, 802, -8.0f, 8.0f);
    want = mcl_test_floats(n);
    got = mcl_test_floats(n);
    tx = device(p->ctx, &c, x);
    assert_mcl_ok(mcl_softmax(p->ctx, tx, 0.5f, 1, tx));
    download(tx, got, n);
    ref_softmax_f32(x, 10, 9, 5, 0, 0.5f, want);
    caught = mcl_nmse(got, want, n) > TOL_ROWS;
    all &= mcl_test_record_bool("negative control: a softmax reference without the causal "
                                "mask is detected",
                                caught);
    mcl_tensor_destroy(tx);
    free(x);
    free(want);
    free(got);

    const shape f = {2, {8, 4096}};
    n = numel(&f);
    x = mcl_test_random_floats(n, 803, 998.0f, 1002.0f);
    want = mcl_test_floats(n);
    got = mcl_test_floats(n);
    ref_layernorm_f32(x, NULL, NULL, 8, 4096, 1e-5f, want);
    ref_layernorm_naive_f32(x, 8, 4096, 1e-5f, got);
    double nmse = mcl_nmse(got, want, n);
    printf("layernorm with the cancelling variance at offset 1000: nmse %.3g\n", nmse);
    caught = nmse > TOL_ROWS;
    all &= mcl_test_record_bool("negative control: a LayerNorm whose variance cancels fails "
                                "the tolerance",
                                caught);
    free(x);
    free(want);
    free(got);
    assert_true(all);
}

static void bad_arguments(void **state)
{
    (void)state;
    const shape s = {2, {4, 6}}, s1 = {1, {6}}, one = {1, {1}}, s4 = {1, {4}}, w5 = {1, {5}},
                w16 = {2, {1, 6}}, s41 = {2, {4, 1}};
    mcl_tensor *x = device(ctx, &s, NULL), *y = device(ctx, &s, NULL), *v = device(ctx, &s1, NULL),
               *o4 = device(ctx, &s4, NULL), *o1 = device(ctx, &one, NULL),
               *bad_w = device(ctx, &w5, NULL), *w2d = device(ctx, &w16, NULL),
               *o41 = device(ctx, &s41, NULL), *w = device(ctx, &s1, NULL);
    mcl_tensor *i32, *foreign;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, s.ndim, s.dims, &i32));
    assert_mcl_ok(mcl_tensor_create(ctx_tree, MCL_DTYPE_F32, s.ndim, s.dims, &foreign));

    assert_int_equal(mcl_softmax(ctx, x, 1.0f, 0, v), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_softmax(ctx, x, 1.0f, 0, i32), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_softmax(ctx, x, 1.0f, 0, foreign), MCL_ERROR_WRONG_CONTEXT);
    assert_int_equal(mcl_softmax(ctx, NULL, 1.0f, 0, y), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_softmax(NULL, x, 1.0f, 0, y), MCL_ERROR_INVALID_ARGUMENT);

    assert_mcl_ok(mcl_reduce_rows(ctx, MCL_REDUCE_SUM, x, o4));
    assert_mcl_ok(mcl_reduce_rows(ctx, MCL_REDUCE_MEAN, v, o1)); /* 1-D x gives [1] */
    assert_int_equal(mcl_reduce_rows(ctx, MCL_REDUCE_SUM, x, o41), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_reduce_rows(ctx, MCL_REDUCE_SUM, x, v), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_reduce_rows(ctx, MCL_REDUCE_SUM, v, o4), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_reduce_rows(ctx, (mcl_reduce_op)3, x, o4), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_reduce_rows(ctx, MCL_REDUCE_MAX, o1, o1), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_reduce_rows(ctx, MCL_REDUCE_MAX, i32, o4), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_reduce_rows(ctx, MCL_REDUCE_MAX, foreign, o4), MCL_ERROR_WRONG_CONTEXT);

    assert_mcl_ok(mcl_rmsnorm(ctx, x, w, 1e-5f, y));
    assert_int_equal(mcl_rmsnorm(ctx, x, bad_w, 1e-5f, y), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_rmsnorm(ctx, x, w2d, 1e-5f, y), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_rmsnorm(ctx, x, w, 1e-5f, v), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_rmsnorm(ctx, x, i32, 1e-5f, y), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_rmsnorm(ctx, x, foreign, 1e-5f, y), MCL_ERROR_WRONG_CONTEXT);
    /* The weight may not be the output: other rows still read it. */
    assert_int_equal(mcl_rmsnorm(ctx, v, w, 1e-5f, w), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_rmsnorm(ctx, x, NULL, 1e-5f, NULL), MCL_ERROR_INVALID_ARGUMENT);

    assert_mcl_ok(mcl_layernorm(ctx, x, w, v, 1e-5f, y));
    assert_int_equal(mcl_layernorm(ctx, x, w, bad_w, 1e-5f, y), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_layernorm(ctx, x, bad_w, NULL, 1e-5f, y), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_layernorm(ctx, x, NULL, NULL, 1e-5f, o4), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_layernorm(ctx, x, NULL, i32, 1e-5f, y), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_layernorm(ctx, x, NULL, foreign, 1e-5f, y), MCL_ERROR_WRONG_CONTEXT);
    assert_int_equal(mcl_layernorm(ctx, v, NULL, w, 1e-5f, w), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_layernorm(NULL, x, NULL, NULL, 1e-5f, y), MCL_ERROR_INVALID_ARGUMENT);

    assert_mcl_ok(mcl_finish(ctx));
    mcl_test_record_bool("bad arguments give their documented statuses", 1);
    mcl_tensor *all[] = {x, y, v, o4, o1, bad_w, w2d, o41, w, i32, foreign};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    ctx_tree = mcl_test_context_without_subgroups();
    if (!mcl_test_record_bool("context without subgroup arithmetic created", ctx_tree != NULL))
        return mcl_test_finish(1);
    paths[0] = (path){ctx, mcl_rows_use_subgroup(ctx) ? "subgroup" : "tree"};
    paths[1] = (path){ctx_tree, "tree"};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reduction_paths),
        cmocka_unit_test(softmax_plain),
        cmocka_unit_test(softmax_scale_and_range),
        cmocka_unit_test(softmax_causal),
        cmocka_unit_test(softmax_infinite_inputs),
        cmocka_unit_test(reduce_rows),
        cmocka_unit_test(rmsnorm),
        cmocka_unit_test(layernorm),
        cmocka_unit_test(chained),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    int failures = cmocka_run_group_tests(tests, NULL, NULL);

    /* The harness checks its own context's validation errors; this one's are counted here. */
    failures += mcl_test_context_release(ctx_tree, " without subgroup arithmetic");
    return mcl_test_finish(failures);
}
