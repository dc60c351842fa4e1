/* The model fixtures (tests/model_fixtures.h) against the loader: each fixture's GGUF file and
 * Hugging Face checkpoint opened with mcl_model_open(), and every tensor the device holds
 * equal to the fixture's host values of that form, so that the reference (ref_llama) fed
 * with those values sees exactly what the device sees.
 *
 *  - Every matrix type the fixture writes (f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, q6_K),
 *    all nine matrix classes in it, llama (q and k permuted in the file); checkpoints in f32,
 *    f16 and bf16 by turns.
 *  - qwen2 with q, k, v biases, a tied head and mixed types; llama with llama 3.1's RoPE
 *    factors (rope_freqs.weight in the GGUF; computed by the loader from config.json for the
 *    checkpoint) and mixed types.
 *  - Each file's description (architecture, shape, epsilon, theta, tied, biases, scaling)
 *    as the fixture asked, and the fixture's vocabulary tokenizing and decoding a text.
 *  - The fixture's host values alone (no device needed): f32 files hold the generated values
 *    bit for bit, other types mcl_dequantize(mcl_quantize(row)) (or the f16/bf16 rounding) of
 *    each generated row computed in Hugging Face's order; a block that does not divide the
 *    rows is refused.
 *
 * Tolerances: none, except the checkpoint's rope_freqs.weight, which the loader computes on
 * its own from config.json: max relative difference 1e-6 from the fixture's factors (both
 * compute in double and round to float; they may differ by one float rounding). f32 tensors
 * are compared bit for bit; block-quantised ones after the host dequantizer, bit for bit.
 * Negative controls: q in the file's (permuted) order, the generated values before
 * quantization, and another seed's values all fail the same comparison. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "io/gguf.h"
#include "model_fixtures.h"

static mcl_context *ctx;

static int64_t numel(const model_fixture_tensor *w)
{
    return w->ndim > 1 ? w->shape[0] * w->shape[1] : w->shape[0];
}

/* The device type of a tensor of the GGUF form (block types as they are, the rest f32). */
static mcl_dtype gguf_dtype(const model_fixture_tensor *w)
{
    int d = mcl_ggml_type_dtype(w->gguf_type);
    return d > (int)MCL_DTYPE_U8 ? (mcl_dtype)d : MCL_DTYPE_F32;
}

/* The device tensor of w's name as f32 (block types dequantized on the host), malloc'd; NULL
 * when it is absent or not of type `dtype`. */
static float *device_values(mcl_model *model, const model_fixture_tensor *w, mcl_dtype dtype)
{
    mcl_tensor *t = mcl_model_find_tensor(model, w->name);
    if (!t || mcl_tensor_dtype(t) != dtype)
        return NULL;
    int64_t n = numel(w);
    uint64_t bytes = mcl_tensor_nbytes(t);
    unsigned char *raw = malloc((size_t)bytes);
    float *got = malloc((size_t)n * sizeof *got);
    assert_non_null(raw);
    assert_non_null(got);
    assert_mcl_ok(mcl_tensor_download(t, 0, raw, bytes));
    if (dtype == MCL_DTYPE_F32) {
        assert_int_equal(bytes, (uint64_t)n * sizeof *got);
        memcpy(got, raw, (size_t)bytes);
    } else {
        assert_mcl_ok(mcl_dequantize(dtype, raw, got, n));
    }
    free(raw);
    return got;
}

static int holds(mcl_model *model, const model_fixture_tensor *w, const float *want,
                 mcl_dtype dtype)
{
    float *got = device_values(model, w, dtype);
    int same = got && memcmp(got, want, (size_t)numel(w) * sizeof *got) == 0;
    free(got);
    return same;
}

/* The file's description as the fixture asked. */
static int described(mcl_model *model, const model_fixture *f)
{
    const model_fixture_desc *d = &f->desc;
    mcl_model_info in = {.size = sizeof in};
    assert_mcl_ok(mcl_model_file_info(model, &in));
    return strcmp(in.architecture, d->arch) == 0 && in.dim == (uint32_t)d->dim &&
           in.layers == (uint32_t)d->layers && in.heads == (uint32_t)d->heads &&
           in.kv_heads == (uint32_t)d->kv_heads && in.head_dim == (uint32_t)d->head_dim &&
           in.hidden == (uint32_t)d->hidden && in.vocab == (uint32_t)d->vocab &&
           in.norm_eps == d->norm_eps && in.rope_theta == d->rope_theta &&
           in.tied_output == (uint32_t)d->tied && in.qkv_bias == (uint32_t)d->qkv_bias &&
           in.rope_scaling == (d->rope_factor > 0.0f ? MCL_ROPE_SCALING_LLAMA3
                                                     : MCL_ROPE_SCALING_NONE) &&
           mcl_model_tensor_count(model) == (uint32_t)f->count;
}

/* Write both forms of the fixture, open them, compare every tensor. */
static int check_fixture(const model_fixture_desc *desc, const char *label)
{
    model_fixture f;
    assert_mcl_ok(model_fixture_create(desc, &f));
    char gguf[256], folder[256], name[160];
    snprintf(gguf, sizeof gguf, "%s/%s.gguf", mcl_test_scratch_dir(), label);
    snprintf(folder, sizeof folder, "%s/%s", mcl_test_scratch_dir(), label);
    assert_int_equal(mkdir(folder, 0700), 0);
    assert_mcl_ok(model_fixture_write_gguf(&f, gguf));
    assert_mcl_ok(model_fixture_write_checkpoint(&f, folder));
    mcl_model *a = NULL, *b = NULL;
    assert_mcl_ok(mcl_model_open(ctx, gguf, NULL, &a));
    assert_mcl_ok(mcl_model_open(ctx, folder, NULL, &b));
    int ok = 1, from_gguf = 1, from_hf = 1;
    double freqs = 0.0;
    for (int i = 0; i < f.count; i++) {
        const model_fixture_tensor *w = &f.tensors[i];
        int in_gguf = holds(a, w, w->gguf, gguf_dtype(w));
        int in_hf = !w->hf || holds(b, w, w->hf, MCL_DTYPE_F32);
        if (!in_gguf || !in_hf)
            fprintf(stderr, "%s: %s differs in the %s\n", label, w->name,
                    in_gguf ? "checkpoint" : "gguf");
        from_gguf &= in_gguf;
        from_hf &= in_hf;
        if (w->hf)
            continue;
        float *got = device_values(b, w, MCL_DTYPE_F32); /* rope_freqs.weight */
        assert_non_null(got);
        for (int64_t j = 0; j < numel(w); j++)
            freqs = fmax(freqs, fabs((double)got[j] - w->gguf[j]) / w->gguf[j]);
        free(got);
    }
    snprintf(name, sizeof name, "%s: gguf: every tensor = the fixture's GGUF values", label);
    ok &= mcl_test_record_bool(name, from_gguf);
    snprintf(name, sizeof name, "%s: checkpoint: every tensor = the fixture's values", label);
    ok &= mcl_test_record_bool(name, from_hf);
    snprintf(name, sizeof name, "%s: both files described as asked", label);
    ok &= mcl_test_record_bool(name, described(a, &f) && described(b, &f));
    if (f.rope_freqs) {
        snprintf(name, sizeof name, "%s: checkpoint's rope_freqs against the fixture's", label);
        ok &= mcl_test_record(name, "max relative difference", freqs, 1e-6);
    }
    /* The fixture's vocabulary through the model. */
    const char *text = "hello world, 42!";
    int32_t ids[64];
    uint32_t count = 0;
    char back[64];
    mcl_model_info in = {.size = sizeof in};
    assert_mcl_ok(mcl_model_file_info(a, &in));
    assert_mcl_ok(mcl_model_tokenize(a, text, strlen(text), MCL_TOKENIZE_ADD_BOS, ids, 64,
                                     &count));
    assert_mcl_ok(mcl_model_detokenize(a, ids, count, back, sizeof back, NULL));
    snprintf(name, sizeof name, "%s: the fixture's tokenizer round-trips a text", label);
    ok &= mcl_test_record_bool(name, strcmp(in.tokenizer, "llama") == 0 && ids[0] == 1 &&
                                         strcmp(back, text) == 0);

    /* Negative controls on the same comparison. */
    const model_fixture_tensor *q = model_fixture_find(&f, "blk.0.attn_q.weight");
    if (q->permute_heads) {
        float *file = malloc((size_t)numel(q) * sizeof *file);
        assert_non_null(file);
        model_fixture_permute(q->gguf, file, q->shape[0], q->shape[1], q->permute_heads);
        snprintf(name, sizeof name, "%s: negative control: q in the file's order differs",
                 label);
        ok &= mcl_test_record_bool(name, !holds(a, q, file, gguf_dtype(q)));
        free(file);
    }
    if (gguf_dtype(q) != MCL_DTYPE_F32) {
        snprintf(name, sizeof name, "%s: negative control: q before quantization differs",
                 label);
        ok &= mcl_test_record_bool(name, !holds(a, q, q->source, gguf_dtype(q)));
    }
    model_fixture_desc other = f.desc;
    other.seed++;
    model_fixture g;
    assert_mcl_ok(model_fixture_create(&other, &g));
    snprintf(name, sizeof name, "%s: negative control: another seed's values differ", label);
    ok &= mcl_test_record_bool(name, !holds(a, &g.tensors[g.count - 1],
                                            g.tensors[g.count - 1].gguf,
                                            gguf_dtype(&g.tensors[g.count - 1])));
    model_fixture_free(&g);
    mcl_model_close(a);
    mcl_model_close(b);
    model_fixture_free(&f);
    return ok;
}

static void every_type(void **state)
{
    (void)state;
    static const struct {
        uint32_t type;
        const char *label;
    } types[] = {{MCL_GGML_F32, "f32"},   {MCL_GGML_F16, "f16"},   {MCL_GGML_BF16, "bf16"},
                 {MCL_GGML_Q8_0, "q8_0"}, {MCL_GGML_Q4_0, "q4_0"}, {MCL_GGML_Q4_K, "q4_K"},
                 {MCL_GGML_Q5_K, "q5_K"}, {MCL_GGML_Q6_K, "q6_K"}};
    static const uint32_t hf_types[3] = {MCL_GGML_F32, MCL_GGML_F16, MCL_GGML_BF16};
    int ok = 1;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        model_fixture_desc d = {.dim = 256, .layers = 1, .heads = 4, .kv_heads = 2,
                                .hidden = 512, .vocab = 80, .seed = 20 + (uint32_t)t,
                                .hf_type = hf_types[t % 3]};
        for (int c = 0; c < FIXTURE_CLASSES; c++)
            d.gguf_type[c] = types[t].type;
        char label[32];
        snprintf(label, sizeof label, "llama-%s", types[t].label);
        ok &= check_fixture(&d, label);
    }
    assert_true(ok);
}

static void qwen2_biases_tied_mixed(void **state)
{
    (void)state;
    model_fixture_desc d = {.arch = "qwen2", .dim = 256, .layers = 2, .heads = 4,
                            .kv_heads = 1, .hidden = 512, .vocab = 96, .tied = 1,
                            .qkv_bias = 1, .rope_theta = 1000000.0f, .norm_eps = 1e-6f,
                            .seed = 31, .hf_type = MCL_GGML_BF16,
                            .gguf_type = {MCL_GGML_Q8_0, MCL_GGML_F16, MCL_GGML_Q4_K,
                                          MCL_GGML_Q6_K, MCL_GGML_Q5_K, MCL_GGML_Q4_0,
                                          MCL_GGML_BF16, MCL_GGML_Q8_0, MCL_GGML_F32}};
    assert_true(check_fixture(&d, "qwen2-mixed"));
}

static void llama3_rope_factors_mixed(void **state)
{
    (void)state;
    model_fixture_desc d = {.dim = 256, .layers = 2, .heads = 8, .kv_heads = 2,
                            .hidden = 768, .vocab = 70, .rope_theta = 500000.0f,
                            .rope_factor = 8.0f, .context = 4096, .seed = 32,
                            .hf_type = MCL_GGML_F16,
                            .gguf_type = {MCL_GGML_Q6_K, MCL_GGML_Q4_K, MCL_GGML_Q8_0,
                                          MCL_GGML_F16, MCL_GGML_Q4_0, MCL_GGML_Q5_K,
                                          MCL_GGML_F32, MCL_GGML_Q6_K, MCL_GGML_Q8_0}};
    assert_true(check_fixture(&d, "llama3-mixed"));
}

/* The host values on their own: each form's values are the generated ones through its type,
 * computed here row by row in Hugging Face's order (for the GGUF, the permutation then
 * cancels: blocks never span rows). */
static void fixture_values(void **state)
{
    (void)state;
    static const uint32_t types[] = {MCL_GGML_F32,  MCL_GGML_F16,  MCL_GGML_BF16,
                                     MCL_GGML_Q8_0, MCL_GGML_Q4_0, MCL_GGML_Q4_K,
                                     MCL_GGML_Q5_K, MCL_GGML_Q6_K};
    int ok = 1, exact_f32 = 1, moved = 1;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        model_fixture_desc d = {.dim = 256, .layers = 1, .heads = 4, .kv_heads = 2,
                                .hidden = 256, .vocab = 8, .seed = 9, .qkv_bias = 1,
                                .hf_type = types[t % 3]};
        for (int c = 0; c < FIXTURE_CLASSES; c++)
            d.gguf_type[c] = types[t];
        model_fixture f;
        assert_mcl_ok(model_fixture_create(&d, &f));
        for (int i = 0; i < f.count; i++) {
            const model_fixture_tensor *w = &f.tensors[i];
            int64_t k = w->ndim > 1 ? w->shape[1] : w->shape[0];
            int64_t n = w->ndim > 1 ? w->shape[0] * k : k;
            uint64_t bytes = 0;
            float *want = malloc((size_t)n * sizeof *want);
            assert_non_null(want);
            /* in Hugging Face's order: each row through the file's type */
            unsigned char *data = model_fixture_encode(w->gguf_type, w->source, n / k, k,
                                                       &bytes);
            assert_non_null(data);
            assert_mcl_ok(model_fixture_decode(w->gguf_type, data, n, want));
            ok &= memcmp(want, w->gguf, (size_t)n * sizeof *want) == 0;
            free(data);
            data = model_fixture_encode(d.hf_type, w->source, n / k, k, &bytes);
            assert_mcl_ok(model_fixture_decode(d.hf_type, data, n, want));
            ok &= memcmp(want, w->hf, (size_t)n * sizeof *want) == 0;
            free(data);
            free(want);
            if (w->gguf_type == MCL_GGML_F32)
                exact_f32 &= memcmp(w->source, w->gguf, (size_t)n * sizeof(float)) == 0;
            else
                moved &= memcmp(w->source, w->gguf, (size_t)n * sizeof(float)) != 0;
        }
        ok &= f.gguf_ref.blk[0].attn_q == model_fixture_find(&f, "blk.0.attn_q.weight")->gguf;
        ok &= f.hf_ref.blk[0].attn_q == model_fixture_find(&f, "blk.0.attn_q.weight")->hf;
        model_fixture_free(&f);
    }
    ok &= mcl_test_record_bool("fixture: f32 tensors hold the generated values", exact_f32);
    ok &= mcl_test_record_bool("control: other types change them", moved);
    /* a type whose block does not divide the rows is refused */
    model_fixture_desc d = {.dim = 96, .layers = 1, .heads = 2, .hidden = 96, .vocab = 8};
    d.gguf_type[FIXTURE_FFN_DOWN] = MCL_GGML_Q4_K;
    model_fixture f;
    ok &= model_fixture_create(&d, &f) == MCL_ERROR_INVALID_ARGUMENT && f.count == 0;
    assert_true(mcl_test_record_bool("fixture: each form's values through its types", ok));
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixture_values),
        cmocka_unit_test(every_type),
        cmocka_unit_test(qwen2_biases_tied_mixed),
        cmocka_unit_test(llama3_rope_factors_mixed),
    };
    return mcl_test_finish(
        cmocka_run_group_tests(tests, mcl_test_scratch_setup, mcl_test_scratch_teardown));
}
