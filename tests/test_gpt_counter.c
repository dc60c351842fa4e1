/* The GPT with counter-state linear layers (MCL_GPT_COUNTER, experimental): forward logits and
 * f32 gradients against an f32 model holding the decoded weights (ordinary and reversible
 * blocks), the update's determinism and its seed per step (a captured step replayed against
 * eager steps, bit for bit), learning on a fixed batch (lr 0: the control), checkpoints
 * (version 3), persistent device memory against the f32 + AdamW model of the same shape, and
 * configuration checks.
 *
 * Tolerances:
 *  - decoded model: the counter layers' products and the f32 GEMM sum in different orders
 *    (~1e-7 relative per value): logits and gradient NMSE <= 1e-9; a wrong weight (one layer
 *    negated: the control) gives NMSE ~1e-5 or more;
 *  - learning: the loss on a fixed batch falls below 60% of its first value within
 *    LEARN_STEPS; with every learning rate 0 it stays within 1e-6 of it;
 *  - memory: persistent bytes of the counter model, and the peak of a training step in a
 *    context of its own, at most 0.15x the f32 model's at a shape whose weights are mostly in
 *    the blocks (the per-weight state is 0.75 B + 8 / in B against 16 B: parameter, gradient
 *    and two moments; the activations at 2 x 8 tokens are small). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define DECODED_TOLERANCE 1e-9
#define LEARN_STEPS 40
#define LEARN_RATIO 0.6
#define MEMORY_RATIO 0.15

static mcl_context *ctx;

enum { B = 2, T = 8, VOCAB = 13 };

static mcl_gpt_desc counter_desc(int32_t layers, uint32_t flags, uint32_t C)
{
    return (mcl_gpt_desc){.size = sizeof(mcl_gpt_desc), .vocab = VOCAB, .dim = 32,
                          .layers = layers, .heads = 2, .kv_heads = 1, .hidden = 48,
                          .max_seq = T, .tied_head = 1, .rope_layout = MCL_ROPE_INTERLEAVED,
                          .flags = flags, .counter_c = (flags & MCL_GPT_COUNTER) ? C : 0};
}


typedef struct batch {
    int32_t tok[B * T], tgt[B * T];
    mcl_tensor *tokens, *targets, *loss;
} batch;

static void batch_make(batch *b, uint32_t seed)
{
    mcl_test_random_ids(b->tok, B * T, VOCAB, seed);
    mcl_test_random_ids(b->tgt, B * T, VOCAB, seed + 1);
    int64_t shape[2] = {B, T};
    b->tokens = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, shape, b->tok);
    b->targets = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, shape, b->tgt);
    const int64_t one = 1;
    b->loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
}

static void batch_free(batch *b)
{
    mcl_tensor_destroy(b->tokens);
    mcl_tensor_destroy(b->targets);
    mcl_tensor_destroy(b->loss);
}

static float *download_floats(mcl_tensor *t)
{
    size_t n = (size_t)mcl_tensor_numel(t);
    float *out = mcl_test_floats(n);
    assert_mcl_ok(mcl_tensor_download(t, 0, out, n * 4));
    return out;
}

/* Every counter layer's state, scales and moments, concatenated (caller frees). */
static unsigned char *counter_bytes(mcl_gpt *gpt, size_t *n)
{
    mcl_gpt_desc c = {.size = sizeof c};
    assert_mcl_ok(mcl_gpt_config(gpt, &c));
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        unsigned char *out = pass ? malloc(total) : NULL;
        size_t at = 0;
        for (int32_t l = 0; l < c.layers; l++) {
            for (int w = MCL_GPT_WQ; w <= MCL_GPT_W_DOWN; w++) {
                mcl_counter_linear *layer = mcl_gpt_counter_layer(gpt, l, (mcl_gpt_linear)w);
                assert_non_null(layer);
                mcl_tensor *t[3] = {mcl_counter_linear_state(layer),
                                    mcl_counter_linear_scale(layer),
                                    mcl_counter_linear_moment(layer)};
                for (int k = 0; k < 3; k++) {
                    size_t bytes = (size_t)mcl_tensor_nbytes(t[k]);
                    if (pass)
                        assert_mcl_ok(mcl_tensor_download(t[k], 0, out + at, bytes));
                    at += bytes;
                }
            }
        }
        if (pass) {
            *n = total;
            return out;
        }
        total = at;
    }
    return NULL;
}

/* The f32 parameter of `dense` named `name` (a copy of the values lives at its offset). */
static int param_index(mcl_gpt *gpt, const char *name, mcl_gpt_param_info *info)
{
    for (uint32_t i = 0; i < mcl_gpt_param_count(gpt); i++) {
        assert_mcl_ok(mcl_gpt_param(gpt, i, info));
        if (strcmp(info->name, name) == 0)
            return (int)i;
    }
    return -1;
}

static const char *const linear_names[7] = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"};

/* An f32 model of the counter model's configuration holding its f32 parameters and its
 * layers' decoded weights (s x t). */
static mcl_gpt *decoded_twin(mcl_gpt *counter)
{
    mcl_gpt_desc c = {.size = sizeof c};
    assert_mcl_ok(mcl_gpt_config(counter, &c));
    c.flags &= ~(uint32_t)MCL_GPT_COUNTER;
    c.counter_c = 0;
    mcl_gpt *dense;
    assert_mcl_ok(mcl_gpt_create(ctx, &c, 99, &dense));
    float *dp = download_floats(mcl_gpt_parameters(dense));
    float *cp = download_floats(mcl_gpt_parameters(counter));
    mcl_gpt_param_info ci, di;
    for (uint32_t i = 0; i < mcl_gpt_param_count(counter); i++) {
        assert_mcl_ok(mcl_gpt_param(counter, i, &ci));
        assert_true(param_index(dense, ci.name, &di) >= 0);
        assert_int_equal(ci.count, di.count);
        memcpy(dp + di.offset, cp + ci.offset, (size_t)ci.count * 4);
    }
    char name[64];
    for (int32_t l = 0; l < c.layers; l++) {
        for (int w = 0; w < 7; w++) {
            snprintf(name, sizeof name, "layers.%d.%s", (int)l, linear_names[w]);
            assert_true(param_index(dense, name, &di) >= 0);
            assert_mcl_ok(mcl_counter_linear_to_f32(
                mcl_gpt_counter_layer(counter, l, (mcl_gpt_linear)w), dp + di.offset, NULL,
                NULL));
        }
    }
    assert_mcl_ok(mcl_tensor_upload(mcl_gpt_parameters(dense), 0, dp,
                                    (size_t)mcl_tensor_nbytes(mcl_gpt_parameters(dense))));
    free(dp), free(cp);
    return dense;
}

/* NMSE over the f32 parameters' gradients of `counter`, against the same names of `dense`. */
static double gradient_nmse(mcl_gpt *counter, mcl_gpt *dense)
{
    float *cg = download_floats(mcl_gpt_gradients(counter));
    float *dg = download_floats(mcl_gpt_gradients(dense));
    size_t n = (size_t)mcl_gpt_param_numel(counter), at = 0;
    float *got = mcl_test_floats(n), *want = mcl_test_floats(n);
    mcl_gpt_param_info ci, di;
    for (uint32_t i = 0; i < mcl_gpt_param_count(counter); i++) {
        assert_mcl_ok(mcl_gpt_param(counter, i, &ci));
        assert_true(param_index(dense, ci.name, &di) >= 0);
        memcpy(got + at, cg + ci.offset, (size_t)ci.count * 4);
        memcpy(want + at, dg + di.offset, (size_t)ci.count * 4);
        at += (size_t)ci.count;
    }
    double err = mcl_nmse(got, want, n);
    free(cg), free(dg), free(got), free(want);
    return err;
}

/* The counter layers' moments after one backward from v = 0 against the decoded twin's weight
 * gradients (the same G = dy^T x, summed in another order): v = (1 - beta) mean_i G[o, i]^2
 * with beta 0.9, so each of the seven linears' update must have read its own x and grad_out.
 * The largest NMSE of a layer's rows; `control`, the smallest with each block's moments set
 * against the next block's gradients. */
static void moments_against_twin(mcl_gpt *counter, mcl_gpt *dense, int32_t layers,
                                 double *nmse, double *control)
{
    float *dg = download_floats(mcl_gpt_gradients(dense));
    size_t rows = 0;
    for (int32_t l = 0; l < layers; l++) {
        for (int w = MCL_GPT_WQ; w <= MCL_GPT_W_DOWN; w++)
            rows += (size_t)mcl_tensor_numel(mcl_counter_linear_moment(
                mcl_gpt_counter_layer(counter, l, (mcl_gpt_linear)w)));
    }
    float *got = mcl_test_floats(rows), *want = mcl_test_floats(rows);
    float *other = mcl_test_floats(rows);
    size_t at = 0;
    for (int32_t l = 0; l < layers; l++) {
        for (int w = MCL_GPT_WQ; w <= MCL_GPT_W_DOWN; w++) {
            mcl_counter_linear *layer = mcl_gpt_counter_layer(counter, l, (mcl_gpt_linear)w);
            mcl_tensor *moment = mcl_counter_linear_moment(layer);
            const int64_t out = mcl_tensor_numel(moment);
            assert_mcl_ok(mcl_tensor_download(moment, 0, got + at, (size_t)out * 4));
            for (int k = 0; k < 2; k++) {
                char name[64];
                mcl_gpt_param_info di;
                snprintf(name, sizeof name, "layers.%d.%s", (int)((l + k) % layers),
                         linear_names[w]);
                assert_true(param_index(dense, name, &di) >= 0);
                const int64_t in = di.count / out;
                for (int64_t o = 0; o < out; o++) {
                    double sq = 0.0;
                    for (int64_t i = 0; i < in; i++) {
                        const double g = dg[di.offset + o * in + i];
                        sq += g * g;
                    }
                    (k ? other : want)[at + (size_t)o] = (float)(0.1 * sq / (double)in);
                }
            }
            at += (size_t)out;
        }
    }
    *nmse = 0.0, *control = 1e30;
    at = 0;
    for (int32_t l = 0; l < layers; l++) {
        for (int w = MCL_GPT_WQ; w <= MCL_GPT_W_DOWN; w++) {
            const size_t out = (size_t)mcl_tensor_numel(mcl_counter_linear_moment(
                mcl_gpt_counter_layer(counter, l, (mcl_gpt_linear)w)));
            const double e = mcl_nmse(got + at, want + at, out);
            const double c = mcl_nmse(got + at, other + at, out);
            *nmse = e > *nmse ? e : *nmse;
            *control = c < *control ? c : *control;
            at += out;
        }
    }
    free(dg), free(got), free(want), free(other);
}

/* --- Against the decoded model -------------------------------------------------------- */

static void matches_decoded_model(void **state)
{
    (void)state;
    int passed = 1;
    char name[160];
    const uint32_t flags[2] = {0, MCL_GPT_REVERSIBLE};
    for (int f = 0; f < 2; f++) {
        const char *kind = flags[f] ? "reversible" : "ordinary";
        mcl_gpt_desc desc = counter_desc(3, MCL_GPT_COUNTER | flags[f], 0);
        mcl_gpt *counter;
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 3, &counter));
        /* lr 0 and lr_scale 0: the backward leaves every t and c (and s) as they are. */
        mcl_counter_update_desc frozen = {.size = sizeof frozen, .lr = 0.0f};
        assert_mcl_ok(mcl_gpt_set_counter_update(counter, &frozen));
        mcl_gpt *dense = decoded_twin(counter);
        batch b;
        batch_make(&b, 11 + (uint32_t)f);
        float lc, ld;
        assert_mcl_ok(mcl_gpt_forward(counter, b.tokens, b.targets, b.loss));
        assert_mcl_ok(mcl_tensor_download(b.loss, 0, &lc, 4));
        assert_mcl_ok(mcl_gpt_forward(dense, b.tokens, b.targets, b.loss));
        assert_mcl_ok(mcl_tensor_download(b.loss, 0, &ld, 4));
        float *logits_c = download_floats(mcl_gpt_logits(counter));
        float *logits_d = download_floats(mcl_gpt_logits(dense));
        size_t nl = (size_t)mcl_tensor_numel(mcl_gpt_logits(counter));
        double err = mcl_nmse(logits_c, logits_d, nl);
        size_t nbytes;
        unsigned char *before = counter_bytes(counter, &nbytes);
        assert_mcl_ok(mcl_gpt_backward(counter));
        assert_mcl_ok(mcl_gpt_backward(dense));
        double gerr = gradient_nmse(counter, dense);
        double merr, mctl;
        moments_against_twin(counter, dense, desc.layers, &merr, &mctl);
        /* t and c: the state bytes of each layer (the moments move, the scales stay). */
        size_t after_n;
        unsigned char *after = counter_bytes(counter, &after_n);
        int same_states = 1;
        size_t at = 0;
        for (int32_t l = 0; l < desc.layers; l++) {
            for (int w = 0; w < 7; w++) {
                mcl_counter_linear *layer = mcl_gpt_counter_layer(counter, l, (mcl_gpt_linear)w);
                size_t sb = (size_t)mcl_tensor_nbytes(mcl_counter_linear_state(layer));
                size_t rb = (size_t)mcl_tensor_nbytes(mcl_counter_linear_scale(layer));
                same_states &= memcmp(before + at, after + at, sb + rb) == 0;
                at += sb + 2 * rb;
            }
        }
        printf("%s: loss %.6f (decoded f32 model %.6f), logits nmse %.3g, f32 gradients nmse "
               "%.3g\n", kind, (double)lc, (double)ld, err, gerr);
        snprintf(name, sizeof name, "counter GPT (%s): logits against the decoded f32 model",
                 kind);
        passed &= mcl_test_record(name, "nmse", err, DECODED_TOLERANCE);
        snprintf(name, sizeof name, "counter GPT (%s): f32 gradients against the decoded f32 "
                 "model", kind);
        passed &= mcl_test_record(name, "nmse", gerr, DECODED_TOLERANCE);
        snprintf(name, sizeof name, "counter GPT (%s): lr 0 leaves every state and scale",
                 kind);
        passed &= mcl_test_record_bool(name, same_states && after_n == nbytes);
        printf("%s: moments against the decoded model's weight gradients, the largest nmse of a "
               "layer %.3g; against the next block's (control), the smallest %.3g\n", kind,
               merr, mctl);
        snprintf(name, sizeof name, "counter GPT (%s): each linear's moment from its own "
                 "gradient, against the decoded f32 model's", kind);
        passed &= mcl_test_record(name, "nmse", merr, DECODED_TOLERANCE);
        snprintf(name, sizeof name, "counter GPT (%s): control, the moments against the next "
                 "block's gradients differ", kind);
        passed &= mcl_test_record_bool(name, mctl > 1e-3);

        /* Negative control: one layer's weights negated in the twin. */
        mcl_gpt_param_info di;
        assert_true(param_index(dense, "layers.1.w_up", &di) >= 0);
        float *dp = download_floats(mcl_gpt_parameters(dense));
        for (int64_t j = 0; j < di.count; j++)
            dp[di.offset + j] = -dp[di.offset + j];
        assert_mcl_ok(mcl_tensor_upload(mcl_gpt_parameters(dense), 0, dp,
                                        (size_t)mcl_tensor_nbytes(mcl_gpt_parameters(dense))));
        assert_mcl_ok(mcl_gpt_forward(dense, b.tokens, NULL, NULL));
        float *wrong = download_floats(mcl_gpt_logits(dense));
        double ctl = mcl_nmse(logits_c, wrong, nl);
        printf("%s control (one layer negated): logits nmse %.3g\n", kind, ctl);
        snprintf(name, sizeof name, "counter GPT (%s): negative control (a layer negated) is "
                 "caught", kind);
        passed &= mcl_test_record_bool(name, ctl > DECODED_TOLERANCE);
        free(dp), free(wrong), free(before), free(after), free(logits_c), free(logits_d);
        batch_free(&b);
        mcl_gpt_destroy(dense);
        mcl_gpt_destroy(counter);
    }
    assert_true(passed);
}

/* --- The update: deterministic, its seed per step, replayed -------------------------- */

static void one_step(mcl_gpt *gpt, batch *b, int64_t step, float *loss)
{
    mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f, .step = step};
    assert_mcl_ok(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
    assert_mcl_ok(mcl_gpt_forward(gpt, b->tokens, b->targets, b->loss));
    assert_mcl_ok(mcl_gpt_backward(gpt));
    assert_mcl_ok(mcl_gpt_step(gpt));
    if (loss)
        assert_mcl_ok(mcl_tensor_download(b->loss, 0, loss, 4));
}

static void replay_matches_eager(void **state)
{
    (void)state;
    enum { STEPS = 3 };
    int passed = 1;
    const uint32_t flags[2] = {0, MCL_GPT_REVERSIBLE};
    for (int f = 0; f < 2; f++) {
        mcl_gpt_desc desc = counter_desc(2, MCL_GPT_COUNTER | flags[f], 0);
        batch b;
        batch_make(&b, 21);
        mcl_gpt *eager, *replayed, *same_step, *other_seed;
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 5, &eager));
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 5, &replayed));
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 5, &same_step));
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 5, &other_seed));
        mcl_counter_update_desc upd = {.size = sizeof upd, .lr = 2e-2f, .seed = 12345u};
        assert_mcl_ok(mcl_gpt_set_counter_update(eager, &upd));
        assert_mcl_ok(mcl_gpt_set_counter_update(replayed, &upd));
        assert_mcl_ok(mcl_gpt_set_counter_update(same_step, &upd));
        upd.seed = 54321u;
        assert_mcl_ok(mcl_gpt_set_counter_update(other_seed, &upd));
        size_t n0;
        unsigned char *initial = counter_bytes(eager, &n0);
        mcl_graph *graph = NULL;
        float le[STEPS], lr[STEPS];
        for (int s = 1; s <= STEPS; s++) {
            one_step(eager, &b, s, &le[s - 1]);
            one_step(same_step, &b, 1, NULL);
            one_step(other_seed, &b, s, NULL);
            mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f, .step = s};
            assert_mcl_ok(mcl_gpt_set_optimizer(replayed, &adam, 1.0f));
            if (!graph) {
                assert_mcl_ok(mcl_graph_begin(ctx));
                assert_mcl_ok(mcl_gpt_forward(replayed, b.tokens, b.targets, b.loss));
                assert_mcl_ok(mcl_gpt_backward(replayed));
                assert_mcl_ok(mcl_gpt_step(replayed));
                assert_mcl_ok(mcl_graph_end(ctx, &graph));
            }
            assert_mcl_ok(mcl_graph_replay(ctx, graph));
            assert_mcl_ok(mcl_tensor_download(b.loss, 0, &lr[s - 1], 4));
        }
        size_t ne, nr, ns, no;
        unsigned char *ce = counter_bytes(eager, &ne), *cr = counter_bytes(replayed, &nr);
        unsigned char *cs = counter_bytes(same_step, &ns), *co = counter_bytes(other_seed, &no);
        float *pe = download_floats(mcl_gpt_parameters(eager));
        float *pr = download_floats(mcl_gpt_parameters(replayed));
        size_t np = (size_t)mcl_tensor_numel(mcl_gpt_parameters(eager));
        int same = ne == nr && memcmp(ce, cr, ne) == 0 && memcmp(pe, pr, np * 4) == 0 &&
                   memcmp(le, lr, sizeof le) == 0;
        /* The states alone (not the moments): count the bytes that differ. */
        size_t moved = 0, seed_diff = 0, step_diff = 0;
        for (size_t i = 0; i < ne; i++) {
            moved += ce[i] != initial[i];
            seed_diff += ce[i] != co[i];
            step_diff += ce[i] != cs[i];
        }
        printf("%s: %u dispatches per step, losses %.6f %.6f %.6f; replay %s; bytes moved by "
               "3 steps %zu of %zu, differing with another seed %zu, with the step kept at 1 "
               "%zu\n", flags[f] ? "reversible" : "ordinary", mcl_graph_dispatch_count(graph),
               (double)le[0], (double)le[1], (double)le[2], same ? "bit-identical" : "DIFFERS",
               moved, ne, seed_diff, step_diff);
        passed &= mcl_test_record_bool("counter GPT: 3 replayed steps equal 3 eager steps bit "
                                       "for bit (states, scales, moments, f32 parameters)",
                                       same);
        passed &= mcl_test_record_bool("counter GPT: the steps changed the states", moved > 0);
        passed &= mcl_test_record_bool("counter GPT: another base seed gives other states "
                                       "(control)", seed_diff > 0);
        passed &= mcl_test_record_bool("counter GPT: the seed follows the step (the same step "
                                       "three times gives other states: control)",
                                       step_diff > 0);
        mcl_graph_destroy(graph);
        free(initial), free(ce), free(cr), free(cs), free(co), free(pe), free(pr);
        mcl_gpt_destroy(eager), mcl_gpt_destroy(replayed);
        mcl_gpt_destroy(same_step), mcl_gpt_destroy(other_seed);
        batch_free(&b);
    }
    assert_true(passed);
}

/* --- Learning -------------------------------------------------------------------------- */

static void train(float lr, uint32_t flags, float *first, float *last)
{
    mcl_gpt_desc desc = counter_desc(2, MCL_GPT_COUNTER | flags, 0);
    mcl_gpt *gpt;
    assert_mcl_ok(mcl_gpt_create(ctx, &desc, 7, &gpt));
    mcl_counter_update_desc upd = {.size = sizeof upd, .lr = lr, .seed = 7u};
    assert_mcl_ok(mcl_gpt_set_counter_update(gpt, &upd));
    batch b;
    batch_make(&b, 31);
    for (int s = 1; s <= LEARN_STEPS; s++) {
        mcl_adamw_desc adam = {.size = sizeof adam, .lr = lr, .step = s};
        assert_mcl_ok(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
        assert_mcl_ok(mcl_gpt_forward(gpt, b.tokens, b.targets, b.loss));
        if (s == 1)
            assert_mcl_ok(mcl_tensor_download(b.loss, 0, first, 4));
        assert_mcl_ok(mcl_gpt_backward(gpt));
        assert_mcl_ok(mcl_gpt_step(gpt));
    }
    assert_mcl_ok(mcl_gpt_forward(gpt, b.tokens, b.targets, b.loss));
    assert_mcl_ok(mcl_tensor_download(b.loss, 0, last, 4));
    batch_free(&b);
    mcl_gpt_destroy(gpt);
}

static void learns_fixed_batch(void **state)
{
    (void)state;
    int passed = 1;
    char name[160];
    const uint32_t flags[2] = {0, MCL_GPT_REVERSIBLE};
    for (int f = 0; f < 2; f++) {
        const char *kind = flags[f] ? "reversible" : "ordinary";
        float first, last, first0, last0;
        train(2e-2f, flags[f], &first, &last);
        train(0.0f, flags[f], &first0, &last0);
        printf("%s: loss on a fixed batch %.4f -> %.4f in %d steps (lr 0: %.4f -> %.4f)\n",
               kind, (double)first, (double)last, LEARN_STEPS, (double)first0,
               (double)last0);
        snprintf(name, sizeof name, "counter GPT (%s) learns a fixed batch: last / first loss",
                 kind);
        passed &= mcl_test_record(name, "ratio", (double)last / (double)first, LEARN_RATIO);
        snprintf(name, sizeof name, "counter GPT (%s), lr 0: the loss stays (control)", kind);
        passed &= mcl_test_record(name, "|last - first|", fabs((double)last0 - first0), 1e-6);
    }
    assert_true(passed);
}

/* --- Checkpoints ----------------------------------------------------------------------- */

static void checkpoint_round_trip(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/counter.ckpt", mcl_test_scratch_dir());
    mcl_gpt_desc desc = counter_desc(2, MCL_GPT_COUNTER | MCL_GPT_REVERSIBLE, 5);
    batch b;
    batch_make(&b, 41);
    mcl_gpt *gpt, *loaded;
    assert_mcl_ok(mcl_gpt_create(ctx, &desc, 9, &gpt));
    mcl_counter_update_desc upd = {.size = sizeof upd, .lr = 2e-2f, .seed = 777u};
    assert_mcl_ok(mcl_gpt_set_counter_update(gpt, &upd));
    one_step(gpt, &b, 1, NULL);
    one_step(gpt, &b, 2, NULL);
    assert_mcl_ok(mcl_gpt_save(gpt, path));
    assert_mcl_ok(mcl_gpt_load(ctx, path, &loaded));
    mcl_gpt_desc got = {.size = sizeof got};
    assert_mcl_ok(mcl_gpt_config(loaded, &got));
    int passed = mcl_test_record_bool("counter checkpoint: flags and C kept",
                                      got.flags == desc.flags && got.counter_c == 5);
    size_t na, nb;
    unsigned char *a = counter_bytes(gpt, &na), *c = counter_bytes(loaded, &nb);
    passed &= mcl_test_record_bool("counter checkpoint: states, scales and moments kept",
                                   na == nb && memcmp(a, c, na) == 0);
    free(a), free(c);
    /* The lr is the caller's to set again; the seed and the step come from the file. */
    mcl_counter_update_desc lr_only = {.size = sizeof lr_only, .lr = 2e-2f, .seed = 777u};
    assert_mcl_ok(mcl_gpt_set_counter_update(loaded, &lr_only));
    one_step(gpt, &b, 3, NULL);
    one_step(loaded, &b, 3, NULL);
    a = counter_bytes(gpt, &na);
    c = counter_bytes(loaded, &nb);
    float *pa = download_floats(mcl_gpt_parameters(gpt));
    float *pb = download_floats(mcl_gpt_parameters(loaded));
    size_t np = (size_t)mcl_tensor_numel(mcl_gpt_parameters(gpt));
    passed &= mcl_test_record_bool("counter checkpoint: the next step is the same bit for bit",
                                   na == nb && memcmp(a, c, na) == 0 &&
                                       memcmp(pa, pb, np * 4) == 0);
    free(a), free(c), free(pa), free(pb);
    mcl_gpt_destroy(loaded);
    /* A version 3 file whose flags lost the counter bit is refused. */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    unsigned char version[4];
    assert_int_equal(fseek(f, 8, SEEK_SET), 0);
    assert_int_equal(fread(version, 1, 4, f), 4);
    passed &= mcl_test_record_bool("counter checkpoint: written as version 3",
                                   version[0] == 3 && !version[1] && !version[2] &&
                                       !version[3]);
    unsigned char flags_byte = (unsigned char)MCL_GPT_REVERSIBLE;
    assert_int_equal(fseek(f, 88, SEEK_SET), 0);
    assert_int_equal(fwrite(&flags_byte, 1, 1, f), 1);
    fclose(f);
    mcl_test_expect_status("a version 3 file without the counter flag",
                           mcl_gpt_load(ctx, path, &loaded), MCL_ERROR_INVALID_ARGUMENT);
    passed &= mcl_test_record("counter checkpoint: damaged files give the documented status",
                              "wrong statuses", mcl_test_wrong_statuses, 0);
    mcl_gpt_destroy(gpt);
    batch_free(&b);
    assert_true(passed);
}

/* --- Memory ---------------------------------------------------------------------------- */

static uint64_t allocated(void)
{
    mcl_memory_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_context_memory_stats(ctx, &st));
    return st.bytes_allocated;
}

static void persistent_memory(void **state)
{
    (void)state;
    /* Weights mostly in the blocks: 4 blocks of dim 128, hidden 512, a small vocabulary. */
    mcl_gpt_desc desc = {.size = sizeof desc, .vocab = 16, .dim = 128, .layers = 4,
                         .heads = 4, .hidden = 512, .max_seq = T, .tied_head = 1,
                         .rope_layout = MCL_ROPE_INTERLEAVED};
    uint64_t bytes[2];
    int64_t block_weights = 0;
    for (int counter = 0; counter < 2; counter++) {
        desc.flags = counter ? MCL_GPT_COUNTER : 0;
        uint64_t before = allocated();
        mcl_gpt *gpt;
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 1, &gpt));
        assert_mcl_ok(mcl_finish(ctx));
        bytes[counter] = allocated() - before;
        if (!counter)
            block_weights = mcl_gpt_param_numel(gpt) - 16 * 128 - 9 * 128;
        mcl_gpt_destroy(gpt);
    }
    double ratio = (double)bytes[1] / (double)bytes[0];
    printf("persistent device memory, %lld block weights: f32 + AdamW %.1f KiB, counter-state "
           "%.1f KiB (ratio %.3f; per block weight at 0.75 + 8 / in B: %.1f KiB of state)\n",
           (long long)block_weights, bytes[0] / 1024.0, bytes[1] / 1024.0, ratio,
           (double)block_weights * 0.765625 / 1024.0);
    mcl_test_record_figure("counter GPT persistent memory / f32 + AdamW (dim 128, 4 blocks)",
                           ratio, "ratio");
    assert_true(mcl_test_record("counter GPT: persistent memory against f32 + AdamW", "ratio",
                                ratio, MEMORY_RATIO));
}

/* A training step's device memory, in a context of its own (its peak starts at zero):
 * persistent (allocated after the step: the model, its optimizer state and activations)
 * and peak (the most at any time, scratch included). */
static void step_memory(const mcl_gpt_desc *desc, uint64_t *persistent, uint64_t *peak,
                        uint64_t *validation_errors)
{
    mcl_context *own;
    assert_mcl_ok(mcl_context_create(NULL, &own));
    mcl_gpt *gpt;
    assert_mcl_ok(mcl_gpt_create(own, desc, 1, &gpt));
    int32_t tok[B * T];
    mcl_test_random_ids(tok, B * T, desc->vocab, 5);
    int64_t shape[2] = {B, T}, one = 1;
    mcl_tensor *tokens = mcl_test_tensor(own, MCL_DTYPE_I32, 2, shape, tok);
    mcl_tensor *loss = mcl_test_tensor(own, MCL_DTYPE_F32, 1, &one, NULL);
    mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-3f, .step = 1};
    assert_mcl_ok(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
    assert_mcl_ok(mcl_gpt_forward(gpt, tokens, tokens, loss));
    assert_mcl_ok(mcl_gpt_backward(gpt));
    assert_mcl_ok(mcl_gpt_step(gpt));
    assert_mcl_ok(mcl_finish(own));
    mcl_memory_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_context_memory_stats(own, &st));
    *persistent = st.bytes_allocated;
    *peak = st.bytes_allocated_peak;
    *validation_errors = mcl_context_validation_errors(own);
    mcl_tensor_destroy(tokens), mcl_tensor_destroy(loss);
    mcl_gpt_destroy(gpt);
    mcl_context_destroy(own);
}

static void training_step_memory(void **state)
{
    (void)state;
    mcl_gpt_desc desc = {.size = sizeof desc, .vocab = 16, .dim = 128, .layers = 4,
                         .heads = 4, .hidden = 512, .max_seq = T, .tied_head = 1,
                         .rope_layout = MCL_ROPE_INTERLEAVED};
    uint64_t persistent[2], peak[2], errors[2];
    for (int counter = 0; counter < 2; counter++) {
        desc.flags = counter ? MCL_GPT_COUNTER : 0;
        step_memory(&desc, &persistent[counter], &peak[counter], &errors[counter]);
    }
    printf("a training step (dim 128, 4 blocks, %d x %d tokens): f32 + AdamW %.1f KiB "
           "persistent, %.1f KiB peak; counter-state %.1f KiB persistent, %.1f KiB peak\n", B,
           T, persistent[0] / 1024.0, peak[0] / 1024.0, persistent[1] / 1024.0,
           peak[1] / 1024.0);
    mcl_test_record_figure("counter GPT step peak memory / f32 + AdamW (dim 128, 4 blocks)",
                           (double)peak[1] / (double)peak[0], "ratio");
    int passed = mcl_test_record("counter GPT: a step's peak memory against f32 + AdamW",
                                 "ratio", (double)peak[1] / (double)peak[0], MEMORY_RATIO);
    passed &= mcl_test_record("counter GPT: memory contexts' validation errors", "count",
                              (double)(errors[0] + errors[1]), 0);
    assert_true(passed);
}

/* --- Configuration --------------------------------------------------------------------- */

#define INVALID MCL_ERROR_INVALID_ARGUMENT
#define EXPECT_STATUS(call, want) mcl_test_expect_status(#call, (call), (want))

static void configuration_checks(void **state)
{
    (void)state;
    mcl_gpt *gpt = NULL;
    mcl_gpt_desc bad[4] = {counter_desc(2, MCL_GPT_COUNTER, 12), counter_desc(2, 0, 0),
                           counter_desc(2, MCL_GPT_COUNTER, 0),
                           counter_desc(2, MCL_GPT_COUNTER, 0)};
    bad[1].counter_c = 3;  /* C without the flag */
    bad[2].dim = 24;       /* not a multiple of 16 */
    bad[2].heads = 2;
    bad[3].hidden = 40;    /* not a multiple of 16 */
    for (int i = 0; i < 4; i++)
        EXPECT_STATUS(mcl_gpt_create(ctx, &bad[i], 1, &gpt), INVALID);
    mcl_gpt_desc desc = counter_desc(2, MCL_GPT_COUNTER, 0);
    assert_mcl_ok(mcl_gpt_create(ctx, &desc, 1, &gpt));
    mcl_gpt_desc got = {.size = sizeof got};
    assert_mcl_ok(mcl_gpt_config(gpt, &got));
    int passed = mcl_test_record_bool("counter GPT: C 0 means 11", got.counter_c == 11);
    passed &= mcl_test_record_bool("counter GPT: f32 parameters are the embedding and the norms",
                                   mcl_gpt_param_count(gpt) == 1 + 2 * 2 + 1 &&
                                       mcl_gpt_param_numel(gpt) == VOCAB * 32 + 5 * 32);
    passed &= mcl_test_record_bool("counter GPT: layers out of range are NULL",
                                   !mcl_gpt_counter_layer(gpt, 2, MCL_GPT_WQ) &&
                                       !mcl_gpt_counter_layer(gpt, -1, MCL_GPT_WQ) &&
                                       !mcl_gpt_counter_layer(gpt, 0, (mcl_gpt_linear)7) &&
                                       mcl_gpt_counter_layer(gpt, 1, MCL_GPT_W_DOWN));
    mcl_counter_update_desc upd = {.size = sizeof upd, .lr = -1.0f};
    EXPECT_STATUS(mcl_gpt_set_counter_update(gpt, &upd), INVALID);
    EXPECT_STATUS(mcl_gpt_set_counter_update(gpt, NULL), INVALID);
    EXPECT_STATUS(mcl_gpt_set_counter_update(NULL, &upd), INVALID);
    mcl_gpt_destroy(gpt);
    mcl_gpt_desc plain = counter_desc(2, 0, 0);
    assert_mcl_ok(mcl_gpt_create(ctx, &plain, 1, &gpt));
    upd.lr = 1e-3f;
    EXPECT_STATUS(mcl_gpt_set_counter_update(gpt, &upd), INVALID); /* no counter layers */
    passed &= mcl_test_record_bool("an f32 model has no counter layers",
                                   !mcl_gpt_counter_layer(gpt, 0, MCL_GPT_WQ));
    mcl_gpt_destroy(gpt);
    passed &= mcl_test_record("counter GPT: bad configurations and calls give the documented "
                              "statuses", "wrong statuses", mcl_test_wrong_statuses, 0);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_decoded_model),
        cmocka_unit_test(replay_matches_eager),
        cmocka_unit_test(learns_fixed_batch),
        cmocka_unit_test_setup_teardown(checkpoint_round_trip, mcl_test_scratch_setup,
                                        mcl_test_scratch_teardown),
        cmocka_unit_test(persistent_memory),
        cmocka_unit_test(training_step_memory),
        cmocka_unit_test(configuration_checks),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
