/* The allocator's statistics and JSON dump, for users and tools. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"

mcl_status mcl_context_memory_stats(const mcl_context *ctx, mcl_memory_stats *stats)
{
    if (!ctx || !stats || stats->size < offsetof(mcl_memory_stats, reserved))
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_memory_stats current;
    mcl_memory_stats_fill(ctx, &current);
    size_t size = stats->size < sizeof current ? stats->size : sizeof current;
    current.size = stats->size;
    memcpy(stats, &current, size);
    return MCL_SUCCESS;
}

/* snprintf into a growing text that may overflow `cap`: keeps counting what it would need. */
typedef struct text {
    char *buf;
    size_t cap, len;
} text;

static void put(text *t, const char *fmt, ...) MCL_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    int n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, args);
    va_end(args);
    if (n > 0)
        t->len += (size_t)n;
}

static void put_block(text *t, const mcl_block *b, const char *kind, int first)
{
    put(t, "%s\n    {\"kind\": \"%s\", \"size\": %llu, \"memory_type\": %u, \"live\": %llu",
        first ? "" : ",", kind, (unsigned long long)b->size, b->type,
        (unsigned long long)b->live);
    if (b->tlsf) {
        size_t needed = 0;
        mcl_tlsf_dump_json(b->tlsf, NULL, 0, &needed);
        char *ranges = malloc(needed);
        if (ranges && mcl_tlsf_dump_json(b->tlsf, ranges, needed, NULL) == 0)
            put(t, ", \"tlsf\": %s", ranges);
        free(ranges);
    } else if (!b->dedicated) {
        put(t, ", \"used\": %llu", (unsigned long long)b->linear.used);
    }
    put(t, "}");
}

mcl_status mcl_context_memory_json(const mcl_context *ctx, char *buffer, size_t capacity,
                                   size_t *needed)
{
    static const char *const class_names[MCL_MEMORY_CLASS_COUNT] = {
        [MCL_MEMORY_ACTIVATIONS] = "activations",
        [MCL_MEMORY_WEIGHTS] = "weights",
        [MCL_MEMORY_SCRATCH] = "scratch",
    };
    if (!ctx || (!buffer && capacity > 0))
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_memory_stats s;
    mcl_memory_stats_fill(ctx, &s);
    text t = {.buf = buffer, .cap = capacity};
    put(&t, "{\n  \"bytes_allocated\": %llu,\n  \"bytes_allocated_peak\": %llu,\n"
            "  \"bytes_reserved\": %llu,\n  \"staging_bytes\": %llu,\n"
            "  \"allocation_count\": %llu,\n  \"block_count\": %llu,\n"
            "  \"dedicated_count\": %llu,\n  \"block_size\": %llu,\n"
            "  \"largest_free_range\": %llu,\n  \"tensor_memory_type\": %u,\n"
            "  \"staging_memory_type\": %u,\n  \"zero_copy\": %s,\n  \"heap_reserved\": [",
        (unsigned long long)s.bytes_allocated, (unsigned long long)s.bytes_allocated_peak,
        (unsigned long long)s.bytes_reserved, (unsigned long long)s.staging_bytes,
        (unsigned long long)s.allocation_count, (unsigned long long)s.block_count,
        (unsigned long long)s.dedicated_count, (unsigned long long)s.block_size,
        (unsigned long long)s.largest_free_range, s.tensor_memory_type, s.staging_memory_type,
        s.zero_copy ? "true" : "false");
    for (uint32_t h = 0; h < ctx->info.memory_heap_count; h++)
        put(&t, "%s%llu", h ? ", " : "", (unsigned long long)s.heap_reserved[h]);
    put(&t, "],\n  \"blocks\": [");
    int first = 1;
    for (int c = 0; c < MCL_MEMORY_CLASS_COUNT; c++) {
        for (const mcl_block *b = ctx->allocator.pools[c]; b; b = b->next) {
            put_block(&t, b, class_names[c], first);
            first = 0;
        }
    }
    for (const mcl_block *b = ctx->allocator.dedicated; b; b = b->next) {
        put_block(&t, b, "dedicated", first);
        first = 0;
    }
    put(&t, "\n  ]\n}\n");
    if (needed)
        *needed = t.len + 1;
    return t.len < capacity ? MCL_SUCCESS : MCL_ERROR_TOO_LARGE;
}
