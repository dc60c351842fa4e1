/* The GPT's reversible blocks (MCL_GPT_REVERSIBLE, docs/reversible.md): the backward pass by
 * inversion against the same model's backward with every block's inputs kept (anchor 1: no
 * reconstruction) at depths 4, 16 and 64, with the inversion drift printed; the gradients
 * against finite differences of the loss; peak activation memory against depth (flat for
 * reversible blocks, growing for anchor 1 and the ordinary model: the negative controls); a
 * captured step replayed against eager steps; learning on a fixed batch; checkpoints and
 * configuration checks.
 *
 * Tolerances (justified where they are defined below):
 *  - inversion vs kept inputs: gradient NMSE <= 1e-6 at every depth, drift <= 1e-3;
 *  - finite differences: relative error of directional derivatives <= 1e-2;
 *  - memory: reversible peak at 64 blocks <= 1.5x the peak at 4; anchor 1 >= 2x;
 *  - learning: the loss on a fixed batch falls below 25% of ln(vocab) within LEARN_STEPS. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Gradient NMSE, inversion against kept inputs. Both compute the same function; they differ
 * by the reconstruction's rounding: each block's inputs carry a relative error of about the
 * drift (printed: ~1e-6 at 4 blocks to ~1e-4 at 64 for these unit-gain weights), which moves
 * the gradients by as much relatively (NMSE ~1e-12 to ~1e-8). A wrong inversion or a missing
 * gradient path gives far more: the controls below (half of one block's gradients, NMSE
 * >= 3e-4 at 64 blocks; the ordinary model's gradients, NMSE ~1) must fail. */
#define INVERSION_TOLERANCE 1e-6
/* Directional derivatives of the f32 loss: central differences with steps FD_STEP and
 * FD_STEP / 2 extrapolated (Richardson) carry rounding error ~1e-7 * loss / FD_STEP (~1e-4
 * absolute) and truncation ~FD_STEP^4; the derivatives compared are ~1e-2 or larger:
 * relative error ~1e-2 at worst, ~1e-4 typically. A wrong gradient path moves them by tens
 * of percent (the ordinary model's gradient: by 100% or more). */
/* Inversion drift (max relative L2 of a reconstructed block input): FP32 rounding of each
 * block's F and G (~1e-7 relative), amplified by the inverse's Lipschitz constant along
 * the depth: ~1e-6 at 4 blocks, ~1e-4 at 64 here. 3e-3 over 12 blocks was reported
 * elsewhere; above 1e-3 the reconstruction would dominate the gradient error bound above. */
#define DRIFT_TOLERANCE 1e-3
#define FD_STEP 1e-2
#define FD_TOLERANCE 1e-2
#define MEMORY_FLAT_RATIO 1.5
#define MEMORY_GROWTH_RATIO 2.0
#define LEARN_STEPS 60

static mcl_context *ctx;

enum { B = 2, T = 8 };

static mcl_gpt_desc rev_desc(int32_t layers, int32_t anchor, uint32_t flags)
{
    return (mcl_gpt_desc){.size = sizeof(mcl_gpt_desc), .vocab = 13, .dim = 16, .layers = layers,
                          .heads = 2, .kv_heads = 1, .hidden = 24, .max_seq = T,
                          .tied_head = 1, .rope_layout = MCL_ROPE_INTERLEAVED, .flags = flags,
                          .reversible_anchor = anchor};
}

static mcl_tensor *ids_tensor(mcl_context *c, const int32_t *ids)
{
    int64_t shape[2] = {B, T};
    return mcl_test_tensor(c, MCL_DTYPE_I32, 2, shape, ids);
}


static float *download_flat(mcl_tensor *t)
{
    size_t n = (size_t)mcl_tensor_numel(t);
    float *out = mcl_test_floats(n);
    assert_mcl_ok(mcl_tensor_download(t, 0, out, n * 4));
    return out;
}

/* Parameters with unit gain (weights of std 1/sqrt(in), norms near 1, the embedding of unit
 * size), so that every sub-block changes its stream by O(1) and the inversion has something
 * to undo; the same values for every model of one configuration's layout. */
static void set_params(mcl_gpt *gpt, uint32_t seed)
{
    mcl_tensor *flat = mcl_gpt_parameters(gpt);
    float *p = download_flat(flat);
    for (uint32_t i = 0; i < mcl_gpt_param_count(gpt); i++) {
        mcl_gpt_param_info info;
        assert_mcl_ok(mcl_gpt_param(gpt, i, &info));
        float *r = mcl_test_random_floats((size_t)info.count, seed + 31 * i, -1.0f, 1.0f);
        float a = i == 0 ? 1.0f : info.ndim == 2 ? sqrtf(3.0f / (float)info.shape[1]) : 0.2f;
        for (int64_t j = 0; j < info.count; j++)
            p[info.offset + j] = (info.ndim == 1 ? 1.0f : 0.0f) + a * r[j];
        free(r);
    }
    assert_mcl_ok(mcl_tensor_upload(flat, 0, p, (size_t)mcl_tensor_nbytes(flat)));
    free(p);
}

typedef struct batch {
    int32_t tok[B * T], tgt[B * T];
    mcl_tensor *tokens, *targets, *loss;
} batch;

static void batch_make(batch *b, mcl_context *c, int vocab, uint32_t seed)
{
    mcl_test_random_ids(b->tok, B * T, vocab, seed);
    mcl_test_random_ids(b->tgt, B * T, vocab, seed + 1);
    b->tokens = ids_tensor(c, b->tok);
    b->targets = ids_tensor(c, b->tgt);
    const int64_t one = 1;
    b->loss = mcl_test_tensor(c, MCL_DTYPE_F32, 1, &one, NULL);
}

static void batch_free(batch *b)
{
    mcl_tensor_destroy(b->tokens);
    mcl_tensor_destroy(b->targets);
    mcl_tensor_destroy(b->loss);
}

static float loss_of(mcl_gpt *gpt, batch *b)
{
    assert_mcl_ok(mcl_gpt_forward(gpt, b->tokens, b->targets, b->loss));
    float l;
    assert_mcl_ok(mcl_tensor_download(b->loss, 0, &l, 4));
    return l;
}

/* A model of `desc` with set_params(seed); its loss and gradients on the batch. */
static mcl_gpt *model_with_grads(const mcl_gpt_desc *desc, batch *b, float *loss, float **grads)
{
    mcl_gpt *gpt;
    assert_mcl_ok(mcl_gpt_create(ctx, desc, 1, &gpt));
    set_params(gpt, 77);
    assert_mcl_ok(mcl_gpt_forward(gpt, b->tokens, b->targets, b->loss));
    assert_mcl_ok(mcl_gpt_backward(gpt));
    assert_mcl_ok(mcl_tensor_download(b->loss, 0, loss, 4));
    *grads = download_flat(mcl_gpt_gradients(gpt));
    return gpt;
}

/* --- Inversion against kept inputs ---------------------------------------------------- */

static void inversion_matches_kept_inputs(void **state)
{
    (void)state;
    static const int32_t depths[] = {4, 16, 64};
    int passed = 1;
    char name[160];
    for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
        int32_t layers = depths[d];
        batch b;
        batch_make(&b, ctx, 13, 3 + (uint32_t)d);
        mcl_gpt_desc kept_desc = rev_desc(layers, 1, MCL_GPT_REVERSIBLE);
        float kept_loss, *kept;
        mcl_gpt *ref = model_with_grads(&kept_desc, &b, &kept_loss, &kept);
        size_t np = (size_t)mcl_tensor_numel(mcl_gpt_gradients(ref));
        float kept_drift = -1.0f;
        assert_mcl_ok(mcl_gpt_reversible_drift(ref, &kept_drift));
        passed &= mcl_test_record_bool("anchor 1 reconstructs nothing (drift 0)",
                                       kept_drift == 0.0f);
        /* No anchors but the embedding, then anchors every 4 blocks. */
        const int32_t anchors[] = {0, 4};
        for (size_t a = 0; a < 2; a++) {
            mcl_gpt_desc desc = rev_desc(layers, anchors[a], MCL_GPT_REVERSIBLE);
            float loss, *grads, drift = -1.0f;
            mcl_gpt *gpt = model_with_grads(&desc, &b, &loss, &grads);
            assert_mcl_ok(mcl_gpt_reversible_drift(gpt, &drift));
            double err = mcl_nmse(grads, kept, np);
            printf("depth %2d, anchor %d: loss %.6f (kept %.6f), gradient nmse %.3g against "
                   "kept inputs, drift %.3g (max relative L2 of reconstructed block inputs)\n",
                   (int)layers, (int)anchors[a], (double)loss, (double)kept_loss, err,
                   (double)drift);
            snprintf(name, sizeof name, "depth %d anchor %d: gradients by inversion against "
                     "kept inputs", (int)layers, (int)anchors[a]);
            passed &= mcl_test_record(name, "nmse", err, INVERSION_TOLERANCE);
            snprintf(name, sizeof name, "depth %d anchor %d: inversion drift", (int)layers,
                     (int)anchors[a]);
            passed &= mcl_test_record(name, "relative L2", drift, DRIFT_TOLERANCE);
            snprintf(name, sizeof name, "depth %d anchor %d: same loss", (int)layers,
                     (int)anchors[a]);
            passed &= mcl_test_record_bool(name, loss == kept_loss);
            passed &= mcl_test_record_bool("the drift is finite and was measured",
                                           isfinite(drift) && drift >= 0.0f);
            free(grads);
            mcl_gpt_destroy(gpt);
        }

        /* Negative controls: half of the middle block's gradients, and the ordinary model's
         * gradients (the same parameters, another function), are caught. */
        float *wrong = mcl_test_floats(np);
        memcpy(wrong, kept, np * 4);
        for (uint32_t i = 1 + (uint32_t)(layers / 2) * 9; i < 1 + (uint32_t)(layers / 2 + 1) * 9;
             i++) {
            mcl_gpt_param_info info;
            assert_mcl_ok(mcl_gpt_param(ref, i, &info));
            for (int64_t j = 0; j < info.count; j++)
                wrong[info.offset + j] *= 0.5f;
        }
        double ctl = mcl_nmse(wrong, kept, np);
        snprintf(name, sizeof name, "depth %d: negative control (half a block's gradients) is "
                 "caught", (int)layers);
        passed &= mcl_test_record_bool(name, ctl > INVERSION_TOLERANCE);
        free(wrong);
        mcl_gpt_desc plain_desc = rev_desc(layers, 0, 0);
        float plain_loss, *plain;
        mcl_gpt *ordinary = model_with_grads(&plain_desc, &b, &plain_loss, &plain);
        double ctl2 = mcl_nmse(plain, kept, np);
        printf("depth %2d controls: half a block's gradients nmse %.3g, ordinary model's "
               "gradients nmse %.3g\n", (int)layers, ctl, ctl2);
        snprintf(name, sizeof name, "depth %d: negative control (the ordinary model's "
                 "gradients) is caught", (int)layers);
        passed &= mcl_test_record_bool(name, ctl2 > INVERSION_TOLERANCE);
        free(plain);
        mcl_gpt_destroy(ordinary);
        free(kept);
        mcl_gpt_destroy(ref);
        batch_free(&b);
    }
    assert_true(passed);
}

/* --- Finite differences --------------------------------------------------------------- */

/* Central difference of loss(p + h v) at h = 0 with step `step`. */
static double central(mcl_gpt *gpt, batch *b, const float *p0, const float *v, size_t np,
                      double step)
{
    float *p = mcl_test_floats(np);
    double l[2];
    for (int s = 0; s < 2; s++) {
        double h = s ? -step : step;
        for (size_t i = 0; i < np; i++)
            p[i] = (float)(p0[i] + h * v[i]);
        assert_mcl_ok(mcl_tensor_upload(mcl_gpt_parameters(gpt), 0, p, np * 4));
        l[s] = loss_of(gpt, b);
    }
    free(p);
    return (l[0] - l[1]) / (2.0 * step);
}

/* d/dh loss(p + h v) at h = 0: central differences at FD_STEP and FD_STEP / 2 combined by
 * Richardson extrapolation, which cancels their h^2 error term. */
static double directional_fd(mcl_gpt *gpt, batch *b, const float *p0, const float *v, size_t np)
{
    double d1 = central(gpt, b, p0, v, np, FD_STEP);
    double d2 = central(gpt, b, p0, v, np, FD_STEP / 2);
    return (4.0 * d2 - d1) / 3.0;
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    /* No anchor (block 0 kept) and an anchor at block 2: both reconstruct. */
    const int32_t anchors[] = {0, 2};
    int passed = 1;
    char name[160];
    for (size_t a = 0; a < 2; a++) {
        mcl_gpt_desc desc = rev_desc(3, anchors[a], MCL_GPT_REVERSIBLE);
        batch b;
        batch_make(&b, ctx, desc.vocab, 41);
        float loss, *g;
        mcl_gpt *gpt = model_with_grads(&desc, &b, &loss, &g);
        mcl_gpt_desc plain_desc = rev_desc(3, 0, 0);
        float plain_loss, *plain_g;
        mcl_gpt *plain = model_with_grads(&plain_desc, &b, &plain_loss, &plain_g);
        mcl_gpt_destroy(plain);
        float *p0 = download_flat(mcl_gpt_parameters(gpt));
        size_t np = (size_t)mcl_tensor_numel(mcl_gpt_parameters(gpt));
        float *v = mcl_test_floats(np);
        /* One direction per parameter of block 1 and per global parameter, and one over
         * everything. */
        uint32_t count = mcl_gpt_param_count(gpt);
        double worst = 0.0, worst_control = 0.0;
        for (uint32_t k = 0; k <= 11; k++) {
            memset(v, 0, np * 4);
            for (uint32_t i = 0; i < count; i++) {
                int pick = k == 11 || (k == 0 && i == 0) ||
                           (k >= 1 && k <= 9 && i == 1 + 9 + (k - 1)) ||
                           (k == 10 && i == count - 1);
                if (!pick)
                    continue;
                mcl_gpt_param_info info;
                assert_mcl_ok(mcl_gpt_param(gpt, i, &info));
                float *r = mcl_test_random_floats((size_t)info.count, 100 * k + i, -1.0f, 1.0f);
                memcpy(v + info.offset, r, (size_t)info.count * 4);
                free(r);
            }
            double an = 0.0, wrong = 0.0;
            for (size_t i = 0; i < np; i++) {
                an += (double)g[i] * v[i];
                wrong += (double)plain_g[i] * v[i];
            }
            double fd = directional_fd(gpt, &b, p0, v, np);
            double rel = fabs(fd - an) / fmax(fabs(fd), 1e-3);
            double rel_wrong = fabs(fd - wrong) / fmax(fabs(fd), 1e-3);
            mcl_gpt_param_info info;
            assert_mcl_ok(mcl_gpt_param(gpt, k == 0 ? 0 : k <= 9 ? 1 + 9 + (k - 1) : count - 1,
                                        &info));
            printf("anchor %d, direction %-22s: fd %+.6f, gradient %+.6f, relative error %.2g "
                   "(ordinary model's gradient: %.2g)\n", (int)anchors[a],
                   k == 11 ? "(all parameters)" : info.name, fd, an, rel, rel_wrong);
            worst = fmax(worst, rel);
            worst_control = fmax(worst_control, rel_wrong);
        }
        snprintf(name, sizeof name, "anchor %d: directional derivatives against finite "
                 "differences", (int)anchors[a]);
        passed &= mcl_test_record(name, "worst relative error", worst, FD_TOLERANCE);
        /* Control: the ordinary model's gradient fails the same check in some direction. */
        /* Control: the ordinary model's gradient (same parameters, another function)
         * fails the same check. */
        snprintf(name, sizeof name, "anchor %d: negative control (another model's gradient) "
                 "is caught", (int)anchors[a]);
        passed &= mcl_test_record_bool(name, worst_control > FD_TOLERANCE);
        free(p0), free(v), free(g), free(plain_g);
        mcl_gpt_destroy(gpt);
        batch_free(&b);
    }
    assert_true(passed);
}

/* --- Peak activation memory against depth --------------------------------------------- */

/* The peak of a forward and backward pass over [MB, MT] above what the model and the batch
 * hold before it, in a context of its own (the allocator's peak is per context and never
 * resets). 512 rows make the weight gradients' products split K (their partials are scratch
 * of every layer unless shared). */
enum { MB = 8, MT = 64 };

static double step_peak_kib(const mcl_gpt_desc *desc)
{
    mcl_context_desc cd = {.size = sizeof cd, .device_index = -1};
    mcl_context *c = NULL;
    assert_mcl_ok(mcl_context_create(&cd, &c));
    mcl_gpt *gpt;
    assert_mcl_ok(mcl_gpt_create(c, desc, 1, &gpt));
    int32_t ids[MB * MT];
    mcl_test_random_ids(ids, MB * MT, desc->vocab, 5);
    int64_t shape[2] = {MB, MT};
    const int64_t one = 1;
    batch b = {.tokens = mcl_test_tensor(c, MCL_DTYPE_I32, 2, shape, ids),
               .targets = mcl_test_tensor(c, MCL_DTYPE_I32, 2, shape, ids),
               .loss = mcl_test_tensor(c, MCL_DTYPE_F32, 1, &one, NULL)};
    assert_mcl_ok(mcl_finish(c));
    mcl_memory_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_context_memory_stats(c, &st));
    uint64_t before = st.bytes_allocated, peak_before = st.bytes_allocated_peak;
    assert_mcl_ok(mcl_gpt_forward(gpt, b.tokens, b.targets, b.loss));
    assert_mcl_ok(mcl_gpt_backward(gpt));
    assert_mcl_ok(mcl_finish(c));
    assert_mcl_ok(mcl_context_memory_stats(c, &st));
    assert_true(peak_before == before);
    double kib = (double)(st.bytes_allocated_peak - before) / 1024.0;
    batch_free(&b);
    mcl_gpt_destroy(gpt);
    assert_int_equal(mcl_context_validation_errors(c), 0);
    mcl_context_destroy(c);
    return kib;
}

static void activation_memory_flat_in_depth(void **state)
{
    (void)state;
    static const int32_t depths[3] = {4, 16, 64};
    static const struct {
        const char *name;
        int32_t anchor;
        uint32_t flags;
    } modes[4] = {{"reversible", 0, MCL_GPT_REVERSIBLE},
                  {"reversible, anchor 16", 16, MCL_GPT_REVERSIBLE},
                  {"anchor 1 (inputs kept)", 1, MCL_GPT_REVERSIBLE},
                  {"ordinary blocks", 0, 0}};
    double kib[4][3];
    char name[160];
    for (int m = 0; m < 4; m++) {
        for (int d = 0; d < 3; d++) {
            mcl_gpt_desc desc = rev_desc(depths[d], modes[m].anchor, modes[m].flags);
            desc.max_seq = MT;
            kib[m][d] = step_peak_kib(&desc);
            snprintf(name, sizeof name, "peak activation memory, %s, %d blocks", modes[m].name,
                     (int)depths[d]);
            mcl_test_record_figure(name, kib[m][d], "KiB");
        }
        printf("peak activation memory, %-24s: %8.1f KiB at 4 blocks, %8.1f at 16, %8.1f at "
               "64 (x%.2f from 4 to 64)\n", modes[m].name, kib[m][0], kib[m][1], kib[m][2],
               kib[m][2] / kib[m][0]);
    }
    int passed = mcl_test_record("reversible: peak activation memory at 64 blocks over 4",
                                 "ratio", kib[0][2] / kib[0][0], MEMORY_FLAT_RATIO);
    /* Negative controls: keeping every block's inputs, or the ordinary block's activations,
     * grows with depth, so the check above can fail. */
    passed &= mcl_test_record_bool("control: anchor 1 grows at least 2x from 4 to 64 blocks",
                                   kib[2][2] / kib[2][0] >= MEMORY_GROWTH_RATIO);
    passed &= mcl_test_record_bool("control: ordinary blocks grow at least 2x from 4 to 64",
                                   kib[3][2] / kib[3][0] >= MEMORY_GROWTH_RATIO);
    passed &= mcl_test_record_bool("reversible needs less than anchor 1 at 64 blocks",
                                   kib[0][2] < kib[2][2]);
    assert_true(passed);
}

/* --- Replay, learning ----------------------------------------------------------------- */

static void replay_matches_eager(void **state)
{
    (void)state;
    enum { STEPS = 3 };
    int passed = 1;
    const int32_t anchors[] = {0, 2};
    for (size_t a = 0; a < 2; a++) {
        mcl_gpt_desc desc = rev_desc(5, anchors[a], MCL_GPT_REVERSIBLE);
        batch b;
        batch_make(&b, ctx, desc.vocab, 17);
        mcl_gpt *eager, *replayed;
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 5, &eager));
        assert_mcl_ok(mcl_gpt_create(ctx, &desc, 5, &replayed));
        mcl_graph *graph = NULL;
        float le[STEPS], lr[STEPS];
        for (int s = 1; s <= STEPS; s++) {
            mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f / (float)s, .step = s};
            assert_mcl_ok(mcl_gpt_set_optimizer(eager, &adam, 1.0f));
            assert_mcl_ok(mcl_gpt_forward(eager, b.tokens, b.targets, b.loss));
            assert_mcl_ok(mcl_gpt_backward(eager));
            assert_mcl_ok(mcl_gpt_step(eager));
            assert_mcl_ok(mcl_tensor_download(b.loss, 0, &le[s - 1], 4));
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
        float *pe = download_flat(mcl_gpt_parameters(eager));
        float *pr = download_flat(mcl_gpt_parameters(replayed));
        size_t np = (size_t)mcl_tensor_numel(mcl_gpt_parameters(eager));
        int same = memcmp(pe, pr, np * 4) == 0 && memcmp(le, lr, sizeof le) == 0;
        float drift;
        assert_mcl_ok(mcl_gpt_reversible_drift(replayed, &drift));
        printf("anchor %d replay: %u dispatches per step, losses %.6f %.6f %.6f, parameters "
               "%s, drift %.3g\n", (int)anchors[a], mcl_graph_dispatch_count(graph),
               (double)lr[0], (double)lr[1], (double)lr[2], same ? "bit-identical" : "DIFFER",
               (double)drift);
        passed &= mcl_test_record_bool("reversible replay: 3 replayed steps equal 3 eager "
                                       "steps bit for bit", same);
        passed &= mcl_test_record_bool("reversible replay: the steps changed the loss",
                                       lr[2] != lr[0]);
        mcl_graph_destroy(graph);
        free(pe), free(pr);
        mcl_gpt_destroy(eager), mcl_gpt_destroy(replayed);
        batch_free(&b);
    }
    assert_true(passed);
}

static void train_fixed_batch(float lr, float *first, float *last)
{
    enum { LB = 4, LT = 16 };
    mcl_gpt_desc desc = {.size = sizeof desc, .vocab = 16, .dim = 32, .layers = 4, .heads = 4,
                         .kv_heads = 2, .hidden = 64, .max_seq = LT, .tied_head = 1,
                         .flags = MCL_GPT_REVERSIBLE};
    int32_t tok[LB * LT], tgt[LB * LT];
    for (int b = 0; b < LB; b++) {
        for (int t = 0; t < LT; t++) {
            tok[b * LT + t] = (3 * b + 5 * t) % desc.vocab;
            tgt[b * LT + t] = (3 * b + 5 * (t + 1)) % desc.vocab;
        }
    }
    mcl_gpt *gpt;
    assert_mcl_ok(mcl_gpt_create(ctx, &desc, 1, &gpt));
    int64_t shape[2] = {LB, LT};
    mcl_tensor *tokens = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, shape, tok);
    mcl_tensor *targets = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, shape, tgt);
    const int64_t one = 1;
    mcl_tensor *loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    for (int s = 1; s <= LEARN_STEPS; s++) {
        mcl_adamw_desc adam = {.size = sizeof adam, .lr = lr, .step = s};
        assert_mcl_ok(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
        assert_mcl_ok(mcl_gpt_forward(gpt, tokens, targets, loss));
        assert_mcl_ok(mcl_gpt_backward(gpt));
        assert_mcl_ok(mcl_gpt_step(gpt));
        float l;
        assert_mcl_ok(mcl_tensor_download(loss, 0, &l, 4));
        if (s == 1)
            *first = l;
        *last = l;
    }
    mcl_tensor_destroy(tokens), mcl_tensor_destroy(targets), mcl_tensor_destroy(loss);
    mcl_gpt_destroy(gpt);
}

static void learns_fixed_batch(void **state)
{
    (void)state;
    float first, last, first0, last0;
    train_fixed_batch(1e-2f, &first, &last);
    train_fixed_batch(0.0f, &first0, &last0);
    double threshold = 0.25 * log(16.0);
    printf("reversible, lr 1e-2: loss %.4f -> %.4f (threshold %.4f); lr 0: %.6f -> %.6f\n",
           (double)first, (double)last, threshold, (double)first0, (double)last0);
    int passed = mcl_test_record("reversible learning: loss on a fixed batch falls below 25% "
                                 "of ln(V)", "final loss", last, threshold);
    passed &= mcl_test_record("control: with lr 0 the loss does not move", "absolute change",
                              fabs((double)last0 - first0), 1e-6);
    passed &= mcl_test_record_bool("control: with lr 0 the loss stays above the threshold",
                                   last0 > threshold);
    assert_true(passed);
}

/* --- Checkpoints and configurations --------------------------------------------------- */

static uint32_t file_u32(const char *path, long at)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char b[4];
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    assert_int_equal(fread(b, 1, 4, f), 4);
    fclose(f);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void checkpoint_keeps_the_option(void **state)
{
    (void)state;
    char path[64], plain_path[64];
    snprintf(path, sizeof path, "test_gpt_reversible.%ld.bin", (long)getpid());
    snprintf(plain_path, sizeof plain_path, "test_gpt_reversible_plain.%ld.bin", (long)getpid());
    mcl_gpt_desc desc = rev_desc(4, 3, MCL_GPT_REVERSIBLE);
    batch b;
    batch_make(&b, ctx, desc.vocab, 23);
    mcl_gpt *gpt, *loaded = NULL, *plain, *plain_loaded = NULL;
    assert_mcl_ok(mcl_gpt_create(ctx, &desc, 9, &gpt));
    set_params(gpt, 5);
    assert_mcl_ok(mcl_gpt_save(gpt, path));
    assert_mcl_ok(mcl_gpt_load(ctx, path, &loaded));
    mcl_gpt_desc got = {.size = sizeof got};
    assert_mcl_ok(mcl_gpt_config(loaded, &got));
    int passed = mcl_test_record_bool("checkpoint: flags and anchor restored",
                                      got.flags == MCL_GPT_REVERSIBLE &&
                                          got.reversible_anchor == 3);
    passed &= mcl_test_record_bool("checkpoint: a reversible model is written as version 2",
                                   file_u32(path, 8) == 2);
    float l0 = loss_of(gpt, &b), l1 = loss_of(loaded, &b);
    passed &= mcl_test_record_bool("checkpoint: the loaded model computes the same loss",
                                   l0 == l1);
    /* An ordinary model is written as before (version 1, zeros where the flags go) and
     * loads as one. */
    mcl_gpt_desc plain_desc = rev_desc(4, 0, 0);
    assert_mcl_ok(mcl_gpt_create(ctx, &plain_desc, 9, &plain));
    set_params(plain, 5);
    assert_mcl_ok(mcl_gpt_save(plain, plain_path));
    passed &= mcl_test_record_bool("checkpoint: an ordinary model is written as version 1",
                                   file_u32(plain_path, 8) == 1 && file_u32(plain_path, 88) == 0 &&
                                       file_u32(plain_path, 92) == 0);
    assert_mcl_ok(mcl_gpt_load(ctx, plain_path, &plain_loaded));
    assert_mcl_ok(mcl_gpt_config(plain_loaded, &got));
    float l2 = loss_of(plain_loaded, &b);
    passed &= mcl_test_record_bool("checkpoint: a version 1 file loads as an ordinary model",
                                   got.flags == 0 && got.reversible_anchor == 0);
    /* Control: the function differs, so the comparison of losses above can fail. */
    passed &= mcl_test_record_bool("control: the ordinary model's loss differs", l2 != l0);
    remove(path);
    remove(plain_path);
    mcl_gpt_destroy(gpt), mcl_gpt_destroy(loaded), mcl_gpt_destroy(plain);
    mcl_gpt_destroy(plain_loaded);
    batch_free(&b);
    assert_true(passed);
}

static void configuration_checks(void **state)
{
    (void)state;
    mcl_gpt *gpt = NULL;
    mcl_gpt_desc bad[4];
    for (int i = 0; i < 4; i++)
        bad[i] = rev_desc(4, 0, MCL_GPT_REVERSIBLE);
    bad[0].flags = 2;               /* unknown bit */
    bad[1].reversible_anchor = -1;
    bad[2].flags = 0;               /* an anchor without the flag */
    bad[2].reversible_anchor = 2;
    bad[3].reversible_anchor = 4096;
    for (int i = 0; i < 4; i++)
        EXPECT_STATUS(mcl_gpt_create(ctx, &bad[i], 1, &gpt), INVALID);
    /* A caller's struct that ends before reversible_anchor: the anchor is not read. */
    mcl_gpt_desc old = rev_desc(4, 7, MCL_GPT_REVERSIBLE);
    old.size = offsetof(mcl_gpt_desc, reversible_anchor);
    assert_mcl_ok(mcl_gpt_create(ctx, &old, 1, &gpt));
    mcl_gpt_desc got = {.size = sizeof got};
    assert_mcl_ok(mcl_gpt_config(gpt, &got));
    int passed = mcl_test_record_bool("a short desc: flags read, anchor 0",
                                      got.flags == MCL_GPT_REVERSIBLE &&
                                          got.reversible_anchor == 0);
    float drift;
    EXPECT_STATUS(mcl_gpt_reversible_drift(gpt, &drift), INVALID); /* no backward yet */
    EXPECT_STATUS(mcl_gpt_reversible_drift(gpt, NULL), INVALID);
    mcl_gpt_destroy(gpt);
    mcl_gpt_desc plain_desc = rev_desc(4, 0, 0);
    assert_mcl_ok(mcl_gpt_create(ctx, &plain_desc, 1, &gpt));
    EXPECT_STATUS(mcl_gpt_reversible_drift(gpt, &drift), INVALID); /* not reversible */
    EXPECT_STATUS(mcl_gpt_reversible_drift(NULL, &drift), INVALID);
    mcl_gpt_destroy(gpt);
    passed &= mcl_test_record("reversible: bad configurations and calls give the documented "
                              "statuses", "wrong statuses", mcl_test_wrong_statuses, 0);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inversion_matches_kept_inputs),
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(activation_memory_flat_in_depth),
        cmocka_unit_test(replay_matches_eager),
        cmocka_unit_test(learns_fixed_batch),
        cmocka_unit_test(checkpoint_keeps_the_option),
        cmocka_unit_test(configuration_checks),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
