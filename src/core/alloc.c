/* Host allocations with a live count and a fault switch for tests (see alloc.h). */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_int_fast64_t live;
static atomic_int_fast64_t made;
static atomic_int_fast64_t countdown; /* > 0: the allocation that takes it to 0 fails */
static atomic_int_fast64_t fired;

/* Whether the switch fails this allocation. */
static int injected(void)
{
    atomic_fetch_add_explicit(&made, 1, memory_order_relaxed);
    if (atomic_load_explicit(&countdown, memory_order_relaxed) <= 0)
        return 0;
    if (atomic_fetch_sub(&countdown, 1) != 1)
        return 0;
    atomic_fetch_add(&fired, 1);
    return 1;
}

void *mcl_mem_malloc(size_t size)
{
    if (injected())
        return NULL;
    void *p = malloc(size ? size : 1);
    if (p)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return p;
}

void *mcl_mem_calloc(size_t count, size_t size)
{
    if (injected())
        return NULL;
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return p;
}

void *mcl_mem_realloc(void *ptr, size_t size)
{
    if (injected())
        return NULL;
    void *p = realloc(ptr, size ? size : 1);
    if (p && !ptr)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return p;
}

void mcl_mem_free(void *ptr)
{
    if (!ptr)
        return;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    free(ptr);
}

int64_t mcl_mem_live(void)
{
    return (int64_t)atomic_load(&live);
}

int64_t mcl_mem_count(void)
{
    return (int64_t)atomic_load(&made);
}

void mcl_fault_alloc_after(int64_t n)
{
    atomic_store(&countdown, n > 0 ? n : 0);
}

int64_t mcl_fault_alloc_fired(void)
{
    return (int64_t)atomic_load(&fired);
}
