/* Training throughput: one whole GPT training step (forward, backward, gradient norm and
 * clipping, AdamW) captured as a graph and replayed, on random tokens. The default shape is
 * stories15M's (vocab 32000, dim 288, 6 layers, 6 heads, SwiGLU hidden 768) at batch 16 x 256;
 * key=value options change it: vocab, dim, layers, heads, kv_heads, hidden, batch, seq;
 * counter=C (1..11) makes the blocks' linears counter-state layers (MCL_GPT_COUNTER), and
 * reversible=A reversible blocks with anchors every A (MCL_GPT_REVERSIBLE; -1, the default:
 * ordinary blocks). Figures: wall time per replayed step (after a warm-up), tokens per second,
 * the live tensor memory after a step (persistent) and its peak (parameters, gradients,
 * moments, activations, scratch), the model's memory before its first pass, and the peak
 * less that (the activations and scratch: flat in depth with reversible blocks). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define TRY(call)                                                                          \
    do {                                                                                   \
        mcl_status s_ = (call);                                                            \
        if (s_ != MCL_SUCCESS) {                                                           \
            fprintf(stderr, "motifcl-bench train: %s: %s (%s)\n", #call,                   \
                    mcl_status_string(s_), mcl_context_last_error(b->ctx));                \
            rc = 1;                                                                        \
            goto done;                                                                     \
        }                                                                                  \
    } while (0)

int bench_train(bench *b)
{
    mcl_context *ctx = b->ctx;
    int rc = 0;
    mcl_gpt_desc cfg = {
        .size = sizeof cfg,
        .vocab = (int32_t)bench_arg(b, "vocab", 32000),
        .dim = (int32_t)bench_arg(b, "dim", 288),
        .layers = (int32_t)bench_arg(b, "layers", 6),
        .heads = (int32_t)bench_arg(b, "heads", 6),
        .kv_heads = (int32_t)bench_arg(b, "kv_heads", 0),
        .hidden = (int32_t)bench_arg(b, "hidden", 768),
        .tied_head = 1,
    };
    int batch = (int)bench_arg(b, "batch", 16), seq = (int)bench_arg(b, "seq", 256);
    cfg.max_seq = seq;
    const int counter = (int)bench_arg(b, "counter", 0);
    const int anchor = (int)bench_arg(b, "reversible", -1);
    if (counter < 0 || counter > MCL_COUNTER_MAX_C || anchor < -1) {
        fprintf(stderr, "motifcl-bench train: counter must be in 0..%d, reversible >= -1\n",
                MCL_COUNTER_MAX_C);
        return 1;
    }
    if (counter) {
        cfg.flags |= MCL_GPT_COUNTER;
        cfg.counter_c = (uint32_t)counter;
    }
    if (anchor >= 0) {
        cfg.flags |= MCL_GPT_REVERSIBLE;
        cfg.reversible_anchor = anchor;
    }
    mcl_gpt *gpt = NULL;
    mcl_tensor *tokens = NULL, *targets = NULL, *loss = NULL;
    mcl_graph *graph = NULL;
    int32_t *ids = NULL;
    if (batch < 1 || seq < 1) {
        fprintf(stderr, "motifcl-bench train: batch and seq must be >= 1\n");
        return 1;
    }
    size_t bt = (size_t)batch * (size_t)seq;
    ids = malloc(bt * sizeof *ids);
    if (!ids)
        return 1;
    TRY(mcl_gpt_create(ctx, &cfg, 1, &gpt));
    /* Every weight the step trains: the f32 parameters and the counter layers'. */
    int64_t weights = mcl_gpt_param_numel(gpt);
    for (int32_t l = 0; counter && l < cfg.layers; l++) {
        for (int w = MCL_GPT_WQ; w <= MCL_GPT_W_DOWN; w++) {
            mcl_counter_linear *layer = mcl_gpt_counter_layer(gpt, l, (mcl_gpt_linear)w);
            weights += mcl_tensor_numel(mcl_counter_linear_state(layer)) / 3 * 4;
        }
    }
    int64_t shape[2] = {batch, seq}, one = 1;
    TRY(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, shape, &tokens));
    TRY(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, shape, &targets));
    TRY(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &one, &loss));
    uint32_t s = 12345;
    for (size_t i = 0; i < bt; i++) {
        s = s * 1664525u + 1013904223u;
        ids[i] = (int32_t)((s >> 8) % (uint32_t)cfg.vocab);
    }
    TRY(mcl_tensor_upload(tokens, 0, ids, bt * sizeof *ids));
    TRY(mcl_tensor_upload(targets, 0, ids, bt * sizeof *ids));
    mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-4f, .weight_decay = 0.1f, .step = 1};
    TRY(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
    /* The model's own memory before its first pass: what the activations and scratch are
     * counted above. */
    mcl_memory_stats before = {.size = sizeof before};
    TRY(mcl_context_memory_stats(ctx, &before));
    /* Allocate the activations, then capture. The first pass compiles the pipelines (long on
     * some drivers): progress goes to stderr. */
    double t_start = bench_now();
    fprintf(stderr, "train: %lld parameters; first forward pass (compiles pipelines)...\n",
            (long long)mcl_gpt_param_numel(gpt));
    TRY(mcl_gpt_forward(gpt, tokens, targets, loss));
    TRY(mcl_finish(ctx));
    fprintf(stderr, "train: %.1f s; capture and first replay (compiles the backward's)...\n",
            bench_now() - t_start);
    TRY(mcl_graph_begin(ctx));
    TRY(mcl_gpt_forward(gpt, tokens, targets, loss));
    TRY(mcl_gpt_backward(gpt));
    TRY(mcl_gpt_step(gpt));
    TRY(mcl_graph_end(ctx, &graph));
    /* Warm-up (pipelines compiled by the first replay, clocks up). */
    TRY(mcl_graph_replay(ctx, graph));
    TRY(mcl_finish(ctx));
    double t_first = bench_now() - t_start;
    fprintf(stderr, "train: %.1f s; warm-up...\n", t_first);
    double t0 = bench_now();
    int warm = 0;
    while (warm < 2 || bench_now() - t0 < b->warmup_s) {
        TRY(mcl_graph_replay(ctx, graph));
        TRY(mcl_finish(ctx));
        warm++;
    }
    int steps = b->repeat;
    t0 = bench_now();
    for (int i = 0; i < steps; i++) {
        adam.step = 2 + warm + i;
        TRY(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
        TRY(mcl_graph_replay(ctx, graph));
        float l;
        TRY(mcl_tensor_download(loss, 0, &l, sizeof l));
    }
    double dt = (bench_now() - t0) / steps;
    mcl_memory_stats st = {.size = sizeof st};
    TRY(mcl_context_memory_stats(ctx, &st));
    char name[160];
    char kind[48] = "";
    if (counter)
        snprintf(kind, sizeof kind, " counter C%d", counter);
    if (anchor >= 0)
        snprintf(kind + strlen(kind), sizeof kind - strlen(kind), " reversible A%d", anchor);
    snprintf(name, sizeof name, "train step d%d L%d H%d/%d F%d V%d, %dx%d%s",
             (int)cfg.dim, (int)cfg.layers, (int)cfg.heads,
             (int)(cfg.kv_heads ? cfg.kv_heads : cfg.heads), (int)cfg.hidden, (int)cfg.vocab,
             batch, seq, kind);
    printf("%s: %lld weights (%lld f32 parameters), %u dispatches per step (replayed)\n", name,
           (long long)weights, (long long)mcl_gpt_param_numel(gpt),
           mcl_graph_dispatch_count(graph));
    char fig[256];
    /* What a fresh process waits for before it trains: the pipelines of the forward, the
     * backward and the step created (or found in the pipeline cache), the first step run. */
    snprintf(fig, sizeof fig, "%s: first forward pass, capture and first step", name);
    bench_figure(b, fig, t_first, "s");
    snprintf(fig, sizeof fig, "%s: time per step", name);
    bench_figure(b, fig, dt * 1e3, "ms");
    snprintf(fig, sizeof fig, "%s: tokens/s", name);
    bench_figure(b, fig, (double)bt / dt, "tokens/s");
    snprintf(fig, sizeof fig, "%s: persistent tensor memory (after a step)", name);
    bench_figure(b, fig, (double)st.bytes_allocated / (double)MIB, "MiB");
    snprintf(fig, sizeof fig, "%s: peak tensor memory", name);
    bench_figure(b, fig, (double)st.bytes_allocated_peak / (double)MIB, "MiB");
    snprintf(fig, sizeof fig, "%s: device memory reserved", name);
    bench_figure(b, fig, (double)st.bytes_reserved / (double)MIB, "MiB");
    snprintf(fig, sizeof fig, "%s: the model's tensor memory before its first pass", name);
    bench_figure(b, fig, (double)before.bytes_allocated / (double)MIB, "MiB");
    snprintf(fig, sizeof fig, "%s: activations and scratch (peak less the model's)", name);
    bench_figure(b, fig, (double)(st.bytes_allocated_peak - before.bytes_allocated) /
                             (double)MIB, "MiB");
    /* 6 N flops per token for the matrices plus the attention's 12 L T d per token: the
     * usual estimate, labelled modeled. */
    double flops = 6.0 * (double)weights * (double)bt +
                   12.0 * cfg.layers * (double)seq * cfg.dim * (double)bt;
    snprintf(fig, sizeof fig, "%s: model FLOP rate (6N + 12LTd per token)", name);
    bench_modeled(b, fig, flops / dt * 1e-12, "TFLOP/s");
    /* The RX 580 (6.17 TFLOP/s FP32, 256 GB/s) running this step at the shares of this
     * device's FP32 peak and stream read that this run reached: modeled, no RX 580 ran. The
     * step mixes products (bound by arithmetic) and element-wise passes (bound by memory);
     * the whole step scaled by the larger of the two ratios is the low estimate. Measured
     * after the memory figures: the stream read's buffers are not the step's. */
    if (b->peak_tflops > 0 && bench_stream(b) == 0) {
        double slower = fmax(b->peak_tflops / BENCH_RX580_TFLOPS,
                             b->stream_read_gbs / BENCH_RX580_GBS);
        snprintf(fig, sizeof fig, "%s: RX 580 tokens/s, the step %.1fx slower (the lower of "
                                  "FP32 peak and stream read)", name, slower);
        bench_modeled(b, fig, (double)bt / (dt * slower), "tokens/s");
    }
    if (b->profile) {
        /* The step captured again under the profiler, replayed as above. */
        mcl_graph_destroy(graph);
        graph = NULL;
        TRY(mcl_profiler_start(ctx));
        TRY(mcl_graph_begin(ctx));
        TRY(mcl_gpt_forward(gpt, tokens, targets, loss));
        TRY(mcl_gpt_backward(gpt));
        TRY(mcl_gpt_step(gpt));
        TRY(mcl_graph_end(ctx, &graph));
        t0 = bench_now();
        for (int i = 0; i < steps; i++)
            TRY(mcl_graph_replay(ctx, graph));
        TRY(mcl_profiler_stop(ctx));
        double profiled = (bench_now() - t0) / steps;
        bench_profile_report(b, name, steps, dt, profiled);
    }
done:
    mcl_graph_destroy(graph);
    mcl_tensor_destroy(tokens);
    mcl_tensor_destroy(targets);
    mcl_tensor_destroy(loss);
    mcl_gpt_destroy(gpt);
    free(ids);
    return rc;
}
