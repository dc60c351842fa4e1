/* The GPT model: a whole training step against the double-precision CPU reference
 * (tests/ref/ref_gpt.c), learning on a fixed batch with a zero-learning-rate control, a
 * captured step replayed against eager steps, checkpoints (round trip and damaged files), bad
 * arguments, and crafted checkpoints and configurations (refused cheaply with a status).
 *
 * Tolerances (justified where they are defined below):
 *  - loss: relative error <= 1e-5;
 *  - gradients: NMSE <= 1e-8 over the whole flat gradient;
 *  - parameters after one step: NMSE of the update (p1 - p0) <= 1e-6;
 *  - learning: the loss on the fixed batch falls below 25% of ln(vocab) within LEARN_STEPS
 *    steps; with lr = 0 it stays within 1e-6 of where it started;
 *  - replay: bit-identical parameters to the eager steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "harness.h"
#include "ref/ref_gpt.h"

#define LOSS_TOLERANCE 1e-5
/* Gradient NMSE: every GPU operation rounds to float (relative error ~6e-8 per operation,
 * a few dozen operations deep, sums over at most a few hundred terms), giving NMSE ~1e-12 to
 * 1e-11 against double. A wrong term (a missing residual path, a transposed weight, the tied
 * head's second contribution left out) changes whole parameter gradients: NMSE >= 1e-3. */
#define GRAD_TOLERANCE 1e-8
/* Update NMSE: AdamW's first step is lr * g / (|g| + eps); eps = 1e-3 keeps it smooth where g
 * is near zero, so float error in g (relative ~1e-6 at worst) moves the update by ~1e-6
 * relative: NMSE ~1e-12. A missing bias correction, decay on the norm weights or no clipping
 * changes updates by O(1). */
#define UPDATE_TOLERANCE 1e-6
#define LEARN_STEPS 60

static mcl_context *ctx;

typedef struct tiny {
    mcl_gpt_desc cfg;
    int batch, seq;
} tiny;

static const tiny shapes[] = {
    /* GQA, tied head, interleaved RoPE; T and F not multiples of anything. */
    {{.size = sizeof(mcl_gpt_desc), .vocab = 23, .dim = 24, .layers = 2, .heads = 4,
      .kv_heads = 2, .hidden = 40, .max_seq = 16, .tied_head = 1,
      .rope_layout = MCL_ROPE_INTERLEAVED}, 3, 11},
    /* Untied head, split-half RoPE, multi-query, one layer, T = max_seq. */
    {{.size = sizeof(mcl_gpt_desc), .vocab = 37, .dim = 32, .layers = 1, .heads = 2,
      .kv_heads = 1, .hidden = 48, .max_seq = 9, .tied_head = 0,
      .rope_layout = MCL_ROPE_SPLIT_HALF}, 2, 9},
};

static mcl_tensor *ids_tensor(const int32_t *ids, int batch, int seq)
{
    int64_t shape[2] = {batch, seq};
    return mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, shape, ids);
}


static float *download_flat(mcl_tensor *t)
{
    size_t n = (size_t)mcl_tensor_numel(t);
    float *out = mcl_test_floats(n);
    assert_mcl_ok(mcl_tensor_download(t, 0, out, n * 4));
    return out;
}

static int64_t *param_offsets(mcl_gpt *gpt)
{
    uint32_t n = mcl_gpt_param_count(gpt);
    int64_t *off = calloc(n, sizeof *off);
    assert_non_null(off);
    for (uint32_t i = 0; i < n; i++) {
        mcl_gpt_param_info info;
        assert_mcl_ok(mcl_gpt_param(gpt, i, &info));
        off[i] = info.offset;
    }
    return off;
}

static double nmse_d(const float *got, const double *want, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return den > 0.0 ? num / den : num;
}

/* --- One training step against the CPU reference ------------------------------------ */

static void step_matches_reference(void **state)
{
    (void)state;
    int passed = 1;
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
        const tiny *sh = &shapes[c];
        mcl_gpt *gpt;
        assert_mcl_ok(mcl_gpt_create(ctx, &sh->cfg, 100 + c, &gpt));
        mcl_gpt_desc cfg;
        assert_mcl_ok(mcl_gpt_config(gpt, &cfg));
        size_t bt = (size_t)sh->batch * (size_t)sh->seq;
        int32_t *tok = calloc(bt, 4), *tgt = calloc(bt, 4);
        assert_true(tok && tgt);
        mcl_test_random_ids(tok, bt, cfg.vocab, 7 + (uint32_t)c);
        mcl_test_random_ids(tgt, bt, cfg.vocab, 9 + (uint32_t)c);
        tgt[1] = -1; /* an excluded position */
        mcl_tensor *tokens = ids_tensor(tok, sh->batch, sh->seq);
        mcl_tensor *targets = ids_tensor(tgt, sh->batch, sh->seq);
        const int64_t one = 1;
        mcl_tensor *loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);

        /* Larger initial weights than the default 0.02, so that every path carries signal. */
        mcl_tensor *flat_p = mcl_gpt_parameters(gpt);
        size_t np = (size_t)mcl_tensor_numel(flat_p);
        float *p0 = download_flat(flat_p);
        uint32_t npar = mcl_gpt_param_count(gpt);
        for (uint32_t i = 0; i < npar; i++) {
            mcl_gpt_param_info info;
            assert_mcl_ok(mcl_gpt_param(gpt, i, &info));
            float *r = mcl_test_random_floats((size_t)info.count, 31 * i + 5, -0.5f, 0.5f);
            for (int64_t j = 0; j < info.count; j++)
                p0[info.offset + j] = info.ndim == 1 ? 1.0f + 0.5f * r[j] : r[j];
            free(r);
        }
        assert_mcl_ok(mcl_tensor_upload(flat_p, 0, p0, np * 4));

        mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.99f,
                               .eps = 1e-3f, .weight_decay = 0.1f, .step = 1};
        const float max_norm = 0.5f;
        assert_mcl_ok(mcl_gpt_set_optimizer(gpt, &adam, max_norm));
        assert_mcl_ok(mcl_gpt_forward(gpt, tokens, targets, loss));
        assert_mcl_ok(mcl_gpt_backward(gpt));
        float got_loss;
        assert_mcl_ok(mcl_tensor_download(loss, 0, &got_loss, 4));
        float *grads = download_flat(mcl_gpt_gradients(gpt));
        assert_mcl_ok(mcl_gpt_step(gpt));
        float *p1 = download_flat(flat_p);
        float got_norm;
        assert_mcl_ok(mcl_tensor_download(mcl_gpt_grad_norm(gpt), 0, &got_norm, 4));

        /* The reference. */
        int64_t *off = param_offsets(gpt);
        ref_gpt_config rc = ref_gpt_config_from_mcl(&cfg);
        double *rgrad = calloc(np, sizeof *rgrad);
        assert_non_null(rgrad);
        double want_loss = ref_gpt_forward_backward(&rc, p0, off, tok, tgt, sh->batch,
                                                    sh->seq, rgrad, NULL);
        double *rp = calloc(np, sizeof *rp), *rm = calloc(np, sizeof *rm),
               *rv = calloc(np, sizeof *rv);
        assert_true(rp && rm && rv);
        for (size_t i = 0; i < np; i++)
            rp[i] = p0[i];
        ref_gpt_adamw ra = {.lr = adam.lr, .beta1 = adam.beta1, .beta2 = adam.beta2,
                            .eps = adam.eps, .weight_decay = adam.weight_decay, .step = 1,
                            .max_grad_norm = max_norm};
        double want_norm = ref_gpt_step(&rc, off, rp, NULL, rgrad, rm, rv, &ra);

        double loss_err = fabs(got_loss - want_loss) / fabs(want_loss);
        double grad_err = nmse_d(grads, rgrad, np);
        double norm_err = fabs(got_norm - want_norm) / want_norm;
        /* The update p1 - p0 against the reference's. */
        double num = 0.0, den = 0.0;
        for (size_t i = 0; i < np; i++) {
            double gu = (double)p1[i] - p0[i], wu = rp[i] - p0[i];
            num += (gu - wu) * (gu - wu);
            den += wu * wu;
        }
        double upd_err = num / den;
        printf("config %zu: loss %.6f (ref %.6f, rel %.2g), grad nmse %.3g, norm %.5g (ref "
               "%.5g), update nmse %.3g\n", c, (double)got_loss, want_loss, loss_err, grad_err,
               (double)got_norm, want_norm, upd_err);
        char name[128];
        snprintf(name, sizeof name, "config %zu: loss against the CPU reference", c);
        passed &= mcl_test_record(name, "relative error", loss_err, LOSS_TOLERANCE);
        snprintf(name, sizeof name, "config %zu: gradients against the CPU reference", c);
        passed &= mcl_test_record(name, "nmse", grad_err, GRAD_TOLERANCE);
        snprintf(name, sizeof name, "config %zu: gradient norm against the CPU reference", c);
        passed &= mcl_test_record(name, "relative error", norm_err, LOSS_TOLERANCE);
        snprintf(name, sizeof name, "config %zu: AdamW update (clipped) against the reference", c);
        passed &= mcl_test_record(name, "nmse", upd_err, UPDATE_TOLERANCE);
        /* The clipping must have mattered here, or the check above would not cover it. */
        snprintf(name, sizeof name, "config %zu: the gradient norm exceeds max_norm", c);
        passed &= mcl_test_record_bool(name, want_norm > 2.0 * max_norm);

        /* Negative control: the tied head's (or the head's) gradient left out is caught. */
        uint32_t head_index = cfg.tied_head ? 0 : npar - 1;
        mcl_gpt_param_info hi;
        assert_mcl_ok(mcl_gpt_param(gpt, head_index, &hi));
        float *wrong = malloc(np * 4);
        assert_non_null(wrong);
        memcpy(wrong, grads, np * 4);
        for (int64_t j = 0; j < hi.count; j++)
            wrong[hi.offset + j] *= 0.5f;
        double ctl = nmse_d(wrong, rgrad, np);
        snprintf(name, sizeof name, "config %zu: negative control (half a gradient) is caught", c);
        passed &= mcl_test_record_bool(name, ctl > GRAD_TOLERANCE);
        free(wrong);

        free(tok), free(tgt), free(p0), free(p1), free(grads), free(off), free(rgrad);
        free(rp), free(rm), free(rv);
        mcl_tensor_destroy(tokens), mcl_tensor_destroy(targets), mcl_tensor_destroy(loss);
        mcl_gpt_destroy(gpt);
    }
    assert_true(passed);
}

/* --- Learning, with a zero-learning-rate control -------------------------------------- */

static const mcl_gpt_desc learn_cfg = {.size = sizeof(mcl_gpt_desc), .vocab = 16,
                                       .dim = 32, .layers = 2, .heads = 4, .kv_heads = 2,
                                       .hidden = 64, .max_seq = 16, .tied_head = 1};

/* Train LEARN_STEPS steps on one fixed batch (a sequence the model can memorise); returns the
 * first and last losses. */
static void train_fixed_batch(float lr, float *first, float *last)
{
    enum { B = 4, T = 16 };
    int32_t tok[B * T], tgt[B * T];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            tok[b * T + t] = (3 * b + 5 * t) % learn_cfg.vocab;
            tgt[b * T + t] = (3 * b + 5 * (t + 1)) % learn_cfg.vocab;
        }
    }
    mcl_gpt *gpt;
    assert_mcl_ok(mcl_gpt_create(ctx, &learn_cfg, 1, &gpt));
    mcl_tensor *tokens = ids_tensor(tok, B, T), *targets = ids_tensor(tgt, B, T);
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
    double threshold = 0.25 * log((double)learn_cfg.vocab);
    printf("lr 1e-2: loss %.4f -> %.4f (threshold %.4f); lr 0: %.6f -> %.6f\n", (double)first,
           (double)last, threshold, (double)first0, (double)last0);
    int passed = mcl_test_record("learning: loss on a fixed batch falls below 25% of ln(V)",
                                 "final loss", last, threshold);
    passed &= mcl_test_record("control: with lr 0 the loss does not move", "absolute change",
                              fabs((double)last0 - first0), 1e-6);
    passed &= mcl_test_record_bool("control: with lr 0 the loss stays above the threshold",
                                   last0 > threshold);
    assert_true(passed);
}

/* --- Replay --------------------------------------------------------------------------- */

static void replay_matches_eager(void **state)
{
    (void)state;
    enum { B = 2, T = 12, STEPS = 3 };
    int32_t tok[B * T], tgt[B * T];
    mcl_test_random_ids(tok, B * T, learn_cfg.vocab, 3);
    mcl_test_random_ids(tgt, B * T, learn_cfg.vocab, 4);
    mcl_tensor *tokens = ids_tensor(tok, B, T), *targets = ids_tensor(tgt, B, T);
    const int64_t one = 1;
    mcl_tensor *loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    mcl_gpt *eager, *replayed;
    assert_mcl_ok(mcl_gpt_create(ctx, &learn_cfg, 5, &eager));
    assert_mcl_ok(mcl_gpt_create(ctx, &learn_cfg, 5, &replayed));
    mcl_graph *graph = NULL;
    float eager_loss[STEPS], replay_loss[STEPS];
    for (int s = 1; s <= STEPS; s++) {
        /* A schedule: every step has its own learning rate. */
        mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f / (float)s,
                               .weight_decay = 0.1f, .step = s};
        assert_mcl_ok(mcl_gpt_set_optimizer(eager, &adam, 1.0f));
        assert_mcl_ok(mcl_gpt_forward(eager, tokens, targets, loss));
        assert_mcl_ok(mcl_gpt_backward(eager));
        assert_mcl_ok(mcl_gpt_step(eager));
        assert_mcl_ok(mcl_tensor_download(loss, 0, &eager_loss[s - 1], 4));

        assert_mcl_ok(mcl_gpt_set_optimizer(replayed, &adam, 1.0f));
        if (!graph) {
            /* The first forward pass allocates the activations, inside the capture. */
            assert_mcl_ok(mcl_graph_begin(ctx));
            assert_mcl_ok(mcl_gpt_forward(replayed, tokens, targets, loss));
            assert_mcl_ok(mcl_gpt_backward(replayed));
            assert_mcl_ok(mcl_gpt_step(replayed));
            EXPECT_STATUS(mcl_gpt_set_optimizer(replayed, &adam, 1.0f), INVALID);
            assert_mcl_ok(mcl_graph_end(ctx, &graph));
        }
        assert_mcl_ok(mcl_graph_replay(ctx, graph));
        assert_mcl_ok(mcl_tensor_download(loss, 0, &replay_loss[s - 1], 4));
    }
    float *pe = download_flat(mcl_gpt_parameters(eager));
    float *pr = download_flat(mcl_gpt_parameters(replayed));
    size_t np = (size_t)mcl_tensor_numel(mcl_gpt_parameters(eager));
    int same = memcmp(pe, pr, np * 4) == 0 && memcmp(eager_loss, replay_loss, sizeof eager_loss) == 0;
    printf("replay: %u dispatches per step; losses %.6f %.6f %.6f; parameters %s\n",
           mcl_graph_dispatch_count(graph), (double)replay_loss[0], (double)replay_loss[1],
           (double)replay_loss[2], same ? "bit-identical" : "DIFFER");
    int passed = mcl_test_record_bool("replay: 3 replayed steps with a schedule equal 3 eager "
                                      "steps bit for bit", same);
    passed &= mcl_test_record_bool("replay: the steps changed the loss",
                                   replay_loss[2] != replay_loss[0]);
    mcl_graph_destroy(graph);
    free(pe), free(pr);
    mcl_tensor_destroy(tokens), mcl_tensor_destroy(targets), mcl_tensor_destroy(loss);
    mcl_gpt_destroy(eager), mcl_gpt_destroy(replayed);
    assert_true(passed);
}

/* --- Checkpoints ---------------------------------------------------------------------- */

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static void rewrite(const char *from, const char *to, long keep, long flip)
{
    FILE *f = fopen(from, "rb");
    assert_non_null(f);
    unsigned char *buf = malloc((size_t)keep);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)keep, f), (size_t)keep);
    fclose(f);
    if (flip >= 0)
        buf[flip] ^= 0x10;
    FILE *g = fopen(to, "wb");
    assert_non_null(g);
    assert_int_equal(fwrite(buf, 1, (size_t)keep, g), (size_t)keep);
    fclose(g);
    free(buf);
}

static void checkpoint_round_trip(void **state)
{
    (void)state;
    enum { B = 2, T = 8 };
    int32_t tok[B * T], tgt[B * T];
    mcl_test_random_ids(tok, B * T, learn_cfg.vocab, 11);
    mcl_test_random_ids(tgt, B * T, learn_cfg.vocab, 12);
    mcl_tensor *tokens = ids_tensor(tok, B, T), *targets = ids_tensor(tgt, B, T);
    const int64_t one = 1;
    mcl_tensor *loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    mcl_gpt *gpt;
    assert_mcl_ok(mcl_gpt_create(ctx, &learn_cfg, 21, &gpt));
    /* Two steps, so the moments are not zero. */
    for (int s = 1; s <= 2; s++) {
        mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f, .step = s};
        assert_mcl_ok(mcl_gpt_set_optimizer(gpt, &adam, 0.0f));
        assert_mcl_ok(mcl_gpt_forward(gpt, tokens, targets, loss));
        assert_mcl_ok(mcl_gpt_backward(gpt));
        assert_mcl_ok(mcl_gpt_step(gpt));
    }
    /* Per process: both profiles' runs of this suite share a working directory. */
    char path[64], bad[64];
    snprintf(path, sizeof path, "test_gpt_checkpoint.%ld.bin", (long)getpid());
    snprintf(bad, sizeof bad, "test_gpt_checkpoint_bad.%ld.bin", (long)getpid());
    assert_mcl_ok(mcl_gpt_save(gpt, path));
    mcl_gpt *loaded;
    assert_mcl_ok(mcl_gpt_load(ctx, path, &loaded));

    /* Same parameters, and the same next step (which needs the same moments and step). */
    int passed = 1;
    float *a = download_flat(mcl_gpt_parameters(gpt));
    float *b = download_flat(mcl_gpt_parameters(loaded));
    size_t np = (size_t)mcl_tensor_numel(mcl_gpt_parameters(gpt));
    passed &= mcl_test_record_bool("checkpoint: parameters bit-identical after load",
                                   memcmp(a, b, np * 4) == 0);
    passed &= mcl_test_record_bool("checkpoint: optimizer step restored",
                                   mcl_gpt_optimizer_step(loaded) == 2);
    free(a), free(b);
    mcl_gpt *both[2] = {gpt, loaded};
    for (int i = 0; i < 2; i++) {
        mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f, .step = 3};
        assert_mcl_ok(mcl_gpt_set_optimizer(both[i], &adam, 0.0f));
        assert_mcl_ok(mcl_gpt_forward(both[i], tokens, targets, loss));
        assert_mcl_ok(mcl_gpt_backward(both[i]));
        assert_mcl_ok(mcl_gpt_step(both[i]));
    }
    a = download_flat(mcl_gpt_parameters(gpt));
    b = download_flat(mcl_gpt_parameters(loaded));
    passed &= mcl_test_record_bool("checkpoint: the next step is bit-identical (moments "
                                   "restored)", memcmp(a, b, np * 4) == 0);
    free(a), free(b);

    /* Damaged files fail with a message, never load. */
    long size = file_size(path);
    assert_true(size > 200);
    mcl_gpt *none = NULL;
    rewrite(path, bad, size - 1, -1);
    EXPECT_STATUS(mcl_gpt_load(ctx, bad, &none), INVALID);
    rewrite(path, bad, size, size / 2);
    EXPECT_STATUS(mcl_gpt_load(ctx, bad, &none), INVALID);
    rewrite(path, bad, size, 0);
    EXPECT_STATUS(mcl_gpt_load(ctx, bad, &none), INVALID);
    rewrite(path, bad, size, 8);
    EXPECT_STATUS(mcl_gpt_load(ctx, bad, &none), INVALID);
    EXPECT_STATUS(mcl_gpt_load(ctx, "no/such/file", &none), INVALID);
    passed &= mcl_test_record_bool("checkpoint: damaged files are refused", none == NULL);
    /* Control: an undamaged copy loads. */
    rewrite(path, bad, size, -1);
    mcl_gpt *copy = NULL;
    assert_mcl_ok(mcl_gpt_load(ctx, bad, &copy));
    mcl_gpt_destroy(copy);
    remove(path);
    remove(bad);
    passed &= mcl_test_record("checkpoint: statuses", "wrong statuses", mcl_test_wrong_statuses, 0);
    mcl_tensor_destroy(tokens), mcl_tensor_destroy(targets), mcl_tensor_destroy(loss);
    mcl_gpt_destroy(gpt), mcl_gpt_destroy(loaded);
    assert_true(passed);
}

/* --- Hostile checkpoints and configurations ------------------------------------------- */

/* A checkpoint header (docs/gpt-checkpoint.md) with the given configuration and layout
 * fields, followed by `payload` zero bytes and no valid checksum: what an attacker or a
 * damaged disk hands the loader. */
static void write_crafted(const char *path, const int32_t fields[9], uint64_t flat,
                          uint64_t count, size_t payload)
{
    unsigned char h[96] = {0};
    memcpy(h, "MCLGPT\r\n", 8);
    const uint32_t version = 1, header_bytes = 96, moments = 1;
    const float theta = 10000.0f, eps = 1e-5f;
    memcpy(h + 8, &version, 4);
    memcpy(h + 12, &header_bytes, 4);
    memcpy(h + 16, fields, 36);
    memcpy(h + 52, &theta, 4);
    memcpy(h + 56, &eps, 4);
    memcpy(h + 60, &moments, 4);
    memcpy(h + 72, &flat, 8);
    memcpy(h + 80, &count, 8);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
    for (size_t i = 0; i < payload; i++)
        assert_int_equal(fputc(0, f), 0);
    fclose(f);
}

/* The process's peak resident memory in KiB (Linux: ru_maxrss). */
static long peak_rss_kib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static uint64_t device_peak(void)
{
    mcl_memory_stats stats = {.size = sizeof stats};
    assert_mcl_ok(mcl_context_memory_stats(ctx, &stats));
    return stats.bytes_allocated_peak;
}

/* Refusals cost memory in proportion to the file, not to what its header claims: at most
 * this much more resident host memory (the claims below are gigabytes) and no device memory. */
#define HOSTILE_RSS_KIB (64 * 1024)

static void hostile_checkpoints(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "test_gpt_hostile.%ld.bin", (long)getpid());
    mcl_gpt *none = NULL;
    long rss0 = peak_rss_kib();
    uint64_t device0 = device_peak();

    /* 96 + 23 bytes whose layer count wraps the 32-bit parameter count (9 * 477218589 + 2
     * = 2^32 + 3): the loader wrote past its parameter array. */
    const int32_t wrap[9] = {1, 2, 477218589, 1, 1, 1, 1, 1, 0};
    write_crafted(path, wrap, 0, 0, 23);
    EXPECT_STATUS(mcl_gpt_load(ctx, path, &none), INVALID);

    /* 119 bytes claiming two million layers: gigabytes of host memory before the refusal. */
    const int32_t deep[9] = {1, 2, 2000000, 1, 1, 1, 1, 1, 0};
    write_crafted(path, deep, UINT64_C(2000000) * 576 + 64, 0, 23);
    EXPECT_STATUS(mcl_gpt_load(ctx, path, &none), INVALID);

    /* 160 bytes claiming a consistent 56 MiB model (vocab 4096, dim 1024, hidden 2048, one
     * layer, tied head: 14,683,136 floats, every parameter a multiple of 64): the loader
     * allocated and zero-filled four such buffers on the device before reading the file. */
    const int32_t big[9] = {4096, 1024, 1, 8, 8, 2048, 16, 1, 0};
    write_crafted(path, big, 14683136, 14683136, 64);
    EXPECT_STATUS(mcl_gpt_load(ctx, path, &none), INVALID);

    /* Dimensions near 2^31: their products overflowed a signed running offset. */
    const int32_t wide[9] = {INT32_MAX, 2147483520, 1, 16777215, 16777215, INT32_MAX, 1, 1, 0};
    write_crafted(path, wide, 0, 0, 64);
    EXPECT_STATUS(mcl_gpt_load(ctx, path, &none), INVALID);
    remove(path);

    long rss_growth = peak_rss_kib() - rss0;
    uint64_t device_growth = device_peak() - device0;
    int passed = mcl_test_record("checkpoint: crafted headers refused with the documented "
                                 "status", "wrong statuses", mcl_test_wrong_statuses, 0);
    passed &= mcl_test_record_bool("checkpoint: crafted headers refused without allocating "
                                   "what they claim (host)", rss_growth < HOSTILE_RSS_KIB);
    passed &= mcl_test_record_bool("checkpoint: crafted headers refused without allocating "
                                   "what they claim (device)", device_growth == 0);
    passed &= mcl_test_record_bool("checkpoint: nothing loaded", none == NULL);
    if (rss_growth >= HOSTILE_RSS_KIB || device_growth)
        print_message("peak resident memory grew by %ld KiB, device peak by %llu bytes\n",
                      rss_growth, (unsigned long long)device_growth);
    assert_true(passed);
}

static void hostile_configs(void **state)
{
    (void)state;
    mcl_gpt *gpt = NULL;
    /* The configuration of the wrapping checkpoint above, handed to mcl_gpt_create. */
    mcl_gpt_desc deep = {.size = sizeof deep, .vocab = 1, .dim = 2, .layers = 477218589,
                         .heads = 1, .hidden = 1, .max_seq = 1, .tied_head = 1};
    EXPECT_STATUS(mcl_gpt_create(ctx, &deep, 1, &gpt), INVALID);
    deep.layers = INT32_MAX;
    EXPECT_STATUS(mcl_gpt_create(ctx, &deep, 1, &gpt), INVALID);
    /* Each product of two dimensions fits 64 bits; their sum does not. */
    mcl_gpt_desc wide = {.size = sizeof wide, .vocab = INT32_MAX, .dim = 2147483520,
                         .layers = 1, .heads = 16777215, .hidden = INT32_MAX, .max_seq = 1,
                         .tied_head = 1};
    EXPECT_STATUS(mcl_gpt_create(ctx, &wide, 1, &gpt), MCL_ERROR_TOO_LARGE);
    const char *why = mcl_context_last_error(ctx);
    int passed = mcl_test_record("gpt: huge configurations give the documented statuses",
                                 "wrong statuses", mcl_test_wrong_statuses, 0);
    /* The message reported a negative parameter count from the wrapped sum. */
    passed &= mcl_test_record_bool("gpt: a huge configuration's message counts no negative "
                                   "parameters", why && !strstr(why, ": -"));
    passed &= mcl_test_record_bool("gpt: nothing created", gpt == NULL);
    if (why)
        print_message("%s\n", why);
    assert_true(passed);
}

/* --- Bad arguments -------------------------------------------------------------------- */

static void bad_arguments(void **state)
{
    (void)state;
    mcl_gpt *gpt = NULL;
    mcl_gpt_desc c = learn_cfg;
    EXPECT_STATUS(mcl_gpt_create(NULL, &c, 1, &gpt), INVALID);
    EXPECT_STATUS(mcl_gpt_create(ctx, NULL, 1, &gpt), INVALID);
    EXPECT_STATUS(mcl_gpt_create(ctx, &c, 1, NULL), INVALID);
    mcl_gpt_desc bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = learn_cfg;
    bad[0].size = 0;
    bad[1].heads = 5;       /* does not divide dim */
    bad[2].kv_heads = 3;    /* does not divide heads */
    bad[3].vocab = 0;
    bad[4].dim = 36;        /* 36 / 4 = 9: odd head size */
    bad[5].rope_layout = (mcl_rope_layout)7;
    bad[6].norm_eps = -1.0f;
    bad[7].tied_head = 2;
    for (int i = 0; i < 8; i++)
        EXPECT_STATUS(mcl_gpt_create(ctx, &bad[i], 1, &gpt), INVALID);
    assert_null(gpt);

    assert_mcl_ok(mcl_gpt_create(ctx, &learn_cfg, 1, &gpt));
    int32_t ids[2 * 4] = {0};
    mcl_tensor *tokens = ids_tensor(ids, 2, 4);
    int32_t long_ids[1 * 17] = {0};
    mcl_tensor *too_long = ids_tensor(long_ids, 1, 17);
    mcl_tensor *other_shape = ids_tensor(long_ids, 1, 4);
    const int64_t one = 1, eight = 8, shape24[2] = {2, 4};
    mcl_tensor *loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    mcl_tensor *flat = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &eight, NULL);
    mcl_tensor *ftok = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape24, NULL);
    EXPECT_STATUS(mcl_gpt_forward(gpt, NULL, NULL, NULL), INVALID);
    EXPECT_STATUS(mcl_gpt_forward(gpt, tokens, tokens, NULL), INVALID);
    EXPECT_STATUS(mcl_gpt_forward(gpt, tokens, NULL, loss), INVALID);
    EXPECT_STATUS(mcl_gpt_forward(gpt, ftok, NULL, NULL), DTYPE);
    EXPECT_STATUS(mcl_gpt_forward(gpt, flat, NULL, NULL), SHAPE);
    EXPECT_STATUS(mcl_gpt_forward(gpt, too_long, NULL, NULL), SHAPE);
    EXPECT_STATUS(mcl_gpt_backward(gpt), INVALID); /* no forward pass with targets yet */
    EXPECT_STATUS(mcl_gpt_step(gpt), INVALID);     /* no hyper-parameters set */
    mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-3f, .step = 0};
    EXPECT_STATUS(mcl_gpt_set_optimizer(gpt, &adam, 1.0f), INVALID);
    adam.step = 1;
    EXPECT_STATUS(mcl_gpt_set_optimizer(gpt, &adam, NAN), INVALID);
    EXPECT_STATUS(mcl_gpt_set_optimizer(gpt, NULL, 1.0f), INVALID);
    mcl_gpt_param_info info;
    EXPECT_STATUS(mcl_gpt_param(gpt, mcl_gpt_param_count(gpt), &info), INVALID);
    EXPECT_STATUS(mcl_gpt_save(gpt, NULL), INVALID);
    EXPECT_STATUS(mcl_gpt_save(gpt, "no/such/dir/x.bin"), INVALID);
    /* A new batch shape during a capture reallocates the activations; the graph keeps
     * the set it recorded. */
    assert_mcl_ok(mcl_gpt_forward(gpt, tokens, NULL, NULL));
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_gpt_forward(gpt, other_shape, NULL, NULL));
    mcl_graph *g = NULL;
    assert_mcl_ok(mcl_graph_end(ctx, &g));
    assert_mcl_ok(mcl_graph_replay(ctx, g));
    assert_mcl_ok(mcl_finish(ctx));
    mcl_graph_destroy(g);
    mcl_tensor *all[] = {tokens, too_long, other_shape, loss, flat, ftok};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        mcl_tensor_destroy(all[i]);
    mcl_gpt_destroy(gpt);
    int passed = mcl_test_record("gpt: bad arguments give the documented statuses",
                                 "wrong statuses", mcl_test_wrong_statuses, 0);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(step_matches_reference),
        cmocka_unit_test(learns_fixed_batch),
        cmocka_unit_test(replay_matches_eager),
        cmocka_unit_test(checkpoint_round_trip),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(hostile_checkpoints),
        cmocka_unit_test(hostile_configs),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
