/* The allocator's statistics and JSON dump, for users and tools. */
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "../core/text.h"
#include "core/alloc.h"

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

static void put_block(mcl_text *t, const mcl_block *b, const char *kind, int first)
{
    mcl_text_put(t, "%s\n    {\"kind\": \"%s\", \"size\": %llu, \"memory_type\": %u, \"live\": %llu",
        first ? "" : ",", kind, (unsigned long long)b->size, b->type,
        (unsigned long long)b->live);
    if (b->tlsf) {
        size_t needed = 0;
        mcl_tlsf_dump_json(b->tlsf, NULL, 0, &needed);
        char *ranges = mcl_mem_malloc(needed);
        if (ranges && mcl_tlsf_dump_json(b->tlsf, ranges, needed, NULL) == 0)
            mcl_text_put(t, ", \"tlsf\": %s", ranges);
        mcl_mem_free(ranges);
    } else if (!b->dedicated) {
        mcl_text_put(t, ", \"used\": %llu", (unsigned long long)b->linear.used);
    }
    mcl_text_put(t, "}");
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
    mcl_text t = {.buf = buffer, .cap = capacity};
    mcl_text_put(&t, "{\n  \"bytes_allocated\": %llu,\n  \"bytes_allocated_peak\": %llu,\n"
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
        mcl_text_put(&t, "%s%llu", h ? ", " : "", (unsigned long long)s.heap_reserved[h]);
    mcl_text_put(&t, "],\n  \"blocks\": [");
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
    mcl_text_put(&t, "\n  ]\n}\n");
    if (needed)
        *needed = t.len + 1;
    return t.len < capacity ? MCL_SUCCESS : MCL_ERROR_TOO_LARGE;
}
