/* Mixture-of-experts models: Mixtral-style llama and qwen2moe GGUFs written by the fixtures
 * are opened with their hyperparameters, their stacked expert tensors reach the device exactly
 * as the file holds them (each expert's rows where the engine looks for them), a malformed
 * mixture is refused with the tensor named; and sessions run them: the logits of a prompt and
 * of each decode step (a recorded step, the experts chosen on the device) against the
 * double-precision reference (tests/ref/ref_llama.c), to 1e-4 relative RMS with f32 weights
 * and with block weights on the float path, 3e-2 where products round activations (integer
 * dot products, cooperative matrices), the fixtures' routing clear of near ties (every margin
 * of the reference 0.02 or more) so that rounded activations choose the same experts.
 * Controls: the reference with the routing weights normalised the other way, or without the
 * shared expert, exceeds the tolerance; the routing left random has a margin below 0.02. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "model_fixtures.h"
#include "io/gguf.h"
#include "quant/quant.h"

static mcl_context *ctx;

static void write(model_fixture *f, const model_fixture_desc *d, const char *name, char *path)
{
    assert_mcl_ok(model_fixture_create(d, f));
    snprintf(path, 512, "%s/%s", mcl_test_scratch_dir(), name);
    assert_mcl_ok(model_fixture_write_gguf(f, path));
}

/* The device values of the model's tensor `name` equal the fixture's file values. */
static int same_values(const mcl_model *m, const model_fixture *f, const char *name)
{
    const model_fixture_tensor *t = model_fixture_find(f, name);
    mcl_tensor *dev = mcl_model_find_tensor(m, name);
    if (!t || !dev)
        return 0;
    int64_t n = t->ndim > 1 ? t->shape[0] * t->shape[1] : t->shape[0];
    float *got = malloc((size_t)n * sizeof *got);
    void *raw = malloc((size_t)n * sizeof(float));
    assert_true(got && raw);
    mcl_dtype dtype = mcl_tensor_dtype(dev);
    uint64_t bytes = mcl_tensor_nbytes(dev);
    int ok = mcl_tensor_download(dev, 0, raw, bytes) == MCL_SUCCESS;
    if (ok && dtype == MCL_DTYPE_F32)
        memcpy(got, raw, (size_t)n * sizeof *got);
    else if (ok)
        ok = mcl_dequantize(dtype, raw, got, n) == MCL_SUCCESS;
    for (int64_t i = 0; ok && i < n; i++)
        ok = got[i] == t->gguf[i];
    free(got);
    free(raw);
    return ok;
}

static void check_mixture(const char *arch, uint32_t type, int shared)
{
    model_fixture_desc d = {.arch = arch, .dim = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                            .hidden = 64, .vocab = 40, .experts = 4, .experts_used = 2,
                            .expert_hidden = 64, .shared_hidden = shared ? 32 : 0,
                            .qkv_bias = strcmp(arch, "qwen2moe") == 0, .seed = 17};
    for (int c = 0; c < FIXTURE_CLASSES; c++)
        d.gguf_type[c] = type;
    model_fixture f;
    char path[512];
    write(&f, &d, "moe.gguf", path);
    mcl_model *m = NULL;
    assert_mcl_ok(mcl_model_open(ctx, path, NULL, &m));
    mcl_model_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_model_file_info(m, &info));
    assert_string_equal(info.architecture, arch);
    assert_int_equal(info.experts, 4);
    assert_int_equal(info.experts_used, 2);
    assert_int_equal(info.expert_hidden, 64);
    assert_int_equal(info.experts_norm, strcmp(arch, "llama") == 0);
    assert_int_equal(info.shared_hidden, shared ? 32 : 0);

    /* The stacks: 3-D in the file's description, one matrix on the device. */
    mcl_model_tensor_info ti = {.size = sizeof ti};
    int found = 0;
    for (uint32_t i = 0; i < mcl_model_tensor_count(m); i++) {
        assert_mcl_ok(mcl_model_tensor(m, i, &ti));
        if (strcmp(ti.name, "blk.1.ffn_down_exps.weight") == 0) {
            found = 1;
            assert_int_equal(ti.ndim, 3);
            assert_true(ti.shape[0] == 4 && ti.shape[1] == 32 && ti.shape[2] == 64);
            assert_int_equal(mcl_tensor_ndim(ti.tensor), 2);
        }
    }
    assert_true(found);
    const char *names[] = {"blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_exps.weight",
                           "blk.1.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight",
                           "blk.1.ffn_gate_shexp.weight", "blk.1.ffn_gate_inp_shexp.weight"};
    int ok = 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!shared && strstr(names[i], "shexp"))
            continue;
        ok &= same_values(m, &f, names[i]);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s%s: experts on the device as in the file", arch,
             mcl_ggml_type_name(type), shared ? ", shared expert" : "");
    assert_true(mcl_test_record_bool(what, ok));
    assert_null(mcl_model_find_tensor(m, "blk.0.ffn_gate.weight"));

    mcl_model_close(m);
    model_fixture_free(&f);
}

static void mixtral_and_qwen2moe(void **state)
{
    (void)state;
    check_mixture("llama", MCL_GGML_F32, 0);
    check_mixture("llama", MCL_GGML_Q4_0, 0);
    check_mixture("qwen2moe", MCL_GGML_Q8_0, 1);
    check_mixture("qwen2moe", MCL_GGML_F32, 0);
}

#define PROMPT 11
#define STEPS 5
/* The smallest routing margin (ref_llama.h) the fixtures must keep: ten times what 8-bit
 * activations move a router probability by in them (model_fixtures.h). */
#define ROUTING_MARGIN 0.02

static const int32_t prompt[PROMPT] = {1, 17, 32, 9, 5, 23, 34, 2, 17, 38, 13};
static const int32_t steps[STEPS] = {7, 20, 3, 35, 17};

/* A prompt and STEPS decode steps of a mixture against the reference; the control (a
 * reference that differs in the mixture only) must exceed the tolerance. */
static void session_against_reference_of(const char *arch, uint32_t type, int shared,
                                         uint32_t sequences, uint32_t hf_type)
{
    /* K-quants hold rows of 256. */
    int wide = type == MCL_GGML_Q4_K || type == MCL_GGML_Q5_K || type == MCL_GGML_Q6_K;
    int dim = wide ? 256 : 32, width = wide ? 256 : 64;
    model_fixture_desc d = {.arch = arch, .dim = dim, .layers = 2, .heads = 4, .kv_heads = 2,
                            .hidden = width, .vocab = 40, .experts = 4, .experts_used = 2,
                            .expert_hidden = width, .shared_hidden = shared ? width : 0,
                            .qkv_bias = strcmp(arch, "qwen2moe") == 0, .context = 64,
                            .seed = 29, .hf_type = hf_type == UINT32_MAX ? 0 : hf_type,
                            .clear_routing = 1};
    for (int c = 0; c < FIXTURE_CLASSES; c++)
        d.gguf_type[c] = type;
    model_fixture f;
    char path[512];
    write(&f, &d, "moe-session.gguf", path);
    const ref_llama *ref = &f.gguf_ref;
    /* A checkpoint in Hugging Face's layout (every expert its own tensor) in place of the
     * GGUF: the f32 GGUF stands for "no checkpoint" (type is then the GGUF's). */
    int checkpoint = hf_type != UINT32_MAX;
    if (checkpoint) {
        snprintf(path, sizeof path, "%s/moe-checkpoint", mcl_test_scratch_dir());
        mkdir(path, 0700);
        assert_mcl_ok(model_fixture_write_checkpoint(&f, path));
        ref = &f.hf_ref;
    }
    const size_t V = 40;
    double *want = malloc((PROMPT + STEPS) * V * sizeof *want);
    double *other = malloc((PROMPT + STEPS) * V * sizeof *other);
    float got[40];
    assert_true(want && other);
    int32_t all[PROMPT + STEPS];
    memcpy(all, prompt, sizeof prompt);
    memcpy(all + PROMPT, steps, sizeof steps);
    ref_llama_margin_reset();
    assert_int_equal(ref_llama_forward(ref, all, PROMPT + STEPS, want), 0);
    const double margin = ref_llama_margin();
    ref_llama control = *ref;
    if (shared)
        control.shared_hidden = 0;
    else
        control.experts_norm = !control.experts_norm;
    assert_int_equal(ref_llama_forward(&control, all, PROMPT + STEPS, other), 0);

    mcl_model *m = NULL;
    assert_mcl_ok(mcl_model_open(ctx, path, NULL, &m));
    mcl_session_desc sd = {.size = sizeof sd, .sequences = sequences, .batch_tokens = 16};
    mcl_session *s = NULL;
    assert_mcl_ok(mcl_session_create(m, &sd, &s));
    double tol = model_fixture_tolerance(ctx, type), worst = 0.0, control_best = 1e9;
    uint32_t q = sequences - 1; /* the last sequence: a batch's rows are not all row 0 */
    assert_mcl_ok(mcl_session_feed(s, q, prompt, PROMPT, got));
    worst = model_fixture_rel_rms(got, want + (PROMPT - 1) * V, V);
    control_best = model_fixture_rel_rms(got, other + (PROMPT - 1) * V, V);
    for (int t = 0; t < STEPS; t++) {
        assert_mcl_ok(mcl_session_feed(s, q, &steps[t], 1, got));
        double e = model_fixture_rel_rms(got, want + (PROMPT + t) * V, V);
        double c = model_fixture_rel_rms(got, other + (PROMPT + t) * V, V);
        worst = e > worst ? e : worst;
        control_best = c < control_best ? c : control_best;
    }
    char name[200];
    snprintf(name, sizeof name, "%s %s%s%s, %u sequence(s): prompt and %d decode steps",
             arch, checkpoint ? "checkpoint " : "",
             mcl_ggml_type_name(checkpoint ? hf_type : type), shared ? ", shared expert" : "",
             sequences, STEPS);
    int ok = mcl_test_record(name, "relative rms", worst, tol);
    snprintf(name, sizeof name, "%s %s: control, the reference %s, exceeds the tolerance (%.3g)",
             arch, mcl_ggml_type_name(type),
             shared ? "without the shared expert" : "with the weights normalised the other way",
             control_best);
    ok &= mcl_test_record_bool(name, control_best > tol);
    /* The fixture's routing is clear (model_fixtures.h): no choice of the reference is a near
     * tie that the path's rounding could flip. */
    snprintf(name, sizeof name, "%s %s%s: the reference's smallest routing margin (%.3g) is "
             "clear of the rounding", arch, mcl_ggml_type_name(type), shared ? ", shared" : "",
             margin);
    ok &= mcl_test_record_bool(name, margin >= ROUTING_MARGIN);
    mcl_session_destroy(s);
    mcl_model_close(m);
    model_fixture_free(&f);
    free(want);
    free(other);
    assert_true(ok);
}

static void session_against_reference(const char *arch, uint32_t type, int shared,
                                      uint32_t sequences)
{
    session_against_reference_of(arch, type, shared, sequences, UINT32_MAX);
}

/* Control of the margin check: the same mixture with its routing left random has a choice
 * of the reference below ROUTING_MARGIN (the near ties that clear_routing removes). */
static void margin_control(void)
{
    model_fixture_desc d = {.arch = "llama", .dim = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                            .hidden = 64, .vocab = 40, .experts = 4, .experts_used = 2,
                            .context = 64, .seed = 29};
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    int32_t all[PROMPT + STEPS];
    memcpy(all, prompt, sizeof prompt);
    memcpy(all + PROMPT, steps, sizeof steps);
    double *logits = malloc((PROMPT + STEPS) * 40 * sizeof *logits);
    assert_non_null(logits);
    ref_llama_margin_reset();
    assert_int_equal(ref_llama_forward(&f.gguf_ref, all, PROMPT + STEPS, logits), 0);
    const double margin = ref_llama_margin();
    char name[200];
    snprintf(name, sizeof name, "control: the routing left random has a margin (%.3g) below "
             "%g", margin, ROUTING_MARGIN);
    int ok = mcl_test_record_bool(name, margin < ROUTING_MARGIN);
    free(logits);
    model_fixture_free(&f);
    assert_true(ok);
}

static void sessions(void **state)
{
    (void)state;
    margin_control();
    session_against_reference("llama", MCL_GGML_F32, 0, 1);
    session_against_reference("llama", MCL_GGML_Q4_0, 0, 2);
    session_against_reference("qwen2moe", MCL_GGML_F32, 1, 1);
    session_against_reference("qwen2moe", MCL_GGML_Q8_0, 1, 1);
    session_against_reference("qwen2moe", MCL_GGML_Q4_K, 0, 1);
}

/* The same mixtures from Hugging Face checkpoints: Mixtral's block_sparse_moe and
 * Qwen2-MoE's mlp, each expert its own tensor, stacked at load. */
static void checkpoints(void **state)
{
    (void)state;
    session_against_reference_of("llama", MCL_GGML_F32, 0, 1, MCL_GGML_F32);
    session_against_reference_of("qwen2moe", MCL_GGML_F32, 1, 2, MCL_GGML_BF16);
    session_against_reference_of("qwen2moe", MCL_GGML_F32, 0, 1, MCL_GGML_F16);
}

/* A stack written as a 2-D matrix, and a router of the wrong width, are refused by name; the
 * control is the same fixture written as it should be (mixtral_and_qwen2moe). */
static void malformed_mixtures(void **state)
{
    (void)state;
    model_fixture_desc d = {.arch = "llama", .dim = 32, .layers = 1, .heads = 4, .hidden = 64,
                            .vocab = 40, .experts = 4, .experts_used = 2, .seed = 3};
    model_fixture f;
    char path[512];
    assert_mcl_ok(model_fixture_create(&d, &f));
    for (int i = 0; i < f.count; i++)
        if (strcmp(f.tensors[i].name, "blk.0.ffn_up_exps.weight") == 0)
            f.tensors[i].ndim = 2;
    snprintf(path, sizeof path, "%s/flat.gguf", mcl_test_scratch_dir());
    assert_mcl_ok(model_fixture_write_gguf(&f, path));
    mcl_model *m = NULL;
    mcl_test_expect_status("a stack written 2-D", mcl_model_open(ctx, path, NULL, &m),
                           MCL_ERROR_BAD_FILE);
    assert_non_null(strstr(mcl_context_last_error(ctx), "blk.0.ffn_up_exps.weight"));
    model_fixture_free(&f);

    /* A checkpoint whose config.json names one expert more than its tensors hold. */
    assert_mcl_ok(model_fixture_create(&d, &f));
    char dir[512], config[600];
    snprintf(dir, sizeof dir, "%s/short", mcl_test_scratch_dir());
    mkdir(dir, 0700);
    assert_mcl_ok(model_fixture_write_checkpoint(&f, dir));
    model_fixture_free(&f);
    snprintf(config, sizeof config, "%s/config.json", dir);
    FILE *in = fopen(config, "rb");
    assert_non_null(in);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    text[n] = '\0';
    char *at = strstr(text, "\"num_local_experts\": 4");
    assert_non_null(at);
    at[strlen("\"num_local_experts\": ")] = '5';
    FILE *out = fopen(config, "wb");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
    mcl_test_expect_status("a checkpoint short of an expert", mcl_model_open(ctx, dir, NULL, &m),
                           MCL_ERROR_BAD_FILE);
    assert_non_null(strstr(mcl_context_last_error(ctx), "4 of the 5 experts"));

    d.experts_used = 5; /* more than the experts */
    assert_int_equal(model_fixture_create(&d, &f), MCL_ERROR_INVALID_ARGUMENT);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mixtral_and_qwen2moe),
        cmocka_unit_test(malformed_mixtures),
        cmocka_unit_test(sessions),
        cmocka_unit_test(checkpoints),
    };
    return mcl_test_finish(
        cmocka_run_group_tests(tests, mcl_test_scratch_setup, mcl_test_scratch_teardown));
}
