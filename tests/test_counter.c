/* The counter-state linear layer (MEMORY_NATIVE.md section 1) against its CPU reference
 * (tests/ref/ref_counter.c): packing, forward, grad_x, the fused update, and learning.
 *
 * What is exact and what has a tolerance:
 *  - The packed state after an update: byte-identical to the reference's weight step run with
 *    the device's row factors, on every device, with the update's parameters as push
 *    constants (steps 1 and 3 of each case) and read from a device tensor with the seed
 *    offset by a salt (step 2: the GPT's path, mcl_counter_linear_backward_dev) (the weight step uses only products, sums,
 *    floor and integers, each rounded on its own: Vulkan makes them correctly rounded).
 *  - The row factors, s and v: within FACTOR_ULP of the reference's. They take one division
 *    and a square root per row, which Vulkan lets a device round to 2.5 ulp (1/inversesqrt for
 *    sqrt), and the statistics pass fuses G's products into its sums (fma, which a device may
 *    round once or twice); the count of values not bit-identical is recorded (0 on Lavapipe).
 *    The update pass's G agrees with the reference's bit for bit (same order, no fused
 *    multiply-add), which the codes' agreement depends on. The update cases run again with the
 *    passes' workgroups of 64 and 128 invocations (the library's 256 spreads a tile's sums
 *    over more of them) and with tiles of 16 and 64 rows of W (the library's 32): byte-identical
 *    as well.
 *  - Several layers' updates recorded as one group (the GPT's path): each layer's state, scale
 *    and moment byte-identical to its update alone; a changed salt in one layer of the group
 *    must change that layer alone (control).
 *  - Forward and grad_x: NMSE <= 1e-10 against x W^T and grad_out W in double with W decoded
 *    on the host. Float sums of at most 160 terms: NMSE ~1e-14 from rounding; ignoring s or
 *    transposing W gives NMSE >= 1e-2 (the negative controls check that).
 *  - Learning: a student from t = 0 recovers a random ternary teacher to >= 90% agreement of
 *    t in 200 steps; with lr = 0 it stays at the teacher's share of zeros (~1/3, < 50%).
 *    A learning curve on a toy task, not evidence at scale.
 * Negative controls: the weight step with one bit of the hash changed (the first multiplier's
 * lowest bit) must disagree with the device, and the forward pass's with s ignored or W
 * transposed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/counter.h"
#include "ref/ref.h"
#include "ref/ref_counter.h"
#include "vk/inspect.h"

#define MATMUL_TOLERANCE 1e-10
/* The row factors pass through a square root and three divisions, which Vulkan lets a driver
 * round to 2.5 ulp each (a square root as 1 / inversesqrt: up to 4.5), the errors carried
 * down the chain: the NVIDIA driver lands within 10 ulp of the reference where Lavapipe
 * lands on it. Twice that bound; the codes are still compared exactly. */
#define FACTOR_ULP 20
#define LEARN_STEPS 200
#define LEARN_AGREEMENT 0.90
#define LEARN_BASELINE_MAX 0.50

static mcl_context *ctx;

static uint32_t rng_next(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static mcl_counter_linear *layer_create(int64_t out, int64_t in, uint32_t C)
{
    mcl_counter_linear_desc desc = {.size = sizeof desc, .out = out, .in = in, .C = C};
    mcl_counter_linear *layer = NULL;
    assert_mcl_ok(mcl_counter_linear_create(ctx, &desc, &layer));
    return layer;
}

/* Random codes of range C, packed and uploaded; codes returned (caller frees). */
static uint8_t *upload_random_codes(mcl_counter_linear *layer, size_t n, uint32_t C,
                                    uint32_t seed)
{
    uint8_t *codes = malloc(n), *bytes = malloc(n / 4 * 3);
    assert_true(codes && bytes);
    uint32_t rng = seed | 1u;
    for (size_t e = 0; e < n; e++)
        codes[e] = (uint8_t)(rng_next(&rng) % (3 * (2 * C - 1)));
    ref_counter_pack(codes, n, bytes);
    assert_mcl_ok(mcl_tensor_upload(mcl_counter_linear_state(layer), 0, bytes, n / 4 * 3));
    free(bytes);
    return codes;
}

static uint8_t *download_codes(mcl_counter_linear *layer, size_t n)
{
    uint8_t *codes = malloc(n), *bytes = malloc(n / 4 * 3);
    assert_true(codes && bytes);
    assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_state(layer), 0, bytes, n / 4 * 3));
    ref_counter_unpack(bytes, n, codes);
    free(bytes);
    return codes;
}

static void packing_round_trip(void **state)
{
    (void)state;
    const int64_t out = 5, in = 32;
    const size_t n = (size_t)(out * in);
    const uint32_t C = 11;
    mcl_counter_linear *layer = layer_create(out, in, C);
    /* A new layer: t = 0, c = 0, s = 1. */
    float *w = mcl_test_floats(n);
    int8_t *t = malloc(n), *c = malloc(n);
    assert_true(t && c);
    assert_mcl_ok(mcl_counter_linear_to_f32(layer, w, t, c));
    int fresh_ok = 1;
    for (size_t e = 0; e < n; e++)
        fresh_ok &= t[e] == 0 && c[e] == 0 && w[e] == 0.0f;
    /* Random codes through the reference's packing and the layer's decoding; the spec's
     * byte layout checked on one group by hand. */
    uint8_t *codes = upload_random_codes(layer, n, C, 99);
    assert_mcl_ok(mcl_counter_linear_to_f32(layer, NULL, t, c));
    int decoded_ok = 1;
    for (size_t e = 0; e < n; e++)
        decoded_ok &= t[e] == ref_counter_t(codes[e], C) && c[e] == ref_counter_c(codes[e], C);
    const uint8_t group[4] = {62, 1, 33, 20};
    uint8_t bytes[3];
    ref_counter_pack(group, 4, bytes);
    const int layout_ok = bytes[0] == (62 | 1 << 6) && bytes[1] == (0 | 1 << 4) &&
                          bytes[2] == (2 | 20 << 2);
    /* From f32: sign above 0.7 x mean |w| per row, s the mean |w| of those kept. */
    float *wf = mcl_test_random_floats(n, 7, -1.0f, 1.0f);
    assert_mcl_ok(mcl_counter_linear_from_f32(layer, wf, 0.7f));
    float *back = mcl_test_floats(n);
    assert_mcl_ok(mcl_counter_linear_to_f32(layer, back, t, c));
    int from_ok = 1;
    for (int64_t o = 0; o < out; o++) {
        double mean = 0.0, kept = 0.0;
        int nkept = 0;
        for (int64_t i = 0; i < in; i++)
            mean += fabs(wf[o * in + i]) / (double)in;
        for (int64_t i = 0; i < in; i++) {
            const float v = wf[o * in + i];
            const int want = fabs(v) > 0.7 * mean ? (v > 0 ? 1 : -1) : 0;
            from_ok &= t[o * in + i] == want && c[o * in + i] == 0;
            if (want) {
                kept += fabs(v);
                nkept++;
            }
        }
        const float s = (float)(kept / nkept);
        for (int64_t i = 0; i < in; i++)
            from_ok &= back[o * in + i] == s * (float)t[o * in + i];
    }
    assert_true(mcl_test_record_bool("counter: a new layer decodes as t = 0, c = 0", fresh_ok));
    assert_true(mcl_test_record_bool("counter: packed codes decode as the reference's",
                                     decoded_ok));
    assert_true(mcl_test_record_bool("counter: the spec's byte layout", layout_ok));
    assert_true(mcl_test_record_bool("counter: from_f32 thresholds and scales", from_ok));
    free(w), free(t), free(c), free(codes), free(wf), free(back);
    mcl_counter_linear_destroy(layer);
}

/* W [out, in] = s[o] t[o, i] in float, as the shader decodes it. */
static float *decode_w(const uint8_t *codes, const float *s, int64_t out, int64_t in,
                       uint32_t C, int ignore_s)
{
    float *w = mcl_test_floats((size_t)(out * in));
    for (int64_t o = 0; o < out; o++) {
        for (int64_t i = 0; i < in; i++)
            w[o * in + i] = (ignore_s ? 1.0f : s[o]) * (float)ref_counter_t(codes[o * in + i], C);
    }
    return w;
}

/* The products against x W^T and grad_out W with W decoded on the host, for one shape. */
static void products_case(int64_t N, int64_t out, int64_t in, uint32_t C, int64_t split_slices)
{
    mcl_counter_linear *layer = layer_create(out, in, C);
    uint8_t *codes = upload_random_codes(layer, (size_t)(out * in), C, 1234);
    float *s = mcl_test_random_floats((size_t)out, 5, 0.05f, 2.0f);
    assert_mcl_ok(mcl_tensor_upload(mcl_counter_linear_scale(layer), 0, s, (uint64_t)out * 4));
    float *x = mcl_test_random_floats((size_t)(N * in), 11, -1.0f, 1.0f);
    float *go = mcl_test_random_floats((size_t)(N * out), 12, -1.0f, 1.0f);
    const int64_t xs[2] = {N, in}, ys[2] = {N, out};
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, x);
    mcl_tensor *ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *tgo = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, go);
    mcl_tensor *tgx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, NULL);
    /* A split-K scratch of split_slices slices of y (the forward splits K only as far as it
     * holds them), or none (a scratch made per call). */
    const int64_t split_len = split_slices * N * out;
    mcl_tensor *split = split_slices ? mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &split_len, NULL)
                                     : NULL;
    assert_mcl_ok(mcl_counter_linear_forward_dev(layer, tx, ty, split));
    assert_mcl_ok(mcl_counter_linear_backward(layer, tx, tgo, tgx, NULL));
    float *y = mcl_test_floats((size_t)(N * out)), *gx = mcl_test_floats((size_t)(N * in));
    assert_mcl_ok(mcl_tensor_download(ty, 0, y, (uint64_t)(N * out) * 4));
    assert_mcl_ok(mcl_tensor_download(tgx, 0, gx, (uint64_t)(N * in) * 4));

    float *w = decode_w(codes, s, out, in, C, 0), *w1 = decode_w(codes, s, out, in, C, 1);
    float *want_y = mcl_test_floats((size_t)(N * out)), *want_gx = mcl_test_floats((size_t)(N * in));
    float *bad = mcl_test_floats((size_t)(N * out));
    ref_matmul_f32(x, 0, w, 1, NULL, want_y, 1, N, out, in, 0);
    ref_matmul_f32(go, 0, w, 0, NULL, want_gx, 1, N, in, out, 0);
    const double e_y = mcl_nmse(y, want_y, (size_t)(N * out));
    const double e_gx = mcl_nmse(gx, want_gx, (size_t)(N * in));
    ref_matmul_f32(x, 0, w1, 1, NULL, bad, 1, N, out, in, 0);
    const double e_no_s = mcl_nmse(y, bad, (size_t)(N * out));
    /* A W whose rows are moved by one: grad_x must tell it apart. */
    float *wp = mcl_test_floats((size_t)(out * in));
    for (int64_t o = 0; o < out; o++)
        memcpy(wp + o * in, w + ((o + 1) % out) * in, (size_t)in * 4);
    float *bad_gx = mcl_test_floats((size_t)(N * in));
    ref_matmul_f32(go, 0, wp, 0, NULL, bad_gx, 1, N, in, out, 0);
    const double e_perm = mcl_nmse(gx, bad_gx, (size_t)(N * in));
    assert_true(mcl_test_record("counter: forward NMSE", "nmse", e_y, MATMUL_TOLERANCE));
    assert_true(mcl_test_record("counter: grad_x NMSE", "nmse", e_gx, MATMUL_TOLERANCE));
    assert_true(mcl_test_record_bool("counter: negative control, forward without s fails",
                                     e_no_s > 1e-2));
    assert_true(mcl_test_record_bool("counter: negative control, grad_x with rows moved fails",
                                     e_perm > 1e-2));
    free(codes), free(s), free(x), free(go), free(y), free(gx), free(w), free(w1);
    free(want_y), free(want_gx), free(bad), free(wp), free(bad_gx);
    mcl_tensor_destroy(tx), mcl_tensor_destroy(ty), mcl_tensor_destroy(tgo);
    mcl_tensor_destroy(tgx);
    mcl_tensor_destroy(split);
    mcl_counter_linear_destroy(layer);
}

/* The products are the f32 GEMM's, W decoded as its tiles load (gemm_f32.comp, COUNTER_B):
 * one small tile with edges; K split in slices (in = 1024 forward, out = 600 for grad_x) and
 * C = 3, the forward's four slices in a scratch made per call, then in a given scratch that
 * holds two; 192 tiles of 128 x 64 forward. test_counter.tile128 runs them all in the 128 x
 * 128 tile (MOTIFCL_GEMM_TILE), which the rule gives only to long products. */
static void forward_and_grad_x(void **state)
{
    (void)state;
    products_case(37, 45, 80, 11, 0);
    products_case(37, 600, 1024, 3, 0);
    products_case(37, 600, 1024, 3, 2);
    products_case(1024, 1536, 32, 11, 0);
}

static uint32_t ulp_distance(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0)
        ia = INT32_MIN - ia;
    if (ib < 0)
        ib = INT32_MIN - ib;
    int64_t d = (int64_t)ia - (int64_t)ib;
    return (uint32_t)(d < 0 ? -d : d);
}

typedef struct update_case {
    uint32_t C;
    int64_t out, in, N;
    float lr, lr_scale, beta, eps, go_scale;
    int walls; /* 1: states at the walls, pressed outward; 2: G's order (ORDER_CASE) */
} update_case;

/* walls 2: x = 1 and grad_out's rows 1e8, 1, -1e8, 1, then 0, for N = 8 (segments of 2 rows,
 * counter_grad.glsl). G is 0 in the specified order ((1e8 + 1) + (-1e8 + 1) rounds to 0) and
 * 1 summed straight through the batch: an implementation of another order moves the row
 * moments far from the reference. */
static const float ORDER_ROWS[4] = {1e8f, 1.0f, -1e8f, 1.0f};

/* The outcome of one case's steps, summed. */
typedef struct update_result {
    uint64_t bytes_differ, factors_inexact, factors_far, control_bytes_differ;
    uint32_t factors_max_ulp;
    ref_counter_counts counts;
} update_result;

/* The update passes' workgroup the cases run with (mcl_counter_linear_update_wg; 0: the
 * library's). */
static uint32_t update_wg;

static void run_case(const update_case *k, uint32_t seed0, update_result *res)
{
    const int64_t out = k->out, in = k->in, N = k->N;
    const size_t n = (size_t)(out * in);
    mcl_counter_linear *layer = layer_create(out, in, k->C);
    assert_mcl_ok(mcl_counter_linear_update_wg(layer, update_wg));
    float *x = mcl_test_random_floats((size_t)(N * in), seed0 + 1, -1.0f, 1.0f);
    float *go = mcl_test_random_floats((size_t)(N * out), seed0 + 2, -k->go_scale, k->go_scale);
    uint8_t *codes;
    if (k->walls == 1) {
        /* N = 1, x and grad_out of +-1: G[o, i] = go[o] x[i]. The state at the wall the
         * update presses towards: t = -sign(G), c = -sign(G)(C - 1). */
        codes = malloc(n);
        assert_true(codes);
        for (int64_t i = 0; i < in * N; i++)
            x[i] = x[i] < 0 ? -1.0f : 1.0f;
        for (int64_t o = 0; o < out * N; o++)
            go[o] = go[o] < 0 ? -k->go_scale : k->go_scale;
        for (int64_t o = 0; o < out; o++) {
            for (int64_t i = 0; i < in; i++) {
                const int sg = go[o] * x[i] > 0 ? 1 : -1;
                codes[o * in + i] = ref_counter_encode(-sg, -sg * (int)(k->C - 1), k->C);
            }
        }
        uint8_t *bytes = malloc(n / 4 * 3);
        assert_true(bytes);
        ref_counter_pack(codes, n, bytes);
        assert_mcl_ok(mcl_tensor_upload(mcl_counter_linear_state(layer), 0, bytes, n / 4 * 3));
        free(bytes);
    } else {
        codes = upload_random_codes(layer, n, k->C, seed0 + 3);
    }
    if (k->walls == 2) {
        for (int64_t i = 0; i < in * N; i++)
            x[i] = 1.0f;
        for (int64_t r = 0; r < N; r++) {
            for (int64_t o = 0; o < out; o++)
                go[r * out + o] = r < 4 ? ORDER_ROWS[r] : 0.0f;
        }
    }
    float *s = mcl_test_random_floats((size_t)out, seed0 + 4, 0.05f, 2.0f);
    float *v = mcl_test_random_floats((size_t)out, seed0 + 5, 0.0f, 0.01f);
    v[0] = 0.0f;
    assert_mcl_ok(mcl_tensor_upload(mcl_counter_linear_scale(layer), 0, s, (uint64_t)out * 4));
    assert_mcl_ok(mcl_tensor_upload(mcl_counter_linear_moment(layer), 0, v, (uint64_t)out * 4));
    const int64_t xs[2] = {N, in}, ys[2] = {N, out}, fs = 2 * out;
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, x);
    mcl_tensor *tgo = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, go);
    mcl_tensor *tf = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &fs, NULL);
    float *G = mcl_test_floats(n), *fac = mcl_test_floats((size_t)fs);
    float *fac_dev = mcl_test_floats((size_t)fs);
    float *s_dev = mcl_test_floats((size_t)out), *v_dev = mcl_test_floats((size_t)out);
    uint8_t *want = malloc(n), *control = malloc(n);
    assert_true(want && control);
    ref_counter_grad(x, go, N, out, in, G);
    for (int step = 0; step < 3; step++) {
        const uint32_t seed = seed0 * 7919u + (uint32_t)step;
        mcl_counter_update_desc up = {.size = sizeof up, .lr = k->lr, .lr_scale = k->lr_scale,
                                      .beta = k->beta, .eps = k->eps, .seed = seed};
        if (step == 1) {
            /* The GPT's path: the parameters from a device tensor, the seed its word 4 plus
             * a salt (here so that the sum is this step's seed). */
            float words[MCL_COUNTER_HYPER_COUNT] = {0};
            assert_mcl_ok(mcl_counter_update_hyper(ctx, "test", &up, words));
            const uint32_t salt = 0x9E3779B9u * 5u, word4 = seed - salt;
            memcpy(&words[4], &word4, 4);
            const int64_t hn = MCL_COUNTER_HYPER_COUNT;
            mcl_tensor *th = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &hn, words);
            assert_mcl_ok(mcl_counter_linear_backward_dev(layer, tx, tgo, NULL, th, salt, NULL,
                                                          tf, NULL));
            mcl_tensor_destroy(th);
        } else {
            assert_mcl_ok(mcl_counter_linear_backward_ex(layer, tx, tgo, NULL, &up, tf));
        }
        uint8_t *got = download_codes(layer, n);
        assert_mcl_ok(mcl_tensor_download(tf, 0, fac_dev, (uint64_t)fs * 4));
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_scale(layer), 0, s_dev,
                                          (uint64_t)out * 4));
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_moment(layer), 0, v_dev,
                                          (uint64_t)out * 4));
        ref_counter_hyper hyper = {k->lr, k->lr_scale, k->beta != 0.0f ? k->beta : 0.9f,
                                   k->eps != 0.0f ? k->eps : 1e-3f, seed};
        ref_counter_rows(G, codes, out, in, k->C, &hyper, s, v, fac);
        for (int64_t i = 0; i < fs; i++) {
            const uint32_t d = ulp_distance(fac[i], fac_dev[i]);
            res->factors_inexact += d != 0;
            res->factors_far += d > FACTOR_ULP;
            res->factors_max_ulp = d > res->factors_max_ulp ? d : res->factors_max_ulp;
        }
        for (int64_t o = 0; o < out; o++) {
            res->factors_inexact += (s[o] != s_dev[o]) + (v[o] != v_dev[o]);
            const uint32_t ds = ulp_distance(s[o], s_dev[o]), dv = ulp_distance(v[o], v_dev[o]);
            res->factors_far += (ds > FACTOR_ULP) + (dv > FACTOR_ULP);
            res->factors_max_ulp = ds > res->factors_max_ulp ? ds : res->factors_max_ulp;
            res->factors_max_ulp = dv > res->factors_max_ulp ? dv : res->factors_max_ulp;
        }
        memcpy(want, codes, n);
        memcpy(control, codes, n);
        ref_counter_apply(G, want, out, in, k->C, seed, fac_dev, REF_COUNTER_HASH_SPEC,
                          &res->counts);
        ref_counter_apply(G, control, out, in, k->C, seed, fac_dev, REF_COUNTER_HASH_WRONG_BIT,
                          NULL);
        for (size_t e = 0; e < n; e++) {
            res->bytes_differ += want[e] != got[e];
            res->control_bytes_differ += control[e] != got[e];
        }
        /* Walls: every weight stays where it was. */
        if (k->walls)
            res->bytes_differ += (uint64_t)(memcmp(got, codes, n) != 0);
        /* The next step starts from the device's state. */
        memcpy(codes, got, n);
        memcpy(s, s_dev, (size_t)out * 4);
        memcpy(v, v_dev, (size_t)out * 4);
        free(got);
    }
    free(x), free(go), free(codes), free(s), free(v), free(G), free(fac), free(fac_dev);
    free(s_dev), free(v_dev), free(want), free(control);
    mcl_tensor_destroy(tx), mcl_tensor_destroy(tgo), mcl_tensor_destroy(tf);
    mcl_counter_linear_destroy(layer);
}

static void update_matches_reference(void **state)
{
    (void)state;
    /* in 80 and 144: a last column tile of 16 and of 16 of 64; out 45, 70 and 33: a last row
     * tile of 13, 6 and 1 of 16 rows (45 and 70: 13 and 6 of 32, 45 and 6 of 64); C 11 (the
     * default), 5, 2 and 1; lr from gentle to wall-bound; N 150: the batch in four segments of
     * 38 rows and chunks of G's sums, the last ones partial (counter_grad.glsl). */
    static const update_case cases[] = {
        {11, 45, 80, 37, 0.05f, 0.0f, 0.0f, 0.0f, 1.0f, 0},
        {11, 70, 80, 40, 0.05f, 0.0f, 0.0f, 0.0f, 1.0f, 0},
        {11, 24, 80, 150, 0.05f, 0.0f, 0.0f, 0.0f, 1.0f, 0},
        {11, 33, 144, 20, 2.0f, 0.01f, 0.5f, 1e-2f, 1.0f, 0},
        {5, 16, 64, 50, 0.3f, 0.001f, 0.0f, 0.0f, 0.1f, 0},
        {2, 20, 48, 5, 1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0},
        {1, 7, 16, 3, 0.5f, 0.0f, 0.0f, 0.0f, 1.0f, 0},
        {11, 18, 96, 1, 50.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1},
        {5, 9, 32, 1, 50.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1},
        {11, 16, 64, 8, 0.05f, 0.0f, 0.0f, 0.0f, 1.0f, 2},
    };
    update_result res = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(&cases[i], 100u + (uint32_t)i, &res);
    /* The same with the tile's sums spread over 64 and 128 invocations (the library's 256
     * above): which invocation sums a weight's G must not change a bit. */
    static const uint32_t widths[2] = {64, 128};
    for (int w = 0; w < 2; w++) {
        update_result rw = {0};
        update_wg = widths[w];
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(&cases[i], 100u + (uint32_t)i, &rw);
        update_wg = 0;
        char name[120];
        snprintf(name, sizeof name, "counter: update codes differing from the reference, "
                 "workgroups of %u", widths[w]);
        assert_true(mcl_test_record(name, "codes", (double)rw.bytes_differ, 0.0));
    }
    /* Shared memory narrowed: at 32 KB the library's 256 invocations stage their chunks of
     * 16 batch rows a group; at 16 KB the workgroup falls to 128
     * (src/ops/counter.c, fit_update): the same bits. */
    mcl_traits *traits = mcl_inspect_traits(ctx);
    const uint32_t shared = traits->max_shared_bytes;
    static const uint32_t narrowed[2] = {32768, 16384};
    for (int w = 0; w < 2; w++) {
        traits->max_shared_bytes = narrowed[w];
        update_result rc = {0};
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(&cases[i], 100u + (uint32_t)i, &rc);
        traits->max_shared_bytes = shared;
        char name[120];
        snprintf(name, sizeof name, "counter: update codes differing from the reference, "
                 "%u bytes of shared memory", narrowed[w]);
        assert_true(mcl_test_record(name, "codes", (double)rc.bytes_differ, 0.0));
    }
    /* Tiles of 16 and 64 rows of W (MOTIFCL_COUNTER_ROWS; the library's 32 above, two groups
     * of 128 summing two segments each): four groups of 64 summing one segment each, one group
     * of 256 summing all four; the same sums in the same order, so the same codes and factors
     * as the reference's. The control: the traits take the value, and drop it when unset. */
    static const char *const tall[2] = {"16", "64"};
    for (int r = 0; r < 2; r++) {
        mcl_test_switch_env(ctx, "MOTIFCL_COUNTER_ROWS", tall[r]);
        const uint32_t taken = traits->counter_rows;
        update_result rr = {0};
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            run_case(&cases[i], 100u + (uint32_t)i, &rr);
        mcl_test_switch_env(ctx, "MOTIFCL_COUNTER_ROWS", NULL);
        char name[120];
        snprintf(name, sizeof name, "counter: update codes differing from the reference, "
                 "tiles of %s rows", tall[r]);
        assert_true(mcl_test_record(name, "codes", (double)rr.bytes_differ, 0.0));
        snprintf(name, sizeof name, "counter: row factors, s, v farther from the reference "
                 "than FACTOR_ULP, tiles of %s rows", tall[r]);
        assert_true(mcl_test_record(name, "values", (double)rr.factors_far, 0.0));
        snprintf(name, sizeof name, "counter: MOTIFCL_COUNTER_ROWS=%s taken, unset dropped",
                 tall[r]);
        assert_true(mcl_test_record_bool(name, taken == (uint32_t)atoi(tall[r]) &&
                                                   traits->counter_rows == 0));
    }
    EXPECT_STATUS(mcl_counter_linear_update_wg(NULL, 64), INVALID);
    char line[160];
    snprintf(line, sizeof line, "carried %llu, walled %llu, rounded up %llu, changed %llu",
             (unsigned long long)res.counts.carried, (unsigned long long)res.counts.walled,
             (unsigned long long)res.counts.rounded_up, (unsigned long long)res.counts.changed);
    mcl_test_note("counter update branches", line);
    printf("counter update: %s\n", line);
    mcl_test_record_figure("counter: row values not bit-identical to the reference",
                           (double)res.factors_inexact, "values");
    mcl_test_record_figure("counter: control bytes that differ", (double)res.control_bytes_differ,
                           "codes");
    assert_true(mcl_test_record("counter: update codes differing from the reference",
                                "codes", (double)res.bytes_differ, 0.0));
    mcl_test_record("counter: row factors, s, v: the largest distance from the reference",
                    "ulp", (double)res.factors_max_ulp, (double)FACTOR_ULP);
    assert_true(mcl_test_record("counter: row factors, s, v farther from the reference than "
                                "FACTOR_ULP", "values", (double)res.factors_far, 0.0));
    assert_true(mcl_test_record_bool("counter: the inputs reach carries, walls and roundings",
                                     res.counts.carried > 0 && res.counts.walled > 0 &&
                                         res.counts.rounded_up > 0 && res.counts.changed > 0));
    assert_true(mcl_test_record_bool("counter: negative control, a hash bit changed fails",
                                     res.control_bytes_differ > 100));
}

/* Agreement of t after `steps` steps of a student learning y = x T^T. */
static double learn(float lr, int steps)
{
    const int64_t out = 32, in = 64, N = 64;
    const size_t n = (size_t)(out * in);
    uint32_t rng = 2024;
    float *teacher = mcl_test_floats(n);
    int8_t *tt = malloc(n), *ts = malloc(n);
    assert_true(tt && ts);
    for (size_t e = 0; e < n; e++) {
        tt[e] = (int8_t)((int)(rng_next(&rng) % 3) - 1);
        teacher[e] = (float)tt[e];
    }
    mcl_counter_linear *layer = layer_create(out, in, MCL_COUNTER_DEFAULT_C);
    const int64_t xs[2] = {N, in}, ys[2] = {N, out};
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *tgo = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    float *x = mcl_test_floats((size_t)(N * in)), *y = mcl_test_floats((size_t)(N * out));
    float *want = mcl_test_floats((size_t)(N * out)), *go = mcl_test_floats((size_t)(N * out));
    for (int step = 0; step < steps; step++) {
        mcl_fill_random(x, (size_t)(N * in), 5000u + (uint32_t)step, -1.0f, 1.0f);
        ref_matmul_f32(x, 0, teacher, 1, NULL, want, 1, N, out, in, 0);
        assert_mcl_ok(mcl_tensor_upload(tx, 0, x, (uint64_t)(N * in) * 4));
        assert_mcl_ok(mcl_counter_linear_forward(layer, tx, ty));
        assert_mcl_ok(mcl_tensor_download(ty, 0, y, (uint64_t)(N * out) * 4));
        for (int64_t i = 0; i < N * out; i++)
            go[i] = (y[i] - want[i]) / (float)N;
        assert_mcl_ok(mcl_tensor_upload(tgo, 0, go, (uint64_t)(N * out) * 4));
        mcl_counter_update_desc up = {.size = sizeof up, .lr = lr, .lr_scale = 1e-3f,
                                      .seed = 12345u + (uint32_t)step * 0x9e3779b9u};
        assert_mcl_ok(mcl_counter_linear_backward(layer, tx, tgo, NULL, &up));
    }
    assert_mcl_ok(mcl_counter_linear_to_f32(layer, NULL, ts, NULL));
    size_t agree = 0;
    for (size_t e = 0; e < n; e++)
        agree += ts[e] == tt[e];
    free(teacher), free(tt), free(ts), free(x), free(y), free(want), free(go);
    mcl_tensor_destroy(tx), mcl_tensor_destroy(ty), mcl_tensor_destroy(tgo);
    mcl_counter_linear_destroy(layer);
    return (double)agree / (double)n;
}

static void learns_ternary_teacher(void **state)
{
    (void)state;
    const double learned = learn(0.02f, LEARN_STEPS);
    const double frozen = learn(0.0f, LEARN_STEPS);
    printf("counter learning: agreement %.4f after %d steps, %.4f with lr 0\n", learned,
           LEARN_STEPS, frozen);
    mcl_test_record_figure("counter: agreement with lr 0", frozen, "fraction");
    assert_true(mcl_test_record("counter: student disagreement with the teacher", "fraction",
                                1.0 - learned, 1.0 - LEARN_AGREEMENT));
    assert_true(mcl_test_record_bool("counter: negative control, lr 0 does not learn",
                                     frozen < LEARN_BASELINE_MAX));
}

/* Several layers' updates recorded as one group (the GPT's path, each pass for every layer
 * before the next): each layer's state, scale and moment byte-identical to its update alone
 * through mcl_counter_linear_backward_dev. Control: a group in which one layer's salt differs
 * leaves that layer's state different. */
static void group_matches_one_by_one(void **state)
{
    (void)state;
    enum { LAYERS = 3, COPIES = 4 };
    static const int64_t shape[LAYERS][2] = {{24, 80}, {33, 144}, {16, 64}};
    const int64_t N = 70;
    float words[MCL_COUNTER_HYPER_COUNT] = {0};
    mcl_counter_update_desc up = {.size = sizeof up, .lr = 0.3f, .seed = 777u};
    assert_mcl_ok(mcl_counter_update_hyper(ctx, "test", &up, words));
    const int64_t hn = MCL_COUNTER_HYPER_COUNT;
    mcl_tensor *th = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &hn, words);
    /* Copy 0 one layer at a time, copy 1 as a group, copy 2 as a group with layer 1's salt
     * changed, copy 3 as a group a pass at a time (mcl_counter_linear_update_group_pass, the
     * scratch given). */
    mcl_counter_linear *layer[COPIES][LAYERS];
    mcl_tensor *tx[LAYERS], *tgo[LAYERS];
    for (int j = 0; j < LAYERS; j++) {
        const int64_t out = shape[j][0], in = shape[j][1];
        const size_t n = (size_t)(out * in);
        float *x = mcl_test_random_floats((size_t)(N * in), 40u + (uint32_t)j, -1.0f, 1.0f);
        float *go = mcl_test_random_floats((size_t)(N * out), 50u + (uint32_t)j, -1.0f, 1.0f);
        float *sc = mcl_test_random_floats((size_t)out, 60u + (uint32_t)j, 0.05f, 2.0f);
        const int64_t xs[2] = {N, in}, ys[2] = {N, out};
        tx[j] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, x);
        tgo[j] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, go);
        for (int c = 0; c < COPIES; c++) {
            layer[c][j] = layer_create(out, in, 11);
            free(upload_random_codes(layer[c][j], n, 11, 70u + (uint32_t)j));
            assert_mcl_ok(mcl_tensor_upload(mcl_counter_linear_scale(layer[c][j]), 0, sc,
                                            (uint64_t)out * 4));
        }
        free(x), free(go), free(sc);
    }
    mcl_counter_update_item items[3][LAYERS];
    mcl_tensor *scratch[LAYERS][2];
    for (int j = 0; j < LAYERS; j++) {
        const uint32_t salt = 0x9E3779B9u * (uint32_t)(j + 1);
        assert_mcl_ok(mcl_counter_linear_backward_dev(layer[0][j], tx[j], tgo[j], NULL, th,
                                                      salt, NULL, NULL, NULL));
        const int64_t pn = mcl_counter_linear_partial_floats(shape[j][0], shape[j][1]);
        const int64_t fn = 2 * shape[j][0];
        scratch[j][0] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &pn, NULL);
        scratch[j][1] = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &fn, NULL);
        for (int c = 1; c < COPIES; c++)
            items[c - 1][j] = (mcl_counter_update_item){
                layer[c][j], tx[j], tgo[j], salt + (c == 2 && j == 1),
                c == 3 ? scratch[j][0] : NULL, c == 3 ? scratch[j][1] : NULL};
    }
    assert_mcl_ok(mcl_counter_linear_update_group_dev(items[0], LAYERS, th));
    assert_mcl_ok(mcl_counter_linear_update_group_dev(items[1], LAYERS, th));
    for (int pass = 0; pass < 3; pass++)
        assert_mcl_ok(mcl_counter_linear_update_group_pass(items[2], LAYERS, th, pass));
    assert_mcl_ok(mcl_finish(ctx));
    int same = 1, by_pass = 1, control_same[LAYERS];
    for (int j = 0; j < LAYERS; j++) {
        const size_t n = (size_t)(shape[j][0] * shape[j][1]);
        uint8_t *a = download_codes(layer[0][j], n), *b = download_codes(layer[1][j], n);
        uint8_t *c = download_codes(layer[2][j], n), *d = download_codes(layer[3][j], n);
        float sa[64], sb[64], va[64], vb[64];
        const uint64_t rb = (uint64_t)shape[j][0] * 4;
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_scale(layer[0][j]), 0, sa, rb));
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_scale(layer[1][j]), 0, sb, rb));
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_moment(layer[0][j]), 0, va, rb));
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_moment(layer[1][j]), 0, vb, rb));
        same &= memcmp(a, b, n) == 0 && memcmp(sa, sb, rb) == 0 && memcmp(va, vb, rb) == 0;
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_scale(layer[3][j]), 0, sb, rb));
        assert_mcl_ok(mcl_tensor_download(mcl_counter_linear_moment(layer[3][j]), 0, vb, rb));
        by_pass &= memcmp(a, d, n) == 0 && memcmp(sa, sb, rb) == 0 && memcmp(va, vb, rb) == 0;
        control_same[j] = memcmp(a, c, n) == 0;
        free(a), free(b), free(c), free(d);
    }
    printf("group of %d layers: %s one by one; salt changed in layer 1: layers equal %d %d %d\n",
           LAYERS, same ? "byte-identical to" : "DIFFERS from", control_same[0],
           control_same[1], control_same[2]);
    int passed = mcl_test_record_bool("counter: a group's updates byte-identical to each "
                                      "layer's alone (states, scales, moments)", same);
    passed &= mcl_test_record_bool("counter: a group recorded a pass at a time byte-identical "
                                   "to each layer's alone", by_pass);
    passed &= mcl_test_record_bool("counter: a group with one layer's salt changed differs "
                                   "there alone (control)",
                                   control_same[0] && !control_same[1] && control_same[2]);
    /* Refusals: no layers, too many, a layer twice, no hyper tensor, a wrong shape. */
    mcl_counter_update_item twice[2] = {items[0][0], items[0][0]};
    mcl_counter_update_item wrong = items[0][0];
    wrong.grad_out = tgo[1];
    mcl_counter_update_item many[MCL_COUNTER_GROUP_MAX + 1];
    for (int j = 0; j <= MCL_COUNTER_GROUP_MAX; j++)
        many[j] = items[0][j % LAYERS];
    EXPECT_STATUS(mcl_counter_linear_update_group_dev(items[0], 0, th), INVALID);
    EXPECT_STATUS(mcl_counter_linear_update_group_dev(many, MCL_COUNTER_GROUP_MAX + 1, th),
                  INVALID);
    EXPECT_STATUS(mcl_counter_linear_update_group_dev(twice, 2, th), INVALID);
    EXPECT_STATUS(mcl_counter_linear_update_group_dev(items[0], LAYERS, NULL), INVALID);
    EXPECT_STATUS(mcl_counter_linear_update_group_dev(&wrong, 1, th), SHAPE);
    EXPECT_STATUS(mcl_counter_linear_update_group_pass(items[2], LAYERS, th, 3), INVALID);
    EXPECT_STATUS(mcl_counter_linear_update_group_pass(items[0], LAYERS, th, 0), INVALID);
    passed &= mcl_test_record("counter: bad groups refused", "wrong statuses",
                              mcl_test_wrong_statuses, 0);
    for (int j = 0; j < LAYERS; j++) {
        for (int c = 0; c < COPIES; c++)
            mcl_counter_linear_destroy(layer[c][j]);
        mcl_tensor_destroy(tx[j]), mcl_tensor_destroy(tgo[j]);
        mcl_tensor_destroy(scratch[j][0]), mcl_tensor_destroy(scratch[j][1]);
    }
    mcl_tensor_destroy(th);
    assert_true(passed);
}

static void bad_arguments(void **state)
{
    (void)state;
    mcl_counter_linear *layer = NULL;
    mcl_counter_linear_desc desc = {.size = sizeof desc, .out = 4, .in = 32};
    EXPECT_STATUS(mcl_counter_linear_create(NULL, &desc, &layer), INVALID);
    EXPECT_STATUS(mcl_counter_linear_create(ctx, NULL, &layer), INVALID);
    EXPECT_STATUS(mcl_counter_linear_create(ctx, &desc, NULL), INVALID);
    desc.C = 15; /* 3 x 29 states do not fit in 6 bits */
    EXPECT_STATUS(mcl_counter_linear_create(ctx, &desc, &layer), INVALID);
    desc.C = 0;
    desc.in = 40;
    EXPECT_STATUS(mcl_counter_linear_create(ctx, &desc, &layer), INVALID);
    desc.in = 32;
    desc.size = 0;
    EXPECT_STATUS(mcl_counter_linear_create(ctx, &desc, &layer), INVALID);
    desc.size = sizeof desc;
    desc.out = 1 << 20;
    desc.in = 1 << 14;
    EXPECT_STATUS(mcl_counter_linear_create(ctx, &desc, &layer), MCL_ERROR_TOO_LARGE);
    desc.out = 4;
    desc.in = 32;
    assert_mcl_ok(mcl_counter_linear_create(ctx, &desc, &layer));
    const int64_t xs[2] = {3, 32}, ys[2] = {3, 4}, bad[2] = {3, 5};
    mcl_tensor *x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *y = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *yb = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, bad, NULL);
    mcl_tensor *yi = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, ys, NULL);
    EXPECT_STATUS(mcl_counter_linear_forward(NULL, x, y), INVALID);
    EXPECT_STATUS(mcl_counter_linear_forward(layer, NULL, y), INVALID);
    EXPECT_STATUS(mcl_counter_linear_forward(layer, x, NULL), INVALID);
    EXPECT_STATUS(mcl_counter_linear_forward(layer, x, yb), SHAPE);
    EXPECT_STATUS(mcl_counter_linear_forward(layer, x, yi), DTYPE);
    EXPECT_STATUS(mcl_counter_linear_forward(layer, x, x), INVALID);
    EXPECT_STATUS(mcl_counter_linear_forward_dev(layer, x, y, y), INVALID);
    EXPECT_STATUS(mcl_counter_linear_forward_dev(layer, x, y, yi), DTYPE);
    EXPECT_STATUS(mcl_counter_linear_forward(layer, x, y), MCL_SUCCESS);
    mcl_counter_update_desc up = {.size = sizeof up, .lr = 3e-3f, .seed = 12345};
    EXPECT_STATUS(mcl_counter_linear_backward(layer, x, y, NULL, &up), MCL_SUCCESS);
    EXPECT_STATUS(mcl_counter_linear_backward(layer, x, y, x, &up), INVALID);
    EXPECT_STATUS(mcl_counter_linear_backward(layer, x, yb, NULL, &up), SHAPE);
    EXPECT_STATUS(mcl_counter_linear_backward(NULL, x, y, NULL, &up), INVALID);
    EXPECT_STATUS(mcl_counter_linear_backward(layer, NULL, y, NULL, &up), INVALID);
    up.flags = 1u << 7;
    EXPECT_STATUS(mcl_counter_linear_backward(layer, x, y, NULL, &up), INVALID);
    up.flags = 0;
    up.beta = 1.0f;
    EXPECT_STATUS(mcl_counter_linear_backward(layer, x, y, NULL, &up), INVALID);
    up.beta = 0.0f;
    up.lr = NAN;
    EXPECT_STATUS(mcl_counter_linear_backward(layer, x, y, NULL, &up), INVALID);
    up.lr = 3e-3f;
    up.size = 0;
    EXPECT_STATUS(mcl_counter_linear_backward(layer, x, y, NULL, &up), INVALID);
    EXPECT_STATUS(mcl_counter_linear_from_f32(layer, NULL, 0.7f), INVALID);
    float w[4 * 32] = {0};
    EXPECT_STATUS(mcl_counter_linear_from_f32(layer, w, -1.0f), INVALID);
    EXPECT_STATUS(mcl_counter_linear_to_f32(NULL, w, NULL, NULL), INVALID);
    assert_null(mcl_counter_linear_state(NULL));
    assert_null(mcl_counter_linear_scale(NULL));
    assert_null(mcl_counter_linear_moment(NULL));
    mcl_counter_linear_destroy(NULL);
    assert_true(mcl_test_record("counter: bad arguments refused", "wrong statuses",
                                mcl_test_wrong_statuses, 0));
    mcl_tensor_destroy(x), mcl_tensor_destroy(y), mcl_tensor_destroy(yb);
    mcl_tensor_destroy(yi);
    mcl_counter_linear_destroy(layer);
}

/* A layer outlives its context as a handle: calls say so, and destroying it is safe. */
static void outlives_context(void **state)
{
    (void)state;
    mcl_context *other = mcl_test_context_without_subgroups();
    assert_non_null(other);
    mcl_counter_linear_desc desc = {.size = sizeof desc, .out = 4, .in = 16};
    mcl_counter_linear *layer = NULL;
    assert_mcl_ok(mcl_counter_linear_create(other, &desc, &layer));
    mcl_context_destroy(other);
    float w[4 * 16];
    const int refused =
        mcl_counter_linear_to_f32(layer, w, NULL, NULL) == MCL_ERROR_CONTEXT_DESTROYED &&
        mcl_counter_linear_state(layer) == NULL;
    mcl_counter_linear_destroy(layer);
    assert_true(mcl_test_record_bool("counter: a layer after its context's destruction",
                                     refused));
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(packing_round_trip),
        cmocka_unit_test(forward_and_grad_x),
        cmocka_unit_test(update_matches_reference),
        cmocka_unit_test(learns_ternary_teacher),
        cmocka_unit_test(group_matches_one_by_one),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(outlives_context),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
