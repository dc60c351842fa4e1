/* Tests for the virtual-block allocators in src/vk/tlsf.c. No GPU needed:
 * every block is pure bookkeeping, so even 2^41-byte blocks cost nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlsf.h"

#define GR ((uint64_t)MCL_TLSF_GRANULE)
#define P2(x) (UINT64_C(1) << (x))

/* ---- model ------------------------------------------------------------ */

typedef struct {
    uint64_t off, size, align;
} live_t;

static uint64_t rng_next(uint64_t *s) /* splitmix64: fixed seeds, any libc */
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t rng_range(uint64_t *s, uint64_t lo, uint64_t hi) /* [lo, hi] */
{
    return lo + rng_next(s) % (hi - lo + 1u);
}

/* Written with subtraction so it stays exact for ranges ending near 2^64. */
static bool ranges_overlap(uint64_t a, uint64_t asz, uint64_t b, uint64_t bsz)
{
    return a <= b ? b - a < asz : a - b < bsz;
}

static int cmp_live(const void *x, const void *y)
{
    const live_t *a = x, *b = y;
    return (a->off > b->off) - (a->off < b->off);
}

/* Returns true if any two ranges overlap. Sorts a copy, so O(n log n). */
static bool any_overlap(const live_t *v, size_t n)
{
    live_t *c = malloc((n ? n : 1) * sizeof *c);
    assert_non_null(c);
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_live);
    bool hit = false;
    for (size_t i = 1; i < n && !hit; i++)
        hit = ranges_overlap(c[i - 1].off, c[i - 1].size, c[i].off, c[i].size);
    free(c);
    return hit;
}

static bool placement_ok(const live_t *a, uint64_t block)
{
    return a->off % a->align == 0 && a->off < block && a->size <= block - a->off;
}

/* What the allocator really occupies: granule rounding, clipped at the end. */
static uint64_t footprint(uint64_t off, uint64_t size, uint64_t block)
{
    uint64_t r = (size + GR - 1u) / GR * GR;
    return r < block - off ? r : block - off;
}

/* Brute force: does any gap between live footprints hold the request? Used
 * to prove that -ENOSPC is never returned while a fit exists. */
static bool model_fit_exists(const live_t *v, size_t n, uint64_t block,
                             uint64_t size, uint64_t align)
{
    live_t *c = malloc((n ? n : 1) * sizeof *c);
    assert_non_null(c);
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_live);
    if (align < GR) align = GR;
    bool found = false;
    uint64_t gap = 0;
    for (size_t i = 0; i <= n && !found; i++) {
        uint64_t gap_end = i < n ? c[i].off : block;
        uint64_t pad = (align - (gap % align)) % align;
        found = gap_end > gap && pad < gap_end - gap && gap_end - gap - pad >= size;
        if (i < n) gap = c[i].off + footprint(c[i].off, c[i].size, block);
    }
    free(c);
    return found;
}

static void check_after_op(const mcl_tlsf *t, const live_t *v, size_t n)
{
    assert_int_equal(mcl_tlsf_validate(t), 0);
    struct mcl_tlsf_stats st;
    mcl_tlsf_stats(t, &st);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i].size;
    assert_int_equal(st.allocation_count, n);
    assert_int_equal(st.bytes_allocated, sum);
    assert_true(st.bytes_used >= st.bytes_allocated);
    assert_int_equal(st.bytes_free, st.size - st.bytes_used);
    assert_true(st.largest_free_range <= st.bytes_free);
}

static void check_fully_returned(const mcl_tlsf *t, uint64_t block)
{
    struct mcl_tlsf_stats st;
    mcl_tlsf_stats(t, &st);
    assert_true(mcl_tlsf_is_empty(t));
    assert_int_equal(st.free_range_count, 1);
    assert_int_equal(st.largest_free_range, block);
    assert_int_equal(st.bytes_used, 0);
    assert_int_equal(st.bytes_allocated, 0);
    assert_int_equal(mcl_tlsf_validate(t), 0);
}

/* ---- randomised workload ---------------------------------------------- */

typedef struct {
    mcl_tlsf *t;
    live_t *live;
    size_t n, cap;
    uint64_t block;
    unsigned enospc;
} workload;

static uint64_t pick_size(uint64_t *s, uint64_t block)
{
    uint64_t r = rng_next(s) % 100u;
    if (r < 40) return rng_range(s, 1, 256);
    if (r < 70) return rng_range(s, 1, 64 * 1024);
    if (r < 95) return rng_range(s, 1, 1024 * 1024);
    return rng_range(s, 1, block / 4u);
}

static uint64_t pick_align(uint64_t *s)
{
    return rng_next(s) % 8u ? P2(rng_next(s) % 13u) : P2(rng_next(s) % 21u);
}

static void do_alloc(workload *w, uint64_t size, uint64_t align)
{
    uint64_t off = UINT64_MAX;
    int rc = mcl_tlsf_alloc(w->t, size, align, &off);
    if (rc == -ENOSPC) {
        assert_false(model_fit_exists(w->live, w->n, w->block, size, align));
        w->enospc++;
        return;
    }
    assert_int_equal(rc, 0);
    live_t a = {off, size, align};
    assert_true(placement_ok(&a, w->block));
    for (size_t i = 0; i < w->n; i++)
        assert_false(ranges_overlap(a.off, a.size, w->live[i].off, w->live[i].size));
    assert_true(w->n < w->cap);
    w->live[w->n++] = a;
}

static void do_free(workload *w, size_t i)
{
    uint64_t off = w->live[i].off;
    assert_int_equal(mcl_tlsf_free(w->t, off), 0);
    w->live[i] = w->live[--w->n];
    assert_int_equal(mcl_tlsf_free(w->t, off), -EINVAL); /* now a double free */
}

static void run_workload(workload *w, uint64_t seed, uint64_t block,
                         unsigned ops, unsigned alloc_pct)
{
    memset(w, 0, sizeof *w);
    w->block = block;
    w->cap = ops + 1u;
    w->live = calloc(w->cap, sizeof *w->live);
    assert_non_null(w->live);
    assert_int_equal(mcl_tlsf_create(block, &w->t), 0);
    for (unsigned k = 0; k < ops; k++) {
        if (w->n == 0 || rng_next(&seed) % 100u < alloc_pct)
            do_alloc(w, pick_size(&seed, block), pick_align(&seed));
        else
            do_free(w, (size_t)(rng_next(&seed) % w->n));
        check_after_op(w->t, w->live, w->n);
        if (k % 512u == 0) assert_false(any_overlap(w->live, w->n));
    }
    assert_false(any_overlap(w->live, w->n));
}

static void drain_workload(workload *w, uint64_t seed)
{
    while (w->n) {
        do_free(w, (size_t)(rng_next(&seed) % w->n));
        check_after_op(w->t, w->live, w->n);
    }
    check_fully_returned(w->t, w->block);
    mcl_tlsf_destroy(w->t);
    free(w->live);
}

static void test_random_against_model(void **state)
{
    (void)state;
    /* Odd block sizes exercise the short tail range. */
    static const struct { uint64_t seed, block; unsigned pct; } runs[] = {
        {1, 64u << 20, 60}, {2, (64u << 20) + 7u, 55}, {3, 1u << 30, 70},
        {4, (16u << 20) + 1000u, 52}, {5, 3u << 20, 65},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        workload w;
        run_workload(&w, runs[r].seed, runs[r].block, 2000, runs[r].pct);
        print_message("seed %" PRIu64 ": %zu live, %u ENOSPC\n", runs[r].seed,
                      w.n, w.enospc);
        drain_workload(&w, runs[r].seed * 7u);
    }
}

static void test_fragmentation_figure(void **state)
{
    (void)state;
    workload w;
    run_workload(&w, 42, 256u << 20, 4000, 55);
    struct mcl_tlsf_stats st;
    mcl_tlsf_stats(w.t, &st);
    assert_true(st.bytes_free > 0);
    print_message("fragmentation: %" PRIu64 " live, %" PRIu64 " free ranges, "
                  "largest/free = %" PRIu64 "/%" PRIu64 " = %.3f\n",
                  st.allocation_count, st.free_range_count,
                  st.largest_free_range, st.bytes_free,
                  (double)st.largest_free_range / (double)st.bytes_free);
    drain_workload(&w, 43);
}

/* ---- large offsets ---------------------------------------------------- */

static void test_beyond_2_32_and_2_40(void **state)
{
    (void)state;
    const uint64_t block = P2(41);
    mcl_tlsf *t;
    assert_int_equal(mcl_tlsf_create(block, &t), 0);

    uint64_t a, b, c, d;
    assert_int_equal(mcl_tlsf_alloc(t, 4096, 1, &a), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 4096, P2(32), &b), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 4096, P2(40), &c), 0);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, P2(32)); /* padding below stayed free, not consumed */
    assert_int_equal(c, P2(40));
    assert_int_equal((uint32_t)a, (uint32_t)b); /* 32-bit truncation would alias */
    assert_int_equal((uint32_t)a, (uint32_t)c);
    assert_false(ranges_overlap(a, 4096, b, 4096));
    assert_false(ranges_overlap(b, 4096, c, 4096));

    /* Largest remaining range is [2^40 + 4096, 2^41). */
    struct mcl_tlsf_stats st;
    mcl_tlsf_stats(t, &st);
    assert_int_equal(st.largest_free_range, P2(40) - 4096u);
    assert_int_equal(mcl_tlsf_alloc(t, P2(40) - 4096u, 1, &d), 0);
    assert_int_equal(d, P2(40) + 4096u);
    assert_int_equal(d + (P2(40) - 4096u), block);

    /* Frees are keyed by the full offset: freeing b must not touch a. */
    assert_int_equal(mcl_tlsf_free(t, b), 0);
    assert_int_equal(mcl_tlsf_free(t, b), -EINVAL);
    assert_int_equal(mcl_tlsf_free(t, b + P2(32)), -EINVAL);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    mcl_tlsf_stats(t, &st);
    assert_int_equal(st.allocation_count, 3);
    assert_int_equal(mcl_tlsf_free(t, a), 0);
    assert_int_equal(mcl_tlsf_free(t, c), 0);
    assert_int_equal(mcl_tlsf_free(t, d), 0);
    check_fully_returned(t, block);

    /* 256 slices of 2^33 - 16: identical low 32 bits, all distinct. */
    live_t v[257];
    size_t n = 0;
    uint64_t off;
    while (mcl_tlsf_alloc(t, P2(33) - 16u, P2(33), &off) == 0) {
        assert_true(n < 256);
        v[n] = (live_t){off, P2(33) - 16u, P2(33)};
        assert_true(placement_ok(&v[n], block));
        assert_int_equal((uint32_t)off, 0);
        n++;
    }
    assert_int_equal(n, 256);
    assert_false(any_overlap(v, n));
    assert_int_equal(v[n - 1].off, block - P2(33));
    assert_int_equal(mcl_tlsf_validate(t), 0);
    /* Gaps of 16 bytes remain between slices: a 16-byte piece fits, 17 doesn't. */
    assert_int_equal(mcl_tlsf_alloc(t, 17, 1, &off), -ENOSPC);
    assert_int_equal(mcl_tlsf_alloc(t, 16, 1, &off), 0);
    assert_true(off > P2(40));
    assert_int_equal(mcl_tlsf_free(t, off), 0);
    for (size_t i = 0; i < n; i++) assert_int_equal(mcl_tlsf_free(t, v[i].off), 0);
    check_fully_returned(t, block);
    mcl_tlsf_destroy(t);
}

static void test_full_64bit_block(void **state)
{
    (void)state;
    mcl_tlsf *t;
    uint64_t a, b;
    assert_int_equal(mcl_tlsf_create(UINT64_MAX, &t), 0);
    assert_int_equal(mcl_tlsf_alloc(t, P2(63), P2(63), &a), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 16, P2(63), &b), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, P2(63));
    assert_int_equal(mcl_tlsf_alloc(t, 16, P2(63), &b), -ENOSPC);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(mcl_tlsf_free(t, a), 0);
    assert_int_equal(mcl_tlsf_free(t, P2(63)), 0);
    /* A request within 16 bytes of 2^64 cannot be rounded up; it must still fit. */
    assert_int_equal(mcl_tlsf_alloc(t, UINT64_MAX - 5u, 1, &a), 0);
    assert_int_equal(a, 0);
    assert_int_equal(mcl_tlsf_alloc(t, 1, 1, &b), -ENOSPC);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(mcl_tlsf_free(t, 0), 0);
    check_fully_returned(t, UINT64_MAX);
    mcl_tlsf_destroy(t);
}

/* ---- edge cases ------------------------------------------------------- */

static void test_invalid_arguments(void **state)
{
    (void)state;
    static char junk;
    mcl_tlsf *t = (mcl_tlsf *)(void *)&junk; /* create must clear it on error */
    assert_int_equal(mcl_tlsf_create(0, &t), -EINVAL);
    assert_null(t);
    assert_int_equal(mcl_tlsf_create(1, NULL), -EINVAL);
    mcl_tlsf_destroy(NULL);
    assert_int_not_equal(mcl_tlsf_validate(NULL), 0);
    assert_false(mcl_tlsf_is_empty(NULL));

    const uint64_t block = 1u << 20;
    assert_int_equal(mcl_tlsf_create(block, &t), 0);
    uint64_t off = 12345;
    assert_int_equal(mcl_tlsf_alloc(t, 0, 1, &off), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(t, 16, 0, &off), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(t, 16, 3, &off), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(t, 16, 48, &off), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(t, 16, UINT64_MAX, &off), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(t, 16, 16, NULL), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(NULL, 16, 16, &off), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(t, block + 1u, 1, &off), -ENOSPC);
    assert_int_equal(mcl_tlsf_alloc(t, UINT64_MAX, 1, &off), -ENOSPC);
    assert_int_equal(mcl_tlsf_alloc(t, UINT64_MAX - 1u, P2(63), &off), -ENOSPC);
    assert_int_equal(mcl_tlsf_alloc(t, block, P2(63), &off), 0); /* 0 is aligned */
    assert_int_equal(off, 0);
    assert_int_equal(mcl_tlsf_free(t, 0), 0);
    /* Alignment larger than the block: only offset 0 qualifies. */
    assert_int_equal(mcl_tlsf_alloc(t, 16, 1, &off), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 16, P2(40), &off), -ENOSPC);
    assert_int_equal(mcl_tlsf_free(t, 0), 0);
    assert_int_equal(off, 0);
    check_fully_returned(t, block);

    /* Freeing what was never allocated changes nothing. */
    assert_int_equal(mcl_tlsf_free(NULL, 0), -EINVAL);
    assert_int_equal(mcl_tlsf_free(t, 0), -EINVAL);
    assert_int_equal(mcl_tlsf_alloc(t, 100, 1, &off), 0);
    assert_int_equal(mcl_tlsf_free(t, off + 16u), -EINVAL);
    assert_int_equal(mcl_tlsf_free(t, off + 1u), -EINVAL);
    assert_int_equal(mcl_tlsf_free(t, block), -EINVAL);
    assert_int_equal(mcl_tlsf_free(t, UINT64_MAX), -EINVAL);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(mcl_tlsf_free(t, off), 0);
    assert_int_equal(mcl_tlsf_free(t, off), -EINVAL);
    check_fully_returned(t, block);
    mcl_tlsf_destroy(t);
}

static void test_alignment_padding_reused(void **state)
{
    (void)state;
    mcl_tlsf *t;
    uint64_t a, b, p;
    assert_int_equal(mcl_tlsf_create(1u << 20, &t), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 1, 1, &a), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 100, 4096, &b), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 4096);
    struct mcl_tlsf_stats st;
    mcl_tlsf_stats(t, &st);
    assert_int_equal(st.free_range_count, 2); /* padding [16,4096) + tail */
    assert_int_equal(st.bytes_allocated, 101);
    assert_int_equal(st.bytes_used, 16 + 112);
    assert_int_equal(st.bytes_free, (1u << 20) - 128u);
    /* Good fit picks the padding, the smallest bin that surely fits. */
    assert_int_equal(mcl_tlsf_alloc(t, 2000, 1, &p), 0);
    assert_int_equal(p, 16);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(mcl_tlsf_free(t, a), 0);
    assert_int_equal(mcl_tlsf_free(t, b), 0);
    assert_int_equal(mcl_tlsf_free(t, p), 0);
    check_fully_returned(t, 1u << 20);
    mcl_tlsf_destroy(t);
}

static void test_coalescing(void **state)
{
    (void)state;
    /* Each order frees a middle range last or first, so merges with the
     * left neighbour, the right neighbour and both at once all happen. */
    static const int orders[][3] = {{1, 0, 2}, {0, 2, 1}, {2, 1, 0}, {1, 2, 0}};
    for (size_t o = 0; o < 4; o++) {
        mcl_tlsf *t;
        uint64_t x[3];
        assert_int_equal(mcl_tlsf_create(4096, &t), 0);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(mcl_tlsf_alloc(t, 64, 1, &x[i]), 0);
            assert_int_equal(x[i], 64u * (uint64_t)i);
        }
        for (int i = 0; i < 3; i++) {
            assert_int_equal(mcl_tlsf_free(t, x[orders[o][i]]), 0);
            assert_int_equal(mcl_tlsf_validate(t), 0);
            struct mcl_tlsf_stats st;
            mcl_tlsf_stats(t, &st);
            /* Count free ranges by hand: freed slots plus the tail, merged. */
            bool f[4] = {false, false, false, true};
            for (int k = 0; k <= i; k++) f[orders[o][k]] = true;
            uint64_t runs = 0;
            for (int k = 0; k < 4; k++) runs += f[k] && (k == 0 || !f[k - 1]);
            assert_int_equal(st.free_range_count, runs);
        }
        check_fully_returned(t, 4096);
        mcl_tlsf_destroy(t);
    }
}

static void test_tail_not_granule_multiple(void **state)
{
    (void)state;
    mcl_tlsf *t;
    uint64_t a, b, c;
    assert_int_equal(mcl_tlsf_create(100, &t), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 90, 1, &a), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 4, 1, &b), 0); /* only 4 bytes remain */
    assert_int_equal(b, 96);
    assert_int_equal(mcl_tlsf_alloc(t, 1, 1, &c), -ENOSPC);
    struct mcl_tlsf_stats st;
    mcl_tlsf_stats(t, &st);
    assert_int_equal(st.bytes_used, 100);
    assert_int_equal(st.largest_free_range, 0);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(mcl_tlsf_free(t, a), 0);
    assert_int_equal(mcl_tlsf_free(t, b), 0);
    check_fully_returned(t, 100);
    mcl_tlsf_destroy(t);

    assert_int_equal(mcl_tlsf_create(7, &t), 0); /* smaller than a granule */
    assert_int_equal(mcl_tlsf_alloc(t, 8, 1, &a), -ENOSPC);
    assert_int_equal(mcl_tlsf_alloc(t, 7, 1, &a), 0);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(mcl_tlsf_free(t, a), 0);
    check_fully_returned(t, 7);
    mcl_tlsf_destroy(t);
}

static void test_exhaustion_and_recovery(void **state)
{
    (void)state;
    const uint64_t block = 1u << 20;
    mcl_tlsf *t;
    assert_int_equal(mcl_tlsf_create(block, &t), 0);

    /* Equal sizes whose footprint (3024) is not a bin boundary: recovery
     * relies on the fallback scan, since good fit alone rounds the request
     * up past the freed range's bin. */
    uint64_t offs[400];
    size_t n = 0;
    uint64_t off;
    while (mcl_tlsf_alloc(t, 3020, 1, &off) == 0) {
        assert_true(n < 400);
        offs[n++] = off;
    }
    assert_int_equal(n, block / 3024u);
    assert_int_equal(mcl_tlsf_alloc(t, 3020, 1, &off), -ENOSPC);
    assert_int_equal(mcl_tlsf_validate(t), 0);
    assert_int_equal(mcl_tlsf_free(t, offs[200]), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 3020, 1, &off), 0);
    assert_int_equal(off, offs[200]);
    assert_int_equal(mcl_tlsf_alloc(t, 3020, 1, &off), -ENOSPC);
    for (size_t i = 0; i < n; i++) assert_int_equal(mcl_tlsf_free(t, offs[i]), 0);
    check_fully_returned(t, block);
    mcl_tlsf_destroy(t);

    /* Mixed sizes and alignments until full, checked against brute force. */
    workload w = {0};
    w.block = block;
    w.cap = 4096;
    w.live = calloc(w.cap, sizeof *w.live);
    assert_non_null(w.live);
    assert_int_equal(mcl_tlsf_create(block, &w.t), 0);
    uint64_t seed = 99;
    while (w.enospc < 50) {
        do_alloc(&w, rng_range(&seed, 1, 5000), P2(rng_next(&seed) % 9u));
        check_after_op(w.t, w.live, w.n);
    }
    live_t victim = w.live[w.n / 2];
    do_free(&w, w.n / 2);
    size_t before = w.n;
    do_alloc(&w, victim.size, victim.align);
    assert_int_equal(w.n, before + 1u);
    check_after_op(w.t, w.live, w.n);
    drain_workload(&w, 100);
}

static void test_dump_json(void **state)
{
    (void)state;
    mcl_tlsf *t;
    uint64_t a, b;
    assert_int_equal(mcl_tlsf_create(256, &t), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 10, 1, &a), 0);
    assert_int_equal(mcl_tlsf_alloc(t, 32, 64, &b), 0);
    const char *want =
        "{\"size\":256,\"bytes_allocated\":42,\"bytes_used\":48,"
        "\"allocation_count\":2,\"free_range_count\":2,\"ranges\":["
        "{\"offset\":0,\"size\":16,\"free\":false,\"requested\":10},"
        "{\"offset\":16,\"size\":48,\"free\":true},"
        "{\"offset\":64,\"size\":32,\"free\":false,\"requested\":32},"
        "{\"offset\":96,\"size\":160,\"free\":true}]}";
    size_t need = 0;
    assert_int_equal(mcl_tlsf_dump_json(t, NULL, 0, &need), -ENOSPC);
    assert_int_equal(need, strlen(want) + 1u);
    char small[10];
    assert_int_equal(mcl_tlsf_dump_json(t, small, sizeof small, NULL), -ENOSPC);
    assert_int_equal(strlen(small), sizeof small - 1u);
    assert_memory_equal(small, want, sizeof small - 1u);
    char *buf = malloc(need);
    assert_non_null(buf);
    assert_int_equal(mcl_tlsf_dump_json(t, buf, need, &need), 0);
    assert_string_equal(buf, want);
    assert_int_equal(mcl_tlsf_dump_json(t, NULL, 5, &need), -EINVAL);
    free(buf);
    mcl_tlsf_destroy(t);
}

/* ---- the checks themselves can fail ------------------------------------- */

static void test_negative_control(void **state)
{
    (void)state;
    live_t overlapping[] = {{0, 64, 1}, {1000, 10, 1}, {48, 32, 16}};
    live_t touching[] = {{0, 64, 1}, {64, 64, 1}, {128, 1, 1}};
    assert_true(any_overlap(overlapping, 3));
    assert_false(any_overlap(touching, 3));
    assert_true(ranges_overlap(P2(40), 1, P2(40), 1));
    assert_true(ranges_overlap(UINT64_MAX - 1u, 1, 0, UINT64_MAX));
    assert_false(ranges_overlap(P2(32), 16, 0, 16)); /* same low 32 bits */

    live_t misaligned = {48, 16, 32}, outside = {96, 64, 1}, fine = {64, 32, 32};
    assert_false(placement_ok(&misaligned, 128));
    assert_false(placement_ok(&outside, 128));
    assert_true(placement_ok(&fine, 128));

    /* The brute-force fit oracle must be able to say yes and no. */
    assert_true(model_fit_exists(touching, 3, 1024, 800, 1));
    assert_false(model_fit_exists(touching, 3, 1024, 900, 1));
    assert_false(model_fit_exists(touching, 3, 1024, 800, 1024));
}

/* ---- linear allocator ------------------------------------------------- */

static void test_linear(void **state)
{
    (void)state;
    mcl_linear l;
    uint64_t off = 7;
    assert_int_equal(mcl_linear_init(&l, 0), -EINVAL);
    assert_int_equal(mcl_linear_init(NULL, 16), -EINVAL);
    assert_int_equal(mcl_linear_init(&l, 1000), 0);
    assert_int_equal(mcl_linear_alloc(&l, 0, 1, &off), -EINVAL);
    assert_int_equal(mcl_linear_alloc(&l, 1, 0, &off), -EINVAL);
    assert_int_equal(mcl_linear_alloc(&l, 1, 12, &off), -EINVAL);
    assert_int_equal(mcl_linear_alloc(&l, 1, 1, NULL), -EINVAL);
    assert_int_equal(off, 7);

    assert_int_equal(mcl_linear_alloc(&l, 3, 1, &off), 0);
    assert_int_equal(off, 0);
    assert_int_equal(mcl_linear_alloc(&l, 10, 256, &off), 0);
    assert_int_equal(off, 256);
    assert_int_equal(mcl_linear_alloc(&l, 1, 1, &off), 0);
    assert_int_equal(off, 266);
    assert_int_equal(mcl_linear_alloc(&l, 100, 1024, &off), -ENOSPC);
    assert_int_equal(mcl_linear_alloc(&l, UINT64_MAX, 1, &off), -ENOSPC);
    assert_int_equal(mcl_linear_alloc(&l, 1, P2(63), &off), -ENOSPC);
    assert_int_equal(mcl_linear_alloc(&l, 1000 - 267 + 1, 1, &off), -ENOSPC);
    assert_int_equal(mcl_linear_alloc(&l, 1000 - 267, 1, &off), 0); /* exact */
    assert_int_equal(off + (1000 - 267), 1000);
    assert_int_equal(mcl_linear_alloc(&l, 1, 1, &off), -ENOSPC);

    mcl_linear_reset(&l);
    mcl_linear_reset(NULL);
    assert_int_equal(mcl_linear_alloc(&l, 1000, 1024, &off), 0);
    assert_int_equal(off, 0);

    /* Huge block: offsets beyond 2^40 and alignment arithmetic near 2^64. */
    assert_int_equal(mcl_linear_init(&l, UINT64_MAX), 0);
    assert_int_equal(mcl_linear_alloc(&l, 1, 1, &off), 0);
    assert_int_equal(mcl_linear_alloc(&l, 1, P2(40), &off), 0);
    assert_int_equal(off, P2(40));
    assert_int_equal(mcl_linear_alloc(&l, 1, P2(63), &off), 0);
    assert_int_equal(off, P2(63));
    assert_int_equal(mcl_linear_alloc(&l, 1, P2(63), &off), -ENOSPC);
    assert_int_equal(mcl_linear_alloc(&l, UINT64_MAX - P2(63) - 1u, 1, &off), 0);
    assert_int_equal(l.used, UINT64_MAX);
    assert_int_equal(mcl_linear_alloc(&l, 1, 1, &off), -ENOSPC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_alignment_padding_reused),
        cmocka_unit_test(test_coalescing),
        cmocka_unit_test(test_tail_not_granule_multiple),
        cmocka_unit_test(test_exhaustion_and_recovery),
        cmocka_unit_test(test_random_against_model),
        cmocka_unit_test(test_fragmentation_figure),
        cmocka_unit_test(test_beyond_2_32_and_2_40),
        cmocka_unit_test(test_full_64bit_block),
        cmocka_unit_test(test_dump_json),
        cmocka_unit_test(test_negative_control),
        cmocka_unit_test(test_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
