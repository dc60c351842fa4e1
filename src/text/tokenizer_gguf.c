/* A tokenizer from a GGUF file's tokenizer.ggml.* metadata: the keys llama.cpp reads
 * (llama-vocab.cpp, llama_vocab::impl::load), their types and defaults, turned into an
 * mcl_vocab_desc for mcl_tokenizer_create. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"
#include "core/alloc.h"

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

/* The pre-tokenizers taken, by the names llama.cpp gives them. */
static const struct {
    const char *name;
    mcl_pretok pre;
    int ignore_merges, add_bos; /* llama.cpp's settings for the name */
} known_pre[] = {
    {"gpt-2", MCL_PRETOK_GPT2, 0, 0},
    {"llama-bpe", MCL_PRETOK_LLAMA3, 1, 1},
    {"llama3", MCL_PRETOK_LLAMA3, 1, 1},
    {"llama-v3", MCL_PRETOK_LLAMA3, 1, 1},
    {"qwen2", MCL_PRETOK_QWEN2, 0, 0},
};

/* A string-valued key into a C string (cut to size); 1 when present and a string. */
static int get_string(const mcl_gguf *g, const char *key, char *out, size_t size, int *present)
{
    const mcl_gguf_kv *kv = mcl_gguf_find(g, key);
    mcl_gguf_str s;
    *present = kv != NULL;
    if (!kv || !mcl_gguf_get_str(kv, &s))
        return 0;
    size_t n = s.len < size - 1 ? (size_t)s.len : size - 1;
    memcpy(out, s.data, n);
    out[n] = '\0';
    for (size_t i = 0; i < n; i++) /* a name with a NUL or a control byte is printed safely */
        if ((unsigned char)out[i] < 0x20)
            out[i] = '?';
    return 1;
}

/* An array key of `elem` elements: NULL when absent; *bad when present of another shape or
 * with fewer than `min` elements. */
static const mcl_gguf_kv *get_array(const mcl_gguf *g, const char *key, mcl_gguf_type elem,
                                    uint64_t min, int *bad)
{
    const mcl_gguf_kv *kv = mcl_gguf_find(g, key);
    *bad = kv && (kv->type != MCL_GGUF_ARRAY || kv->elem_type != elem || kv->count < min);
    return kv;
}

/* A uint32 id key: 0 absent (id unchanged), 1 read, -1 present but not an id below n. */
static int get_id(const mcl_gguf *g, const char *key, uint32_t n, int32_t *id)
{
    const mcl_gguf_kv *kv = mcl_gguf_find(g, key);
    uint64_t v;
    if (!kv)
        return 0;
    if (!mcl_gguf_get_u64(kv, &v) || v >= n)
        return -1;
    *id = (int32_t)v;
    return 1;
}

/* A bool key: 0 absent (value unchanged), 1 read, -1 not a bool. */
static int get_flag(const mcl_gguf *g, const char *key, int *value)
{
    const mcl_gguf_kv *kv = mcl_gguf_find(g, key);
    if (!kv)
        return 0;
    return mcl_gguf_get_bool(kv, value) ? 1 : -1;
}

typedef struct arrays {
    const char **tokens;
    uint64_t *token_lens;
    float *scores;
    int32_t *types;
    const char **merges;
    uint64_t *merge_lens;
} arrays;

static void arrays_free(arrays *a)
{
    mcl_mem_free(a->tokens);
    mcl_mem_free(a->token_lens);
    mcl_mem_free(a->scores);
    mcl_mem_free(a->types);
    mcl_mem_free(a->merges);
    mcl_mem_free(a->merge_lens);
}

/* The strings of an array key as views. */
static mcl_status read_strings(const mcl_gguf *g, const mcl_gguf_kv *kv, uint64_t n,
                               const char ***texts, uint64_t **lens, char *why,
                               size_t why_size)
{
    *texts = mcl_mem_malloc((size_t)n * sizeof **texts);
    *lens = mcl_mem_malloc((size_t)n * sizeof **lens);
    if (!*texts || !*lens)
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        mcl_gguf_str s;
        if (!mcl_gguf_array_str(g, kv, i, &s))
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "%.*s[%llu] cannot be read", (int)kv->key.len, kv->key.data,
                                 (unsigned long long)i);
        (*texts)[i] = s.data ? s.data : "";
        (*lens)[i] = s.len;
    }
    return MCL_SUCCESS;
}

/* Scores (float32, or int32 as llama.cpp also takes) and token types. */
static mcl_status read_numbers(const mcl_gguf *g, uint32_t n, arrays *a, char *why,
                               size_t why_size)
{
    int bad = 0;
    const mcl_gguf_kv *kv = get_array(g, KEY_SCORES, MCL_GGUF_FLOAT32, n, &bad);
    if (kv && bad)
        kv = get_array(g, KEY_SCORES, MCL_GGUF_INT32, n, &bad);
    if (bad)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                             KEY_SCORES " is not an array of %u float32", n);
    if (kv) {
        a->scores = mcl_mem_malloc((size_t)n * sizeof *a->scores);
        if (!a->scores)
            return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
        for (uint32_t i = 0; i < n; i++) {
            double v = 0;
            int64_t iv = 0;
            if (kv->elem_type == MCL_GGUF_FLOAT32 ? !mcl_gguf_array_f64(kv, i, &v)
                                                  : !mcl_gguf_array_i64(kv, i, &iv))
                return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                     KEY_SCORES "[%u] cannot be read", i);
            a->scores[i] = kv->elem_type == MCL_GGUF_FLOAT32 ? (float)v : (float)iv;
        }
    }
    kv = get_array(g, KEY_TYPES, MCL_GGUF_INT32, n, &bad);
    if (bad)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                             KEY_TYPES " is not an array of %u int32", n);
    if (kv) {
        a->types = mcl_mem_malloc((size_t)n * sizeof *a->types);
        if (!a->types)
            return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
        for (uint32_t i = 0; i < n; i++) {
            int64_t v = 0;
            if (!mcl_gguf_array_i64(kv, i, &v) || v < 0 || v > MCL_TOKEN_BYTE)
                return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                     KEY_TYPES "[%u] is %lld (0 to 6 known)", i, (long long)v);
            a->types[i] = (int32_t)v;
        }
    }
    return MCL_SUCCESS;
}

/* The model and pre-tokenizer keys into d (SPM or BPE, the pre-tokenizer, its defaults). */
static mcl_status read_kind(const mcl_gguf *g, mcl_vocab_desc *d, char *pre_name,
                            size_t pre_size, char *why, size_t why_size)
{
    char model[64];
    int present = 0;
    if (!get_string(g, KEY_MODEL, model, sizeof model, &present))
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                             present ? KEY_MODEL " is not a string" : KEY_MODEL " is missing");
    pre_name[0] = '\0';
    if (strcmp(model, "llama") == 0) {
        d->kind = MCL_VOCAB_SPM;
        d->pre = MCL_PRETOK_NONE;
        d->add_bos = 1;
        d->add_space_prefix = 1;
        return MCL_SUCCESS;
    }
    if (strcmp(model, "gpt2") != 0)
        return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED,
                             "tokenizer model '%s' is not supported (\"llama\" and \"gpt2\" are)",
                             model);
    d->kind = MCL_VOCAB_BPE;
    if (!get_string(g, KEY_PRE, pre_name, pre_size, &present)) {
        if (present)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 KEY_PRE " is not a string");
        return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED,
                             KEY_PRE " is missing: llama.cpp then splits with its \"default\" "
                             "pre-tokenizer, which this library does not have");
    }
    for (size_t i = 0; i < sizeof known_pre / sizeof known_pre[0]; i++) {
        if (strcmp(pre_name, known_pre[i].name) == 0) {
            d->pre = known_pre[i].pre;
            d->ignore_merges = known_pre[i].ignore_merges;
            d->add_bos = known_pre[i].add_bos;
            return MCL_SUCCESS;
        }
    }
    if (strcmp(pre_name, "default") == 0)
        return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED,
                             "pre-tokenizer 'default' is not supported: llama.cpp splits such "
                             "text with a pipeline of four regexes that is not GPT-2's");
    return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED,
                         "pre-tokenizer '%s' is not supported (\"gpt-2\", \"llama-bpe\" and "
                         "\"qwen2\" are)",
                         pre_name);
}

/* Special ids and flags; llama.cpp's defaults where a key is absent. */
static mcl_status read_specials(const mcl_gguf *g, mcl_vocab_desc *d, char *why,
                                size_t why_size)
{
    int spm = d->kind == MCL_VOCAB_SPM;
    d->bos = spm ? 1 : -1;
    d->eos = spm ? 2 : -1;
    d->unk = spm ? 0 : -1;
    d->pad = -1;
    int32_t *ids[4] = {&d->bos, &d->eos, &d->unk, &d->pad};
    static const char *const keys[4] = {
        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"};
    for (int k = 0; k < 4; k++) {
        if (*ids[k] >= (int32_t)d->n_tokens) /* a default past a small vocabulary */
            *ids[k] = -1;
        if (get_id(g, keys[k], d->n_tokens, ids[k]) < 0)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "%s is not a token id below %u", keys[k], d->n_tokens);
    }
    static const char *const flag_keys[3] = {"tokenizer.ggml.add_bos_token",
                                             "tokenizer.ggml.add_eos_token",
                                             "tokenizer.ggml.add_space_prefix"};
    int *flags[3] = {&d->add_bos, &d->add_eos, &d->add_space_prefix};
    for (int k = 0; k < 3; k++) {
        if (k == 2 && !spm)
            break; /* the space prefix is SentencePiece's */
        if (get_flag(g, flag_keys[k], flags[k]) < 0)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "%s is not a bool", flag_keys[k]);
    }
    if (d->add_bos && d->bos < 0)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                             "add_bos_token is true but there is no bos_token_id");
    if (d->add_eos && d->eos < 0)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                             "add_eos_token is true but there is no eos_token_id");
    return MCL_SUCCESS;
}

mcl_status mcl_tokenizer_from_gguf(const mcl_gguf *g, mcl_tokenizer **out, char *why,
                                   size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out || !g)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "g or out is NULL");
    *out = NULL;
    mcl_vocab_desc d = {0};
    char pre_name[32];
    arrays a = {0};
    mcl_status s = read_kind(g, &d, pre_name, sizeof pre_name, why, why_size);
    if (s != MCL_SUCCESS)
        return s;
    d.pre_name = pre_name;

    int bad = 0;
    const mcl_gguf_kv *tokens = get_array(g, KEY_TOKENS, MCL_GGUF_STRING, 1, &bad);
    if (!tokens || bad || tokens->count > INT32_MAX / 4) {
        s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                          KEY_TOKENS " is %s", tokens ? "not an array of 1 to 2^29 strings"
                                                      : "missing");
        goto done;
    }
    d.n_tokens = (uint32_t)tokens->count;
    s = read_strings(g, tokens, d.n_tokens, &a.tokens, &a.token_lens, why, why_size);
    if (s == MCL_SUCCESS)
        s = read_numbers(g, d.n_tokens, &a, why, why_size);
    if (s != MCL_SUCCESS)
        goto done;
    if (d.kind == MCL_VOCAB_BPE) {
        const mcl_gguf_kv *merges = get_array(g, KEY_MERGES, MCL_GGUF_STRING, 0, &bad);
        if (!merges || bad || merges->count > UINT32_MAX - 1) {
            s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, KEY_MERGES " is %s",
                              merges ? "not an array of strings" : "missing");
            goto done;
        }
        d.n_merges = (uint32_t)merges->count;
        s = read_strings(g, merges, d.n_merges, &a.merges, &a.merge_lens, why, why_size);
        if (s != MCL_SUCCESS)
            goto done;
    }
    s = read_specials(g, &d, why, why_size);
    if (s != MCL_SUCCESS)
        goto done;
    d.tokens = a.tokens;
    d.token_lens = a.token_lens;
    d.scores = a.scores;
    d.types = a.types;
    d.merges = a.merges;
    d.merge_lens = a.merge_lens;
    s = mcl_tokenizer_create(&d, out, why, why_size);
done:
    arrays_free(&a);
    return s;
}
