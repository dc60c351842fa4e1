#include "tlsf.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../core/text.h"
#include "core/alloc.h"

/*
 * Size classes: sizes below SL_COUNT map linearly into first level 0; a size
 * with highest bit m >= SL_LOG maps to first level m - SL_LOG + 1, split into
 * SL_COUNT equal slices. With SL_LOG 5 a bin spans at most 1/32 of its lower
 * bound, which bounds the over-fit of good-fit search to about 3%.
 */
#define SL_LOG 5u
#define SL_COUNT (1u << SL_LOG)
#define FL_COUNT (64u - SL_LOG + 1u)
#define G ((uint64_t)MCL_TLSF_GRANULE)
#define SPARE_MAX 64u     /* recycled nodes kept; beyond that they are freed */
#define HASH_MIN_BITS 6u
#define HASH_MAX_BITS (sizeof(size_t) * CHAR_BIT - 2u)

typedef struct node node;
struct node {
    uint64_t off;
    uint64_t size;       /* footprint; for allocations it includes rounding */
    uint64_t requested;  /* allocation size as asked; 0 while free */
    node *phys_prev, *phys_next;  /* neighbours in offset order */
    node *free_prev, *free_next;  /* bin list while free; spare list */
    node *hash_next;              /* offset table chain while allocated */
    bool is_free;
};

struct mcl_tlsf {
    uint64_t size;
    uint64_t fl_bitmap;
    uint32_t sl_bitmap[FL_COUNT];
    node *bins[FL_COUNT][SL_COUNT];
    node *first;                  /* range at offset 0 */
    node **hash;
    unsigned hash_bits;
    node *spare;
    unsigned spare_count;
    uint64_t node_count;          /* nodes in the physical list */
    uint64_t bytes_allocated, bytes_used, allocation_count, free_range_count;
};

static unsigned msb64(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return 63u - (unsigned)__builtin_clzll(x);
#else
    unsigned r = 0;
    while (x >>= 1) r++;
    return r;
#endif
}

static unsigned lsb64(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned r = 0;
    while (!(x & 1)) { x >>= 1; r++; }
    return r;
#endif
}

static void mapping(uint64_t s, unsigned *fl, unsigned *sl)
{
    unsigned m = msb64(s);
    if (m < SL_LOG) {
        *fl = 0;
        *sl = (unsigned)s;
    } else {
        *fl = m - SL_LOG + 1u;
        *sl = (unsigned)(s >> (m - SL_LOG)) - SL_COUNT;
    }
}

/* Rounds s up to the next bin boundary so any range in the resulting bin is
 * at least s: this is what makes the head of the bin a guaranteed fit. */
static bool mapping_search(uint64_t s, unsigned *fl, unsigned *sl)
{
    if (s >= SL_COUNT) {
        uint64_t step = (UINT64_C(1) << (msb64(s) - SL_LOG)) - 1u;
        if (s > UINT64_MAX - step) return false;
        s += step;
    }
    mapping(s, fl, sl);
    return true;
}

/* First non-empty bin at or above (fl, sl). */
static node *find_bin(const mcl_tlsf *t, unsigned *fl, unsigned *sl)
{
    uint32_t sl_map = *sl < SL_COUNT ? t->sl_bitmap[*fl] & (UINT32_MAX << *sl) : 0;
    if (!sl_map) {
        uint64_t fl_map = *fl + 1u < 64u ? t->fl_bitmap & (UINT64_MAX << (*fl + 1u)) : 0;
        if (!fl_map) return NULL;
        *fl = lsb64(fl_map);
        sl_map = t->sl_bitmap[*fl];
    }
    *sl = lsb64(sl_map);
    return t->bins[*fl][*sl];
}

static void insert_free(mcl_tlsf *t, node *n)
{
    unsigned fl, sl;
    mapping(n->size, &fl, &sl);
    n->is_free = true;
    n->requested = 0;
    n->free_prev = NULL;
    n->free_next = t->bins[fl][sl];
    if (n->free_next) n->free_next->free_prev = n;
    t->bins[fl][sl] = n;
    t->sl_bitmap[fl] |= UINT32_C(1) << sl;
    t->fl_bitmap |= UINT64_C(1) << fl;
    t->free_range_count++;
}

static void remove_free(mcl_tlsf *t, node *n)
{
    unsigned fl, sl;
    mapping(n->size, &fl, &sl);
    if (n->free_prev) n->free_prev->free_next = n->free_next;
    else t->bins[fl][sl] = n->free_next;
    if (n->free_next) n->free_next->free_prev = n->free_prev;
    if (!t->bins[fl][sl]) {
        t->sl_bitmap[fl] &= ~(UINT32_C(1) << sl);
        if (!t->sl_bitmap[fl]) t->fl_bitmap &= ~(UINT64_C(1) << fl);
    }
    n->is_free = false;
    t->free_range_count--;
}

static size_t hash_slot(const mcl_tlsf *t, uint64_t off)
{
    return (size_t)(((off / G) * UINT64_C(0x9E3779B97F4A7C15)) >> (64u - t->hash_bits));
}

static void hash_insert(mcl_tlsf *t, node *n)
{
    /* Grow at load factor 1. If growth fails, chains just get longer:
     * lookups stay correct, so this is not worth failing an alloc over. */
    if (t->allocation_count >= (UINT64_C(1) << t->hash_bits) && t->hash_bits < HASH_MAX_BITS) {
        unsigned old_bits = t->hash_bits;
        node **old = t->hash, **fresh = mcl_mem_calloc((size_t)1 << (old_bits + 1u), sizeof *fresh);
        if (fresh) {
            t->hash = fresh;
            t->hash_bits = old_bits + 1u;
            for (size_t i = 0; i < ((size_t)1 << old_bits); i++) {
                for (node *c = old[i], *nx; c; c = nx) {
                    nx = c->hash_next;
                    size_t s = hash_slot(t, c->off);
                    c->hash_next = t->hash[s];
                    t->hash[s] = c;
                }
            }
            mcl_mem_free(old);
        }
    }
    size_t s = hash_slot(t, n->off);
    n->hash_next = t->hash[s];
    t->hash[s] = n;
}

static node **hash_find(const mcl_tlsf *t, uint64_t off)
{
    node **p = &t->hash[hash_slot(t, off)];
    while (*p && (*p)->off != off) p = &(*p)->hash_next;
    return p;
}

static node *take_spare(mcl_tlsf *t)
{
    node *n = t->spare;
    t->spare = n->free_next;
    t->spare_count--;
    t->node_count++;
    *n = (node){0};
    return n;
}

static void release_node(mcl_tlsf *t, node *n)
{
    t->node_count--;
    if (t->spare_count >= SPARE_MAX) {
        mcl_mem_free(n);
        return;
    }
    n->free_next = t->spare;
    t->spare = n;
    t->spare_count++;
}

/* Pre-reserving means an alloc never fails half-way through a split. */
static int reserve_nodes(mcl_tlsf *t, unsigned want)
{
    while (t->spare_count < want) {
        node *n = mcl_mem_malloc(sizeof *n);
        if (!n) return -ENOMEM;
        n->free_next = t->spare;
        t->spare = n;
        t->spare_count++;
    }
    return 0;
}

int mcl_tlsf_create(uint64_t size, mcl_tlsf **out)
{
    if (!out) return -EINVAL;
    *out = NULL;
    if (size == 0) return -EINVAL;
    mcl_tlsf *t = mcl_mem_calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    t->size = size;
    t->hash_bits = HASH_MIN_BITS;
    t->hash = mcl_mem_calloc((size_t)1 << HASH_MIN_BITS, sizeof *t->hash);
    if (!t->hash || reserve_nodes(t, 1)) {
        mcl_tlsf_destroy(t);
        return -ENOMEM;
    }
    t->first = take_spare(t);
    t->first->size = size;
    insert_free(t, t->first);
    *out = t;
    return 0;
}

void mcl_tlsf_destroy(mcl_tlsf *t)
{
    if (!t) return;
    for (node *n = t->first, *nx; n; n = nx) {
        nx = n->phys_next;
        mcl_mem_free(n);
    }
    for (node *n = t->spare, *nx; n; n = nx) {
        nx = n->free_next;
        mcl_mem_free(n);
    }
    mcl_mem_free(t->hash);
    mcl_mem_free(t);
}

/* Where an aligned request would start inside n, if it fits at all. The
 * arithmetic stays below n's end, so it cannot wrap. */
static bool fits(const node *n, uint64_t size, uint64_t align, uint64_t *at)
{
    uint64_t pad = (align - (n->off & (align - 1u))) & (align - 1u);
    if (pad >= n->size || n->size - pad < size) return false;
    *at = n->off + pad;
    return true;
}

int mcl_tlsf_alloc(mcl_tlsf *t, uint64_t size, uint64_t alignment,
                   uint64_t *offset_out)
{
    if (!t || !offset_out || size == 0 || alignment == 0 ||
        (alignment & (alignment - 1u)))
        return -EINVAL;
    if (size > t->size) return -ENOSPC;
    if (reserve_nodes(t, 2)) return -ENOMEM;
    uint64_t align = alignment < G ? G : alignment;
    /* Worst-case need: rounded size plus the largest padding an aligned
     * start can cost when ranges begin on granule boundaries. */
    uint64_t rounded = size > UINT64_MAX - (G - 1u) ? UINT64_MAX : (size + G - 1u) & ~(G - 1u);
    uint64_t need = rounded > UINT64_MAX - (align - G) ? UINT64_MAX : rounded + (align - G);
    unsigned fl, sl;
    node *n = NULL;
    uint64_t at = 0;
    if (need != UINT64_MAX && mapping_search(need, &fl, &sl)) {
        n = find_bin(t, &fl, &sl);
        /* Any range in this bin is >= need, so fits() only computes `at`. */
        if (n && !fits(n, size, align, &at)) n = NULL;
    }
    if (!n) {
        /* Good fit over-asks by up to one bin plus the padding bound, so a
         * range in the bins between size and need may still fit. Scanning
         * them keeps the promise that -ENOSPC means nothing fits. It runs
         * only when no range of the worst-case size is free, i.e. when the
         * block is nearly full or the alignment is large for it. */
        mapping(size, &fl, &sl);
        for (node *b; !n && (b = find_bin(t, &fl, &sl)) != NULL;) {
            for (; b && !n; b = b->free_next)
                if (fits(b, size, align, &at)) n = b;
            if (++sl == SL_COUNT) {
                sl = 0;
                if (++fl == FL_COUNT) break;
            }
        }
        if (!n) return -ENOSPC;
    }

    remove_free(t, n);
    if (at > n->off) { /* padding goes back to the free lists */
        node *p = take_spare(t);
        p->off = n->off;
        p->size = at - n->off;
        p->phys_prev = n->phys_prev;
        p->phys_next = n;
        if (p->phys_prev) p->phys_prev->phys_next = p;
        else t->first = p;
        n->phys_prev = p;
        n->off = at;
        n->size -= p->size;
        insert_free(t, p);
    }
    /* Only the block's last range can be shorter than the rounded size. */
    uint64_t foot = rounded < n->size ? rounded : n->size;
    if (n->size > foot) {
        node *r = take_spare(t);
        r->off = n->off + foot;
        r->size = n->size - foot;
        r->phys_prev = n;
        r->phys_next = n->phys_next;
        if (r->phys_next) r->phys_next->phys_prev = r;
        n->phys_next = r;
        n->size = foot;
        insert_free(t, r);
    }
    n->requested = size;
    hash_insert(t, n);
    t->allocation_count++;
    t->bytes_allocated += size;
    t->bytes_used += n->size;
    *offset_out = n->off;
    return 0;
}

int mcl_tlsf_free(mcl_tlsf *t, uint64_t offset)
{
    if (!t) return -EINVAL;
    node **slot = hash_find(t, offset);
    node *n = *slot;
    if (!n) return -EINVAL;
    *slot = n->hash_next;
    t->allocation_count--;
    t->bytes_allocated -= n->requested;
    t->bytes_used -= n->size;

    node *prev = n->phys_prev, *next = n->phys_next;
    if (prev && prev->is_free) {
        remove_free(t, prev);
        prev->size += n->size;
        prev->phys_next = next;
        if (next) next->phys_prev = prev;
        release_node(t, n);
        n = prev;
    }
    if (next && next->is_free) {
        remove_free(t, next);
        n->size += next->size;
        n->phys_next = next->phys_next;
        if (n->phys_next) n->phys_next->phys_prev = n;
        release_node(t, next);
    }
    insert_free(t, n);
    return 0;
}

void mcl_tlsf_stats(const mcl_tlsf *t, struct mcl_tlsf_stats *out)
{
    if (!out) return;
    *out = (struct mcl_tlsf_stats){0};
    if (!t) return;
    out->size = t->size;
    out->bytes_allocated = t->bytes_allocated;
    out->bytes_used = t->bytes_used;
    out->bytes_free = t->size - t->bytes_used;
    out->allocation_count = t->allocation_count;
    out->free_range_count = t->free_range_count;
    if (t->fl_bitmap) {
        unsigned fl = msb64(t->fl_bitmap);
        unsigned sl = msb64(t->sl_bitmap[fl]);
        for (const node *n = t->bins[fl][sl]; n; n = n->free_next)
            if (n->size > out->largest_free_range) out->largest_free_range = n->size;
    }
}

int mcl_tlsf_is_empty(const mcl_tlsf *t)
{
    return t && t->allocation_count == 0;
}

#define CHECK(c) do { if (!(c)) return -__LINE__; } while (0)

int mcl_tlsf_validate(const mcl_tlsf *t)
{
    if (!t) return -EINVAL;
    uint64_t end = 0, nodes = 0, nfree = 0, nalloc = 0, used = 0, requested = 0;
    CHECK(t->first && !t->first->phys_prev);
    for (const node *n = t->first; n; n = n->phys_next) {
        CHECK(++nodes <= t->node_count); /* also stops a cycle */
        CHECK(n->off == end && n->size > 0 && n->off % G == 0);
        CHECK(n->size <= t->size - n->off);
        CHECK(!n->phys_next || n->phys_next->phys_prev == n);
        end = n->off + n->size;
        if (n->is_free) {
            CHECK(!n->phys_next || !n->phys_next->is_free);
            CHECK(n->requested == 0);
            nfree++;
        } else {
            CHECK(n->requested > 0 && n->requested <= n->size);
            CHECK(n->size - n->requested < G);
            CHECK(n->size % G == 0 || end == t->size);
            CHECK(*hash_find(t, n->off) == n);
            nalloc++;
            used += n->size;
            requested += n->requested;
        }
    }
    CHECK(end == t->size && nodes == t->node_count);
    CHECK(nfree == t->free_range_count && nalloc == t->allocation_count);
    CHECK(used == t->bytes_used && requested == t->bytes_allocated);

    uint64_t listed = 0;
    for (unsigned fl = 0; fl < FL_COUNT; fl++) {
        CHECK(!!(t->fl_bitmap >> fl & 1u) == !!t->sl_bitmap[fl]);
        for (unsigned sl = 0; sl < SL_COUNT; sl++) {
            const node *b = t->bins[fl][sl];
            CHECK(!!(t->sl_bitmap[fl] >> sl & 1u) == !!b);
            CHECK(!b || !b->free_prev);
            for (; b; b = b->free_next) {
                unsigned f, s;
                CHECK(++listed <= nfree && b->is_free);
                mapping(b->size, &f, &s);
                CHECK(f == fl && s == sl);
                CHECK(!b->free_next || b->free_next->free_prev == b);
            }
        }
    }
    CHECK(t->fl_bitmap >> FL_COUNT == 0 && listed == nfree);

    uint64_t hashed = 0;
    for (size_t i = 0; i < ((size_t)1 << t->hash_bits); i++)
        for (const node *n = t->hash[i]; n; n = n->hash_next) {
            CHECK(++hashed <= nalloc && !n->is_free);
            CHECK(hash_slot(t, n->off) == i);
        }
    CHECK(hashed == nalloc);
    return 0;
}

int mcl_tlsf_dump_json(const mcl_tlsf *t, char *buf, size_t cap,
                       size_t *needed)
{
    if (!t || (!buf && cap)) return -EINVAL;
    mcl_text s = {.buf = buf, .cap = cap};
    mcl_text_put(&s, "{\"size\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
             ",\"bytes_used\":%" PRIu64 ",\"allocation_count\":%" PRIu64
             ",\"free_range_count\":%" PRIu64 ",\"ranges\":[",
         t->size, t->bytes_allocated, t->bytes_used, t->allocation_count,
         t->free_range_count);
    for (const node *n = t->first; n; n = n->phys_next) {
        mcl_text_put(&s, "%s{\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"free\":%s",
             n == t->first ? "" : ",", n->off, n->size, n->is_free ? "true" : "false");
        if (!n->is_free) mcl_text_put(&s, ",\"requested\":%" PRIu64, n->requested);
        mcl_text_put(&s, "}");
    }
    mcl_text_put(&s, "]}");
    if (needed) *needed = s.len + 1u;
    if (cap) buf[s.len < cap ? s.len : cap - 1u] = '\0';
    return s.len < cap ? 0 : -ENOSPC;
}

int mcl_linear_init(mcl_linear *l, uint64_t size)
{
    if (!l || size == 0) return -EINVAL;
    l->size = size;
    l->used = 0;
    return 0;
}

int mcl_linear_alloc(mcl_linear *l, uint64_t size, uint64_t alignment,
                     uint64_t *offset_out)
{
    if (!l || !offset_out || size == 0 || alignment == 0 ||
        (alignment & (alignment - 1u)))
        return -EINVAL;
    uint64_t pad = (alignment - (l->used & (alignment - 1u))) & (alignment - 1u);
    /* Compare against what is left instead of adding, so nothing wraps. */
    uint64_t left = l->size - l->used;
    if (pad > left || size > left - pad) return -ENOSPC;
    *offset_out = l->used + pad;
    l->used = *offset_out + size;
    return 0;
}

void mcl_linear_reset(mcl_linear *l)
{
    if (l) l->used = 0;
}
