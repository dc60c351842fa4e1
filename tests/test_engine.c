/* Inference sessions (src/engine) against the double-precision reference (tests/ref/ref_llama)
 * on tiny random models written by the fixtures (tests/model_fixtures.h):
 *
 *  - logits of a prompt and of every decode step after it, for f32 weights and for each
 *    block type (the embedding and every matrix in it), GQA and MQA, tied and untied, qwen2
 *    with biases, llama 3.1's RoPE scaling, from the GGUF file and from the Hugging Face
 *    checkpoint;
 *  - the same f32 model from GGUF and from safetensors gives the same logits;
 *  - an f16 cache, against the reference to 2e-3;
 *  - decode through the cache equals the engine's own recompute of the whole sequence;
 *  - sequences decoded as one batch equal each decoded alone, and emptying one leaves the
 *    others as they were;
 *  - decode steps replayed from a recording equal the same steps recorded op by op;
 *  - greedy generation repeats itself, and a seeded draw too;
 *  - statuses: the context filling up, a prompt longer than the context, no tokens, a token
 *    outside the vocabulary, sampling before feeding, a model without weights, a cache over
 *    the budget, what the engine does not run yet.
 *
 * Error: relative RMS, sqrt(sum (gpu - ref)^2 / sum ref^2), over a pass's logits. Tolerances:
 * 1e-4 with f32 weights (f32 arithmetic over a few hundred terms); 3e-2 with block weights,
 * which on devices with integer dot products multiply activations quantized to 8 bits per 32
 * values (about 0.4% each) and, for more than 8 rows where the device has cooperative matrices,
 * activations and weights rounded to f16 (the float path, which devices without those take,
 * is held to 1e-4 as f32 weights are). Controls: the reference with RoPE on interleaved pairs
 * (the other layout), and of the prompt less its first token, exceed the tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "engine/engine_internal.h"
#include "io/gguf.h"
#include "model_fixtures.h"
#include "vk/inspect.h"

static mcl_context *ctx;

#define TOL_F32 1e-4
#define TOL_APPROX 3e-2
#define TOL_F16KV 2e-3

/* The tolerance of block weights on this device: TOL_APPROX where a path that rounds the
 * activations runs, else TOL_F32. */
static double tol_quant(void)
{
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    uint64_t approx = MCL_FEATURE_INTEGER_DOT_ACCELERATED | MCL_FEATURE_COOPERATIVE_MATRIX;
    /* The integer-dot path (chosen where it is accelerated, or forced) quantizes activations. */
    const char *path = getenv("MOTIFCL_QUANT_PATH");
    int forced_dot = path && strcmp(path, "dot") == 0;
    return (info.features_enabled & approx) || forced_dot ? TOL_APPROX : TOL_F32;
}
#define PROMPT 11
#define STEPS 5

static const int32_t prompt[PROMPT] = {1, 17, 42, 99, 5, 63, 64, 2, 17, 80, 33};
static const int32_t steps[STEPS] = {7, 120, 3, 55, 17};

static model_fixture_desc base_desc(void)
{
    model_fixture_desc d = {0};
    d.dim = 256;
    d.layers = 2;
    d.heads = 4;
    d.kv_heads = 2;
    d.hidden = 512;
    d.vocab = 128;
    d.rope_theta = 10000.0f;
    d.context = 64;
    d.seed = 11;
    return d;
}

static double rel_rms_f(const float *got, const float *want, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)want[i];
        num += d * d;
        den += (double)want[i] * (double)want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Open path (a GGUF file or a checkpoint folder). */
static mcl_model *open_model(const char *path)
{
    mcl_model *m = NULL;
    assert_mcl_ok(mcl_model_open(ctx, path, NULL, &m));
    return m;
}

/* The cache type of the sessions the tests make (f16_cache switches it). */
static mcl_dtype cache_type = MCL_DTYPE_F32;

static mcl_session *session(mcl_model *m, uint32_t sequences)
{
    mcl_session_desc d = {.size = sizeof d, .sequences = sequences, .batch_tokens = 16,
                          .kv_type = cache_type};
    mcl_session *s = NULL;
    assert_mcl_ok(mcl_session_create(m, &d, &s));
    return s;
}

/* The prompt and then each step, through the engine and through the reference; returns the
 * worst error and records each pass. With `control`, also the reference of a model with
 * another RoPE base and of the prompt shifted by one, which must both be worse than tol. */
static double against_reference(const char *label, const char *path, const ref_llama *ref,
                                double tol, int control)
{
    uint32_t vocab = (uint32_t)ref->vocab;
    mcl_model *m = open_model(path);
    mcl_session *s = session(m, 1);
    float *got = malloc(vocab * sizeof *got);
    double *want = malloc((size_t)(PROMPT + STEPS) * vocab * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    int32_t all[PROMPT + STEPS];
    memcpy(all, prompt, sizeof prompt);
    memcpy(all + PROMPT, steps, sizeof steps);
    assert_int_equal(ref_llama_forward(ref, all, PROMPT + STEPS, want), 0);

    assert_mcl_ok(mcl_session_feed(s, 0, prompt, PROMPT, got));
    double worst = model_fixture_rel_rms(got, want + (size_t)(PROMPT - 1) * vocab, vocab);
    char name[200];
    snprintf(name, sizeof name, "%s: prompt of %d tokens", label, PROMPT);
    assert_true(mcl_test_record(name, "relative rms", worst, tol));
    if (control) {
        ref_llama other = *ref;
        other.rope_interleaved = 1;
        double *alt = malloc((size_t)PROMPT * vocab * sizeof *alt);
        assert_int_equal(ref_llama_forward(&other, prompt, PROMPT, alt), 0);
        double e1 = model_fixture_rel_rms(got, alt + (size_t)(PROMPT - 1) * vocab, vocab);
        assert_int_equal(ref_llama_forward(ref, prompt + 1, PROMPT - 1, alt), 0);
        double e2 = model_fixture_rel_rms(got, alt + (size_t)(PROMPT - 2) * vocab, vocab);
        snprintf(name, sizeof name, "%s: control, RoPE on interleaved pairs (%.3g) and the "
                                    "prompt less its first token (%.3g) exceed the tolerance",
                 label, e1, e2);
        assert_true(mcl_test_record_bool(name, e1 > tol && e2 > tol));
        free(alt);
    }
    for (int t = 0; t < STEPS; t++) {
        assert_mcl_ok(mcl_session_feed(s, 0, &steps[t], 1, got));
        double e = model_fixture_rel_rms(got, want + (size_t)(PROMPT + t) * vocab, vocab);
        snprintf(name, sizeof name, "%s: decode step at position %d", label, PROMPT + t);
        assert_true(mcl_test_record(name, "relative rms", e, tol));
        if (e > worst)
            worst = e;
    }
    free(got);
    free(want);
    mcl_session_destroy(s);
    mcl_model_close(m);
    return worst;
}

static void write_both(const model_fixture *f, const char *name, char *gguf, char *ckpt)
{
    snprintf(gguf, 256, "%s/%s.gguf", mcl_test_scratch_dir(), name);
    snprintf(ckpt, 256, "%s/%s", mcl_test_scratch_dir(), name);
    mkdir(ckpt, 0700);
    assert_mcl_ok(model_fixture_write_gguf(f, gguf));
    assert_mcl_ok(model_fixture_write_checkpoint(f, ckpt));
}

static void float_models(void **state)
{
    (void)state;
    char gguf[256], ckpt[256];
    /* heads 0: base_desc's 4 (head dim 64); 2 makes head dim 128, where the decode
     * attention takes its narrower default workgroup. */
    struct {
        const char *label, *arch;
        int heads, kv_heads, tied, bias;
    } cases[] = {
        {"llama f32, GQA 4/2, untied", "llama", 0, 2, 0, 0},
        {"llama f32, MQA 4/1, tied", "llama", 0, 1, 1, 0},
        {"qwen2 f32, GQA 4/2, biases", "qwen2", 0, 2, 0, 1},
        {"llama f32, MQA 2/1, head dim 128", "llama", 2, 1, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        model_fixture_desc d = base_desc();
        d.arch = cases[c].arch;
        d.heads = cases[c].heads ? cases[c].heads : d.heads;
        d.kv_heads = cases[c].kv_heads;
        d.tied = cases[c].tied;
        d.qkv_bias = cases[c].bias;
        model_fixture f;
        assert_mcl_ok(model_fixture_create(&d, &f));
        write_both(&f, "float", gguf, ckpt);
        char label[160];
        snprintf(label, sizeof label, "%s, GGUF", cases[c].label);
        against_reference(label, gguf, &f.gguf_ref, TOL_F32, c == 0);
        snprintf(label, sizeof label, "%s, checkpoint", cases[c].label);
        against_reference(label, ckpt, &f.hf_ref, TOL_F32, 0);
        model_fixture_free(&f);
    }
}

/* An f16 cache: f32 weights, GQA, the prompt and each decode step against the reference to
 * TOL_F16KV: k and v rounded to f16 (a relative error of up to 2^-11 each) moved the logits
 * by 2e-4 to 4e-4 relative on Lavapipe. Control: the f32 cache's logits differ from the f16
 * cache's (the cache type is in effect). */
static void f16_cache(void **state)
{
    (void)state;
    char gguf[256], ckpt[256];
    model_fixture_desc d = base_desc();
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    write_both(&f, "f16cache", gguf, ckpt);
    cache_type = MCL_DTYPE_F16;
    double e = against_reference("llama f32 weights, f16 cache, GGUF", gguf, &f.gguf_ref,
                                 TOL_F16KV, 0);
    mcl_model *m = open_model(gguf);
    mcl_session *half = session(m, 1);
    cache_type = MCL_DTYPE_F32;
    mcl_session *full = session(m, 1);
    const uint32_t vocab = (uint32_t)d.vocab;
    float *a = malloc(vocab * 4), *b = malloc(vocab * 4);
    assert_non_null(a);
    assert_non_null(b);
    assert_mcl_ok(mcl_session_feed(half, 0, prompt, PROMPT, a));
    assert_mcl_ok(mcl_session_feed(full, 0, prompt, PROMPT, b));
    for (int t = 0; t < STEPS; t++) {
        assert_mcl_ok(mcl_session_feed(half, 0, &steps[t], 1, a));
        assert_mcl_ok(mcl_session_feed(full, 0, &steps[t], 1, b));
    }
    double diff = rel_rms_f(a, b, vocab);
    char name[160];
    snprintf(name, sizeof name, "f16 cache: control, the f32 cache's logits differ (%.3g; the "
                                "error against the reference %.3g)", diff, e);
    assert_true(mcl_test_record_bool(name, diff > 1e-7));
    free(a);
    free(b);
    mcl_session_destroy(half);
    mcl_session_destroy(full);
    mcl_model_close(m);
    model_fixture_free(&f);
}

/* Llama 3.1's RoPE scaling (per-pair divisors, rope_freqs.weight), with an original context
 * short enough that the test's positions turn the scaled pairs. Control: the reference
 * without the divisors exceeds the tolerance. */
static void llama3_scaling(void **state)
{
    (void)state;
    model_fixture_desc d = base_desc();
    d.rope_factor = 8.0f;
    d.rope_low_freq_factor = 1.0f;
    d.rope_high_freq_factor = 4.0f;
    d.rope_original_context = 32;
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    char gguf[256], ckpt[256];
    write_both(&f, "llama3", gguf, ckpt);
    against_reference("llama f32, llama 3.1 RoPE scaling, GGUF", gguf, &f.gguf_ref, TOL_F32,
                      0);
    against_reference("llama f32, llama 3.1 RoPE scaling, checkpoint", ckpt, &f.hf_ref,
                      TOL_F32, 0);
    /* The control: the same model's reference without the divisors. */
    uint32_t vocab = (uint32_t)d.vocab;
    mcl_model *m = open_model(gguf);
    mcl_session *s = session(m, 1);
    float *got = malloc(vocab * sizeof *got);
    double *want = malloc((size_t)PROMPT * vocab * sizeof *want);
    assert_mcl_ok(mcl_session_feed(s, 0, prompt, PROMPT, got));
    ref_llama plain = f.gguf_ref;
    plain.rope_freqs = NULL;
    assert_int_equal(ref_llama_forward(&plain, prompt, PROMPT, want), 0);
    double e = model_fixture_rel_rms(got, want + (size_t)(PROMPT - 1) * vocab, vocab);
    char name[160];
    snprintf(name, sizeof name, "llama 3.1 RoPE scaling: control, the reference without the "
                                "divisors (%.3g) exceeds the tolerance", e);
    assert_true(mcl_test_record_bool(name, e > TOL_F32));
    free(got);
    free(want);
    mcl_session_destroy(s);
    mcl_model_close(m);
    model_fixture_free(&f);
}

static void block_models(void **state)
{
    (void)state;
    static const struct {
        uint32_t type;
        const char *name;
    } types[] = {{MCL_GGML_Q8_0, "q8_0"}, {MCL_GGML_Q4_0, "q4_0"}, {MCL_GGML_Q4_K, "q4_K"},
                 {MCL_GGML_Q5_K, "q5_K"}, {MCL_GGML_Q6_K, "q6_K"}};
    char gguf[256], ckpt[256];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        model_fixture_desc d = base_desc();
        d.tied = i % 2 == 1;
        for (int c = 0; c < FIXTURE_CLASSES; c++)
            d.gguf_type[c] = types[i].type;
        model_fixture f;
        assert_mcl_ok(model_fixture_create(&d, &f));
        write_both(&f, types[i].name, gguf, ckpt);
        char label[160];
        snprintf(label, sizeof label, "llama %s (embedding and every matrix), %s, GGUF",
                 types[i].name, d.tied ? "tied" : "untied");
        against_reference(label, gguf, &f.gguf_ref, tol_quant(), i == 0);
        model_fixture_free(&f);
    }
}

/* The same f32 weights from GGUF (permuted q and k) and from safetensors: the same logits. */
static void gguf_and_checkpoint(void **state)
{
    (void)state;
    model_fixture_desc d = base_desc();
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    char gguf[256], ckpt[256];
    write_both(&f, "same", gguf, ckpt);
    uint32_t vocab = (uint32_t)d.vocab;
    float *a = malloc(vocab * sizeof *a), *b = malloc(vocab * sizeof *b);
    mcl_model *ma = open_model(gguf), *mb = open_model(ckpt);
    mcl_session *sa = session(ma, 1), *sb = session(mb, 1);
    assert_mcl_ok(mcl_session_feed(sa, 0, prompt, PROMPT, a));
    assert_mcl_ok(mcl_session_feed(sb, 0, prompt, PROMPT, b));
    double e = rel_rms_f(a, b, vocab);
    assert_true(mcl_test_record("GGUF and checkpoint of the same f32 model: prompt logits",
                                "relative rms", e, 1e-6));
    mcl_session_destroy(sa);
    mcl_session_destroy(sb);
    mcl_model_close(ma);
    mcl_model_close(mb);
    free(a);
    free(b);
    model_fixture_free(&f);
}

/* A model file for the tests below: f32 weights (exact comparisons), or q4_0. */
static void small_model(char *path, uint32_t type)
{
    model_fixture_desc d = base_desc();
    for (int c = 0; c < FIXTURE_CLASSES; c++)
        d.gguf_type[c] = type;
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    snprintf(path, 256, "%s/small-%u.gguf", mcl_test_scratch_dir(), type);
    assert_mcl_ok(model_fixture_write_gguf(&f, path));
    model_fixture_free(&f);
}

/* Each decode step against a new session's prompt of the whole sequence. */
static void decode_equals_recompute(void **state)
{
    (void)state;
    char path[256];
    small_model(path, MCL_GGML_F32);
    mcl_model *m = open_model(path);
    mcl_session *s = session(m, 2);
    uint32_t vocab = 128;
    float *step = malloc(vocab * 4), *full = malloc(vocab * 4);
    int32_t all[PROMPT + STEPS];
    memcpy(all, prompt, sizeof prompt);
    memcpy(all + PROMPT, steps, sizeof steps);
    assert_mcl_ok(mcl_session_feed(s, 0, prompt, PROMPT, step));
    double worst = 0.0;
    for (int t = 0; t < STEPS; t++) {
        assert_mcl_ok(mcl_session_feed(s, 0, &steps[t], 1, step));
        assert_mcl_ok(mcl_session_reset(s, 1));
        assert_mcl_ok(mcl_session_feed(s, 1, all, PROMPT + t + 1, full));
        double e = rel_rms_f(step, full, vocab);
        worst = e > worst ? e : worst;
    }
    assert_true(mcl_test_record("decode through the cache against recomputing the sequence",
                                "relative rms", worst, 1e-5));
    free(step);
    free(full);
    mcl_session_destroy(s);
    mcl_model_close(m);
}

/* Three sequences at different lengths, decoded as a batch, against each decoded alone; then
 * one is emptied and refilled while the others go on. */
static void batch_equals_alone(void **state)
{
    (void)state;
    char path[256];
    small_model(path, MCL_GGML_Q4_0);
    mcl_model *m = open_model(path);
    mcl_session *batch = session(m, 3), *alone = session(m, 1);
    const uint32_t vocab = 128, lengths[3] = {4, 11, 7};
    float *b = malloc(3 * vocab * 4), *a = malloc(vocab * 4);
    int32_t next[3][STEPS + 1];
    for (uint32_t q = 0; q < 3; q++)
        assert_mcl_ok(mcl_session_feed(batch, q, prompt, lengths[q], NULL));
    uint32_t seqs[3] = {0, 1, 2};
    for (int t = 0; t < STEPS; t++) {
        int32_t tok[3];
        for (uint32_t q = 0; q < 3; q++)
            tok[q] = steps[(t + q) % STEPS];
        assert_mcl_ok(mcl_session_feed_batch(batch, seqs, tok, 3, b));
        for (uint32_t q = 0; q < 3; q++)
            assert_mcl_ok(mcl_session_sample(batch, q, NULL, &next[q][t]));
    }
    double worst = 0.0;
    int same_tokens = 1;
    for (uint32_t q = 0; q < 3; q++) {
        assert_mcl_ok(mcl_session_reset(alone, 0));
        assert_mcl_ok(mcl_session_feed(alone, 0, prompt, lengths[q], NULL));
        for (int t = 0; t < STEPS; t++) {
            int32_t tok = steps[(t + q) % STEPS], pick;
            assert_mcl_ok(mcl_session_feed(alone, 0, &tok, 1, a));
            assert_mcl_ok(mcl_session_sample(alone, 0, NULL, &pick));
            same_tokens &= pick == next[q][t];
        }
        double e = rel_rms_f(b + (size_t)q * vocab, a, vocab); /* the batch's last logits */
        worst = e > worst ? e : worst;
    }
    assert_true(mcl_test_record("three sequences as one batch against each alone (q4_0)",
                                "relative rms", worst, 1e-5));
    assert_true(mcl_test_record_bool("the batch's greedy tokens are each sequence's alone",
                                     same_tokens));
    /* Emptying sequence 1 leaves 0 and 2 as they were. */
    uint32_t l0 = mcl_session_length(batch, 0), l2 = mcl_session_length(batch, 2);
    assert_mcl_ok(mcl_session_reset(batch, 1));
    assert_mcl_ok(mcl_session_feed(batch, 1, steps, 3, NULL));
    int32_t tok = 9;
    uint32_t two[2] = {0, 2};
    int32_t toks[2] = {tok, tok};
    assert_mcl_ok(mcl_session_feed_batch(batch, two, toks, 2, b));
    /* `alone` holds sequence 2 as the loop above left it, built pass for pass as the batch's
     * (so on the same paths: a prompt pass takes others than a decode step's, which round
     * the activations differently on devices with integer dot products). */
    assert_mcl_ok(mcl_session_feed(alone, 0, &tok, 1, a));
    double e = rel_rms_f(b + vocab, a, vocab);
    int kept = mcl_session_length(batch, 0) == l0 + 1 && mcl_session_length(batch, 2) == l2 + 1 &&
               mcl_session_length(batch, 1) == 3;
    assert_true(mcl_test_record("a sequence after another is emptied and refilled",
                                "relative rms", e, 1e-5));
    assert_true(mcl_test_record_bool("lengths after emptying one sequence", kept));
    free(a);
    free(b);
    mcl_session_destroy(batch);
    mcl_session_destroy(alone);
    mcl_model_close(m);
}

/* Decode steps replay a recording that reads its positions from the device; with the trait
 * MOTIFCL_ENGINE_EAGER sets, they are recorded op by op with the positions in the recording.
 * Four sequences decoded in turn as each of the 15 non-empty subsets, more than the session
 * keeps recorded where each set is its own (the caches a tensor per sequence, also run
 * here), so recordings are dropped and made again, at lengths from 1 to 300 of a
 * cache of 512 (recorded for all 512, so slices past a length run empty): the two ways give
 * the same logits. Control: each step's logits against the eager session's of the step before. */
static void recorded_steps(void **state)
{
    (void)state;
    /* A context of 512 cuts the cache into several key slices, some past every length. */
    model_fixture_desc d = base_desc();
    d.context = 512;
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    char path[256];
    snprintf(path, sizeof path, "%s/long.gguf", mcl_test_scratch_dir());
    assert_mcl_ok(model_fixture_write_gguf(&f, path));
    model_fixture_free(&f);
    mcl_model *m = open_model(path);
    mcl_session *rec = session(m, 4);
    mcl_inspect_traits(ctx)->engine_eager = 1;
    mcl_session *eager = session(m, 4);
    mcl_inspect_traits(ctx)->engine_eager = 0;
    /* A binding too small for all sequences' caches: one cache tensor per sequence, and the
     * steps' RoPE and attention one dispatch per row. */
    uint64_t part = mcl_inspect_traits(ctx)->weight_part_bytes;
    mcl_inspect_traits(ctx)->weight_part_bytes = 1u << 16;
    mcl_session *apart = session(m, 4);
    mcl_inspect_traits(ctx)->weight_part_bytes = part;
    const uint32_t vocab = 128, lengths[4] = {3, 300, 1, 130};
    int32_t text[300];
    for (uint32_t i = 0; i < 300; i++)
        text[i] = (int32_t)((i * 37 + 5) % vocab);
    float *a = malloc(4 * vocab * 4), *b = malloc(4 * vocab * 4), *prev = malloc(4 * vocab * 4);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(prev);
    for (uint32_t q = 0; q < 4; q++) {
        assert_mcl_ok(mcl_session_feed(rec, q, text, lengths[q], NULL));
        assert_mcl_ok(mcl_session_feed(eager, q, text, lengths[q], NULL));
        assert_mcl_ok(mcl_session_feed(apart, q, text, lengths[q], NULL));
    }
    double worst = 0.0, worst_apart = 0.0, control = INFINITY;
    for (uint32_t round = 0; round < 2; round++) {
        for (uint32_t set = 1; set < 16; set++) {
            uint32_t seqs[4], n = 0;
            int32_t tok[4];
            for (uint32_t q = 0; q < 4; q++)
                if (set & (1u << q)) {
                    seqs[n] = q;
                    tok[n] = steps[(set + q + round) % STEPS];
                    n++;
                }
            assert_mcl_ok(mcl_session_feed_batch(rec, seqs, tok, n, a));
            assert_mcl_ok(mcl_session_feed_batch(eager, seqs, tok, n, b));
            double e = rel_rms_f(a, b, (size_t)n * vocab);
            worst = e > worst ? e : worst;
            assert_mcl_ok(mcl_session_feed_batch(apart, seqs, tok, n, a));
            e = rel_rms_f(a, b, (size_t)n * vocab);
            worst_apart = e > worst_apart ? e : worst_apart;
            if (set > 1) {
                double c = rel_rms_f(a, prev, vocab);
                control = c < control ? c : control;
            }
            memcpy(prev, b, vocab * 4);
        }
    }
    assert_true(mcl_test_record("decode steps replayed against recorded op by op (f32)",
                                "relative rms", worst, 1e-5));
    assert_true(mcl_test_record("decode steps over a cache tensor per sequence against "
                                "recorded op by op (f32)", "relative rms", worst_apart, 1e-5));
    char name[160];
    snprintf(name, sizeof name, "recorded steps: control, against the step before (%.3g) "
                                "exceeds the tolerance", control);
    assert_true(mcl_test_record_bool(name, control > 1e-5));
    free(a);
    free(b);
    free(prev);
    mcl_session_destroy(rec);
    mcl_session_destroy(eager);
    mcl_session_destroy(apart);
    mcl_model_close(m);
}

/* Generate n tokens after the prompt with sampler d. */
static void generate(mcl_session *s, const mcl_sampler_desc *d, int32_t *out, int n)
{
    assert_mcl_ok(mcl_session_reset(s, 0));
    assert_mcl_ok(mcl_session_feed(s, 0, prompt, PROMPT, NULL));
    for (int i = 0; i < n; i++) {
        assert_mcl_ok(mcl_session_sample(s, 0, d, &out[i]));
        assert_mcl_ok(mcl_session_feed(s, 0, &out[i], 1, NULL));
    }
}

static void repeatable(void **state)
{
    (void)state;
    char path[256];
    small_model(path, MCL_GGML_Q8_0);
    mcl_model *m = open_model(path);
    mcl_session *s = session(m, 1);
    int32_t a[12], b[12], c[12];
    generate(s, NULL, a, 12);
    generate(s, NULL, b, 12);
    assert_true(mcl_test_record_bool("greedy generation repeats itself",
                                     memcmp(a, b, sizeof a) == 0));
    mcl_sampler_desc d = {.size = sizeof d, .temperature = 1.5f, .top_k = 50, .seed = 5};
    generate(s, &d, a, 12);
    generate(s, &d, b, 12);
    d.seed = 6;
    generate(s, &d, c, 12);
    assert_true(mcl_test_record_bool("a seeded draw repeats itself",
                                     memcmp(a, b, sizeof a) == 0));
    assert_true(mcl_test_record_bool("another seed draws other tokens (control)",
                                     memcmp(a, c, sizeof a) != 0));
    mcl_session_destroy(s);
    mcl_model_close(m);
}

/* The session's sampler (on the device) against the host's on the logits fed back, for two
 * sequences decoded as a batch and sampled as one (mcl_session_sample_batch), with
 * penalties over their histories and a draw: the same tokens. A session whose device
 * sampler takes no penalized tokens (draw_cap 0) samples every draw on the host from the
 * downloaded logits: the same tokens again. Control: the host's choice from the other
 * sequence's logits differs somewhere. */
static void device_sampler(void **state)
{
    (void)state;
    enum { N = 12, VOCAB = 128 };
    char path[256];
    small_model(path, MCL_GGML_Q8_0);
    mcl_model *m = open_model(path);
    mcl_session *dev = session(m, 2), *hosted = session(m, 2);
    hosted->draw_cap = 0;
    mcl_sampler_desc d = {.size = sizeof d, .temperature = 0.9f, .top_k = 20, .top_p = 0.9f,
                          .repeat_penalty = 1.1f, .frequency_penalty = 0.1f,
                          .presence_penalty = 0.2f, .seed = 9};
    int32_t hist[2][PROMPT + N];
    uint32_t len[2] = {PROMPT, 6}, seqs[2] = {0, 1};
    float *batch = malloc(2 * VOCAB * sizeof *batch), *work = malloc(2 * VOCAB * 4);
    int32_t *ids = malloc(VOCAB * sizeof *ids);
    for (uint32_t q = 0; q < 2; q++) {
        memcpy(hist[q], prompt + q, len[q] * sizeof(int32_t));
        assert_mcl_ok(mcl_session_feed(dev, q, hist[q], len[q], batch + q * VOCAB));
        assert_mcl_ok(mcl_session_feed(hosted, q, hist[q], len[q], NULL));
    }
    int same = 1, fallback_same = 1, control_differs = 0;
    for (int t = 0; t < N; t++) {
        int32_t got[2], fell[2];
        assert_mcl_ok(mcl_session_sample_batch(dev, seqs, 2, &d, got));
        for (uint32_t q = 0; q < 2; q++) {
            int32_t want = mcl_sample_logits(batch + q * VOCAB, VOCAB, hist[q], len[q], &d,
                                             (uint64_t)t, work, ids);
            int32_t other = mcl_sample_logits(batch + (1 - q) * VOCAB, VOCAB, hist[q], len[q],
                                              &d, (uint64_t)t, work, ids);
            assert_mcl_ok(mcl_session_sample(hosted, q, &d, &fell[q]));
            same &= got[q] == want;
            fallback_same &= fell[q] == want;
            control_differs |= other != want;
            hist[q][len[q]++] = got[q];
        }
        assert_mcl_ok(mcl_session_feed_batch(dev, seqs, got, 2, batch));
        assert_mcl_ok(mcl_session_feed_batch(hosted, seqs, got, 2, NULL));
    }
    assert_true(mcl_test_record_bool("the session's device sampler (a batch of two) gives the "
                                     "host's tokens from the logits fed back", same));
    assert_true(mcl_test_record_bool("a session sampling on the host (penalties past its "
                                     "device's room) gives them too", fallback_same));
    assert_true(mcl_test_record_bool("control: the other sequence's logits give other tokens",
                                     control_differs));
    uint32_t twice[2] = {1, 1};
    int32_t pick[2];
    assert_int_equal(mcl_session_sample_batch(dev, twice, 2, &d, pick),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_session_sample_batch(dev, seqs, 3, &d, pick),
                     MCL_ERROR_INVALID_ARGUMENT);
    free(batch), free(work), free(ids);
    mcl_session_destroy(dev);
    mcl_session_destroy(hosted);
    mcl_model_close(m);
}

static void statuses(void **state)
{
    (void)state;
    char path[256];
    small_model(path, MCL_GGML_F32);
    mcl_model *m = open_model(path);
    mcl_session_desc sd = {.size = sizeof sd, .context_length = 16, .batch_tokens = 8};
    mcl_session *s = NULL;
    assert_mcl_ok(mcl_session_create(m, &sd, &s));
    assert_int_equal(mcl_session_context_length(s), 16);
    int32_t tok = 3, big[17] = {0}, out_of = 128, id;
    int ok = 1;
    ok &= mcl_session_sample(s, 0, NULL, &id) == MCL_ERROR_INVALID_ARGUMENT;
    ok &= mcl_session_feed(s, 0, big, 17, NULL) == MCL_ERROR_TOO_LARGE;
    ok &= mcl_session_length(s, 0) == 0;
    ok &= mcl_session_feed(s, 0, big, 0, NULL) == MCL_ERROR_INVALID_ARGUMENT;
    ok &= mcl_session_feed(s, 0, &out_of, 1, NULL) == MCL_ERROR_INVALID_ARGUMENT;
    ok &= mcl_session_feed(s, 1, &tok, 1, NULL) == MCL_ERROR_INVALID_ARGUMENT;
    ok &= mcl_session_feed(s, 0, big, 15, NULL) == MCL_SUCCESS;   /* two passes of 8 and 7 */
    ok &= mcl_session_feed(s, 0, &tok, 1, NULL) == MCL_SUCCESS;   /* the context is full */
    ok &= mcl_session_feed(s, 0, &tok, 1, NULL) == MCL_ERROR_TOO_LARGE;
    ok &= mcl_session_length(s, 0) == 16;
    uint32_t seq0 = 0;
    ok &= mcl_session_feed_batch(s, &seq0, &tok, 1, NULL) == MCL_ERROR_TOO_LARGE;
    mcl_session_destroy(s);
    /* Explicit context over the budget; a q8_0 cache; defaults lowered to the budget. */
    sd.context_length = 64;
    sd.memory_budget = 100000;
    ok &= mcl_session_create(m, &sd, &s) == MCL_ERROR_OUT_OF_DEVICE_MEMORY && !s;
    ok &= strstr(mcl_context_last_error(ctx), "needs") != NULL;
    sd.memory_budget = 0;
    sd.kv_type = MCL_DTYPE_Q8_0;
    ok &= mcl_session_create(m, &sd, &s) == MCL_ERROR_UNSUPPORTED && !s;
    mcl_model_close(m);
    /* A model without weights. */
    mcl_model_desc md = {.size = sizeof md, .flags = MCL_MODEL_NO_WEIGHTS};
    assert_mcl_ok(mcl_model_open(ctx, path, &md, &m));
    ok &= mcl_session_create(m, NULL, &s) == MCL_ERROR_INVALID_ARGUMENT && !s;
    mcl_model_close(m);
    assert_true(mcl_test_record_bool("statuses: context full, prompt too long, no tokens, "
                                     "bad token or sequence, sampling first, budget, q8_0 "
                                     "cache, no weights",
                                     ok));
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float_models),
        cmocka_unit_test(llama3_scaling),
        cmocka_unit_test(f16_cache),
        cmocka_unit_test(block_models),
        cmocka_unit_test(gguf_and_checkpoint),
        cmocka_unit_test(decode_equals_recompute),
        cmocka_unit_test(batch_equals_alone),
        cmocka_unit_test(recorded_steps),
        cmocka_unit_test(repeatable),
        cmocka_unit_test(device_sampler),
        cmocka_unit_test(statuses),
    };
    return mcl_test_finish(
        cmocka_run_group_tests(tests, mcl_test_scratch_setup, mcl_test_scratch_teardown));
}
