/* Element-wise operations against the CPU references: mcl_binary (every op, same shape and
 * broadcast), mcl_scale, mcl_activate, mcl_swiglu, aliasing, bad arguments, and negative
 * controls showing that the comparisons can fail.
 *
 * Tolerances (normalised MSE against tests/ref):
 *  - add, sub, mul, ReLU: 0. Vulkan requires OpFAdd, OpFSub and OpFMul to be correctly
 *    rounded, so the GPU result equals the CPU's float result bit for bit; ReLU only
 *    selects. Inputs stay away from the denormal range, which devices may flush.
 *  - div: 1e-12. Vulkan allows 2.5 ulp for x / y, a relative error of about 3e-7 and so an
 *    NMSE of at most ~1e-13.
 *  - scale: 1e-12. alpha * x + beta may be fused into one fma or rounded twice: at most an
 *    ulp apart, NMSE ~1e-14.
 *  - GELU, SiLU, SwiGLU: 1e-10. Vulkan lets exp() err by 3 + 2|x| ulp and drivers differ by
 *    a few ulp; 1e-10 (a relative error of ~1e-5) covers that, and is still 1000x tighter
 *    than the gap between GELU's tanh and erf forms (a negative control checks that).
 *
 * Shapes cover 1, primes, non-multiples of the 256-wide workgroup and of 4 (the vec4 path
 * and its scalar tail), and a large tensor (1024 x 4096). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref/ref.h"

static mcl_context *ctx;

/* Tolerances, as justified above. */
#define TOL_EXACT 0.0
#define TOL_DIV 1e-12
#define TOL_SCALE 1e-12
#define TOL_TRANSCENDENTAL 1e-10

typedef struct shape {
    uint32_t ndim;
    int64_t dims[4];
} shape;

static size_t numel(const shape *s)
{
    size_t n = 1;
    for (uint32_t i = 0; i < s->ndim; i++)
        n *= (size_t)s->dims[i];
    return n;
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

/* A device tensor of shape s holding `data` (uninitialised when data is NULL). */
static mcl_tensor *device(const shape *s, const float *data)
{
    mcl_tensor *t;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, s->ndim, s->dims, &t));
    if (data)
        assert_mcl_ok(mcl_tensor_upload(t, 0, data, numel(s) * sizeof(float)));
    return t;
}

static void download(mcl_tensor *t, float *dst, size_t n)
{
    assert_mcl_ok(mcl_tensor_download(t, 0, dst, n * sizeof(float)));
}

static const char *binary_names[] = {"add", "sub", "mul", "div"};

static double binary_tolerance(int op)
{
    return op == REF_BINARY_DIV ? TOL_DIV : TOL_EXACT;
}

/* Run a (op) b on the device and record its NMSE against the reference. b's values lie in
 * [0.5, 4.5], away from 0 for division. */
static int check_binary(int op, const shape *sa, const shape *sb, uint32_t seed)
{
    size_t na = numel(sa), nb = numel(sb);
    float *a = mcl_test_random_floats(na, seed, -4.0f, 4.0f);
    float *b = mcl_test_random_floats(nb, seed * 31 + 7, 0.5f, 4.5f);
    float *want = mcl_test_floats(na), *got = mcl_test_floats(na);
    ref_binary_f32(op, a, sa->dims, sa->ndim, b, sb->dims, sb->ndim, want);
    mcl_tensor *ta = device(sa, a), *tb = device(sb, b), *ty = device(sa, NULL);
    assert_mcl_ok(mcl_binary(ctx, (mcl_binary_op)op, ta, tb, ty));
    download(ty, got, na);
    char an[64], bn[64], name[192];
    shape_name(sa, an, sizeof an);
    shape_name(sb, bn, sizeof bn);
    snprintf(name, sizeof name, "binary %s %s (op) %s", binary_names[op], an, bn);
    double nmse = mcl_nmse(got, want, na);
    printf("%s: nmse %.3g\n", name, nmse);
    int passed = mcl_test_record(name, "nmse", nmse, binary_tolerance(op));
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
    free(a);
    free(b);
    free(want);
    free(got);
    return passed;
}

static void binary_same_shape(void **state)
{
    (void)state;
    static const shape shapes[] = {
        {1, {1}}, {2, {7, 13}}, {2, {1, 4099}}, {1, {1000003}}, {2, {3000, 257}},
        {2, {1024, 4096}},
    };
    int passed = 1;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        for (int op = REF_BINARY_ADD; op <= REF_BINARY_DIV; op++)
            passed &= check_binary(op, &shapes[k], &shapes[k], (uint32_t)(10 * k + op + 1));
    }
    assert_true(passed);
}

static void binary_broadcast(void **state)
{
    (void)state;
    static const struct {
        shape a, b;
    } cases[] = {
        {{2, {37, 4097}}, {1, {4097}}},          /* bias row, scalar path (4097 % 4 != 0) */
        {{2, {300, 256}}, {1, {256}}},           /* bias row, vec4 path */
        {{3, {3, 5, 12}}, {3, {3, 1, 12}}},      /* [B,T,D] * [B,1,D], vec4 */
        {{3, {3, 5, 13}}, {3, {3, 1, 13}}},      /* the same, scalar */
        {{2, {129, 515}}, {1, {1}}},             /* scalar b onto odd sizes */
        {{2, {64, 64}}, {2, {1, 1}}},            /* scalar b of two dimensions, vec4 splat */
        {{3, {2, 7, 9}}, {2, {7, 1}}},           /* b repeats along the last dimension */
        {{4, {2, 3, 4, 5}}, {3, {3, 1, 5}}},     /* four dimensions, alternating */
        {{4, {2, 3, 4, 8}}, {4, {2, 1, 4, 1}}},  /* b innermost broadcast, vec4 splat */
        {{3, {4, 1, 6}}, {2, {1, 6}}},           /* a dimension of extent 1 in a */
        {{2, {2, 8}}, {2, {1, 8}}},              /* b's leading 1 */
    };
    int passed = 1;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int op = REF_BINARY_ADD; op <= REF_BINARY_DIV; op++)
            passed &= check_binary(op, &cases[k].a, &cases[k].b, (uint32_t)(100 + 4 * k + op));
    }
    assert_true(passed);
}

/* out aliases a or b, in place; and an in-place bias add, where out aliases a and b
 * broadcasts. The reference takes copies of the inputs before the device overwrites them. */
static void binary_aliasing(void **state)
{
    (void)state;
    const shape s = {2, {33, 260}}, bias = {1, {260}};
    size_t n = numel(&s);
    float *a = mcl_test_random_floats(n, 71, -4.0f, 4.0f), *b = mcl_test_random_floats(n, 72, 0.5f, 4.5f);
    float *c = mcl_test_random_floats(260, 73, -1.0f, 1.0f);
    float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
    mcl_tensor *ta = device(&s, a), *tb = device(&s, b), *tc = device(&bias, c);

    assert_mcl_ok(mcl_binary(ctx, MCL_BINARY_SUB, ta, tb, ta)); /* a = a - b */
    ref_binary_f32(REF_BINARY_SUB, a, s.dims, 2, b, s.dims, 2, want);
    download(ta, got, n);
    int passed = mcl_test_record("binary sub, out aliases a", "nmse", mcl_nmse(got, want, n),
                                 TOL_EXACT);

    memcpy(a, want, n * sizeof *a);
    assert_mcl_ok(mcl_binary(ctx, MCL_BINARY_MUL, ta, tb, tb)); /* b = a * b */
    ref_binary_f32(REF_BINARY_MUL, a, s.dims, 2, b, s.dims, 2, want);
    download(tb, got, n);
    passed &= mcl_test_record("binary mul, out aliases b", "nmse", mcl_nmse(got, want, n),
                              TOL_EXACT);

    memcpy(b, want, n * sizeof *b);
    assert_mcl_ok(mcl_add(ctx, tb, tc, tb)); /* b += bias, in place */
    ref_binary_f32(REF_BINARY_ADD, b, s.dims, 2, c, bias.dims, 1, want);
    download(tb, got, n);
    passed &= mcl_test_record("add bias in place (out aliases a, b broadcast)", "nmse",
                              mcl_nmse(got, want, n), TOL_EXACT);

    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(tc);
    free(a);
    free(b);
    free(c);
    free(want);
    free(got);
    assert_true(passed);
}

static const shape unary_shapes[] = {
    {1, {1}}, {1, {3}}, {2, {7, 13}}, {2, {1, 4099}}, {2, {3000, 257}}, {2, {1024, 4096}},
};

static void scale(void **state)
{
    (void)state;
    int passed = 1;
    for (size_t k = 0; k < sizeof unary_shapes / sizeof unary_shapes[0]; k++) {
        size_t n = numel(&unary_shapes[k]);
        float *x = mcl_test_random_floats(n, (uint32_t)(200 + k), -4.0f, 4.0f);
        float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
        ref_scale_f32(x, -1.5f, 0.25f, want, n);
        mcl_tensor *tx = device(&unary_shapes[k], x), *ty = device(&unary_shapes[k], NULL);
        assert_mcl_ok(mcl_scale(ctx, tx, -1.5f, 0.25f, ty));
        download(ty, got, n);
        char sn[64], name[128];
        shape_name(&unary_shapes[k], sn, sizeof sn);
        snprintf(name, sizeof name, "scale -1.5 x + 0.25 %s", sn);
        double nmse = mcl_nmse(got, want, n);
        printf("%s: nmse %.3g\n", name, nmse);
        passed &= mcl_test_record(name, "nmse", nmse, TOL_SCALE);

        /* In place, a second time: x = 2 x - 1 over the first result. */
        assert_mcl_ok(mcl_scale(ctx, ty, 2.0f, -1.0f, ty));
        memcpy(x, want, n * sizeof *x);
        ref_scale_f32(x, 2.0f, -1.0f, want, n);
        download(ty, got, n);
        snprintf(name, sizeof name, "scale in place %s", sn);
        passed &= mcl_test_record(name, "nmse", mcl_nmse(got, want, n), TOL_SCALE);
        mcl_tensor_destroy(tx);
        mcl_tensor_destroy(ty);
        free(x);
        free(want);
        free(got);
    }
    assert_true(passed);
}

static const char *activation_names[] = {"relu", "gelu", "silu"};

static void activations(void **state)
{
    (void)state;
    int passed = 1;
    for (int act = REF_ACTIVATION_RELU; act <= REF_ACTIVATION_SILU; act++) {
        double tol = act == REF_ACTIVATION_RELU ? TOL_EXACT : TOL_TRANSCENDENTAL;
        for (size_t k = 0; k < sizeof unary_shapes / sizeof unary_shapes[0]; k++) {
            size_t n = numel(&unary_shapes[k]);
            /* [-8, 8] covers both saturated tails and the curved middle. */
            float *x = mcl_test_random_floats(n, (uint32_t)(300 + 10 * act + k), -8.0f, 8.0f);
            float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
            ref_activate_f32(act, x, want, n);
            mcl_tensor *tx = device(&unary_shapes[k], x);
            /* Every other shape runs in place (out aliases x). */
            int in_place = k % 2 == 1;
            mcl_tensor *ty = in_place ? tx : device(&unary_shapes[k], NULL);
            assert_mcl_ok(mcl_activate(ctx, (mcl_activation)act, tx, ty));
            download(ty, got, n);
            char sn[64], name[128];
            shape_name(&unary_shapes[k], sn, sizeof sn);
            snprintf(name, sizeof name, "%s %s%s", activation_names[act], sn,
                     in_place ? " in place" : "");
            double nmse = mcl_nmse(got, want, n);
            printf("%s: nmse %.3g\n", name, nmse);
            passed &= mcl_test_record(name, "nmse", nmse, tol);
            if (!in_place)
                mcl_tensor_destroy(ty);
            mcl_tensor_destroy(tx);
            free(x);
            free(want);
            free(got);
        }
    }
    assert_true(passed);
}

/* Far outside the usual range, where a naive formula overflows into inf / inf = NaN: the
 * results must be finite and match the reference's limits. NMSE would be dominated by the
 * 1e20 entries here, so each element is checked on its own: relative error, with a floor of
 * 1e-6 for results that are zero up to float range (gelu(-10) is -1e-37 on one side and -0
 * in the double reference, whose 1 + tanh cancels). 1e-5 is the few-ulp exp error again. */
static void activations_extreme_inputs(void **state)
{
    (void)state;
    static const float x[] = {-1e20f, -1e4f, -100.0f, -30.0f, -10.0f, -0.0f, 0.0f,
                              1e-3f,  10.0f, 30.0f,   100.0f, 1e4f,   1e20f};
    const size_t n = sizeof x / sizeof x[0];
    const shape s = {1, {(int64_t)n}};
    float want[sizeof x / sizeof x[0]], got[sizeof x / sizeof x[0]];
    int passed = 1;
    for (int act = REF_ACTIVATION_RELU; act <= REF_ACTIVATION_SILU; act++) {
        ref_activate_f32(act, x, want, n);
        mcl_tensor *tx = device(&s, x), *ty = device(&s, NULL);
        assert_mcl_ok(mcl_activate(ctx, (mcl_activation)act, tx, ty));
        download(ty, got, n);
        int finite = 1;
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            finite &= isfinite(got[i]) != 0;
            double err = fabs((double)got[i] - want[i]) / fmax(fabs((double)want[i]), 1e-6);
            worst = isnan(err) ? INFINITY : fmax(worst, err);
        }
        char name[96];
        snprintf(name, sizeof name, "%s of extreme inputs is finite", activation_names[act]);
        passed &= mcl_test_record_bool(name, finite);
        snprintf(name, sizeof name, "%s of extreme inputs", activation_names[act]);
        passed &= mcl_test_record(name, "max relative error", worst,
                                  act == REF_ACTIVATION_RELU ? 0.0 : 1e-5);
        mcl_tensor_destroy(tx);
        mcl_tensor_destroy(ty);
    }
    assert_true(passed);
}

static void swiglu(void **state)
{
    (void)state;
    int passed = 1;
    for (size_t k = 0; k < sizeof unary_shapes / sizeof unary_shapes[0]; k++) {
        size_t n = numel(&unary_shapes[k]);
        float *g = mcl_test_random_floats(n, (uint32_t)(400 + k), -8.0f, 8.0f);
        float *u = mcl_test_random_floats(n, (uint32_t)(500 + k), -4.0f, 4.0f);
        float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
        ref_swiglu_f32(g, u, want, n);
        mcl_tensor *tg = device(&unary_shapes[k], g), *tu = device(&unary_shapes[k], u);
        /* Out is separate, aliases gate, or aliases up, in turn. */
        int alias = (int)(k % 3);
        mcl_tensor *ty = alias == 1 ? tg : alias == 2 ? tu : device(&unary_shapes[k], NULL);
        assert_mcl_ok(mcl_swiglu(ctx, tg, tu, ty));
        download(ty, got, n);
        char sn[64], name[128];
        shape_name(&unary_shapes[k], sn, sizeof sn);
        snprintf(name, sizeof name, "swiglu %s%s", sn,
                 alias == 1 ? " out aliases gate" : alias == 2 ? " out aliases up" : "");
        double nmse = mcl_nmse(got, want, n);
        printf("%s: nmse %.3g\n", name, nmse);
        passed &= mcl_test_record(name, "nmse", nmse, TOL_TRANSCENDENTAL);
        if (alias == 0)
            mcl_tensor_destroy(ty);
        mcl_tensor_destroy(tg);
        mcl_tensor_destroy(tu);
        free(g);
        free(u);
        free(want);
        free(got);
    }
    assert_true(passed);
}

/* Several dependent ops in one batch: each reads what the previous one wrote. */
static void chained(void **state)
{
    (void)state;
    const shape s = {2, {17, 300}}, bias = {1, {300}};
    size_t n = numel(&s);
    float *x = mcl_test_random_floats(n, 601, -3.0f, 3.0f), *b = mcl_test_random_floats(300, 602, -1.0f, 1.0f);
    float *t1 = mcl_test_floats(n), *t2 = mcl_test_floats(n), *got = mcl_test_floats(n);
    mcl_tensor *tx = device(&s, x), *tb = device(&bias, b), *ty = device(&s, NULL);
    assert_mcl_ok(mcl_add(ctx, tx, tb, ty));                        /* y = x + b */
    assert_mcl_ok(mcl_activate(ctx, MCL_ACTIVATION_GELU, ty, ty));  /* y = gelu(y) */
    assert_mcl_ok(mcl_scale(ctx, ty, 0.5f, 0.0f, tx));              /* x = y / 2 */
    assert_mcl_ok(mcl_swiglu(ctx, tx, ty, ty));                     /* y = silu(x) * y */
    ref_binary_f32(REF_BINARY_ADD, x, s.dims, 2, b, bias.dims, 1, t1);
    ref_activate_f32(REF_ACTIVATION_GELU, t1, t1, n);
    ref_scale_f32(t1, 0.5f, 0.0f, t2, n);
    ref_swiglu_f32(t2, t1, t1, n);
    download(ty, got, n);
    int passed = mcl_test_record("chained add, gelu, scale, swiglu in one batch", "nmse",
                                 mcl_nmse(got, t1, n), TOL_TRANSCENDENTAL);
    mcl_tensor_destroy(tx);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
    free(x);
    free(b);
    free(t1);
    free(t2);
    free(got);
    assert_true(passed);
}

/* The comparisons can fail: a reference off in one element, a reference that broadcasts
 * along the wrong axis, and GELU's erf form in place of the documented tanh form are all
 * caught at the tolerances above. */
static void negative_controls(void **state)
{
    (void)state;
    const shape s = {2, {8, 8}}, row = {1, {8}}, col = {2, {8, 1}};
    size_t n = numel(&s);
    float *a = mcl_test_random_floats(n, 701, -4.0f, 4.0f), *b = mcl_test_random_floats(8, 702, 0.5f, 4.5f);
    float *want = mcl_test_floats(n), *got = mcl_test_floats(n);
    mcl_tensor *ta = device(&s, a), *tb = device(&row, b), *ty = device(&s, NULL);
    assert_mcl_ok(mcl_add(ctx, ta, tb, ty));
    download(ty, got, n);

    ref_binary_f32(REF_BINARY_ADD, a, s.dims, 2, b, row.dims, 1, want);
    want[37] += 1e-3f;
    int caught = mcl_nmse(got, want, n) > TOL_EXACT;
    mcl_test_record_bool("negative control: a reference wrong in one element is detected",
                         caught);
    int all = caught;

    /* The same b as a column [8, 1]: the right values in the wrong places. */
    ref_binary_f32(REF_BINARY_ADD, a, s.dims, 2, b, col.dims, 2, want);
    caught = mcl_nmse(got, want, n) > TOL_EXACT;
    mcl_test_record_bool("negative control: a wrongly broadcast reference is detected", caught);
    all &= caught;
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
    free(a);
    free(b);
    free(want);
    free(got);

    const shape g = {1, {4099}};
    float *x = mcl_test_random_floats(4099, 703, -4.0f, 4.0f), *w = mcl_test_floats(4099), *y = mcl_test_floats(4099);
    mcl_tensor *tx = device(&g, x);
    assert_mcl_ok(mcl_activate(ctx, MCL_ACTIVATION_GELU, tx, tx));
    download(tx, y, 4099);
    ref_gelu_erf_f32(x, w, 4099);
    double nmse = mcl_nmse(y, w, 4099);
    printf("gelu against the erf form: nmse %.3g\n", nmse);
    caught = nmse > TOL_TRANSCENDENTAL;
    mcl_test_record_bool("negative control: GELU's erf form is told apart from the tanh form",
                         caught);
    all &= caught;
    mcl_tensor_destroy(tx);
    free(x);
    free(w);
    free(y);
    assert_true(all);
}

static void bad_arguments(void **state)
{
    (void)state;
    const shape s = {2, {4, 6}}, s_t = {2, {6, 4}}, v6 = {1, {6}}, v4 = {1, {4}},
                big = {3, {2, 4, 6}}, col = {2, {4, 1}};
    mcl_tensor *a = device(&s, NULL), *at = device(&s_t, NULL), *b6 = device(&v6, NULL),
               *b4 = device(&v4, NULL), *b3 = device(&big, NULL), *bc = device(&col, NULL),
               *out = device(&s, NULL);
    mcl_tensor *i32;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, s.ndim, s.dims, &i32));

    /* Broadcasting that mcl_binary documents, accepted ... */
    assert_mcl_ok(mcl_binary(ctx, MCL_BINARY_ADD, a, b6, out));
    assert_mcl_ok(mcl_binary(ctx, MCL_BINARY_MUL, a, bc, out));
    /* ... and what it does not. */
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, a, b4, out), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, a, b3, out), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, a, at, out), MCL_ERROR_SHAPE_MISMATCH);
    /* b broadcasts, a does not: out must have a's shape. */
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, b6, a, out), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, a, a, at), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, a, i32, out), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, a, a, i32), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_binary(ctx, (mcl_binary_op)4, a, a, out), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_binary(ctx, (mcl_binary_op)-1, a, a, out), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, NULL, a, out), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_binary(NULL, MCL_BINARY_ADD, a, a, out), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_add(ctx, a, b4, out), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_add(ctx, a, NULL, out), MCL_ERROR_INVALID_ARGUMENT);

    assert_int_equal(mcl_scale(ctx, a, 1.0f, 0.0f, at), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_scale(ctx, i32, 1.0f, 0.0f, i32), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_scale(ctx, NULL, 1.0f, 0.0f, out), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_activate(ctx, (mcl_activation)3, a, out), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_activate(ctx, MCL_ACTIVATION_RELU, a, b6), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_activate(NULL, MCL_ACTIVATION_RELU, a, out),
                     MCL_ERROR_INVALID_ARGUMENT);
    /* SwiGLU does not broadcast. */
    assert_int_equal(mcl_swiglu(ctx, a, b6, out), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_swiglu(ctx, a, a, at), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_swiglu(ctx, a, i32, out), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_swiglu(ctx, a, NULL, out), MCL_ERROR_INVALID_ARGUMENT);

    /* A tensor of another context. */
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_context *other;
    assert_mcl_ok(mcl_context_create(&desc, &other));
    mcl_tensor *foreign;
    assert_mcl_ok(mcl_tensor_create(other, MCL_DTYPE_F32, s.ndim, s.dims, &foreign));
    assert_int_equal(mcl_binary(ctx, MCL_BINARY_ADD, a, foreign, out), MCL_ERROR_WRONG_CONTEXT);
    assert_int_equal(mcl_add(ctx, foreign, a, out), MCL_ERROR_WRONG_CONTEXT);
    assert_int_equal(mcl_scale(ctx, a, 1.0f, 0.0f, foreign), MCL_ERROR_WRONG_CONTEXT);
    assert_int_equal(mcl_activate(ctx, MCL_ACTIVATION_SILU, foreign, out),
                     MCL_ERROR_WRONG_CONTEXT);
    assert_int_equal(mcl_swiglu(ctx, a, foreign, out), MCL_ERROR_WRONG_CONTEXT);
    mcl_tensor_destroy(foreign);
    mcl_context_destroy(other);

    /* The failed calls recorded nothing: the batch still runs clean. */
    assert_mcl_ok(mcl_finish(ctx));
    mcl_test_record_bool("bad arguments give their documented statuses", 1);
    mcl_tensor_destroy(a);
    mcl_tensor_destroy(at);
    mcl_tensor_destroy(b6);
    mcl_tensor_destroy(b4);
    mcl_tensor_destroy(b3);
    mcl_tensor_destroy(bc);
    mcl_tensor_destroy(out);
    mcl_tensor_destroy(i32);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_same_shape),
        cmocka_unit_test(binary_broadcast),
        cmocka_unit_test(binary_aliasing),
        cmocka_unit_test(scale),
        cmocka_unit_test(activations),
        cmocka_unit_test(activations_extreme_inputs),
        cmocka_unit_test(swiglu),
        cmocka_unit_test(chained),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
