/* The SentencePiece-style encoder ("llama"): spaces become U+2581, the text is split into
 * characters, and adjacent symbols whose concatenation is a piece are merged, the pair with
 * the highest score first (ties: the leftmost), until no pair is a piece (llama.cpp's
 * llm_tokenizer_spm, a priority queue over bigrams; O(n log n)). A symbol left that is no
 * piece is one character: it becomes its bytes' <0xXX> tokens, or the unknown token where a
 * byte has none (SentencePiece's byte fallback). */
#include <string.h>

#include "text/text_internal.h"

#define NONE UINT32_MAX

/* U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for a space. */
static const char space_mark[3] = {'\xE2', '\x96', '\x81'};

typedef struct spm_sym {
    uint32_t start, n; /* bytes of the normalized text; n = 0 once merged into the left */
    uint32_t prev, next;
} spm_sym;

typedef struct spm_state {
    const mcl_tokenizer *t;
    const char *text;
    spm_sym *syms;
    mcl_scratch *sc;
    size_t heap_n;
} spm_state;

/* Queue the pair (left, right) when their concatenation is a piece. */
static int try_bigram(spm_state *s, uint32_t left, uint32_t right)
{
    if (left == NONE || right == NONE)
        return 1;
    uint32_t size = s->syms[left].n + s->syms[right].n;
    int64_t id = mcl_strmap_find(&s->t->text_map, s->text + s->syms[left].start, size);
    if (id < 0)
        return 1;
    /* The highest score first: the key is its negation. */
    mcl_bigram b = {-(double)s->t->scores[id], left, right, s->syms[left].n, s->syms[right].n,
                    (int32_t)id};
    return mcl_bigram_push(s->sc, &s->heap_n, b);
}

/* A symbol that is no piece: its bytes' tokens, or one unknown token (none where the
 * vocabulary has neither). */
static void fallback(const mcl_tokenizer *t, const unsigned char *bytes, size_t n,
                     mcl_sink *out)
{
    for (size_t i = 0; i < n; i++) {
        if (t->byte_token[bytes[i]] < 0) {
            if (t->unk >= 0)
                mcl_sink_put(out, t->unk);
            return;
        }
    }
    for (size_t i = 0; i < n; i++)
        mcl_sink_put(out, t->byte_token[bytes[i]]);
}

mcl_status mcl_spm_encode(const mcl_tokenizer *t, const char *text, size_t len, int prefix,
                          mcl_sink *out, mcl_scratch *sc)
{
    /* The normalized text: an optional leading space, every space as U+2581. */
    size_t spaces = 0;
    for (size_t i = 0; i < len; i++)
        spaces += text[i] == ' ';
    uint64_t grown = (uint64_t)len + 2 * (uint64_t)spaces + (prefix ? 3 : 0);
    if (len >= UINT32_MAX || grown >= UINT32_MAX)
        return MCL_ERROR_TOO_LARGE;
    size_t norm_len = (size_t)grown;
    void *bytes = sc->bytes;
    if (!mcl_grow(&bytes, &sc->bytes_cap, norm_len + 1, 1))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    sc->bytes = bytes;
    char *norm = sc->bytes;
    size_t k = 0;
    if (prefix) {
        memcpy(norm, space_mark, 3);
        k = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(norm + k, space_mark, 3);
            k += 3;
        } else {
            norm[k++] = text[i];
        }
    }

    /* One symbol per character (an invalid byte is a character of its own). */
    if (!mcl_grow(&sc->syms, &sc->syms_cap, norm_len, sizeof(spm_sym)))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    spm_state s = {t, norm, sc->syms, sc, 0};
    uint32_t n = 0;
    for (size_t i = 0; i < norm_len;) {
        uint32_t cp;
        size_t clen = mcl_utf8_next((const unsigned char *)norm + i, norm_len - i, &cp);
        s.syms[n].start = (uint32_t)i;
        s.syms[n].n = (uint32_t)clen;
        s.syms[n].prev = n ? n - 1 : NONE;
        s.syms[n].next = i + clen < norm_len ? n + 1 : NONE;
        n++;
        i += clen;
    }
    for (uint32_t i = 1; i < n; i++)
        if (!try_bigram(&s, i - 1, i))
            return MCL_ERROR_OUT_OF_HOST_MEMORY;

    while (s.heap_n) {
        mcl_bigram b = mcl_bigram_pop(s.sc, &s.heap_n);
        spm_sym *l = &s.syms[b.left], *r = &s.syms[b.right];
        if (l->n != b.left_n || r->n != b.right_n || l->next != b.right)
            continue; /* one side was merged since */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next != NONE)
            s.syms[r->next].prev = b.left;
        if (!try_bigram(&s, l->prev, b.left) || !try_bigram(&s, b.left, l->next))
            return MCL_ERROR_OUT_OF_HOST_MEMORY;
    }

    for (uint32_t i = n ? 0 : NONE; i != NONE; i = s.syms[i].next) {
        const spm_sym *y = &s.syms[i];
        int64_t id = mcl_strmap_find(&t->text_map, norm + y->start, y->n);
        if (id >= 0)
            mcl_sink_put(out, (int32_t)id);
        else
            fallback(t, (const unsigned char *)norm + y->start, y->n, out);
    }
    return MCL_SUCCESS;
}
