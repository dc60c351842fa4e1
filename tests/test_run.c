/* motifcl-run end to end on tiny fixture models (tests/model_fixtures.h): a prompt; -i with
 * the llama-3 and ChatML templates over two turns read from stdin, the prompt tokens it
 * reports equal to the templates' text tokenized here (so the turns are formatted as the
 * templates say and the second turn follows the first in the cache); --json; and the
 * refusals: an unknown template, a template whose tokens the vocabulary lacks, and no template
 * found. The control: the same conversation counted with the other template's text differs.
 * --expert-budget on a mixture of 8 experts: a quarter of them a layer cached, the counts in
 * --json and on the figures line; a budget below the experts a token uses refused; auto, a
 * slot for every expert where the device has room. A prompt
 * of more than one pass on a terminal (script(1), from bsdutils): its progress bar, and the
 * text generated as without one. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "io/gguf.h"
#include "model_fixtures.h"

static mcl_context *ctx;
static char chat_model[256], plain_model[256], long_model[256];

static char moe_model[256];

static void write_model(char *path, int chat, int context)
{
    model_fixture_desc d = {0};
    d.dim = 64;
    d.layers = 1;
    d.heads = 2;
    d.hidden = 128;
    d.vocab = 128;
    d.context = context;
    d.seed = 5;
    d.chat_tokens = chat;
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    snprintf(path, 256, "%s/%s-%d.gguf", mcl_test_scratch_dir(), chat ? "chat" : "plain",
             context);
    assert_mcl_ok(model_fixture_write_gguf(&f, path));
    model_fixture_free(&f);
}

/* Run motifcl-run with `args`, `input` on its stdin; its stdout (and stderr, after it) into
 * out; the exit status. */
static int run(const char *args, const char *input, char *out, size_t size)
{
    char in_path[300], cmd[1200];
    snprintf(in_path, sizeof in_path, "%s/stdin.txt", mcl_test_scratch_dir());
    FILE *f = fopen(in_path, "w");
    assert_non_null(f);
    fputs(input, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' %s < '%s' 2>&1", MOTIFCL_RUN, args, in_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The "prompt_tokens" figure of --json output, or -1. */
static long prompt_tokens(const char *out)
{
    const char *at = strstr(out, "\"prompt_tokens\": ");
    return at ? strtol(at + strlen("\"prompt_tokens\": "), NULL, 10) : -1;
}

/* Tokens of `text` in the chat model's vocabulary (specials parsed, BOS where asked). */
static long count_tokens(const char *text, int bos)
{
    mcl_model_desc md = {.size = sizeof md, .flags = MCL_MODEL_NO_WEIGHTS};
    mcl_model *m = NULL;
    assert_mcl_ok(mcl_model_open(ctx, chat_model, &md, &m));
    uint32_t n = 0;
    uint32_t flags = MCL_TOKENIZE_PARSE_SPECIAL | (bos ? MCL_TOKENIZE_ADD_BOS : 0);
    mcl_status st = mcl_model_tokenize(m, text, strlen(text), flags, NULL, 0, &n);
    assert_true(st == MCL_ERROR_TOO_LARGE || st == MCL_SUCCESS);
    mcl_model_close(m);
    return (long)n;
}

static void prompt_and_json(void **state)
{
    (void)state;
    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 6", chat_model);
    int rc = run(args, "", out, sizeof out);
    assert_true(mcl_test_record_bool("motifcl-run -p: exit 0 and the figures line", rc == 0 &&
                                     strstr(out, "tokens/s") != NULL));
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 6 --json", chat_model);
    rc = run(args, "", out, sizeof out);
    assert_true(mcl_test_record_bool("motifcl-run --json: a JSON object with status ok",
                                     rc == 0 && strstr(out, "\"status\": \"ok\"") != NULL &&
                                         prompt_tokens(out) ==
                                             count_tokens("hello there", 1)));
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 6 --kv f16", chat_model);
    rc = run(args, "", out, sizeof out);
    assert_true(mcl_test_record_bool("motifcl-run --kv f16: exit 0 and the figures line",
                                     rc == 0 && strstr(out, "tokens/s") != NULL));
}

/* Two turns under `name`: the prompt tokens motifcl-run counts against the template's text
 * (first turn with BOS, the second after the first reply's stop token and `between`). The
 * stop tokens the model may generate are fed, not counted, so the count is the turns' text. */
static void two_turns(const char *name, const char *turn_fmt, const char *between,
                      const char *other_fmt)
{
    static char out[1 << 16];
    char args[512], t1[512], t2[512], o1[512], o2[512];
    snprintf(args, sizeof args, "-m '%s' -i --template %s -n 4 --json", chat_model, name);
    int rc = run(args, "hi\nwhat now\n", out, sizeof out);
    snprintf(t1, sizeof t1, turn_fmt, "hi");
    int n = snprintf(t2, sizeof t2, "%s", between);
    snprintf(t2 + n, sizeof t2 - (size_t)n, turn_fmt, "what now");
    long want = count_tokens(t1, 1) + count_tokens(t2, 0);
    snprintf(o1, sizeof o1, other_fmt, "hi");
    snprintf(o2, sizeof o2, other_fmt, "what now");
    long other = count_tokens(o1, 1) + count_tokens(o2, 0);
    char name_ok[160];
    snprintf(name_ok, sizeof name_ok, "motifcl-run -i --template %s: two turns, %ld prompt "
                                      "tokens as the template makes them (%ld)",
             name, prompt_tokens(out), want);
    assert_true(mcl_test_record_bool(name_ok, rc == 0 && prompt_tokens(out) == want));
    snprintf(name_ok, sizeof name_ok, "%s: control, the other template's text counts %ld", name,
             other);
    assert_true(mcl_test_record_bool(name_ok, other != want));
}

static void chat_templates(void **state)
{
    (void)state;
    const char *llama3 = "<|start_header_id|>user<|end_header_id|>\n\n%s<|eot_id|>"
                         "<|start_header_id|>assistant<|end_header_id|>\n\n";
    const char *chatml = "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n";
    two_turns("llama3", llama3, "", chatml);
    two_turns("chatml", chatml, "\n", llama3);
}

static void refusals(void **state)
{
    (void)state;
    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "-m '%s' -i --template vicuna", chat_model);
    int ok = run(args, "hi\n", out, sizeof out) == 1 && strstr(out, "no chat template") != NULL;
    snprintf(args, sizeof args, "-m '%s' -i --template chatml", plain_model);
    ok &= run(args, "hi\n", out, sizeof out) == 1 && strstr(out, "lacks the control") != NULL;
    snprintf(args, sizeof args, "-m '%s' -i", plain_model);
    ok &= run(args, "hi\n", out, sizeof out) == 1 && strstr(out, "neither template") != NULL;
    snprintf(args, sizeof args, "-m '%s'", plain_model);
    ok &= run(args, "", out, sizeof out) == 1 && strstr(out, "usage") != NULL;
    snprintf(args, sizeof args, "-m '%s' -p hi --kv q8_0", plain_model);
    ok &= run(args, "", out, sizeof out) == 1 && strstr(out, "--kv \"q8_0\"") != NULL;
    assert_true(mcl_test_record_bool("motifcl-run refuses an unknown template, a template "
                                     "the vocabulary lacks, no template, no prompt, and a "
                                     "cache type other than f32 and f16", ok));
    /* Values read whole and in range, the option named; an unknown option named too. The
     * control: the same options with good values run (prompt_and_json runs the defaults). */
    static const struct {
        const char *opts, *named;
    } bad[] = {
        {"-n abc", "-n \"abc\""},          {"-n 3x", "-n \"3x\""},
        {"-n -1", "-n \"-1\""},           {"--ctx 0", "--ctx \"0\""},
        {"--top-p 1.5", "--top-p \"1.5\""}, {"--temp nan", "--temp \"nan\""},
        {"--seed 12a", "--seed \"12a\""},   {"--top-k ' 4'", "--top-k \" 4\""},
        {"--bogus 1", "unknown option --bogus"},
        {"--expert-budget 4k", "--expert-budget \"4k\""},
    };
    int refused = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "-m '%s' -p hi %s", plain_model, bad[i].opts);
        int named = run(args, "", out, sizeof out) == 1 && strstr(out, bad[i].named) != NULL;
        if (!named)
            printf("not refused by name: %s\n%s\n", bad[i].opts, out);
        refused &= named;
    }
    snprintf(args, sizeof args, "-m '%s' -p hi -n 2 --ctx 64 --top-k 4 --top-p 0.9 --temp 0.7 "
             "--seed 7 --penalty-last-n 0", plain_model);
    int control = run(args, "", out, sizeof out) == 0;
    assert_true(mcl_test_record_bool("motifcl-run names a malformed or out-of-range value and "
                                     "exits 1; good values run", refused && control));
}

/* A mixture of 8 experts (2 a token) of f32 weights, one layer: an expert's rows of the three
 * stacks are 3 x 64 x 32 x 4 bytes. */
#define MOE_EXPERT_BYTES (3u * 64u * 32u * 4u)

static void write_moe_model(void)
{
    model_fixture_desc d = {.dim = 32, .layers = 1, .heads = 4, .hidden = 64, .vocab = 128,
                            .context = 64, .seed = 9, .experts = 8, .experts_used = 2,
                            .expert_hidden = 64};
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    snprintf(moe_model, sizeof moe_model, "%s/moe.gguf", mcl_test_scratch_dir());
    assert_mcl_ok(model_fixture_write_gguf(&f, moe_model));
    model_fixture_free(&f);
}

static void expert_budget(void **state)
{
    (void)state;
    static char out[1 << 16];
    char args[512];
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 8 --no-bos --expert-budget %u "
             "--json", moe_model, 2 * MOE_EXPERT_BYTES);
    int rc = run(args, "", out, sizeof out);
    const char *misses = strstr(out, "\"expert_misses\": ");
    int ok = rc == 0 && strstr(out, "\"expert_slots\": 2,") != NULL && misses &&
             strtol(misses + strlen("\"expert_misses\": "), NULL, 10) > 0;
    if (!ok)
        printf("%s\n", out);
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 8 --expert-budget %u", moe_model,
             2 * MOE_EXPERT_BYTES);
    ok &= run(args, "", out, sizeof out) == 0 && strstr(out, "experts: 2 slots a layer") != NULL;
    assert_true(mcl_test_record_bool("motifcl-run --expert-budget: 2 of 8 experts cached, "
                                     "misses counted in --json and on the figures line", ok));
    /* The control: without the budget nothing is cached or printed. */
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 8 --json", moe_model);
    ok = run(args, "", out, sizeof out) == 0 && strstr(out, "\"expert_slots\": 0,") != NULL;
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 2 --expert-budget %u", moe_model,
             MOE_EXPERT_BYTES);
    ok &= run(args, "", out, sizeof out) == 3 && strstr(out, "a token uses 2") != NULL;
    assert_true(mcl_test_record_bool("motifcl-run: no budget, no cache; a budget of one expert "
                                     "refused by name", ok));
    /* auto on a device with room for every expert: a slot for each (the choice itself is
     * test_model_experts' auto_budget). */
    snprintf(args, sizeof args, "-m '%s' -p 'hello there' -n 8 --no-bos --expert-budget auto "
             "--json", moe_model);
    ok = run(args, "", out, sizeof out) == 0 && strstr(out, "\"expert_slots\": 8,") != NULL;
    if (!ok)
        printf("%s\n", out);
    assert_true(mcl_test_record_bool("motifcl-run --expert-budget auto: every expert a slot "
                                     "where the device has room", ok));
}

/* The text of `out` from `from` to the figures ("load ..."), white space at both ends and
 * carriage returns dropped, into text; 0 if there are no figures. */
static int text_before_figures(const char *from, char *text, size_t size)
{
    const char *fig = from ? strstr(from, "load ") : NULL;
    if (!fig)
        return 0;
    while (from < fig && isspace((unsigned char)*from))
        from++;
    while (fig > from && isspace((unsigned char)fig[-1]))
        fig--;
    size_t n = 0;
    for (const char *c = from; c < fig && n + 1 < size; c++)
        if (*c != '\r')
            text[n++] = *c;
    text[n] = '\0';
    return 1;
}

/* A prompt of more than one pass (512 tokens) with stderr on a terminal (script(1) gives it
 * one): fed a pass at a time under a progress bar, the same text generated as in one feed
 * (stderr not a terminal: no bar, the control). */
static void long_prompt_progress(void **state)
{
    (void)state;
    static char out[1 << 17], tty[1 << 17];
    static const char *const words[] = {"hello", "there", "the", "cat", "sat", "on", "a", "mat"};
    char text[8192];
    size_t n = 0;
    long tokens = 0;
    for (int i = 0; tokens < 600 && n + 16 < sizeof text; i++) {
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", i ? " " : "",
                              words[(i * 5 + i / 3) % 8]);
        tokens = count_tokens(text, 1);
    }
    assert_true(tokens >= 600 && tokens < 1000);
    char path[300], args[700], cmd[1400];
    snprintf(path, sizeof path, "%s/long.txt", mcl_test_scratch_dir());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    snprintf(args, sizeof args, "-m '%s' -f '%s' -n 6", long_model, path);
    int rc = run(args, "", out, sizeof out);
    snprintf(cmd, sizeof cmd, "script -qec \"'%s' %s\" /dev/null < /dev/null 2>&1", MOTIFCL_RUN,
             args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(tty, 1, sizeof tty - 1, p);
    tty[got] = '\0';
    int status = pclose(p);
    char bar[64], a[512], b[512];
    snprintf(bar, sizeof bar, "%ld of %ld tokens", tokens, tokens);
    int ok = rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
             strstr(out, "prompt  [") == NULL && strstr(tty, "prompt  [") != NULL &&
             strstr(tty, bar) != NULL && text_before_figures(out, a, sizeof a) &&
             text_before_figures(strchr(strstr(tty, bar), '\n'), b, sizeof b) &&
             strcmp(a, b) == 0;
    if (!ok)
        printf("without a terminal (exit %d):\n%s\nwith one (status %d):\n%s\n", rc, out,
               status, tty);
    assert_true(mcl_test_record_bool("motifcl-run: a prompt of more than one pass under a "
                                     "progress bar on a terminal, the same text as without",
                                     ok));
}

static int setup(void **state)
{
    if (mcl_test_scratch_setup(state) != 0)
        return -1;
    write_model(chat_model, 1, 256);
    write_model(plain_model, 0, 256);
    write_model(long_model, 1, 1100);
    write_moe_model();
    return 0;
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prompt_and_json),
        cmocka_unit_test(chat_templates),
        cmocka_unit_test(refusals),
        cmocka_unit_test(expert_budget),
        cmocka_unit_test(long_prompt_progress),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, setup, mcl_test_scratch_teardown));
}
