/* The tokenizer object: construction from a vocabulary description (the tables each
 * algorithm needs, what each token decodes to, the trie of special tokens), encoding (special
 * tokens split out first, the runs between them to the SPM or BPE encoder), decoding and the
 * getters. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"
#include "core/alloc.h"

void mcl_scratch_free(mcl_scratch *sc)
{
    mcl_mem_free(sc->bytes);
    mcl_mem_free(sc->syms);
    mcl_mem_free(sc->heap);
    mcl_cps_free(&sc->cps);
    memset(sc, 0, sizeof *sc);
}

void mcl_tokenizer_free(mcl_tokenizer *t)
{
    if (!t)
        return;
    mcl_strings_free(&t->text);
    mcl_strings_free(&t->decoded);
    mcl_strings_free(&t->keys);
    mcl_strmap_free(&t->text_map);
    mcl_strmap_free(&t->key_map);
    mcl_pairmap_free(&t->merges);
    mcl_mem_free(t->types);
    mcl_mem_free(t->scores);
    mcl_mem_free(t->trie);
    mcl_mem_free(t);
}

/* --- Construction ------------------------------------------------------------------------ */

static int is_special_type(int type)
{
    return type == MCL_TOKEN_CONTROL || type == MCL_TOKEN_UNKNOWN ||
           type == MCL_TOKEN_USER_DEFINED;
}

/* Add the text of token id to the trie; 0 when out of memory. */
static int trie_add(mcl_tokenizer *t, const char *text, size_t len, int32_t id)
{
    uint32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)text[i];
        uint32_t child = t->trie[node].child;
        while (child && t->trie[child].byte != b)
            child = t->trie[child].sibling;
        if (!child) {
            void *p = t->trie;
            if (t->trie_n >= UINT32_MAX ||
                !mcl_grow(&p, &t->trie_cap, t->trie_n + 1, sizeof *t->trie))
                return 0;
            t->trie = p;
            child = (uint32_t)t->trie_n++;
            t->trie[child].child = 0;
            t->trie[child].sibling = t->trie[node].child;
            t->trie[child].id = -1;
            t->trie[child].byte = b;
            t->trie[node].child = child;
        }
        node = child;
    }
    t->trie[node].id = id;
    return 1;
}

/* The value of a hex digit, or -1. */
static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The byte of a "<0xXX>" piece, or -1. */
static int byte_of_piece(const char *s, size_t len)
{
    if (len != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>')
        return -1;
    int hi = hex_value(s[3]), lo = hex_value(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* What token i decodes to, into buf (room for its text: decoding never lengthens it): its
 * length. */
static size_t decoded_text(const mcl_tokenizer *t, uint32_t i, char *buf)
{
    const char *s = mcl_strings_at(&t->text, i);
    size_t len = t->text.len[i], n = 0;
    switch (t->types[i]) {
    case MCL_TOKEN_USER_DEFINED:
        memcpy(buf, s, len);
        return len;
    case MCL_TOKEN_NORMAL:
        break;
    case MCL_TOKEN_BYTE: {
        int b = byte_of_piece(s, len);
        if (b < 0)
            break; /* not <0xXX>: decoded as a normal piece */
        buf[0] = (char)b;
        return 1;
    }
    default: /* control, unknown, unused, undefined: no text */
        return 0;
    }
    if (t->kind == MCL_VOCAB_SPM) {
        for (size_t k = 0; k < len; k++) {
            if (k + 3 <= len && memcmp(s + k, "\xE2\x96\x81", 3) == 0) {
                buf[n++] = ' ';
                k += 2;
            } else {
                buf[n++] = s[k];
            }
        }
        return n;
    }
    /* BPE: GPT-2's alphabet back to bytes; a character outside it stays as it is. */
    const unsigned char *u = (const unsigned char *)s;
    for (size_t k = 0; k < len;) {
        uint32_t cp;
        size_t clen = mcl_utf8_next(u + k, len - k, &cp);
        int b = cp == MCL_CP_INVALID ? -1 : mcl_gpt2_cp_to_byte(cp);
        if (b >= 0) {
            buf[n++] = (char)b;
        } else {
            memcpy(buf + n, s + k, clen);
            n += clen;
        }
        k += clen;
    }
    return n;
}

static mcl_status check_desc(const mcl_vocab_desc *d, char *why, size_t why_size)
{
    if (d->kind != MCL_VOCAB_SPM && d->kind != MCL_VOCAB_BPE)
        return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED, "unknown vocabulary kind %d",
                             (int)d->kind);
    if (d->kind == MCL_VOCAB_BPE && d->pre != MCL_PRETOK_GPT2 && d->pre != MCL_PRETOK_LLAMA3 &&
        d->pre != MCL_PRETOK_QWEN2)
        return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED, "unknown pre-tokenizer %d",
                             (int)d->pre);
    if (d->n_tokens == 0 || d->n_tokens > INT32_MAX / 4 || !d->tokens)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                             "%u tokens (1 to 2^29 needed, and their texts)", d->n_tokens);
    if (d->n_merges && !d->merges)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                             "%u merges without their texts", d->n_merges);
    const int32_t ids[4] = {d->bos, d->eos, d->unk, d->pad};
    static const char *const names[4] = {"BOS", "EOS", "unknown", "padding"};
    for (int k = 0; k < 4; k++)
        if (ids[k] < -1 || ids[k] >= (int64_t)d->n_tokens)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "%s token id %d outside the vocabulary of %u", names[k],
                                 (int)ids[k], d->n_tokens);
    for (uint32_t i = 0; d->types && i < d->n_tokens; i++)
        if (d->types[i] < 0 || d->types[i] > MCL_TOKEN_BYTE)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "token %u has type %d (0 to 6 known)", i, (int)d->types[i]);
    for (uint32_t i = 0; i < d->n_tokens; i++)
        if (!d->tokens[i])
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "token %u has no text", i);
    for (uint32_t r = 0; r < d->n_merges; r++)
        if (!d->merges[r])
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "merge %u has no text", r);
    return MCL_SUCCESS;
}

/* The pieces, their types and scores, and the map of their texts. */
static mcl_status load_tokens(mcl_tokenizer *t, const mcl_vocab_desc *d, char *why,
                              size_t why_size)
{
    uint32_t n = d->n_tokens;
    t->types = mcl_mem_malloc(n);
    t->scores = mcl_mem_malloc(n * sizeof *t->scores);
    if (!t->types || !t->scores || !mcl_strmap_init(&t->text_map, &t->text, n))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        size_t len = d->token_lens ? (size_t)d->token_lens[i] : strlen(d->tokens[i]);
        if (d->token_lens && d->token_lens[i] > UINT32_MAX)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "token %u is 4 GiB long or more", i);
        if (mcl_strings_add(&t->text, d->tokens[i], len) != (int64_t)i)
            return MCL_ERROR_OUT_OF_HOST_MEMORY;
        t->types[i] = (uint8_t)(d->types ? d->types[i] : MCL_TOKEN_NORMAL);
        t->scores[i] = d->scores ? d->scores[i] : 0.0f;
        if (len == 0)
            continue; /* an empty piece is never looked up */
        uint32_t dup = 0;
        int r = mcl_strmap_insert(&t->text_map, i, &dup);
        if (r == 0)
            return MCL_ERROR_OUT_OF_HOST_MEMORY;
        if (r < 0)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "tokens %u and %u have the same text '%.*s'", dup, i,
                                 (int)(len > 64 ? 64 : len), d->tokens[i]);
    }
    return MCL_SUCCESS;
}

/* SPM's byte tokens: <0xXX>, else the one-byte piece (llama.cpp's byte_to_token). */
static void spm_byte_tokens(mcl_tokenizer *t)
{
    static const char hex[] = "0123456789ABCDEF";
    for (unsigned b = 0; b < 256; b++) {
        char piece[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        int64_t id = mcl_strmap_find(&t->text_map, piece, 6);
        if (id < 0) {
            char c = (char)b;
            id = mcl_strmap_find(&t->text_map, &c, 1);
        }
        t->byte_token[b] = (int32_t)id;
        t->byte_piece[b] = -1;
    }
}

static mcl_status build_decoded_and_trie(mcl_tokenizer *t)
{
    size_t longest = 0;
    for (uint32_t i = 0; i < t->n_tokens; i++)
        if (t->text.len[i] > longest)
            longest = t->text.len[i];
    char *buf = mcl_mem_malloc(longest + 1);
    t->trie = mcl_mem_calloc(1, sizeof *t->trie);
    if (!buf || !t->trie)
        goto oom;
    t->trie_n = t->trie_cap = 1;
    t->trie[0].id = -1;
    for (uint32_t i = 0; i < t->n_tokens; i++) {
        size_t n = decoded_text(t, i, buf);
        if (mcl_strings_add(&t->decoded, buf, n) != (int64_t)i)
            goto oom;
        if (is_special_type(t->types[i]) && t->text.len[i] &&
            !trie_add(t, mcl_strings_at(&t->text, i), t->text.len[i], (int32_t)i))
            goto oom;
    }
    mcl_mem_free(buf);
    return MCL_SUCCESS;
oom:
    mcl_mem_free(buf);
    return MCL_ERROR_OUT_OF_HOST_MEMORY;
}

mcl_status mcl_tokenizer_create(const mcl_vocab_desc *d, mcl_tokenizer **out, char *why,
                                size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!d)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "desc is NULL");
    mcl_status s = check_desc(d, why, why_size);
    if (s != MCL_SUCCESS)
        return s;
    mcl_tokenizer *t = mcl_mem_calloc(1, sizeof *t);
    if (!t)
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    t->kind = d->kind;
    t->pre = d->kind == MCL_VOCAB_BPE ? d->pre : MCL_PRETOK_NONE;
    snprintf(t->pre_name, sizeof t->pre_name, "%s", d->pre_name ? d->pre_name : "");
    t->n_tokens = d->n_tokens;
    t->bos = d->bos;
    t->eos = d->eos;
    t->unk = d->unk;
    t->pad = d->pad;
    t->add_bos = d->add_bos != 0;
    t->add_eos = d->add_eos != 0;
    t->add_space_prefix = d->kind == MCL_VOCAB_SPM && d->add_space_prefix;
    t->ignore_merges = d->kind == MCL_VOCAB_BPE && d->ignore_merges;

    s = load_tokens(t, d, why, why_size);
    if (s == MCL_SUCCESS) {
        if (t->kind == MCL_VOCAB_SPM)
            spm_byte_tokens(t);
        else
            s = mcl_bpe_build(t, d, why, why_size);
    }
    if (s == MCL_SUCCESS)
        s = build_decoded_and_trie(t);
    if (s != MCL_SUCCESS) {
        mcl_tokenizer_free(t);
        if (s == MCL_ERROR_OUT_OF_HOST_MEMORY)
            mcl_text_fail(why, why_size, s, "out of memory building the tokenizer");
        return s;
    }
    *out = t;
    return MCL_SUCCESS;
}

/* --- Encoding ----------------------------------------------------------------------------- */

/* The special token that starts at text[i] (the longest one allowed), its length in *len; or
 * -1. User-defined tokens are always allowed, control and unknown ones with parse_special. */
static int32_t special_at(const mcl_tokenizer *t, const char *text, size_t len, size_t i,
                          int parse_special, size_t *match_len)
{
    int32_t best = -1;
    uint32_t node = 0;
    for (size_t k = i; k < len; k++) {
        unsigned char b = (unsigned char)text[k];
        uint32_t child = t->trie[node].child;
        while (child && t->trie[child].byte != b)
            child = t->trie[child].sibling;
        if (!child)
            break;
        node = child;
        int32_t id = t->trie[node].id;
        if (id >= 0 && (parse_special || t->types[id] == MCL_TOKEN_USER_DEFINED)) {
            best = id;
            *match_len = k - i + 1;
        }
    }
    return best;
}

static mcl_status encode_run(const mcl_tokenizer *t, const char *text, size_t len,
                             int after_special, mcl_sink *out, mcl_scratch *sc)
{
    if (t->kind == MCL_VOCAB_SPM)
        return mcl_spm_encode(t, text, len, t->add_space_prefix && after_special, out, sc);
    return mcl_bpe_encode(t, text, len, out, sc);
}

mcl_status mcl_tokenizer_encode(const mcl_tokenizer *t, const char *text, size_t len,
                                uint32_t flags, int32_t *ids, uint32_t capacity,
                                uint32_t *count)
{
    if (count)
        *count = 0;
    if (!t || !count || (!text && len) || (!ids && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_sink out = {ids, capacity, 0};
    mcl_scratch sc = {0};
    mcl_status s = MCL_SUCCESS;
    if ((flags & MCL_TOKENIZE_ADD_BOS) && t->add_bos && t->bos >= 0)
        mcl_sink_put(&out, t->bos);

    int parse_special = (flags & MCL_TOKENIZE_PARSE_SPECIAL) != 0;
    int after_special = 1; /* the start of the text counts as after a special token */
    size_t start = 0;
    for (size_t i = 0; t->trie[0].child && i < len;) {
        size_t match_len = 0;
        int32_t id = special_at(t, text, len, i, parse_special, &match_len);
        if (id < 0) {
            i++;
            continue;
        }
        if (i > start) {
            s = encode_run(t, text + start, i - start, after_special, &out, &sc);
            if (s != MCL_SUCCESS)
                goto done;
        }
        mcl_sink_put(&out, id);
        after_special = 1;
        i += match_len;
        start = i;
    }
    if (start < len) {
        s = encode_run(t, text + start, len - start, after_special, &out, &sc);
        if (s != MCL_SUCCESS)
            goto done;
    }
    if ((flags & MCL_TOKENIZE_ADD_EOS) && t->add_eos && t->eos >= 0)
        mcl_sink_put(&out, t->eos);
    if (out.n > capacity)
        s = MCL_ERROR_TOO_LARGE;
done:
    mcl_scratch_free(&sc);
    *count = out.n > UINT32_MAX ? UINT32_MAX : (uint32_t)out.n;
    return s;
}

/* --- Decoding and getters ----------------------------------------------------------------- */

mcl_status mcl_tokenizer_decode(const mcl_tokenizer *t, const int32_t *ids, uint32_t count,
                                char *buf, size_t capacity, size_t *needed)
{
    if (needed)
        *needed = 0;
    if (!t || (!ids && count) || (!buf && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    if (capacity)
        buf[0] = '\0';
    for (uint32_t i = 0; i < count; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= t->n_tokens)
            return MCL_ERROR_INVALID_ARGUMENT;
    size_t total = 0;
    int strip = t->add_space_prefix; /* the prefix space the encoder added */
    for (uint32_t i = 0; i < count; i++) {
        const char *piece = mcl_strings_at(&t->decoded, (size_t)ids[i]);
        size_t len = t->decoded.len[ids[i]];
        if (!len)
            continue;
        if (strip && piece[0] == ' ') {
            piece++;
            len--;
        }
        strip = 0;
        if (capacity && total < capacity - 1) {
            size_t room = capacity - 1 - total;
            memcpy(buf + total, piece, len < room ? len : room);
        }
        total += len;
    }
    if (capacity)
        buf[total < capacity - 1 ? total : capacity - 1] = '\0';
    if (needed)
        *needed = total + 1;
    return total + 1 > capacity ? MCL_ERROR_TOO_LARGE : MCL_SUCCESS;
}

uint32_t mcl_tokenizer_vocab_size(const mcl_tokenizer *t)
{
    return t ? t->n_tokens : 0;
}

const char *mcl_tokenizer_model(const mcl_tokenizer *t)
{
    if (!t)
        return NULL;
    return t->kind == MCL_VOCAB_SPM ? "llama" : "gpt2";
}

const char *mcl_tokenizer_pre(const mcl_tokenizer *t)
{
    return t ? t->pre_name : NULL;
}

int32_t mcl_tokenizer_bos(const mcl_tokenizer *t)
{
    return t ? t->bos : -1;
}

int32_t mcl_tokenizer_eos(const mcl_tokenizer *t)
{
    return t ? t->eos : -1;
}

int32_t mcl_tokenizer_unk(const mcl_tokenizer *t)
{
    return t ? t->unk : -1;
}

int32_t mcl_tokenizer_pad(const mcl_tokenizer *t)
{
    return t ? t->pad : -1;
}

int mcl_tokenizer_add_bos(const mcl_tokenizer *t)
{
    return t ? t->add_bos : 0;
}

int mcl_tokenizer_add_eos(const mcl_tokenizer *t)
{
    return t ? t->add_eos : 0;
}

int mcl_tokenizer_add_space_prefix(const mcl_tokenizer *t)
{
    return t ? t->add_space_prefix : 0;
}

int mcl_tokenizer_token_type(const mcl_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || (uint32_t)id >= t->n_tokens)
        return 0;
    return t->types[id];
}

const char *mcl_tokenizer_piece(const mcl_tokenizer *t, int32_t id, size_t *len)
{
    if (len)
        *len = 0;
    if (!t || id < 0 || (uint32_t)id >= t->n_tokens)
        return NULL;
    if (len)
        *len = t->text.len[id];
    return mcl_strings_at(&t->text, (size_t)id);
}
