/* Faults: every host allocation of the library made to fail in turn, and device loss and
 * fence timeouts injected through MOTIFCL_FAULT.
 *
 * Allocation failures: each scenario runs once as is, to learn its result, then again with
 * the n-th library allocation failing (mcl_fault_alloc_after), n = 1, 2, ... until a run
 * meets no injected failure. At every n the run must fail with a status, or succeed with the
 * result of the run without a fault (the allocation was optional: the library fell back),
 * and after teardown mcl_mem_live() must be what it was before the run. A crash fails the
 * suite. The host-only scenarios parse the fixtures' formats (GGUF, safetensors, JSON,
 * tokenizer files) and write GGUF and safetensors; the device ones create a context, run a
 * few ops on tensors, open a tiny model (GGUF and checkpoint), decode a few tokens and load a
 * GPT checkpoint. Allocations of the Vulkan driver are not the library's and not counted.
 *
 * Device loss: MOTIFCL_FAULT=device_lost@N or timeout@N makes a context's N-th fence wait
 * report that fault (after waiting for real); a 1 ms MOTIFCL_FENCE_TIMEOUT_MS makes a long
 * batch time out for real. The context must then report itself lost, refuse work with
 * MCL_ERROR_DEVICE_LOST, be destroyed without hanging or leaking, and a new context work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>

#include "harness.h"
#include "model_fixtures.h"
#include "core/alloc.h"
#include "core/env.h"
#include "io/gguf.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "io/safetensors_index.h"
#include "text/tokenizer.h"

#ifndef MCL_TEST_CORPUS_DIR
#error "MCL_TEST_CORPUS_DIR must name tests/fuzz/corpus"
#endif

/* A scenario's outcome: its status and a digest of what it computed (compared with the
 * fault-free run's when a run with a fault succeeds). */
typedef struct outcome {
    mcl_status status;
    uint64_t digest;
} outcome;

typedef outcome (*scenario_fn)(const void *arg);

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t mix_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = mix(h, p[i]);
    return h;
}

/* A whole file, read with the C library's malloc (not counted). */
static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return data;
}

typedef struct sweep_result {
    int64_t allocations, runs;
    int absorbed, leaks, wrong;
} sweep_result;

/* Sweep one scenario: run it clean, then with each of its allocations failing in turn. */
static sweep_result sweep_quiet(const char *name, scenario_fn fn, const void *arg)
{
    sweep_result r = {0};
    int64_t live = mcl_mem_live(), count = mcl_mem_count();
    outcome clean = fn(arg);
    r.allocations = mcl_mem_count() - count;
    if (clean.status != MCL_SUCCESS)
        fail_msg("%s without a fault: %s", name, mcl_status_string(clean.status));
    assert_int_equal(mcl_mem_live(), live);
    assert_true(r.allocations > 0);
    for (int64_t n = 1;; n++) {
        int64_t fired = mcl_fault_alloc_fired();
        live = mcl_mem_live();
        mcl_fault_alloc_after(n);
        outcome o = fn(arg);
        mcl_fault_alloc_after(0);
        int hit = mcl_fault_alloc_fired() != fired;
        r.runs = n;
        if (mcl_mem_live() != live) {
            fprintf(stderr, "%s: allocation %lld failed (%s): %lld allocations leaked\n", name,
                    (long long)n, mcl_status_string(o.status),
                    (long long)(mcl_mem_live() - live));
            r.leaks++;
        }
        if (!hit) {
            if (o.status != MCL_SUCCESS || o.digest != clean.digest) {
                fprintf(stderr, "%s: no fault at %lld but %s\n", name, (long long)n,
                        mcl_status_string(o.status));
                r.wrong++;
            }
            break;
        }
        if (o.status == MCL_SUCCESS) {
            r.absorbed++;
            if (o.digest != clean.digest) {
                fprintf(stderr, "%s: allocation %lld failed, the run succeeded with another "
                        "result\n", name, (long long)n);
                r.wrong++;
            }
        }
    }
    return r;
}

/* Sweep, print the figures and record the check. */
static void sweep(const char *name, scenario_fn fn, const void *arg)
{
    clock_t start = clock();
    sweep_result r = sweep_quiet(name, fn, arg);
    double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
    printf("%-26s %5lld allocations, %5lld runs, %3d absorbed (optional, same result), "
           "%d leaking, %d wrong, %.1f s CPU\n",
           name, (long long)r.allocations, (long long)r.runs, r.absorbed, r.leaks, r.wrong,
           seconds);
    char label[128];
    snprintf(label, sizeof label, "%s: every allocation failed in turn, no leak", name);
    assert_true(mcl_test_record_bool(label, r.leaks == 0 && r.wrong == 0));
    snprintf(label, sizeof label, "%s: allocations", name);
    mcl_test_record_figure(label, (double)r.allocations, "allocations");
}

/* Negative controls: a scenario that keeps one allocation when a later one fails, and one
 * that reports success with another result when an allocation fails. */
static outcome leaky(const void *arg)
{
    (void)arg;
    void *a = mcl_mem_malloc(16), *b = a ? mcl_mem_malloc(16) : NULL;
    if (!b)
        return (outcome){MCL_ERROR_OUT_OF_HOST_MEMORY, 0}; /* a is leaked */
    mcl_mem_free(b);
    mcl_mem_free(a);
    return (outcome){MCL_SUCCESS, 1};
}

static outcome lying(const void *arg)
{
    (void)arg;
    void *a = mcl_mem_malloc(16);
    mcl_mem_free(a);
    return (outcome){MCL_SUCCESS, a != NULL};
}

static void negative_controls(void **state)
{
    (void)state;
    sweep_result r = sweep_quiet("control: leak", leaky, NULL);
    int leak_seen = r.leaks == 1 && r.wrong == 0;
    r = sweep_quiet("control: wrong success", lying, NULL);
    int lie_seen = r.wrong == 1 && r.leaks == 0;
    fprintf(stderr, "(the two lines above are the negative controls' expected findings)\n");
    assert_true(mcl_test_record_bool("negative control: a leak on a failure path is found",
                                     leak_seen));
    assert_true(mcl_test_record_bool("negative control: success with another result is found",
                                     lie_seen));
}

/* --- Host-only scenarios ------------------------------------------------------------- */

static const char *const gguf_files[] = {"corpus.gguf", "round-trip-v2-align32.gguf",
                                         "round-trip-v3-align64.gguf", "typed-values.gguf",
                                         "writer-two-tensors.gguf"};

/* Every GGUF file of the corpus but the big vocabularies parsed, keys and tensors read. */
static outcome parse_gguf(const void *arg)
{
    (void)arg;
    outcome o = {MCL_SUCCESS, 0};
    char path[512], why[256];
    for (size_t i = 0; i < sizeof gguf_files / sizeof *gguf_files; i++) {
        snprintf(path, sizeof path, "%s/gguf/%s", MCL_TEST_CORPUS_DIR, gguf_files[i]);
        size_t size = 0;
        unsigned char *data = read_file(path, &size);
        assert_non_null(data);
        mcl_gguf *g = NULL;
        mcl_status s = mcl_gguf_parse(data, size, &g, why, sizeof why);
        if (s == MCL_SUCCESS) {
            o.digest = mix(o.digest, mcl_gguf_kv_count(g));
            o.digest = mix(o.digest, mcl_gguf_tensor_count(g));
            mcl_gguf_free(g);
        } else if (s == MCL_ERROR_BAD_FILE && strcmp(gguf_files[i], "corpus.gguf") == 0) {
            o.digest = mix(o.digest, 77); /* a fuzz seed that may be malformed on purpose */
        } else {
            o.status = s;
        }
        free(data);
        if (o.status != MCL_SUCCESS)
            break;
    }
    return o;
}

/* safetensors, its index and a config.json parsed, the tensors read as f32. */
static outcome parse_safetensors(const void *arg)
{
    (void)arg;
    outcome o = {MCL_SUCCESS, 0};
    char path[512], why[256];
    size_t size = 0;
    snprintf(path, sizeof path, "%s/safetensors/two-tensors.safetensors", MCL_TEST_CORPUS_DIR);
    unsigned char *data = read_file(path, &size);
    assert_non_null(data);
    mcl_safetensors *st = NULL;
    o.status = mcl_safetensors_parse(data, size, &st, why, sizeof why);
    if (o.status == MCL_SUCCESS) {
        for (uint64_t i = 0; i < mcl_safetensors_count(st) && o.status == MCL_SUCCESS; i++) {
            const mcl_st_tensor *t = mcl_safetensors_at(st, i);
            float values[64];
            if (t->elements <= 64 && mcl_st_dtype_loadable(t->dtype)) {
                o.status = mcl_safetensors_read_f32(t, values, t->elements, why, sizeof why);
                o.digest = mix_bytes(o.digest, values, (size_t)t->elements * sizeof *values);
            }
        }
        mcl_safetensors_free(st);
    }
    free(data);
    if (o.status != MCL_SUCCESS)
        return o;

    snprintf(path, sizeof path, "%s/safetensors/index.json", MCL_TEST_CORPUS_DIR);
    data = read_file(path, &size);
    assert_non_null(data);
    mcl_st_index *idx = NULL;
    o.status = mcl_st_index_parse(data, size, &idx, why, sizeof why);
    if (o.status == MCL_SUCCESS) {
        o.digest = mix(o.digest, mcl_st_index_tensor_count(idx));
        o.digest = mix(o.digest, mcl_st_index_shard_count(idx));
        mcl_st_index_free(idx);
    }
    free(data);
    if (o.status != MCL_SUCCESS)
        return o;

    snprintf(path, sizeof path, "%s/safetensors/config.json", MCL_TEST_CORPUS_DIR);
    data = read_file(path, &size);
    assert_non_null(data);
    mcl_json *doc = NULL;
    o.status = mcl_json_parse(data, size, &doc, why, sizeof why);
    if (o.status == MCL_SUCCESS) {
        o.digest = mix(o.digest, mcl_json_count(mcl_json_root(doc)));
        mcl_json_free(doc);
    }
    free(data);
    return o;
}

static const char *const hf_files[] = {"gpt2-style.json", "llama3-style.json"};
static const char *const spm_files[] = {"small.model", "spm-bpe-700.model"};

/* Encode and decode a text with t; digest the ids and the text. */
static mcl_status round_trip(const mcl_tokenizer *t, uint64_t *digest)
{
    static const char text[] = "Hello world, fault injection's 123 tokens: caf\xc3\xa9!";
    int32_t ids[256];
    uint32_t count = 0;
    char back[512];
    mcl_status s = mcl_tokenizer_encode(t, text, sizeof text - 1, 0, ids, 256, &count);
    if (s != MCL_SUCCESS)
        return s;
    *digest = mix_bytes(*digest, ids, count * sizeof *ids);
    if ((s = mcl_tokenizer_decode(t, ids, count, back, sizeof back, NULL)) != MCL_SUCCESS)
        return s;
    *digest = mix_bytes(*digest, back, strlen(back));
    return MCL_SUCCESS;
}

/* Tokenizers from tokenizer.json and SentencePiece model files, and from the tiny model's
 * GGUF (arg: its path), each encoding and decoding a text. */
static outcome load_tokenizers(const void *arg)
{
    outcome o = {MCL_SUCCESS, 0};
    char path[512], why[256];
    for (size_t i = 0; i < 4 && o.status == MCL_SUCCESS; i++) {
        int hf = i < 2;
        snprintf(path, sizeof path, "%s/tokenizer/%s", MCL_TEST_CORPUS_DIR,
                 hf ? hf_files[i] : spm_files[i - 2]);
        size_t size = 0;
        unsigned char *data = read_file(path, &size);
        assert_non_null(data);
        mcl_tokenizer *t = NULL;
        o.status = hf ? mcl_tokenizer_from_hf_json((const char *)data, size, &t, why, sizeof why)
                      : mcl_tokenizer_from_spm_model(data, size, &t, why, sizeof why);
        if (o.status == MCL_SUCCESS)
            o.status = round_trip(t, &o.digest);
        mcl_tokenizer_free(t);
        free(data);
    }
    if (o.status != MCL_SUCCESS)
        return o;
    size_t size = 0;
    unsigned char *data = read_file(arg, &size);
    assert_non_null(data);
    mcl_gguf *g = NULL;
    o.status = mcl_gguf_parse(data, size, &g, why, sizeof why);
    if (o.status == MCL_SUCCESS) {
        mcl_tokenizer *t = NULL;
        o.status = mcl_tokenizer_from_gguf(g, &t, why, sizeof why);
        if (o.status == MCL_SUCCESS)
            o.status = round_trip(t, &o.digest);
        mcl_tokenizer_free(t);
        mcl_gguf_free(g);
    }
    free(data);
    return o;
}

/* A GGUF file and a safetensors file written in memory, then parsed back. */
static outcome write_files(const void *arg)
{
    (void)arg;
    outcome o = {MCL_SUCCESS, 0};
    char why[256];
    float values[2 * 32];
    for (int i = 0; i < 64; i++)
        values[i] = (float)i * 0.25f;
    const char *words[] = {"one", "two", "three"};
    uint32_t u = 7;
    void *bytes = NULL;
    uint64_t size = 0;

    mcl_gguf_writer *w = mcl_gguf_writer_create(3, 64);
    if (!w)
        return (outcome){MCL_ERROR_OUT_OF_HOST_MEMORY, 0};
    uint64_t dims[2] = {32, 2};
    if ((o.status = mcl_gguf_writer_add(w, "general.name", MCL_GGUF_STRING, "faults")) ||
        (o.status = mcl_gguf_writer_add(w, "test.u32", MCL_GGUF_UINT32, &u)) ||
        (o.status = mcl_gguf_writer_add_array(w, "test.words", MCL_GGUF_STRING, 3, words)) ||
        (o.status = mcl_gguf_writer_add_tensor(w, "weight", 2, dims, 0, values, sizeof values)) ||
        (o.status = mcl_gguf_writer_finish(w, &bytes, &size))) {
        mcl_gguf_writer_destroy(w);
        return o;
    }
    mcl_gguf_writer_destroy(w);
    mcl_gguf *g = NULL;
    o.status = mcl_gguf_parse(bytes, size, &g, why, sizeof why);
    o.digest = mix_bytes(o.digest, bytes, (size_t)size);
    mcl_gguf_free(g);
    mcl_mem_free(bytes);
    if (o.status != MCL_SUCCESS)
        return o;

    mcl_safetensors_writer *sw = mcl_safetensors_writer_create();
    if (!sw)
        return (outcome){MCL_ERROR_OUT_OF_HOST_MEMORY, 0};
    int64_t shape[2] = {2, 32};
    bytes = NULL;
    if ((o.status = mcl_safetensors_writer_add_metadata(sw, "format", "pt")) ||
        (o.status = mcl_safetensors_writer_add_tensor(sw, "a", MCL_ST_F32, 2, shape, values,
                                                      sizeof values)) ||
        (o.status = mcl_safetensors_writer_add_tensor(sw, "b", MCL_ST_F32, 1, shape, values,
                                                      2 * sizeof *values)) ||
        (o.status = mcl_safetensors_writer_finish(sw, &bytes, &size))) {
        mcl_safetensors_writer_destroy(sw);
        return o;
    }
    mcl_safetensors_writer_destroy(sw);
    mcl_safetensors *st = NULL;
    o.status = mcl_safetensors_parse(bytes, size, &st, why, sizeof why);
    o.digest = mix_bytes(o.digest, bytes, (size_t)size);
    mcl_safetensors_free(st);
    mcl_mem_free(bytes);
    return o;
}

/* --- Device scenarios ---------------------------------------------------------------- */

static char gguf_path[512], ckpt_dir[512];
static int have_device;

static mcl_status new_context(mcl_context **out)
{
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    return mcl_context_create(&desc, out);
}

/* A context created and destroyed. */
static outcome context_only(const void *arg)
{
    (void)arg;
    mcl_context *c = NULL;
    outcome o = {new_context(&c), 1};
    mcl_context_destroy(c);
    return o;
}

/* Tensors created and filled, an add, a matmul and a copy out. */
static outcome tensor_ops(const void *arg)
{
    (void)arg;
    enum { M = 5, K = 33, N = 7 };
    float a[M * K], b[N * K], c[M * N], sum[M * K];
    for (int i = 0; i < M * K; i++)
        a[i] = (float)(i % 13) * 0.125f - 0.5f;
    for (int i = 0; i < N * K; i++)
        b[i] = (float)(i % 7) * 0.25f - 0.75f;
    mcl_context *ctx = NULL;
    mcl_tensor *ta = NULL, *tb = NULL, *tc = NULL, *ts = NULL;
    outcome o = {new_context(&ctx), 0};
    int64_t sa[2] = {M, K}, sb[2] = {N, K}, sc[2] = {M, N};
    if (o.status == MCL_SUCCESS &&
        !(o.status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, sa, &ta)) &&
        !(o.status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, sb, &tb)) &&
        !(o.status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, sc, &tc)) &&
        !(o.status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, sa, &ts)) &&
        !(o.status = mcl_tensor_upload(ta, 0, a, sizeof a)) &&
        !(o.status = mcl_tensor_upload(tb, 0, b, sizeof b)) &&
        !(o.status = mcl_add(ctx, ta, ta, ts)) &&
        !(o.status = mcl_matmul(ctx, ta, MCL_NO_TRANSPOSE, tb, MCL_TRANSPOSE, NULL, tc)) &&
        !(o.status = mcl_tensor_download(tc, 0, c, sizeof c)) &&
        !(o.status = mcl_tensor_download(ts, 0, sum, sizeof sum))) {
        o.digest = mix_bytes(mix_bytes(0, c, sizeof c), sum, sizeof sum);
    }
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(tc);
    mcl_tensor_destroy(ts);
    mcl_context_destroy(ctx);
    return o;
}

#define PROMPT 6
#define STEPS 3
static const int32_t prompt[PROMPT] = {1, 17, 42, 99, 5, 63};
static const int32_t steps[STEPS] = {7, 120, 3};

/* The tiny model opened (arg: a GGUF file or a checkpoint folder), its tokenizer run (the
 * GGUF file has one, the checkpoint none), a session fed a prompt and a few single tokens,
 * a token sampled; everything closed. */
static outcome model_decode(const void *arg)
{
    mcl_context *ctx = NULL;
    mcl_model *m = NULL;
    mcl_session *s = NULL;
    float logits[128];
    int32_t ids[64];
    uint32_t count = 0;
    outcome o = {new_context(&ctx), 0};
    if (o.status == MCL_SUCCESS && !(o.status = mcl_model_open(ctx, arg, NULL, &m))) {
        mcl_session_desc d = {.size = sizeof d, .sequences = 1, .batch_tokens = 8};
        if (arg == gguf_path)
            o.status = mcl_model_tokenize(m, "abc cab", 7, 0, ids, 64, &count);
        if (o.status == MCL_SUCCESS)
            o.digest = mix_bytes(o.digest, ids, count * sizeof *ids);
        if (o.status == MCL_SUCCESS)
            o.status = mcl_session_create(m, &d, &s);
        if (o.status == MCL_SUCCESS)
            o.status = mcl_session_feed(s, 0, prompt, PROMPT, logits);
        for (int t = 0; t < STEPS && o.status == MCL_SUCCESS; t++) {
            o.digest = mix_bytes(o.digest, logits, sizeof logits);
            o.status = mcl_session_feed(s, 0, &steps[t], 1, logits);
        }
        int32_t next = -1;
        if (o.status == MCL_SUCCESS)
            o.status = mcl_session_sample(s, 0, NULL, &next);
        o.digest = mix(o.digest, (uint64_t)next);
    }
    mcl_session_destroy(s);
    mcl_model_close(m);
    mcl_context_destroy(ctx);
    return o;
}

/* A GPT checkpoint of the fuzz corpus (arg: its file name) loaded and saved again. */
static outcome gpt_checkpoint(const void *arg)
{
    char path[512], out_path[600];
    snprintf(path, sizeof path, "%s/checkpoint/%s", MCL_TEST_CORPUS_DIR, (const char *)arg);
    snprintf(out_path, sizeof out_path, "%s/resaved.mclgpt", mcl_test_scratch_dir());
    mcl_context *ctx = NULL;
    mcl_gpt *gpt = NULL;
    outcome o = {new_context(&ctx), 0};
    if (o.status == MCL_SUCCESS && !(o.status = mcl_gpt_load(ctx, path, &gpt)))
        o.status = mcl_gpt_save(gpt, out_path);
    if (o.status == MCL_SUCCESS) {
        size_t size = 0;
        unsigned char *bytes = read_file(out_path, &size);
        o.digest = bytes ? mix_bytes(0, bytes, size) : 1;
        free(bytes);
    }
    mcl_gpt_destroy(gpt);
    mcl_context_destroy(ctx);
    return o;
}


/* --- Device loss and fence timeouts -------------------------------------------------- */

/* What a lost context must do: report itself lost, refuse submissions, waits and transfers
 * with MCL_ERROR_DEVICE_LOST, and be destroyed without hanging; the next context works. */
static void check_lost_context(mcl_context *c, mcl_tensor *a, mcl_tensor *b, const char *why)
{
    float x[4] = {0};
    assert_true(mcl_context_is_lost(c));
    assert_non_null(strstr(mcl_context_last_error(c), why));
    assert_int_equal(mcl_add(c, a, a, b), MCL_ERROR_DEVICE_LOST);
    assert_int_equal(mcl_finish(c), MCL_ERROR_DEVICE_LOST);
    assert_int_equal(mcl_tensor_upload(a, 0, x, sizeof x), MCL_ERROR_DEVICE_LOST);
    assert_int_equal(mcl_tensor_download(b, 0, x, sizeof x), MCL_ERROR_DEVICE_LOST);
    assert_non_null(strstr(mcl_context_last_error(c), "lost earlier"));
}

/* A fresh context after a lost one: an add, checked. */
static void check_new_context(void)
{
    mcl_context *c = NULL;
    assert_mcl_ok(new_context(&c));
    assert_false(mcl_context_is_lost(c));
    int64_t shape[1] = {4};
    float x[4] = {1, 2, 3, 4}, y[4] = {0};
    mcl_tensor *a = mcl_test_tensor(c, MCL_DTYPE_F32, 1, shape, x);
    mcl_tensor *b = mcl_test_tensor(c, MCL_DTYPE_F32, 1, shape, NULL);
    assert_mcl_ok(mcl_add(c, a, a, b));
    assert_mcl_ok(mcl_tensor_download(b, 0, y, sizeof y));
    for (int i = 0; i < 4; i++)
        assert_true(y[i] == 2 * x[i]);
    mcl_context_destroy(c);
}

/* MOTIFCL_FAULT=<kind>@2: the first mcl_finish works, the second reports the fault. */
static void injected(const char *fault, const char *why)
{
    int64_t live = mcl_mem_live();
    setenv("MOTIFCL_FAULT", fault, 1);
    mcl_context *c = NULL;
    mcl_status created = new_context(&c);
    unsetenv("MOTIFCL_FAULT");
    assert_mcl_ok(created);
    int64_t shape[1] = {4};
    float x[4] = {1, 2, 3, 4};
    mcl_tensor *a = mcl_test_tensor(c, MCL_DTYPE_F32, 1, shape, x);
    mcl_tensor *b = mcl_test_tensor(c, MCL_DTYPE_F32, 1, shape, NULL);
    assert_mcl_ok(mcl_add(c, a, a, b));
    assert_mcl_ok(mcl_finish(c));
    assert_false(mcl_context_is_lost(c));
    assert_mcl_ok(mcl_add(c, b, b, a));
    assert_int_equal(mcl_finish(c), MCL_ERROR_DEVICE_LOST);
    check_lost_context(c, a, b, why);
    clock_t start = clock();
    mcl_context_destroy(c);
    double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
    printf("%s: lost at the 2nd fence wait, destroyed in %.3f s CPU\n", fault, seconds);
    assert_int_equal(mcl_mem_live(), live);
    check_new_context();
    char label[96];
    snprintf(label, sizeof label, "MOTIFCL_FAULT=%s: status, lost context, new context", fault);
    mcl_test_record_bool(label, 1);
}

static void device_lost(void **state)
{
    (void)state;
    if (!have_device)
        skip();
    injected("device_lost@2", "VK_ERROR_DEVICE_LOST");
}

static void fence_timeout(void **state)
{
    (void)state;
    if (!have_device)
        skip();
    injected("timeout@2", "timed out");
}

/* A context whose fence waits time out after 1 ms, and two S x S f32 tensors of it: a random
 * (from `seed`) and b. */
enum { TIMEOUT_S = 2048 };
static mcl_context *timeout_context(uint32_t seed, mcl_tensor **a, mcl_tensor **b)
{
    setenv("MOTIFCL_FENCE_TIMEOUT_MS", "1", 1);
    mcl_context *c = NULL;
    mcl_status created = new_context(&c);
    unsetenv("MOTIFCL_FENCE_TIMEOUT_MS");
    assert_mcl_ok(created);
    int64_t shape[2] = {TIMEOUT_S, TIMEOUT_S};
    float *x = mcl_test_random_floats((size_t)TIMEOUT_S * TIMEOUT_S, seed, -1.0f, 1.0f);
    *a = mcl_test_tensor(c, MCL_DTYPE_F32, 2, shape, x);
    *b = mcl_test_tensor(c, MCL_DTYPE_F32, 2, shape, NULL);
    free(x);
    return c;
}

/* A real timeout: a matmul of 2048^3 multiply-adds (seconds on a CPU device, milliseconds on
 * a GPU) waited for with a 1 ms fence timeout. Where it finishes within 1 ms, nothing is
 * lost and the check says so. */
static void real_timeout(void **state)
{
    (void)state;
    if (!have_device)
        skip();
    mcl_tensor *a, *b;
    mcl_context *c = timeout_context(3, &a, &b);
    assert_mcl_ok(mcl_matmul(c, a, MCL_NO_TRANSPOSE, a, MCL_TRANSPOSE, NULL, b));
    mcl_status s = mcl_finish(c);
    if (s == MCL_SUCCESS) {
        printf("the matmul finished within 1 ms: no timeout to observe\n");
        assert_false(mcl_context_is_lost(c));
    } else {
        assert_int_equal(s, MCL_ERROR_DEVICE_LOST);
        assert_non_null(strstr(mcl_context_last_error(c), "MOTIFCL_FENCE_TIMEOUT_MS"));
        check_lost_context(c, a, b, "timed out");
    }
    mcl_context_destroy(c);
    check_new_context();
    mcl_test_record_bool("MOTIFCL_FENCE_TIMEOUT_MS=1: a long batch loses the context", s != 0);
}

/* The same with eight products replayed from a graph, and the graph and its tensors destroyed
 * while the timed-out replay may still be running: the context keeps the graph's command
 * buffer and descriptor sets until it has waited for the device (freed at once, the CPU
 * device's worker thread read them after they were gone and crashed). */
static void real_timeout_graph(void **state)
{
    (void)state;
    if (!have_device)
        skip();
    /* Eight products of 2048^3 multiply-adds, 137 GFLOP: seconds on Lavapipe, about 3 ms at
     * an H200's 41 TFLOP/s (one took 0.4 ms there, within the 1 ms, and observed no timeout;
     * one of 4096^3 needs an upload that the 1 ms fence wait does not allow). */
    enum { PRODUCTS = 8 };
    int64_t live = mcl_mem_live();
    mcl_tensor *a, *b;
    mcl_context *c = timeout_context(4, &a, &b);
    mcl_graph *g = NULL;
    assert_mcl_ok(mcl_graph_begin(c));
    for (int i = 0; i < PRODUCTS; i++)
        assert_mcl_ok(mcl_matmul(c, a, MCL_NO_TRANSPOSE, a, MCL_TRANSPOSE, NULL, b));
    assert_mcl_ok(mcl_graph_end(c, &g));
    assert_mcl_ok(mcl_graph_replay(c, g));
    mcl_status s = mcl_finish(c);
    if (s == MCL_SUCCESS) {
        printf("the replay finished within 1 ms: no timeout to observe\n");
    } else {
        assert_int_equal(s, MCL_ERROR_DEVICE_LOST);
        assert_int_equal(mcl_graph_replay(c, g), MCL_ERROR_DEVICE_LOST);
    }
    mcl_graph_destroy(g);
    mcl_tensor_destroy(a);
    mcl_tensor_destroy(b);
    mcl_context_destroy(c);
    assert_int_equal(mcl_mem_live(), live);
    check_new_context();
    mcl_test_record_bool("MOTIFCL_FENCE_TIMEOUT_MS=1: a replay lost, its graph destroyed at once",
                         s != 0);
}

/* The decode scenario with MOTIFCL_FAULT=<kind>@N for N = 1, 2, ... until a run meets no
 * fault: each fails with MCL_ERROR_DEVICE_LOST, tears down, and leaks nothing. */
static void lost_during_decode(void **state)
{
    (void)state;
    if (!have_device)
        skip();
    static const char *const kinds[] = {"device_lost", "timeout"};
    for (int k = 0; k < 2; k++) {
        int wrong = 0, n = 1;
        for (;; n++) {
            char value[32];
            snprintf(value, sizeof value, "%s@%d", kinds[k], n);
            setenv("MOTIFCL_FAULT", value, 1);
            int64_t live = mcl_mem_live();
            outcome o = model_decode(gguf_path);
            unsetenv("MOTIFCL_FAULT");
            if (mcl_mem_live() != live) {
                fprintf(stderr, "MOTIFCL_FAULT=%s: %lld allocations leaked\n", value,
                        (long long)(mcl_mem_live() - live));
                wrong++;
            }
            if (o.status == MCL_SUCCESS)
                break;
            if (o.status != MCL_ERROR_DEVICE_LOST) {
                fprintf(stderr, "MOTIFCL_FAULT=%s: %s\n", value, mcl_status_string(o.status));
                wrong++;
            }
        }
        printf("decode, %s at each of %d fence waits: %d wrong\n", kinds[k], n - 1, wrong);
        char label[96];
        snprintf(label, sizeof label, "decode: %s at every fence wait is a status, no leak",
                 kinds[k]);
        assert_true(mcl_test_record_bool(label, wrong == 0 && n > 1));
    }
}

/* The two variables are read strictly: a value that cannot be taken is named and ignored. */
static void fault_settings(void **state)
{
    (void)state;
    static const char *const bad_timeouts[] = {"0", "-5", "10ms", " 10", "1000000000001"};
    static const char *const bad_faults[] = {"device_lost", "device_lost@0", "lost@3",
                                             "timeout@", "timeout@2x", "@2"};
    mcl_env_settings s;
    for (size_t i = 0; i < sizeof bad_timeouts / sizeof *bad_timeouts; i++) {
        setenv("MOTIFCL_FENCE_TIMEOUT_MS", bad_timeouts[i], 1);
        mcl_env_read(&s);
        assert_int_equal(s.fence_timeout_ms, 0);
        assert_non_null(strstr(s.problems, "MOTIFCL_FENCE_TIMEOUT_MS"));
    }
    setenv("MOTIFCL_FENCE_TIMEOUT_MS", "2500", 1);
    mcl_env_read(&s);
    assert_int_equal(s.fence_timeout_ms, 2500);
    assert_string_equal(s.problems, "");
    unsetenv("MOTIFCL_FENCE_TIMEOUT_MS");
    for (size_t i = 0; i < sizeof bad_faults / sizeof *bad_faults; i++) {
        setenv("MOTIFCL_FAULT", bad_faults[i], 1);
        mcl_env_read(&s);
        assert_int_equal(s.fault, MCL_ENV_FAULT_NONE);
        assert_non_null(strstr(s.problems, "MOTIFCL_FAULT"));
    }
    setenv("MOTIFCL_FAULT", "TIMEOUT@7", 1);
    mcl_env_read(&s);
    assert_int_equal(s.fault, MCL_ENV_FAULT_TIMEOUT);
    assert_int_equal(s.fault_at, 7);
    unsetenv("MOTIFCL_FAULT");
    mcl_test_record_bool("MOTIFCL_FENCE_TIMEOUT_MS and MOTIFCL_FAULT parsed strictly", 1);
}

/* --- Tests --------------------------------------------------------------------------- */

static void host_allocations(void **state)
{
    (void)state;
    sweep("parse gguf", parse_gguf, NULL);
    sweep("parse safetensors, json", parse_safetensors, NULL);
    sweep("tokenizers", load_tokenizers, gguf_path);
    sweep("write gguf, safetensors", write_files, NULL);
}

static void device_allocations(void **state)
{
    (void)state;
    if (!have_device)
        skip();
    sweep("context", context_only, NULL);
    sweep("tensor ops", tensor_ops, NULL);
    sweep("model (gguf) decode", model_decode, gguf_path);
    sweep("model (checkpoint) decode", model_decode, ckpt_dir);
    sweep("gpt checkpoint", gpt_checkpoint, "tiny-untied.mclgpt");
    sweep("gpt checkpoint (counter)", gpt_checkpoint, "tiny-counter-reversible.mclgpt");
}

/* The tiny model, as a GGUF file and as a checkpoint folder in the scratch folder. */
static int fixtures_setup(void **state)
{
    if (mcl_test_scratch_setup(state) != 0)
        return -1;
    model_fixture_desc d = {0};
    d.dim = 64;
    d.layers = 1;
    d.heads = 2;
    d.kv_heads = 1;
    d.hidden = 128;
    d.vocab = 128;
    d.context = 32;
    d.seed = 5;
    model_fixture f;
    if (model_fixture_create(&d, &f) != MCL_SUCCESS)
        return -1;
    snprintf(gguf_path, sizeof gguf_path, "%s/tiny.gguf", mcl_test_scratch_dir());
    snprintf(ckpt_dir, sizeof ckpt_dir, "%s/tiny-hf", mcl_test_scratch_dir());
    int ok = mkdir(ckpt_dir, 0700) == 0 && model_fixture_write_gguf(&f, gguf_path) == MCL_SUCCESS &&
             model_fixture_write_checkpoint(&f, ckpt_dir) == MCL_SUCCESS;
    model_fixture_free(&f);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    /* The harness's context proves (or, in strict mode, demands) a device; the sweeps make
     * their own. */
    mcl_test_device_context();
    have_device = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(host_allocations),
        cmocka_unit_test(device_allocations),
        cmocka_unit_test(fault_settings),
        cmocka_unit_test(device_lost),
        cmocka_unit_test(fence_timeout),
        cmocka_unit_test(real_timeout),
        cmocka_unit_test(real_timeout_graph),
        cmocka_unit_test(lost_during_decode),
    };
    return mcl_test_finish(
        cmocka_run_group_tests(tests, fixtures_setup, mcl_test_scratch_teardown));
}
