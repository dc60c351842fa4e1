/* A tokenizer from a Hugging Face tokenizer.json (the tokenizers library's serialization), read
 * with the project's JSON parser: a byte-level BPE model, its added tokens, the pre-tokenizer
 * recognised by comparing the file's description with what the gpt-2, llama-3 and qwen2 files
 * carry, BOS and EOS from a TemplateProcessing post-processor. What the library does not
 * implement is refused by name. Also the special ids of a checkpoint's tokenizer set from its
 * config.json and tokenizer_config.json. */
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "text/text_internal.h"
#include "core/alloc.h"

/* The split regexes of the pre-tokenizers the library implements, as the files carry them
 * (pretok.c has the same regexes): GPT-2's is the one the ByteLevel pre-tokenizer applies
 * itself when use_regex is true; llama 3's and Qwen2's come as a Split before a ByteLevel. */
#define GPT2_REGEX                                                                             \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define LLAMA3_REGEX                                                                           \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "                \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define QWEN2_REGEX                                                                            \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                     \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* Regexes by the pre-tokenizer they are, with llama.cpp's name for it. */
static const struct {
    const char *regex;
    mcl_pretok pre;
    const char *name;
} known_regex[] = {
    {GPT2_REGEX, MCL_PRETOK_GPT2, "gpt-2"},
    {LLAMA3_REGEX, MCL_PRETOK_LLAMA3, "llama-bpe"},
    {QWEN2_REGEX, MCL_PRETOK_QWEN2, "qwen2"},
};

#define FAIL(status, ...) mcl_text_fail(why, why_size, (status), __VA_ARGS__)
#define MALFORMED(...) FAIL(MCL_ERROR_INVALID_ARGUMENT, __VA_ARGS__)
#define REFUSED(...) FAIL(MCL_ERROR_UNSUPPORTED, __VA_ARGS__)

/* Present and not null. */
static int given(const mcl_json_value *v)
{
    return v && !mcl_json_is_null(v);
}

/* A string value for a message: at most 48 bytes, control bytes as '?'; "(none)"
 * for another kind. */
static const char *shown(const mcl_json_value *v, char out[52])
{
    size_t len = 0;
    const char *s = mcl_json_string(v, &len);
    if (!s)
        return "(none)";
    size_t n = len < 48 ? len : 48;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
    memcpy(out + n, len > n ? "..." : "", len > n ? 4 : 1);
    return out;
}

/* The "type" of a component, "" when it has none that is a string. */
static const char *type_of(const mcl_json_value *v)
{
    const char *t = mcl_json_string(mcl_json_find(v, "type"), NULL);
    return t ? t : "";
}

/* A bool member: `def` when absent or null; -1 when of another kind. */
static int flag(const mcl_json_value *obj, const char *key, int def)
{
    const mcl_json_value *v = mcl_json_find(obj, key);
    int b = def;
    if (given(v) && !mcl_json_bool(v, &b))
        return -1;
    return b;
}

/* A ByteLevel pre-tokenizer: its split (GPT-2's regex, or none) and no prefix space. */
static mcl_status byte_level(const mcl_json_value *v, int want_regex, char *why,
                             size_t why_size)
{
    int prefix = flag(v, "add_prefix_space", -2), regex = flag(v, "use_regex", 1);
    if (prefix < 0 || regex < 0) /* -2: absent, and the tokenizers library requires it */
        return MALFORMED("pre_tokenizer ByteLevel: add_prefix_space must be a bool, and "
                         "use_regex a bool or absent");
    if (prefix)
        return REFUSED("pre-tokenizer ByteLevel with add_prefix_space is not supported");
    if (regex != want_regex)
        return REFUSED("pre-tokenizer ByteLevel with use_regex %s %s is not supported",
                       regex ? "true" : "false", want_regex ? "alone" : "after a Split");
    return MCL_SUCCESS;
}

/* The pre-tokenizer: ByteLevel alone (GPT-2's regex), or Sequence [Split (a known regex,
 * isolated), ByteLevel without its regex]. */
static mcl_status read_pre(const mcl_json_value *root, mcl_vocab_desc *d, char *why,
                           size_t why_size)
{
    const mcl_json_value *pre = mcl_json_find(root, "pre_tokenizer");
    char text[52];
    if (!given(pre))
        return REFUSED("a BPE model without a pre-tokenizer is not supported (byte-level BPE "
                       "is)");
    if (mcl_json_kind_of(pre) != MCL_JSON_OBJECT)
        return MALFORMED("pre_tokenizer is %s, not an object",
                         mcl_json_kind_name(mcl_json_kind_of(pre)));
    if (strcmp(type_of(pre), "ByteLevel") == 0) {
        d->pre = MCL_PRETOK_GPT2;
        d->pre_name = "gpt-2";
        return byte_level(pre, 1, why, why_size);
    }
    const mcl_json_value *list = mcl_json_find(pre, "pretokenizers");
    const mcl_json_value *split = mcl_json_at(list, 0), *last = mcl_json_at(list, 1);
    if (strcmp(type_of(pre), "Sequence") != 0 || mcl_json_count(list) != 2 ||
        strcmp(type_of(split), "Split") != 0 || strcmp(type_of(last), "ByteLevel") != 0) {
        if (strcmp(type_of(pre), "Sequence") != 0)
            return REFUSED("pre-tokenizer %s is not supported (ByteLevel and llama 3's and "
                           "Qwen2's Split + ByteLevel are)", shown(mcl_json_find(pre, "type"),
                                                                  text));
        return REFUSED("pre-tokenizer Sequence of %u (%s first) is not supported (a Split "
                       "then a ByteLevel is)", mcl_json_count(list),
                       shown(mcl_json_find(split, "type"), text));
    }
    const mcl_json_value *regex = mcl_json_find(mcl_json_find(split, "pattern"), "Regex");
    size_t len = 0;
    const char *r = mcl_json_string(regex, &len);
    if (!r)
        return REFUSED("pre-tokenizer Split without a pattern Regex is not supported");
    if (!mcl_json_string_eq(mcl_json_find(split, "behavior"), "Isolated") ||
        flag(split, "invert", 0) != 0)
        return REFUSED("pre-tokenizer Split other than Isolated, not inverted, is not "
                       "supported");
    for (size_t i = 0; i < sizeof known_regex / sizeof known_regex[0]; i++) {
        if (strlen(known_regex[i].regex) == len && memcmp(known_regex[i].regex, r, len) == 0) {
            d->pre = known_regex[i].pre;
            d->pre_name = known_regex[i].name;
            return byte_level(last, 0, why, why_size);
        }
    }
    return REFUSED("pre-tokenizer Split with the regex \"%s\" is not supported (GPT-2's, "
                   "llama 3's and Qwen2's are)", shown(regex, text));
}

/* The normalizer (none, or NFC: accepted and not applied, as llama.cpp does) and the decoder
 * (none or ByteLevel). */
static mcl_status read_normalizer_decoder(const mcl_json_value *root, char *why,
                                          size_t why_size)
{
    const mcl_json_value *norm = mcl_json_find(root, "normalizer");
    const mcl_json_value *dec = mcl_json_find(root, "decoder");
    char text[52];
    if (given(norm) && strcmp(type_of(norm), "NFC") != 0)
        return REFUSED("normalizer %s is not supported (none and NFC are)",
                       shown(mcl_json_find(norm, "type"), text));
    if (given(dec) && strcmp(type_of(dec), "ByteLevel") != 0)
        return REFUSED("decoder %s is not supported (ByteLevel is)",
                       shown(mcl_json_find(dec, "type"), text));
    return MCL_SUCCESS;
}

/* A TemplateProcessing's single-sequence template: [special] $A [special] gives BOS and EOS
 * (each special token of one id in its special_tokens table). */
static mcl_status read_template(const mcl_json_value *tp, mcl_vocab_desc *d, char *why,
                                size_t why_size)
{
    const mcl_json_value *single = mcl_json_find(tp, "single");
    const mcl_json_value *table = mcl_json_find(tp, "special_tokens");
    if (mcl_json_kind_of(single) != MCL_JSON_ARRAY)
        return MALFORMED("post_processor TemplateProcessing: \"single\" is %s, not an array",
                         mcl_json_kind_name(mcl_json_kind_of(single)));
    int seen_a = 0;
    for (uint32_t i = 0; i < mcl_json_count(single); i++) {
        const mcl_json_value *item = mcl_json_at(single, i);
        const mcl_json_value *seq = mcl_json_find(item, "Sequence");
        if (seq) {
            if (seen_a || !mcl_json_string_eq(mcl_json_find(seq, "id"), "A"))
                return REFUSED("post-processor template other than [special] $A [special] "
                               "is not supported");
            seen_a = 1;
            continue;
        }
        size_t len = 0;
        const char *name = mcl_json_string(
            mcl_json_find(mcl_json_find(item, "SpecialToken"), "id"), &len);
        const mcl_json_value *ids = mcl_json_find(mcl_json_find_n(table, name, len), "ids");
        int64_t id = -1;
        if (!name || mcl_json_count(ids) != 1 || !mcl_json_int(mcl_json_at(ids, 0), &id) ||
            id < 0 || id > INT32_MAX)
            return MALFORMED("post_processor TemplateProcessing: single[%u] is not a special "
                             "token of one id in special_tokens", i);
        if (seen_a ? d->add_eos : (i > 0))
            return REFUSED("post-processor template other than [special] $A [special] is "
                           "not supported");
        if (seen_a) {
            d->eos = (int32_t)id;
            d->add_eos = 1;
        } else {
            d->bos = (int32_t)id;
            d->add_bos = 1;
        }
    }
    if (!seen_a)
        return REFUSED("post-processor template without $A is not supported");
    return MCL_SUCCESS;
}

/* The post-processor: none, ByteLevel, TemplateProcessing, or a Sequence of these. */
static mcl_status read_post(const mcl_json_value *root, mcl_vocab_desc *d, char *why,
                            size_t why_size)
{
    const mcl_json_value *post = mcl_json_find(root, "post_processor");
    if (!given(post))
        return MCL_SUCCESS;
    const mcl_json_value *list = mcl_json_find(post, "processors");
    int sequence = strcmp(type_of(post), "Sequence") == 0;
    uint32_t n = sequence ? mcl_json_count(list) : 1;
    char text[52];
    for (uint32_t i = 0; i < n; i++) {
        const mcl_json_value *p = sequence ? mcl_json_at(list, i) : post;
        if (strcmp(type_of(p), "ByteLevel") == 0)
            continue;
        if (strcmp(type_of(p), "TemplateProcessing") != 0)
            return REFUSED("post-processor %s is not supported (ByteLevel and "
                           "TemplateProcessing are)", shown(mcl_json_find(p, "type"), text));
        mcl_status s = read_template(p, d, why, why_size);
        if (s != MCL_SUCCESS)
            return s;
    }
    return MCL_SUCCESS;
}

/* The model's options that change what BPE does: those the library has not are refused. */
static mcl_status read_model_kind(const mcl_json_value *model, mcl_vocab_desc *d, char *why,
                                  size_t why_size)
{
    char text[52];
    const mcl_json_value *type = mcl_json_find(model, "type");
    if (mcl_json_kind_of(model) != MCL_JSON_OBJECT)
        return MALFORMED("\"model\" is %s, not an object",
                         mcl_json_kind_name(mcl_json_kind_of(model)));
    if (!mcl_json_string(type, NULL))
        return MALFORMED("model.type is %s, not a string",
                         mcl_json_kind_name(mcl_json_kind_of(type)));
    if (!mcl_json_string_eq(type, "BPE"))
        return REFUSED("model type %s is not supported (byte-level BPE is)", shown(type, text));
    if (flag(model, "byte_fallback", 0) != 0)
        return REFUSED("byte_fallback BPE (SentencePiece-style BPE in tokenizer.json) is not "
                       "supported (a SentencePiece tokenizer.model is)");
    double dropout = 0;
    const mcl_json_value *v = mcl_json_find(model, "dropout");
    if (given(v) && (!mcl_json_number(v, &dropout) || dropout != 0))
        return REFUSED("BPE with dropout is not supported");
    static const char *const affixes[2] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int k = 0; k < 2; k++) {
        size_t len = 0;
        v = mcl_json_find(model, affixes[k]);
        if (given(v) && (!mcl_json_string(v, &len) || len != 0))
            return REFUSED("BPE with a %s is not supported", affixes[k]);
    }
    int ignore = flag(model, "ignore_merges", 0);
    if (ignore < 0)
        return MALFORMED("model.ignore_merges is not a bool");
    d->kind = MCL_VOCAB_BPE;
    d->ignore_merges = ignore;
    return MCL_SUCCESS;
}

/* What the tokens and merges are read into. */
typedef struct hf_arrays {
    const char **tokens;
    uint64_t *token_lens;
    int32_t *types;
    const char **merges;
    uint64_t *merge_lens;
    char *pool; /* merges given as pairs, joined by a space */
} hf_arrays;

static void hf_arrays_free(hf_arrays *a)
{
    mcl_mem_free(a->tokens);
    mcl_mem_free(a->token_lens);
    mcl_mem_free(a->types);
    mcl_mem_free(a->merges);
    mcl_mem_free(a->merge_lens);
    mcl_mem_free(a->pool);
}

/* A token id member: 1 with *id, 0 when not an integer in [0, 2^29). */
static int token_id(const mcl_json_value *v, int64_t *id)
{
    return mcl_json_int(v, id) && *id >= 0 && *id < INT32_MAX / 4;
}

/* The largest id of model.vocab and added_tokens into *top, each id checked. */
static mcl_status largest_id(const mcl_json_value *vocab, const mcl_json_value *added,
                             int64_t *top, char *why, size_t why_size)
{
    int64_t id;
    *top = -1;
    if (mcl_json_kind_of(vocab) != MCL_JSON_OBJECT || mcl_json_count(vocab) == 0)
        return MALFORMED("model.vocab is not an object of tokens");
    if (given(added) && mcl_json_kind_of(added) != MCL_JSON_ARRAY)
        return MALFORMED("added_tokens is not an array");
    for (uint32_t i = 0; i < mcl_json_count(vocab); i++) {
        if (!token_id(mcl_json_at(vocab, i), &id))
            return MALFORMED("model.vocab[\"%.48s\"] is not a token id (an integer below 2^29)",
                             mcl_json_key(mcl_json_at(vocab, i), NULL));
        *top = id > *top ? id : *top;
    }
    for (uint32_t i = 0; i < mcl_json_count(added); i++) {
        if (!token_id(mcl_json_find(mcl_json_at(added, i), "id"), &id))
            return MALFORMED("added_tokens[%u].id is not a token id (an integer below 2^29)", i);
        *top = id > *top ? id : *top;
    }
    return MCL_SUCCESS;
}

/* model.vocab and added_tokens into token arrays indexed by id (every id from 0 to the
 * largest given exactly once, an added token that is in the vocabulary under the same id and
 * text excepted). */
static mcl_status read_tokens(const mcl_json_value *vocab, const mcl_json_value *added,
                              mcl_vocab_desc *d, hf_arrays *a, char *why, size_t why_size)
{
    uint32_t nv = mcl_json_count(vocab), na = mcl_json_count(added);
    int64_t id, top = -1;
    mcl_status s = largest_id(vocab, added, &top, why, why_size);
    if (s != MCL_SUCCESS)
        return s;
    if ((uint64_t)top >= (uint64_t)nv + na)
        return MALFORMED("token id %lld is larger than the %u tokens of model.vocab and "
                         "added_tokens can number", (long long)top, nv + na);
    size_t n = (size_t)top + 1;
    a->tokens = mcl_mem_calloc(n, sizeof *a->tokens);
    a->token_lens = mcl_mem_calloc(n, sizeof *a->token_lens);
    a->types = mcl_mem_malloc(n * sizeof *a->types);
    if (!a->tokens || !a->token_lens || !a->types)
        return FAIL(MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    for (uint32_t i = 0; i < nv; i++) {
        const mcl_json_value *v = mcl_json_at(vocab, i);
        size_t len = 0;
        const char *text = mcl_json_key(v, &len);
        mcl_json_int(v, &id);
        if (a->tokens[id])
            return MALFORMED("model.vocab gives id %lld to two tokens", (long long)id);
        a->tokens[id] = text;
        a->token_lens[id] = len;
        a->types[id] = MCL_TOKEN_NORMAL;
    }
    for (uint32_t i = 0; i < na; i++) {
        const mcl_json_value *t = mcl_json_at(added, i);
        size_t len = 0;
        const char *text = mcl_json_string(mcl_json_find(t, "content"), &len);
        int special = flag(t, "special", 0);
        mcl_json_int(mcl_json_find(t, "id"), &id);
        if (!text || special < 0)
            return MALFORMED("added_tokens[%u]: content must be a string, special a bool", i);
        static const char *const options[3] = {"lstrip", "rstrip", "single_word"};
        for (int k = 0; k < 3; k++)
            if (flag(t, options[k], 0) != 0)
                return REFUSED("added token '%.48s' with %s is not supported", text,
                               options[k]);
        if (a->tokens[id] && (a->types[id] != MCL_TOKEN_NORMAL || a->token_lens[id] != len ||
                              memcmp(a->tokens[id], text, len) != 0))
            return MALFORMED("added_tokens[%u] '%.48s' has the id %lld of another token", i,
                             text, (long long)id);
        a->tokens[id] = text;
        a->token_lens[id] = len;
        a->types[id] = special ? MCL_TOKEN_CONTROL : MCL_TOKEN_USER_DEFINED;
    }
    for (size_t i = 0; i < n; i++)
        if (!a->tokens[i])
            return MALFORMED("token id %zu is in neither model.vocab nor added_tokens", i);
    d->n_tokens = (uint32_t)n;
    d->tokens = a->tokens;
    d->token_lens = a->token_lens;
    d->types = a->types;
    return MCL_SUCCESS;
}

/* model.merges, strings "left right" or pairs ["left", "right"], in rank order. */
static mcl_status read_merges(const mcl_json_value *merges, mcl_vocab_desc *d, hf_arrays *a,
                              char *why, size_t why_size)
{
    uint32_t n = mcl_json_count(merges);
    if (mcl_json_kind_of(merges) != MCL_JSON_ARRAY)
        return MALFORMED("model.merges is %s, not an array",
                         mcl_json_kind_name(mcl_json_kind_of(merges)));
    size_t pool = 0;
    for (uint32_t r = 0; r < n; r++) {
        const mcl_json_value *m = mcl_json_at(merges, r);
        size_t l0 = 0, l1 = 0;
        if (mcl_json_string(m, NULL))
            continue;
        if (mcl_json_count(m) != 2 || mcl_json_kind_of(m) != MCL_JSON_ARRAY ||
            !mcl_json_string(mcl_json_at(m, 0), &l0) || !mcl_json_string(mcl_json_at(m, 1), &l1))
            return MALFORMED("model.merges[%u] is neither a string nor a pair of strings", r);
        pool += l0 + l1 + 1; /* below the document's size: no overflow */
    }
    a->merges = mcl_mem_malloc((n ? n : 1) * sizeof *a->merges);
    a->merge_lens = mcl_mem_malloc((n ? n : 1) * sizeof *a->merge_lens);
    a->pool = mcl_mem_malloc(pool ? pool : 1);
    if (!a->merges || !a->merge_lens || !a->pool)
        return FAIL(MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    size_t at = 0;
    for (uint32_t r = 0; r < n; r++) {
        const mcl_json_value *m = mcl_json_at(merges, r);
        size_t len = 0, l0 = 0, l1 = 0;
        const char *s = mcl_json_string(m, &len);
        if (!s) {
            const char *left = mcl_json_string(mcl_json_at(m, 0), &l0);
            const char *right = mcl_json_string(mcl_json_at(m, 1), &l1);
            s = a->pool + at;
            len = l0 + l1 + 1;
            memcpy(a->pool + at, left, l0);
            a->pool[at + l0] = ' ';
            memcpy(a->pool + at + l0 + 1, right, l1);
            at += len;
        }
        a->merges[r] = s;
        a->merge_lens[r] = len;
    }
    d->n_merges = n;
    d->merges = a->merges;
    d->merge_lens = a->merge_lens;
    return MCL_SUCCESS;
}

/* model.unk_token: the id of the token it names, or none. */
static mcl_status read_unk(const mcl_json_value *model, const mcl_vocab_desc *d, int32_t *unk,
                           char *why, size_t why_size)
{
    const mcl_json_value *v = mcl_json_find(model, "unk_token");
    size_t len = 0;
    const char *name = mcl_json_string(v, &len);
    *unk = -1;
    if (!given(v))
        return MCL_SUCCESS;
    for (uint32_t i = 0; name && i < d->n_tokens; i++) {
        if (d->token_lens[i] == len && memcmp(d->tokens[i], name, len) == 0) {
            *unk = (int32_t)i;
            return MCL_SUCCESS;
        }
    }
    return MALFORMED("model.unk_token is not the text of a token");
}

/* The document parsed into *doc, or the parser's status with its message. */
static mcl_status parse(const char *json, size_t len, mcl_json **doc, char *why,
                        size_t why_size)
{
    char parse_why[200];
    mcl_status s = mcl_json_parse(json, len, doc, parse_why, sizeof parse_why);
    return s == MCL_SUCCESS ? s : FAIL(s, "not JSON: %s", parse_why);
}

mcl_status mcl_tokenizer_from_hf_json(const char *json, size_t len, mcl_tokenizer **out,
                                      char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out || (!json && len))
        return MALFORMED("json or out is NULL");
    *out = NULL;
    mcl_json *doc = NULL;
    mcl_status s = parse(json, len, &doc, why, why_size);
    if (s != MCL_SUCCESS)
        return s;
    hf_arrays a = {0};
    mcl_vocab_desc d = {0};
    d.bos = d.eos = d.pad = -1;
    const mcl_json_value *root = mcl_json_root(doc);
    const mcl_json_value *model = mcl_json_find(root, "model");
    if (mcl_json_kind_of(root) != MCL_JSON_OBJECT)
        s = MALFORMED("the document is not an object");
    if (s == MCL_SUCCESS)
        s = read_model_kind(model, &d, why, why_size);
    if (s == MCL_SUCCESS)
        s = read_normalizer_decoder(root, why, why_size);
    if (s == MCL_SUCCESS)
        s = read_pre(root, &d, why, why_size);
    if (s == MCL_SUCCESS)
        s = read_post(root, &d, why, why_size);
    if (s == MCL_SUCCESS)
        s = read_tokens(mcl_json_find(model, "vocab"), mcl_json_find(root, "added_tokens"), &d,
                        &a, why, why_size);
    if (s == MCL_SUCCESS)
        s = read_merges(mcl_json_find(model, "merges"), &d, &a, why, why_size);
    if (s == MCL_SUCCESS)
        s = read_unk(model, &d, &d.unk, why, why_size);
    if (s == MCL_SUCCESS)
        s = mcl_tokenizer_create(&d, out, why, why_size);
    hf_arrays_free(&a);
    mcl_json_free(doc);
    return s;
}

mcl_status mcl_tokenizer_hf_json_count(const char *json, size_t len, uint32_t *count,
                                       char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!count || (!json && len))
        return MALFORMED("json or count is NULL");
    *count = 0;
    mcl_json *doc = NULL;
    int64_t top = -1;
    mcl_status s = parse(json, len, &doc, why, why_size);
    if (s != MCL_SUCCESS)
        return s;
    const mcl_json_value *root = mcl_json_root(doc);
    s = largest_id(mcl_json_find(mcl_json_find(root, "model"), "vocab"),
                   mcl_json_find(root, "added_tokens"), &top, why, why_size);
    *count = s == MCL_SUCCESS ? (uint32_t)(top + 1) : 0;
    mcl_json_free(doc);
    return s;
}

mcl_status mcl_tokenizer_set_specials(mcl_tokenizer *t, int32_t bos, int32_t eos, int add_bos,
                                      int add_eos, char *why, size_t why_size)
{
    if (!t)
        return MALFORMED("t is NULL");
    const int32_t ids[2] = {bos, eos};
    for (int k = 0; k < 2; k++)
        if (ids[k] < -2 || ids[k] >= (int64_t)t->n_tokens)
            return MALFORMED("%s id %d is not a token of the %u", k ? "EOS" : "BOS",
                             (int)ids[k], t->n_tokens);
    int32_t new_bos = bos == -2 ? t->bos : bos, new_eos = eos == -2 ? t->eos : eos;
    int new_add_bos = add_bos < 0 ? t->add_bos : add_bos != 0;
    int new_add_eos = add_eos < 0 ? t->add_eos : add_eos != 0;
    if (new_add_bos && new_bos < 0)
        return MALFORMED("BOS is to be added but there is no BOS id");
    if (new_add_eos && new_eos < 0)
        return MALFORMED("EOS is to be added but there is no EOS id");
    t->bos = new_bos;
    t->eos = new_eos;
    t->add_bos = new_add_bos;
    t->add_eos = new_add_eos;
    return MCL_SUCCESS;
}
