/* The expert cache of a session (mcl_session_desc.expert_budget): mixtures written by the
 * fixtures run with every expert resident and under a budget of a quarter of the experts (2
 * slots of 8 a layer): a prompt (whose batch uses more experts than there are slots: some are
 * read from the pool in place), decode steps of a batch of two sequences and of one sequence,
 * for every weight type the fixtures write, against the double-precision reference
 * (tests/ref/ref_llama.c), with the fixtures' routing clear of near ties (test_model_moe),
 * within test_model_moe's tolerances (1e-4 relative RMS with f32 weights and block weights on
 * the float path, 3e-2 where products round activations); the budget's logits equal the full
 * residency's bit for bit (the same kernels over the same bytes). The counts: misses, hits and
 * reads in place under the budget, and nothing moved with every expert resident. The plan and
 * the copies alone: a stack of an odd number of rows a expert (d values that straddle words)
 * copied slot by slot as the host expects. The decode step's fused gate, up and SwiGLU of the
 * experts (Q8_0 and Q4_0 on the integer-dot path: the .dot run) counted against the step with
 * MOTIFCL_ENGINE_SPLIT_GLU, two dispatches fewer a layer; the router with its routing
 * (mcl_moe_router) against MOTIFCL_ENGINE_SPLIT_MOE=1, one fewer, both within the tolerance;
 * the down products with their weighted sum (mcl_matmul_experts_sum, integer dot) against
 * MOTIFCL_ENGINE_SPLIT_MOE=2, one fewer, the same logits bit for bit.
 * MCL_EXPERT_BUDGET_AUTO under memory budgets from too small to every expert (auto_budget).
 * Controls: a residency table that maps every expert to slot 0 (an internal hook) exceeds the
 * tolerance; a budget below the experts a token uses is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "engine/engine_internal.h"
#include "io/gguf.h"
#include "model_fixtures.h"
#include "quant/quant.h"

static mcl_context *ctx;

#define V 40
#define EXPERTS 8
#define USED 2
#define PROMPT0 11
#define PROMPT1 7
#define BATCH_STEPS 4
#define SINGLE_STEPS 2
static const int32_t prompt0[PROMPT0] = {1, 17, 32, 9, 5, 23, 34, 2, 17, 38, 13};
static const int32_t prompt1[PROMPT1] = {4, 30, 11, 26, 8, 19, 3};
static const int32_t steps0[BATCH_STEPS + SINGLE_STEPS] = {7, 20, 3, 35, 17, 29};
static const int32_t steps1[BATCH_STEPS] = {12, 6, 39, 21};
/* Rows of logits a run produces: each prompt's last, the batch's two a step, the singles. */
#define ROWS (2 + 2 * BATCH_STEPS + SINGLE_STEPS)

/* The reference's logits of each row a run produces, in its order. */
static void reference_rows(const ref_llama *ref, double *rows)
{
    int32_t all0[PROMPT0 + BATCH_STEPS + SINGLE_STEPS], all1[PROMPT1 + BATCH_STEPS];
    memcpy(all0, prompt0, sizeof prompt0);
    memcpy(all0 + PROMPT0, steps0, sizeof steps0);
    memcpy(all1, prompt1, sizeof prompt1);
    memcpy(all1 + PROMPT1, steps1, sizeof steps1);
    const int n0 = PROMPT0 + BATCH_STEPS + SINGLE_STEPS, n1 = PROMPT1 + BATCH_STEPS;
    double *w0 = malloc((size_t)n0 * V * sizeof *w0), *w1 = malloc((size_t)n1 * V * sizeof *w1);
    assert_true(w0 && w1);
    assert_int_equal(ref_llama_forward(ref, all0, n0, w0), 0);
    assert_int_equal(ref_llama_forward(ref, all1, n1, w1), 0);
    int r = 0;
    memcpy(rows + V * r++, w0 + (PROMPT0 - 1) * V, V * sizeof *rows);
    memcpy(rows + V * r++, w1 + (PROMPT1 - 1) * V, V * sizeof *rows);
    for (int t = 0; t < BATCH_STEPS; t++) {
        memcpy(rows + V * r++, w0 + (PROMPT0 + t) * V, V * sizeof *rows);
        memcpy(rows + V * r++, w1 + (PROMPT1 + t) * V, V * sizeof *rows);
    }
    for (int t = BATCH_STEPS; t < BATCH_STEPS + SINGLE_STEPS; t++)
        memcpy(rows + V * r++, w0 + (PROMPT0 + t) * V, V * sizeof *rows);
    free(w0);
    free(w1);
}

/* The rows of a run: both prompts, BATCH_STEPS steps of both sequences in one batch, then
 * SINGLE_STEPS of sequence 0 alone. */
static void run_rows(mcl_session *s, float *rows)
{
    int r = 0;
    assert_mcl_ok(mcl_session_feed(s, 0, prompt0, PROMPT0, rows + V * r++));
    assert_mcl_ok(mcl_session_feed(s, 1, prompt1, PROMPT1, rows + V * r++));
    const uint32_t seqs[2] = {0, 1};
    for (int t = 0; t < BATCH_STEPS; t++) {
        int32_t tokens[2] = {steps0[t], steps1[t]};
        assert_mcl_ok(mcl_session_feed_batch(s, seqs, tokens, 2, rows + V * r));
        r += 2;
    }
    for (int t = BATCH_STEPS; t < BATCH_STEPS + SINGLE_STEPS; t++)
        assert_mcl_ok(mcl_session_feed(s, 0, &steps0[t], 1, rows + V * r++));
}

/* Device bytes of one expert in every layer (the stacks' bytes over the experts). */
static uint64_t slot_bytes(mcl_model *m, uint32_t layers)
{
    const char *names[3] = {"blk.%u.ffn_gate_exps.weight", "blk.%u.ffn_up_exps.weight",
                            "blk.%u.ffn_down_exps.weight"};
    uint64_t bytes = 0;
    for (uint32_t l = 0; l < layers; l++)
        for (int i = 0; i < 3; i++) {
            char name[64];
            snprintf(name, sizeof name, names[i], l);
            mcl_tensor *t = mcl_model_find_tensor(m, name);
            assert_non_null(t);
            bytes += mcl_tensor_nbytes(t) / EXPERTS;
        }
    return bytes;
}

static void worst_of(const float *got, const double *want, double *worst)
{
    for (int r = 0; r < ROWS; r++) {
        double e = model_fixture_rel_rms(got + V * r, want + V * r, V);
        *worst = e > *worst ? e : *worst;
    }
}

/* A mixture of `type` weights, full residency and a quarter of the experts, against the
 * reference and each other; with `control`, the corrupted table's step too. */
static int residency_of(const char *arch, uint32_t type, int shared, int control)
{
    int wide = type == MCL_GGML_Q4_K || type == MCL_GGML_Q5_K || type == MCL_GGML_Q6_K;
    int dim = wide ? 256 : 32, width = wide ? 256 : 64;
    model_fixture_desc d = {.arch = arch, .dim = dim, .layers = 2, .heads = 4, .kv_heads = 2,
                            .hidden = width, .vocab = V, .experts = EXPERTS,
                            .experts_used = USED, .expert_hidden = width,
                            .shared_hidden = shared ? width : 0,
                            .qkv_bias = strcmp(arch, "qwen2moe") == 0, .context = 64,
                            .seed = 31, .clear_routing = 1};
    for (int c = 0; c < FIXTURE_CLASSES; c++)
        d.gguf_type[c] = type;
    model_fixture f;
    char path[512];
    assert_mcl_ok(model_fixture_create(&d, &f));
    snprintf(path, sizeof path, "%s/experts.gguf", mcl_test_scratch_dir());
    assert_mcl_ok(model_fixture_write_gguf(&f, path));
    double *want = malloc(ROWS * V * sizeof *want);
    float *full = malloc(ROWS * V * sizeof *full), *quarter = malloc(ROWS * V * sizeof *quarter);
    assert_true(want && full && quarter);
    ref_llama_margin_reset();
    reference_rows(&f.gguf_ref, want);
    const double margin = ref_llama_margin();

    mcl_model *m = NULL;
    assert_mcl_ok(mcl_model_open(ctx, path, NULL, &m));
    uint64_t per_slot = slot_bytes(m, 2);
    mcl_session_desc sd = {.size = sizeof sd, .sequences = 2, .batch_tokens = 16};
    mcl_session *s = NULL;
    assert_mcl_ok(mcl_session_create(m, &sd, &s));
    run_rows(s, full);
    mcl_expert_stats fs = {.size = sizeof fs};
    assert_mcl_ok(mcl_session_expert_stats(s, &fs));
    uint32_t fused = mcl_engine_step_dispatches(s, 1), apart = 0, moe_apart[2] = {0, 0};
    double worst_moe_apart[2] = {0.0, 0.0};
    int same_summed = 0;
    mcl_session_destroy(s);
    for (int i = 0; control && i < 2; i++) {
        /* The router and the routing apart (1), the down products and the weighted sum apart
         * (2): a dispatch more a layer where the fusion applies, the logits within the
         * tolerance (the router's sums in another order), the same bits for 2. */
        mcl_test_switch_env(ctx, "MOTIFCL_ENGINE_SPLIT_MOE", i ? "2" : "1");
        assert_mcl_ok(mcl_session_create(m, &sd, &s));
        float *split = malloc(ROWS * V * sizeof *split);
        assert_non_null(split);
        run_rows(s, split);
        moe_apart[i] = mcl_engine_step_dispatches(s, 1);
        mcl_session_destroy(s);
        mcl_test_switch_env(ctx, "MOTIFCL_ENGINE_SPLIT_MOE", NULL);
        worst_of(split, want, &worst_moe_apart[i]);
        if (i)
            same_summed = memcmp(split, full, ROWS * V * sizeof *split) == 0;
        free(split);
    }
    if (control) {
        /* The experts' gate, up and SwiGLU apart, for the count of what their fusion saves. */
        mcl_test_switch_env(ctx, "MOTIFCL_ENGINE_SPLIT_GLU", "1");
        assert_mcl_ok(mcl_session_create(m, &sd, &s));
        float *split = malloc(ROWS * V * sizeof *split);
        assert_non_null(split);
        run_rows(s, split);
        apart = mcl_engine_step_dispatches(s, 1);
        mcl_session_destroy(s);
        mcl_test_switch_env(ctx, "MOTIFCL_ENGINE_SPLIT_GLU", NULL);
        free(split);
    }

    /* The budget's model keeps its stacks in host memory (the pool the slots fill from). */
    mcl_model *hm = NULL;
    mcl_model_desc md = {.size = sizeof md, .flags = MCL_MODEL_EXPERTS_IN_HOST_MEMORY};
    assert_mcl_ok(mcl_model_open(ctx, path, &md, &hm));
    mcl_model_info di = {.size = sizeof di}, hi = {.size = sizeof hi};
    assert_mcl_ok(mcl_model_file_info(m, &di));
    assert_mcl_ok(mcl_model_file_info(hm, &hi));
    sd.expert_budget = per_slot * EXPERTS / 4;
    assert_mcl_ok(mcl_session_create(hm, &sd, &s));
    run_rows(s, quarter);
    mcl_expert_stats qs = {.size = sizeof qs};
    assert_mcl_ok(mcl_session_expert_stats(s, &qs));

    double tol = model_fixture_tolerance(ctx, type), worst_full = 0.0, worst_quarter = 0.0;
    worst_of(full, want, &worst_full);
    worst_of(quarter, want, &worst_quarter);
    int same = memcmp(full, quarter, ROWS * V * sizeof *full) == 0;
    char name[200];
    const char *what = mcl_ggml_type_name(type);
    const char *sh = shared ? ", shared expert" : "";
    snprintf(name, sizeof name, "%s %s%s, every expert resident: prompts, batch and single "
             "steps", arch, what, sh);
    int ok = mcl_test_record(name, "relative rms", worst_full, tol);
    /* Where the path rounds its activations, a routing choice of the reference that is a near
     * tie may go the other way on the device, and that sequence's logits then differ by far
     * more than the rounding (ref_llama.h): the fixture's routing is clear (model_fixtures.h),
     * its smallest margin ten times what 8-bit activations move a router probability by. */
    snprintf(name, sizeof name, "%s %s%s: the reference's smallest routing margin (%.3g) is "
             "clear of the rounding", arch, what, sh, margin);
    ok &= mcl_test_record_bool(name, margin >= 0.02);
    if (control) {
        /* Fused where the stacks are Q8_0 or Q4_0 on the integer-dot path: two dispatches
         * fewer a layer (the two products and SwiGLU as one). */
        mcl_tensor *stack = mcl_model_find_tensor(m, "blk.0.ffn_gate_exps.weight");
        int glu = (type == MCL_GGML_Q8_0 || type == MCL_GGML_Q4_0) &&
                  mcl_matmul_experts_quantizes(ctx, stack);
        snprintf(name, sizeof name, "%s %s%s: the experts' gate, up and SwiGLU %s, a step of "
                 "%u dispatches against %u apart", arch, what, sh, glu ? "fused" : "not fused",
                 fused, apart);
        ok &= mcl_test_record_bool(name, fused > 0 && fused + (glu ? 2 * 2 : 0) == apart);
        snprintf(name, sizeof name, "%s %s%s: the router with its routing, a step of %u "
                 "dispatches against %u apart", arch, what, sh, fused, moe_apart[0]);
        ok &= mcl_test_record_bool(name, fused + 2 == moe_apart[0]);
        snprintf(name, sizeof name, "%s %s%s, the router and the routing apart", arch, what,
                 sh);
        ok &= mcl_test_record(name, "relative rms", worst_moe_apart[0], tol);
        /* The sum where the down products take the integer-dot path. */
        mcl_tensor *down = mcl_model_find_tensor(m, "blk.0.ffn_down_exps.weight");
        int summed = mcl_matmul_experts_quantizes(ctx, down);
        snprintf(name, sizeof name, "%s %s%s: the down products %swith their weighted sum, a "
                 "step of %u dispatches against %u apart, the same logits", arch, what, sh,
                 summed ? "" : "not ", fused, moe_apart[1]);
        ok &= mcl_test_record_bool(name, fused + (summed ? 2 : 0) == moe_apart[1] &&
                                             same_summed);
    }
    snprintf(name, sizeof name, "%s %s%s, 2 of 8 experts a layer resident: prompts, batch and "
             "single steps", arch, what, sh);
    ok &= mcl_test_record(name, "relative rms", worst_quarter, tol);
    snprintf(name, sizeof name, "%s %s%s: the budget's logits equal full residency's", arch,
             what, sh);
    ok &= mcl_test_record_bool(name, same);
    snprintf(name, sizeof name, "%s %s%s: stacks in host memory leave the device %llu of "
             "%llu bytes", arch, what, sh, (unsigned long long)hi.device_bytes,
             (unsigned long long)di.device_bytes);
    ok &= mcl_test_record_bool(name, di.device_bytes - hi.device_bytes >= per_slot * EXPERTS);
    snprintf(name, sizeof name, "%s %s%s: every expert resident counts nothing (%u resident)",
             arch, what, sh, fs.resident);
    ok &= mcl_test_record_bool(name, fs.slots == 0 && fs.hits == 0 && fs.misses == 0 &&
                                         fs.bytes_moved == 0 && fs.pool_reads == 0 &&
                                         fs.resident == 2 * EXPERTS && fs.experts == 2 * EXPERTS);
    /* Bytes a copy moves: an expert's rows of the three stacks, its share of the stacks. */
    snprintf(name, sizeof name, "%s %s%s: under the budget %llu hits, %llu misses (%llu bytes), "
             "%llu read in place, %u resident", arch, what, sh, (unsigned long long)qs.hits,
             (unsigned long long)qs.misses, (unsigned long long)qs.bytes_moved,
             (unsigned long long)qs.pool_reads, qs.resident);
    ok &= mcl_test_record_bool(name, qs.slots == 2 && qs.hits > 0 && qs.misses > 0 &&
                                         qs.pool_reads > 0 && qs.resident > 0 &&
                                         qs.resident <= 2 * 2 &&
                                         qs.bytes_moved / qs.misses <= per_slot / 2 + 8 &&
                                         qs.bytes_moved / qs.misses + 8 >= per_slot / 2 &&
                                         qs.cache_bytes > 0 && qs.cache_bytes <= sd.expert_budget);

    if (control) {
        /* Every expert of every layer "resident" in slot 0: the next step reads slot 0's
         * expert for every pair. */
        uint64_t words = mcl_expert_state_words(EXPERTS, 2);
        int32_t *state = malloc(words * sizeof *state);
        assert_non_null(state);
        for (uint32_t l = 0; l < 2; l++) {
            mcl_tensor *t = s->layers[l].expert_state;
            assert_mcl_ok(mcl_tensor_download(t, 0, state, words * sizeof *state));
            for (uint32_t e = 0; e < EXPERTS; e++)
                state[MCL_EXPERT_STATE_HEADER + 2 + e] = 0;
            assert_mcl_ok(mcl_tensor_upload(t, 0, state, words * sizeof *state));
        }
        free(state);
        /* One step of sequence 1 (the runs left it at PROMPT1 + BATCH_STEPS tokens). */
        int32_t all1[PROMPT1 + BATCH_STEPS + 1];
        memcpy(all1, prompt1, sizeof prompt1);
        memcpy(all1 + PROMPT1, steps1, sizeof steps1);
        all1[PROMPT1 + BATCH_STEPS] = 5;
        double *w1 = malloc((PROMPT1 + BATCH_STEPS + 1) * V * sizeof *w1);
        assert_non_null(w1);
        assert_int_equal(ref_llama_forward(&f.gguf_ref, all1, PROMPT1 + BATCH_STEPS + 1, w1), 0);
        float got[V];
        assert_mcl_ok(mcl_session_feed(s, 1, &all1[PROMPT1 + BATCH_STEPS], 1, got));
        double e = model_fixture_rel_rms(got, w1 + (PROMPT1 + BATCH_STEPS) * V, V);
        snprintf(name, sizeof name, "%s %s: control, a table with every expert in slot 0, "
                 "exceeds the tolerance (%.3g)", arch, what, e);
        ok &= mcl_test_record_bool(name, e > tol);
        free(w1);
    }
    mcl_session_destroy(s);
    mcl_model_close(hm);
    mcl_model_close(m);
    model_fixture_free(&f);
    free(want);
    free(full);
    free(quarter);
    return ok;
}

static void every_weight_type(void **state)
{
    (void)state;
    const uint32_t types[] = {MCL_GGML_F32, MCL_GGML_Q8_0, MCL_GGML_Q4_0,
                              MCL_GGML_Q4_K, MCL_GGML_Q5_K, MCL_GGML_Q6_K};
    int ok = 1;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        ok &= residency_of("llama", types[i], 0, i == 0 || i == 2);
    assert_true(ok);
}

static void qwen2moe_shared_expert(void **state)
{
    (void)state;
    assert_true(residency_of("qwen2moe", MCL_GGML_Q8_0, 1, 1));
}

/* The small mixture (two layers of 8 experts, 2 a token, context 64) written into
 * path. */
static void write_small_mixture(char *path, size_t size)
{
    model_fixture_desc d = {.arch = "llama", .dim = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                            .hidden = 64, .vocab = V, .experts = EXPERTS, .experts_used = USED,
                            .context = 64, .seed = 5};
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    snprintf(path, size, "%s/experts-small.gguf", mcl_test_scratch_dir());
    assert_mcl_ok(model_fixture_write_gguf(&f, path));
    model_fixture_free(&f);
}

/* A budget of one slot a layer, below the two experts a token uses, is refused by name (the
 * control is every_weight_type's budget of two); a budget of every expert is no cache, or a
 * slot for each where the stacks are in host memory. */
static void budget_too_small(void **state)
{
    (void)state;
    char path[512];
    write_small_mixture(path, sizeof path);
    mcl_model *m = NULL;
    assert_mcl_ok(mcl_model_open(ctx, path, NULL, &m));
    mcl_session_desc sd = {.size = sizeof sd, .expert_budget = slot_bytes(m, 2) * 3 / 2};
    mcl_session *s = NULL;
    mcl_test_expect_status("a budget of one expert a layer",
                           mcl_session_create(m, &sd, &s), MCL_ERROR_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(mcl_context_last_error(ctx), "a token uses 2"));
    /* A budget that holds every expert: no cache. */
    sd.expert_budget = slot_bytes(m, 2) * EXPERTS;
    assert_mcl_ok(mcl_session_create(m, &sd, &s));
    mcl_expert_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_session_expert_stats(s, &st));
    assert_int_equal(st.slots, 0);
    st.size = 4;
    assert_int_equal(mcl_session_expert_stats(s, &st), MCL_ERROR_INVALID_ARGUMENT);
    mcl_session_destroy(s);
    /* The same budget over stacks in host memory: a slot for every expert. */
    mcl_model *hm = NULL;
    mcl_model_desc md = {.size = sizeof md, .flags = MCL_MODEL_EXPERTS_IN_HOST_MEMORY};
    assert_mcl_ok(mcl_model_open(ctx, path, &md, &hm));
    assert_mcl_ok(mcl_session_create(hm, &sd, &s));
    st.size = sizeof st;
    assert_mcl_ok(mcl_session_expert_stats(s, &st));
    assert_int_equal(st.slots, EXPERTS);
    mcl_session_destroy(s);
    mcl_model_close(hm);
    mcl_model_close(m);
}

/* MCL_EXPERT_BUDGET_AUTO. Stacks in device memory: no cache. Stacks in host memory under
 * memory budgets from the least the session takes on: refused by name below it (the expert
 * cache's least, two slots a layer, beside the activations and the context's cache); above it
 * as many slots as the budget holds, never fewer as it grows, the caches within the budget,
 * the whole context of the model kept (the slots take what the activations and the cache leave,
 * not what they need), and a slot for every expert under a large budget. */
static void auto_budget(void **state)
{
    (void)state;
    char path[512];
    write_small_mixture(path, sizeof path);
    mcl_model *m = NULL, *hm = NULL;
    assert_mcl_ok(mcl_model_open(ctx, path, NULL, &m));
    mcl_session_desc sd = {.size = sizeof sd, .expert_budget = MCL_EXPERT_BUDGET_AUTO};
    mcl_session *s = NULL;
    mcl_expert_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_session_create(m, &sd, &s));
    assert_mcl_ok(mcl_session_expert_stats(s, &st));
    assert_int_equal(st.slots, 0);
    mcl_session_destroy(s);

    mcl_model_desc md = {.size = sizeof md, .flags = MCL_MODEL_EXPERTS_IN_HOST_MEMORY};
    assert_mcl_ok(mcl_model_open(ctx, path, &md, &hm));
    const uint64_t per_slot = slot_bytes(hm, 2);
    /* The least budget that makes a session, by bisection: lo fails, hi does not. */
    uint64_t lo = 0, hi = 64ull << 20;
    sd.memory_budget = 1;
    mcl_test_expect_status("an auto expert budget in 1 byte", mcl_session_create(hm, &sd, &s),
                           MCL_ERROR_OUT_OF_DEVICE_MEMORY);
    assert_null(s);
    assert_non_null(strstr(mcl_context_last_error(ctx), "an automatic expert budget needs about"));
    sd.memory_budget = hi;
    assert_mcl_ok(mcl_session_create(hm, &sd, &s));
    assert_mcl_ok(mcl_session_expert_stats(s, &st));
    int ok = mcl_test_record_bool("a large budget gives every expert a slot", st.slots == EXPERTS);
    mcl_session_destroy(s);
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        sd.memory_budget = mid;
        mcl_status r = mcl_session_create(hm, &sd, &s);
        if (r == MCL_SUCCESS) {
            hi = mid;
            mcl_session_destroy(s);
        } else {
            assert_int_equal(r, MCL_ERROR_OUT_OF_DEVICE_MEMORY);
            lo = mid;
        }
    }
    /* From there up, a quarter of a slot at a time, until every expert has one. */
    uint32_t last = 0, steps = 0;
    int monotonic = 1, within = 1, whole_context = 1;
    for (uint64_t b = hi; last < EXPERTS && steps < 200; b += per_slot / 4, steps++) {
        sd.memory_budget = b;
        assert_mcl_ok(mcl_session_create(hm, &sd, &s));
        assert_mcl_ok(mcl_session_expert_stats(s, &st));
        monotonic &= st.slots >= last && st.slots >= USED && st.slots <= EXPERTS;
        within &= st.cache_bytes <= b;
        whole_context &= mcl_session_context_length(s) == 64;
        last = st.slots;
        mcl_session_destroy(s);
    }
    printf("  auto: sessions from %llu bytes, every expert a slot after %u steps of %llu\n",
           (unsigned long long)hi, steps, (unsigned long long)(per_slot / 4));
    ok &= mcl_test_record_bool("auto slots grow with the budget, from the experts a token uses",
                               monotonic);
    ok &= mcl_test_record_bool("auto caches within the budget", within);
    ok &= mcl_test_record_bool("auto keeps the model's whole context", whole_context);
    ok &= mcl_test_record_bool("auto reaches every expert", last == EXPERTS);
    assert_true(ok);
    mcl_model_close(hm);
    mcl_model_close(m);
}

/* The plan and the copies alone: a Q8_0 stack of 5 experts of 3 rows of 32 (each expert's d
 * values 6 bytes, so that neighbouring slots share words) and a cache of 3 slots; batches of
 * ids whose plan the host repeats (least recently used slot, never one of the batch's), the
 * virtual ids and every slot's values checked exactly (the cache dequantized on the device). */
static void plan_and_copies(void **state)
{
    (void)state;
    enum { E = 5, S = 3, N = 3, K = 32, P = 4 };
    int64_t pool_shape[2] = {E * N, K}, cache_shape[2] = {S * N, K};
    mcl_tensor *pool = NULL, *cache = NULL, *st = NULL, *ids = NULL, *vids = NULL, *f = NULL;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_Q8_0, 2, pool_shape, &pool));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_Q8_0, 2, cache_shape, &cache));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, cache_shape, &f));
    int64_t words = (int64_t)mcl_expert_state_words(E, S), pairs = P;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &words, &st));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &pairs, &ids));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &pairs, &vids));
    /* Expert e's values scaled by e + 1: each expert's d values differ. */
    static float w[E * N * K], want[E * N * K], got[S * N * K];
    static uint8_t q[E * N * K], zero[S * N * K];
    for (int i = 0; i < E * N * K; i++)
        w[i] = (float)(i / (N * K) + 1) * (float)(i % 7 - 3) * 0.37f;
    assert_mcl_ok(mcl_quantize(MCL_DTYPE_Q8_0, w, q, E * N * K));
    assert_mcl_ok(mcl_dequantize(MCL_DTYPE_Q8_0, q, want, E * N * K));
    assert_mcl_ok(mcl_tensor_upload(pool, 0, q, mcl_quant_row_size(MCL_DTYPE_Q8_0, E * N * K)));
    /* A zero cache: a copy that spilled into a neighbouring slot would show. */
    assert_mcl_ok(mcl_tensor_upload(cache, 0, zero,
                                    mcl_quant_row_size(MCL_DTYPE_Q8_0, S * N * K)));
    int32_t init[64];
    assert_true(words <= 64);
    mcl_expert_state_init(E, S, init);
    assert_mcl_ok(mcl_tensor_upload(st, 0, init, (uint64_t)words * sizeof *init));
    /* Two misses; two hits of one expert and a miss that evicts; four experts over three
     * slots (one read in place); two slots evicted at once. */
    const int32_t batches[4][P] = {{1, 3, 1, 3}, {3, 4, 4, 0}, {2, 1, 4, 3}, {0, 0, 4, 4}};
    int slot_of[E] = {-1, -1, -1, -1, -1}, owner[S] = {-1, -1, -1}, last[S] = {0};
    int ok = 1, in_place = 0, hits = 0;
    for (int b = 0; b < 4; b++) {
        assert_mcl_ok(mcl_tensor_upload(ids, 0, batches[b], sizeof batches[b]));
        assert_mcl_ok(mcl_expert_residency(ctx, ids, P, E, S, st, vids));
        assert_mcl_ok(mcl_expert_copy(ctx, st, E, S, pool, cache));
        /* The host's plan, in expert_residency.comp's order. */
        int named[E] = {0}, vmap[E];
        for (int p = 0; p < P; p++)
            named[batches[b][p]] = 1;
        for (int e = 0; e < E; e++)
            if (named[e] && slot_of[e] >= 0) {
                last[slot_of[e]] = b + 1;
                vmap[e] = slot_of[e];
                hits++;
            }
        for (int e = 0; e < E; e++) {
            if (!named[e] || slot_of[e] >= 0)
                continue;
            int victim = -1, oldest = b + 1;
            for (int s = 0; s < S; s++)
                if (last[s] < oldest) {
                    oldest = last[s];
                    victim = s;
                }
            if (victim < 0) {
                vmap[e] = S + e;
                in_place++;
                continue;
            }
            if (owner[victim] >= 0)
                slot_of[owner[victim]] = -1;
            owner[victim] = e;
            slot_of[e] = victim;
            last[victim] = b + 1;
            vmap[e] = victim;
        }
        int32_t v[P];
        assert_mcl_ok(mcl_tensor_download(vids, 0, v, sizeof v));
        for (int p = 0; p < P; p++)
            ok &= v[p] == vmap[batches[b][p]];
        assert_mcl_ok(mcl_dequantize_tensor(ctx, cache, f));
        assert_mcl_ok(mcl_tensor_download(f, 0, got, sizeof got));
        for (int s = 0; s < S; s++)
            for (int i = 0; owner[s] >= 0 && i < N * K; i++)
                ok &= got[s * N * K + i] == want[owner[s] * N * K + i];
    }
    int32_t head[MCL_EXPERT_STATE_HEADER];
    assert_mcl_ok(mcl_tensor_download(st, 0, head, sizeof head));
    ok &= in_place == 1 && head[MCL_EXPERT_STATE_POOL_READS] == in_place &&
          head[MCL_EXPERT_STATE_HITS] == hits && head[MCL_EXPERT_STATE_CLOCK] == 4;
    assert_true(mcl_test_record_bool("expert plan and copies: virtual ids, slots' bytes and "
                                     "counts as the host predicts", ok));
    mcl_tensor *all[] = {pool, cache, st, ids, vids, f};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_and_copies),
        cmocka_unit_test(budget_too_small),
        cmocka_unit_test(auto_budget),
        cmocka_unit_test(every_weight_type),
        cmocka_unit_test(qwen2moe_shared_expert),
    };
    return mcl_test_finish(
        cmocka_run_group_tests(tests, mcl_test_scratch_setup, mcl_test_scratch_teardown));
}
