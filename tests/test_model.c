/* Model files onto the device: a small llama-family model written by the tests in GGUF (q and
 * k permuted as llama.cpp's converter stores them, every tensor type the library reads) and
 * as a Hugging Face checkpoint (safetensors and config.json, as Hugging Face stores them),
 * read back tensor by tensor against what was written; the two files of the same weights
 * give the same tensors. Conversions on load (f16 and bf16 to f32, quantization to q8_0,
 * dequantization to f32), the memory budget refused before any upload, the metadata, the
 * tokenizer through the model (a GGUF's, and a checkpoint's tokenizer.json and
 * tokenizer.model), and files the loader must refuse (architecture, tensor type, damaged,
 * missing).
 *
 * Tolerances: none. Every comparison is exact: f32 tensors bit for bit, block-quantised ones
 * byte for byte (GGUF bytes), conversions against the same conversion done on the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "io/gguf.h"
#include "io/mapped.h"
#include "io/safetensors.h"
#include "model_fixtures.h"
#include "quant/quant.h"
#include "text/tokenizer.h"
#include "tokenizer_files.h"
#include "vk/inspect.h"

static mcl_context *ctx;

/* The model's shape: width 256 so that every K-quant's rows are whole blocks. */
#define VOCAB 300
#define DIM 256
#define LAYERS 2
#define HEADS 4
#define KV_HEADS 2
#define HEAD_DIM (DIM / HEADS)
#define HIDDEN 512
#define CONTEXT 128

typedef struct weight {
    char name[64];
    uint32_t ndim;
    int64_t shape[2];   /* the library's order: [N, K] */
    uint32_t type;      /* ggml type in the GGUF file */
    uint32_t heads;     /* >0: llama.cpp permutes its rows over this many heads */
    float *hf;          /* Hugging Face's order */
} weight;

typedef struct model_def {
    weight w[64];
    uint32_t count;
} model_def;

static void add(model_def *m, const char *name, uint32_t ndim, int64_t n, int64_t k,
                uint32_t type, uint32_t heads, uint32_t seed)
{
    weight *w = &m->w[m->count++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->ndim = ndim;
    w->shape[0] = n;
    w->shape[1] = k;
    w->type = type;
    w->heads = heads;
    size_t count = (size_t)n * (size_t)(ndim > 1 ? k : 1);
    w->hf = mcl_test_random_floats(count, seed, -1.0f, 1.0f);
}

/* A llama model; `quantized`: its matrices in every type the library reads, else in f32,
 * f16 and bf16 only (what a checkpoint can hold too). */
static void define(model_def *m, int quantized)
{
    memset(m, 0, sizeof *m);
    uint32_t seed = 100;
    const uint32_t f32 = MCL_GGML_F32, f16 = MCL_GGML_F16, bf16 = MCL_GGML_BF16;
    add(m, "token_embd.weight", 2, VOCAB, DIM, quantized ? MCL_GGML_Q6_K : f32, 0, seed++);
    for (int l = 0; l < LAYERS; l++) {
        char name[64];
#define LAYER(suffix, nd, n, k, type, heads)                                                  \
    snprintf(name, sizeof name, "blk.%d.%s", l, suffix);                                     \
    add(m, name, nd, n, k, type, heads, seed++)
        LAYER("attn_norm.weight", 1, DIM, 0, f32, 0);
        LAYER("attn_q.weight", 2, DIM, DIM, l ? f16 : f32, HEADS);
        LAYER("attn_k.weight", 2, KV_HEADS * HEAD_DIM, DIM,
              quantized && l ? MCL_GGML_Q4_K : f16, KV_HEADS);
        LAYER("attn_v.weight", 2, KV_HEADS * HEAD_DIM, DIM, bf16, 0);
        LAYER("attn_output.weight", 2, DIM, DIM, quantized ? MCL_GGML_Q8_0 : f32, 0);
        LAYER("ffn_norm.weight", 1, DIM, 0, f32, 0);
        LAYER("ffn_gate.weight", 2, HIDDEN, DIM, quantized ? MCL_GGML_Q4_0 : bf16, 0);
        LAYER("ffn_up.weight", 2, HIDDEN, DIM, quantized ? MCL_GGML_Q4_K : f16, 0);
        LAYER("ffn_down.weight", 2, DIM, HIDDEN, quantized ? MCL_GGML_Q5_K : f32, 0);
#undef LAYER
    }
    add(m, "output_norm.weight", 1, DIM, 0, f32, 0, seed++);
    add(m, "output.weight", 2, VOCAB, DIM, quantized ? MCL_GGML_Q8_0 : f16, 0, seed++);
}

static void undefine(model_def *m)
{
    for (uint32_t i = 0; i < m->count; i++)
        free(m->w[i].hf);
}

static size_t numel(const weight *w)
{
    return (size_t)w->shape[0] * (size_t)(w->ndim > 1 ? w->shape[1] : 1);
}

static size_t row_len(const weight *w)
{
    return (size_t)(w->ndim > 1 ? w->shape[1] : w->shape[0]);
}

/* The library dtype of a block-quantised ggml type. */
static mcl_dtype block_of(uint32_t type)
{
    return (mcl_dtype)mcl_ggml_type_dtype(type);
}

/* `n` floats (rows of k) in the file's type: f32, f16, bf16 or blocks (the fixtures'
 * encoder), or zero q4_1 blocks. *bytes receives the size. */
static unsigned char *encode(uint32_t type, const float *x, size_t n, size_t k, uint64_t *bytes)
{
    unsigned char *out;
    if (type == 3) { /* q4_1, which the library does not read: zero blocks */
        *bytes = n / 32 * 20;
        out = calloc(1, *bytes);
    } else {
        out = model_fixture_encode(type, x, (int64_t)(n / k), (int64_t)k, bytes);
    }
    assert_non_null(out);
    return out;
}

/* The file's f32 values as the loader must give them: each value through its type. */
static float *decoded(uint32_t type, const float *x, size_t n)
{
    float *y = malloc(n * sizeof *y);
    assert_non_null(y);
    for (size_t i = 0; i < n; i++) {
        if (type == MCL_GGML_F16) {
            y[i] = mcl_fp16_to_fp32(mcl_fp32_to_fp16(x[i]));
        } else if (type == MCL_GGML_BF16) {
            uint32_t u = (uint32_t)model_fixture_bf16(x[i]) << 16;
            memcpy(&y[i], &u, sizeof u);
        } else {
            y[i] = x[i];
        }
    }
    return y;
}

/* w's rows in llama.cpp's converter's order (model_fixture_permute). */
static float *permuted(const weight *w)
{
    float *p = malloc(numel(w) * sizeof *p);
    assert_non_null(p);
    model_fixture_permute(w->hf, p, w->shape[0], (int64_t)row_len(w), w->heads);
    return p;
}

static void put_u32(mcl_gguf_writer *g, const char *key, uint32_t v)
{
    assert_mcl_ok(mcl_gguf_writer_add(g, key, MCL_GGUF_UINT32, &v));
}

static void put_f32(mcl_gguf_writer *g, const char *key, float v)
{
    assert_mcl_ok(mcl_gguf_writer_add(g, key, MCL_GGUF_FLOAT32, &v));
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    fclose(f);
}

/* Key kv of the parsed file `from` into the writer (the scalar and array types a tokenizer's
 * keys use). */
static void copy_kv(mcl_gguf_writer *g, const mcl_gguf *from, const mcl_gguf_kv *kv)
{
    char key[128];
    assert_true(kv->key.len < sizeof key);
    memcpy(key, kv->key.data, (size_t)kv->key.len);
    key[kv->key.len] = '\0';
    uint64_t u;
    int64_t i;
    double d;
    int b;
    mcl_gguf_str str;
    if (kv->type == MCL_GGUF_STRING) {
        assert_true(mcl_gguf_get_str(kv, &str));
        char *c = strndup(str.data, (size_t)str.len);
        assert_mcl_ok(mcl_gguf_writer_add(g, key, MCL_GGUF_STRING, c));
        free(c);
    } else if (kv->type == MCL_GGUF_UINT32 && mcl_gguf_get_u64(kv, &u)) {
        uint32_t v = (uint32_t)u;
        assert_mcl_ok(mcl_gguf_writer_add(g, key, MCL_GGUF_UINT32, &v));
    } else if (kv->type == MCL_GGUF_BOOL && mcl_gguf_get_bool(kv, &b)) {
        uint8_t v = (uint8_t)b;
        assert_mcl_ok(mcl_gguf_writer_add(g, key, MCL_GGUF_BOOL, &v));
    } else if (kv->type == MCL_GGUF_ARRAY && kv->elem_type == MCL_GGUF_STRING) {
        char **v = calloc((size_t)kv->count, sizeof *v);
        assert_non_null(v);
        for (uint64_t e = 0; e < kv->count; e++) {
            assert_true(mcl_gguf_array_str(from, kv, e, &str));
            v[e] = strndup(str.data, (size_t)str.len);
        }
        assert_mcl_ok(mcl_gguf_writer_add_array(g, key, MCL_GGUF_STRING, kv->count, v));
        for (uint64_t e = 0; e < kv->count; e++)
            free(v[e]);
        free(v);
    } else if (kv->type == MCL_GGUF_ARRAY && (kv->elem_type == MCL_GGUF_FLOAT32 ||
                                              kv->elem_type == MCL_GGUF_INT32)) {
        uint32_t *v = calloc((size_t)kv->count, sizeof *v);
        assert_non_null(v);
        for (uint64_t e = 0; e < kv->count; e++) {
            if (kv->elem_type == MCL_GGUF_FLOAT32) {
                assert_true(mcl_gguf_array_f64(kv, e, &d));
                float f = (float)d;
                memcpy(&v[e], &f, sizeof f);
            } else {
                assert_true(mcl_gguf_array_i64(kv, e, &i));
                v[e] = (uint32_t)(int32_t)i;
            }
        }
        assert_mcl_ok(mcl_gguf_writer_add_array(g, key, kv->elem_type, kv->count, v));
        free(v);
    } else {
        fail_msg("copy_kv: %s has a type the test does not copy", key);
    }
}

/* Write m as a GGUF file of `version` at `path` (architecture `arch`; "llama" permutes), with
 * the tokenizer.* keys of `tokenizer` where it is not NULL. */
static void write_gguf_with(const model_def *m, const char *path, const char *arch,
                            uint32_t version, uint32_t alignment, const mcl_gguf *tokenizer)
{
    mcl_gguf_writer *g = mcl_gguf_writer_create(version, alignment);
    assert_non_null(g);
    assert_mcl_ok(mcl_gguf_writer_add(g, "general.architecture", MCL_GGUF_STRING, arch));
    assert_mcl_ok(mcl_gguf_writer_add(g, "general.name", MCL_GGUF_STRING, "test-llama"));
    char key[96];
#define KEY(suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), key)
    put_u32(g, KEY("context_length"), CONTEXT);
    put_u32(g, KEY("embedding_length"), DIM);
    put_u32(g, KEY("block_count"), LAYERS);
    put_u32(g, KEY("feed_forward_length"), HIDDEN);
    put_u32(g, KEY("attention.head_count"), HEADS);
    put_u32(g, KEY("attention.head_count_kv"), KV_HEADS);
    put_u32(g, KEY("rope.dimension_count"), HEAD_DIM);
    put_f32(g, KEY("attention.layer_norm_rms_epsilon"), 1e-6f);
    put_f32(g, KEY("rope.freq_base"), 500000.0f);
#undef KEY
    for (uint64_t i = 0; tokenizer && i < mcl_gguf_kv_count(tokenizer); i++) {
        const mcl_gguf_kv *kv = mcl_gguf_kv_at(tokenizer, i);
        if (kv->key.len > 10 && memcmp(kv->key.data, "tokenizer.", 10) == 0)
            copy_kv(g, tokenizer, kv);
    }
    int permute = strcmp(arch, "llama") == 0;
    for (uint32_t i = 0; i < m->count; i++) {
        const weight *w = &m->w[i];
        float *rows = permute && w->heads ? permuted(w) : w->hf;
        uint64_t bytes = 0;
        unsigned char *data = encode(w->type, rows, numel(w), row_len(w), &bytes);
        uint64_t dims[2] = {(uint64_t)row_len(w), (uint64_t)w->shape[0]};
        assert_mcl_ok(mcl_gguf_writer_add_tensor(g, w->name, w->ndim, dims, w->type, data,
                                                 bytes));
        free(data);
        if (rows != w->hf)
            free(rows);
    }
    void *file = NULL;
    uint64_t size = 0;
    assert_mcl_ok(mcl_gguf_writer_finish(g, &file, &size));
    mcl_gguf_writer_destroy(g);
    write_file(path, file, (size_t)size);
    free(file);
}

static void write_gguf(const model_def *m, const char *path, const char *arch, uint32_t version,
                       uint32_t alignment)
{
    write_gguf_with(m, path, arch, version, alignment, NULL);
}

/* Write m as a Hugging Face checkpoint into folder `dir`: config.json and model.safetensors,
 * or `shards` > 1 files model-0000i-of-0000n.safetensors with their index (f32, f16 and bf16
 * tensors as the GGUF holds them, unpermuted, under Hugging Face's names; rope_freqs.weight
 * left out: the configuration gives it). `rope_scaling`: config.json's value, as JSON. The
 * configuration's vocab_size is the embedding's rows, its head tied when m has no
 * output.weight. */
static void write_checkpoint_with(const model_def *m, const char *dir, const char *arch,
                                  uint32_t shards, const char *rope_scaling)
{
    mcl_safetensors_writer *w[4] = {0};
    char shard_name[4][64];
    assert_true(shards >= 1 && shards <= 4);
    for (uint32_t s = 0; s < shards; s++) {
        w[s] = mcl_safetensors_writer_create();
        assert_non_null(w[s]);
        assert_mcl_ok(mcl_safetensors_writer_add_metadata(w[s], "format", "pt"));
        if (shards == 1)
            snprintf(shard_name[s], sizeof shard_name[s], "model.safetensors");
        else
            snprintf(shard_name[s], sizeof shard_name[s], "model-%05u-of-%05u.safetensors",
                     s + 1, shards);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *index = shards > 1 ? fopen(path, "w") : NULL;
    if (shards > 1) {
        assert_non_null(index);
        fprintf(index, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    }
    uint32_t written = 0;
    for (uint32_t i = 0; i < m->count; i++) {
        const weight *t = &m->w[i];
        if (strcmp(t->name, "rope_freqs.weight") == 0)
            continue;
        char hf[96];
        assert_true(model_fixture_hf_name(t->name, hf, sizeof hf));
        uint64_t bytes = 0;
        unsigned char *data = encode(t->type, t->hf, numel(t), row_len(t), &bytes);
        mcl_st_dtype dtype = t->type == MCL_GGML_F16    ? MCL_ST_F16
                             : t->type == MCL_GGML_BF16 ? MCL_ST_BF16
                                                        : MCL_ST_F32;
        uint32_t s = written++ % shards;
        assert_mcl_ok(mcl_safetensors_writer_add_tensor(w[s], hf, dtype, t->ndim, t->shape,
                                                        data, bytes));
        if (index)
            fprintf(index, "%s\n  \"%s\": \"%s\"", written > 1 ? "," : "", hf,
                    shard_name[s]);
        free(data);
    }
    if (index) {
        fprintf(index, "\n}}\n");
        fclose(index);
    }
    for (uint32_t s = 0; s < shards; s++) {
        void *file = NULL;
        uint64_t size = 0;
        assert_mcl_ok(mcl_safetensors_writer_finish(w[s], &file, &size));
        mcl_safetensors_writer_destroy(w[s]);
        int n = snprintf(path, sizeof path, "%s/%s", dir, shard_name[s]);
        assert_true(n > 0 && (size_t)n < sizeof path);
        write_file(path, file, (size_t)size);
        free(file);
    }
    /* The vocabulary is the embedding's rows; the head is tied when m has none. */
    assert_string_equal(m->w[0].name, "token_embd.weight");
    int tied = 1;
    for (uint32_t i = 0; i < m->count; i++)
        tied &= strcmp(m->w[i].name, "output.weight") != 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"%s\",\n"
               " \"hidden_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d,\n"
               " \"num_key_value_heads\": %d, \"intermediate_size\": %d, \"vocab_size\": %d,\n"
               " \"max_position_embeddings\": %d, \"rms_norm_eps\": 1e-06, \"rope_theta\": 500000.0,\n"
               " \"tie_word_embeddings\": %s, \"bos_token_id\": 1, \"eos_token_id\": [2, 3],\n"
               " \"rope_scaling\": %s, \"torch_dtype\": \"bfloat16\"}\n",
            arch, DIM, LAYERS, HEADS, KV_HEADS, HIDDEN, (int)m->w[0].shape[0], CONTEXT,
            tied ? "true" : "false", rope_scaling ? rope_scaling : "null");
    fclose(f);
}

static void write_checkpoint(const model_def *m, const char *dir, const char *arch)
{
    write_checkpoint_with(m, dir, arch, 1, NULL);
}

/* What the device tensor of w must hold: the file's values in Hugging Face's order, as f32
 * (bit for bit) or as `as`'s GGUF bytes (the host quantizer's, of those values). */
static int holds(mcl_model *model, const weight *w, mcl_dtype as)
{
    mcl_tensor *t = mcl_model_find_tensor(model, w->name);
    if (!t || mcl_tensor_dtype(t) != as)
        return 0;
    size_t n = numel(w), k = row_len(w);
    int file_blocks = mcl_ggml_type_dtype(w->type) > (int)MCL_DTYPE_U8;
    uint64_t file_bytes = 0;
    unsigned char *file = encode(w->type, w->hf, n, k, &file_bytes);
    float *values = decoded(w->type, w->hf, n);
    if (file_blocks)
        assert_mcl_ok(mcl_dequantize(block_of(w->type), file, values, (int64_t)n));
    uint64_t bytes = 0;
    unsigned char *want;
    if (as == MCL_DTYPE_F32) {
        bytes = n * sizeof(float);
        want = malloc(bytes);
        memcpy(want, values, bytes);
    } else if (file_blocks && block_of(w->type) == as) {
        want = file;
        bytes = file_bytes;
        file = NULL;
    } else {
        want = encode(as == MCL_DTYPE_Q8_0 ? MCL_GGML_Q8_0 : MCL_GGML_Q4_0, values, n, k,
                      &bytes);
    }
    unsigned char *got = malloc((size_t)bytes);
    assert_non_null(got);
    assert_mcl_ok(mcl_tensor_download(t, 0, got, bytes));
    int ok = memcmp(got, want, (size_t)bytes) == 0;
    free(got);
    free(want);
    free(file);
    free(values);
    return ok;
}

static char dir[128], gguf_mixed[300], gguf_float[300], gguf_qwen[300];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/motifcl-test-model-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(gguf_mixed, sizeof gguf_mixed, "%s/mixed.gguf", dir);
    snprintf(gguf_float, sizeof gguf_float, "%s/float.gguf", dir);
    snprintf(gguf_qwen, sizeof gguf_qwen, "%s/qwen.gguf", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mcl_test_remove_tree(dir);
    return 0;
}

/* Every tensor type the library reads, from a GGUF with q and k permuted: back in Hugging
 * Face's order, block-quantised bytes unchanged, f16 and bf16 exact in f32. */
static void gguf_every_type(void **state)
{
    (void)state;
    model_def m;
    define(&m, 1);
    write_gguf(&m, gguf_mixed, "llama", 3, 32);
    mcl_model *model = NULL;
    double progress_done = 0;
    mcl_model_desc desc = {.size = sizeof desc};
    assert_mcl_ok(mcl_model_open(ctx, gguf_mixed, &desc, &model));
    mcl_model_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_string_equal(info.architecture, "llama");
    assert_string_equal(info.format, "gguf 3");
    assert_int_equal(info.dim, DIM);
    assert_int_equal(info.layers, LAYERS);
    assert_int_equal(info.kv_heads, KV_HEADS);
    assert_int_equal(info.head_dim, HEAD_DIM);
    assert_int_equal(info.vocab, VOCAB);
    assert_int_equal(info.tied_output, 0);
    assert_true(info.device_bytes > 0);
    assert_int_equal(mcl_model_tensor_count(model), m.count);
    int all = 1;
    for (uint32_t i = 0; i < m.count; i++) {
        const weight *w = &m.w[i];
        int blocks = mcl_ggml_type_dtype(w->type) > (int)MCL_DTYPE_U8;
        int ok = holds(model, w, blocks ? block_of(w->type) : MCL_DTYPE_F32);
        if (!ok)
            fprintf(stderr, "FAIL: %s\n", w->name);
        all &= ok;
    }
    mcl_test_record_bool("gguf: every tensor as written, q and k unpermuted", all);
    assert_true(all);
    /* Negative control: the permuted rows themselves are not what the device holds. */
    weight q = m.w[2];
    assert_string_equal(q.name, "blk.0.attn_q.weight");
    q.hf = permuted(&m.w[2]);
    int permuted_held = holds(model, &q, MCL_DTYPE_F32);
    free(q.hf);
    mcl_test_record_bool("negative control: the file's permuted q is detected",
                         !permuted_held);
    assert_false(permuted_held);
    char text[64];
    assert_mcl_ok(mcl_model_metadata(model, "general.architecture", text, sizeof text, NULL));
    assert_string_equal(text, "llama");
    assert_mcl_ok(mcl_model_metadata(model, "llama.block_count", text, sizeof text, NULL));
    assert_string_equal(text, "2");
    assert_int_equal(mcl_model_metadata(model, "no.such.key", text, sizeof text, NULL),
                     MCL_ERROR_INVALID_ARGUMENT);
    mcl_model_close(model);
    (void)progress_done;
    undefine(&m);
}

static void progress(void *user, uint64_t done, uint64_t total)
{
    uint64_t *seen = user;
    assert_true(done <= total);
    assert_true(done >= seen[0]);
    seen[0] = done;
    seen[1] = total;
    seen[2]++;
}

/* The same weights from a GGUF (permuted) and from a checkpoint (not) give the same tensors;
 * each holds what was written. */
static void gguf_and_checkpoint_agree(void **state)
{
    (void)state;
    model_def m;
    define(&m, 0);
    write_gguf(&m, gguf_float, "llama", 2, 64);
    write_checkpoint(&m, dir, "llama");
    uint64_t seen[3] = {0, 0, 0};
    mcl_model_desc desc = {.size = sizeof desc, .progress = progress, .progress_user_data = seen};
    mcl_model *a = NULL, *b = NULL;
    assert_mcl_ok(mcl_model_open(ctx, gguf_float, &desc, &a));
    assert_true(seen[2] > 0 && seen[0] == seen[1]);
    assert_mcl_ok(mcl_model_open(ctx, dir, NULL, &b));
    mcl_model_info ia = {.size = sizeof ia}, ib = {.size = sizeof ib};
    assert_mcl_ok(mcl_model_file_info(a, &ia));
    assert_mcl_ok(mcl_model_file_info(b, &ib));
    assert_string_equal(ia.format, "gguf 2");
    assert_string_equal(ib.format, "safetensors");
    assert_int_equal(ib.dim, DIM);
    assert_int_equal(ib.kv_heads, KV_HEADS);
    assert_int_equal(ib.eos, 2);
    assert_int_equal(ia.parameters, ib.parameters);
    assert_int_equal(mcl_model_tensor_count(a), mcl_model_tensor_count(b));
    int same = 1, written = 1;
    for (uint32_t i = 0; i < m.count; i++) {
        mcl_tensor *ta = mcl_model_find_tensor(a, m.w[i].name);
        mcl_tensor *tb = mcl_model_find_tensor(b, m.w[i].name);
        assert_non_null(ta);
        assert_non_null(tb);
        uint64_t bytes = mcl_tensor_nbytes(ta);
        assert_int_equal(bytes, mcl_tensor_nbytes(tb));
        unsigned char *x = malloc((size_t)bytes), *y = malloc((size_t)bytes);
        assert_mcl_ok(mcl_tensor_download(ta, 0, x, bytes));
        assert_mcl_ok(mcl_tensor_download(tb, 0, y, bytes));
        same &= memcmp(x, y, (size_t)bytes) == 0;
        written &= holds(b, &m.w[i], MCL_DTYPE_F32);
        free(x);
        free(y);
    }
    mcl_test_record_bool("gguf (permuted) and checkpoint (not): identical tensors", same);
    mcl_test_record_bool("checkpoint: every tensor as written", written);
    assert_true(same && written);
    char text[256];
    assert_mcl_ok(mcl_model_metadata(b, "eos_token_id", text, sizeof text, NULL));
    assert_string_equal(text, "[2, 3]");
    mcl_model_close(a);
    mcl_model_close(b);
    undefine(&m);
}

/* Conversions on load: float matrices quantized to q8_0 (the host quantizer's bytes), block
 * ones dequantized to f32 (the host's dequantization). */
static void weight_type_on_load(void **state)
{
    (void)state;
    model_def m;
    define(&m, 1);
    write_gguf(&m, gguf_mixed, "llama", 3, 32);
    const mcl_dtype types[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_F32};
    for (int t = 0; t < 2; t++) {
        mcl_model_desc desc = {.size = sizeof desc, .flags = MCL_MODEL_WEIGHT_TYPE_SET,
                               .weight_type = types[t]};
        mcl_model *model = NULL;
        assert_mcl_ok(mcl_model_open(ctx, gguf_mixed, &desc, &model));
        int all = 1;
        for (uint32_t i = 0; i < m.count; i++) {
            const weight *w = &m.w[i];
            int blocks = mcl_ggml_type_dtype(w->type) > (int)MCL_DTYPE_U8;
            mcl_dtype as = w->ndim == 1                ? MCL_DTYPE_F32
                           : types[t] == MCL_DTYPE_F32 ? MCL_DTYPE_F32
                           : blocks                    ? block_of(w->type)
                                                       : types[t];
            all &= holds(model, w, as);
        }
        mcl_test_record_bool(t ? "dequantized to f32 on load" : "quantized to q8_0 on load",
                             all);
        assert_true(all);
        mcl_model_close(model);
    }
    undefine(&m);
}

static uint64_t imported_copies(const mcl_context *c)
{
    uint64_t imported, pinned;
    mcl_inspect_transfers(c, &imported, &pinned);
    return imported;
}

/* The weights never reach the device through the file's mapped pages imported as host memory
 * (mcl_tensor_upload_no_import): with imports forced at any size, opening the float model
 * (its f32 matrices go to the device as the file holds them) imports nothing, and its
 * weights are the file's; control: one upload of 64 KiB from the same mapping with
 * mcl_tensor_upload is imported (where the device imports no read-only file mapping, one from
 * anonymous memory is, and the check is noted as unable to fail there). */
static void load_never_imports(void **state)
{
    (void)state;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    if (!(info.features_enabled & MCL_FEATURE_EXTERNAL_HOST_MEMORY)) {
        mcl_test_note("load_never_imports", "capability skip: no VK_EXT_external_memory_host");
        skip();
    }
    model_def m;
    define(&m, 0);
    write_gguf(&m, gguf_float, "llama", 3, 32);
    setenv("MOTIFCL_TRANSFER", "import", 1);
    mcl_context_desc cdesc = {.size = sizeof cdesc, .device_index = -1};
    mcl_context *c = NULL;
    mcl_status st = mcl_context_create(&cdesc, &c);
    unsetenv("MOTIFCL_TRANSFER");
    assert_mcl_ok(st);
    mcl_model_desc desc = {.size = sizeof desc};
    mcl_model *model = NULL;
    assert_mcl_ok(mcl_model_open(c, gguf_float, &desc, &model));
    uint64_t on_load = imported_copies(c);
    char name[96];
    snprintf(name, sizeof name, "copies imported while loading: %llu", (unsigned long long)on_load);
    mcl_test_record_bool(name, on_load == 0);
    assert_int_equal(on_load, 0);
    mcl_model_close(model);

    char why[256];
    mcl_mapped file = {0};
    assert_mcl_ok(mcl_mapped_open(gguf_float, &file, why, sizeof why));
    int64_t n = 65536;
    assert_true(file.size > (uint64_t)n + 8192);
    mcl_tensor *t = NULL;
    assert_mcl_ok(mcl_tensor_create(c, MCL_DTYPE_U8, 1, &n, &t));
    assert_mcl_ok(mcl_tensor_upload(t, 0, file.data + 4096, (uint64_t)n));
    uint64_t plain = imported_copies(c);
    if (plain == 0) {
        /* Some drivers (NVIDIA's) do not import a read-only file mapping at all; then the
         * counter is shown to count with anonymous memory, and the check above cannot fail on
         * this device (it can on one that imports such mappings: Lavapipe). */
        void *anon = aligned_alloc(65536, (size_t)n);
        assert_non_null(anon);
        memset(anon, 7, (size_t)n);
        assert_mcl_ok(mcl_tensor_upload(t, 0, anon, (uint64_t)n));
        free(anon);
        uint64_t counted = imported_copies(c);
        snprintf(name, sizeof name,
                 "control: the mapping is not imported here; anonymous memory is (%llu)",
                 (unsigned long long)counted);
        mcl_test_record_bool(name, counted >= 1);
        assert_true(counted >= 1);
        mcl_test_note("load_never_imports",
                      "this device does not import a read-only file mapping: the loading check "
                      "cannot fail on it");
    } else {
        snprintf(name, sizeof name, "control: a plain upload from the mapping imported (%llu)",
                 (unsigned long long)plain);
        mcl_test_record_bool(name, plain >= 1);
    }
    mcl_mapped_close(&file);
    assert_int_equal(mcl_context_validation_errors(c), 0);
    mcl_context_destroy(c);
    undefine(&m);
}

/* A model beyond the budget is refused before anything is uploaded; NO_WEIGHTS reads the
 * description alone. */
static void budget_and_no_weights(void **state)
{
    (void)state;
    model_def m;
    define(&m, 1);
    write_gguf(&m, gguf_mixed, "llama", 3, 32);
    undefine(&m);
    mcl_memory_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    assert_mcl_ok(mcl_finish(ctx));
    assert_mcl_ok(mcl_context_memory_stats(ctx, &before));
    mcl_model_desc desc = {.size = sizeof desc, .memory_budget = 4096};
    mcl_model *model = (mcl_model *)1;
    assert_int_equal(mcl_model_open(ctx, gguf_mixed, &desc, &model),
                     MCL_ERROR_OUT_OF_DEVICE_MEMORY);
    assert_null(model);
    assert_non_null(strstr(mcl_context_last_error(ctx), "need"));
    assert_mcl_ok(mcl_context_memory_stats(ctx, &after));
    assert_int_equal(after.bytes_allocated, before.bytes_allocated);
    desc.flags = MCL_MODEL_NO_WEIGHTS;
    assert_mcl_ok(mcl_model_open(ctx, gguf_mixed, &desc, &model));
    mcl_model_tensor_info ti = {.size = sizeof ti};
    assert_mcl_ok(mcl_model_tensor(model, 0, &ti));
    assert_null(ti.tensor);
    assert_string_equal(ti.name, "token_embd.weight");
    assert_int_equal(ti.dtype, MCL_DTYPE_Q6_K);
    assert_int_equal(ti.shape[0], VOCAB);
    assert_int_equal(ti.shape[1], DIM);
    assert_int_equal(mcl_model_tensor(model, 999, &ti), MCL_ERROR_INVALID_ARGUMENT);
    mcl_model_close(model);
}

/* A sub-folder of the test's folder, made. */
static void subfolder(const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", dir, name);
    assert_int_equal(mkdir(out, 0700), 0);
}

/* Whether two models hold the same bytes under every name of m. */
static int same_tensors(mcl_model *a, mcl_model *b, const model_def *m)
{
    int same = 1;
    for (uint32_t i = 0; i < m->count; i++) {
        mcl_tensor *ta = mcl_model_find_tensor(a, m->w[i].name);
        mcl_tensor *tb = mcl_model_find_tensor(b, m->w[i].name);
        if (!ta || !tb || mcl_tensor_nbytes(ta) != mcl_tensor_nbytes(tb))
            return 0;
        uint64_t bytes = mcl_tensor_nbytes(ta);
        unsigned char *x = malloc((size_t)bytes), *y = malloc((size_t)bytes);
        assert_non_null(x);
        assert_non_null(y);
        assert_mcl_ok(mcl_tensor_download(ta, 0, x, bytes));
        assert_mcl_ok(mcl_tensor_download(tb, 0, y, bytes));
        same &= memcmp(x, y, (size_t)bytes) == 0;
        free(x);
        free(y);
    }
    return same;
}

/* qwen2: biases on q, k and v, and its GGUF unpermuted; the same weights from a GGUF and from
 * a checkpoint of three shards with their index give the same tensors, each as written. A
 * missing shard is refused by name. */
static void qwen2_sharded(void **state)
{
    (void)state;
    model_def m;
    define(&m, 0);
    uint32_t seed = 900;
    for (int l = 0; l < LAYERS; l++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.attn_q.bias", l);
        add(&m, name, 1, DIM, 0, MCL_GGML_F32, 0, seed++);
        snprintf(name, sizeof name, "blk.%d.attn_k.bias", l);
        add(&m, name, 1, KV_HEADS * HEAD_DIM, 0, MCL_GGML_F32, 0, seed++);
        snprintf(name, sizeof name, "blk.%d.attn_v.bias", l);
        add(&m, name, 1, KV_HEADS * HEAD_DIM, 0, MCL_GGML_F32, 0, seed++);
    }
    char sharded[320], index[400];
    subfolder("qwen2-sharded", sharded, sizeof sharded);
    write_gguf(&m, gguf_qwen, "qwen2", 3, 32);
    write_checkpoint_with(&m, sharded, "qwen2", 3, NULL);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", sharded);
    mcl_model *a = NULL, *b = NULL;
    assert_mcl_ok(mcl_model_open(ctx, gguf_qwen, NULL, &a));
    assert_mcl_ok(mcl_model_open(ctx, index, NULL, &b));
    mcl_model_info ia = {.size = sizeof ia}, ib = {.size = sizeof ib};
    assert_mcl_ok(mcl_model_file_info(a, &ia));
    assert_mcl_ok(mcl_model_file_info(b, &ib));
    assert_string_equal(ia.architecture, "qwen2");
    assert_string_equal(ib.architecture, "qwen2");
    assert_int_equal(ia.qkv_bias, 1);
    assert_int_equal(ib.qkv_bias, 1);
    int written = 1;
    for (uint32_t i = 0; i < m.count; i++)
        written &= holds(a, &m.w[i], MCL_DTYPE_F32) && holds(b, &m.w[i], MCL_DTYPE_F32);
    int same = same_tensors(a, b, &m);
    mcl_test_record_bool("qwen2: gguf (unpermuted) and three shards: every tensor as written",
                         written);
    mcl_test_record_bool("qwen2: gguf and sharded checkpoint identical", same);
    assert_true(written && same);
    mcl_model_close(a);
    mcl_model_close(b);
    /* Negative control: a shard gone. */
    char shard[420];
    snprintf(shard, sizeof shard, "%s/model-00002-of-00003.safetensors", sharded);
    assert_int_equal(remove(shard), 0);
    assert_int_equal(mcl_model_open(ctx, sharded, NULL, &b), MCL_ERROR_IO);
    assert_non_null(strstr(mcl_context_last_error(ctx), "model-00002-of-00003"));
    undefine(&m);
}

/* llama 3.1's RoPE scaling: from config.json's rope_scaling the checkpoint gets
 * rope_freqs.weight as llama.cpp's converter computes it (values computed independently in
 * double precision with Python for head_dim 64, theta 500000, factor 8, low 1, high 4, original
 * context 8192); a GGUF with that tensor reads as llama 3 scaling; another scaling is refused
 * by name. */
static void llama3_rope_scaling(void **state)
{
    (void)state;
    static const float want_mid[3] = {1.5534146285049255f, 2.6945296878947333f,
                                      5.257326588708467f};
    float want[HEAD_DIM / 2];
    for (int i = 0; i < HEAD_DIM / 2; i++)
        want[i] = i < 15 ? 1.0f : i < 18 ? want_mid[i - 15] : 8.0f;
    model_def m;
    define(&m, 0);
    char folder[320], other[400];
    subfolder("llama3", folder, sizeof folder);
    write_checkpoint_with(&m, folder, "llama", 1,
                          "{\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
                          "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}");
    mcl_model *model = NULL;
    assert_mcl_ok(mcl_model_open(ctx, folder, NULL, &model));
    mcl_model_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_int_equal(info.rope_scaling, MCL_ROPE_SCALING_LLAMA3);
    assert_true(info.rope_factor == 8.0f && info.rope_original_context == 8192);
    mcl_tensor *t = mcl_model_find_tensor(model, "rope_freqs.weight");
    assert_non_null(t);
    float got[HEAD_DIM / 2];
    assert_int_equal(mcl_tensor_nbytes(t), sizeof got);
    assert_mcl_ok(mcl_tensor_download(t, 0, got, sizeof got));
    double worst = 0;
    for (int i = 0; i < HEAD_DIM / 2; i++)
        worst = fmax(worst, fabs((double)got[i] - want[i]) / want[i]);
    mcl_test_record("llama3 factors against Python's", "max relative error", worst, 1e-6);
    assert_true(worst <= 1e-6);
    mcl_model_close(model);
    /* The GGUF form: the converter's tensor, read as llama 3 scaling, loaded as it is. */
    add(&m, "rope_freqs.weight", 1, HEAD_DIM / 2, 0, MCL_GGML_F32, 0, 1);
    memcpy(m.w[m.count - 1].hf, want, sizeof want);
    snprintf(other, sizeof other, "%s/llama3.gguf", folder);
    write_gguf(&m, other, "llama", 3, 32);
    assert_mcl_ok(mcl_model_open(ctx, other, NULL, &model));
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_int_equal(info.rope_scaling, MCL_ROPE_SCALING_LLAMA3);
    assert_true(holds(model, &m.w[m.count - 1], MCL_DTYPE_F32));
    mcl_model_close(model);
    /* Another scaling, refused by name. */
    subfolder("yarn", other, sizeof other);
    m.count--; /* the checkpoint's configuration gives the factors */
    write_checkpoint_with(&m, other, "llama", 1,
                          "{\"rope_type\": \"yarn\", \"factor\": 4.0, "
                          "\"original_max_position_embeddings\": 32768}");
    m.count++;
    assert_int_equal(mcl_model_open(ctx, other, NULL, &model), MCL_ERROR_UNSUPPORTED);
    assert_non_null(strstr(mcl_context_last_error(ctx), "yarn"));
    undefine(&m);
}

/* The tokenizer through the model: a GGUF carrying the keys of the real LLaMA vocabulary
 * (tests/data/vocab) tokenizes every reference case exactly; a corrupted reference is caught;
 * a tokenizer with more tokens than the embedding has rows is refused. */
static void tokenizer_through_model(void **state)
{
    (void)state;
    char path[512], why[256];
    snprintf(path, sizeof path, "%s/vocab/ggml-vocab-llama-spm.gguf", MCL_TEST_DATA_DIR);
    mcl_mapped file = {0};
    mcl_gguf *vocab = NULL;
    assert_mcl_ok(mcl_mapped_open(path, &file, why, sizeof why));
    assert_mcl_ok(mcl_gguf_parse(file.data, file.size, &vocab, why, sizeof why));
    model_def m;
    define(&m, 0);
    char small[320], full[320];
    snprintf(small, sizeof small, "%s/vocab-small.gguf", dir);
    snprintf(full, sizeof full, "%s/vocab-full.gguf", dir);
    /* Negative control first: 300 embedding rows for 32000 tokens. */
    write_gguf_with(&m, small, "llama", 3, 32, vocab);
    mcl_model_desc desc = {.size = sizeof desc, .flags = MCL_MODEL_NO_WEIGHTS};
    mcl_model *model = NULL;
    assert_int_equal(mcl_model_open(ctx, small, &desc, &model), MCL_ERROR_BAD_FILE);
    assert_non_null(strstr(mcl_context_last_error(ctx), "32000 tokens"));
    /* The embedding the vocabulary needs (q4_0, tied output). */
    weight *embd = &m.w[0];
    assert_string_equal(embd->name, "token_embd.weight");
    free(embd->hf);
    embd->shape[0] = 32000;
    embd->type = MCL_GGML_Q4_0;
    embd->hf = mcl_test_random_floats(32000u * DIM, 7, -1.0f, 1.0f);
    assert_string_equal(m.w[m.count - 1].name, "output.weight");
    free(m.w[--m.count].hf);
    write_gguf_with(&m, full, "llama", 3, 32, vocab);
    mcl_gguf_free(vocab);
    mcl_mapped_close(&file);
    assert_mcl_ok(mcl_model_open(ctx, full, &desc, &model));
    mcl_model_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_string_equal(info.tokenizer, "llama");
    assert_int_equal(info.vocab, 32000);
    assert_int_equal(info.bos, 1);
    assert_int_equal(info.eos, 2);
    assert_int_equal(info.tied_output, 1);

    snprintf(path, sizeof path, "%s/vocab/ggml-vocab-llama-spm.gguf.inp", MCL_TEST_DATA_DIR);
    mcl_mapped inp = {0}, out = {0};
    assert_mcl_ok(mcl_mapped_open(path, &inp, why, sizeof why));
    snprintf(path, sizeof path, "%s/vocab/ggml-vocab-llama-spm.gguf.out", MCL_TEST_DATA_DIR);
    assert_mcl_ok(mcl_mapped_open(path, &out, why, sizeof why));
    const char *sep = "\n__ggml_vocab_test__\n";
    const char *text = (const char *)inp.data, *text_end = text + inp.size;
    const char *line = (const char *)out.data, *line_end = line + out.size;
    int32_t ids[1024];
    int cases = 0, wrong = 0, corrupt_caught = 0;
    while (text < text_end && line < line_end) {
        const char *next = text;
        while (next < text_end && strncmp(next, sep, strlen(sep)) != 0)
            next++;
        if (next >= text_end)
            break;
        const char *eol = memchr(line, '\n', (size_t)(line_end - line));
        if (!eol)
            eol = line_end;
        uint32_t count = 0;
        assert_mcl_ok(mcl_model_tokenize(model, text, (size_t)(next - text), 0, ids, 1024,
                                         &count));
        const char *p = line;
        uint32_t k = 0;
        int match = 1;
        while (p < eol) {
            char *endp;
            long v = strtol(p, &endp, 10);
            if (endp == p)
                break;
            match &= k < count && ids[k] == v;
            /* The negative control: the first id of case 0, plus one, must not match. */
            if (cases == 0 && k == 0)
                corrupt_caught = ids[0] != v + 1;
            k++;
            p = endp;
        }
        match &= k == count;
        wrong += !match;
        cases++;
        text = next + strlen(sep);
        line = eol + 1;
    }
    mcl_test_record("model tokenizer: the 46 reference cases", "cases whose ids differ", wrong,
                    0);
    mcl_test_record_bool("negative control: a corrupted reference id is caught", corrupt_caught);
    assert_true(cases >= 40);
    assert_int_equal(wrong, 0);
    assert_true(corrupt_caught);
    mcl_mapped_close(&inp);
    mcl_mapped_close(&out);
    /* BOS where the vocabulary asks for it, and the round trip. */
    const char *hello = "Hello world";
    uint32_t count = 0;
    assert_mcl_ok(mcl_model_tokenize(model, hello, strlen(hello), MCL_TOKENIZE_ADD_BOS, ids,
                                     1024, &count));
    assert_true(count > 1 && ids[0] == 1);
    char back[64];
    assert_mcl_ok(mcl_model_detokenize(model, ids, count, back, sizeof back, NULL));
    assert_string_equal(back, hello);
    mcl_model_close(model);
    undefine(&m);
}

/* A GGUF vocabulary of tests/data/vocab, mapped and parsed (its arrays are views into the
 * mapping). */
static void open_vocab(const char *name, mcl_mapped *file, mcl_gguf **g)
{
    char path[512], why[256];
    snprintf(path, sizeof path, "%s/vocab/%s", MCL_TEST_DATA_DIR, name);
    memset(file, 0, sizeof *file);
    assert_mcl_ok(mcl_mapped_open(path, file, why, sizeof why));
    assert_mcl_ok(mcl_gguf_parse(file->data, file->size, g, why, sizeof why));
}

/* The reference cases of <name>.inp on which the model's tokenizer and `reference` differ
 * (no flags); *cases receives how many there are. */
static int cases_differing(const mcl_model *model, const mcl_tokenizer *reference,
                           const char *name, int *cases)
{
    char path[512], why[256];
    snprintf(path, sizeof path, "%s/vocab/%s.inp", MCL_TEST_DATA_DIR, name);
    mcl_mapped inp = {0};
    assert_mcl_ok(mcl_mapped_open(path, &inp, why, sizeof why));
    const char *sep = "\n__ggml_vocab_test__\n";
    const char *text = (const char *)inp.data, *end = text + inp.size;
    int32_t a[1024], b[1024];
    int differing = 0;
    *cases = 0;
    while (text < end) {
        const char *next = text;
        while (next < end && strncmp(next, sep, strlen(sep)) != 0)
            next++;
        if (next >= end)
            break;
        uint32_t na = 0, nb = 0;
        size_t len = (size_t)(next - text);
        assert_mcl_ok(mcl_model_tokenize(model, text, len, 0, a, 1024, &na));
        assert_mcl_ok(mcl_tokenizer_encode(reference, text, len, 0, b, 1024, &nb));
        differing += na != nb || memcmp(a, b, na * sizeof *a) != 0;
        (*cases)++;
        text = next + strlen(sep);
    }
    mcl_mapped_close(&inp);
    return differing;
}

/* Write a file of text. */
static void write_text(const char *folder, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    write_file(path, text, strlen(text));
}

/* Write tokenizer.json of GPT-2's vocabulary into folder, merge `changed` (>= 0) with its
 * halves swapped. */
static void write_gpt2_json(const mcl_gguf *g, const char *folder, int64_t changed)
{
    tf_json_options o = {TF_PRE_BYTE_LEVEL, 0, changed, 0, -1};
    tf_buffer b = {0};
    char path[512];
    tf_tokenizer_json(g, &o, &b);
    snprintf(path, sizeof path, "%s/tokenizer.json", folder);
    tf_write_file(path, &b);
    free(b.data);
}

/* Write a byte_fallback BPE tokenizer.json (the form a SentencePiece model takes in
 * tokenizer.json, which the library refuses) numbering n tokens. */
static void write_byte_fallback_json(const char *folder, uint32_t n)
{
    tf_buffer b = {0};
    char path[512];
    tf_printf(&b, "{\"added_tokens\": [], \"normalizer\": null, \"pre_tokenizer\": null,\n"
                  " \"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {");
    for (uint32_t i = 0; i < n; i++)
        tf_printf(&b, "%s\"t%u\": %u", i ? ", " : "", i, i);
    tf_printf(&b, "}, \"merges\": []}}\n");
    snprintf(path, sizeof path, "%s/tokenizer.json", folder);
    tf_write_file(path, &b);
    free(b.data);
}

/* A checkpoint's tokenizer: tokenizer.json of GPT-2's vocabulary (written from the GGUF of
 * tests/data/vocab) tokenizes every reference case as that GGUF's tokenizer does, with BOS and
 * EOS from config.json and add_bos_token from tokenizer_config.json; a changed merge is
 * caught, and so is an embedding with fewer rows than the tokenizer has tokens. LLaMA's
 * tokenizer.model is read where there is no tokenizer.json, and in place of a byte_fallback
 * one that numbers as many tokens (not of one that numbers fewer). A tokenizer
 * file refused fails the open, naming the file and what it refuses. */
static void checkpoint_tokenizer(void **state)
{
    (void)state;
    mcl_mapped gpt2_file, llama_file;
    mcl_gguf *gpt2 = NULL, *llama = NULL;
    open_vocab("ggml-vocab-gpt-2.gguf", &gpt2_file, &gpt2);
    open_vocab("ggml-vocab-llama-spm.gguf", &llama_file, &llama);
    char why[256], folder[320], path[512];
    mcl_tokenizer *gpt2_ref = NULL, *llama_ref = NULL;
    assert_mcl_ok(mcl_tokenizer_from_gguf(gpt2, &gpt2_ref, why, sizeof why));
    assert_mcl_ok(mcl_tokenizer_from_gguf(llama, &llama_ref, why, sizeof why));
    mcl_model_desc desc = {.size = sizeof desc, .flags = MCL_MODEL_NO_WEIGHTS};
    mcl_model *model = NULL;
    model_def m;
    define(&m, 0);
    /* Negative control first: 300 embedding rows for GPT-2's 50257 tokens. */
    subfolder("hf-tokenizer-small", folder, sizeof folder);
    write_checkpoint(&m, folder, "llama");
    write_gpt2_json(gpt2, folder, -1);
    assert_int_equal(mcl_model_open(ctx, folder, &desc, &model), MCL_ERROR_BAD_FILE);
    assert_non_null(strstr(mcl_context_last_error(ctx), "50257 tokens"));
    /* A llama model whose embedding (bf16, tied head) has GPT-2's 50257 rows. */
    weight *embd = &m.w[0];
    free(embd->hf);
    embd->shape[0] = 50257;
    embd->type = MCL_GGML_BF16;
    embd->hf = mcl_test_random_floats(50257u * DIM, 11, -1.0f, 1.0f);
    assert_string_equal(m.w[m.count - 1].name, "output.weight");
    free(m.w[--m.count].hf);
    subfolder("hf-tokenizer", folder, sizeof folder);
    write_checkpoint(&m, folder, "llama");
    undefine(&m);
    write_gpt2_json(gpt2, folder, -1);
    assert_mcl_ok(mcl_model_open(ctx, folder, &desc, &model));
    mcl_model_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_string_equal(info.tokenizer, "gpt2");
    assert_string_equal(info.pre_tokenizer, "gpt-2");
    assert_int_equal(info.vocab, 50257);
    assert_int_equal(info.bos, 1); /* config.json's, where tokenizer.json names none */
    assert_int_equal(info.eos, 2); /* the first of config.json's [2, 3] */
    int cases = 0, differing = cases_differing(model, gpt2_ref, "ggml-vocab-gpt-2.gguf", &cases);
    mcl_test_record("checkpoint tokenizer.json (GPT-2) against the GGUF's tokenizer",
                    "reference cases that differ", differing, 0);
    assert_int_equal(cases, 46);
    assert_int_equal(differing, 0);
    int32_t ids[8];
    uint32_t n = 0;
    assert_mcl_ok(mcl_model_tokenize(model, "Hello", 5, MCL_TOKENIZE_ADD_BOS, ids, 8, &n));
    assert_true(n == 1 && ids[0] == 15496); /* no BOS asked for */
    mcl_model_close(model);
    /* tokenizer_config.json asks for BOS: config.json's id. */
    write_text(folder, "tokenizer_config.json",
               "{\"add_bos_token\": true, \"model_max_length\": 1024}");
    assert_mcl_ok(mcl_model_open(ctx, folder, &desc, &model));
    assert_mcl_ok(mcl_model_tokenize(model, "Hello", 5, MCL_TOKENIZE_ADD_BOS, ids, 8, &n));
    assert_true(n == 2 && ids[0] == 1 && ids[1] == 15496);
    mcl_model_close(model);
    write_text(folder, "tokenizer_config.json", "{\"add_bos_token\": \"yes\"}");
    assert_int_equal(mcl_model_open(ctx, folder, &desc, &model), MCL_ERROR_BAD_FILE);
    assert_non_null(strstr(mcl_context_last_error(ctx), "tokenizer_config.json"));
    write_text(folder, "tokenizer_config.json", "{\"add_bos_token\": null}");

    /* Negative control: merge 0 changed is caught through the model. */
    write_gpt2_json(gpt2, folder, 0);
    assert_mcl_ok(mcl_model_open(ctx, folder, &desc, &model));
    differing = cases_differing(model, gpt2_ref, "ggml-vocab-gpt-2.gguf", &cases);
    mcl_test_record_bool("negative control: a changed merge is caught", differing >= 1);
    assert_true(differing >= 1);
    mcl_model_close(model);
    /* A refused tokenizer.json fails the open, naming the file and the model type. */
    write_text(folder, "tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}");
    assert_int_equal(mcl_model_open(ctx, folder, &desc, &model), MCL_ERROR_UNSUPPORTED);
    assert_non_null(strstr(mcl_context_last_error(ctx), "tokenizer.json"));
    assert_non_null(strstr(mcl_context_last_error(ctx), "WordPiece"));
    write_text(folder, "tokenizer.json", "{\"model\": ");
    assert_int_equal(mcl_model_open(ctx, folder, &desc, &model), MCL_ERROR_BAD_FILE);

    /* tokenizer.model alone: LLaMA's vocabulary, every reference case as its GGUF's. */
    snprintf(path, sizeof path, "%s/tokenizer.json", folder);
    assert_int_equal(remove(path), 0);
    tf_spm_options so = {-1, -1, 2, 1};
    tf_buffer b = {0};
    tf_tokenizer_model(llama, &so, &b);
    snprintf(path, sizeof path, "%s/tokenizer.model", folder);
    tf_write_file(path, &b);
    assert_mcl_ok(mcl_model_open(ctx, folder, &desc, &model));
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_string_equal(info.tokenizer, "llama");
    differing = cases_differing(model, llama_ref, "ggml-vocab-llama-spm.gguf", &cases);
    mcl_test_record("checkpoint tokenizer.model (LLaMA) against the GGUF's tokenizer",
                    "reference cases that differ", differing, 0);
    assert_int_equal(differing, 0);
    mcl_model_close(model);
    /* In place of a byte_fallback tokenizer.json of as many tokens; not of fewer. */
    write_byte_fallback_json(folder, 32000);
    assert_mcl_ok(mcl_model_open(ctx, folder, &desc, &model));
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_string_equal(info.tokenizer, "llama");
    mcl_model_close(model);
    write_byte_fallback_json(folder, 31999);
    assert_int_equal(mcl_model_open(ctx, folder, &desc, &model), MCL_ERROR_UNSUPPORTED);
    assert_non_null(strstr(mcl_context_last_error(ctx), "cannot stand in"));
    /* A damaged tokenizer.model fails the open, naming the file. */
    snprintf(path, sizeof path, "%s/tokenizer.json", folder);
    assert_int_equal(remove(path), 0);
    snprintf(path, sizeof path, "%s/tokenizer.model", folder);
    b.len /= 2;
    tf_write_file(path, &b);
    free(b.data);
    assert_int_equal(mcl_model_open(ctx, folder, &desc, &model), MCL_ERROR_BAD_FILE);
    assert_non_null(strstr(mcl_context_last_error(ctx), "tokenizer.model"));

    mcl_tokenizer_free(gpt2_ref);
    mcl_tokenizer_free(llama_ref);
    mcl_gguf_free(gpt2);
    mcl_gguf_free(llama);
    mcl_mapped_close(&gpt2_file);
    mcl_mapped_close(&llama_file);
}

/* Files the loader refuses, each with its status and a message naming what it refuses; the
 * control (the same file undamaged) opens. */
static void refusals(void **state)
{
    (void)state;
    model_def m;
    define(&m, 0);
    mcl_model_desc desc = {.size = sizeof desc, .flags = MCL_MODEL_NO_WEIGHTS};
    mcl_model *model = NULL;
    char bad[320];
    snprintf(bad, sizeof bad, "%s/bad.gguf", dir);
    /* an architecture not read */
    write_gguf(&m, bad, "gemma", 3, 32);
    assert_int_equal(mcl_model_open(ctx, bad, &desc, &model), MCL_ERROR_UNSUPPORTED);
    assert_non_null(strstr(mcl_context_last_error(ctx), "llama, mistral, qwen2"));
    /* a missing file */
    assert_int_equal(mcl_model_open(ctx, "/nonexistent/x.gguf", &desc, &model), MCL_ERROR_IO);
    /* a truncated file */
    write_gguf(&m, bad, "llama", 3, 32);
    FILE *f = fopen(bad, "r+b");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), 200), 0);
    fclose(f);
    assert_int_equal(mcl_model_open(ctx, bad, &desc, &model), MCL_ERROR_BAD_FILE);
    /* a tensor type the library does not read: q4_1 */
    m.w[4].type = 3;
    write_gguf(&m, bad, "llama", 3, 32);
    mcl_model_desc load = {.size = sizeof load};
    assert_int_equal(mcl_model_open(ctx, bad, &load, &model), MCL_ERROR_UNSUPPORTED);
    assert_non_null(strstr(mcl_context_last_error(ctx), m.w[4].name));
    assert_mcl_ok(mcl_model_open(ctx, bad, &desc, &model)); /* described, not loaded */
    mcl_model_close(model);
    /* a tensor missing */
    m.w[4].type = MCL_GGML_F32;
    uint32_t count = m.count;
    m.count = count - 1; /* without output.weight: tied, fine */
    write_gguf(&m, bad, "llama", 3, 32);
    assert_mcl_ok(mcl_model_open(ctx, bad, &desc, &model));
    mcl_model_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_model_file_info(model, &info));
    assert_int_equal(info.tied_output, 1);
    mcl_model_close(model);
    m.count = count;
    weight saved = m.w[5];
    m.w[5] = m.w[count - 1];
    m.count = count - 1; /* without blk.0.attn_output.weight */
    write_gguf(&m, bad, "llama", 3, 32);
    assert_int_equal(mcl_model_open(ctx, bad, &desc, &model), MCL_ERROR_BAD_FILE);
    assert_non_null(strstr(mcl_context_last_error(ctx), "blk.0.attn_output.weight"));
    m.w[5] = saved;
    m.count = count;
    /* control */
    write_gguf(&m, bad, "llama", 3, 32);
    assert_mcl_ok(mcl_model_open(ctx, bad, &desc, &model));
    mcl_model_close(model);
    mcl_test_record_bool("refusals named; the undamaged control opens", 1);
    undefine(&m);
}

/* The architecture list in docs/models.md is the library's. */
static void documented_architectures(void **state)
{
    (void)state;
    FILE *f = fopen(MCL_TEST_DOCS_DIR "/models.md", "r");
    assert_non_null(f);
    char line[256];
    int in = 0;
    uint32_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "<!-- architectures -->"))
            in = 1;
        else if (strstr(line, "<!-- /architectures -->"))
            in = 0;
        else if (in && strncmp(line, "- ", 2) == 0) {
            line[strcspn(line, "\n")] = '\0';
            const char *name = mcl_model_architecture_name(n++);
            assert_non_null(name);
            assert_string_equal(line + 2, name);
        }
    }
    fclose(f);
    assert_null(mcl_model_architecture_name(n));
    assert_true(n > 0);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(documented_architectures),
        cmocka_unit_test(gguf_every_type),
        cmocka_unit_test(gguf_and_checkpoint_agree),
        cmocka_unit_test(weight_type_on_load),
        cmocka_unit_test(load_never_imports),
        cmocka_unit_test(budget_and_no_weights),
        cmocka_unit_test(qwen2_sharded),
        cmocka_unit_test(llama3_rope_scaling),
        cmocka_unit_test(tokenizer_through_model),
        cmocka_unit_test(checkpoint_tokenizer),
        cmocka_unit_test(refusals),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, setup, teardown));
}
