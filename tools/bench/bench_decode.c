/* Inference with a session (docs/inference.md) on a llama-shaped model of random weights,
 * made on the device (bench_synth.c), or with file=1 written to a GGUF file by a child
 * process and loaded from it (dir=D, default /tmp): shape=7b (width 4096, 32 layers, 32/8
 * heads, feed-forward 14336), shape=1b (2048, 16, 32/8, 8192) or shape=mixtral (7b's with
 * 8 experts of 14336, 2 a token: the bytes a token reads count the router and its two
 * experts), vocabulary 32000,
 * type=q4_0|q8_0|q4_K|f32; shape=small and shape=moe-small, a tiny dense model and a tiny
 * mixture for a smoke test (width 512, 2 layers, 8/4 heads, feed-forward 1024, vocabulary 512).
 * prompt=N tokens (default 512) run as one pass, then tokens=M decode steps (default 64) of
 * one token each, the logits read back at every step (repeat=R times from the prompt, the
 * median run the figure); with seqs=S > 1 also S sequences decoded as one batch (each from 8
 * prompt tokens); kv=f16 for a cache of 16-bit floats (default f32). The GPU is kept busy for
 * a second before the clock starts. Figures: prefill tokens/s, the calling thread's CPU time
 * in the prompt's mcl_session_feed and the wall time until it returns; decode tokens/s, ms per
 * token, CPU time and dispatches per token, and the weight bytes a token reads over its time
 * against the stream read measured in the same run; the recorded step replayed alone, and
 * each op's GPU time in it (and in the batch step); modeled RX 580 decode rates at the
 * measured share. `prefill`:
 * the prompt pass alone, repeat=R times. expert_mib=M (a mixture): the expert stacks in host
 * memory and a session's expert cache of M MiB (auto: MCL_EXPERT_BUDGET_AUTO); the cache's
 * figures (bench_experts.c) of two more decode runs of as many steps as the others, of sampled
 * tokens and of the prompt's distinct tokens fed in turn: tokens/s, the cache's hit rate and
 * bytes moved per token, in the same run the rate at which the device reads host memory (a
 * copy out of a host-memory tensor) and the upload rate through the staging path, and the
 * models made of them. products=1 (a dense model): layer 0's gate and up
 * products timed alone with their quantization made as the step makes it or otherwise
 * (products()). A file is removed at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "engine/engine_internal.h"
#include "io/gguf.h"
#include "vk/measure.h"

/* The most repeats of the decode loop. */
#define BENCH_MAX_REPEAT 32u

/* CPU time of the process so far, seconds. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread alone. */
static double thread_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Weight bytes one decode step reads: every matrix, the norms, one embedding row. */
static uint64_t bytes_per_token(const bench_llama_shape *s)
{
    return bench_llama_layer_read_bytes(s) * s->layers +
           bench_llama_matrix_bytes(s, s->vocab, s->dim) +
           bench_llama_matrix_bytes(s, 1, s->dim) + s->dim * 4ull;
}

/* Per-op GPU times of a pass: a timestamp after each op (the engine's marks). */
#define PROFILE_MARKS 2048u
#define PROFILE_OPS 16u
typedef struct profile {
    mcl_timer *timer;
    uint32_t marks;
    const char *op[PROFILE_MARKS];
} profile;

static mcl_status profile_mark(void *user, const char *op)
{
    profile *p = user;
    if (p->marks >= PROFILE_MARKS)
        return MCL_SUCCESS;
    p->op[p->marks] = op;
    return mcl_timer_mark(p->timer, p->marks++, 0);
}

/* One pass of `count` tokens of sequence 0 with marks after each op, each op's summed time
 * as a figure: a decode step (count 1: recorded again with its marks, replayed) or a prompt
 * (count > 1: the sequence reset first, the pass recorded op by op as it always is); with
 * seqs > 1, a batch step of one token for each of sequences ids[0 .. seqs). */
static int profile_pass(bench *b, mcl_session *s, const int32_t *token, uint32_t count,
                        const uint32_t *ids, uint32_t seqs, const char *label)
{
    const char *what = seqs > 1 ? "batch step" : count == 1 ? "decode step" : "prefill";
    profile p = {0};
    if (mcl_timer_create(b->ctx, PROFILE_MARKS, &p.timer) != MCL_SUCCESS)
        return 0;  /* no timestamps on this device: no profile */
    int rc = 1;
    double *sec = malloc(PROFILE_MARKS * sizeof *sec);
    if (!sec)
        goto done;
    mcl_engine_steps_destroy(s);
    s->mark = profile_mark;
    s->mark_user = &p;
    if ((seqs == 1 && count > 1 && mcl_session_reset(s, 0) != MCL_SUCCESS) ||
        mcl_timer_reset(p.timer, PROFILE_MARKS) != MCL_SUCCESS ||
        (seqs > 1 ? mcl_session_feed_batch(s, ids, token, seqs, NULL)
                  : mcl_session_feed(s, 0, token, count, NULL)) != MCL_SUCCESS)
        goto done;
    s->mark = NULL;
    mcl_engine_steps_destroy(s);
    /* Each op's time: from the mark before it to its own, summed over the layers. */
    uint32_t n = p.marks;
    if (n < 2 || mcl_finish(b->ctx) != MCL_SUCCESS ||
        mcl_timer_since_first(p.timer, n, sec) != MCL_SUCCESS)
        goto done;
    const char *names[PROFILE_OPS];
    double total[PROFILE_OPS] = {0};
    uint32_t kinds = 0;
    for (uint32_t i = 1; i < n; i++) {
        uint32_t k = 0;
        while (k < kinds && strcmp(names[k], p.op[i]) != 0)
            k++;
        if (k == kinds && kinds < PROFILE_OPS)
            names[kinds++] = p.op[i];
        if (k < kinds)
            total[k] += sec[i] - sec[i - 1];
    }
    char name[160];
    for (uint32_t k = 0; k < kinds; k++) {
        snprintf(name, sizeof name, "%s: %s on the GPU, %s", label, what, names[k]);
        bench_figure(b, name, total[k] * 1e3, "ms");
    }
    snprintf(name, sizeof name, "%s: %s on the GPU, all ops after the embedding", label, what);
    bench_figure(b, name, sec[n - 1] * 1e3, "ms");
    rc = 0;
done:
    s->mark = NULL;
    free(sec);
    mcl_timer_destroy(p.timer);
    return rc;
}

/* The RX 580 (256 GB/s) decoding llama-shaped Q4_0 models at `share` of its streaming limit,
 * the share this run measured: modeled, no RX 580 ran. A low estimate where, as on the H200,
 * fixed costs per dispatch set the share: they weigh less against 256 GB/s. */
static void model_rx580(bench *b, double share)
{
    static const struct {
        const char *name;
        bench_llama_shape shape;
    } shapes[] = {
        {"1B", {2048, 16, 32, 8, 8192, 32000, MCL_GGML_Q4_0, 0, 0}},
        {"3B", {3072, 28, 24, 8, 8192, 32000, MCL_GGML_Q4_0, 0, 0}},
        {"7B", {4096, 32, 32, 8, 14336, 32000, MCL_GGML_Q4_0, 0, 0}},
    };
    char name[160];
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        snprintf(name, sizeof name, "RX 580 decode of the %s shape, q4_0, at this share of the "
                                    "stream read", shapes[i].name);
        double bytes = (double)bytes_per_token(&shapes[i].shape);
        bench_modeled(b, name, BENCH_RX580_GBS * 1e9 * share / bytes, "tokens/s");
    }
}

/* The index of the median of n values (the lower one of an even count). */
static uint32_t median_index(const double *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t below = 0, equal_before = 0;
        for (uint32_t j = 0; j < n; j++) {
            below += v[j] < v[i];
            equal_before += j < i && v[j] == v[i];
        }
        if (below + equal_before == (n - 1) / 2)
            return i;
    }
    return 0;
}

static int run(bench *b, const char *path, const bench_llama_shape *shape, uint32_t prompt,
               uint32_t steps, uint32_t seqs, uint32_t repeat, mcl_dtype kv_type,
               uint64_t expert_budget, int prefill_only, const char *label)
{
    mcl_model *model = NULL;
    mcl_session *s = NULL;
    int32_t *tokens = malloc((size_t)(prompt > seqs ? prompt : seqs) * sizeof *tokens);
    uint32_t *ids = malloc((size_t)seqs * sizeof *ids);
    int rc = 1;
    if (!tokens || !ids)
        goto done;
    for (uint32_t i = 0; i < prompt || i < seqs; i++)
        tokens[i] = (int32_t)((i * 7919u + 13u) % shape->vocab);
    double t0 = bench_now();
    mcl_model_desc md = {.size = sizeof md,
                         .flags = expert_budget ? MCL_MODEL_EXPERTS_IN_HOST_MEMORY : 0};
    if (path ? mcl_model_open(b->ctx, path, &md, &model)
             : bench_synth_llama(b->ctx, shape, expert_budget != 0, &model))
        goto done;
    char name[160];
    snprintf(name, sizeof name, path ? "%s: load" : "%s: made on the device", label);
    bench_figure(b, name, bench_now() - t0, "s");
    mcl_session_desc sd = {.size = sizeof sd, .context_length = prompt + steps + 8,
                           .sequences = seqs, .batch_tokens = prompt, .kv_type = kv_type,
                           .expert_budget = expert_budget};
    if (mcl_session_create(model, &sd, &s) != MCL_SUCCESS)
        goto done;
    /* Everything once before the clock: pipelines are created on first use, and each shape
     * of pass (the prompt's rows, one row, a batch's rows, longer caches) may choose its own
     * kernels; so is the sampler the decode loops take. (Before 2026-12-05 the first loop
     * created its pipeline; in the run of evidence/h100-b06f7df-bench, with an empty
     * pipeline cache, the slowest of five 7B q4_0 runs made 129.7 tokens/s, the fastest
     * 315.9. Whether this was all of it is for the next run to show.) */
    int32_t picked = 0;
    if (mcl_session_feed(s, 0, tokens, prompt, NULL) != MCL_SUCCESS ||
        mcl_session_feed(s, 0, tokens, 1, NULL) != MCL_SUCCESS ||
        mcl_session_feed(s, 0, tokens + 1, 1, NULL) != MCL_SUCCESS ||
        mcl_session_sample(s, 0, NULL, &picked) != MCL_SUCCESS ||
        mcl_session_reset(s, 0) != MCL_SUCCESS)
        goto done;
    if (seqs > 1) {
        for (uint32_t q = 0; q < seqs; q++) {
            ids[q] = q;
            if (mcl_session_feed(s, q, tokens, 8, NULL) != MCL_SUCCESS)
                goto done;
        }
        int32_t *chosen = malloc((size_t)seqs * sizeof *chosen);
        int bad = !chosen || mcl_session_feed_batch(s, ids, tokens, seqs, NULL) != MCL_SUCCESS ||
                  mcl_session_sample_batch(s, ids, seqs, NULL, chosen) != MCL_SUCCESS;
        free(chosen);
        if (bad)
            goto done;
        for (uint32_t q = 0; q < seqs; q++)
            if (mcl_session_reset(s, q) != MCL_SUCCESS)
                goto done;
    }
    if (bench_arg(b, "products", 0) != 0 && bench_products(b, s, label) != 0)
        goto done;
    /* The GPU busy for a second before the clock starts: after the pipelines' creation it
     * may have idled into a low clock, which short passes with gaps between them do not
     * raise (on an H100, five 1B q4_0 prompts of 512 timed that way: 10,381 tokens/s; the
     * same after other work: 33,693). */
    for (double w0 = bench_now(); bench_now() - w0 < 1.0;) {
        if (mcl_session_reset(s, 0) != MCL_SUCCESS ||
            mcl_session_feed(s, 0, tokens, prompt, NULL) != MCL_SUCCESS ||
            mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
    }
    if (mcl_session_reset(s, 0) != MCL_SUCCESS)
        goto done;
    /* The prompt as one pass: `repeat` times for `prefill`, the median the figure. */
    double pre[BENCH_MAX_REPEAT], pre_host[BENCH_MAX_REPEAT], pre_call[BENCH_MAX_REPEAT];
    uint32_t pre_runs = prefill_only ? repeat : 1;
    for (uint32_t r = 0; r < pre_runs; r++) {
        if (r > 0 && mcl_session_reset(s, 0) != MCL_SUCCESS)
            goto done;
        if (mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
        t0 = bench_now();
        double c0 = thread_now();
        if (mcl_session_feed(s, 0, tokens, prompt, NULL) != MCL_SUCCESS)
            goto done;
        pre_host[r] = thread_now() - c0;
        pre_call[r] = bench_now() - t0;
        if (mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
        pre[r] = bench_now() - t0;
    }
    uint32_t pre_mid = median_index(pre, pre_runs);
    double t = pre[pre_mid];
    snprintf(name, sizeof name, "%s: prefill of %u tokens%s", label, prompt,
             pre_runs > 1 ? " (the median run)" : "");
    bench_figure(b, name, prompt / t, "tokens/s");
    /* What the calling thread spent recording and submitting that pass (the same run). */
    snprintf(name, sizeof name, "%s: prefill, the calling thread's CPU time", label);
    bench_figure(b, name, pre_host[pre_mid] * 1e3, "ms");
    /* The wall time until mcl_session_feed returns (the pass then runs on): above the CPU
     * time, the thread waited in the call. */
    snprintf(name, sizeof name, "%s: prefill, the time until mcl_session_feed returns", label);
    bench_figure(b, name, pre_call[pre_mid] * 1e3, "ms");
    if (prefill_only) {
        rc = 0;
        goto done;
    }
    /* The decode loop `repeat` times from the same prompt, each token chosen on the device
     * (greedy) and fed back, as a generation runs: the median run is the figure. The
     * prompt's pass has finished before the clock starts (mcl_session_feed returns with it
     * still running; before 2026-12-05 every run after the first counted it, 1.5 ms a token
     * of a 7B prompt of 512 spread over 64 tokens). */
    double runs[BENCH_MAX_REPEAT], cpus[BENCH_MAX_REPEAT];
    for (uint32_t r = 0; r < repeat; r++) {
        if (r > 0 && (mcl_session_reset(s, 0) != MCL_SUCCESS ||
                      mcl_session_feed(s, 0, tokens, prompt, NULL) != MCL_SUCCESS))
            goto done;
        if (mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
        t0 = bench_now();
        double c0 = cpu_now();
        int32_t next = tokens[0];
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_session_feed(s, 0, &next, 1, NULL) != MCL_SUCCESS ||
                mcl_session_sample(s, 0, NULL, &next) != MCL_SUCCESS)
                goto done;
        runs[r] = (bench_now() - t0) / steps;
        cpus[r] = (cpu_now() - c0) / steps;
    }
    uint32_t mid = median_index(runs, repeat);
    t = runs[mid];
    double cpu = cpus[mid];
    if (repeat > 1) {
        uint32_t lo = 0, hi = 0;
        for (uint32_t r = 1; r < repeat; r++) {
            lo = runs[r] < runs[lo] ? r : lo;
            hi = runs[r] > runs[hi] ? r : hi;
        }
        snprintf(name, sizeof name, "%s: decode, one sequence, fastest of %u runs", label,
                 repeat);
        bench_figure(b, name, 1.0 / runs[lo], "tokens/s");
        snprintf(name, sizeof name, "%s: decode, one sequence, slowest of %u runs", label,
                 repeat);
        bench_figure(b, name, 1.0 / runs[hi], "tokens/s");
    }
    snprintf(name, sizeof name, "%s: decode, one sequence%s", label,
             repeat > 1 ? " (the median run)" : "");
    bench_figure(b, name, 1.0 / t, "tokens/s");
    snprintf(name, sizeof name, "%s: decode time per token", label);
    bench_figure(b, name, t * 1e3, "ms");
    if (b->profile) {
        /* The loop once more under the profiler, its steps recorded again with timestamps:
         * where a token's time goes. */
        if (mcl_profiler_start(b->ctx) != MCL_SUCCESS)
            goto done;
        mcl_engine_steps_destroy(s);
        if (mcl_session_reset(s, 0) != MCL_SUCCESS ||
            mcl_session_feed(s, 0, tokens, prompt, NULL) != MCL_SUCCESS ||
            mcl_finish(b->ctx) != MCL_SUCCESS || mcl_profiler_start(b->ctx) != MCL_SUCCESS)
            goto done;
        t0 = bench_now();
        int32_t next = tokens[0];
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_session_feed(s, 0, &next, 1, NULL) != MCL_SUCCESS ||
                mcl_session_sample(s, 0, NULL, &next) != MCL_SUCCESS)
                goto done;
        if (mcl_profiler_stop(b->ctx) != MCL_SUCCESS)
            goto done;
        snprintf(name, sizeof name, "%s: decode, one sequence", label);
        bench_profile_report(b, name, steps, t, (bench_now() - t0) / steps);
    }
    /* The same loop with the logits read back instead of a token sampled, and with each
     * step only waited for: what the sampler's round trip costs in the loop. */
    for (int variant = 0; variant < 3; variant++) {
        float *back = variant == 0 ? malloc((size_t)shape->vocab * sizeof *back) : NULL;
        if (variant == 0 && !back)
            goto done;
        double v[BENCH_MAX_REPEAT];
        for (uint32_t r = 0; r < repeat; r++) {
            if (mcl_session_reset(s, 0) != MCL_SUCCESS ||
                mcl_session_feed(s, 0, tokens, prompt, NULL) != MCL_SUCCESS ||
                mcl_finish(b->ctx) != MCL_SUCCESS) {
                free(back);
                goto done;
            }
            t0 = bench_now();
            for (uint32_t i = 0; i < steps; i++) {
                mcl_status st = mcl_session_feed(s, 0, &tokens[i % prompt], 1, back);
                if (st == MCL_SUCCESS && !back)
                    st = mcl_finish(b->ctx);
                int32_t pick;
                if (st == MCL_SUCCESS && variant == 2)
                    st = mcl_session_sample(s, 0, NULL, &pick);
                if (st != MCL_SUCCESS) {
                    free(back);
                    goto done;
                }
            }
            v[r] = (bench_now() - t0) / steps;
        }
        free(back);
        snprintf(name, sizeof name, "%s: decode, one sequence, %s (the median run)", label,
                 variant == 0   ? "the logits read back instead"
                 : variant == 1 ? "each step waited for, no sampling"
                                : "each step waited for, then a token sampled");
        bench_figure(b, name, 1.0 / v[median_index(v, repeat)], "tokens/s");
    }
    snprintf(name, sizeof name, "%s: decode CPU time per token (all threads)", label);
    bench_figure(b, name, cpu * 1e3, "ms");
    /* The sampler alone on the last logits, each call waited for: greedy, the common
     * truncations, and top-p over the whole vocabulary (its search over the full row). */
    static const struct {
        const char *what;
        mcl_sampler_desc d;
    } samplers[6] = {
        {"greedy", {.size = sizeof(mcl_sampler_desc)}},
        {"greedy, repeat penalty 1.1",
         {.size = sizeof(mcl_sampler_desc), .repeat_penalty = 1.1f}},
        {"temperature 1, top-k 40", {.size = sizeof(mcl_sampler_desc), .temperature = 1.0f,
                                     .top_k = 40}},
        {"temperature 1, min-p 0.05", {.size = sizeof(mcl_sampler_desc), .temperature = 1.0f,
                                       .min_p = 0.05f}},
        {"temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, repeat penalty 1.1",
         {.size = sizeof(mcl_sampler_desc), .temperature = 0.8f, .top_k = 40, .top_p = 0.95f,
          .min_p = 0.05f, .repeat_penalty = 1.1f}},
        {"temperature 1, top-p 0.95", {.size = sizeof(mcl_sampler_desc), .temperature = 1.0f,
                                       .top_p = 0.95f}},
    };
    for (int k = 0; k < 6; k++) {
        int32_t pick;
        t0 = bench_now();
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_session_sample(s, 0, &samplers[k].d, &pick) != MCL_SUCCESS)
                goto done;
        snprintf(name, sizeof name, "%s: a token sampled on the device (%s)", label,
                 samplers[k].what);
        bench_figure(b, name, (bench_now() - t0) / steps * 1e6, "us");
    }
    snprintf(name, sizeof name, "%s: decode dispatches per token (0: recorded op by op)", label);
    bench_figure(b, name, mcl_engine_step_dispatches(s, 1), "dispatches");
    mcl_graph *step = mcl_engine_step_graph(s, 1);
    if (step) {
        /* The recorded step replayed back to back, the host waiting once: the GPU's time. */
        t0 = bench_now();
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_graph_replay(b->ctx, step) != MCL_SUCCESS)
                goto done;
        if (mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
        snprintf(name, sizeof name, "%s: decode step replayed back to back", label);
        bench_figure(b, name, (bench_now() - t0) / steps * 1e3, "ms");
        /* Each replay waited for: what a token costs without its transfers. */
        t0 = bench_now();
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_graph_replay(b->ctx, step) != MCL_SUCCESS || mcl_finish(b->ctx) != MCL_SUCCESS)
                goto done;
        snprintf(name, sizeof name, "%s: decode step replayed, each waited for", label);
        bench_figure(b, name, (bench_now() - t0) / steps * 1e3, "ms");
        /* With the token's input uploaded before, then with the logits downloaded after. The
         * input is the one the replays above ran with (token, position, length, sequence:
         * the cache as the last decode left it), so that the attention reads as many keys;
         * before 2026-12-05 it was position 0, length 1, and these two figures timed a step
         * whose attention read one key. */
        int32_t in[4];
        if (mcl_tensor_download(s->ids, 0, in, sizeof in) != MCL_SUCCESS)
            goto done;
        t0 = bench_now();
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_tensor_upload(s->ids, 0, in, sizeof in) != MCL_SUCCESS ||
                mcl_graph_replay(b->ctx, step) != MCL_SUCCESS || mcl_finish(b->ctx) != MCL_SUCCESS)
                goto done;
        snprintf(name, sizeof name, "%s: decode step replayed after its input's upload", label);
        bench_figure(b, name, (bench_now() - t0) / steps * 1e3, "ms");
        float *logits = malloc((size_t)shape->vocab * sizeof *logits);
        if (!logits)
            goto done;
        t0 = bench_now();
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_graph_replay(b->ctx, step) != MCL_SUCCESS ||
                mcl_tensor_download(s->logits, 0, logits, (uint64_t)shape->vocab * 4) !=
                    MCL_SUCCESS) {
                free(logits);
                goto done;
            }
        free(logits);
        snprintf(name, sizeof name, "%s: decode step replayed, then its logits downloaded", label);
        bench_figure(b, name, (bench_now() - t0) / steps * 1e3, "ms");
        if (profile_pass(b, s, tokens, 1, NULL, 1, label) != 0 ||
            profile_pass(b, s, tokens, prompt, NULL, 1, label) != 0)
            goto done;
    }
    double rate = (double)bytes_per_token(shape) / t / 1e9;
    snprintf(name, sizeof name, "%s: decode weight bytes per token over its time", label);
    bench_figure(b, name, rate, "GB/s");
    if (b->stream_read_gbs > 0) {
        snprintf(name, sizeof name, "%s: decode, of the stream read", label);
        bench_figure(b, name, 100.0 * rate / b->stream_read_gbs, "%");
        /* Dense shapes only: a mixture on an RX 580 is a question of expert residency. */
        if (shape->type == MCL_GGML_Q4_0 && shape->experts == 0)
            model_rx580(b, rate / b->stream_read_gbs);
    }
    if (expert_budget && bench_expert_run(b, s, tokens, prompt, steps, label) != 0)
        goto done;
    if (seqs > 1) {
        /* Every sequence from 8 prompt tokens, then steps tokens each, together. */
        for (uint32_t q = 0; q < seqs; q++) {
            ids[q] = q;
            if (mcl_session_reset(s, q) != MCL_SUCCESS ||
                mcl_session_feed(s, q, tokens, 8, NULL) != MCL_SUCCESS)
                goto done;
        }
        /* Each step's tokens chosen on the device for all sequences at once, and fed back;
         * the prompts' passes finished first. */
        if (mcl_finish(b->ctx) != MCL_SUCCESS)
            goto done;
        t0 = bench_now();
        for (uint32_t i = 0; i < steps; i++)
            if (mcl_session_feed_batch(s, ids, tokens, seqs, NULL) != MCL_SUCCESS ||
                mcl_session_sample_batch(s, ids, seqs, NULL, tokens) != MCL_SUCCESS)
                goto done;
        t = (bench_now() - t0) / steps;
        snprintf(name, sizeof name, "%s: decode, %u sequences as one batch (all tokens)", label,
                 seqs);
        bench_figure(b, name, seqs / t, "tokens/s");
        snprintf(name, sizeof name, "%s: decode dispatches per batch step", label);
        bench_figure(b, name, mcl_engine_step_dispatches(s, seqs), "dispatches");
        /* Where the batch step's time goes: each op's GPU time in it. */
        if (profile_pass(b, s, tokens, 1, ids, seqs, label) != 0)
            goto done;
    }
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "motifcl-bench %s: %s\n", prefill_only ? "prefill" : "decode",
                mcl_context_last_error(b->ctx));
    mcl_session_destroy(s);
    mcl_model_close(model);
    free(tokens);
    free(ids);
    return rc;
}

int bench_decode(bench *b, int prefill_only)
{
    const char *what = prefill_only ? "prefill" : "decode";
    const char *shape_name = "7b", *type_name = "q4_0", *dir = "/tmp", *kv_name = "f32";
    for (int i = 0; i < b->arg_count; i++) {
        if (strncmp(b->args[i], "shape=", 6) == 0)
            shape_name = b->args[i] + 6;
        else if (strncmp(b->args[i], "type=", 5) == 0)
            type_name = b->args[i] + 5;
        else if (strncmp(b->args[i], "dir=", 4) == 0)
            dir = b->args[i] + 4;
        else if (strncmp(b->args[i], "kv=", 3) == 0)
            kv_name = b->args[i] + 3;
    }
    bench_llama_shape shape = {.heads = 32, .kv_heads = 8, .vocab = 32000};
    if (strcmp(shape_name, "7b") == 0) {
        shape.dim = 4096, shape.layers = 32, shape.hidden = 14336;
    } else if (strcmp(shape_name, "1b") == 0) {
        shape.dim = 2048, shape.layers = 16, shape.hidden = 8192;
    } else if (strcmp(shape_name, "mixtral") == 0) { /* 8x7B: 8 experts, 2 a token */
        shape.dim = 4096, shape.layers = 32, shape.hidden = 14336;
        shape.experts = 8, shape.experts_used = 2;
    } else if (strcmp(shape_name, "small") == 0) { /* a smoke test's dense model */
        shape.dim = 512, shape.layers = 2, shape.hidden = 1024, shape.vocab = 512;
        shape.heads = 8, shape.kv_heads = 4;
    } else if (strcmp(shape_name, "moe-small") == 0) { /* a smoke test's mixture */
        shape.dim = 512, shape.layers = 2, shape.hidden = 1024, shape.vocab = 512;
        shape.heads = 8, shape.kv_heads = 4, shape.experts = 8, shape.experts_used = 2;
    } else {
        fprintf(stderr, "motifcl-bench %s: shape is 7b, 1b, mixtral, small or moe-small\n",
                what);
        return 1;
    }
    if (strcmp(type_name, "q4_0") == 0)
        shape.type = MCL_GGML_Q4_0;
    else if (strcmp(type_name, "q8_0") == 0)
        shape.type = MCL_GGML_Q8_0;
    else if (strcmp(type_name, "q4_K") == 0)
        shape.type = MCL_GGML_Q4_K;
    else if (strcmp(type_name, "f32") == 0)
        shape.type = MCL_GGML_F32;
    else {
        fprintf(stderr, "motifcl-bench %s: type is q4_0, q8_0, q4_K or f32\n", what);
        return 1;
    }
    mcl_dtype kv_type = MCL_DTYPE_F32;
    if (strcmp(kv_name, "f16") == 0) {
        kv_type = MCL_DTYPE_F16;
    } else if (strcmp(kv_name, "f32") != 0) {
        fprintf(stderr, "motifcl-bench %s: kv is f32 or f16\n", what);
        return 1;
    }
    uint32_t prompt = (uint32_t)bench_arg(b, "prompt", 512);
    uint32_t steps = (uint32_t)bench_arg(b, "tokens", 64);
    uint32_t seqs = (uint32_t)bench_arg(b, "seqs", 1);
    uint32_t repeat = (uint32_t)bench_arg(b, "repeat", 1);
    const char *expert_text = bench_arg_text(b, "expert_mib");
    int expert_auto = expert_text && strcmp(expert_text, "auto") == 0;
    double expert_mib = expert_auto ? 1.0 : bench_arg(b, "expert_mib", 0);
    if (expert_mib < 0 || expert_mib > 1e9 || (expert_mib > 0 && shape.experts == 0)) {
        fprintf(stderr, "motifcl-bench %s: expert_mib is a mixture's cache, 0 to 1e9 MiB or "
                        "auto\n", what);
        return 1;
    }
    uint64_t expert_budget = expert_auto ? MCL_EXPERT_BUDGET_AUTO
                                         : (uint64_t)(expert_mib * 1048576.0);
    if (prompt < 1 || steps < 1 || seqs < 1 || repeat < 1 || repeat > BENCH_MAX_REPEAT) {
        fprintf(stderr, "motifcl-bench %s: prompt, tokens and seqs are at least 1, repeat "
                        "1 to %u\n", what, BENCH_MAX_REPEAT);
        return 1;
    }
    if (bench_stream(b) != 0)
        return 1;
    char path[512], label[64];
    snprintf(path, sizeof path, "%s/motifcl-bench-decode-%d.gguf", dir, (int)getpid());
    snprintf(label, sizeof label, "%s %s%s%s", shape_name, type_name,
             kv_type == MCL_DTYPE_F16 ? " f16 cache" : "",
             expert_mib > 0 ? ", experts in host memory" : "");
    /* file=1: the model written to a GGUF file and loaded from it; else made on the device. */
    int from_file = bench_arg(b, "file", 0) != 0;
    if (from_file && bench_write_llama(path, &shape) != 0)
        return 1;
    int rc = run(b, from_file ? path : NULL, &shape, prompt, steps, seqs, repeat, kv_type,
                 expert_budget, prefill_only, label);
    if (from_file)
        unlink(path);
    return rc;
}
