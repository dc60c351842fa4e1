/* The byte-level BPE encoder ("gpt2"): the pre-tokenizer splits the text into words, each
 * word starts as its bytes, and the adjacent pair with the lowest merge rank is merged first
 * (ties: the leftmost) until no pair has a merge (llama.cpp's llm_tokenizer_bpe, a priority
 * queue over bigrams; O(n log n) per word).
 *
 * Pieces are handled as bytes, not as GPT-2's alphabet: each token's text and each merge's
 * halves are decoded once, when the tokenizer is made, so a word is never re-encoded and a
 * merge is a lookup of two piece numbers. Merge halves and results that are no token get
 * numbers from n_tokens on. A word left with a symbol that is no token gives that symbol's
 * byte tokens (the unknown token for a byte without one; nothing where there is no unknown
 * token either, as llama.cpp drops it). */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"
#include "core/alloc.h"

#define NONE UINT32_MAX

typedef struct bpe_sym {
    uint32_t start, n; /* bytes of the word; n = 0 once merged into the left */
    int32_t piece;     /* its piece number, or -1 when it can take part in no merge */
    uint32_t prev, next;
} bpe_sym;

typedef struct bpe_state {
    const mcl_tokenizer *t;
    bpe_sym *syms;
    mcl_scratch *sc;
    size_t heap_n;
} bpe_state;

/* Queue the pair (left, right) when a merge joins their pieces. */
static int try_pair(bpe_state *s, uint32_t left, uint32_t right)
{
    if (left == NONE || right == NONE)
        return 1;
    const bpe_sym *l = &s->syms[left], *r = &s->syms[right];
    if (l->piece < 0 || r->piece < 0)
        return 1;
    const mcl_pair_slot *m =
        mcl_pairmap_find(&s->t->merges, (uint32_t)l->piece, (uint32_t)r->piece);
    if (!m)
        return 1;
    mcl_bigram b = {(double)m->rank, left, right, l->n, r->n, (int32_t)m->merged};
    return mcl_bigram_push(s->sc, &s->heap_n, b);
}

static void put_bytes(const mcl_tokenizer *t, const unsigned char *bytes, size_t n,
                      mcl_sink *out)
{
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_token[bytes[i]];
        if (id < 0)
            id = t->unk;
        if (id >= 0)
            mcl_sink_put(out, id);
    }
}

static int encode_word(const mcl_tokenizer *t, const unsigned char *w, size_t len,
                       mcl_sink *out, mcl_scratch *sc)
{
    if (t->ignore_merges || len == 1) {
        int64_t id = mcl_strmap_find(&t->key_map, (const char *)w, len);
        if (id >= 0 && id < t->n_tokens) {
            mcl_sink_put(out, (int32_t)id);
            return 1;
        }
        if (len == 1) {
            put_bytes(t, w, 1, out);
            return 1;
        }
    }
    if (!mcl_grow(&sc->syms, &sc->syms_cap, len, sizeof(bpe_sym)))
        return 0;
    bpe_state s = {t, sc->syms, sc, 0};
    for (uint32_t i = 0; i < len; i++) {
        s.syms[i].start = i;
        s.syms[i].n = 1;
        s.syms[i].piece = t->byte_piece[w[i]];
        s.syms[i].prev = i ? i - 1 : NONE;
        s.syms[i].next = i + 1 < len ? i + 1 : NONE;
    }
    for (uint32_t i = 1; i < len; i++)
        if (!try_pair(&s, i - 1, i))
            return 0;

    while (s.heap_n) {
        mcl_bigram b = mcl_bigram_pop(s.sc, &s.heap_n);
        bpe_sym *l = &s.syms[b.left], *r = &s.syms[b.right];
        if (l->n != b.left_n || r->n != b.right_n || l->next != b.right)
            continue; /* one side was merged since */
        l->n += r->n;
        l->piece = b.piece;
        r->n = 0;
        l->next = r->next;
        if (r->next != NONE)
            s.syms[r->next].prev = b.left;
        if (!try_pair(&s, l->prev, b.left) || !try_pair(&s, b.left, l->next))
            return 0;
    }

    for (uint32_t i = 0; i != NONE; i = s.syms[i].next) {
        const bpe_sym *y = &s.syms[i];
        if (y->piece >= 0 && (uint32_t)y->piece < t->n_tokens)
            mcl_sink_put(out, y->piece);
        else
            put_bytes(t, w + y->start, y->n, out);
    }
    return 1;
}

mcl_status mcl_bpe_encode(const mcl_tokenizer *t, const char *text, size_t len, mcl_sink *out,
                          mcl_scratch *sc)
{
    if (len >= UINT32_MAX)
        return MCL_ERROR_TOO_LARGE;
    if (!mcl_cps_decode(&sc->cps, text, len))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    const mcl_cps *c = &sc->cps;
    for (size_t i = 0; i < c->n;) {
        size_t e = mcl_pretok_next(t->pre, c, i);
        const unsigned char *w = (const unsigned char *)text + c->off[i];
        if (!encode_word(t, w, c->off[e] - c->off[i], out, sc))
            return MCL_ERROR_OUT_OF_HOST_MEMORY;
        i = e;
    }
    return MCL_SUCCESS;
}

/* --- Building the tables ------------------------------------------------------------------ */

/* Decode text in GPT-2's alphabet into bytes (out has room for len): the byte count, or -1
 * when a character is not in the alphabet. */
static int64_t gpt2_decode(const char *text, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, n = 0;
    while (i < len) {
        uint32_t cp;
        i += mcl_utf8_next(s + i, len - i, &cp);
        int b = mcl_gpt2_cp_to_byte(cp);
        if (b < 0)
            return -1;
        out[n++] = (char)b;
    }
    return (int64_t)n;
}

/* The piece number of bytes, a new one past the tokens when none has them; -1 when out of
 * memory. */
static int64_t piece_of(mcl_tokenizer *t, const char *bytes, size_t len)
{
    int64_t id = mcl_strmap_find(&t->key_map, bytes, len);
    if (id >= 0)
        return id;
    id = mcl_strings_add(&t->keys, bytes, len);
    if (id < 0 || mcl_strmap_insert(&t->key_map, (uint32_t)id, NULL) != 1)
        return -1;
    return id;
}

mcl_status mcl_bpe_build(mcl_tokenizer *t, const mcl_vocab_desc *d, char *why,
                         size_t why_size)
{
    size_t longest = 0;
    for (uint32_t i = 0; i < t->n_tokens; i++)
        if (t->text.len[i] > longest)
            longest = t->text.len[i];
    for (uint32_t r = 0; r < d->n_merges; r++) {
        size_t len = d->merge_lens ? (size_t)d->merge_lens[r] : strlen(d->merges[r]);
        if (len > longest)
            longest = len;
    }
    char *buf = mcl_mem_malloc(2 * longest + 2);
    if (!buf || !mcl_strmap_init(&t->key_map, &t->keys, t->n_tokens) ||
        !mcl_pairmap_init(&t->merges, d->n_merges))
        goto oom;

    /* Tokens keep their numbers; one whose text is not in the alphabet gets an empty key
     * that is never looked up. */
    for (uint32_t i = 0; i < t->n_tokens; i++) {
        int64_t n = gpt2_decode(mcl_strings_at(&t->text, i), t->text.len[i], buf);
        if (mcl_strings_add(&t->keys, buf, n < 0 ? 0 : (size_t)n) != (int64_t)i)
            goto oom;
        if (n <= 0)
            continue;
        int r = mcl_strmap_insert(&t->key_map, i, NULL);
        if (r == 0)
            goto oom;
    }

    for (uint32_t r = 0; r < d->n_merges; r++) {
        const char *m = d->merges[r];
        size_t len = d->merge_lens ? (size_t)d->merge_lens[r] : strlen(m);
        const char *space = len > 1 ? memchr(m + 1, ' ', len - 1) : NULL;
        if (!space) {
            mcl_mem_free(buf);
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT,
                                 "merge %u has no space between its halves", r);
        }
        size_t left_len = (size_t)(space - m), right_len = len - left_len - 1;
        int64_t a = gpt2_decode(m, left_len, buf);
        int64_t b = a < 0 ? -1 : gpt2_decode(space + 1, right_len, buf + a);
        if (a <= 0 || b <= 0)
            continue; /* a half outside the alphabet, or empty: it can never apply */
        int64_t pa = piece_of(t, buf, (size_t)a);
        int64_t pb = piece_of(t, buf + a, (size_t)b);
        int64_t pab = piece_of(t, buf, (size_t)(a + b));
        if (pa < 0 || pb < 0 || pab < 0 ||
            !mcl_pairmap_insert(&t->merges, (uint32_t)pa, (uint32_t)pb, r, (uint32_t)pab))
            goto oom;
    }

    for (unsigned b = 0; b < 256; b++) {
        char c = (char)b;
        int64_t id = mcl_strmap_find(&t->key_map, &c, 1);
        t->byte_piece[b] = (int32_t)id;
        t->byte_token[b] = id >= 0 && id < t->n_tokens ? (int32_t)id : -1;
    }
    mcl_mem_free(buf);
    return MCL_SUCCESS;
oom:
    mcl_mem_free(buf);
    return MCL_ERROR_OUT_OF_HOST_MEMORY;
}
