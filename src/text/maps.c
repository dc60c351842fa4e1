/* The tokenizer's containers: growable arrays, a pool of byte strings, a map from strings to
 * their numbers and a map from pairs of piece numbers to merges (both open addressing with
 * linear probing, at most half full). */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"
#include "core/alloc.h"

int mcl_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return 0;
        n *= 2;
    }
    if (n > SIZE_MAX / elem)
        return 0;
    void *q = mcl_mem_realloc(*p, n * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = n;
    return 1;
}

int64_t mcl_strings_add(mcl_strings *s, const char *bytes, size_t len)
{
    if (len > UINT32_MAX || s->n >= INT32_MAX || s->pool_len > SIZE_MAX - len - 1)
        return -1;
    void *pool = s->pool;
    if (!mcl_grow(&pool, &s->pool_cap, s->pool_len + len + 1, 1))
        return -1;
    s->pool = pool;
    size_t cap = s->cap;
    void *off = s->off;
    if (!mcl_grow(&off, &cap, s->n + 1, sizeof *s->off))
        return -1;
    s->off = off;
    void *lens = s->len;
    size_t cap2 = s->cap;
    if (!mcl_grow(&lens, &cap2, s->n + 1, sizeof *s->len))
        return -1;
    s->len = lens;
    s->cap = cap < cap2 ? cap : cap2;
    if (len)
        memcpy(s->pool + s->pool_len, bytes, len);
    s->pool[s->pool_len + len] = '\0';
    s->off[s->n] = s->pool_len;
    s->len[s->n] = (uint32_t)len;
    s->pool_len += len + 1;
    return (int64_t)s->n++;
}

void mcl_strings_free(mcl_strings *s)
{
    mcl_mem_free(s->pool);
    mcl_mem_free(s->off);
    mcl_mem_free(s->len);
    memset(s, 0, sizeof *s);
}

/* FNV-1a, 64-bit. */
static uint64_t hash_bytes(const char *bytes, size_t len)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)bytes[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

/* Slots for `expected` entries at most half full: a power of two, or 0 on overflow. */
static size_t table_size(size_t expected)
{
    size_t n = 16;
    while (n / 2 < expected) {
        if (n > SIZE_MAX / 4)
            return 0;
        n *= 2;
    }
    return n;
}

int mcl_strmap_init(mcl_strmap *m, const mcl_strings *strings, size_t expected)
{
    memset(m, 0, sizeof *m);
    size_t n = table_size(expected);
    if (!n)
        return 0;
    m->slots = mcl_mem_calloc(n, sizeof *m->slots);
    if (!m->slots)
        return 0;
    m->strings = strings;
    m->mask = n - 1;
    return 1;
}

static int strmap_rehash(mcl_strmap *m)
{
    size_t n = (m->mask + 1) * 2;
    uint32_t *slots = mcl_mem_calloc(n, sizeof *slots);
    if (!slots)
        return 0;
    for (size_t i = 0; i <= m->mask; i++) {
        uint32_t v = m->slots[i];
        if (!v)
            continue;
        const mcl_strings *s = m->strings;
        size_t j = hash_bytes(mcl_strings_at(s, v - 1), s->len[v - 1]) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = v;
    }
    mcl_mem_free(m->slots);
    m->slots = slots;
    m->mask = n - 1;
    return 1;
}

int mcl_strmap_insert(mcl_strmap *m, uint32_t i, uint32_t *dup)
{
    if ((m->used + 1) * 2 > m->mask + 1 && !strmap_rehash(m))
        return 0;
    const mcl_strings *s = m->strings;
    const char *bytes = mcl_strings_at(s, i);
    size_t len = s->len[i];
    size_t j = hash_bytes(bytes, len) & m->mask;
    for (; m->slots[j]; j = (j + 1) & m->mask) {
        uint32_t o = m->slots[j] - 1;
        if (s->len[o] == len && memcmp(mcl_strings_at(s, o), bytes, len) == 0) {
            if (dup)
                *dup = o;
            return -1;
        }
    }
    m->slots[j] = i + 1;
    m->used++;
    return 1;
}

int64_t mcl_strmap_find(const mcl_strmap *m, const char *bytes, size_t len)
{
    if (!m->slots)
        return -1;
    const mcl_strings *s = m->strings;
    for (size_t j = hash_bytes(bytes, len) & m->mask; m->slots[j]; j = (j + 1) & m->mask) {
        uint32_t o = m->slots[j] - 1;
        if (s->len[o] == len && memcmp(mcl_strings_at(s, o), bytes, len) == 0)
            return o;
    }
    return -1;
}

void mcl_strmap_free(mcl_strmap *m)
{
    mcl_mem_free(m->slots);
    memset(m, 0, sizeof *m);
}

static uint64_t pair_key(uint32_t left, uint32_t right)
{
    return (uint64_t)left << 32 | right;
}

/* A 64-bit mix (splitmix64's finaliser): pair keys are small numbers, not random bits. */
static uint64_t hash_key(uint64_t k)
{
    k ^= k >> 30;
    k *= 0xBF58476D1CE4E5B9ull;
    k ^= k >> 27;
    k *= 0x94D049BB133111EBull;
    k ^= k >> 31;
    return k;
}

int mcl_pairmap_init(mcl_pairmap *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    size_t n = table_size(expected);
    if (!n)
        return 0;
    m->slots = mcl_mem_malloc(n * sizeof *m->slots);
    if (!m->slots)
        return 0;
    for (size_t i = 0; i < n; i++)
        m->slots[i].key = UINT64_MAX;
    m->mask = n - 1;
    return 1;
}

static int pairmap_rehash(mcl_pairmap *m)
{
    size_t n = (m->mask + 1) * 2;
    mcl_pair_slot *slots = mcl_mem_malloc(n * sizeof *slots);
    if (!slots)
        return 0;
    for (size_t i = 0; i < n; i++)
        slots[i].key = UINT64_MAX;
    for (size_t i = 0; i <= m->mask; i++) {
        if (m->slots[i].key == UINT64_MAX)
            continue;
        size_t j = hash_key(m->slots[i].key) & (n - 1);
        while (slots[j].key != UINT64_MAX)
            j = (j + 1) & (n - 1);
        slots[j] = m->slots[i];
    }
    mcl_mem_free(m->slots);
    m->slots = slots;
    m->mask = n - 1;
    return 1;
}

int mcl_pairmap_insert(mcl_pairmap *m, uint32_t left, uint32_t right, uint32_t rank,
                       uint32_t merged)
{
    if ((m->used + 1) * 2 > m->mask + 1 && !pairmap_rehash(m))
        return 0;
    uint64_t key = pair_key(left, right);
    size_t j = hash_key(key) & m->mask;
    for (; m->slots[j].key != UINT64_MAX; j = (j + 1) & m->mask)
        if (m->slots[j].key == key)
            return 1;
    m->slots[j].key = key;
    m->slots[j].rank = rank;
    m->slots[j].merged = merged;
    m->used++;
    return 1;
}

const mcl_pair_slot *mcl_pairmap_find(const mcl_pairmap *m, uint32_t left, uint32_t right)
{
    if (!m->slots)
        return NULL;
    uint64_t key = pair_key(left, right);
    for (size_t j = hash_key(key) & m->mask; m->slots[j].key != UINT64_MAX;
         j = (j + 1) & m->mask)
        if (m->slots[j].key == key)
            return &m->slots[j];
    return NULL;
}

void mcl_pairmap_free(mcl_pairmap *m)
{
    mcl_mem_free(m->slots);
    memset(m, 0, sizeof *m);
}

/* a comes out of the queue before b. */
static int bigram_before(const mcl_bigram *a, const mcl_bigram *b)
{
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

int mcl_bigram_push(mcl_scratch *sc, size_t *n, mcl_bigram v)
{
    if (!mcl_grow(&sc->heap, &sc->heap_cap, *n + 1, sizeof v))
        return 0;
    mcl_bigram *h = sc->heap;
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!bigram_before(&v, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = v;
    return 1;
}

mcl_bigram mcl_bigram_pop(mcl_scratch *sc, size_t *n)
{
    mcl_bigram *h = sc->heap;
    mcl_bigram top = h[0];
    mcl_bigram last = h[--*n];
    size_t count = *n, i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= count)
            break;
        if (child + 1 < count && bigram_before(&h[child + 1], &h[child]))
            child++;
        if (!bigram_before(&h[child], &last))
            break;
        h[i] = h[child];
        i = child;
    }
    if (count)
        h[i] = last;
    return top;
}
