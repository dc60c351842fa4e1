/* The ops a recorded decode step is made of (src/engine/step.c), against the ops they
 * stand for:
 *
 *  - mcl_norm_q8 (residual add, RMSNorm, activation quantization in one dispatch) against
 *    mcl_add, mcl_rmsnorm and mcl_quantize_activations: x bit-identical (one f32 add);
 *    y within a relative RMS of 1e-6 (the workgroup's sum of squares may be reduced in
 *    another order); the quantized words bit-identical to mcl_quantize_activations of the
 *    fused y (the same steps on the same values). Without h and act: x untouched, y as
 *    mcl_rmsnorm's. Control: the quantization of x instead of y differs. Rows of 4096 (the
 *    kernel holds them in registers) and of 9216 (read in rounds).
 *  - mcl_swiglu_q8 against mcl_swiglu and mcl_quantize_activations: the quantized words
 *    bit-identical (the same expression on the same values). Control: gate's quantization.
 *  - mcl_matmul_glu_q8 (gate and up integer-dot GEMVs, SwiGLU and its quantization in one
 *    dispatch) against the two products (mcl_matmul_quantized_input) and mcl_swiglu_q8, on a
 *    context that takes the integer-dot path: the quantized words bit-identical (the same
 *    lanes and rounds a row, the same sums), Q8_0 and Q4_0, 1, 2 and 3 rows, rows of 256 and
 *    4096, 160 and 512 outputs; at 8 rows, where the shared memory holds its partial sums
 *    (not on a device of less than 64 KiB, where it must not fuse). Control: up's weight as
 *    gate's too differs in most words.
 *    Refused: act_out the input's tensor, or too small; not fused (nothing recorded): Q4_K,
 *    gate and up of different types, a device without the integer-dot path (polaris).
 *  - mcl_matmul_multi_fold (the decoder's row step folded into the integer-dot GEMV): with a
 *    norm, the product of the residual stream x against mcl_norm_q8 then the product of its
 *    quantization (mcl_matmul_multi_given), Q8_0 and Q4_0, 1 and 3 rows, rows of 256 and
 *    4096, with a bias: relative RMS <= 1e-5 (the workgroup's sum of squares in another
 *    order may move a code at a rounding boundary); control: the norm's weight of another
 *    row step exceeds it. Accumulating: c + (the product), bit-identical to the product
 *    added on the host. Refused: a product that cannot fold (an f32 weight).
 *  - mcl_rope_kv (RoPE of rows' q in place, of their k into the caches of their sequences, v
 *    copied there, at positions and sequences read from a buffer; also one row into a
 *    one-sequence cache) against the rotation in double from the same frequency table:
 *    relative RMS <= 1e-6 (the device's sin/cos on [-pi, pi] and its float rotation); v
 *    bit-identical; every other row of q and of the caches untouched. Control: the reference
 *    at the position before exceeds the tolerance.
 *  - mcl_attention_decode (two tokens of two of three sequences; lengths and sequences read
 *    from a buffer, slices planned for the whole cache) against mcl_attention of each token
 *    over its sequence's cache with kv_length, at lengths from 1 to 300 of 300: relative RMS
 *    <= 1e-5 (f32 sums in another order); the slices merged by the last of them, whose
 *    counters are zero again after every dispatch; its quantized output, at an offset among
 *    more blocks, the words mcl_quantize_activations makes of out (control: of q). Control:
 *    the lengths before. Again on contexts with MOTIFCL_ATTENTION_WG=64 and 128 (the
 *    default is 256), each with its own validation count.
 *  - mcl_attention_decode_rope (RoPE, the cache write and the attention in one dispatch)
 *    against mcl_rope_kv then mcl_attention_decode, two tokens of two of three sequences at
 *    positions 0 to 299, caches that hold other values at the positions written: the output
 *    within a relative RMS of 1e-5; k's cache within 1e-6 (f32) or 1e-3 (f16: its rounding of
 *    a rotation the two kernels may contract differently), v's bit-identical; split-half
 *    and interleaved pairs, f32 and f16 caches. Control: mcl_attention_decode of the
 *    rotated q over the caches as they were (the new key not written) exceeds the tolerance.
 *  - mcl_cache_warm (a stretch of a tensor read into the cache): a stretch whose first word
 *    makes its invocation's XOR the kernel's marker writes the sink, so the stretch asked for
 *    was read; control: the stretch one word later leaves the sink; the tensor unchanged;
 *    refused: the sink too small or the tensor itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops_internal.h"
#include "vk/inspect.h"
#include "vk/runtime.h"

static mcl_context *ctx;

static double rel_rms(const float *got, const float *want, size_t n)
{
    return sqrt(mcl_nmse(got, want, n));
}

static size_t word_mismatches(const void *a, const void *b, size_t words)
{
    const uint32_t *x = a, *y = b;
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += x[i] != y[i];
    return bad;
}

static void download(mcl_tensor *t, void *out, size_t bytes)
{
    assert_mcl_ok(mcl_tensor_download(t, 0, out, bytes));
}

#define ROWS 3
#define DIM 4096

/* One shape: rows of dim values. */
static void norm_q8_case(int64_t rows, int64_t dim)
{
    const size_t n = (size_t)rows * (size_t)dim, blocks = n / 32, words = blocks * 10;
    float *x0 = malloc(n * 4), *h0 = malloc(n * 4), *w0 = malloc((size_t)dim * 4);
    float *got_x = malloc(n * 4), *want_x = malloc(n * 4), *got_y = malloc(n * 4),
          *want_y = malloc(n * 4);
    uint32_t *got_act = malloc(words * 4), *want_act = malloc(words * 4);
    assert_true(x0 && h0 && w0 && got_x && want_x && got_y && want_y && got_act && want_act);
    mcl_fill_random(x0, n, 1, -2.0f, 2.0f);
    mcl_fill_random(h0, n, 2, -1.0f, 1.0f);
    mcl_fill_random(w0, (size_t)dim, 3, 0.5f, 1.5f);
    int64_t shape[2] = {rows, dim}, wshape[1] = {dim}, ashape[1] = {(int64_t)words};
    mcl_tensor *x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, x0);
    mcl_tensor *h = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, h0);
    mcl_tensor *w = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, wshape, w0);
    mcl_tensor *y = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, NULL);
    mcl_tensor *act = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ashape, NULL);
    mcl_tensor *rx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, x0);
    mcl_tensor *ry = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, NULL);
    mcl_tensor *ract = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ashape, NULL);

    /* Fused, and the three ops it stands for. */
    assert_mcl_ok(mcl_norm_q8(ctx, h, w, 1e-5f, x, y, act));
    assert_mcl_ok(mcl_add(ctx, rx, h, rx));
    assert_mcl_ok(mcl_rmsnorm(ctx, rx, w, 1e-5f, ry));
    download(x, got_x, n * 4);
    download(rx, want_x, n * 4);
    download(y, got_y, n * 4);
    download(ry, want_y, n * 4);
    download(act, got_act, words * 4);
    assert_true(mcl_test_record("mcl_norm_q8: x += h against mcl_add", "mismatched words",
                                (double)word_mismatches(got_x, want_x, n), 0));
    assert_true(mcl_test_record("mcl_norm_q8: y against mcl_rmsnorm", "relative rms",
                                rel_rms(got_y, want_y, n), 1e-6));
    assert_mcl_ok(mcl_quantize_activations(ctx, y, (uint32_t)rows, (uint32_t)dim, ract));
    download(ract, want_act, words * 4);
    assert_true(mcl_test_record("mcl_norm_q8: act against mcl_quantize_activations of y",
                                "mismatched words",
                                (double)word_mismatches(got_act, want_act, words), 0));
    /* Control: the quantization of x (not normed) is another. */
    assert_mcl_ok(mcl_quantize_activations(ctx, x, (uint32_t)rows, (uint32_t)dim, ract));
    download(ract, want_act, words * 4);
    char name[160];
    size_t bad = word_mismatches(got_act, want_act, words);
    snprintf(name, sizeof name, "mcl_norm_q8: control, the quantization of x differs in %zu "
                                "words", bad);
    assert_true(mcl_test_record_bool(name, bad > words / 2));

    /* Neither h nor act: x stays, y is the plain RMSNorm. */
    assert_mcl_ok(mcl_tensor_upload(x, 0, x0, n * 4));
    assert_mcl_ok(mcl_norm_q8(ctx, NULL, w, 1e-5f, x, y, NULL));
    assert_mcl_ok(mcl_rmsnorm(ctx, x, w, 1e-5f, ry));
    download(x, got_x, n * 4);
    download(y, got_y, n * 4);
    download(ry, want_y, n * 4);
    assert_true(mcl_test_record("mcl_norm_q8 without h: x untouched", "mismatched words",
                                (double)word_mismatches(got_x, x0, n), 0));
    assert_true(mcl_test_record("mcl_norm_q8 without h: y against mcl_rmsnorm",
                                "relative rms", rel_rms(got_y, want_y, n), 1e-6));

    /* Refusals. */
    int64_t odd[2] = {rows, 48};
    mcl_tensor *bad_x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, odd, NULL);
    EXPECT_STATUS(mcl_norm_q8(ctx, NULL, w, 1e-5f, bad_x, y, NULL), SHAPE);
    EXPECT_STATUS(mcl_norm_q8(ctx, h, w, 1e-5f, x, x, NULL), INVALID);
    EXPECT_STATUS(mcl_norm_q8(ctx, h, NULL, 1e-5f, x, y, NULL), INVALID);
    mcl_tensor *all[] = {x, h, w, y, act, rx, ry, ract, bad_x};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(x0), free(h0), free(w0), free(got_x), free(want_x), free(got_y), free(want_y);
    free(got_act), free(want_act);
}

/* A row of 4096 (held in registers by the kernel), and one of 9216 at its largest
 * workgroup (read in rounds). */
static void norm_q8_matches_ops(void **state)
{
    (void)state;
    norm_q8_case(ROWS, DIM);
    norm_q8_case(2, 9216);
}

static void swiglu_q8_matches_ops(void **state)
{
    (void)state;
    const size_t n = (size_t)ROWS * DIM, words = n / 32 * 10;
    float *g0 = malloc(n * 4), *u0 = malloc(n * 4);
    uint32_t *got = malloc(words * 4), *want = malloc(words * 4);
    assert_true(g0 && u0 && got && want);
    mcl_fill_random(g0, n, 10, -6.0f, 6.0f);
    mcl_fill_random(u0, n, 11, -1.0f, 1.0f);
    int64_t shape[2] = {ROWS, DIM}, ashape[1] = {(int64_t)words};
    mcl_tensor *g = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, g0);
    mcl_tensor *u = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, u0);
    mcl_tensor *y = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, NULL);
    mcl_tensor *act = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ashape, NULL);
    mcl_tensor *ract = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ashape, NULL);
    assert_mcl_ok(mcl_swiglu_q8(ctx, g, u, act));
    assert_mcl_ok(mcl_swiglu(ctx, g, u, y));
    assert_mcl_ok(mcl_quantize_activations(ctx, y, ROWS, DIM, ract));
    download(act, got, words * 4);
    download(ract, want, words * 4);
    assert_true(mcl_test_record("mcl_swiglu_q8 against mcl_swiglu and mcl_quantize_activations",
                                "mismatched words", (double)word_mismatches(got, want, words),
                                0));
    /* Control: the quantization of gate alone. */
    assert_mcl_ok(mcl_quantize_activations(ctx, g, ROWS, DIM, ract));
    download(ract, want, words * 4);
    size_t bad = word_mismatches(got, want, words);
    char name[160];
    snprintf(name, sizeof name, "mcl_swiglu_q8: control, the quantization of gate differs in "
                                "%zu words", bad);
    assert_true(mcl_test_record_bool(name, bad > words / 2));
    EXPECT_STATUS(mcl_swiglu_q8(ctx, g, u, NULL), DTYPE);
    EXPECT_STATUS(mcl_swiglu_q8(ctx, g, y, g), DTYPE);
    mcl_tensor *all[] = {g, u, y, act, ract};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(g0), free(u0), free(got), free(want);
}

/* n rows of k weights of `dtype` (Q8_0 or Q4_0: d first in each block) as random codes, each
 * block's d a random power of two in 2^-9 .. 2^-6. */
static mcl_tensor *random_weight(mcl_context *c, mcl_dtype dtype, int64_t n, int64_t k,
                                 uint32_t seed)
{
    const size_t block = mcl_dtype_block_bytes(dtype), blocks = (size_t)(n * k / 32);
    uint8_t *q = malloc(block * blocks);
    assert_non_null(q);
    uint32_t r = seed * 2654435761u + 7;
    for (size_t i = 0; i < block * blocks; i++) {
        r = r * 1664525u + 1013904223u;
        q[i] = (uint8_t)(r >> 24);
    }
    for (size_t b = 0; b < blocks; b++) {
        r = r * 1664525u + 1013904223u;
        uint16_t half = (uint16_t)((6 + (r >> 30)) << 10); /* 2^(e - 15), e = 6 .. 9 */
        q[b * block] = (uint8_t)(half & 0xFF);
        q[b * block + 1] = (uint8_t)(half >> 8);
    }
    int64_t shape[2] = {n, k};
    mcl_tensor *t = mcl_test_tensor(c, dtype, 2, shape, q);
    free(q);
    return t;
}

static void glu_case(mcl_context *c, mcl_dtype dtype, int64_t rows, int64_t n, int64_t k)
{
    const size_t in_words = (size_t)(rows * k / 32 * 10), words = (size_t)(rows * n / 32 * 10);
    float *x0 = malloc((size_t)(rows * k) * 4);
    uint32_t *got = malloc(words * 4), *want = malloc(words * 4);
    assert_true(x0 && got && want);
    mcl_fill_random(x0, (size_t)(rows * k), (uint32_t)(20 + n + k), -1.0f, 1.0f);
    int64_t xs[2] = {rows, k}, ys[2] = {rows, n}, is[1] = {(int64_t)in_words},
            as[1] = {(int64_t)words};
    mcl_tensor *x = mcl_test_tensor(c, MCL_DTYPE_F32, 2, xs, x0);
    mcl_tensor *act = mcl_test_tensor(c, MCL_DTYPE_I32, 1, is, NULL);
    mcl_tensor *g = mcl_test_tensor(c, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *u = mcl_test_tensor(c, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *out = mcl_test_tensor(c, MCL_DTYPE_I32, 1, as, NULL);
    mcl_tensor *ref = mcl_test_tensor(c, MCL_DTYPE_I32, 1, as, NULL);
    mcl_tensor *wg = random_weight(c, dtype, n, k, (uint32_t)(1 + n)),
               *wu = random_weight(c, dtype, n, k, (uint32_t)(2 + n));
    assert_mcl_ok(mcl_quantize_activations(c, x, (uint32_t)rows, (uint32_t)k, act));
    assert_mcl_ok(mcl_matmul_quantized_input(c, x, act, wg, g));
    assert_mcl_ok(mcl_matmul_quantized_input(c, x, act, wu, u));
    assert_mcl_ok(mcl_swiglu_q8(c, g, u, ref));
    int fused = 0;
    assert_mcl_ok(mcl_matmul_glu_q8(c, x, act, wg, wu, g, out, NULL, &fused));
    char name[160];
    if (!fused) {
        /* Only where its partial sums are beyond the shared memory (8 rows: 64 KiB). */
        snprintf(name, sizeof name, "mcl_matmul_glu_q8 not fused at %lld rows: %u bytes of "
                 "shared memory", (long long)rows, mcl_inspect_traits(c)->max_shared_bytes);
        assert_true(mcl_test_record_bool(name, rows > 4 &&
                                                   mcl_inspect_traits(c)->max_shared_bytes <
                                                       65536));
        goto done;
    }
    download(out, got, words * 4);
    download(ref, want, words * 4);
    snprintf(name, sizeof name, "mcl_matmul_glu_q8 against the products and mcl_swiglu_q8, "
             "%s, %lld rows, %lld x %lld", mcl_dtype_name(dtype), (long long)rows,
             (long long)n, (long long)k);
    assert_true(mcl_test_record(name, "mismatched words", (double)word_mismatches(got, want,
                                                                                   words), 0));
    /* Control: up's weight in gate's place. */
    assert_mcl_ok(mcl_matmul_glu_q8(c, x, act, wu, wu, g, out, NULL, &fused));
    download(out, got, words * 4);
    size_t bad = word_mismatches(got, want, words);
    snprintf(name, sizeof name, "mcl_matmul_glu_q8: control, up's weight as gate's, %s, %lld "
             "rows: %zu of %zu words differ", mcl_dtype_name(dtype), (long long)rows, bad, words);
    assert_true(mcl_test_record_bool(name, fused == 1 && bad > words / 2));
done:;
    mcl_tensor *all[] = {x, act, g, u, out, ref, wg, wu};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(x0), free(got), free(want);
}

static void glu_q8_matches_ops(void **state)
{
    (void)state;
    mcl_context *c = mcl_test_context_with("MOTIFCL_QUANT_PATH", "dot");
    const mcl_dtype types[2] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0};
    /* A device without the integer-dot path (the polaris profile): nothing fused. */
    const int dot = mcl_inspect_traits(c)->quant_dot;
    for (int t = 0; t < 2 && !dot; t++) {
        int64_t xs[2] = {1, 256}, ys[2] = {1, 64}, is[1] = {80}, os[1] = {20};
        mcl_tensor *x = mcl_test_tensor(c, MCL_DTYPE_F32, 2, xs, NULL);
        mcl_tensor *act = mcl_test_tensor(c, MCL_DTYPE_I32, 1, is, NULL);
        mcl_tensor *out = mcl_test_tensor(c, MCL_DTYPE_I32, 1, os, NULL);
        mcl_tensor *y = mcl_test_tensor(c, MCL_DTYPE_F32, 2, ys, NULL);
        mcl_tensor *w = random_weight(c, types[t], 64, 256, 5);
        int fused = 1;
        assert_mcl_ok(mcl_matmul_glu_q8(c, x, act, w, w, y, out, NULL, &fused));
        assert_true(mcl_test_record_bool("mcl_matmul_glu_q8 without the integer-dot path: not "
                                         "fused", fused == 0));
        mcl_tensor *all[] = {x, act, out, y, w};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            mcl_tensor_destroy(all[i]);
    }
    for (int t = 0; t < 2 && dot; t++) {
        glu_case(c, types[t], 1, 512, 4096);
        glu_case(c, types[t], 2, 512, 4096);
        glu_case(c, types[t], 3, 160, 256);
        glu_case(c, types[t], 8, 512, 4096);
    }
    if (!dot) {
        assert_int_equal(mcl_test_context_release(c, " with the integer-dot path"), 0);
        return;
    }
    /* Refusals, and products it does not fuse (nothing recorded, *fused 0). */
    int64_t xs[2] = {1, 256}, ys[2] = {1, 64}, is[1] = {80}, small[1] = {19};
    mcl_tensor *x = mcl_test_tensor(c, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *act = mcl_test_tensor(c, MCL_DTYPE_I32, 1, is, NULL);
    mcl_tensor *out = mcl_test_tensor(c, MCL_DTYPE_I32, 1, small, NULL);
    mcl_tensor *y = mcl_test_tensor(c, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *w4 = random_weight(c, MCL_DTYPE_Q4_0, 64, 256, 5),
               *w8 = random_weight(c, MCL_DTYPE_Q8_0, 64, 256, 6);
    int64_t ks[2] = {64, 256};
    mcl_tensor *wk = mcl_test_tensor(c, MCL_DTYPE_Q4_K, 2, ks, NULL);
    int fused = 1;
    EXPECT_STATUS(mcl_matmul_glu_q8(c, x, act, w4, w4, y, NULL, NULL, &fused), INVALID);
    EXPECT_STATUS(mcl_matmul_glu_q8(c, x, act, w4, w4, y, act, NULL, &fused), INVALID);
    EXPECT_STATUS(mcl_matmul_glu_q8(c, x, act, w4, w4, y, out, NULL, &fused), INVALID);
    EXPECT_STATUS(mcl_matmul_glu_q8(c, x, act, w4, w4, y, act, NULL, NULL), INVALID);
    fused = 1;
    EXPECT_STATUS(mcl_matmul_glu_q8(c, x, act, w4, w8, y, out, NULL, &fused), MCL_SUCCESS);
    assert_int_equal(fused, 0);
    fused = 1;
    EXPECT_STATUS(mcl_matmul_glu_q8(c, x, act, wk, wk, y, out, NULL, &fused), MCL_SUCCESS);
    assert_int_equal(fused, 0);
    mcl_tensor *all[] = {x, act, out, y, w4, w8, wk};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    assert_int_equal(mcl_test_context_release(c, " with the integer-dot path"), 0);
}

static void fold_case(mcl_context *c, mcl_dtype dtype, int64_t rows, int64_t n, int64_t k)
{
    const size_t nx = (size_t)(rows * k), ny = (size_t)(rows * n);
    float *x0 = malloc(nx * 4), *w0 = malloc((size_t)k * 4), *b0 = malloc((size_t)n * 4);
    float *z0 = malloc(ny * 4), *got = malloc(ny * 4), *want = malloc(ny * 4);
    assert_true(x0 && w0 && b0 && z0 && got && want);
    const uint32_t seed = (uint32_t)(40 + rows + n + k);
    mcl_fill_random(x0, nx, seed, -2.0f, 2.0f);
    mcl_fill_random(w0, (size_t)k, seed + 1, 0.5f, 1.5f);
    mcl_fill_random(b0, (size_t)n, seed + 2, -0.5f, 0.5f);
    mcl_fill_random(z0, ny, seed + 3, -1.0f, 1.0f);
    int64_t xs[2] = {rows, k}, ys[2] = {rows, n}, ws[1] = {k}, bs[1] = {n},
            as[1] = {(int64_t)(nx / 32 * 10)};
    mcl_tensor *x = mcl_test_tensor(c, MCL_DTYPE_F32, 2, xs, x0);
    mcl_tensor *w = mcl_test_tensor(c, MCL_DTYPE_F32, 1, ws, w0);
    mcl_tensor *bias = mcl_test_tensor(c, MCL_DTYPE_F32, 1, bs, b0);
    mcl_tensor *y = mcl_test_tensor(c, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *act = mcl_test_tensor(c, MCL_DTYPE_I32, 1, as, NULL);
    mcl_tensor *ref = mcl_test_tensor(c, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *out = mcl_test_tensor(c, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *wq = random_weight(c, dtype, n, k, seed + 4);
    const mcl_tensor *wl[1] = {wq}, *bl[1] = {bias};
    mcl_tensor *refl[1] = {ref}, *outl[1] = {out};
    char name[64];
    snprintf(name, sizeof name, "%s, %lld rows, %lld x %lld", mcl_dtype_name(dtype),
             (long long)rows, (long long)n, (long long)k);
    assert_true(mcl_matmul_folds(c, x, wq, out, 1));

    /* The row step apart, then the product of its quantization; and folded. */
    assert_mcl_ok(mcl_norm_q8(c, NULL, w, 1e-5f, x, y, act));
    assert_mcl_ok(mcl_matmul_multi_given(c, y, act, 1, wl, bl, refl));
    const mcl_gemv_fold norm = {.norm = w, .eps = 1e-5f};
    assert_mcl_ok(mcl_matmul_multi_fold(c, x, NULL, 1, wl, bl, outl, &norm));
    download(out, got, ny * 4);
    download(ref, want, ny * 4);
    char what[256];
    snprintf(what, sizeof what, "mcl_matmul_multi_fold with its norm against mcl_norm_q8 and "
             "the product, %s", name);
    assert_true(mcl_test_record(what, "relative rms", rel_rms(got, want, ny), 1e-5));
    /* Control: another row step's weight (reversed). */
    float *w1 = malloc((size_t)k * 4);
    assert_non_null(w1);
    for (int64_t i = 0; i < k; i++)
        w1[i] = w0[k - 1 - i];
    assert_mcl_ok(mcl_tensor_upload(w, 0, w1, (size_t)k * 4));
    assert_mcl_ok(mcl_matmul_multi_fold(c, x, NULL, 1, wl, bl, outl, &norm));
    download(out, got, ny * 4);
    const double off = rel_rms(got, want, ny);
    snprintf(what, sizeof what, "mcl_matmul_multi_fold: control, another norm's weight, %s: "
             "relative rms %.3g", name, off);
    assert_true(mcl_test_record_bool(what, off > 1e-2));

    /* Accumulating into c: c + (the product), as the host adds them. */
    assert_mcl_ok(mcl_tensor_upload(out, 0, z0, ny * 4));
    const mcl_gemv_fold add = {.accumulate = 1};
    assert_mcl_ok(mcl_matmul_multi_fold(c, y, act, 1, wl, bl, outl, &add));
    download(out, got, ny * 4);
    for (size_t i = 0; i < ny; i++)
        want[i] = z0[i] + want[i];
    snprintf(what, sizeof what, "mcl_matmul_multi_fold accumulating against c + the product, "
             "%s", name);
    assert_true(mcl_test_record(what, "mismatched words", (double)word_mismatches(got, want,
                                                                                   ny), 0));
    mcl_tensor *all[] = {x, w, bias, y, act, ref, out, wq};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(x0), free(w0), free(w1), free(b0), free(z0), free(got), free(want);
}

static void norm_fold_matches_ops(void **state)
{
    (void)state;
    mcl_context *c = mcl_test_context_with("MOTIFCL_QUANT_PATH", "dot");
    int64_t xs[2] = {1, 256}, ys[2] = {1, 64}, fs[2] = {64, 256};
    mcl_tensor *x = mcl_test_tensor(c, MCL_DTYPE_F32, 2, xs, NULL);
    mcl_tensor *y = mcl_test_tensor(c, MCL_DTYPE_F32, 2, ys, NULL);
    mcl_tensor *wf = mcl_test_tensor(c, MCL_DTYPE_F32, 2, fs, NULL);
    mcl_tensor *w4 = random_weight(c, MCL_DTYPE_Q4_0, 64, 256, 9);
    const int dot = mcl_inspect_traits(c)->quant_dot;
    /* Without the integer-dot path (the polaris profile) nothing folds. */
    assert_true(mcl_test_record_bool("mcl_matmul_folds: Q4_0 on the integer-dot path only",
                                     mcl_matmul_folds(c, x, w4, y, 1) == dot));
    const mcl_tensor *wl[1] = {wf};
    mcl_tensor *yl[1] = {y};
    const mcl_gemv_fold norm = {.norm = x, .eps = 1e-5f};
    EXPECT_STATUS(mcl_matmul_multi_fold(c, x, NULL, 1, wl, NULL, yl, &norm), INVALID);
    mcl_tensor *all[] = {x, y, wf, w4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    const mcl_dtype types[2] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0};
    for (int t = 0; t < 2 && dot; t++) {
        fold_case(c, types[t], 1, 512, 4096);
        fold_case(c, types[t], 3, 160, 256);
    }
    assert_int_equal(mcl_test_context_release(c, " with the integer-dot path"), 0);
}

#define HQ 4
#define HKV 2
#define DH 64
#define SEQ 16

/* Rotate the split-half pairs of one head vector by pos times the table's turns, in
 * double. */
static void rotate(const float *in, float *out, const float *table, double pos)
{
    for (int i = 0; i < DH / 2; i++) {
        double turns = pos * ((double)table[2 * i] + (double)table[2 * i + 1]);
        double a = 6.283185307179586477 * (turns - floor(turns));
        double x0 = in[i], x1 = in[i + DH / 2];
        out[i] = (float)(x0 * cos(a) - x1 * sin(a));
        out[i + DH / 2] = (float)(x0 * sin(a) + x1 * cos(a));
    }
}

static void rope_kv_matches_reference(void **state)
{
    (void)state;
    /* Two rows into caches of two sequences: row 0 at position 5 of sequence 1, row 1 at 13
     * of sequence 0. */
    const size_t qn = 2 * HQ * DH, kn = 2 * HKV * DH, cn = 2 * SEQ * HKV * DH;
    float q0[2 * HQ * DH], k0[2 * HKV * DH], v0[2 * HKV * DH], table[DH];
    float got_q[2 * HQ * DH], want_q[2 * HQ * DH];
    float *got_kc = calloc(cn, 4), *got_vc = calloc(cn, 4), *want_kc = calloc(cn, 4),
          *want_vc = calloc(cn, 4), *zero = calloc(cn, 4);
    assert_true(got_kc && got_vc && want_kc && want_vc && zero);
    mcl_fill_random(q0, qn, 4, -1.0f, 1.0f);
    mcl_fill_random(k0, kn, 5, -1.0f, 1.0f);
    mcl_fill_random(v0, kn, 6, -1.0f, 1.0f);
    mcl_rope_table_values(500000.0, DH, NULL, table);
    const int32_t ids[5] = {7, 5, 13, 1, 0};  /* positions at 1, sequences at 3 */
    const int pos[2] = {5, 13}, seq[2] = {1, 0};
    int64_t qs[3] = {2, HQ, DH}, ks[3] = {2, HKV, DH}, cs[4] = {2, SEQ, HKV, DH},
            ts[2] = {DH / 2, 2}, ps[1] = {5};
    mcl_tensor *q = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, qs, q0);
    mcl_tensor *k = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, ks, k0);
    mcl_tensor *v = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, ks, v0);
    mcl_tensor *kc = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, cs, zero);
    mcl_tensor *vc = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, cs, zero);
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ts, table);
    mcl_tensor *it = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ps, ids);
    assert_mcl_ok(mcl_rope_kv(ctx, q, k, v, MCL_ROPE_SPLIT_HALF, tt, it, 1, 3, 0, 2, kc, vc));
    download(q, got_q, qn * 4);
    download(kc, got_kc, cn * 4);
    download(vc, got_vc, cn * 4);
    for (int r = 0; r < 2; r++) {
        for (int hh = 0; hh < HQ; hh++)
            rotate(q0 + (r * HQ + hh) * DH, want_q + (r * HQ + hh) * DH, table, pos[r]);
        for (int hh = 0; hh < HKV; hh++) {
            size_t at = (((size_t)seq[r] * SEQ + pos[r]) * HKV + hh) * DH;
            rotate(k0 + (r * HKV + hh) * DH, want_kc + at, table, pos[r]);
            memcpy(want_vc + at, v0 + (r * HKV + hh) * DH, DH * 4);
        }
    }
    assert_true(mcl_test_record("mcl_rope_kv: q rotated in place", "relative rms",
                                rel_rms(got_q, want_q, qn), 1e-6));
    assert_true(mcl_test_record("mcl_rope_kv: k into each row's sequence and position "
                                "(the rest untouched)", "relative rms",
                                rel_rms(got_kc, want_kc, cn), 1e-6));
    assert_true(mcl_test_record("mcl_rope_kv: v into each row's sequence and position",
                                "mismatched words",
                                (double)word_mismatches(got_vc, want_vc, cn), 0));
    /* One row alone into a one-sequence cache (sequence slot none): row 1 at ids[2]. */
    int64_t one[4] = {1, SEQ, HKV, DH};
    mcl_tensor *kc1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, one, zero);
    mcl_tensor *vc1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, one, zero);
    assert_mcl_ok(mcl_tensor_upload(q, 0, q0, qn * 4));
    assert_mcl_ok(mcl_rope_kv(ctx, q, k, v, MCL_ROPE_SPLIT_HALF, tt, it, 2, MCL_SLOT_NONE, 1,
                              1, kc1, vc1));
    download(q, got_q, qn * 4);
    download(kc1, got_kc, (size_t)SEQ * HKV * DH * 4);
    assert_true(mcl_test_record("mcl_rope_kv, one row: q row 0 untouched", "mismatched words",
                                (double)word_mismatches(got_q, q0, HQ * DH), 0));
    assert_true(mcl_test_record("mcl_rope_kv, one row: q row 1 rotated", "relative rms",
                                rel_rms(got_q + HQ * DH, want_q + HQ * DH, HQ * DH), 1e-6));
    assert_true(mcl_test_record("mcl_rope_kv, one row: k at its position", "relative rms",
                                rel_rms(got_kc, want_kc, (size_t)SEQ * HKV * DH), 1e-6));
    /* Control: the reference one position earlier. */
    for (int hh = 0; hh < HQ; hh++)
        rotate(q0 + (HQ + hh) * DH, want_q + (HQ + hh) * DH, table, 12.0);
    double e = rel_rms(got_q + HQ * DH, want_q + HQ * DH, HQ * DH);
    char name[160];
    snprintf(name, sizeof name, "mcl_rope_kv: control, the position before (%.3g) exceeds "
                                "the tolerance", e);
    assert_true(mcl_test_record_bool(name, e > 1e-6));
    EXPECT_STATUS(mcl_rope_kv(ctx, q, k, v, MCL_ROPE_SPLIT_HALF, tt, it, 4, 3, 0, 2, kc, vc),
                  SHAPE);
    EXPECT_STATUS(mcl_rope_kv(ctx, q, k, v, MCL_ROPE_SPLIT_HALF, tt, it, 0, 3, 1, 2, kc, vc),
                  SHAPE);
    mcl_tensor *all[] = {q, k, v, kc, vc, tt, it, kc1, vc1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(got_kc), free(got_vc), free(want_kc), free(want_vc), free(zero);
}

#define AHQ 8
#define AHKV 2
#define AD 64
#define AS 300
#define ASEQ 3
/* The quantized output's blocks: out's 32 from block 5 of 40. */
#define ABLOCKS 40
#define AFIRST 5

/* The check on actx, its records' names ending in alabel. */
static mcl_context *actx;
static const char *alabel = "";

static void attention_decode_on(void)
{
    /* Two tokens, of sequences 2 and 0 of three caches, at lengths from 1 to 300. */
    const size_t qn = 2 * AHQ * AD, kn = (size_t)ASEQ * AS * AHKV * AD;
    const size_t seq_bytes = (size_t)AS * AHKV * AD * 4;
    float *q0 = malloc(qn * 4), *k0 = malloc(kn * 4), *v0 = malloc(kn * 4);
    float *got = malloc(qn * 4), *want = malloc(qn * 4), *before = malloc(qn * 4);
    assert_true(q0 && k0 && v0 && got && want && before);
    mcl_fill_random(q0, qn, 7, -1.0f, 1.0f);
    mcl_fill_random(k0, kn, 8, -1.0f, 1.0f);
    mcl_fill_random(v0, kn, 9, -1.0f, 1.0f);
    int64_t qs[4] = {2, 1, AHQ, AD}, q1s[4] = {1, 1, AHQ, AD}, ks[4] = {ASEQ, AS, AHKV, AD},
            k1s[4] = {1, AS, AHKV, AD}, ls[1] = {5},
            pos[1] = {(int64_t)2 * MCL_ATTENTION_DECODE_MAX_SPLITS * AHQ * AD},
            pms[1] = {(int64_t)2 * MCL_ATTENTION_DECODE_MAX_SPLITS * AHQ * 2};
    mcl_tensor *q = mcl_test_tensor(actx, MCL_DTYPE_F32, 4, qs, q0);
    mcl_tensor *k = mcl_test_tensor(actx, MCL_DTYPE_F32, 4, ks, k0);
    mcl_tensor *v = mcl_test_tensor(actx, MCL_DTYPE_F32, 4, ks, v0);
    mcl_tensor *out = mcl_test_tensor(actx, MCL_DTYPE_F32, 4, qs, NULL);
    mcl_tensor *lens = mcl_test_tensor(actx, MCL_DTYPE_I32, 1, ls, NULL);
    mcl_tensor *po = mcl_test_tensor(actx, MCL_DTYPE_F32, 1, pos, NULL);
    mcl_tensor *pml = mcl_test_tensor(actx, MCL_DTYPE_F32, 1, pms, NULL);
    /* The slices' counters: zero before, and after every dispatch. */
    int32_t counts[2 * AHQ] = {0}, counts_after[2 * AHQ];
    int64_t cs[1] = {2 * AHQ}, cs_small[1] = {1};
    mcl_tensor *cnt = mcl_test_tensor(actx, MCL_DTYPE_I32, 1, cs, counts);
    mcl_tensor *cnt_small = mcl_test_tensor(actx, MCL_DTYPE_I32, 1, cs_small, counts);
    int64_t as[1] = {10 * ABLOCKS}, ras[1] = {10 * 32};
    mcl_tensor *act = mcl_test_tensor(actx, MCL_DTYPE_I32, 1, as, NULL);
    mcl_tensor *ract = mcl_test_tensor(actx, MCL_DTYPE_I32, 1, ras, NULL);
    /* The references: each token alone over its sequence's cache. */
    const int seq[2] = {2, 0};
    mcl_tensor *qr[2], *kr[2], *vr[2], *ref[2];
    for (int b = 0; b < 2; b++) {
        qr[b] = mcl_test_tensor(actx, MCL_DTYPE_F32, 4, q1s, q0 + (size_t)b * AHQ * AD);
        ref[b] = mcl_test_tensor(actx, MCL_DTYPE_F32, 4, q1s, NULL);
        assert_mcl_ok(mcl_tensor_view(k, seq[b] * seq_bytes, MCL_DTYPE_F32, 4, k1s, &kr[b]));
        assert_mcl_ok(mcl_tensor_view(v, seq[b] * seq_bytes, MCL_DTYPE_F32, 4, k1s, &vr[b]));
    }
    const int32_t lengths[4][2] = {{1, 300}, {37, 2}, {160, 299}, {300, 64}};
    double worst = 0.0, control = INFINITY;
    for (int i = 0; i < 4; i++) {
        int32_t l[5] = {-1, lengths[i][0], lengths[i][1], seq[0], seq[1]};
        assert_mcl_ok(mcl_tensor_upload(lens, 0, l, sizeof l));
        assert_mcl_ok(mcl_attention_decode(actx, q, k, v, lens, 1, 3, po, pml, cnt,
                                           i % 2 ? act : NULL, AFIRST, ABLOCKS, out));
        download(out, got, qn * 4);
        for (int b = 0; b < 2; b++) {
            mcl_attention_desc d = {.size = sizeof d, .kv_length = lengths[i][b]};
            assert_mcl_ok(mcl_attention(actx, qr[b], kr[b], vr[b], &d, ref[b]));
            download(ref[b], want + (size_t)b * AHQ * AD, qn * 2);
        }
        double e = rel_rms(got, want, qn);
        worst = e > worst ? e : worst;
        if (i > 0) {
            double c = rel_rms(got, before, qn);
            control = c < control ? c : control;
        }
        memcpy(before, want, qn * 4);
    }
    /* The last dispatch quantized its output: against mcl_quantize_activations of it, at
     * blocks AFIRST.. of ABLOCKS (codes, then scales, then sums). */
    uint32_t got_act[10 * ABLOCKS], want_act[10 * 32], mine[10 * 32];
    download(act, got_act, sizeof got_act);
    assert_mcl_ok(mcl_quantize_activations(actx, out, 2, AHQ * AD, ract));
    download(ract, want_act, sizeof want_act);
    memcpy(mine, got_act + 8 * AFIRST, 8 * 32 * 4);
    memcpy(mine + 8 * 32, got_act + 8 * ABLOCKS + AFIRST, 32 * 4);
    memcpy(mine + 9 * 32, got_act + 9 * ABLOCKS + AFIRST, 32 * 4);
    char name[200];
    snprintf(name, sizeof name, "mcl_attention_decode%s: its quantized output against "
             "mcl_quantize_activations of out", alabel);
    assert_true(mcl_test_record(name, "mismatched words",
                                (double)word_mismatches(mine, want_act, 10 * 32), 0));
    assert_mcl_ok(mcl_quantize_activations(actx, q, 2, AHQ * AD, ract));
    download(ract, want_act, sizeof want_act);
    size_t bad = word_mismatches(mine, want_act, 10 * 32);
    snprintf(name, sizeof name, "mcl_attention_decode%s: control, the quantization of q "
             "differs in %zu words", alabel, bad);
    assert_true(mcl_test_record_bool(name, bad > 160));
    EXPECT_STATUS(mcl_attention_decode(actx, q, k, v, lens, 1, 3, po, pml, cnt, act, 9,
                                       ABLOCKS, out), SHAPE);
    snprintf(name, sizeof name, "mcl_attention_decode%s, two tokens of two sequences, against "
             "mcl_attention of each, lengths 1 to 300", alabel);
    assert_true(mcl_test_record(name, "relative rms", worst, 1e-5));
    snprintf(name, sizeof name, "mcl_attention_decode%s: control, the lengths before (%.3g) "
             "exceed the tolerance", alabel, control);
    assert_true(mcl_test_record_bool(name, control > 1e-5));
    EXPECT_STATUS(mcl_attention_decode(actx, q, k, v, lens, 4, 3, po, pml, cnt, NULL, 0, 0, out), INVALID);
    /* Scratch too small for the library's slices (a forced few may fit in it). */
    if (mcl_traits_of(actx)->attention_splits == 0)
        EXPECT_STATUS(mcl_attention_decode(actx, q, k, v, lens, 1, 3, pml, pml, cnt, NULL, 0, 0, out),
                      SHAPE);
    EXPECT_STATUS(mcl_attention_decode(actx, q, k, v, lens, 1, 3, po, pml, cnt_small, NULL, 0, 0, out),
                  SHAPE);
    download(cnt, counts_after, sizeof counts_after);
    snprintf(name, sizeof name, "mcl_attention_decode%s: the slices' counters zero again after "
             "each dispatch", alabel);
    assert_true(mcl_test_record(name, "nonzero counters",
                                (double)word_mismatches(counts_after, counts, 2 * AHQ), 0));
    for (int b = 0; b < 2; b++) {
        mcl_tensor_destroy(kr[b]);
        mcl_tensor_destroy(vr[b]);
        mcl_tensor_destroy(qr[b]);
        mcl_tensor_destroy(ref[b]);
    }
    mcl_tensor *all[] = {q, k, v, out, lens, po, pml, cnt, cnt_small, act, ract};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(q0), free(k0), free(v0), free(got), free(want), free(before);
}

static void attention_decode_matches_attention(void **state)
{
    (void)state;
    actx = ctx;
    alabel = "";
    attention_decode_on();
    /* Each workgroup size MOTIFCL_ATTENTION_WG chooses (the default is 256, or 128 for head
     * dims of 128 and more). */
    static const char *const sizes[3] = {"64", "128", "256"};
    for (int i = 0; i < 3; i++) {
        char label[64];
        snprintf(label, sizeof label, " (MOTIFCL_ATTENTION_WG=%s)", sizes[i]);
        actx = mcl_test_context_with("MOTIFCL_ATTENTION_WG", sizes[i]);
        char made[96];
        snprintf(made, sizeof made, "a context with MOTIFCL_ATTENTION_WG=%s in its traits",
                 sizes[i]);
        assert_true(mcl_test_record_bool(made, actx && mcl_traits_of(actx)->attention_wg ==
                                                          (uint32_t)atoi(sizes[i])));
        alabel = label;
        attention_decode_on();
        snprintf(made, sizeof made, " with MOTIFCL_ATTENTION_WG=%s", sizes[i]);
        assert_int_equal(mcl_test_context_release(actx, made), 0);
    }
    actx = ctx;
    /* The library's slices hold one key tile each at these lengths; two slices of many tiles
     * exercise the online softmax's rescale between tiles. */
    mcl_traits *traits = mcl_inspect_traits(ctx);
    const uint32_t splits = traits->attention_splits;
    traits->attention_splits = 2;
    alabel = " (two slices)";
    attention_decode_on();
    traits->attention_splits = splits;
    alabel = "";
}

/* A 16-bit float's value (the caches of rope_attention_on). */
static float half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 1024), e - 25);
    return h & 0x8000 ? -v : v;
}

/* The caches' values as f32 (f16 ones decoded). */
static void cache_values(mcl_tensor *t, float *out, size_t n, int f16)
{
    if (!f16) {
        download(t, out, n * 4);
        return;
    }
    uint16_t *h = malloc(n * 2);
    assert_non_null(h);
    download(t, h, n * 2);
    for (size_t i = 0; i < n; i++)
        out[i] = half_value(h[i]);
    free(h);
}

static void rope_attention_on(mcl_dtype kv, mcl_rope_layout layout, const char *label)
{
    const int f16 = kv == MCL_DTYPE_F16;
    const size_t qn = 2 * AHQ * AD, nn = 2 * AHKV * AD, kn = (size_t)ASEQ * AS * AHKV * AD;
    const size_t kbytes = kn * (f16 ? 2 : 4);
    float *q0 = malloc(qn * 4), *kn0 = malloc(nn * 4), *vn0 = malloc(nn * 4), table[AD];
    float *got = malloc(qn * 4), *want = malloc(qn * 4), *before = malloc(qn * 4);
    float *gk = malloc(kn * 4), *wk = malloc(kn * 4);
    uint32_t *c0 = malloc(kbytes), *gv = malloc(kbytes), *wv = malloc(kbytes);
    assert_true(q0 && kn0 && vn0 && got && want && before && gk && wk && c0 && gv && wv);
    mcl_fill_random(q0, qn, 11, -1.0f, 1.0f);
    mcl_fill_random(kn0, nn, 12, -1.0f, 1.0f);
    mcl_fill_random(vn0, nn, 13, -1.0f, 1.0f);
    /* The caches' values before: random, f16 ones of magnitudes 2^-5 to 2. */
    if (f16) {
        uint16_t *h = (uint16_t *)c0;
        for (size_t i = 0; i < kn; i++) {
            uint32_t r = (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 7) * 40503u;
            h[i] = (uint16_t)(((r >> 5) & 0x8000) | ((10 + (r >> 11) % 6) << 10) | (r & 1023));
        }
    } else {
        mcl_fill_random((float *)c0, kn, 14, -1.0f, 1.0f);
    }
    mcl_rope_table_values(10000.0, AD, NULL, table);
    int64_t qs[4] = {2, 1, AHQ, AD}, q3s[3] = {2, AHQ, AD}, ns[3] = {2, AHKV, AD},
            ks[4] = {ASEQ, AS, AHKV, AD}, ls[1] = {7}, ts[2] = {AD / 2, 2},
            pos[1] = {(int64_t)2 * MCL_ATTENTION_DECODE_MAX_SPLITS * AHQ * AD},
            pms[1] = {(int64_t)2 * MCL_ATTENTION_DECODE_MAX_SPLITS * AHQ * 2}, cs[1] = {2 * AHQ};
    mcl_tensor *q = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, qs, q0);
    mcl_tensor *qr = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, qs, q0);
    mcl_tensor *knew = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, ns, kn0);
    mcl_tensor *vnew = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, ns, vn0);
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ts, table);
    mcl_tensor *lens = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ls, NULL);
    mcl_tensor *kc[3], *vc[3]; /* fused, reference, never written */
    for (int i = 0; i < 3; i++) {
        kc[i] = mcl_test_tensor(ctx, kv, 4, ks, NULL);
        vc[i] = mcl_test_tensor(ctx, kv, 4, ks, NULL);
        assert_mcl_ok(mcl_tensor_upload(kc[i], 0, c0, kbytes));
        assert_mcl_ok(mcl_tensor_upload(vc[i], 0, c0, kbytes));
    }
    mcl_tensor *out = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, qs, NULL);
    mcl_tensor *ref = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, qs, NULL);
    mcl_tensor *po = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, pos, NULL);
    mcl_tensor *pml = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, pms, NULL);
    int32_t zeros[2 * AHQ] = {0};
    mcl_tensor *cnt = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, cs, zeros);
    mcl_tensor *q3 = NULL;
    assert_mcl_ok(mcl_tensor_view(qr, 0, MCL_DTYPE_F32, 3, q3s, &q3));
    mcl_decode_rope rope = {knew, vnew, tt, 1, layout};
    const int32_t lengths[4][2] = {{1, 300}, {37, 2}, {160, 299}, {300, 64}};
    double worst = 0.0, control = 0.0;
    for (int i = 0; i < 4; i++) {
        /* Positions at 1, lengths at 3, sequences 2 and 0 at 5. */
        int32_t l[7] = {-1, lengths[i][0] - 1, lengths[i][1] - 1, lengths[i][0], lengths[i][1],
                        2, 0};
        assert_mcl_ok(mcl_tensor_upload(lens, 0, l, sizeof l));
        assert_mcl_ok(mcl_attention_decode_rope(ctx, q, kc[0], vc[0], lens, 3, 5, &rope, po,
                                                pml, cnt, NULL, 0, 0, out));
        download(out, got, qn * 4);
        assert_mcl_ok(mcl_tensor_upload(qr, 0, q0, qn * 4));
        assert_mcl_ok(mcl_rope_kv(ctx, q3, knew, vnew, layout, tt, lens, 1, 5, 0, 2, kc[1],
                                  vc[1]));
        assert_mcl_ok(mcl_attention_decode(ctx, qr, kc[1], vc[1], lens, 3, 5, po, pml, cnt,
                                           NULL, 0, 0, ref));
        download(ref, want, qn * 4);
        double e = rel_rms(got, want, qn);
        worst = e > worst ? e : worst;
        if (i == 0) {
            assert_mcl_ok(mcl_attention_decode(ctx, qr, kc[2], vc[2], lens, 3, 5, po, pml, cnt,
                                               NULL, 0, 0, ref));
            download(ref, before, qn * 4);
            control = rel_rms(before, want, qn);
        }
    }
    cache_values(kc[0], gk, kn, f16);
    cache_values(kc[1], wk, kn, f16);
    download(vc[0], gv, kbytes);
    download(vc[1], wv, kbytes);
    char name[200];
    snprintf(name, sizeof name, "mcl_attention_decode_rope%s, positions 0 to 299 of two "
             "sequences, against mcl_rope_kv and mcl_attention_decode", label);
    assert_true(mcl_test_record(name, "relative rms", worst, 1e-5));
    snprintf(name, sizeof name, "mcl_attention_decode_rope%s: k's cache as mcl_rope_kv's",
             label);
    assert_true(mcl_test_record(name, "relative rms", rel_rms(gk, wk, kn), f16 ? 1e-3 : 1e-6));
    snprintf(name, sizeof name, "mcl_attention_decode_rope%s: v's cache as mcl_rope_kv's",
             label);
    assert_true(mcl_test_record(name, "mismatched words",
                                (double)word_mismatches(gv, wv, kbytes / 4), 0));
    snprintf(name, sizeof name, "mcl_attention_decode_rope%s: control, the attention without "
             "the new key written (%.3g) exceeds the tolerance", label, control);
    assert_true(mcl_test_record_bool(name, control > 1e-5));
    if (layout == MCL_ROPE_SPLIT_HALF && !f16) {
        mcl_decode_rope odd = rope;
        odd.pos_slot = 6; /* two positions from slot 6 run past lens's 7 */
        EXPECT_STATUS(mcl_attention_decode_rope(ctx, q, kc[0], vc[0], lens, 3, 5, &odd, po,
                                                pml, cnt, NULL, 0, 0, out), SHAPE);
        odd = rope;
        odd.k_new = q3;
        EXPECT_STATUS(mcl_attention_decode_rope(ctx, q, kc[0], vc[0], lens, 3, 5, &odd, po,
                                                pml, cnt, NULL, 0, 0, out), SHAPE);
        EXPECT_STATUS(mcl_attention_decode_rope(ctx, q, kc[0], vc[0], lens, 3, 5, NULL, po,
                                                pml, cnt, NULL, 0, 0, out), INVALID);
    }
    mcl_tensor *all[] = {q, qr, q3, knew, vnew, tt, lens, out, ref, po, pml, cnt,
                         kc[0], kc[1], kc[2], vc[0], vc[1], vc[2]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(q0), free(kn0), free(vn0), free(got), free(want), free(before);
    free(gk), free(wk), free(c0), free(gv), free(wv);
}

static void attention_decode_rope_matches_ops(void **state)
{
    (void)state;
    rope_attention_on(MCL_DTYPE_F32, MCL_ROPE_SPLIT_HALF, "");
    rope_attention_on(MCL_DTYPE_F32, MCL_ROPE_INTERLEAVED, " (interleaved pairs)");
    rope_attention_on(MCL_DTYPE_F16, MCL_ROPE_SPLIT_HALF, " (f16 caches)");
    /* Two slices of many key tiles, the new key read from the rotation in a later tile. */
    mcl_traits *traits = mcl_inspect_traits(ctx);
    const uint32_t splits = traits->attention_splits;
    traits->attention_splits = 2;
    rope_attention_on(MCL_DTYPE_F32, MCL_ROPE_SPLIT_HALF, " (two slices)");
    rope_attention_on(MCL_DTYPE_F16, MCL_ROPE_INTERLEAVED,
                      " (two slices, f16 caches, interleaved pairs)");
    traits->attention_splits = splits;
}

/* mcl_cache_warm reads the stretch asked for: its only output, the sink, is written where an
 * invocation's 16-byte words XOR to 0x9E3779B9, so a stretch of zeros with that word at its
 * start is seen, and the same word just before the stretch is not; t is left as it was. */
static void cache_warm_reads_its_stretch(void **state)
{
    (void)state;
    const size_t words = 64 * 1024;
    uint32_t *data = calloc(words, 4), *back = malloc(words * 4), sink0[4] = {7, 7, 7, 7},
             sink[4];
    assert_true(data && back);
    const uint64_t offset = 4096; /* bytes: word 1024 */
    data[offset / 4] = 0x9E3779B9u;
    int64_t ts[1] = {(int64_t)words}, ss[1] = {4};
    mcl_tensor *t = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ts, data);
    mcl_tensor *sk = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, ss, sink0);
    assert_mcl_ok(mcl_cache_warm(ctx, t, offset, 16 * 1024, sk));
    download(sk, sink, 16);
    assert_true(mcl_test_record_bool("mcl_cache_warm: the marked word at the stretch's start "
                                     "seen (the sink written)",
                                     sink[0] == 0x9E3779B9u));
    /* Control: the stretch starts one 16-byte word later, past the mark. */
    assert_mcl_ok(mcl_tensor_upload(sk, 0, sink0, 16));
    assert_mcl_ok(mcl_cache_warm(ctx, t, offset + 16, 16 * 1024, sk));
    download(sk, sink, 16);
    assert_true(mcl_test_record_bool("mcl_cache_warm: control, a stretch past the mark leaves "
                                     "the sink",
                                     !memcmp(sink, sink0, 16)));
    download(t, back, words * 4);
    assert_true(mcl_test_record("mcl_cache_warm: the tensor read is unchanged", "mismatched words",
                                (double)word_mismatches(back, data, words), 0));
    EXPECT_STATUS(mcl_cache_warm(ctx, t, 0, 64, t), INVALID);
    int64_t one[1] = {1};
    mcl_tensor *tiny = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, one, NULL);
    EXPECT_STATUS(mcl_cache_warm(ctx, t, 0, 64, tiny), INVALID);
    mcl_tensor *all[] = {t, sk, tiny};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(data), free(back);
}

static void statuses(void **state)
{
    (void)state;
    assert_true(mcl_test_record("decode ops: refused arguments with the expected status",
                                "wrong statuses", mcl_test_wrong_statuses, 0));
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(norm_q8_matches_ops),
        cmocka_unit_test(swiglu_q8_matches_ops),
        cmocka_unit_test(glu_q8_matches_ops),
        cmocka_unit_test(norm_fold_matches_ops),
        cmocka_unit_test(rope_kv_matches_reference),
        cmocka_unit_test(attention_decode_matches_attention),
        cmocka_unit_test(attention_decode_rope_matches_ops),
        cmocka_unit_test(cache_warm_reads_its_stretch),
        cmocka_unit_test(statuses),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
