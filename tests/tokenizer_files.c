/* Hugging Face tokenizer files written from a GGUF vocabulary (tokenizer_files.h). */
#include "tokenizer_files.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The split regexes as the published tokenizer.json files spell them (JSON text, so each
 * backslash of the regex is written twice). */
static const char llama3_regex_json[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+";
static const char qwen2_regex_json[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| "
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+";

void tf_put(tf_buffer *b, const void *bytes, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len + 1)
            cap *= 2;
        b->data = realloc(b->data, cap);
        assert_non_null(b->data);
        b->cap = cap;
    }
    if (len)
        memcpy(b->data + b->len, bytes, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void tf_printf(tf_buffer *b, const char *fmt, ...)
{
    char text[1024];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    assert_true(n >= 0 && (size_t)n < sizeof text);
    tf_put(b, text, (size_t)n);
}

void tf_write_file(const char *path, const tf_buffer *b)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b->data, 1, b->len, f), b->len);
    assert_int_equal(fclose(f), 0);
}

/* A JSON string literal of `len` bytes (quotes, backslashes and control bytes escaped). */
static void put_json_string(tf_buffer *b, const char *s, size_t len)
{
    tf_put(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            tf_printf(b, "\\%c", c);
        else if (c < 0x20)
            tf_printf(b, "\\u%04x", c);
        else
            tf_put(b, &s[i], 1);
    }
    tf_put(b, "\"", 1);
}

static mcl_gguf_str gguf_string_at(const mcl_gguf *g, const mcl_gguf_kv *kv, uint64_t i)
{
    mcl_gguf_str s = {0};
    assert_true(mcl_gguf_array_str(g, kv, i, &s));
    return s;
}

static int64_t gguf_int_at(const mcl_gguf_kv *kv, uint64_t i)
{
    int64_t v = 0;
    assert_true(mcl_gguf_array_i64(kv, i, &v));
    return v;
}

static void put_pre_tokenizer(tf_buffer *b, tf_pre pre)
{
    if (pre == TF_PRE_BYTE_LEVEL) {
        tf_printf(b, "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                     "\"trim_offsets\": true, \"use_regex\": true},\n");
        return;
    }
    tf_printf(b, "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [\n"
                 "    {\"type\": \"Split\", \"pattern\": {\"Regex\": \"%s\"}, "
                 "\"behavior\": \"Isolated\", \"invert\": false},\n"
                 "    {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                 "\"trim_offsets\": false, \"use_regex\": false}]},\n",
              pre == TF_PRE_LLAMA3 ? llama3_regex_json : qwen2_regex_json);
}

void tf_tokenizer_json(const mcl_gguf *g, const tf_json_options *o, tf_buffer *out)
{
    const mcl_gguf_kv *tokens = mcl_gguf_find(g, "tokenizer.ggml.tokens");
    const mcl_gguf_kv *types = mcl_gguf_find(g, "tokenizer.ggml.token_type");
    const mcl_gguf_kv *merges = mcl_gguf_find(g, "tokenizer.ggml.merges");
    assert_true(tokens && types && merges);
    tf_printf(out, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n"
                   "  \"added_tokens\": [");
    int first = 1;
    for (uint64_t i = 0; i < tokens->count; i++) {
        int64_t type = gguf_int_at(types, i);
        if (type != 3 && type != 4) /* control, user-defined */
            continue;
        mcl_gguf_str s = gguf_string_at(g, tokens, i);
        tf_printf(out, "%s\n    {\"id\": %llu, \"content\": ", first ? "" : ",",
                  (unsigned long long)i);
        put_json_string(out, s.data, (size_t)s.len);
        tf_printf(out, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
                       "\"normalized\": %s, \"special\": %s}",
                  type == 3 ? "false" : "true", type == 3 ? "true" : "false");
        first = 0;
    }
    tf_printf(out, "\n  ],\n  \"normalizer\": null,\n");
    put_pre_tokenizer(out, o->pre);
    if (o->bos >= 0) {
        mcl_gguf_str s = gguf_string_at(g, tokens, (uint64_t)o->bos);
        tf_buffer name = {0};
        put_json_string(&name, s.data, (size_t)s.len);
        tf_printf(out, "  \"post_processor\": {\"type\": \"Sequence\", \"processors\": [\n"
                       "    {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                       "\"trim_offsets\": false, \"use_regex\": true},\n"
                       "    {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                       "{\"id\": %s, \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", "
                       "\"type_id\": 0}}],\n     \"pair\": [{\"Sequence\": {\"id\": \"A\", "
                       "\"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}],\n"
                       "     \"special_tokens\": {%s: {\"id\": %s, \"ids\": [%lld], "
                       "\"tokens\": [%s]}}}]},\n",
                  name.data, name.data, name.data, (long long)o->bos, name.data);
        free(name.data);
    } else {
        tf_printf(out, "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
                       "true, \"trim_offsets\": false, \"use_regex\": true},\n");
    }
    tf_printf(out, "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                   "\"trim_offsets\": true, \"use_regex\": true},\n"
                   "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n"
                   "    \"unk_token\": null,\n    \"continuing_subword_prefix\": \"\",\n"
                   "    \"end_of_word_suffix\": \"\",\n    \"fuse_unk\": false,\n"
                   "    \"byte_fallback\": false,\n    \"ignore_merges\": %s,\n"
                   "    \"vocab\": {",
              o->ignore_merges ? "true" : "false");
    for (uint64_t i = 0; i < tokens->count; i++) {
        mcl_gguf_str s = gguf_string_at(g, tokens, i);
        tf_printf(out, "%s\n      ", i ? "," : "");
        put_json_string(out, s.data, (size_t)s.len);
        tf_printf(out, ": %llu", (unsigned long long)i);
    }
    tf_printf(out, "\n    },\n    \"merges\": [");
    for (uint64_t r = 0; r < merges->count; r++) {
        mcl_gguf_str m = gguf_string_at(g, merges, r);
        const char *space = memchr(m.data + 1, ' ', (size_t)m.len - 1);
        assert_non_null(space);
        size_t left_len = (size_t)(space - m.data), right_len = (size_t)m.len - left_len - 1;
        const char *left = m.data, *right = space + 1;
        if ((int64_t)r == o->changed_merge) {
            const char *t = left;
            size_t tl = left_len;
            left = right;
            left_len = right_len;
            right = t;
            right_len = tl;
        }
        tf_printf(out, "%s\n      ", r ? "," : "");
        if (o->merges_as_pairs) {
            tf_put(out, "[", 1);
            put_json_string(out, left, left_len);
            tf_put(out, ", ", 2);
            put_json_string(out, right, right_len);
            tf_put(out, "]", 1);
        } else {
            tf_buffer joined = {0};
            tf_put(&joined, left, left_len);
            tf_put(&joined, " ", 1);
            tf_put(&joined, right, right_len);
            put_json_string(out, joined.data, joined.len);
            free(joined.data);
        }
    }
    tf_printf(out, "\n    ]\n  }\n}\n");
}

/* --- Protobuf ---------------------------------------------------------------------------- */

void tf_put_varint(tf_buffer *b, uint64_t v)
{
    do {
        unsigned char byte = (unsigned char)(v & 0x7F);
        v >>= 7;
        if (v)
            byte |= 0x80;
        tf_put(b, &byte, 1);
    } while (v);
}

void tf_pb_tag(tf_buffer *b, uint32_t field, int wire)
{
    tf_put_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void tf_pb_bytes(tf_buffer *b, uint32_t field, const void *bytes, size_t len)
{
    tf_pb_tag(b, field, 2);
    tf_put_varint(b, len);
    tf_put(b, bytes, len);
}

void tf_pb_varint(tf_buffer *b, uint32_t field, uint64_t v)
{
    tf_pb_tag(b, field, 0);
    tf_put_varint(b, v);
}

void tf_pb_fixed32(tf_buffer *b, uint32_t field, uint32_t v)
{
    unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 24)};
    tf_pb_tag(b, field, 5);
    tf_put(b, le, 4);
}

uint32_t tf_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* A GGUF id key, or `def` when absent. */
static int64_t gguf_id(const mcl_gguf *g, const char *key, int64_t def)
{
    uint64_t v;
    const mcl_gguf_kv *kv = mcl_gguf_find(g, key);
    return kv && mcl_gguf_get_u64(kv, &v) ? (int64_t)v : def;
}

void tf_tokenizer_model(const mcl_gguf *g, const tf_spm_options *o, tf_buffer *out)
{
    const mcl_gguf_kv *tokens = mcl_gguf_find(g, "tokenizer.ggml.tokens");
    const mcl_gguf_kv *scores = mcl_gguf_find(g, "tokenizer.ggml.scores");
    const mcl_gguf_kv *types = mcl_gguf_find(g, "tokenizer.ggml.token_type");
    assert_true(tokens && scores && types);
    for (uint64_t i = 0; i < tokens->count; i++) {
        mcl_gguf_str s = gguf_string_at(g, tokens, i);
        uint64_t k = (int64_t)i == o->swap_a   ? (uint64_t)o->swap_b
                     : (int64_t)i == o->swap_b ? (uint64_t)o->swap_a
                                               : i;
        double score = 0;
        assert_true(mcl_gguf_array_f64(scores, k, &score));
        tf_buffer piece = {0};
        tf_pb_bytes(&piece, 1, s.data, (size_t)s.len);
        tf_pb_fixed32(&piece, 2, tf_float_bits((float)score));
        int64_t type = gguf_int_at(types, i);
        if (type != 1) /* NORMAL is the default, left out as SentencePiece does */
            tf_pb_varint(&piece, 3, (uint64_t)type);
        tf_pb_bytes(out, 1, piece.data, piece.len);
        free(piece.data);
    }
    tf_buffer trainer = {0};
    tf_pb_bytes(&trainer, 1, "corpus.txt", 10);
    tf_pb_varint(&trainer, 3, (uint64_t)o->model_type);
    tf_pb_varint(&trainer, 4, tokens->count);
    tf_pb_fixed32(&trainer, 10, tf_float_bits(0.99995f));
    tf_pb_varint(&trainer, 35, (uint64_t)o->byte_fallback);
    tf_pb_varint(&trainer, 40, (uint64_t)gguf_id(g, "tokenizer.ggml.unknown_token_id", 0));
    tf_pb_varint(&trainer, 41, (uint64_t)gguf_id(g, "tokenizer.ggml.bos_token_id", 1));
    tf_pb_varint(&trainer, 42, (uint64_t)gguf_id(g, "tokenizer.ggml.eos_token_id", 2));
    tf_pb_varint(&trainer, 43, (uint64_t)(int64_t)-1); /* int32 -1: ten bytes */
    tf_pb_bytes(out, 2, trainer.data, trainer.len);
    free(trainer.data);
    tf_buffer normalizer = {0};
    int prefix = 1;
    const mcl_gguf_kv *kv = mcl_gguf_find(g, "tokenizer.ggml.add_space_prefix");
    if (kv)
        assert_true(mcl_gguf_get_bool(kv, &prefix));
    tf_pb_bytes(&normalizer, 1, "identity", 8);
    tf_pb_varint(&normalizer, 3, (uint64_t)prefix);
    tf_pb_varint(&normalizer, 4, 0); /* remove_extra_whitespaces */
    tf_pb_bytes(out, 3, normalizer.data, normalizer.len);
    free(normalizer.data);
    unsigned char fixed64[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tf_pb_tag(out, 200, 1);
    tf_put(out, fixed64, 8);
}
