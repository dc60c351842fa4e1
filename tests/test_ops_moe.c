/* Mixtures of experts on the device (src/ops/moe.c): the routing (mcl_moe_route), the expert
 * GEMVs reading only the chosen experts' rows of a stack (mcl_matmul_experts: f32, Q8_0, Q4_0,
 * Q4_K, Q5_K, Q6_K; the float path and, where the device has it, the integer-dot path), the
 * weighted sum (mcl_moe_combine), and a whole routed feed-forward captured in a graph and
 * replayed for other routings.
 *
 * Routing: logits are distinct multiples of 1/32 (a permutation of the experts, so no two
 * probabilities are within float rounding of each other) except for deliberate exact ties,
 * which must go to the lower index. Ids must match the double reference exactly; weights
 * within 1e-5 absolute (f32 exp and a sum of at most 256 terms: relative error ~1e-6).
 *
 * The router with its routing (mcl_moe_router): see router() below.
 *
 * Expert GEMVs: every expert is random (block weights: random bytes with random finite fp16
 * scales, as test_ops_quant.c makes them), so a pair that read another expert's rows, or rows
 * from a wrong offset, is off by NMSE ~ 2. Shapes: N = 37 (a partial last workgroup), K of one
 * and several blocks (odd block counts: the d area ends in half a word), 1 and several rows, k
 * = 1, 2 and 8, x shared by a row's experts and a row of x per pair. Tolerances:
 *  - float path and f32: NMSE 1e-9 against the stack dequantized by the CPU reference and
 *    multiplied in double (the weights are exact; only the f32 summation differs).
 *  - integer-dot path: NMSE 1e-9 against the same double product with x replaced by its 8-bit
 *    quantization as the GPU made it (downloaded): the integer sums are exact.
 * Negative controls: a reference with every id moved to the next expert, and one with the
 * expert's rows one row off, are both caught by the same checks.
 *
 * Batches of 4 rows or more take the grouped mode (a workgroup per expert, its pairs 4 or 8 at
 * a time): a batch of 64 rows whose experts get 64, 63, 1 and 0 pairs, checked against the
 * reference and against the same pairs run a row at a time (the per-pair mode), with a
 * reference whose one id is changed as the control; and 1400 pairs (past one scan window of
 * the ids), read from ids_first = 5, with ids read from 0 as the control.
 *
 * Stacks past one binding: MOTIFCL_MAX_BINDING set small binds them in parts of two experts
 * (a limit below one expert is refused), and a Q8_0 stack just past maxStorageBufferRange
 * (where that is small, as on Lavapipe; MOTIFCL_TEST_EXPERTS_BYTES asks for any size, past
 * 4 GiB on hardware) splits for real.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/matmul_quant.h"
#include "ops/ops_internal.h"
#include "quant/quant.h"
#include "ref/ref.h"
#include "vk/inspect.h"

#define WEIGHT_TOLERANCE 1e-5
#define NMSE_EXACT_WEIGHTS 1e-9
/* What a wrong expert or a wrong row offset gives at least (about 2 for random experts). */
#define NMSE_WRONG 0.1

static mcl_context *ctx;
static int has_dot;

static uint32_t rng;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void seed_rng(uint32_t seed)
{
    rng = seed * 2654435761u + 1;
}

/* ---------------------------------------------------------------------------------------
 * Routing
 * ------------------------------------------------------------------------------------- */

/* Rows of distinct logits (a permutation of the experts, 1/32 apart, shifted per row); rows
 * with r % 3 == 1 get exact ties: the top value copied to another expert, and the k-th
 * value to one below and one above it. */
static float *route_logits(int64_t rows, int64_t e, int k, uint32_t seed)
{
    float *l = malloc((size_t)(rows * e) * sizeof *l);
    int perm[256];
    assert_non_null(l);
    seed_rng(seed);
    for (int64_t r = 0; r < rows; r++) {
        for (int i = 0; i < e; i++)
            perm[i] = i;
        for (int i = (int)e - 1; i > 0; i--) {
            int j = (int)(next_u32() % (uint32_t)(i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        float shift = (float)(next_u32() % 64) / 8.0f - 4.0f;
        for (int64_t i = 0; i < e; i++)
            l[r * e + i] = (float)(perm[i] - (int)e / 2) / 32.0f + shift;
        if (r % 3 == 1 && e >= 4) {
            /* Expert of rank 0 and of rank k-1 (ranks by value). */
            int64_t top = 0, kth = 0;
            for (int64_t i = 0; i < e; i++) {
                if (perm[i] == (int)e - 1)
                    top = i;
                if (perm[i] == (int)e - k)
                    kth = i;
            }
            l[r * e + (top + 1) % e] = l[r * e + top];
            if (kth > 0)
                l[r * e + kth - 1] = l[r * e + kth];
            if (kth + 1 < e)
                l[r * e + kth + 1] = l[r * e + kth];
        }
    }
    return l;
}

/* Route on the device; ids and weights downloaded into the caller's arrays. */
static void route_gpu(const float *logits, int64_t rows, int64_t e, int k, int norm,
                      int32_t *ids, float *w)
{
    int64_t ls[2] = {rows, e}, os[2] = {rows, k};
    mcl_tensor *tl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ls, logits);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, os, NULL);
    mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, os, NULL);
    assert_mcl_ok(mcl_moe_route(ctx, tl, (uint32_t)k, norm, ti, tw));
    assert_mcl_ok(mcl_tensor_download(ti, 0, ids, (uint64_t)(rows * k) * 4));
    assert_mcl_ok(mcl_tensor_download(tw, 0, w, (uint64_t)(rows * k) * 4));
    mcl_tensor_destroy(tl);
    mcl_tensor_destroy(ti);
    mcl_tensor_destroy(tw);
}

/* Mismatched ids, and the largest weight error, against the reference. */
static int64_t route_compare(const int32_t *ids, const float *w, const int32_t *rid,
                             const double *rw, int64_t n, double *max_err)
{
    int64_t bad = 0;
    *max_err = 0.0;
    for (int64_t i = 0; i < n; i++) {
        bad += ids[i] != rid[i];
        double err = fabs((double)w[i] - rw[i]);
        *max_err = err > *max_err ? err : *max_err;
    }
    return bad;
}

static void route(void **state)
{
    (void)state;
    const int64_t experts[] = {4, 8, 60, 64, 128, 256};
    const int ks[] = {1, 2, 4, 8, 16};
    const int64_t rows_of[] = {1, 7, 33};
    uint32_t seed = 100;
    for (size_t ei = 0; ei < sizeof experts / sizeof experts[0]; ei++) {
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            int64_t e = experts[ei], rows = rows_of[(ei + ki) % 3];
            int k = ks[ki];
            if (k > e)
                continue;
            for (int norm = 0; norm < 2; norm++, seed++) {
                float *l = route_logits(rows, e, k, seed);
                int32_t *ids = malloc((size_t)(rows * k) * sizeof *ids);
                int32_t *rid = malloc((size_t)(rows * k) * sizeof *rid);
                float *w = malloc((size_t)(rows * k) * sizeof *w);
                double *rw = malloc((size_t)(rows * k) * sizeof *rw);
                assert_true(ids && rid && w && rw);
                route_gpu(l, rows, e, k, norm, ids, w);
                ref_moe_route(l, rows, e, k, norm, 0, rid, rw);
                double err;
                int64_t bad = route_compare(ids, w, rid, rw, rows * k, &err);
                char name[96];
                snprintf(name, sizeof name, "route E=%lld k=%d rows=%lld norm=%d",
                         (long long)e, k, (long long)rows, norm);
                printf("%-50s ids wrong %lld, weight error %.3g\n", name, (long long)bad, err);
                mcl_test_record(name, "weight_abs_error", err, WEIGHT_TOLERANCE);
                assert_int_equal(bad, 0);
                assert_true(err <= WEIGHT_TOLERANCE);
                /* Control: ties to the higher index differ wherever a tie decided (rows r % 3
                 * == 1 with k >= 2 or a tie at the top), and the check sees it. */
                if (rows > 1 && k >= 2 && e >= 4) {
                    ref_moe_route(l, rows, e, k, norm, 1, rid, rw);
                    assert_true(route_compare(ids, w, rid, rw, rows * k, &err) > 0);
                }
                free(l);
                free(ids);
                free(rid);
                free(w);
                free(rw);
            }
        }
    }
    mcl_test_record_bool("routing ties to the higher index are caught", 1);
}

/* A row of NaN and a row of -0 / +0 name k distinct experts in range; 65537 rows (past one
 * grid dimension) route as the reference. */
static void route_edges(void **state)
{
    (void)state;
    const int64_t e = 8, k = 3;
    float l[2 * 8];
    for (int i = 0; i < 8; i++) {
        l[i] = NAN;
        l[8 + i] = i % 2 ? -0.0f : 0.0f;
    }
    int32_t ids[6];
    float w[6];
    route_gpu(l, 2, e, (int)k, 1, ids, w);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < k; j++) {
            assert_true(ids[r * k + j] >= 0 && ids[r * k + j] < e);
            for (int i = 0; i < j; i++)
                assert_int_not_equal(ids[r * k + i], ids[r * k + j]);
        }
    /* -0 and +0 tie: the lowest indices, each weight a third. */
    assert_int_equal(ids[3], 0);
    assert_int_equal(ids[4], 1);
    assert_int_equal(ids[5], 2);
    assert_true(fabsf(w[3] - 1.0f / 3.0f) < 1e-6f);

    const int64_t rows = 65537;
    float *big = route_logits(rows, 4, 1, 77);
    int32_t *gi = malloc((size_t)rows * 2 * sizeof *gi), *ri = malloc((size_t)rows * 2 * 4);
    float *gw = malloc((size_t)rows * 2 * sizeof *gw);
    double *rw = malloc((size_t)rows * 2 * sizeof *rw);
    assert_true(gi && ri && gw && rw);
    route_gpu(big, rows, 4, 2, 0, gi, gw);
    ref_moe_route(big, rows, 4, 2, 0, 0, ri, rw);
    double err;
    assert_int_equal(route_compare(gi, gw, ri, rw, rows * 2, &err), 0);
    assert_true(err <= WEIGHT_TOLERANCE);
    mcl_test_record_bool("route: NaN and signed-zero rows, 65537 rows", 1);
    free(big);
    free(gi);
    free(ri);
    free(gw);
    free(rw);
}

/* The router and its routing in one dispatch (mcl_moe_router) for x [rows, K] and W [E, K]
 * of small integers (x in -2..2, W in -3..3 sixty-fourths): every partial sum is exact in f32,
 * so the logits must equal the double product exactly whatever the order of the slices. A row
 * of W copied into the next makes a tie. Sentinels before each call show that every row was
 * written; the counts must be 0 after it. Control: a row's count set to 1000 before the call
 * is never routed (its last workgroup never recognised), and the checks see it. */
typedef struct router_run {
    int32_t *ids;
    float *w, *logits;
    int32_t counts[8];
    int done;
} router_run;

static void router_gpu(const float *x, const float *wr, int64_t rows, int64_t e, int64_t kd,
                       int k, int norm, int32_t poisoned_row, router_run *out)
{
    int64_t xs[2] = {rows, kd}, wsh[2] = {e, kd}, ls[2] = {rows, e}, os[2] = {rows, k};
    int64_t ps[2] = {rows * MCL_MOE_ROUTER_SLICES, e}, cs[1] = {rows};
    int32_t counts[8] = {0};
    assert_true(rows <= 8);
    if (poisoned_row >= 0)
        counts[poisoned_row] = 1000;
    int32_t *sid = malloc((size_t)(rows * k) * 4);
    float *snan = malloc((size_t)(rows * e) * 4);
    assert_true(sid && snan);
    for (int64_t i = 0; i < rows * k; i++)
        sid[i] = -1;
    for (int64_t i = 0; i < rows * e; i++)
        snan[i] = NAN;
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, x);
    mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, wsh, wr);
    mcl_tensor *tp = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ps, NULL);
    mcl_tensor *tc = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, cs, counts);
    mcl_tensor *tl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ls, snan);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, os, sid);
    mcl_tensor *twt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, os, snan);
    mcl_moe_router_args a = {.x = tx, .w = tw, .part = tp, .counts = tc, .logits = tl,
                             .ids = ti, .weights = twt, .k = (uint32_t)k, .norm = norm};
    assert_mcl_ok(mcl_moe_router(ctx, &a, &out->done));
    out->ids = sid;
    out->logits = snan;
    out->w = malloc((size_t)(rows * k) * 4);
    assert_non_null(out->w);
    assert_mcl_ok(mcl_tensor_download(ti, 0, out->ids, (uint64_t)(rows * k) * 4));
    assert_mcl_ok(mcl_tensor_download(twt, 0, out->w, (uint64_t)(rows * k) * 4));
    assert_mcl_ok(mcl_tensor_download(tl, 0, out->logits, (uint64_t)(rows * e) * 4));
    assert_mcl_ok(mcl_tensor_download(tc, 0, out->counts, (uint64_t)rows * 4));
    mcl_tensor *all[] = {tx, tw, tp, tc, tl, ti, twt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
}

static void router_run_free(router_run *r)
{
    free(r->ids);
    free(r->w);
    free(r->logits);
}

static void router(void **state)
{
    (void)state;
    /* K: 16 slices of 256 values; 8 slices, the last of 104; one slice. */
    const struct {
        int64_t rows, e, kd;
        int k, norm;
    } cases[] = {{3, 8, 4096, 2, 1}, {2, 60, 1000, 4, 0}, {5, 8, 64, 2, 1}, {1, 256, 2048, 16, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t rows = cases[c].rows, e = cases[c].e, kd = cases[c].kd;
        int k = cases[c].k, norm = cases[c].norm;
        float *x = malloc((size_t)(rows * kd) * 4), *wr = malloc((size_t)(e * kd) * 4);
        float *rl = malloc((size_t)(rows * e) * 4);
        int32_t *rid = malloc((size_t)(rows * k) * 4);
        double *rw = malloc((size_t)(rows * k) * sizeof *rw);
        assert_true(x && wr && rl && rid && rw);
        seed_rng(500 + (uint32_t)c);
        for (int64_t i = 0; i < rows * kd; i++)
            x[i] = (float)((int)(next_u32() % 5) - 2);
        for (int64_t i = 0; i < e * kd; i++)
            wr[i] = (float)((int)(next_u32() % 7) - 3) / 64.0f;
        memcpy(wr + kd, wr, (size_t)kd * 4); /* experts 0 and 1 tie in every row */
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < e; j++) {
                double sum = 0.0;
                for (int64_t i = 0; i < kd; i++)
                    sum += (double)x[r * kd + i] * wr[j * kd + i];
                rl[r * e + j] = (float)sum;
            }
        ref_moe_route(rl, rows, e, k, norm, 0, rid, rw);
        for (int control = 0; control < 2; control++) {
            router_run run;
            router_gpu(x, wr, rows, e, kd, k, norm, control ? (int32_t)(rows - 1) : -1, &run);
            assert_int_equal(run.done, 1);
            int64_t bad_logits = 0, bad_counts = 0;
            for (int64_t i = 0; i < rows * e; i++)
                bad_logits += memcmp(&run.logits[i], &rl[i], 4) != 0;
            for (int64_t r = 0; r < rows; r++)
                bad_counts += run.counts[r] != 0;
            double err;
            int64_t bad = route_compare(run.ids, run.w, rid, rw, rows * k, &err);
            char name[96];
            snprintf(name, sizeof name, "router E=%lld K=%lld rows=%lld k=%d%s", (long long)e,
                     (long long)kd, (long long)rows, k, control ? " (row count 1000)" : "");
            printf("%-50s logits wrong %lld, ids wrong %lld, weight error %.3g, counts left "
                   "%lld\n", name, (long long)bad_logits, (long long)bad, err,
                   (long long)bad_counts);
            if (!control) {
                mcl_test_record(name, "weight_abs_error", err, WEIGHT_TOLERANCE);
                assert_int_equal(bad_logits, 0);
                assert_int_equal(bad, 0);
                assert_true(err <= WEIGHT_TOLERANCE);
                assert_int_equal(bad_counts, 0);
            } else {
                assert_true(bad > 0 && bad_logits > 0 && bad_counts > 0);
            }
            router_run_free(&run);
        }
        free(x);
        free(wr);
        free(rl);
        free(rid);
        free(rw);
    }
    mcl_test_record_bool("router: a row whose count never reaches its slices is caught", 1);

    /* Not taken, nothing recorded: an f16 router, K not a multiple of 4. Refused: part too
     * small. */
    int64_t xs[2] = {2, 32}, w16[2] = {8, 32}, x6[2] = {2, 6}, w6[2] = {8, 6}, os[2] = {2, 2};
    int64_t ps[2] = {2, 8}, cs[1] = {2};
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *th = mcl_test_tensor(ctx, MCL_DTYPE_F16, 2, w16, NULL);
    mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, w16, NULL);
    mcl_tensor *tx6 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, x6, NULL);
    mcl_tensor *tw6 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, w6, NULL);
    mcl_tensor *tp = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ps, NULL);
    mcl_tensor *tc = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, cs, NULL);
    mcl_tensor *tl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, w16, NULL);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, os, NULL);
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, os, NULL);
    mcl_moe_router_args a = {.x = tx, .w = th, .part = tp, .counts = tc, .logits = tl,
                             .ids = ti, .weights = tt, .k = 2, .norm = 1};
    int done = 1;
    assert_mcl_ok(mcl_moe_router(ctx, &a, &done));
    assert_int_equal(done, 0);
    a.x = tx6;
    a.w = tw6;
    done = 1;
    assert_mcl_ok(mcl_moe_router(ctx, &a, &done));
    assert_int_equal(done, 0);
    a.x = tx;
    a.w = tw;
    mcl_test_expect_status("router: part of 16 floats for 2 rows of 8 experts",
                           mcl_moe_router(ctx, &a, &done), MCL_ERROR_SHAPE_MISMATCH);
    a.part = tc;
    mcl_test_expect_status("router: part i32", mcl_moe_router(ctx, &a, &done),
                           MCL_ERROR_DTYPE_MISMATCH);
    mcl_tensor *all[] = {tx, th, tw, tx6, tw6, tp, tc, tl, ti, tt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    assert_mcl_ok(mcl_finish(ctx));
}

/* ---------------------------------------------------------------------------------------
 * Expert GEMVs
 * ------------------------------------------------------------------------------------- */

static const int *scale_fields(mcl_dtype dtype)
{
    static const int d_first[] = {0, -1}, d_dmin[] = {0, 2, -1}, d_last[] = {208, -1};
    switch (dtype) {
    case MCL_DTYPE_Q4_K:
    case MCL_DTYPE_Q5_K:
        return d_dmin;
    case MCL_DTYPE_Q6_K:
        return d_last;
    default:
        return d_first;
    }
}

/* A random finite half of magnitude 2^-14 .. 2^-4, negative one time in four. */
static uint16_t random_half(void)
{
    uint32_t r = next_u32();
    uint16_t mant = (uint16_t)((r >> 8) & 0x3FF);
    return (uint16_t)(((r >> 20) % 4 == 0 ? 0x8000 : 0) | ((1 + r % 11) << 10) | mant);
}

/* The stack: bytes (block types) or floats, and its values as the CPU dequantizes them. */
typedef struct stack {
    mcl_dtype dtype;
    int64_t e, n, k;
    void *bytes;
    float *w; /* [e n, k] */
    mcl_tensor *t;
} stack;

static void stack_make(stack *s, mcl_dtype dtype, int64_t e, int64_t n, int64_t k,
                       uint32_t seed)
{
    *s = (stack){.dtype = dtype, .e = e, .n = n, .k = k};
    int64_t count = e * n * k, shape[2] = {e * n, k};
    seed_rng(seed);
    s->w = malloc((size_t)count * sizeof(float));
    assert_non_null(s->w);
    if (dtype == MCL_DTYPE_F32) {
        mcl_fill_random(s->w, (size_t)count, seed, -1, 1);
        s->t = mcl_test_tensor(ctx, dtype, 2, shape, s->w);
        return;
    }
    size_t bytes = mcl_quant_row_size(dtype, count), block = mcl_dtype_block_bytes(dtype);
    uint8_t *q = malloc(bytes);
    assert_non_null(q);
    for (size_t i = 0; i < bytes; i++)
        q[i] = (uint8_t)(next_u32() >> 24);
    for (size_t b = 0; b < bytes / block; b++)
        for (const int *f = scale_fields(dtype); *f >= 0; f++) {
            uint16_t h = random_half();
            q[b * block + (size_t)*f] = (uint8_t)(h & 0xFF);
            q[b * block + (size_t)*f + 1] = (uint8_t)(h >> 8);
        }
    assert_mcl_ok(mcl_dequantize(dtype, q, s->w, count));
    s->bytes = q;
    s->t = mcl_test_tensor(ctx, dtype, 2, shape, q);
}

static void stack_free(stack *s)
{
    mcl_tensor_destroy(s->t);
    free(s->bytes);
    free(s->w);
}

/* k distinct experts per row, random. */
static int32_t *random_ids(int64_t rows, int k, int64_t e, uint32_t seed)
{
    int32_t *ids = malloc((size_t)(rows * k) * sizeof *ids);
    assert_non_null(ids);
    seed_rng(seed);
    for (int64_t r = 0; r < rows; r++)
        for (int j = 0; j < k; j++) {
            int ok;
            do {
                ids[r * k + j] = (int32_t)(next_u32() % (uint32_t)e);
                ok = 1;
                for (int i = 0; i < j; i++)
                    ok &= ids[r * k + i] != ids[r * k + j];
            } while (!ok);
        }
    return ids;
}

/* y[p] = W_{ids[p] + shift} (rows from row_shift on) . x[p or p / k], in double. shift and
 * row_shift are the negative controls' mistakes (0 for the truth). */
static float *ref_experts(const stack *s, const float *x, const int32_t *ids, int64_t pairs,
                          int k, int per_slot, int shift, int row_shift)
{
    float *y = malloc((size_t)(pairs * s->n) * sizeof *y);
    assert_non_null(y);
    for (int64_t p = 0; p < pairs; p++) {
        int64_t e = (ids[p] + shift) % s->e, xr = per_slot ? p : p / k;
        for (int64_t n = 0; n < s->n; n++) {
            int64_t row = (e * s->n + n + row_shift) % (s->e * s->n);
            double acc = 0.0;
            for (int64_t i = 0; i < s->k; i++)
                acc += (double)s->w[row * s->k + i] * (double)x[xr * s->k + i];
            y[p * s->n + n] = (float)acc;
        }
    }
    return y;
}

/* x as the integer-dot path sees it: quantized on the GPU (mcl_quantize_activations), the
 * codes and scales downloaded and multiplied back; act keeps the quantization. */
static float *quantized_x(mcl_tensor *tx, int64_t xrows, int64_t k, mcl_tensor **act)
{
    int64_t blocks = xrows * k / 32, words = blocks * MCL_QUANT_ACT_WORDS;
    *act = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &words, NULL);
    assert_mcl_ok(mcl_quantize_activations(ctx, tx, (uint32_t)xrows, (uint32_t)k, *act));
    uint32_t *q = malloc((size_t)words * 4);
    float *x = malloc((size_t)(xrows * k) * sizeof *x);
    assert_true(q && x);
    assert_mcl_ok(mcl_tensor_download(*act, 0, q, (uint64_t)words * 4));
    for (int64_t i = 0; i < xrows * k; i++) {
        int64_t g = i / 32;
        float d;
        memcpy(&d, &q[8 * blocks + g], 4);
        int8_t code = (int8_t)((q[8 * g + (i % 32) / 4] >> (8 * (i % 4))) & 0xFF);
        x[i] = d * (float)code;
    }
    free(q);
    return x;
}

typedef struct ex_case {
    int64_t rows;
    int k;
    int per_slot;
} ex_case;

static void expect_nmse(const char *name, double nmse, double tolerance)
{
    printf("%-72s nmse %.3g\n", name, nmse);
    if (!mcl_test_record(name, "nmse", nmse, tolerance))
        fail_msg("%s: nmse %g above %g", name, nmse, tolerance);
}

/* The device side of one expert product: x [xrows, k], y [pairs, n], the ids; on the dot path
 * x's quantization (act) and the x the reference multiplies (xref: x as quantized). */
typedef struct ex_io {
    mcl_tensor *tx, *ty, *ti, *act;
    const float *xref;
    float *xq;
} ex_io;

static void ex_io_make(const stack *s, const float *x, int64_t xrows, const int32_t *ids,
                       int64_t id_count, int64_t pairs, mcl_quant_path path, ex_io *io)
{
    int64_t xs[2] = {xrows, s->k}, ys[2] = {pairs, s->n};
    io->tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, x);
    io->ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    io->ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &id_count, ids);
    io->act = NULL;
    io->xq = path == MCL_QUANT_PATH_DOT ? quantized_x(io->tx, xrows, s->k, &io->act) : NULL;
    io->xref = io->xq ? io->xq : x;
}

static void ex_io_free(ex_io *io)
{
    free(io->xq);
    mcl_tensor *all[] = {io->act, io->tx, io->ty, io->ti};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
}

/* One expert product on `path` (FLOAT for f32 stacks), checked; with controls, the two wrong
 * references are shown to fail. given_act: the dot path gets x's quantization made here. */
static void check_experts(const stack *s, const ex_case *c, mcl_quant_path path, int given_act,
                          int controls, uint32_t seed)
{
    int64_t pairs = c->rows * c->k, xrows = c->per_slot ? pairs : c->rows;
    float *x = mcl_test_random_floats((size_t)(xrows * s->k), seed, -1, 1);
    int32_t *ids = random_ids(c->rows, c->k, s->e, seed + 1);
    ex_io io;
    ex_io_make(s, x, xrows, ids, pairs, pairs, path, &io);
    const float *xref = io.xref;
    mcl_experts_desc d = {.experts = (uint32_t)s->e, .slots = (uint32_t)c->k,
                          .per_slot = c->per_slot, .path = path,
                          .act = given_act ? io.act : NULL};
    mcl_quant_path ran = MCL_QUANT_PATH_AUTO;
    assert_mcl_ok(mcl_matmul_experts(ctx, io.tx, s->t, io.ti, &d, io.ty, &ran));
    assert_int_equal(ran, path);
    float *got = malloc((size_t)(pairs * s->n) * sizeof *got);
    assert_non_null(got);
    assert_mcl_ok(mcl_tensor_download(io.ty, 0, got, (uint64_t)(pairs * s->n) * 4));
    float *want = ref_experts(s, xref, ids, pairs, c->k, c->per_slot, 0, 0);
    char name[160];
    snprintf(name, sizeof name, "experts %s %s E=%lld N=%lld K=%lld rows=%lld k=%d %s%s",
             mcl_dtype_name(s->dtype), path == MCL_QUANT_PATH_DOT ? "dot" : "float",
             (long long)s->e, (long long)s->n, (long long)s->k, (long long)c->rows, c->k,
             c->per_slot ? "per-slot x" : "shared x", given_act ? " (given act)" : "");
    expect_nmse(name, mcl_nmse(got, want, (size_t)(pairs * s->n)), NMSE_EXACT_WEIGHTS);
    if (controls) {
        /* The same check against ids moved by one expert, and rows one row off. */
        for (int m = 0; m < 2; m++) {
            float *wrong = ref_experts(s, xref, ids, pairs, c->k, c->per_slot, m == 0,
                                       m == 1);
            double nmse = mcl_nmse(got, wrong, (size_t)(pairs * s->n));
            printf("  control (%s): nmse %.3g\n", m ? "rows one off" : "ids one off", nmse);
            assert_true(nmse > NMSE_WRONG);
            free(wrong);
        }
    }
    free(want);
    free(got);
    free(x);
    free(ids);
    ex_io_free(&io);
}

static const mcl_dtype stack_types[] = {MCL_DTYPE_F32,  MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0,
                                        MCL_DTYPE_Q4_K, MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
#define STACK_TYPES (sizeof stack_types / sizeof stack_types[0])

/* K of one and of several blocks (odd counts), per block size; f32 takes an odd K too. */
static int64_t stack_k(mcl_dtype t, int i)
{
    if (t == MCL_DTYPE_F32)
        return i ? 203 : 96;
    return mcl_dtype_block_weights(t) == 32 ? (i ? 1120 : 96) : (i ? 768 : 256);
}

/* Batches of 4 rows or more run the grouped mode (4 rows of x a chunk from 4 rows, 8 from 8):
 * {5, 8, 0} and {9, 2, 1}; the others a workgroup per pair. */
static const ex_case ex_cases[] = {
    {1, 1, 0}, {1, 2, 0}, {1, 8, 0}, {3, 2, 0}, {5, 8, 0}, /* gate and up: x shared */
    {1, 8, 1}, {3, 2, 1}, {2, 8, 1}, {9, 2, 1},            /* down: a row of x per pair */
};
#define EX_CASES (sizeof ex_cases / sizeof ex_cases[0])

static void experts_paths(void **state)
{
    (void)state;
    uint32_t seed = 1000;
    for (size_t f = 0; f < STACK_TYPES; f++) {
        mcl_dtype t = stack_types[f];
        for (int ki = 0; ki < 2; ki++) {
            stack s;
            stack_make(&s, t, 8, 37, stack_k(t, ki), seed++);
            for (size_t c = 0; c < EX_CASES; c++, seed += 4) {
                int controls = c == 3 || c == 6;
                check_experts(&s, &ex_cases[c], MCL_QUANT_PATH_FLOAT, 0, controls, seed);
                if (has_dot && t != MCL_DTYPE_F32)
                    check_experts(&s, &ex_cases[c], MCL_QUANT_PATH_DOT, c % 2, controls,
                                  seed + 2);
            }
            stack_free(&s);
        }
    }
    if (!has_dot)
        mcl_test_note("experts_dot", "not run: the device has no integer dot product enabled");
    mcl_test_record_bool("experts: ids one off and rows one off are caught", 1);
}

/* A batch whose pairs share experts, which mcl_matmul_experts multiplies in its grouped mode
 * (64 rows: a workgroup per expert, its pairs 8 at a time). Rows of 2 slots; expert 3 is
 * chosen by no pair, expert 2 by exactly one (row 17's first slot), experts 0 and 1 by the rest
 * (64 and 63 pairs: one count not a multiple of the chunk). */
#define GROUPED_ROWS 64
#define GROUPED_LONE_PAIR 34

static int32_t *grouped_ids(void)
{
    int32_t *ids = malloc(2 * GROUPED_ROWS * sizeof *ids);
    assert_non_null(ids);
    seed_rng(5000);
    for (int r = 0; r < GROUPED_ROWS; r++) {
        int first = (int)(next_u32() % 2);
        ids[2 * r] = first;
        ids[2 * r + 1] = 1 - first;
    }
    ids[GROUPED_LONE_PAIR] = 2;
    ids[GROUPED_LONE_PAIR + 1] = 0;
    return ids;
}

/* The grouped batch on `path`, against the CPU reference; as a control the same pairs run a
 * row at a time (2 pairs over 4 experts: the per-pair mode) give the same values; and a
 * reference with one id changed (the lone pair of expert 2, or the first pair) is told apart
 * by the same check. */
static void check_grouped(const stack *s, int per_slot, mcl_quant_path path, uint32_t seed)
{
    const int64_t rows = GROUPED_ROWS, pairs = 2 * GROUPED_ROWS;
    const int64_t xrows = per_slot ? pairs : rows, row_x = per_slot ? 2 : 1;
    float *x = mcl_test_random_floats((size_t)(xrows * s->k), seed, -1, 1);
    int32_t *ids = grouped_ids();
    ex_io io;
    ex_io_make(s, x, xrows, ids, pairs, pairs, path, &io);
    const float *xref = io.xref;
    mcl_experts_desc d = {.experts = (uint32_t)s->e, .slots = 2, .per_slot = per_slot,
                          .path = path};
    assert_mcl_ok(mcl_matmul_experts(ctx, io.tx, s->t, io.ti, &d, io.ty, NULL));
    size_t count = (size_t)(pairs * s->n);
    float *got = malloc(count * sizeof *got), *single = malloc(count * sizeof *single);
    assert_true(got && single);
    assert_mcl_ok(mcl_tensor_download(io.ty, 0, got, (uint64_t)count * 4));

    /* The control: row r alone, its ids from ids_first = 2 r. */
    int64_t rxs[2] = {row_x, s->k}, rys[2] = {2, s->n};
    mcl_tensor *rx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, rxs, NULL);
    mcl_tensor *ry = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, rys, NULL);
    for (int64_t r = 0; r < rows; r++) {
        mcl_experts_desc dr = d;
        dr.ids_first = (uint32_t)(2 * r);
        assert_mcl_ok(mcl_tensor_upload(rx, 0, x + r * row_x * s->k,
                                        (uint64_t)(row_x * s->k) * 4));
        assert_mcl_ok(mcl_matmul_experts(ctx, rx, s->t, io.ti, &dr, ry, NULL));
        assert_mcl_ok(mcl_tensor_download(ry, 0, single + 2 * r * s->n,
                                          (uint64_t)(2 * s->n) * 4));
    }
    float *want = ref_experts(s, xref, ids, pairs, 2, per_slot, 0, 0);
    char name[160];
    snprintf(name, sizeof name, "experts grouped %s %s E=%lld N=%lld K=%lld rows=%lld k=2 %s",
             mcl_dtype_name(s->dtype), path == MCL_QUANT_PATH_DOT ? "dot" : "float",
             (long long)s->e, (long long)s->n, (long long)s->k, (long long)rows,
             per_slot ? "per-slot x" : "shared x");
    expect_nmse(name, mcl_nmse(got, want, count), NMSE_EXACT_WEIGHTS);
    snprintf(name, sizeof name, "  the same pairs a row at a time (per pair)");
    expect_nmse(name, mcl_nmse(single, want, count), NMSE_EXACT_WEIGHTS);
    snprintf(name, sizeof name, "  grouped against per pair");
    expect_nmse(name, mcl_nmse(got, single, count), NMSE_EXACT_WEIGHTS);
    const int64_t changed[2] = {GROUPED_LONE_PAIR, 0};
    for (int i = 0; i < 2; i++) {
        int32_t keep = ids[changed[i]];
        ids[changed[i]] = 3;
        float *wrong = ref_experts(s, xref, ids, pairs, 2, per_slot, 0, 0);
        ids[changed[i]] = keep;
        double nmse = mcl_nmse(got, wrong, count);
        printf("  control (pair %lld's expert changed to 3): nmse %.3g\n",
               (long long)changed[i], nmse);
        assert_true(nmse > NMSE_EXACT_WEIGHTS);
        free(wrong);
    }
    free(want);
    free(got);
    free(single);
    free(x);
    free(ids);
    ex_io_free(&io);
    mcl_tensor_destroy(rx);
    mcl_tensor_destroy(ry);
}

/* More pairs than one scan of the ids holds (gemv_q.glsl's window of 1024 pairs): 700 rows of
 * 2 slots over 8 random experts, the ids from ids_first = 5 (the 5 before name expert 0 and
 * must be skipped), so that matches carry over from one window to the next. */
static void check_grouped_windows(const stack *s, int per_slot, mcl_quant_path path,
                                  uint32_t seed)
{
    const int64_t rows = 700, pairs = 2 * rows, xrows = per_slot ? pairs : rows, skip = 5;
    float *x = mcl_test_random_floats((size_t)(xrows * s->k), seed, -1, 1);
    int32_t *ids = random_ids(rows, 2, s->e, seed + 1);
    int32_t *all_ids = calloc((size_t)(skip + pairs), sizeof *all_ids);
    assert_non_null(all_ids);
    memcpy(all_ids + skip, ids, (size_t)pairs * sizeof *ids);
    ex_io io;
    ex_io_make(s, x, xrows, all_ids, skip + pairs, pairs, path, &io);
    const float *xref = io.xref;
    mcl_experts_desc d = {.experts = (uint32_t)s->e, .slots = 2, .per_slot = per_slot,
                          .path = path, .ids_first = (uint32_t)skip};
    assert_mcl_ok(mcl_matmul_experts(ctx, io.tx, s->t, io.ti, &d, io.ty, NULL));
    size_t count = (size_t)(pairs * s->n);
    float *got = malloc(count * sizeof *got);
    assert_non_null(got);
    assert_mcl_ok(mcl_tensor_download(io.ty, 0, got, (uint64_t)count * 4));
    float *want = ref_experts(s, xref, ids, pairs, 2, per_slot, 0, 0);
    char name[160];
    snprintf(name, sizeof name, "experts grouped %s %s E=%lld rows=%lld k=2 %s, ids from %lld",
             mcl_dtype_name(s->dtype), path == MCL_QUANT_PATH_DOT ? "dot" : "float",
             (long long)s->e, (long long)rows, per_slot ? "per-slot x" : "shared x",
             (long long)skip);
    expect_nmse(name, mcl_nmse(got, want, count), NMSE_EXACT_WEIGHTS);
    /* Control: the ids read from 0 instead (the window's pairs shifted by 5). */
    float *wrong = ref_experts(s, xref, all_ids, pairs, 2, per_slot, 0, 0);
    double nmse = mcl_nmse(got, wrong, count);
    printf("  control (ids from 0): nmse %.3g\n", nmse);
    assert_true(nmse > NMSE_WRONG);
    free(wrong);
    free(want);
    free(got);
    free(x);
    free(ids);
    free(all_ids);
    ex_io_free(&io);
}

static void experts_grouped(void **state)
{
    (void)state;
    uint32_t seed = 5100;
    for (size_t f = 1; f < STACK_TYPES; f++, seed += 20) {
        mcl_dtype t = stack_types[f];
        stack s;
        stack_make(&s, t, 4, 37, stack_k(t, 1), seed);
        for (int per_slot = 0; per_slot < 2; per_slot++) {
            check_grouped(&s, per_slot, MCL_QUANT_PATH_FLOAT, seed + 1 + (uint32_t)per_slot);
            if (has_dot)
                check_grouped(&s, per_slot, MCL_QUANT_PATH_DOT, seed + 3 + (uint32_t)per_slot);
        }
        stack_free(&s);
        stack_make(&s, t, 8, 37, stack_k(t, 0), seed + 10);
        check_grouped_windows(&s, 0, MCL_QUANT_PATH_FLOAT, seed + 11);
        if (has_dot)
            check_grouped_windows(&s, 1, MCL_QUANT_PATH_DOT, seed + 13);
        stack_free(&s);
    }
    mcl_test_record_bool("experts grouped: a changed id and shifted ids are caught", 1);
}

/* A stack bound in parts of whole experts (MOTIFCL_MAX_BINDING set small): pairs whose
 * experts lie in different parts, a workgroup per pair (3 and 2 rows) and grouped (6 and 8
 * rows: a dispatch a part, a workgroup per expert of the part). The control: a limit below
 * one expert is refused. */
static void experts_parts(void **state)
{
    (void)state;
    const struct {
        mcl_dtype t;
        int64_t k;
        const char *limit;
    } cases[] = {
        {MCL_DTYPE_Q8_0, 96, "8000"},   /* 3552 bytes of bodies an expert */
        {MCL_DTYPE_Q6_K, 256, "20000"}, /* 7696 */
        {MCL_DTYPE_Q4_K, 256, "12000"}, /* 5328 */
        {MCL_DTYPE_F32, 96, "30000"},   /* 14208 */
    };
    const ex_case c[] = {{3, 8, 0}, {2, 8, 1}, {6, 4, 0}, {8, 2, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", cases[i].limit);
        stack s;
        stack_make(&s, cases[i].t, 8, 37, cases[i].k, (uint32_t)(2000 + i));
        for (size_t j = 0; j < sizeof c / sizeof c[0]; j++) {
            check_experts(&s, &c[j], MCL_QUANT_PATH_FLOAT, 0, j == 0 || j == 2,
                          (uint32_t)(2100 + 10 * i + j));
            if (has_dot && cases[i].t != MCL_DTYPE_F32)
                check_experts(&s, &c[j], MCL_QUANT_PATH_DOT, 0, 0, (uint32_t)(2200 + 10 * i + j));
        }
        stack_free(&s);
    }
    mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", "3000");
    stack s;
    stack_make(&s, MCL_DTYPE_Q8_0, 8, 37, 96, 2300);
    int64_t xs[2] = {1, 96}, ys[2] = {2, 37}, is = 2;
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &is, NULL);
    mcl_experts_desc d = {.experts = 8, .slots = 2, .path = MCL_QUANT_PATH_FLOAT};
    assert_int_equal(mcl_matmul_experts(ctx, tx, s.t, ti, &d, ty, NULL), MCL_ERROR_TOO_LARGE);
    mcl_test_record_bool("experts: a binding below one expert is refused", 1);
    mcl_tensor_destroy(tx);
    mcl_tensor_destroy(ty);
    mcl_tensor_destroy(ti);
    stack_free(&s);
    mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", NULL);
}

/* A Q8_0 stack past one binding for real: just past maxStorageBufferRange where that is at
 * most 256 MiB (Lavapipe: 128 MiB), or MOTIFCL_TEST_EXPERTS_BYTES of block bodies where set
 * (past 4 GiB on hardware: experts whose offsets a 32-bit product would wrap). Pairs pick the
 * first, the last two (the last in a part of its own here) and a middle expert; the reference
 * dequantizes only their rows, found at 64-bit offsets. */
static void experts_beyond_binding(void **state)
{
    (void)state;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    const int64_t n = 1024, k = 8192;
    /* A part binds block bodies (32 bytes of a Q8_0 block's 34; the d values apart). */
    const uint64_t expert_bytes = (uint64_t)n * (uint64_t)(k / 32) * 34;
    const uint64_t expert_body = (uint64_t)n * (uint64_t)(k / 32) * 32;
    const char *asked = getenv("MOTIFCL_TEST_EXPERTS_BYTES");
    uint64_t bytes = asked ? strtoull(asked, NULL, 10) : info.max_storage_buffer_range + 1;
    if (!asked && info.max_storage_buffer_range > (256u << 20)) {
        mcl_test_note("experts_beyond_binding", "not run: maxStorageBufferRange is above 256 "
                      "MiB (MOTIFCL_TEST_EXPERTS_BYTES asks for a size); experts_parts forces "
                      "the split instead");
        return;
    }
    int64_t e = (int64_t)((bytes + expert_body - 1) / expert_body);
    if (e < 2)
        e = 2;
    uint64_t total = (uint64_t)e * expert_bytes;
    uint8_t *q = malloc(total);
    assert_non_null(q);
    seed_rng(7000);
    uint32_t *words = (uint32_t *)(void *)q;
    for (uint64_t i = 0; i < total / 4; i++)
        words[i] = next_u32();
    for (uint64_t b = 0; b < total / 34; b++) {
        uint16_t h = random_half();
        q[b * 34] = (uint8_t)(h & 0xFF);
        q[b * 34 + 1] = (uint8_t)(h >> 8);
    }
    int64_t ws[2] = {e * n, k}, xs[2] = {2, k}, ys[2] = {4, n}, is = 4;
    mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_Q8_0, 2, ws, q);
    int32_t ids[4] = {(int32_t)e - 1, 0, (int32_t)(e / 2), (int32_t)e - 2};
    float *x = mcl_test_random_floats(2 * (size_t)k, 7001, -1, 1);
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, x);
    mcl_tensor *ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &is, ids);
    mcl_experts_desc d = {.experts = (uint32_t)e, .slots = 2, .path = MCL_QUANT_PATH_FLOAT};
    float *got = malloc(4 * (size_t)n * sizeof *got), *want = malloc(4 * (size_t)n * 4);
    float *row = malloc((size_t)k * sizeof *row);
    assert_true(got && want && row);
    for (int path = 0; path < 1 + has_dot; path++) {
        d.path = path ? MCL_QUANT_PATH_DOT : MCL_QUANT_PATH_FLOAT;
        assert_mcl_ok(mcl_matmul_experts(ctx, tx, tw, ti, &d, ty, NULL));
        assert_mcl_ok(mcl_tensor_download(ty, 0, got, 4 * (uint64_t)n * 4));
        for (int p = 0; p < 4; p++)
            for (int64_t r = 0; r < n; r++) {
                uint64_t at = ((uint64_t)ids[p] * (uint64_t)n + (uint64_t)r) * (uint64_t)(k / 32) * 34;
                assert_mcl_ok(mcl_dequantize(MCL_DTYPE_Q8_0, q + at, row, k));
                double acc = 0.0;
                for (int64_t i = 0; i < k; i++)
                    acc += (double)row[i] * x[(p / 2) * k + i];
                want[p * n + r] = (float)acc;
            }
        char name[128];
        snprintf(name, sizeof name, "experts q8_0 %s, %lld experts, %llu bytes (past one binding)",
                 path ? "dot" : "float", (long long)e, (unsigned long long)total);
        /* The dot path quantizes x: its rounding, not a wrong row, is what it is held to. */
        expect_nmse(name, mcl_nmse(got, want, 4 * (size_t)n), path ? 1e-4 : NMSE_EXACT_WEIGHTS);
        /* Negative control, past 4 GiB: pair 0's expert (the last) read where a 32-bit byte
         * offset would wrap to (down to a block boundary) is far from what the op gave. */
        uint64_t last = (uint64_t)ids[0] * (uint64_t)n * (uint64_t)(k / 32) * 34;
        if (last > UINT32_MAX) {
            for (int64_t r = 0; r < n; r++) {
                uint64_t at = ((uint64_t)ids[0] * (uint64_t)n + (uint64_t)r) * (uint64_t)(k / 32) *
                              34;
                uint64_t wrapped = (uint64_t)(uint32_t)at / 34 * 34;
                assert_mcl_ok(mcl_dequantize(MCL_DTYPE_Q8_0, q + wrapped, row, k));
                double acc = 0.0;
                for (int64_t i = 0; i < k; i++)
                    acc += (double)row[i] * x[i];
                want[r] = (float)acc;
            }
            double wrong = mcl_nmse(got, want, (size_t)n);
            snprintf(name, sizeof name, "experts q8_0 %s: control, the last expert read at a "
                     "32-bit wrapped offset is far off (nmse %.3g)", path ? "dot" : "float",
                     wrong);
            assert_true(mcl_test_record_bool(name, wrong > NMSE_WRONG));
        }
    }
    free(got);
    free(want);
    free(row);
    free(x);
    free(q);
    mcl_tensor_destroy(tw);
    mcl_tensor_destroy(tx);
    mcl_tensor_destroy(ty);
    mcl_tensor_destroy(ti);
}

/* ---------------------------------------------------------------------------------------
 * Weighted sum, and a routed feed-forward in a graph
 * ------------------------------------------------------------------------------------- */

static void combine(void **state)
{
    (void)state;
    const int64_t rows = 3, dim = 300;
    const int k = 4;
    float *y = mcl_test_random_floats((size_t)(rows * k * dim), 3000, -1, 1);
    float *w = mcl_test_random_floats((size_t)(rows * k), 3001, 0, 1);
    float *out = mcl_test_random_floats((size_t)(rows * dim), 3002, -1, 1);
    float *want = malloc((size_t)(rows * dim) * sizeof *want), got[3 * 300];
    assert_non_null(want);
    int64_t ys[2] = {rows * k, dim}, ws[2] = {rows, k}, os[2] = {rows, dim};
    mcl_tensor *ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, y);
    mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ws, w);
    mcl_tensor *to = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, os, out);
    for (int acc = 0; acc < 2; acc++) {
        memcpy(want, out, (size_t)(rows * dim) * sizeof *want);
        ref_moe_combine(y, w, rows, k, dim, want, acc);
        assert_mcl_ok(mcl_tensor_upload(to, 0, out, sizeof got));
        assert_mcl_ok(mcl_moe_combine(ctx, ty, tw, (uint32_t)k, acc, to));
        assert_mcl_ok(mcl_tensor_download(to, 0, got, sizeof got));
        expect_nmse(acc ? "combine, accumulated" : "combine", mcl_nmse(got, want, 900), 1e-12);
        /* Control: the other mode's reference is far off. */
        memcpy(want, out, (size_t)(rows * dim) * sizeof *want);
        ref_moe_combine(y, w, rows, k, dim, want, !acc);
        assert_true(mcl_nmse(got, want, 900) > NMSE_WRONG);
    }
    mcl_tensor_destroy(ty);
    mcl_tensor_destroy(tw);
    mcl_tensor_destroy(to);
    free(y);
    free(w);
    free(out);
    free(want);
}

/* The down products with their weighted sum (mcl_matmul_experts_sum) against
 * mcl_matmul_experts and mcl_moe_combine on the integer-dot path, bit for bit (y and out), for
 * 1 to 3 rows of 2 and 3 slots, out set and added to; the counts 0 after; a second call the
 * same. Control: a row's counts set to 1000 leave its out untouched, which the check sees.
 * Without the integer dot (the polaris profile) nothing is recorded: *done 0. */
static void experts_sum(void **state)
{
    (void)state;
    if (!has_dot) {
        stack st;
        stack_make(&st, MCL_DTYPE_Q8_0, 8, 37, 64, 4000);
        int64_t xs[2] = {2, 64}, ys[2] = {2, 37}, ws[2] = {1, 2}, os[2] = {1, 37};
        int64_t words = 2 * 2 * MCL_QUANT_ACT_WORDS, is[1] = {2};
        int32_t ids[2] = {1, 5};
        mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, NULL);
        mcl_tensor *act = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &words, NULL);
        mcl_tensor *ti_ = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, is, ids);
        mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ws, NULL);
        mcl_tensor *ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
        mcl_tensor *to = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, os, NULL);
        mcl_tensor *tc = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, os, NULL);
        mcl_experts_desc d = {.experts = 8, .slots = 2, .per_slot = 1, .act = act};
        mcl_experts_sum_args a = {.weights = tw, .counts = tc, .out = to};
        int done = 1;
        assert_mcl_ok(mcl_matmul_experts_sum(ctx, tx, st.t, ti_, &d, ty, &a, &done));
        mcl_test_record_bool("experts sum: not taken without the integer dot", done == 0);
        assert_int_equal(done, 0);
        mcl_tensor *all[] = {tx, act, ti_, tw, ty, to, tc};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            mcl_tensor_destroy(all[i]);
        stack_free(&st);
        return;
    }
    const mcl_dtype types[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K, MCL_DTYPE_Q6_K};
    const int64_t e = 8, n = 37;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        int64_t kd = types[ti] == MCL_DTYPE_Q8_0 || types[ti] == MCL_DTYPE_Q4_0 ? 96 : 256;
        stack st;
        stack_make(&st, types[ti], e, n, kd, 4000 + (uint32_t)ti);
        for (int64_t rows = 1; rows <= 3; rows++) {
            int k = rows == 2 ? 3 : 2;
            int64_t pairs = rows * k;
            float *x = mcl_test_random_floats((size_t)(pairs * kd), 4100, -1, 1);
            float *w = mcl_test_random_floats((size_t)pairs, 4101, 0, 1);
            float *out0 = mcl_test_random_floats((size_t)(rows * n), 4102, -1, 1);
            int32_t *ids = random_ids(rows, k, e, 4103 + (uint32_t)rows);
            int64_t xs[2] = {pairs, kd}, ys[2] = {pairs, n}, ws[2] = {rows, k};
            int64_t os[2] = {rows, n}, is[1] = {pairs}, cs[1] = {rows * n};
            mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, x), *act;
            free(quantized_x(tx, pairs, kd, &act));
            mcl_tensor *ti_ = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, is, ids);
            mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ws, w);
            mcl_tensor *y1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
            mcl_tensor *y2 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
            mcl_tensor *o1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, os, out0);
            mcl_tensor *o2 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, os, out0);
            int32_t *counts = calloc((size_t)(rows * n), 4);
            assert_non_null(counts);
            mcl_tensor *tc = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, cs, counts);
            mcl_experts_desc d = {.experts = (uint32_t)e, .slots = (uint32_t)k, .per_slot = 1,
                                  .path = MCL_QUANT_PATH_DOT, .act = act};
            size_t ob = (size_t)(rows * n) * 4, yb = (size_t)(pairs * n) * 4;
            float *g1 = malloc(ob), *g2 = malloc(ob), *h1 = malloc(yb), *h2 = malloc(yb);
            assert_true(g1 && g2 && h1 && h2);
            for (int acc = 0; acc < 2; acc++) {
                assert_mcl_ok(mcl_tensor_upload(o1, 0, out0, ob));
                assert_mcl_ok(mcl_tensor_upload(o2, 0, out0, ob));
                assert_mcl_ok(mcl_matmul_experts(ctx, tx, st.t, ti_, &d, y1, NULL));
                assert_mcl_ok(mcl_moe_combine(ctx, y1, tw, (uint32_t)k, acc, o1));
                mcl_experts_sum_args a = {.weights = tw, .counts = tc, .out = o2,
                                          .accumulate = acc};
                int done = 0;
                for (int again = 0; again < 2; again++) {
                    if (again && !acc)
                        assert_mcl_ok(mcl_tensor_upload(o2, 0, out0, ob));
                    if (!again || !acc)
                        assert_mcl_ok(mcl_matmul_experts_sum(ctx, tx, st.t, ti_, &d, y2, &a,
                                                             &done));
                }
                assert_int_equal(done, 1);
                assert_mcl_ok(mcl_tensor_download(o1, 0, g1, ob));
                assert_mcl_ok(mcl_tensor_download(o2, 0, g2, ob));
                assert_mcl_ok(mcl_tensor_download(y1, 0, h1, yb));
                assert_mcl_ok(mcl_tensor_download(y2, 0, h2, yb));
                assert_mcl_ok(mcl_tensor_download(tc, 0, counts, (uint64_t)(rows * n) * 4));
                int64_t left = 0;
                for (int64_t i = 0; i < rows * n; i++)
                    left += counts[i] != 0;
                char name[96];
                snprintf(name, sizeof name, "experts sum %s rows=%lld slots=%d%s",
                         mcl_dtype_name(types[ti]), (long long)rows, k, acc ? ", added" : "");
                int same = memcmp(g1, g2, ob) == 0 && memcmp(h1, h2, yb) == 0 && left == 0;
                printf("%-50s %s (y %s, out %s, counts left %lld)\n", name,
                       same ? "the same bits" : "DIFFERENT",
                       memcmp(h1, h2, yb) ? "differ" : "equal",
                       memcmp(g1, g2, ob) ? "differ" : "equal", (long long)left);
                mcl_test_record_bool(name, same);
                assert_true(same);
            }
            /* Control: row 0's counts never reach the slots; its out stays as it was. */
            for (int64_t i = 0; i < n; i++)
                counts[i] = 1000;
            assert_mcl_ok(mcl_tensor_upload(tc, 0, counts, (uint64_t)(rows * n) * 4));
            assert_mcl_ok(mcl_tensor_upload(o2, 0, out0, ob));
            mcl_experts_sum_args a = {.weights = tw, .counts = tc, .out = o2};
            int done = 0;
            assert_mcl_ok(mcl_matmul_experts_sum(ctx, tx, st.t, ti_, &d, y2, &a, &done));
            assert_mcl_ok(mcl_tensor_download(o2, 0, g2, ob));
            assert_true(memcmp(g2, out0, (size_t)n * 4) == 0 && memcmp(g1, g2, ob) != 0);
            if (ti == 0 && rows == 1) {
                /* Not taken: ids past a base (an expert cache's pool). Refused: out is y. */
                d.id_base = 1;
                done = 1;
                assert_mcl_ok(mcl_matmul_experts_sum(ctx, tx, st.t, ti_, &d, y2, &a, &done));
                assert_int_equal(done, 0);
                d.id_base = 0;
                a.out = y2;
                mcl_test_expect_status("experts sum: out is y",
                                       mcl_matmul_experts_sum(ctx, tx, st.t, ti_, &d, y2, &a,
                                                              &done),
                                       MCL_ERROR_INVALID_ARGUMENT);
            }
            mcl_tensor *all[] = {tx, act, ti_, tw, y1, y2, o1, o2, tc};
            for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                mcl_tensor_destroy(all[i]);
            free(x);
            free(w);
            free(out0);
            free(ids);
            free(counts);
            free(g1);
            free(g2);
            free(h1);
            free(h2);
        }
        stack_free(&st);
    }
    mcl_test_record_bool("experts sum: a row never counted to its slots is caught", 1);
    assert_mcl_ok(mcl_finish(ctx));
}

/* The feed-forward of a mixture for `rows` tokens h [rows, D], added to x, in double:
 * routing by ref_moe_route on the given logits, then each chosen expert's SwiGLU. */
static void ref_moe_ffn(const stack *gate, const stack *up, const stack *down, const float *h,
                        const float *logits, int64_t rows, int k, int norm, float *x)
{
    int64_t E = gate->e, F = gate->n, D = gate->k;
    int32_t ids[64];
    double w[64];
    ref_moe_route(logits, rows, E, k, norm, 0, ids, w);
    double *a = malloc((size_t)F * sizeof *a);
    assert_non_null(a);
    for (int64_t r = 0; r < rows; r++) {
        for (int j = 0; j < k; j++) {
            int64_t e = ids[r * k + j];
            for (int64_t f = 0; f < F; f++) {
                double g = 0, u = 0;
                for (int64_t d = 0; d < D; d++) {
                    g += (double)gate->w[(e * F + f) * D + d] * h[r * D + d];
                    u += (double)up->w[(e * F + f) * D + d] * h[r * D + d];
                }
                a[f] = g / (1.0 + exp(-g)) * u;
            }
            for (int64_t d = 0; d < D; d++) {
                double s = 0;
                for (int64_t f = 0; f < F; f++)
                    s += (double)down->w[(e * D + d) * F + f] * a[f];
                x[r * D + d] = (float)((double)x[r * D + d] + w[r * k + j] * s);
            }
        }
    }
    free(a);
}

/* router logits -> route -> gate and up experts -> SwiGLU -> down experts (a row of x per
 * pair) -> weighted sum into x, captured once and replayed with other logits: the routing
 * happens on the device, and each replay reads the experts it chose. Q4_K gate and up, Q6_K
 * down (a mixture file's usual types); the float path (the tolerance is the float path's
 * rounding of the SwiGLU and the routing weights, well below what another expert gives). */
static void routed_graph(void **state)
{
    (void)state;
    const int64_t E = 8, D = 256, F = 512, rows = 3;
    const int k = 2;
    stack gate, up, down;
    stack_make(&gate, MCL_DTYPE_Q4_K, E, F, D, 4000);
    stack_make(&up, MCL_DTYPE_Q4_K, E, F, D, 4001);
    stack_make(&down, MCL_DTYPE_Q6_K, E, D, F, 4002);
    int64_t hs[2] = {rows, D}, ls[2] = {rows, E}, ps[2] = {rows, k}, gs[2] = {rows * k, F},
            ds[2] = {rows * k, D};
    float *h = mcl_test_random_floats((size_t)(rows * D), 4010, -1, 1);
    float *x0 = mcl_test_random_floats((size_t)(rows * D), 4011, -1, 1);
    mcl_tensor *th = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, hs, h);
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, hs, x0);
    mcl_tensor *tl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ls, NULL);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, ps, NULL);
    mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ps, NULL);
    mcl_tensor *tg = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, gs, NULL);
    mcl_tensor *tu = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, gs, NULL);
    mcl_tensor *ta = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, gs, NULL);
    mcl_tensor *td = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ds, NULL);
    mcl_experts_desc shared = {.experts = (uint32_t)E, .slots = k, .path = MCL_QUANT_PATH_FLOAT};
    mcl_experts_desc per = shared;
    per.per_slot = 1;
    mcl_graph *graph = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_moe_route(ctx, tl, k, 1, ti, tw));
    assert_mcl_ok(mcl_matmul_experts(ctx, th, gate.t, ti, &shared, tg, NULL));
    assert_mcl_ok(mcl_matmul_experts(ctx, th, up.t, ti, &shared, tu, NULL));
    assert_mcl_ok(mcl_swiglu(ctx, tg, tu, ta));
    assert_mcl_ok(mcl_matmul_experts(ctx, ta, down.t, ti, &per, td, NULL));
    assert_mcl_ok(mcl_moe_combine(ctx, td, tw, k, 1, tx));
    assert_mcl_ok(mcl_graph_end(ctx, &graph));
    int32_t first[6] = {0};
    for (int rep = 0; rep < 3; rep++) {
        float *l = route_logits(rows, E, k, 4100u + (uint32_t)rep);
        assert_mcl_ok(mcl_tensor_upload(tl, 0, l, (uint64_t)(rows * E) * 4));
        assert_mcl_ok(mcl_tensor_upload(tx, 0, x0, (uint64_t)(rows * D) * 4));
        assert_mcl_ok(mcl_graph_replay(ctx, graph));
        float got[3 * 256], want[3 * 256];
        int32_t ids[6];
        assert_mcl_ok(mcl_tensor_download(tx, 0, got, sizeof got));
        assert_mcl_ok(mcl_tensor_download(ti, 0, ids, sizeof ids));
        if (rep == 0)
            memcpy(first, ids, sizeof ids);
        else
            assert_true(memcmp(first, ids, sizeof ids) != 0); /* another routing ran */
        memcpy(want, x0, sizeof want);
        ref_moe_ffn(&gate, &up, &down, h, l, rows, k, 1, want);
        char name[64];
        snprintf(name, sizeof name, "routed feed-forward, graph replay %d", rep + 1);
        /* x's change is what the experts add: compare the change, not x. */
        for (int i = 0; i < 3 * 256; i++) {
            got[i] -= x0[i];
            want[i] -= x0[i];
        }
        expect_nmse(name, mcl_nmse(got, want, 3 * 256), 1e-9);
        /* Control: the previous replay's routing gives another change. */
        if (rep > 0) {
            float *lp = route_logits(rows, E, k, 4100u + (uint32_t)rep - 1);
            memcpy(want, x0, sizeof want);
            ref_moe_ffn(&gate, &up, &down, h, lp, rows, k, 1, want);
            for (int i = 0; i < 3 * 256; i++)
                want[i] -= x0[i];
            assert_true(mcl_nmse(got, want, 3 * 256) > NMSE_WRONG);
            free(lp);
        }
        free(l);
    }
    mcl_graph_destroy(graph);
    mcl_tensor *all[] = {th, tx, tl, ti, tw, tg, tu, ta, td};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    stack_free(&gate);
    stack_free(&up);
    stack_free(&down);
    free(h);
    free(x0);
}

/* Refused arguments: each names its reason by status. */
static void bad_arguments(void **state)
{
    (void)state;
    int64_t ls[2] = {2, 300}, ps[2] = {2, 2}, ws[2] = {8 * 4, 32}, xs[2] = {2, 32},
            ys[2] = {4, 4};
    mcl_tensor *tl = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ls, NULL);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, ps, NULL);
    mcl_tensor *tw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ps, NULL);
    mcl_tensor *w = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ws, NULL);
    mcl_tensor *x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *y = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_test_expect_status("route: 300 experts", mcl_moe_route(ctx, tl, 2, 0, ti, tw),
                           MCL_ERROR_SHAPE_MISMATCH);
    mcl_test_expect_status("route: ids f32", mcl_moe_route(ctx, tw, 1, 0, tw, tw),
                           MCL_ERROR_DTYPE_MISMATCH);
    mcl_experts_desc d = {.experts = 8, .slots = 2};
    assert_mcl_ok(mcl_matmul_experts(ctx, x, w, ti, &d, y, NULL));
    d.experts = 3;
    mcl_test_expect_status("experts: 32 rows are not 3 experts",
                           mcl_matmul_experts(ctx, x, w, ti, &d, y, NULL),
                           MCL_ERROR_SHAPE_MISMATCH);
    d.experts = 8;
    d.ids_first = 1;
    mcl_test_expect_status("experts: ids too short from ids_first",
                           mcl_matmul_experts(ctx, x, w, ti, &d, y, NULL),
                           MCL_ERROR_SHAPE_MISMATCH);
    d.ids_first = 0;
    d.per_slot = 1;
    mcl_test_expect_status("experts: x has no row per pair",
                           mcl_matmul_experts(ctx, x, w, ti, &d, y, NULL),
                           MCL_ERROR_SHAPE_MISMATCH);
    d.per_slot = 0;
    mcl_test_expect_status("experts: ids f32", mcl_matmul_experts(ctx, x, w, tw, &d, y, NULL),
                           MCL_ERROR_DTYPE_MISMATCH);
    mcl_test_expect_status("experts: y is x", mcl_matmul_experts(ctx, x, w, ti, &d, x, NULL),
                           MCL_ERROR_INVALID_ARGUMENT);
    mcl_test_expect_status("combine: k 3", mcl_moe_combine(ctx, y, tw, 3, 0, x),
                           MCL_ERROR_SHAPE_MISMATCH);
    mcl_tensor *all[] = {tl, ti, tw, w, x, y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    assert_mcl_ok(mcl_finish(ctx));
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    mcl_device_info info = {.size = sizeof info};
    if (mcl_context_device_info(ctx, &info) == MCL_SUCCESS)
        has_dot = (info.features_enabled & MCL_FEATURE_INTEGER_DOT_PRODUCT) != 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(route),
        cmocka_unit_test(route_edges),
        cmocka_unit_test(router),
        cmocka_unit_test(experts_paths),
        cmocka_unit_test(experts_grouped),
        cmocka_unit_test(experts_parts),
        cmocka_unit_test(experts_beyond_binding),
        cmocka_unit_test(combine),
        cmocka_unit_test(experts_sum),
        cmocka_unit_test(routed_graph),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
