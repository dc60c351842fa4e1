/*
 * Virtual block allocators for device memory: pure offset/size bookkeeping
 * with no GPU behind them, so the placement logic is testable anywhere. The
 * Vulkan memory layer owns one VkDeviceMemory per mcl_tlsf block and uses the
 * offsets returned here to bind tensors.
 *
 * mcl_tlsf is a two-level segregated fit allocator: 32 second-level bins per
 * power of two, bitmaps for O(1) good-fit search. Ranges are carved in units
 * of MCL_TLSF_GRANULE bytes (every offset is a multiple of it, every size is
 * rounded up to it; only the very last range of a block whose size is not a
 * granule multiple may be shorter), so bytes_used can exceed bytes_allocated
 * by up to MCL_TLSF_GRANULE - 1 per allocation.
 *
 * Allocations are freed by the offset alloc returned (not by handle): the
 * caller already has to keep the offset to bind resources, so a second token
 * would only be one more thing to get out of sync. Lookup is a hash table,
 * O(1) expected.
 *
 * Not thread-safe: the owner of the block serialises access.
 * All functions return 0 or a negative errno value.
 */
#ifndef MCL_VK_TLSF_H
#define MCL_VK_TLSF_H

#include <stddef.h>
#include <stdint.h>

#define MCL_TLSF_GRANULE 16u

typedef struct mcl_tlsf mcl_tlsf;

/* No typedef: the name mcl_tlsf_stats belongs to the function below. */
struct mcl_tlsf_stats {
    uint64_t size;               /* block size given to create */
    uint64_t bytes_allocated;    /* sum of live sizes as requested */
    uint64_t bytes_used;         /* same, including granule rounding */
    uint64_t bytes_free;         /* size - bytes_used */
    uint64_t allocation_count;
    uint64_t free_range_count;
    uint64_t largest_free_range; /* 0 when the block is full */
};

/** Creates an allocator managing [0, size). The block starts as one free
 *  range. *out is owned by the caller (release with mcl_tlsf_destroy).
 *  Errors: -EINVAL (size 0 or out NULL), -ENOMEM. */
int mcl_tlsf_create(uint64_t size, mcl_tlsf **out);

/** Releases the bookkeeping; live allocations are simply forgotten.
 *  Accepts NULL. */
void mcl_tlsf_destroy(mcl_tlsf *t);

/** Places size bytes at an offset that is a multiple of alignment (a power of
 *  two; values below MCL_TLSF_GRANULE behave as MCL_TLSF_GRANULE). Any
 *  alignment padding stays free and usable. Fails only when no free range can
 *  hold the request; the block is unchanged on any error.
 *  Errors: -EINVAL (NULL argument, size 0, alignment not a power of two),
 *  -ENOSPC (no fit), -ENOMEM (bookkeeping node allocation failed). */
int mcl_tlsf_alloc(mcl_tlsf *t, uint64_t size, uint64_t alignment,
                   uint64_t *offset_out);

/** Frees the live allocation starting at offset and merges it with free
 *  neighbours at once. Errors: -EINVAL (NULL, or offset is not the start of a
 *  live allocation, e.g. a double free); state is untouched on error. */
int mcl_tlsf_free(mcl_tlsf *t, uint64_t offset);

/** Fills *out with current counters. largest_free_range costs one scan of
 *  the largest non-empty bin; everything else is O(1). */
void mcl_tlsf_stats(const mcl_tlsf *t, struct mcl_tlsf_stats *out);

/** Returns 1 when no allocation is live (0 otherwise, or for NULL). */
int mcl_tlsf_is_empty(const mcl_tlsf *t);

/** Checks every invariant: ranges tile [0, size) exactly, no two adjacent
 *  free ranges, free lists and bitmaps agree, every free range sits in the
 *  bin its size maps to, the offset table holds exactly the live allocations,
 *  and the counters match a full recount. O(ranges + bins), meant for tests
 *  and debug builds. Returns 0 when consistent, -EINVAL for NULL, otherwise
 *  -(source line of the failed check in tlsf.c) as a debugging aid. */
int mcl_tlsf_validate(const mcl_tlsf *t);

/** Writes a JSON description of the block (counters plus every range in
 *  offset order with offset/size/free, and the requested size for
 *  allocations) into buf, snprintf-style: at most cap bytes, always
 *  NUL-terminated when cap > 0; buf may be NULL when cap is 0. *needed (if
 *  non-NULL) receives the full length including the NUL, so a caller can
 *  size a buffer with a first call. Errors: -EINVAL (t NULL, or buf NULL with
 *  cap > 0), -ENOSPC (output truncated). */
int mcl_tlsf_dump_json(const mcl_tlsf *t, char *buf, size_t cap,
                       size_t *needed);

/* Linear (bump) allocator for scratch memory released all at once. Exact
 * sizes, no granule; plain struct so it can live inside other objects. */
typedef struct mcl_linear {
    uint64_t size;
    uint64_t used; /* end of the last allocation */
} mcl_linear;

/** Initialises *l to manage [0, size), empty. No resources are held.
 *  Errors: -EINVAL (l NULL or size 0). */
int mcl_linear_init(mcl_linear *l, uint64_t size);

/** Places size bytes at the next offset that is a multiple of alignment (a
 *  power of two >= 1). Errors: -EINVAL (NULL, size 0, bad alignment),
 *  -ENOSPC (does not fit; *l is unchanged). */
int mcl_linear_alloc(mcl_linear *l, uint64_t size, uint64_t alignment,
                     uint64_t *offset_out);

/** Forgets every allocation; the whole block is free again. Accepts NULL. */
void mcl_linear_reset(mcl_linear *l);

#endif /* MCL_VK_TLSF_H */
