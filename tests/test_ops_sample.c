/* The device's sampler (mcl_sample_rows, sample_f32.comp) against the host's
 * (mcl_sample_logits, whose distributions test_sampler checks against the definitions):
 *
 *  - Rows of random logits (with runs of equal values, so that cuts fall on ties) at vocab
 *    1000 and 32003, each draw a row of parameters with its own key: greedy, greedy with
 *    penalties, temperature alone, top-k, top-p alone (over 512 candidates: the whole-row
 *    search) and after top-k 400 (held candidates), top-k + top-p + min-p, min-p, top-k 1 and
 *    vocab - 1, and penalties with a
 *    draw. The device's token must equal the host's in all but 1 + 1 in 500 draws (the host
 *    computes in double: a draw whose two best scores lie within about 1e-6 may differ).
 *    Control: the device at other keys agrees in far fewer.
 *  - The same dispatch twice gives the same tokens; the portable reduction path (subgroup
 *    arithmetic switched off) gives the host's tokens too.
 *  - mcl_scatter_rows: rows land in the rows the index buffer names, the others untouched.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "engine/engine_internal.h"
#include "ops/ops_internal.h"
#include "vk/runtime.h"

static mcl_context *ctx;

#define CAP 64u
#define STRIDE (MCL_SAMPLE_HEADER + 2u * CAP)
#define LOGIT_ROWS 2u

static mcl_tensor *tensor(mcl_context *c, mcl_dtype dtype, int64_t d0, int64_t d1)
{
    int64_t shape[2] = {d0, d1};
    mcl_tensor *t = NULL;
    assert_mcl_ok(mcl_tensor_create(c, dtype, d1 ? 2 : 1, shape, &t));
    return t;
}

/* Logits of `rows` rows: uniform in [-6, 6), rounded to multiples of 1/64 for vocab 1000
 * (many equal values), scaled and shifted per row. */
static float *make_logits(uint32_t vocab, uint32_t seed)
{
    float *l = malloc((size_t)LOGIT_ROWS * vocab * sizeof *l);
    assert_non_null(l);
    mcl_fill_random(l, (size_t)LOGIT_ROWS * vocab, seed, -6.0f, 6.0f);
    for (uint32_t i = 0; i < LOGIT_ROWS * vocab; i++)
        l[i] = vocab < 2000 ? roundf(l[i] * 64.0f) / 64.0f : l[i] * 1.5f + 2.0f;
    return l;
}

typedef struct config {
    const char *name;
    mcl_sampler_desc d;
} config;

/* Draw `draws` tokens of config c on the device (one row of parameters each, alternating
 * between the rows of logits, `key_xor` applied to every key) and on the host; returns the
 * draws where they differ. tokens_out receives the device's. */
static uint32_t compare(mcl_context *c, const float *host_l, uint32_t vocab,
                        const config *cf, uint32_t draws, uint32_t key_xor, int32_t *tokens_out)
{
    static const int32_t history[12] = {3, 7, 3, 11, 500, 3, 7, 42, 999, 0, 1, 3};
    mcl_tensor *logits = tensor(c, MCL_DTYPE_F32, LOGIT_ROWS, vocab);
    mcl_tensor *params = tensor(c, MCL_DTYPE_I32, (int64_t)draws * STRIDE, 0);
    mcl_tensor *tokens = tensor(c, MCL_DTYPE_I32, draws, 0);
    assert_mcl_ok(mcl_tensor_upload(logits, 0, host_l, 4ull * LOGIT_ROWS * vocab));
    uint32_t *rows = calloc((size_t)draws * STRIDE, sizeof *rows);
    int32_t *scratch = malloc(vocab * sizeof *scratch), *got = malloc(draws * sizeof *got);
    float *hw = malloc(2ull * vocab * sizeof *hw);
    assert_true(rows && scratch && got && hw);
    for (uint32_t i = 0; i < draws; i++) {
        assert_true(mcl_sample_params(&cf->d, history, 12, i, i % LOGIT_ROWS, CAP, scratch,
                                      rows + (size_t)i * STRIDE));
        rows[(size_t)i * STRIDE + 8] ^= key_xor;
    }
    assert_mcl_ok(mcl_tensor_upload(params, 0, rows, 4ull * draws * STRIDE));
    assert_mcl_ok(mcl_sample_rows(c, logits, params, STRIDE, draws, tokens));
    assert_mcl_ok(mcl_tensor_download(tokens, 0, got, 4ull * draws));
    uint32_t differ = 0;
    for (uint32_t i = 0; i < draws; i++) {
        int32_t want = mcl_sample_logits(host_l + (size_t)(i % LOGIT_ROWS) * vocab, vocab,
                                         history, 12, &cf->d, i, hw, scratch);
        differ += got[i] != want;
    }
    if (tokens_out)
        memcpy(tokens_out, got, draws * sizeof *got);
    mcl_tensor *all[] = {logits, params, tokens};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    free(rows), free(scratch), free(got), free(hw);
    return differ;
}

static const config configs[] = {
    {"greedy", {.size = sizeof(mcl_sampler_desc)}},
    {"greedy, penalties", {.size = sizeof(mcl_sampler_desc), .repeat_penalty = 1.3f,
                           .frequency_penalty = 0.25f, .presence_penalty = 0.5f}},
    {"temperature 1", {.size = sizeof(mcl_sampler_desc), .temperature = 1.0f, .seed = 1}},
    {"temperature 0.7, top-k 40", {.size = sizeof(mcl_sampler_desc), .temperature = 0.7f,
                                   .top_k = 40, .seed = 2}},
    {"temperature 1.5, top-p 0.9", {.size = sizeof(mcl_sampler_desc), .temperature = 1.5f,
                                    .top_p = 0.9f, .seed = 3}},
    {"temperature 1, top-k 400, top-p 0.9", {.size = sizeof(mcl_sampler_desc),
                                             .temperature = 1.0f, .top_k = 400, .top_p = 0.9f,
                                             .seed = 9}},
    {"temperature 0.8, top-k 40, top-p 0.95, min-p 0.05",
     {.size = sizeof(mcl_sampler_desc), .temperature = 0.8f, .top_k = 40, .top_p = 0.95f,
      .min_p = 0.05f, .seed = 4}},
    {"temperature 1, min-p 0.1", {.size = sizeof(mcl_sampler_desc), .temperature = 1.0f,
                                  .min_p = 0.1f, .seed = 5}},
    {"temperature 1, top-k 1", {.size = sizeof(mcl_sampler_desc), .temperature = 1.0f,
                                .top_k = 1, .seed = 6}},
    {"temperature 2, top-k vocab - 1, top-p 0.5",
     {.size = sizeof(mcl_sampler_desc), .temperature = 2.0f, .top_k = 0 /* set below */,
      .top_p = 0.5f, .seed = 7}},
    {"temperature 0.9, top-k 60, penalties, window 8",
     {.size = sizeof(mcl_sampler_desc), .temperature = 0.9f, .top_k = 60,
      .repeat_penalty = 1.2f, .frequency_penalty = 0.5f, .presence_penalty = 0.3f,
      .penalty_last_n = 8, .seed = 8}},
};

static void against_host(void **state)
{
    (void)state;
    static const uint32_t vocabs[2] = {1000, 32003};
    for (int v = 0; v < 2; v++) {
        uint32_t vocab = vocabs[v], draws = vocab < 2000 ? 600 : 120;
        float *l = make_logits(vocab, 11 + v);
        for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
            config cf = configs[c];
            if (cf.d.top_p == 0.5f)
                cf.d.top_k = vocab - 1;
            uint32_t differ = compare(ctx, l, vocab, &cf, draws, 0, NULL);
            char name[200];
            snprintf(name, sizeof name, "vocab %u, %s: device tokens unlike the host's (of %u)",
                     vocab, cf.name, draws);
            assert_true(mcl_test_record(name, "draws", differ, 1 + draws / 500));
        }
        /* Control: the keys changed, a drawing configuration agrees far less. */
        uint32_t differ = compare(ctx, l, vocab, &configs[2], draws, 0x5bd1e995u, NULL);
        char name[200];
        snprintf(name, sizeof name, "vocab %u: control, other keys give other tokens (%u of %u "
                                    "differ)", vocab, differ, draws);
        assert_true(mcl_test_record_bool(name, differ > draws / 2));
        free(l);
    }
}

static void repeatable_and_portable(void **state)
{
    (void)state;
    const uint32_t vocab = 32003, draws = 64;
    float *l = make_logits(vocab, 5);
    int32_t a[64], b[64];
    const config *cf = &configs[5];
    compare(ctx, l, vocab, cf, draws, 0, a);
    compare(ctx, l, vocab, cf, draws, 0, b);
    assert_true(mcl_test_record_bool("the same parameters and logits twice: the same tokens",
                                     memcmp(a, b, sizeof a) == 0));
    mcl_context *tree = mcl_test_context_without_subgroups();
    assert_non_null(tree);
    uint32_t differ = compare(tree, l, vocab, &configs[4], draws, 0, NULL);
    differ += compare(tree, l, vocab, cf, draws, 0, NULL);
    assert_true(mcl_test_record("without subgroup arithmetic: device tokens unlike the host's "
                                "(top-p 0.9 over the row; top-k 400 and top-p over held candidates; 64 draws each)",
                                "draws", differ, 0));
    assert_int_equal(mcl_context_validation_errors(tree), 0);
    mcl_context_destroy(tree);
    free(l);
}

static void scatter(void **state)
{
    (void)state;
    const uint32_t width = 1000, rows = 3, dst_rows = 5;
    float src[3 * 1000], dst[5 * 1000], before[5 * 1000];
    mcl_fill_random(src, rows * width, 3, -1.0f, 1.0f);
    mcl_fill_random(before, dst_rows * width, 4, -1.0f, 1.0f);
    mcl_tensor *s = tensor(ctx, MCL_DTYPE_F32, rows, width);
    mcl_tensor *d = tensor(ctx, MCL_DTYPE_F32, dst_rows, width);
    mcl_tensor *idx = tensor(ctx, MCL_DTYPE_I32, 6, 0);
    int32_t where[6] = {9, 9, 4, 0, 2, 9};
    assert_mcl_ok(mcl_tensor_upload(s, 0, src, sizeof src));
    assert_mcl_ok(mcl_tensor_upload(d, 0, before, sizeof before));
    assert_mcl_ok(mcl_tensor_upload(idx, 0, where, sizeof where));
    assert_mcl_ok(mcl_scatter_rows(ctx, s, idx, 2, d));
    assert_mcl_ok(mcl_tensor_download(d, 0, dst, sizeof dst));
    int ok = 1;
    for (uint32_t r = 0; r < dst_rows; r++) {
        const float *want = r == 4 ? src : r == 0 ? src + width : r == 2 ? src + 2 * width
                                                                          : before + r * width;
        ok &= memcmp(dst + r * width, want, width * sizeof *dst) == 0;
    }
    assert_true(mcl_test_record_bool("scatter: rows into the rows named from the offset, the "
                                     "others untouched",
                                     ok));
    EXPECT_STATUS(mcl_scatter_rows(ctx, s, idx, 4, d), SHAPE);
    EXPECT_STATUS(mcl_scatter_rows(ctx, s, s, 0, d), DTYPE);
    EXPECT_STATUS(mcl_sample_rows(ctx, s, idx, MCL_SAMPLE_HEADER - 1, 1, idx), SHAPE);
    EXPECT_STATUS(mcl_sample_rows(ctx, s, idx, MCL_SAMPLE_HEADER, 1, s), DTYPE);
    EXPECT_STATUS(mcl_sample_rows(ctx, s, NULL, MCL_SAMPLE_HEADER, 1, idx), INVALID);
    assert_true(mcl_test_record("sampler and scatter: refused arguments with the expected "
                                "status",
                                "wrong statuses", mcl_test_wrong_statuses, 0));
    mcl_tensor_destroy(s);
    mcl_tensor_destroy(d);
    mcl_tensor_destroy(idx);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(against_host),
        cmocka_unit_test(repeatable_and_portable),
        cmocka_unit_test(scatter),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
