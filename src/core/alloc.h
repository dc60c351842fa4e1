/* The library's host allocations: every malloc, calloc, realloc and free in src/ goes through
 * these, so that tests can count what is live and make any one allocation fail.
 *
 * The memory is the C library's own (no header is added): a pointer from mcl_mem_malloc may
 * be freed with free() and one from malloc() with mcl_mem_free() without harm, only the live
 * count would drift. Memory that a library or the system allocates (and that must go back to
 * it) is freed with that library's function, never with these.
 *
 * The counters are the one process-wide mutable state besides volk's loader table: they are
 * C11 atomics, so any thread may allocate. The fault switch is for tests only: nothing in the
 * library arms it. */
#ifndef MCL_CORE_ALLOC_H
#define MCL_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *mcl_mem_malloc(size_t size);
void *mcl_mem_calloc(size_t count, size_t size);
/* Like realloc; on failure (real or injected) ptr is untouched and NULL returned. A size of
 * 0 is taken as 1, so that NULL always means failure. */
void *mcl_mem_realloc(void *ptr, size_t size);
void mcl_mem_free(void *ptr);

/* Allocations made through the functions above and not yet freed. */
int64_t mcl_mem_live(void);
/* Allocations (and reallocations) made through them since the process started. */
int64_t mcl_mem_count(void);

/* Make the n-th allocation from now (n >= 1, counting mcl_mem_malloc, mcl_mem_calloc and
 * mcl_mem_realloc) fail as if memory were exhausted, once; later ones succeed again. n <= 0
 * disarms the switch. */
void mcl_fault_alloc_after(int64_t n);
/* Allocations failed by the switch since the process started. */
int64_t mcl_fault_alloc_fired(void);

#endif
