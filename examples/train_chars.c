/* train_chars: train a small GPT on a text file, one byte per token, entirely on the GPU, then
 * sample from it. The GPT (mcl_gpt_*) is in motifcl.h's experimental section, so this program
 * is compiled with MOTIFCL_EXPERIMENTAL defined (examples/CMakeLists.txt).
 *
 * The training step (forward, backward, gradient clipping, AdamW) is recorded once as a graph
 * and replayed every step; only the batch's tokens go up and the loss comes back. The
 * learning rate follows a warm-up and a cosine decay set on the host before each replay.
 * Every --log steps it prints the training loss, the validation loss, tokens per second and
 * device memory; at the end it writes a witness (JSON) with those figures and samples text.
 *
 *   train_chars [--data FILE] [--steps N] [--batch B] [--seq T] [--dim D] [--layers L]
 *               [--heads H] [--kv-heads H] [--hidden F] [--lr LR] [--seed S] [--log N]
 *               [--sample N] [--temperature X] [--save FILE] [--load FILE] [--no-replay]
 *               [--witness FILE] [--min-drop X] [--reversible[=A]] [--counter[=C]]
 *               [--counter-lr LR]
 *
 * --reversible[=A]: reversible blocks (MCL_GPT_REVERSIBLE, docs/reversible.md): the backward
 * pass reconstructs block inputs instead of keeping activations, keeping the inputs of every
 * A-th block (default 0: none but the embedding; 1: every block's, no reconstruction). For a
 * new model only: a loaded one keeps its checkpoint's blocks. Memory is printed as
 * persistent (what stays allocated between steps) and peak (the most at any time).
 *
 * --counter[=C]: the blocks' linear layers as counter-state synapses (MCL_GPT_COUNTER,
 * docs/counter-state.md): 6 bits of state per weight, no f32 weight, no optimizer moments,
 * their update fused into the backward pass; C the counter range (default 11). The
 * embedding, the norms and the head stay f32 with AdamW. --counter-lr LR: the layers' peak
 * learning rate (default: --lr), on the same warm-up and cosine. For a new model only.
 *
 * --min-drop X: exit 1 unless the final validation loss is at least X nats below the first
 * one (the demo uses it so that a model that does not learn fails loudly).
 * Every value is read whole and range-checked; a malformed one, a missing value or an unknown
 * option is named on stderr, before the usage, with exit status 1.
 * Exit status: 0 success, 1 failure (a bad option included), 2 no Vulkan device. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "motifcl.h"

#ifndef TRAIN_CHARS_DATA
#define TRAIN_CHARS_DATA "examples/data/tinyshakespeare.txt"
#endif

#define CHECK(call)                                                                        \
    do {                                                                                   \
        mcl_status s_ = (call);                                                            \
        if (s_ != MCL_SUCCESS) {                                                           \
            fprintf(stderr, "%s failed: %s: %s\n", #call, mcl_status_string(s_),           \
                    ctx ? mcl_context_last_error(ctx) : "");                               \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

typedef struct options {
    const char *data, *save, *load, *witness;
    int steps, batch, seq, dim, layers, heads, kv_heads, hidden, log_every, sample, replay;
    int reversible, anchor, counter, counter_c;
    double lr, temperature, min_drop, counter_lr;
    uint64_t seed;
} options;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* An option's value read whole: digits (after an optional minus) for an integer, a finite
 * number for a real, within [lo, hi]; else the option is named with what it takes. */
static int int_option(const char *opt, const char *v, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long x = (isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1])))
                 ? strtol(v, &end, 10)
                 : 0;
    if (!end || *end != '\0' || errno || x < lo || x > hi) {
        fprintf(stderr, "train_chars: %s %s: expected a whole number in %ld..%ld\n", opt, v,
                lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int real_option(const char *opt, const char *v, double lo, double hi, int lo_open,
                       double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end != '\0' || errno || !isfinite(x) || x < lo || x > hi ||
        (lo_open && x == lo)) {
        fprintf(stderr, "train_chars: %s %s: expected a number in %s%g, %g]\n", opt, v,
                lo_open ? "(" : "[", lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int seed_option(const char *v, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = isdigit((unsigned char)v[0]) ? strtoull(v, &end, 10) : 0;
    if (!end || *end != '\0' || errno) {
        fprintf(stderr, "train_chars: --seed %s: expected a whole number in 0..%llu\n", v,
                (unsigned long long)UINT64_MAX);
        return -1;
    }
    *out = (uint64_t)x;
    return 0;
}

/* Bounds of the integer options: at least what the model and the batch need, at most what a
 * run could use (the library refuses larger models by itself). */
#define MAX_STEPS 1000000000L
#define MAX_SIDE 65536L

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.data = TRAIN_CHARS_DATA, .steps = 300, .batch = 8, .seq = 64, .dim = 128,
                   .layers = 4, .heads = 4, .hidden = 0, .log_every = 25, .sample = 300,
                   .replay = 1, .lr = 3e-3, .temperature = 0.8, .seed = 1337,
                   .witness = "train_chars.json", .min_drop = -1.0};
    static const struct {
        const char *name;
        long lo, hi;
        size_t field; /* offsetof(options, ...) of an int */
    } ints[] = {
        {"--steps", 0, MAX_STEPS, offsetof(options, steps)},
        {"--batch", 1, MAX_SIDE, offsetof(options, batch)},
        {"--seq", 2, MAX_SIDE, offsetof(options, seq)},
        {"--dim", 2, MAX_SIDE, offsetof(options, dim)},
        {"--layers", 1, 2048, offsetof(options, layers)},
        {"--heads", 1, MAX_SIDE, offsetof(options, heads)},
        {"--kv-heads", 0, MAX_SIDE, offsetof(options, kv_heads)},
        {"--hidden", 0, MAX_SIDE * 16, offsetof(options, hidden)},
        {"--log", 1, MAX_STEPS, offsetof(options, log_every)},
        {"--sample", 0, 1000000, offsetof(options, sample)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--no-replay") == 0) {
            o->replay = 0;
            continue;
        }
        if (strcmp(a, "--reversible") == 0 || strncmp(a, "--reversible=", 13) == 0) {
            o->reversible = 1;
            if (a[12] == '=' && int_option("--reversible", a + 13, 0, 2048, &o->anchor) != 0)
                return -1;
            continue;
        }
        if (strcmp(a, "--counter") == 0 || strncmp(a, "--counter=", 10) == 0) {
            o->counter = 1;
            if (a[9] == '=' && int_option("--counter", a + 10, 1, 11, &o->counter_c) != 0)
                return -1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "train_chars: %s: not an option\n", a);
            return -1;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int known = 0, bad = 0;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !known; k++) {
            if (strcmp(a, ints[k].name) == 0) {
                known = 1;
                bad = v && int_option(a, v, ints[k].lo, ints[k].hi,
                                      (int *)(void *)((char *)o + ints[k].field));
            }
        }
        if (known) {
        } else if (strcmp(a, "--data") == 0) {
            known = 1, o->data = v;
        } else if (strcmp(a, "--save") == 0) {
            known = 1, o->save = v;
        } else if (strcmp(a, "--load") == 0) {
            known = 1, o->load = v;
        } else if (strcmp(a, "--witness") == 0) {
            known = 1, o->witness = v;
        } else if (strcmp(a, "--lr") == 0) {
            known = 1, bad = v && real_option(a, v, 0.0, 10.0, 0, &o->lr);
        } else if (strcmp(a, "--counter-lr") == 0) {
            known = 1, bad = v && real_option(a, v, 0.0, 10.0, 0, &o->counter_lr);
        } else if (strcmp(a, "--temperature") == 0) {
            known = 1, bad = v && real_option(a, v, 0.0, 100.0, 1, &o->temperature);
        } else if (strcmp(a, "--min-drop") == 0) {
            known = 1, bad = v && real_option(a, v, -1e6, 1e6, 0, &o->min_drop);
        } else if (strcmp(a, "--seed") == 0) {
            known = 1, bad = v && seed_option(v, &o->seed);
        }
        if (!known) {
            fprintf(stderr, "train_chars: %s: unknown option\n", a);
            return -1;
        }
        if (!v) {
            fprintf(stderr, "train_chars: %s: needs a value\n", a);
            return -1;
        }
        if (bad)
            return -1;
        i++;
    }
    if ((o->reversible || o->counter) && o->load) {
        const char *opt = o->reversible ? "--reversible" : "--counter";
        fprintf(stderr, "train_chars: %s: a loaded model keeps its checkpoint's blocks (drop "
                        "%s or --load)\n", opt, opt);
        return -1;
    }
    if (o->counter && (o->dim % 16 != 0 || (o->hidden != 0 && o->hidden % 16 != 0))) {
        fprintf(stderr, "train_chars: --counter: --dim and --hidden must be multiples of "
                        "16\n");
        return -1;
    }
    if (o->hidden == 0)
        o->hidden = o->dim * 8 / 3 / 32 * 32 > 0 ? o->dim * 8 / 3 / 32 * 32 : 32;
    return 0;
}

/* The learning rate of step s (1-based): linear warm-up over the first 5%, then a cosine
 * decay to a tenth. */
static double schedule_factor(const options *o, int s)
{
    int warm = o->steps / 20 > 0 ? o->steps / 20 : 1;
    if (s <= warm)
        return (double)s / warm;
    double t = (double)(s - warm) / (double)(o->steps - warm > 0 ? o->steps - warm : 1);
    return 0.1 + 0.9 * 0.5 * (1.0 + cos(3.141592653589793 * t));
}

static double schedule(const options *o, int s)
{
    return o->lr * schedule_factor(o, s);
}

/* Byte -> token: the distinct bytes of the text, in byte order. */
typedef struct vocab {
    int size;
    int16_t id[256];
    unsigned char byte[256];
} vocab;

static void fill_batch(const unsigned char *text, size_t lo, size_t hi, const vocab *v,
                       int batch, int seq, uint64_t *rng, int32_t *tokens, int32_t *targets)
{
    for (int b = 0; b < batch; b++) {
        size_t start = lo + (size_t)(rng_next(rng) % (uint64_t)(hi - lo - (size_t)seq - 1));
        for (int t = 0; t < seq; t++) {
            tokens[b * seq + t] = v->id[text[start + (size_t)t]];
            targets[b * seq + t] = v->id[text[start + (size_t)t + 1]];
        }
    }
}

/* Device memory of the tensors, in MiB: persistent (allocated now, between steps: the
 * model, its optimizer state and activations) and peak (the most ever allocated, scratch of
 * a step included). */
static void memory_mib(mcl_context *ctx, double *persistent, double *peak)
{
    mcl_memory_stats st = {.size = sizeof st};
    *persistent = *peak = -1.0;
    if (mcl_context_memory_stats(ctx, &st) != MCL_SUCCESS)
        return;
    *persistent = (double)st.bytes_allocated / (1024.0 * 1024.0);
    *peak = (double)st.bytes_allocated_peak / (1024.0 * 1024.0);
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: %s [--data FILE] [--steps N] [--batch B] [--seq T] [--dim D] "
                        "[--layers L] [--heads H] [--kv-heads H] [--hidden F] [--lr LR] "
                        "[--seed S] [--log N] [--sample N] [--temperature X] [--save FILE] "
                        "[--load FILE] [--no-replay] [--witness FILE] [--min-drop X] "
                        "[--reversible[=A]] [--counter[=C]] [--counter-lr LR]\n",
                argv[0]);
        return 1;
    }
    FILE *f = fopen(o.data, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s (--data FILE)\n", o.data);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *text = len > 0 ? malloc((size_t)len) : NULL;
    if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "cannot read %s\n", o.data);
        return 1;
    }
    fclose(f);
    size_t n = (size_t)len, split = n * 9 / 10;
    if (split < (size_t)o.seq + 2 || n - split < (size_t)o.seq + 2) {
        fprintf(stderr, "%s is too short for --seq %d\n", o.data, o.seq);
        return 1;
    }
    vocab v = {0};
    int seen[256] = {0};
    for (size_t i = 0; i < n; i++)
        seen[text[i]] = 1;
    for (int c = 0; c < 256; c++) {
        v.id[c] = -1;
        if (seen[c]) {
            v.id[c] = (int16_t)v.size;
            v.byte[v.size++] = (unsigned char)c;
        }
    }

    mcl_context *ctx = NULL;
    mcl_status status = mcl_context_create(NULL, &ctx);
    if (status != MCL_SUCCESS) {
        fprintf(stderr, "no Vulkan compute device: %s (MOTIFCL_LOG=info says more)\n",
                mcl_status_string(status));
        return 2;
    }
    mcl_device_info info = {.size = sizeof info};
    CHECK(mcl_context_device_info(ctx, &info));

    mcl_gpt *gpt = NULL;
    if (o.load) {
        CHECK(mcl_gpt_load(ctx, o.load, &gpt));
    } else {
        mcl_gpt_desc cfg = {.size = sizeof cfg, .vocab = v.size, .dim = o.dim,
                            .layers = o.layers, .heads = o.heads, .kv_heads = o.kv_heads,
                            .hidden = o.hidden, .max_seq = o.seq, .tied_head = 1,
                            .flags = (o.reversible ? MCL_GPT_REVERSIBLE : 0u) |
                                     (o.counter ? MCL_GPT_COUNTER : 0u),
                            .reversible_anchor = o.anchor, .counter_c = (uint32_t)o.counter_c};
        CHECK(mcl_gpt_create(ctx, &cfg, o.seed, &gpt));
    }
    mcl_gpt_desc cfg = {.size = sizeof cfg};
    CHECK(mcl_gpt_config(gpt, &cfg));
    if (cfg.vocab != v.size || cfg.max_seq < o.seq) {
        fprintf(stderr, "the loaded model (vocab %d, max_seq %d) does not fit this text "
                        "(vocab %d) and --seq %d\n", cfg.vocab, cfg.max_seq, v.size, o.seq);
        return 1;
    }
    printf("MotifCL %s on %s (%s %s)\n", mcl_version_string(), info.name, info.driver_name,
           info.driver_info);
    printf("text %s: %zu bytes, %d distinct; model dim %d, %d layers, %d heads (%d kv), "
           "hidden %d: %lld parameters\n", o.data, n, v.size, cfg.dim, cfg.layers, cfg.heads,
           cfg.kv_heads, cfg.hidden, (long long)mcl_gpt_param_numel(gpt));
    const int reversible = (cfg.flags & MCL_GPT_REVERSIBLE) != 0;
    if (reversible)
        printf("blocks: reversible, inputs kept every %d blocks (0: none but the embedding)\n",
               cfg.reversible_anchor);
    else
        printf("blocks: ordinary (activations of every block kept)\n");
    const int counter = (cfg.flags & MCL_GPT_COUNTER) != 0;
    if (counter)
        printf("linears: counter-state, C %u (0.75 B of state per weight; f32 parameters "
               "above are the embedding and the norms), peak lr %g\n", cfg.counter_c,
               o.counter_lr > 0.0 ? o.counter_lr : o.lr);
    printf("batch %d x %d tokens, %d steps, lr %g (warm-up, cosine), %s\n", o.batch, o.seq,
           o.steps, o.lr, o.replay ? "step replayed from a graph" : "step recorded each time");
    fflush(stdout);

    int64_t shape[2] = {o.batch, o.seq};
    mcl_tensor *tokens, *targets, *loss;
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, shape, &tokens));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, shape, &targets));
    int64_t one = 1;
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &one, &loss));
    size_t bt = (size_t)o.batch * (size_t)o.seq;
    int32_t *tok = malloc(bt * sizeof *tok), *tgt = malloc(bt * sizeof *tgt);
    if (!tok || !tgt)
        return 1;
    uint64_t rng = o.seed ^ 0xA5A5A5A5ull;

    /* Validation: a fixed set of batches from the last tenth of the text. */
    enum { VAL_BATCHES = 4 };
    int32_t *val_tok = malloc(VAL_BATCHES * bt * sizeof *val_tok);
    int32_t *val_tgt = malloc(VAL_BATCHES * bt * sizeof *val_tgt);
    if (!val_tok || !val_tgt)
        return 1;
    uint64_t val_rng = 42;
    for (int i = 0; i < VAL_BATCHES; i++)
        fill_batch(text, split, n, &v, o.batch, o.seq, &val_rng, val_tok + i * bt,
                   val_tgt + i * bt);

    mcl_graph *step_graph = NULL;
    int64_t first_step = mcl_gpt_optimizer_step(gpt);
    double first_val = NAN, last_val = NAN, last_train = NAN, tokens_per_s = 0.0;
    double train_time = 0.0;
    int timed_steps = 0;
    for (int s = 0; s <= o.steps; s++) {
        /* Validation loss at the start, every --log steps and at the end. */
        if (s % o.log_every == 0 || s == o.steps) {
            double sum = 0.0;
            for (int i = 0; i < VAL_BATCHES; i++) {
                CHECK(mcl_tensor_upload(tokens, 0, val_tok + i * bt, bt * sizeof *tok));
                CHECK(mcl_tensor_upload(targets, 0, val_tgt + i * bt, bt * sizeof *tgt));
                CHECK(mcl_gpt_forward(gpt, tokens, targets, loss));
                float l;
                CHECK(mcl_tensor_download(loss, 0, &l, sizeof l));
                sum += l;
            }
            last_val = sum / VAL_BATCHES;
            if (s == 0)
                first_val = last_val;
            char train[16] = "   -  ";
            if (s > 0)
                snprintf(train, sizeof train, "%.4f", last_train);
            double persistent, peak;
            memory_mib(ctx, &persistent, &peak);
            printf("step %5d/%d  train %s  val %.4f  lr %.2e  %.0f tokens/s  memory %.1f MiB "
                   "(peak %.1f)\n", s, o.steps, train, last_val, s ? schedule(&o, s) : 0.0,
                   tokens_per_s, persistent, peak);
            fflush(stdout);
        }
        if (s == o.steps)
            break;
        fill_batch(text, 0, split, &v, o.batch, o.seq, &rng, tok, tgt);
        double t0 = now();
        CHECK(mcl_tensor_upload(tokens, 0, tok, bt * sizeof *tok));
        CHECK(mcl_tensor_upload(targets, 0, tgt, bt * sizeof *tgt));
        mcl_adamw_desc adam = {.size = sizeof adam, .lr = (float)schedule(&o, s + 1),
                               .beta1 = 0.9f, .beta2 = 0.95f, .weight_decay = 0.1f,
                               .step = first_step + s + 1};
        CHECK(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
        if (counter) {
            /* The same schedule, scaled to the layers' peak; the seed is the model's. */
            double peak = o.counter_lr > 0.0 ? o.counter_lr : o.lr;
            mcl_counter_update_desc up = {.size = sizeof up,
                                          .lr = (float)(schedule_factor(&o, s + 1) * peak),
                                          .seed = (uint32_t)o.seed};
            CHECK(mcl_gpt_set_counter_update(gpt, &up));
        }
        if (o.replay) {
            if (!step_graph) {
                CHECK(mcl_graph_begin(ctx));
                CHECK(mcl_gpt_forward(gpt, tokens, targets, loss));
                CHECK(mcl_gpt_backward(gpt));
                CHECK(mcl_gpt_step(gpt));
                CHECK(mcl_graph_end(ctx, &step_graph));
            }
            CHECK(mcl_graph_replay(ctx, step_graph));
        } else {
            CHECK(mcl_gpt_forward(gpt, tokens, targets, loss));
            CHECK(mcl_gpt_backward(gpt));
            CHECK(mcl_gpt_step(gpt));
        }
        float l;
        CHECK(mcl_tensor_download(loss, 0, &l, sizeof l));
        if (!isfinite(l)) {
            fprintf(stderr, "step %d: the loss is %g\n", s + 1, (double)l);
            return 1;
        }
        last_train = l;
        double dt = now() - t0;
        if (s > 0) { /* the first step compiles pipelines */
            train_time += dt;
            timed_steps++;
            tokens_per_s = (double)timed_steps * (double)bt / train_time;
        }
    }
    if (o.save) {
        CHECK(mcl_gpt_save(gpt, o.save));
        printf("saved %s\n", o.save);
    }

    /* Sampling: the context window is the model's; a causal model's logits at position t do
     * not depend on later positions, so a fixed [1, T] batch padded with zeros serves every
     * length. */
    if (o.sample > 0) {
        int T = o.seq;
        int64_t sshape[2] = {1, T};
        mcl_tensor *ctx_tokens;
        CHECK(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, sshape, &ctx_tokens));
        int32_t *window = calloc((size_t)T, sizeof *window);
        float *row = malloc((size_t)cfg.vocab * sizeof *row);
        if (!window || !row)
            return 1;
        int used = 1;
        window[0] = v.id['\n'] >= 0 ? v.id['\n'] : 0;
        uint64_t srng = o.seed + 7;
        printf("--- sample (temperature %.2f) ---\n", o.temperature);
        for (int i = 0; i < o.sample; i++) {
            CHECK(mcl_tensor_upload(ctx_tokens, 0, window, (size_t)T * sizeof *window));
            CHECK(mcl_gpt_forward(gpt, ctx_tokens, NULL, NULL));
            CHECK(mcl_tensor_download(mcl_gpt_logits(gpt),
                                      (uint64_t)(used - 1) * (uint64_t)cfg.vocab * 4, row,
                                      (size_t)cfg.vocab * sizeof *row));
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j < cfg.vocab; j++)
                mx = row[j] > mx ? row[j] : mx;
            for (int j = 0; j < cfg.vocab; j++)
                sum += exp((row[j] - mx) / o.temperature);
            double r = (double)(rng_next(&srng) >> 11) / 9007199254740992.0 * sum;
            int pick = cfg.vocab - 1;
            for (int j = 0; j < cfg.vocab; j++) {
                r -= exp((row[j] - mx) / o.temperature);
                if (r <= 0.0) {
                    pick = j;
                    break;
                }
            }
            putchar(v.byte[pick]);
            if (used == T) {
                memmove(window, window + 1, (size_t)(T - 1) * sizeof *window);
                window[T - 1] = pick;
            } else {
                window[used++] = pick;
            }
        }
        printf("\n--- end of sample ---\n");
        free(window);
        free(row);
        mcl_tensor_destroy(ctx_tokens);
    }

    double persistent, peak;
    memory_mib(ctx, &persistent, &peak);
    /* The inversion drift of the last training step's backward pass (none without steps). */
    float drift = NAN;
    if (reversible && o.steps > 0)
        CHECK(mcl_gpt_reversible_drift(gpt, &drift));
    int ok = isfinite(last_val) && (o.min_drop < 0.0 || first_val - last_val >= o.min_drop);
    printf("validation loss %.4f -> %.4f, %.0f tokens/s, device memory %.1f MiB persistent, "
           "%.1f MiB peak%s\n", first_val, last_val, tokens_per_s, persistent, peak,
           ok ? "" : " (FAILED: the loss did not drop by --min-drop)");
    if (reversible && o.steps > 0)
        printf("inversion drift of the last step: %.3g (max relative L2 of reconstructed block "
               "inputs)\n", (double)drift);
    if (o.witness && *o.witness) {
        FILE *w = fopen(o.witness, "w");
        if (w) {
            fprintf(w, "{\n  \"schema\": \"motifcl-witness/1\",\n  \"kind\": \"example\",\n"
                       "  \"name\": \"train_chars\",\n  \"result\": \"%s\",\n"
                       "  \"library_version\": \"%s\",\n  \"git_commit\": \"%s\",\n"
                       "  \"device\": {\"name\": \"%s\", \"driver_name\": \"%s\", "
                       "\"driver_info\": \"%s\", \"profile\": \"%s\"},\n",
                    ok ? "passed" : "failed", mcl_version_string(), mcl_git_commit(),
                    info.name, info.driver_name, info.driver_info, info.profile);
            fprintf(w, "  \"config\": {\"vocab\": %d, \"dim\": %d, \"layers\": %d, \"heads\": %d, "
                       "\"kv_heads\": %d, \"hidden\": %d, \"batch\": %d, \"seq\": %d, "
                       "\"steps\": %d, \"lr\": %g, \"replay\": %d, \"parameters\": %lld, "
                       "\"reversible\": %d, \"reversible_anchor\": %d, \"counter_c\": %u},\n",
                    cfg.vocab, cfg.dim, cfg.layers, cfg.heads, cfg.kv_heads, cfg.hidden,
                    o.batch, o.seq, o.steps, o.lr, o.replay,
                    (long long)mcl_gpt_param_numel(gpt), reversible, cfg.reversible_anchor,
                    counter ? cfg.counter_c : 0u);
            fprintf(w, "  \"figures\": [\n"
                       "    {\"name\": \"validation loss, first\", \"value\": %.6f, "
                       "\"unit\": \"nats\", \"label\": \"measured\"},\n"
                       "    {\"name\": \"validation loss, last\", \"value\": %.6f, "
                       "\"unit\": \"nats\", \"label\": \"measured\"},\n"
                       "    {\"name\": \"training throughput\", \"value\": %.1f, "
                       "\"unit\": \"tokens/s\", \"label\": \"measured\"},\n"
                       "    {\"name\": \"persistent device memory (tensors)\", \"value\": "
                       "%.2f, \"unit\": \"MiB\", \"label\": \"measured\"},\n"
                       "    {\"name\": \"peak device memory (tensors)\", \"value\": %.2f, "
                       "\"unit\": \"MiB\", \"label\": \"measured\"}",
                    first_val, last_val, tokens_per_s, persistent, peak);
            if (reversible && o.steps > 0)
                fprintf(w, ",\n    {\"name\": \"inversion drift, last step\", \"value\": "
                           "%.6g, \"unit\": \"relative L2\", \"label\": \"measured\"}",
                        (double)drift);
            fprintf(w, "\n  ]\n}\n");
            fclose(w);
            printf("witness: %s\n", o.witness);
        }
    }
    mcl_graph_destroy(step_graph);
    mcl_tensor_destroy(tokens);
    mcl_tensor_destroy(targets);
    mcl_tensor_destroy(loss);
    mcl_gpt_destroy(gpt);
    mcl_context_destroy(ctx);
    free(text);
    free(tok);
    free(tgt);
    free(val_tok);
    free(val_tgt);
    return ok ? 0 : 1;
}
