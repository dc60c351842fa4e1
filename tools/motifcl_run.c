/* motifcl-run: generate text with a model file. Loads the model (a progress bar on stderr),
 * runs the prompt, streams the generated text to stdout, and ends with the figures: load
 * time, prompt and decode tokens per second, peak device memory (stderr, or one JSON object
 * on stdout with --json). With --witness-dir DIR (or MOTIFCL_WITNESS_DIR) it also writes a
 * witness. Exit status: 0 done, 1 bad arguments, 2 no device, 3 the model or the run failed. */
#ifndef MOTIFCL_EXPERIMENTAL
#define MOTIFCL_EXPERIMENTAL
#endif
#include <motifcl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/witness.h"

typedef struct options {
    const char *model, *prompt, *prompt_file, *witness_dir;
    uint32_t n, context;
    int json, no_bos;
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
            "usage: %s -m FILE (-p TEXT | -f FILE) [-n N] [--ctx N] [--temp T] [--top-k K]\n"
            "       [--top-p P] [--min-p P] [--repeat-penalty R] [--frequency-penalty F]\n"
            "       [--presence-penalty P] [--penalty-last-n N] [--seed S] [--no-bos] [--json]\n"
            "       [--witness-dir DIR]\n"
            "  -n N       tokens to generate (default 128); generation also ends at EOS\n"
            "  --ctx N    context length (default: the model's, at most 4096)\n"
            "  --temp T   temperature; 0 (the default) is greedy\n",
            argv0);
}

/* Parse argv into o; 0 on success. */
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
        else if (!v)
            return -1;
        else if (strcmp(a, "-m") == 0)
            o->model = v;
        else if (strcmp(a, "-p") == 0)
            o->prompt = v;
        else if (strcmp(a, "-f") == 0)
            o->prompt_file = v;
        else if (strcmp(a, "--witness-dir") == 0)
            o->witness_dir = v;
        else if (strcmp(a, "-n") == 0)
            o->n = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--ctx") == 0)
            o->context = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--temp") == 0)
            o->sampler.temperature = strtof(v, NULL);
        else if (strcmp(a, "--top-k") == 0)
            o->sampler.top_k = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--top-p") == 0)
            o->sampler.top_p = strtof(v, NULL);
        else if (strcmp(a, "--min-p") == 0)
            o->sampler.min_p = strtof(v, NULL);
        else if (strcmp(a, "--repeat-penalty") == 0)
            o->sampler.repeat_penalty = strtof(v, NULL);
        else if (strcmp(a, "--frequency-penalty") == 0)
            o->sampler.frequency_penalty = strtof(v, NULL);
        else if (strcmp(a, "--presence-penalty") == 0)
            o->sampler.presence_penalty = strtof(v, NULL);
        else if (strcmp(a, "--penalty-last-n") == 0)
            o->sampler.penalty_last_n = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--seed") == 0)
            o->sampler.seed = strtoull(v, NULL, 10);
        else
            return -1;
        i += used;
    }
    if (!o->model || (!o->prompt == !o->prompt_file))
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

static void progress(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    if (!isatty(STDERR_FILENO) || total == 0)
        return;
    int width = 40, filled = (int)((double)done / (double)total * width);
    fprintf(stderr, "\rloading [%.*s%*s] %5.1f%% of %.2f GB", filled,
            "########################################", width - filled, "",
            100.0 * (double)done / (double)total, (double)total / 1e9);
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
    uint32_t prompt_tokens, generated;
    uint64_t peak_bytes;
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

static int generate(mcl_context *ctx, const options *o, const char *prompt, size_t length,
                    run *r)
{
    mcl_model_desc md = {.size = sizeof md, .progress = o->json ? NULL : progress};
    mcl_model *model = NULL;
    double t0 = now();
    if (mcl_model_open(ctx, o->model, &md, &model) != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-run: %s\n", mcl_context_last_error(ctx));
        return 3;
    }
    r->load_s = now() - t0;
    mcl_model_info mi = {.size = sizeof mi};
    mcl_model_file_info(model, &mi);
    mcl_session_desc sd = {.size = sizeof sd, .context_length = o->context};
    mcl_session *s = NULL;
    int32_t *ids = NULL;
    int rc = 3;
    uint32_t count = 0, cap = 0;
    uint32_t flags = MCL_TOKENIZE_PARSE_SPECIAL | (o->no_bos ? 0 : MCL_TOKENIZE_ADD_BOS);
    if (mcl_session_create(model, &sd, &s) != MCL_SUCCESS ||
        mcl_model_tokenize(model, prompt, length, flags, NULL, 0, &count) != MCL_ERROR_TOO_LARGE)
        goto done;
    cap = count + o->n;
    ids = malloc((size_t)(cap ? cap : 1) * sizeof *ids);
    if (!ids || mcl_model_tokenize(model, prompt, length, flags, ids, count, &count) != MCL_SUCCESS)
        goto done;
    if (count == 0) {
        fprintf(stderr, "motifcl-run: the prompt has no tokens\n");
        goto done;
    }
    r->prompt_tokens = count;
    t0 = now();
    if (mcl_session_feed(s, 0, ids, count, NULL) != MCL_SUCCESS)
        goto done;
    r->prompt_s = now() - t0;
    size_t printed = 0;
    t0 = now();
    for (uint32_t i = 0; i < o->n; i++) {
        int32_t token;
        if (mcl_session_sample(s, 0, &o->sampler, &token) != MCL_SUCCESS)
            goto done;
        if (token == mi.eos)
            break;
        ids[count + r->generated++] = token;
        if (stream(model, ids + count, r->generated, &printed, o->json, &r->text) !=
            MCL_SUCCESS)
            goto done;
        if (i + 1 == o->n || mcl_session_length(s, 0) == mcl_session_context_length(s))
            break;
        if (mcl_session_feed(s, 0, &token, 1, NULL) != MCL_SUCCESS)
            goto done;
    }
    r->decode_s = now() - t0;
    if (!o->json)
        fputc('\n', stdout);
    rc = 0;
done:
    if (rc != 0)
        fprintf(stderr, "motifcl-run: %s\n", mcl_context_last_error(ctx));
    mcl_memory_stats ms = {.size = sizeof ms};
    if (mcl_context_memory_stats(ctx, &ms) == MCL_SUCCESS)
        r->peak_bytes = ms.bytes_allocated_peak;
    free(ids);
    mcl_session_destroy(s);
    mcl_model_close(model);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o) != 0) {
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
        prompt = file_text;
    } else {
        length = strlen(prompt);
    }
    mcl_context *ctx = NULL;
    mcl_status st = mcl_context_create(NULL, &ctx);
    if (st != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-run: no Vulkan device: %s\n", mcl_status_string(st));
        free(file_text);
        return 2;
    }
    run r = {0};
    int rc = generate(ctx, &o, prompt, length, &r);
    double prompt_rate = r.prompt_s > 0 ? r.prompt_tokens / r.prompt_s : 0;
    /* The first generated token comes from the prompt's logits: decode is the rest. */
    double decode_rate = r.decode_s > 0 && r.generated > 1 ? (r.generated - 1) / r.decode_s : 0;
    if (o.json) {
        printf("{\"text\": ");
        json_text(stdout, r.text ? r.text : "");
        printf(", \"load_seconds\": %.3f, \"prompt_tokens\": %u, \"prompt_tokens_per_second\": "
               "%.2f, \"generated_tokens\": %u, \"decode_tokens_per_second\": %.2f, "
               "\"peak_device_bytes\": %llu, \"status\": \"%s\"}\n",
               r.load_s, r.prompt_tokens, prompt_rate, r.generated, decode_rate,
               (unsigned long long)r.peak_bytes, rc == 0 ? "ok" : "failed");
    } else if (rc == 0) {
        fprintf(stderr,
                "load %.2f s | prompt %u tokens, %.1f tokens/s | decode %u tokens, %.1f "
                "tokens/s | peak device memory %.1f MiB\n",
                r.load_s, r.prompt_tokens, prompt_rate, r.generated, decode_rate,
                (double)r.peak_bytes / 1048576.0);
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
        if (mcl_witness_write(w, o.witness_dir, rc == 0 ? "passed" : "failed") != 0)
            fprintf(stderr, "motifcl-run: could not write the witness into %s\n",
                    o.witness_dir);
        mcl_witness_destroy(w);
    }
    free(r.text);
    free(file_text);
    mcl_context_destroy(ctx);
    return rc;
}
