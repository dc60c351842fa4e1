/* motifcl-run: generate text with a model file. Loads the model (a progress bar on stderr),
 * runs the prompt (or, with -i, a conversation read from stdin under the llama-3 or ChatML
 * template, the cache kept between turns; a prompt of more than one pass under a progress
 * bar too), streams the generated text to stdout, and ends with the figures: load time,
 * prompt and decode tokens per second, peak device memory (stderr, or one JSON object on
 * stdout with --json). With --witness-dir DIR (or MOTIFCL_WITNESS_DIR) it also writes a
 * witness. Exit status: 0 done, 1 bad arguments, 2 no device, 3 the model or the run failed. */
#ifndef MOTIFCL_EXPERIMENTAL
#define MOTIFCL_EXPERIMENTAL
#endif
#include <motifcl.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/witness.h"

typedef struct options {
    const char *model, *prompt, *prompt_file, *witness_dir, *template_name;
    uint32_t n, context;
    uint64_t expert_budget;
    mcl_dtype kv_type;
    int json, no_bos, interactive;
    mcl_sampler_desc sampler;
} options;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s -m FILE (-p TEXT | -f FILE | -i [--template llama3|chatml]) [-n N]\n"
            "       [--ctx N] [--kv f32|f16] [--expert-budget BYTES|auto] [--temp T] [--top-k K]\n"
            "       [--top-p P] [--min-p P] [--repeat-penalty R] [--frequency-penalty F]\n"
            "       [--presence-penalty P] [--penalty-last-n N] [--seed S] [--no-bos] [--json]\n"
            "       [--witness-dir DIR]\n"
            "  -n N       tokens to generate (a turn's, with -i; default 128); EOS ends it\n"
            "  -i         chat: user turns read from stdin, a line each, the cache kept between\n"
            "             turns; -p or -f is then the first turn. --template picks the template\n"
            "             (llama3 or chatml; by default the one whose tokens the model has)\n"
            "  --ctx N    context length (default: the model's, at most 4096)\n"
            "  --kv T     the cache's type: f32 (the default) or f16 (half the memory)\n"
            "  --expert-budget BYTES  a mixture's experts: their stacks stay in host memory and\n"
            "             a cache of this many device bytes holds those in use (default 0:\n"
            "             every expert in device memory; auto: what the device has left\n"
            "             after the activations and the context's cache); the cache's counts\n"
            "             are printed at the end\n"
            "  --temp T   temperature; 0 (the default) is greedy\n",
            argv0);
}

/* A whole number in [lo, hi] for option `name`, read whole (no sign, space or trailing text);
 * 0 on success, else the option named on stderr and -1. */
static int whole(const char *name, const char *v, unsigned long long lo, unsigned long long hi,
                 unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = isdigit((unsigned char)v[0]) ? strtoull(v, &end, 10) : 0;
    if (!end || *end != '\0' || errno == ERANGE || x < lo || x > hi) {
        fprintf(stderr, "motifcl-run: %s \"%s\": expected a whole number from %llu to %llu\n",
                name, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* A finite number in [lo, hi] for option `name`, read whole; as whole(). */
static int real(const char *name, const char *v, float lo, float hi, float *out)
{
    char *end = NULL;
    float x = strtof(v, &end);
    if (end == v || *end != '\0' || !isfinite(x) || x < lo || x > hi) {
        fprintf(stderr, "motifcl-run: %s \"%s\": expected a number from %g to %g\n", name, v,
                (double)lo, (double)hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* Parse argv into o; 0 on success, -1 for usage, -2 for a value already named on stderr. */
static int parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->n = 128;
    o->sampler.size = sizeof o->sampler;
    o->witness_dir = getenv("MOTIFCL_WITNESS_DIR");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1;
        if (strcmp(a, "--json") == 0)
            o->json = 1, used = 0;
        else if (strcmp(a, "--no-bos") == 0)
            o->no_bos = 1, used = 0;
        else if (strcmp(a, "-i") == 0)
            o->interactive = 1, used = 0;
        else if (!v) {
            fprintf(stderr, "motifcl-run: %s needs a value\n", a);
            return -1;
        }
        else if (strcmp(a, "-m") == 0)
            o->model = v;
        else if (strcmp(a, "-p") == 0)
            o->prompt = v;
        else if (strcmp(a, "-f") == 0)
            o->prompt_file = v;
        else if (strcmp(a, "--witness-dir") == 0)
            o->witness_dir = v;
        else if (strcmp(a, "--template") == 0)
            o->template_name = v;
        else if (strcmp(a, "-n") == 0 || strcmp(a, "--ctx") == 0 ||
                 strcmp(a, "--top-k") == 0 || strcmp(a, "--penalty-last-n") == 0) {
            unsigned long long x;
            if (whole(a, v, strcmp(a, "--ctx") == 0 ? 1 : 0, UINT32_MAX, &x) != 0)
                return -2;
            uint32_t *to = strcmp(a, "-n") == 0        ? &o->n
                           : strcmp(a, "--ctx") == 0   ? &o->context
                           : strcmp(a, "--top-k") == 0 ? &o->sampler.top_k
                                                       : &o->sampler.penalty_last_n;
            *to = (uint32_t)x;
        } else if (strcmp(a, "--kv") == 0) {
            if (strcmp(v, "f32") != 0 && strcmp(v, "f16") != 0) {
                fprintf(stderr, "motifcl-run: --kv \"%s\": expected f32 or f16\n", v);
                return -2;
            }
            o->kv_type = strcmp(v, "f16") == 0 ? MCL_DTYPE_F16 : MCL_DTYPE_F32;
        } else if (strcmp(a, "--temp") == 0) {
            if (real(a, v, 0.0f, 100.0f, &o->sampler.temperature) != 0)
                return -2;
        } else if (strcmp(a, "--top-p") == 0 || strcmp(a, "--min-p") == 0) {
            if (real(a, v, 0.0f, 1.0f,
                     strcmp(a, "--top-p") == 0 ? &o->sampler.top_p : &o->sampler.min_p) != 0)
                return -2;
        } else if (strcmp(a, "--repeat-penalty") == 0) {
            if (real(a, v, 0.0f, 100.0f, &o->sampler.repeat_penalty) != 0)
                return -2;
        } else if (strcmp(a, "--frequency-penalty") == 0 ||
                   strcmp(a, "--presence-penalty") == 0) {
            if (real(a, v, -100.0f, 100.0f,
                     strcmp(a, "--frequency-penalty") == 0 ? &o->sampler.frequency_penalty
                                                           : &o->sampler.presence_penalty) != 0)
                return -2;
        } else if (strcmp(a, "--expert-budget") == 0) {
            unsigned long long x;
            if (v && strcmp(v, "auto") == 0)
                o->expert_budget = MCL_EXPERT_BUDGET_AUTO;
            else if (whole(a, v, 0, UINT64_MAX - 1, &x) != 0)
                return -2;
            else
                o->expert_budget = x;
        } else if (strcmp(a, "--seed") == 0) {
            unsigned long long x;
            if (whole(a, v, 0, UINT64_MAX, &x) != 0)
                return -2;
            o->sampler.seed = x;
        }
        else {
            fprintf(stderr, "motifcl-run: unknown option %s\n", a);
            return -1;
        }
        i += used;
    }
    if (!o->model || (o->prompt && o->prompt_file) ||
        (!o->interactive && !o->prompt && !o->prompt_file))
        return -1;
    return 0;
}

/* The whole of a file, NUL-terminated; NULL on failure. */
static char *read_text(const char *path, size_t *length)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    while (text) {
        n += fread(text + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *grown = realloc(text, cap * 2);
        if (!grown)
            free(text);
        text = grown;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!text || bad) {
        free(text);
        return NULL;
    }
    text[n] = '\0';
    *length = n;
    return text;
}

/* "\r<label> [####    ]" on stderr, fraction in [0, 1] of the bar filled. */
static void bar(const char *label, double fraction)
{
    int width = 40, filled = (int)(fraction * width);
    fprintf(stderr, "\r%-7s [%.*s%*s]", label, filled,
            "########################################", width - filled, "");
}

static void progress(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    if (!isatty(STDERR_FILENO) || total == 0)
        return;
    bar("loading", (double)done / (double)total);
    fprintf(stderr, " %5.1f%% of %.2f GB", 100.0 * (double)done / (double)total,
            (double)total / 1e9);
    if (done == total)
        fputc('\n', stderr);
}

/* The prompt's tokens a pass takes (the session's default batch). */
#define PROMPT_PASS 512u

static void prompt_progress(uint32_t done, uint32_t total, double seconds)
{
    bar("prompt", (double)done / (double)total);
    fprintf(stderr, " %u of %u tokens, %.0f tokens/s", done, total,
            seconds > 0.0 ? done / seconds : 0.0);
    if (done == total)
        fputc('\n', stderr);
}

/* Bytes of s that end on a whole UTF-8 character (a tail that starts one is held back). */
static size_t whole_utf8(const char *s, size_t n)
{
    size_t i = n, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return n;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return back + 1 >= need ? n : i - 1;
}

/* JSON string of s. */
static void json_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

typedef struct run {
    double load_s, prompt_s, decode_s;
    uint32_t prompt_tokens, generated, turns;
    uint64_t peak_bytes;
    mcl_expert_stats experts;    /* the session's expert cache at the end */
    char *text;
} run;

/* The text of generated ids; printed as it grows unless quiet. */
static mcl_status stream(mcl_model *model, const int32_t *ids, uint32_t count, size_t *printed,
                         int quiet, char **text)
{
    size_t need = 0;
    mcl_status st = mcl_model_detokenize(model, ids, count, NULL, 0, &need);
    if (st != MCL_SUCCESS && st != MCL_ERROR_TOO_LARGE)
        return st;
    char *grown = realloc(*text, need + 1);
    if (!grown)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    *text = grown;
    if ((st = mcl_model_detokenize(model, ids, count, *text, need + 1, NULL)) != MCL_SUCCESS)
        return st;
    size_t n = strlen(*text), ready = whole_utf8(*text, n);
    if (!quiet && ready > *printed) {
        fwrite(*text + *printed, 1, ready - *printed, stdout);
        fflush(stdout);
        *printed = ready;
    }
    return MCL_SUCCESS;
}

/* The chat templates -i knows, by name: a user turn with the assistant's header after it,
 * the token that ends the assistant's turn, and what goes between that token and the next
 * user turn. */
typedef struct chat_template {
    const char *name;
    const char *turn; /* printf format of one %s, the user's message */
    const char *stop;
    const char *between;
    const char *tokens[3]; /* the control tokens the vocabulary must have */
} chat_template;

static const chat_template templates[] = {
    {"llama3",
     "<|start_header_id|>user<|end_header_id|>\n\n%s<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|eot_id|>", "", {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}},
    {"chatml", "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>", "\n",
     {"<|im_start|>", "<|im_end|>", NULL}},
};

/* The id of `text` when it is one control token of the vocabulary, else -1. */
static int32_t control_token(mcl_model *model, const char *text)
{
    int32_t id[2];
    uint32_t n = 0;
    if (mcl_model_tokenize(model, text, strlen(text), MCL_TOKENIZE_PARSE_SPECIAL, id, 2, &n) !=
            MCL_SUCCESS ||
        n != 1)
        return -1;
    uint32_t plain = 0;
    /* Without parsing specials the text must come out as more than one piece. */
    mcl_model_tokenize(model, text, strlen(text), 0, NULL, 0, &plain);
    return plain > 1 ? id[0] : -1;
}

/* Whether the vocabulary has every control token of t. */
static int template_fits(mcl_model *model, const chat_template *t)
{
    for (int i = 0; i < 3 && t->tokens[i]; i++)
        if (control_token(model, t->tokens[i]) < 0)
            return 0;
    return 1;
}

/* One turn: `text` tokenized with `flags` and fed, then up to o->n tokens generated and
 * streamed until EOS or `stop` (which is fed too, so that the cache holds the whole turn). */
static int turn(mcl_context *ctx, mcl_model *model, mcl_session *s, const options *o,
                const char *text, uint32_t flags, int32_t stop, int32_t eos, run *r)
{
    uint32_t count = 0;
    int32_t *ids = NULL;
    int rc = 3;
    if (mcl_model_tokenize(model, text, strlen(text), flags, NULL, 0, &count) !=
            MCL_ERROR_TOO_LARGE ||
        !(ids = malloc(((size_t)count + o->n + 1) * sizeof *ids)) ||
        mcl_model_tokenize(model, text, strlen(text), flags, ids, count, &count) != MCL_SUCCESS)
        goto done;
    if (count == 0) {
        fprintf(stderr, "motifcl-run: the prompt has no tokens\n");
        goto done;
    }
    double t0 = now();
    /* The pass runs on after feed returns: its time ends when it has finished. A prompt of
     * more than one pass, with a terminal to show it on, is fed a pass at a time (each
     * waited for) under a progress bar. */
    uint32_t space = mcl_session_context_length(s) - mcl_session_length(s, 0);
    uint32_t chunk = count > PROMPT_PASS && count <= space && !o->json && isatty(STDERR_FILENO)
                         ? PROMPT_PASS
                         : count;
    for (uint32_t fed = 0; fed < count; fed += chunk) {
        uint32_t n = count - fed < chunk ? count - fed : chunk;
        if (mcl_session_feed(s, 0, ids + fed, n, NULL) != MCL_SUCCESS ||
            mcl_finish(ctx) != MCL_SUCCESS)
            goto done;
        if (chunk < count)
            prompt_progress(fed + n, count, now() - t0);
    }
    r->prompt_s += now() - t0;
    r->prompt_tokens += count;
    r->turns++;
    size_t printed = 0;
    uint32_t made = 0;
    t0 = now();
    for (uint32_t i = 0; i < o->n; i++) {
        int32_t token;
        if (mcl_session_sample(s, 0, &o->sampler, &token) != MCL_SUCCESS)
            goto done;
        int room = mcl_session_length(s, 0) < mcl_session_context_length(s);
        if (token == stop && room && mcl_session_feed(s, 0, &token, 1, NULL) != MCL_SUCCESS)
            goto done;
        if (token == eos || token == stop)
            break;
        ids[count + made++] = token;
        r->generated++;
        if (stream(model, ids + count, made, &printed, o->json, &r->text) != MCL_SUCCESS)
            goto done;
        if (i + 1 == o->n || !room)
            break;
        if (mcl_session_feed(s, 0, &token, 1, NULL) != MCL_SUCCESS)
            goto done;
    }
    r->decode_s += now() - t0;
    if (!o->json)
        fputc('\n', stdout);
    rc = 0;
done:
    free(ids);
    return rc;
}

/* -i: user turns read from stdin, a line each, under the template; the cache holds the whole
 * conversation. */
static int chat(mcl_context *ctx, mcl_model *model, mcl_session *s, const options *o,
                const char *first_message, int32_t eos, run *r)
{
    const chat_template *t = NULL;
    for (size_t i = 0; i < sizeof templates / sizeof templates[0]; i++) {
        if (o->template_name ? strcmp(o->template_name, templates[i].name) == 0
                             : template_fits(model, &templates[i])) {
            t = &templates[i];
            break;
        }
    }
    if (!t) {
        if (o->template_name)
            fprintf(stderr, "motifcl-run: no chat template \"%s\" (llama3 and chatml are "
                            "known)\n", o->template_name);
        else
            fprintf(stderr, "motifcl-run: the model's vocabulary has neither template's control "
                            "tokens; pass --template llama3 or chatml\n");
        return 1;
    }
    if (!template_fits(model, t)) {
        fprintf(stderr, "motifcl-run: the model's vocabulary lacks the control tokens of the "
                        "%s template\n", t->name);
        return 1;
    }
    int32_t stop = control_token(model, t->stop);
    char line[8192];
    for (int first = 1;; first = 0) {
        const char *message = first && first_message ? first_message : NULL;
        if (!message) {
            if (!o->json && isatty(STDIN_FILENO))
                fputs("> ", stderr);
            if (!fgets(line, sizeof line, stdin))
                return 0;
            line[strcspn(line, "\r\n")] = '\0';
            message = line;
        }
        size_t size = strlen(t->between) + strlen(t->turn) + strlen(message) + 1;
        char *text = malloc(size);
        if (!text)
            return 3;
        int n = snprintf(text, size, "%s", first ? "" : t->between);
        snprintf(text + n, size - (size_t)n, t->turn, message);
        uint32_t flags = MCL_TOKENIZE_PARSE_SPECIAL | (first && !o->no_bos ? MCL_TOKENIZE_ADD_BOS : 0);
        int rc = turn(ctx, model, s, o, text, flags, stop, eos, r);
        free(text);
        if (rc != 0)
            return rc;
    }
}

static int generate(mcl_context *ctx, const options *o, const char *prompt, run *r)
{
    /* Under an expert budget the stacks stay in host memory; the cache holds what is used. */
    mcl_model_desc md = {.size = sizeof md, .progress = o->json ? NULL : progress,
                         .flags = o->expert_budget ? MCL_MODEL_EXPERTS_IN_HOST_MEMORY : 0};
    mcl_model *model = NULL;
    double t0 = now();
    if (mcl_model_open(ctx, o->model, &md, &model) != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-run: %s\n", mcl_context_last_error(ctx));
        return 3;
    }
    r->load_s = now() - t0;
    mcl_model_info mi = {.size = sizeof mi};
    mcl_model_file_info(model, &mi);
    mcl_session_desc sd = {.size = sizeof sd, .context_length = o->context,
                           .kv_type = o->kv_type, .expert_budget = o->expert_budget};
    mcl_session *s = NULL;
    int rc = 3;
    if (mcl_session_create(model, &sd, &s) != MCL_SUCCESS)
        goto done;
    if (o->interactive)
        rc = chat(ctx, model, s, o, prompt, mi.eos, r);
    else
        rc = turn(ctx, model, s, o, prompt,
                  MCL_TOKENIZE_PARSE_SPECIAL | (o->no_bos ? 0 : MCL_TOKENIZE_ADD_BOS), -1, mi.eos,
                  r);
done:
    if (rc == 3)
        fprintf(stderr, "motifcl-run: %s\n", mcl_context_last_error(ctx));
    r->experts.size = sizeof r->experts;
    if (s && mcl_session_expert_stats(s, &r->experts) != MCL_SUCCESS)
        r->experts = (mcl_expert_stats){.size = sizeof r->experts};
    mcl_memory_stats ms = {.size = sizeof ms};
    if (mcl_context_memory_stats(ctx, &ms) == MCL_SUCCESS)
        r->peak_bytes = ms.bytes_allocated_peak;
    mcl_session_destroy(s);
    mcl_model_close(model);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        usage(argv[0]);
        return 0;
    }
    int parsed = parse(argc, argv, &o);
    if (parsed != 0) {
        if (parsed == -1)
            usage(argv[0]);
        return 1;
    }
    size_t length = 0;
    char *file_text = NULL;
    const char *prompt = o.prompt;
    if (o.prompt_file) {
        if (!(file_text = read_text(o.prompt_file, &length))) {
            fprintf(stderr, "motifcl-run: cannot read %s\n", o.prompt_file);
            return 1;
        }
        if (strlen(file_text) != length)
            fprintf(stderr, "motifcl-run: %s holds a NUL byte; the prompt ends there\n",
                    o.prompt_file);
        prompt = file_text;
    }
    mcl_context *ctx = NULL;
    mcl_status st = mcl_context_create(NULL, &ctx);
    if (st != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-run: no Vulkan device: %s\n", mcl_status_string(st));
        free(file_text);
        return 2;
    }
    run r = {0};
    int rc = generate(ctx, &o, prompt, &r);
    double prompt_rate = r.prompt_s > 0 ? r.prompt_tokens / r.prompt_s : 0;
    const mcl_expert_stats *x = &r.experts;
    /* A turn's first generated token comes from its prompt's logits: decode is the rest. */
    double decode_rate =
        r.decode_s > 0 && r.generated > r.turns ? (r.generated - r.turns) / r.decode_s : 0;
    if (o.json) {
        printf("{\"text\": ");
        json_text(stdout, r.text ? r.text : "");
        printf(", \"load_seconds\": %.3f, \"prompt_tokens\": %u, \"prompt_tokens_per_second\": "
               "%.2f, \"generated_tokens\": %u, \"decode_tokens_per_second\": %.2f, "
               "\"peak_device_bytes\": %llu, \"expert_slots\": %u, \"expert_hits\": %llu, "
               "\"expert_misses\": %llu, \"expert_reads_in_place\": %llu, "
               "\"expert_bytes_moved\": %llu, \"status\": \"%s\"}\n",
               r.load_s, r.prompt_tokens, prompt_rate, r.generated, decode_rate,
               (unsigned long long)r.peak_bytes, x->slots, (unsigned long long)x->hits,
               (unsigned long long)x->misses, (unsigned long long)x->pool_reads,
               (unsigned long long)x->bytes_moved, rc == 0 ? "ok" : "failed");
    } else if (rc == 0) {
        fprintf(stderr,
                "load %.2f s | prompt %u tokens, %.1f tokens/s | decode %u tokens, %.1f "
                "tokens/s | peak device memory %.1f MiB\n",
                r.load_s, r.prompt_tokens, prompt_rate, r.generated, decode_rate,
                (double)r.peak_bytes / 1048576.0);
        if (x->slots)
            fprintf(stderr,
                    "experts: %u slots a layer (%.1f MiB), %u of %u resident | %llu hits, %llu "
                    "misses (%.1f MiB moved), %llu read in place (%.1f MiB)\n",
                    x->slots, (double)x->cache_bytes / 1048576.0, x->resident, x->experts,
                    (unsigned long long)x->hits, (unsigned long long)x->misses,
                    (double)x->bytes_moved / 1048576.0, (unsigned long long)x->pool_reads,
                    (double)x->bytes_read_in_place / 1048576.0);
    }
    if (o.witness_dir) {
        mcl_witness *w = mcl_witness_create("run", "motifcl-run", argc, argv);
        mcl_device_info info = {.size = sizeof info};
        mcl_context_device_info(ctx, &info);
        char *traits = NULL;
        size_t need = 0;
        if (mcl_context_traits_json(ctx, NULL, 0, &need) != MCL_SUCCESS && need &&
            (traits = malloc(need + 1)) != NULL &&
            mcl_context_traits_json(ctx, traits, need + 1, NULL) != MCL_SUCCESS) {
            free(traits);
            traits = NULL;
        }
        mcl_witness_set_device(w, &info, mcl_context_validation_errors(ctx), traits);
        free(traits);
        mcl_witness_set_note(w, "model", o.model);
        mcl_witness_add_figure(w, "load time", r.load_s, "s", "measured");
        mcl_witness_add_figure(w, "prompt tokens", r.prompt_tokens, "tokens", "measured");
        mcl_witness_add_figure(w, "prompt rate", prompt_rate, "tokens/s", "measured");
        mcl_witness_add_figure(w, "generated tokens", r.generated, "tokens", "measured");
        mcl_witness_add_figure(w, "decode rate", decode_rate, "tokens/s", "measured");
        mcl_witness_add_figure(w, "peak device memory", (double)r.peak_bytes / 1048576.0,
                               "MiB", "measured");
        if (x->slots) {
            uint64_t named = x->hits + x->misses + x->pool_reads;
            mcl_witness_add_figure(w, "expert slots a layer", x->slots, "slots", "measured");
            mcl_witness_add_figure(w, "expert hit rate",
                                   named ? (double)x->hits / (double)named : 0.0, "fraction",
                                   "measured");
            mcl_witness_add_figure(w, "expert bytes moved", (double)x->bytes_moved, "bytes",
                                   "measured");
            mcl_witness_add_figure(w, "expert bytes read in place",
                                   (double)x->bytes_read_in_place, "bytes", "measured");
        }
        if (mcl_witness_write(w, o.witness_dir, rc == 0 ? "passed" : "failed") != 0) {
            fprintf(stderr, "motifcl-run: could not write the witness into %s\n",
                    o.witness_dir);
            rc = 3;
        }
        mcl_witness_destroy(w);
    }
    free(r.text);
    free(file_text);
    mcl_context_destroy(ctx);
    return rc;
}
