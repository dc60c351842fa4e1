/* Backward passes (mcl_activate_backward for ReLU, GELU and SiLU, mcl_swiglu_backward,
 * mcl_softmax_backward, mcl_rmsnorm_backward, mcl_layernorm_backward) on both reduction
 * paths: the harness context (subgroup arithmetic where the device has it) and a second
 * context with MOTIFCL_DISABLE=subgroup-arithmetic (the shared-memory tree).
 *
 * Each gradient is held to two things:
 *  1. The CPU backward reference (tests/ref/ref_backward.c, double, from the same float
 *     inputs the GPU gets), over every element: NMSE <= 1e-10. The GPU sums rows (and
 *     dweight / dbias columns) in float in another order than the reference: a relative
 *     error near sqrt(n) * 6e-8 (NMSE ~1e-13 for a row of 4097 or 1000 rows), plus a few ulp
 *     of exp and inversesqrt that Vulkan allows. 1e-10 (a relative error of ~1e-5) covers
 *     that with room and is far below what a missing term gives (negative_controls).
 *  2. Central finite differences, in double, of the CPU double forward (ref_*_fwd_d) on the
 *     scalar loss L = sum(dy * forward(x)), step h = 1e-5: truncation O(h^2) ~ 1e-10 and
 *     cancellation ~1e-16 |L| / h ~ 1e-9 absolute, so the difference is good to ~1e-8 of the
 *     largest gradient. On sampled elements (rows first, middle, last; up to 48 columns
 *     each; up to 16 columns of dweight / dbias), with the error measured as
 *     max|g - fd| / max|fd|:
 *       - the CPU reference against FD: <= 1e-6 (it is double; the only float in it is the
 *         softmax's y, rounded to float as the GPU gets it, a relative 6e-8). This checks the
 *         reference's formulas independently of the GPU.
 *       - the GPU against FD: <= 1e-4 (float arithmetic: per-element relative errors of
 *         ~1e-6, measured against the largest gradient).
 *     ReLU's derivative has a kink at 0; elements within 1e-3 of it are not differenced.
 *
 * Shapes: 1, primes, a row longer than a workgroup (4097), many rows for dweight / dbias
 * (1000 x 257, and 70000 x 3: more rows than 65535 workgroups, and 1094 chunks in the
 * column sum's first pass), 3-D; in place (dx == dy, and for the norms dx == x) in turn; a causal
 * softmax (masked positions get exactly 0); determinism of dweight (same bits twice).
 * RMSNorm of a single element runs with eps = 0.5: its true gradient is eps / (x^2 + eps) of
 * the two terms it is the difference of, so with eps = 1e-5 any float implementation loses
 * five digits there, which would test float, not the kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops_internal.h"
#include "ref/ref.h"

#define TOL_NMSE 1e-10
#define TOL_FD_REF 1e-6
#define TOL_FD_GPU 1e-4
#define FD_STEP 1e-5

typedef struct path {
    mcl_context *ctx;
    const char *name;
} path;

static mcl_context *ctx;
static mcl_context *ctx_tree;
static path paths[2];

typedef enum op_kind { OP_RELU, OP_GELU, OP_SILU, OP_SWIGLU, OP_SOFTMAX, OP_RMS, OP_LN } op_kind;
static const char *op_names[] = {"relu backward", "gelu backward", "silu backward",
                                 "swiglu backward", "softmax backward", "rmsnorm backward",
                                 "layernorm backward"};

typedef struct shape {
    uint32_t ndim;
    int64_t dims[4];
} shape;

/* One backward problem: inputs in float (what the GPU gets) and double (the same values,
 * for the references). in0 is x (gate for SwiGLU), in1 up; for softmax the GPU gets y, the
 * float rounding of softmax(scale * x). Gradients: 0 d in0, 1 d in1 (SwiGLU's dup) or
 * dweight, 2 dbias. */
typedef struct problem {
    op_kind op;
    shape s;
    size_t n, d, rows;
    int use_w, want_dw, want_db, causal;
    double eps, scale;
    float *f_in0, *f_in1, *f_w, *f_dy, *f_y;
    double *in0, *in1, *w, *b, *dy, *y;
    double *ref[3];     /* CPU backward; NULL where the op has no such gradient */
    size_t len[3];
} problem;

static size_t numel(const shape *s)
{
    size_t n = 1;
    for (uint32_t i = 0; i < s->ndim; i++)
        n *= (size_t)s->dims[i];
    return n;
}

static double *doubles(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

static double *widen(const float *f, size_t n)
{
    double *p = doubles(n);
    for (size_t i = 0; i < n; i++)
        p[i] = f[i];
    return p;
}

static int is_act(op_kind op)
{
    return op <= OP_SILU;
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

/* The problem's inputs and CPU reference gradients. */
static void problem_init(problem *p, op_kind op, const shape *s, uint32_t seed)
{
    memset(p, 0, sizeof *p);
    p->op = op;
    p->s = *s;
    p->n = numel(s);
    p->d = (size_t)s->dims[s->ndim - 1];
    p->rows = p->n / p->d;
    p->eps = 1e-5;
    /* RMSNorm of one element: the gradient is eps / (x^2 + eps) of the terms it is the
     * difference of, so any float implementation loses that many digits with a tiny eps;
     * a larger one keeps the case about the kernel, not about float. */
    if (op == OP_RMS && p->d == 1)
        p->eps = 0.5;
    p->scale = 0.7;
    float lo = op == OP_SWIGLU ? -6.0f : -3.0f;
    p->f_in0 = mcl_test_random_floats(p->n, seed, lo, -lo);
    p->f_in1 = mcl_test_random_floats(p->n, seed + 1, -2.0f, 2.0f);
    p->f_dy = mcl_test_random_floats(p->n, seed + 2, -1.0f, 1.0f);
    p->f_w = mcl_test_random_floats(p->d, seed + 3, 0.5f, 1.5f);
    p->in0 = widen(p->f_in0, p->n);
    p->in1 = widen(p->f_in1, p->n);
    p->dy = widen(p->f_dy, p->n);
    p->w = widen(p->f_w, p->d);
    p->b = widen(p->f_in1, p->d); /* LayerNorm's bias: only its gradient matters */
    p->use_w = (seed % 2) == 0 || op == OP_LN;
    /* Without a weight the op differentiates with respect to implicit ones: the FD forward
     * then uses ones, which it can perturb, and the GPU gets NULL. */
    if (!p->use_w) {
        for (size_t j = 0; j < p->d; j++)
            p->f_w[j] = 1.0f, p->w[j] = 1.0;
    }
    p->want_dw = op == OP_RMS || op == OP_LN;
    p->want_db = op == OP_LN;

    p->ref[0] = doubles(p->n);
    p->len[0] = p->n;
    const double *w = p->use_w ? p->w : NULL;
    switch (op) {
    case OP_RELU:
    case OP_GELU:
    case OP_SILU:
        ref_activate_bwd_d((int)op, p->in0, p->dy, p->ref[0], p->n);
        break;
    case OP_SWIGLU:
        p->ref[1] = doubles(p->n);
        p->len[1] = p->n;
        ref_swiglu_bwd_d(p->in0, p->in1, p->dy, p->ref[0], p->ref[1], p->n);
        break;
    case OP_SOFTMAX: {
        double *yd = doubles(p->n);
        ref_softmax_fwd_d(p->in0, p->rows, p->d, p->s.ndim >= 2 ? (size_t)s->dims[s->ndim - 2] : 1,
                          p->causal, p->scale, yd);
        p->f_y = mcl_test_floats(p->n);
        for (size_t i = 0; i < p->n; i++)
            p->f_y[i] = (float)yd[i];
        free(yd);
        p->y = widen(p->f_y, p->n);
        ref_softmax_bwd_d(p->y, p->dy, p->rows, p->d, p->scale, p->ref[0]);
        break;
    }
    case OP_RMS:
        p->ref[1] = doubles(p->d);
        p->len[1] = p->d;
        ref_rmsnorm_bwd_d(p->in0, w, p->dy, p->rows, p->d, p->eps, p->ref[0], p->ref[1]);
        break;
    case OP_LN:
        p->ref[1] = doubles(p->d);
        p->ref[2] = doubles(p->d);
        p->len[1] = p->len[2] = p->d;
        ref_layernorm_bwd_d(p->in0, w, p->dy, p->rows, p->d, p->eps, 0, p->ref[0], p->ref[1],
                            p->ref[2]);
        break;
    }
}

static void problem_free(problem *p)
{
    float *f[] = {p->f_in0, p->f_in1, p->f_w, p->f_dy, p->f_y};
    double *g[] = {p->in0, p->in1, p->w, p->b, p->dy, p->y, p->ref[0], p->ref[1], p->ref[2]};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        free(f[i]);
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        free(g[i]);
}

/* L = sum(dy * forward) over rows [r0, r0 + nr), with the inputs as they are now. */
static double loss(const problem *p, size_t r0, size_t nr)
{
    size_t off = r0 * p->d, cnt = nr * p->d;
    double *out = doubles(cnt);
    const double *w = p->w; /* ones without a weight: perturbable */
    switch (p->op) {
    case OP_RELU:
    case OP_GELU:
    case OP_SILU:
        ref_activate_fwd_d((int)p->op, p->in0 + off, out, cnt);
        break;
    case OP_SWIGLU:
        ref_swiglu_fwd_d(p->in0 + off, p->in1 + off, out, cnt);
        break;
    case OP_SOFTMAX: /* the FD cases are not causal: rows are independent of their index */
        ref_softmax_fwd_d(p->in0 + off, nr, p->d, 1, 0, p->scale, out);
        break;
    case OP_RMS:
        ref_rmsnorm_fwd_d(p->in0 + off, w, nr, p->d, p->eps, out);
        break;
    case OP_LN:
        ref_layernorm_fwd_d(p->in0 + off, w, p->b, nr, p->d, p->eps, out);
        break;
    }
    double l = 0.0;
    for (size_t i = 0; i < cnt; i++)
        l += p->dy[off + i] * out[i];
    free(out);
    return l;
}

/* The array gradient k differentiates with respect to. */
static double *fd_input(problem *p, int k)
{
    if (k == 0)
        return p->in0;
    if (k == 1)
        return p->op == OP_SWIGLU ? p->in1 : p->w;
    return p->b;
}

/* Sampled indices of gradient k: up to 3 rows x 48 columns of an element gradient, up to 16
 * columns of a per-column one. Returns the count. */
static size_t fd_samples(const problem *p, int k, size_t *idx, size_t cap)
{
    size_t count = 0;
    int per_column = k > 0 && p->op != OP_SWIGLU;
    size_t rows = per_column ? 1 : p->rows, cols = p->d;
    size_t rsel[3] = {0, rows / 2, rows - 1};
    size_t max_cols = per_column ? 16 : 48;
    size_t nc = cols < max_cols ? cols : max_cols;
    for (size_t a = 0; a < 3; a++) {
        if (a > 0 && rsel[a] == rsel[a - 1])
            continue;
        for (size_t c = 0; c < nc && count < cap; c++) {
            size_t col = nc > 1 ? c * (cols - 1) / (nc - 1) : 0;
            idx[count++] = rsel[a] * cols + col;
        }
    }
    return count;
}

/* Central difference of L at element i of gradient k. */
static double fd_at(problem *p, int k, size_t i)
{
    double *v = fd_input(p, k);
    int per_column = k > 0 && p->op != OP_SWIGLU;
    size_t r0 = per_column ? 0 : i / p->d, nr = per_column ? p->rows : 1;
    double saved = v[i];
    v[i] = saved + FD_STEP;
    double lp = loss(p, r0, nr);
    v[i] = saved - FD_STEP;
    double lm = loss(p, r0, nr);
    v[i] = saved;
    return (lp - lm) / (2.0 * FD_STEP);
}

/* max|g - fd| / max|fd| over the samples; g is float (GPU) or double (reference). */
static double fd_error(const size_t *idx, size_t count, const double *fd, const float *gf,
                       const double *gd)
{
    double err = 0.0, scale = 0.0;
    for (size_t s = 0; s < count; s++) {
        double g = gf ? (double)gf[idx[s]] : gd[idx[s]];
        err = fmax(err, fabs(g - fd[s]));
        scale = fmax(scale, fabs(fd[s]));
    }
    return scale > 0.0 ? err / scale : err;
}

static double nmse_d(const float *got, const double *want, size_t n)
{
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)got[i] - want[i];
        err += e * e;
        ref += want[i] * want[i];
    }
    return ref > 0.0 ? err / ref : (n ? err / (double)n : 0.0);
}

static mcl_tensor *tensor_of(mcl_context *c, const shape *s, const float *data)
{
    return mcl_test_tensor(c, MCL_DTYPE_F32, s->ndim, s->dims, data);
}

/* Run the problem's backward on path pa; got[k] receives gradient k (allocated). */
static void run_gpu(const problem *p, const path *pa, int in_place, float **got)
{
    mcl_context *c = pa->ctx;
    const shape sv = {1, {(int64_t)p->d}};
    mcl_tensor *t0 = tensor_of(c, &p->s, p->op == OP_SOFTMAX ? p->f_y : p->f_in0);
    mcl_tensor *tdy = tensor_of(c, &p->s, p->f_dy);
    mcl_tensor *tw = tensor_of(c, &sv, p->f_w);
    mcl_tensor *g[3] = {NULL, NULL, NULL};
    /* in_place 1: dx is dy's tensor; 2: x's (the norms allow both). */
    g[0] = in_place == 1 ? tdy : in_place == 2 ? t0 : tensor_of(c, &p->s, NULL);
    mcl_tensor *t1 = NULL;
    const mcl_tensor *w = p->use_w ? tw : NULL;
    switch (p->op) {
    case OP_RELU:
    case OP_GELU:
    case OP_SILU:
        assert_mcl_ok(mcl_activate_backward(c, (mcl_activation)p->op, t0, tdy, g[0]));
        break;
    case OP_SWIGLU:
        t1 = tensor_of(c, &p->s, p->f_in1);
        g[1] = tensor_of(c, &p->s, NULL);
        assert_mcl_ok(mcl_swiglu_backward(c, t0, t1, tdy, g[0], g[1]));
        break;
    case OP_SOFTMAX:
        assert_mcl_ok(mcl_softmax_backward(c, t0, tdy, (float)p->scale, g[0]));
        break;
    case OP_RMS:
        g[1] = tensor_of(c, &sv, NULL);
        assert_mcl_ok(mcl_rmsnorm_backward(c, t0, w, tdy, (float)p->eps, g[0], g[1]));
        break;
    case OP_LN:
        g[1] = tensor_of(c, &sv, NULL);
        g[2] = tensor_of(c, &sv, NULL);
        assert_mcl_ok(mcl_layernorm_backward(c, t0, w, tdy, (float)p->eps, g[0], g[1], g[2]));
        break;
    }
    for (int k = 0; k < 3; k++) {
        got[k] = NULL;
        if (!g[k])
            continue;
        got[k] = mcl_test_floats(p->len[k]);
        assert_mcl_ok(mcl_tensor_download(g[k], 0, got[k], p->len[k] * sizeof(float)));
    }
    for (int k = 0; k < 3; k++) {
        if (g[k] && g[k] != tdy && g[k] != t0)
            mcl_tensor_destroy(g[k]);
    }
    mcl_tensor_destroy(t0);
    mcl_tensor_destroy(t1);
    mcl_tensor_destroy(tdy);
    mcl_tensor_destroy(tw);
}

static const char *grad_names[][3] = {
    {"dx"}, {"dx"}, {"dx"}, {"dgate", "dup"}, {"dx"}, {"dx", "dweight"}, {"dx", "dweight", "dbias"},
};

/* The whole check of one op on one shape: reference against FD, then each path's GPU
 * gradients against the reference and FD. */
static int check_op(op_kind op, const shape *s, uint32_t seed)
{
    problem p;
    problem_init(&p, op, s, seed);
    char sn[64];
    shape_name(s, sn, sizeof sn);
    int passed = 1;

    double fd[3][160];
    size_t idx[3][160], count[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        if (!p.ref[k])
            continue;
        count[k] = fd_samples(&p, k, idx[k], 160);
        size_t kept = 0;
        for (size_t j = 0; j < count[k]; j++) {
            if (op == OP_RELU && fabs(p.in0[idx[k][j]]) < 1e-3)
                continue; /* the kink */
            idx[k][kept] = idx[k][j];
            fd[k][kept++] = fd_at(&p, k, idx[k][j]);
        }
        count[k] = kept;
        char name[200];
        snprintf(name, sizeof name, "%s %s %s: CPU reference vs finite differences",
                 op_names[op], sn, grad_names[op][k]);
        double e = fd_error(idx[k], count[k], fd[k], NULL, p.ref[k]);
        printf("%s: %.3g\n", name, e);
        passed &= mcl_test_record(name, "max_rel_err", e, TOL_FD_REF);
    }

    for (int pi = 0; pi < 2; pi++) {
        int in_place = op != OP_SWIGLU && (seed % 3) == 1;
        if ((op == OP_RMS || op == OP_LN) && (seed % 3) == 2)
            in_place = 2;
        float *got[3];
        run_gpu(&p, &paths[pi], in_place, got);
        for (int k = 0; k < 3; k++) {
            if (!got[k])
                continue;
            char name[200];
            snprintf(name, sizeof name, "%s %s %s%s%s [%s]", op_names[op], sn,
                     grad_names[op][k], p.use_w || is_act(op) || op == OP_SWIGLU ||
                     op == OP_SOFTMAX ? "" : " no weight",
                     k > 0 ? "" : in_place == 1 ? " dx = dy" : in_place == 2 ? " dx = x" : "",
                     paths[pi].name);
            double e = nmse_d(got[k], p.ref[k], p.len[k]);
            double f = fd_error(idx[k], count[k], fd[k], got[k], NULL);
            printf("%s: nmse %.3g, fd %.3g\n", name, e, f);
            char fname[240];
            snprintf(fname, sizeof fname, "%s vs finite differences", name);
            passed &= mcl_test_record(name, "nmse", e, TOL_NMSE);
            passed &= mcl_test_record(fname, "max_rel_err", f, TOL_FD_GPU);
            free(got[k]);
        }
    }
    problem_free(&p);
    return passed;
}

static const shape elem_shapes[] = {
    {1, {1}}, {1, {97}}, {2, {7, 13}}, {1, {4097}}, {3, {3, 5, 11}}, {2, {1000, 257}},
};
static const shape row_shapes[] = {
    {1, {1}}, {1, {13}}, {2, {5, 8}}, {2, {3, 4097}}, {3, {2, 3, 64}}, {2, {1000, 257}},
    {2, {70000, 3}},
};
#define ELEM_SHAPES (sizeof elem_shapes / sizeof elem_shapes[0])
#define ROW_SHAPES (sizeof row_shapes / sizeof row_shapes[0])

static void activations(void **state)
{
    (void)state;
    int passed = 1;
    for (op_kind op = OP_RELU; op <= OP_SILU; op++) {
        for (size_t k = 0; k < ELEM_SHAPES; k++)
            passed &= check_op(op, &elem_shapes[k], (uint32_t)(100 + 10 * op + k));
    }
    assert_true(passed);
}

static void swiglu(void **state)
{
    (void)state;
    int passed = 1;
    for (size_t k = 0; k < ELEM_SHAPES; k++)
        passed &= check_op(OP_SWIGLU, &elem_shapes[k], (uint32_t)(200 + k));
    assert_true(passed);
}

static void softmax(void **state)
{
    (void)state;
    int passed = 1;
    for (size_t k = 0; k < ROW_SHAPES; k++)
        passed &= check_op(OP_SOFTMAX, &row_shapes[k], (uint32_t)(300 + k));
    assert_true(passed);
}

static void rmsnorm(void **state)
{
    (void)state;
    int passed = 1;
    for (size_t k = 0; k < ROW_SHAPES; k++)
        passed &= check_op(OP_RMS, &row_shapes[k], (uint32_t)(400 + k));
    assert_true(passed);
}

static void layernorm(void **state)
{
    (void)state;
    int passed = 1;
    for (size_t k = 0; k < ROW_SHAPES; k++)
        passed &= check_op(OP_LN, &row_shapes[k], (uint32_t)(500 + k));
    assert_true(passed);
}

/* A causal softmax's masked positions have y = 0 and get exactly 0; the rest match the
 * reference (no FD here: the mask depends on the row's index). */
static void softmax_causal(void **state)
{
    (void)state;
    const shape s = {3, {2, 5, 9}};
    problem p;
    problem_init(&p, OP_SOFTMAX, &s, 350);
    /* Redo y with the mask. */
    double *yd = doubles(p.n);
    ref_softmax_fwd_d(p.in0, p.rows, p.d, 5, 1, p.scale, yd);
    for (size_t i = 0; i < p.n; i++)
        p.f_y[i] = (float)yd[i], p.y[i] = p.f_y[i];
    free(yd);
    ref_softmax_bwd_d(p.y, p.dy, p.rows, p.d, p.scale, p.ref[0]);
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        float *got[3];
        run_gpu(&p, &paths[pi], 1, got);
        int zeros = 1;
        for (size_t i = 0; i < p.n; i++)
            zeros &= p.f_y[i] != 0.0f || got[0][i] == 0.0f;
        char name[160];
        snprintf(name, sizeof name, "softmax backward causal [2,5,9] in place [%s]",
                 paths[pi].name);
        double e = nmse_d(got[0], p.ref[0], p.n);
        printf("%s: nmse %.3g\n", name, e);
        passed &= mcl_test_record(name, "nmse", e, TOL_NMSE);
        snprintf(name, sizeof name, "softmax backward causal: masked positions are 0 [%s]",
                 paths[pi].name);
        passed &= mcl_test_record_bool(name, zeros);
        free(got[0]);
    }
    problem_free(&p);
    assert_true(passed);
}

/* dweight and dbias are the same bits on a second run (no atomics, fixed order). */
static void determinism(void **state)
{
    (void)state;
    const shape s = {2, {1000, 257}};
    problem p;
    problem_init(&p, OP_LN, &s, 600);
    int passed = 1;
    for (int pi = 0; pi < 2; pi++) {
        float *a[3], *b[3];
        run_gpu(&p, &paths[pi], 0, a);
        run_gpu(&p, &paths[pi], 0, b);
        int same = 1;
        for (int k = 0; k < 3; k++) {
            same &= memcmp(a[k], b[k], p.len[k] * sizeof(float)) == 0;
            free(a[k]);
            free(b[k]);
        }
        char name[128];
        snprintf(name, sizeof name, "layernorm backward twice: the same bits [%s]",
                 paths[pi].name);
        passed &= mcl_test_record_bool(name, same);
    }
    problem_free(&p);
    assert_true(passed);
}

/* The comparisons can fail: a reference wrong in one dweight column, a LayerNorm reference
 * without the mean(g) term, and a SiLU gradient without its v s (1 - s) term against the
 * finite differences are all caught at the tolerances used above. */
static void negative_controls(void **state)
{
    (void)state;
    int all = 1;
    const shape s = {2, {1000, 257}};
    problem p;
    problem_init(&p, OP_LN, &s, 700);
    float *got[3];
    run_gpu(&p, &paths[0], 0, got);
    p.ref[1][100] *= 1.01;
    double e = nmse_d(got[1], p.ref[1], p.d);
    printf("negative control: dweight reference off by 1e-2 in one column: nmse %.3g\n", e);
    all &= mcl_test_record_bool("negative control: a dweight reference wrong in one column is "
                                "detected",
                                e > TOL_NMSE);
    ref_layernorm_bwd_d(p.in0, p.w, p.dy, p.rows, p.d, p.eps, 1, p.ref[0], NULL, NULL);
    e = nmse_d(got[0], p.ref[0], p.n);
    printf("negative control: layernorm dx reference without mean(g): nmse %.3g\n", e);
    all &= mcl_test_record_bool("negative control: a LayerNorm reference without the mean(g) "
                                "term is detected",
                                e > TOL_NMSE);
    for (int k = 0; k < 3; k++)
        free(got[k]);
    problem_free(&p);

    const shape e1 = {1, {97}};
    problem_init(&p, OP_SILU, &e1, 701);
    size_t idx[160];
    double fd[160];
    size_t count = fd_samples(&p, 0, idx, 160);
    for (size_t j = 0; j < count; j++)
        fd[j] = fd_at(&p, 0, idx[j]);
    double *wrong = doubles(p.n);
    for (size_t i = 0; i < p.n; i++)
        wrong[i] = p.dy[i] / (1.0 + exp(-p.in0[i])); /* dy * s(x): the v s (1 - s) term lost */
    e = fd_error(idx, count, fd, NULL, wrong);
    printf("negative control: SiLU gradient without v s (1 - s) vs FD: %.3g\n", e);
    all &= mcl_test_record_bool("negative control: a wrong SiLU gradient fails the finite "
                                "difference check",
                                e > TOL_FD_GPU);
    free(wrong);
    problem_free(&p);
    assert_true(all);
}

static void bad_arguments(void **state)
{
    (void)state;
    const int64_t s[2] = {4, 6}, s1[1] = {6}, s5[1] = {5}, s3[2] = {4, 5};
    mcl_tensor *x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s, NULL);
    mcl_tensor *dy = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s, NULL);
    mcl_tensor *dx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s, NULL);
    mcl_tensor *up = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s, NULL);
    mcl_tensor *du = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s, NULL);
    mcl_tensor *other = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s3, NULL);
    mcl_tensor *w = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s1, NULL);
    mcl_tensor *dw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s1, NULL);
    mcl_tensor *db = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s1, NULL);
    mcl_tensor *w5 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s5, NULL);
    mcl_tensor *i32 = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, s, NULL);
    mcl_tensor *foreign = mcl_test_tensor(ctx_tree, MCL_DTYPE_F32, 2, s, NULL);
    mcl_tensor *v1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s1, NULL);
    mcl_tensor *v2 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s1, NULL);

    EXPECT_STATUS(mcl_activate_backward(NULL, MCL_ACTIVATION_GELU, x, dy, dx), INVALID);
    EXPECT_STATUS(mcl_activate_backward(ctx, MCL_ACTIVATION_GELU, NULL, dy, dx), INVALID);
    EXPECT_STATUS(mcl_activate_backward(ctx, (mcl_activation)3, x, dy, dx), INVALID);
    EXPECT_STATUS(mcl_activate_backward(ctx, MCL_ACTIVATION_GELU, x, dy, other), SHAPE);
    EXPECT_STATUS(mcl_activate_backward(ctx, MCL_ACTIVATION_GELU, x, i32, dx), DTYPE);
    EXPECT_STATUS(mcl_activate_backward(ctx, MCL_ACTIVATION_GELU, x, foreign, dx),
                  MCL_ERROR_WRONG_CONTEXT);
    EXPECT_STATUS(mcl_activate_backward(ctx, MCL_ACTIVATION_GELU, x, dy, x), INVALID);
    EXPECT_STATUS(mcl_activate_backward(ctx, MCL_ACTIVATION_RELU, x, dy, dy), MCL_SUCCESS);

    EXPECT_STATUS(mcl_swiglu_backward(NULL, x, up, dy, dx, du), INVALID);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, dy, NULL, du), INVALID);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, dy, dx, other), SHAPE);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, i32, dx, du), DTYPE);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, dy, foreign, du), MCL_ERROR_WRONG_CONTEXT);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, dy, x, du), INVALID);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, dy, dx, dy), INVALID);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, dy, dx, dx), INVALID);
    EXPECT_STATUS(mcl_swiglu_backward(ctx, x, up, dy, dx, du), MCL_SUCCESS);

    EXPECT_STATUS(mcl_softmax_backward(NULL, x, dy, 1.0f, dx), INVALID);
    EXPECT_STATUS(mcl_softmax_backward(ctx, x, NULL, 1.0f, dx), INVALID);
    EXPECT_STATUS(mcl_softmax_backward(ctx, x, dy, 1.0f, other), SHAPE);
    EXPECT_STATUS(mcl_softmax_backward(ctx, i32, dy, 1.0f, dx), DTYPE);
    EXPECT_STATUS(mcl_softmax_backward(ctx, foreign, dy, 1.0f, dx), MCL_ERROR_WRONG_CONTEXT);
    EXPECT_STATUS(mcl_softmax_backward(ctx, x, dy, 1.0f, x), INVALID);
    EXPECT_STATUS(mcl_softmax_backward(ctx, x, dy, 1.0f, dy), MCL_SUCCESS);

    EXPECT_STATUS(mcl_rmsnorm_backward(NULL, x, w, dy, 1e-5f, dx, dw), INVALID);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, w, dy, 1e-5f, NULL, dw), INVALID);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, w5, dy, 1e-5f, dx, dw), SHAPE);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, w, dy, 1e-5f, dx, w5), SHAPE);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, w, dy, 1e-5f, other, dw), SHAPE);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, i32, dy, 1e-5f, dx, dw), DTYPE);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, w, foreign, 1e-5f, dx, dw),
                  MCL_ERROR_WRONG_CONTEXT);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, w, dy, 1e-5f, dx, w), INVALID);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, v1, w, v2, 1e-5f, w, dw), INVALID);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, v1, w, v2, 1e-5f, dw, v1), INVALID);
    EXPECT_STATUS(mcl_rmsnorm_backward(ctx, x, NULL, dy, 1e-5f, dy, NULL), MCL_SUCCESS);

    EXPECT_STATUS(mcl_layernorm_backward(NULL, x, w, dy, 1e-5f, dx, dw, db), INVALID);
    EXPECT_STATUS(mcl_layernorm_backward(ctx, x, w, dy, 1e-5f, dx, dw, w5), SHAPE);
    EXPECT_STATUS(mcl_layernorm_backward(ctx, x, w, dy, 1e-5f, dx, dw, dw), INVALID);
    EXPECT_STATUS(mcl_layernorm_backward(ctx, x, w, dy, 1e-5f, dx, dw, w), INVALID);
    EXPECT_STATUS(mcl_layernorm_backward(ctx, x, w, i32, 1e-5f, dx, dw, db), DTYPE);
    EXPECT_STATUS(mcl_layernorm_backward(ctx, x, w, dy, 1e-5f, dx, dw, db), MCL_SUCCESS);
    EXPECT_STATUS(mcl_layernorm_backward(ctx, x, NULL, dy, 1e-5f, x, NULL, db), MCL_SUCCESS);

    assert_mcl_ok(mcl_finish(ctx));
    int ok = mcl_test_record("bad arguments give their documented statuses", "wrong",
                             (double)mcl_test_wrong_statuses, 0.0);
    mcl_tensor *t[] = {x, dy, dx, up, du, other, w, dw, db, w5, i32, foreign, v1, v2};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        mcl_tensor_destroy(t[i]);
    assert_true(ok);
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
    mcl_test_record_bool("second context takes the tree path", !mcl_rows_use_subgroup(ctx_tree));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(activations),     cmocka_unit_test(swiglu),
        cmocka_unit_test(softmax),         cmocka_unit_test(softmax_causal),
        cmocka_unit_test(rmsnorm),         cmocka_unit_test(layernorm),
        cmocka_unit_test(determinism),     cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    int failures = cmocka_run_group_tests(tests, NULL, NULL);

    /* The harness checks its own context's validation errors; this one's are counted here. */
    failures += mcl_test_context_release(ctx_tree, " without subgroup arithmetic");
    return mcl_test_finish(failures);
}
