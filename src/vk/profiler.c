/* The GPU profiler: a timestamp before and after each dispatch, read back when its batch has
 * finished (or, for a graph, after each replay), summed per (kernel variant, operation).
 *
 * Each eager slot and each graph captured while profiling owns a query pool of
 * MCL_PROFILE_PAIRS pairs, reset at the start of its command buffer. Both timestamps are
 * written at the bottom of the pipe: the first when everything before the dispatch has
 * finished, the second when the dispatch has; their difference is the dispatch's own time
 * when the work before it was waited for (a barrier), and less when an independent dispatch
 * ran beside it. The span of a batch (its first timestamp to its last) less the dispatches'
 * sum is reported as the time between them (barriers, copies, idle).
 *
 * The operation and the bytes and FLOPs a dispatch stands for come from the op
 * (mcl_profile_op) just before it; a dispatch without one counts under its kernel's name with
 * the bytes of the buffers it binds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/text.h"
#include "private.h"

#define MCL_PROFILE_PAIRS 4096u

/* One line of the profile: a kernel variant under an operation's name. */
typedef struct profile_row {
    const mcl_kernel *kernel;
    const char *op;              /* static storage (the op's literal) */
    uint64_t count;
    double seconds, bytes, flops;
} profile_row;

struct mcl_profile_batch {
    VkQueryPool pool;
    uint32_t used;               /* pairs written in the current recording */
    uint32_t row[MCL_PROFILE_PAIRS];        /* each pair's row */
    double bytes[MCL_PROFILE_PAIRS];        /* and what its dispatch declared */
    double flops[MCL_PROFILE_PAIRS];
};

struct mcl_profiler {
    int active;
    profile_row *rows;
    uint32_t row_count, row_capacity;
    mcl_profile_batch *slots[MCL_STREAM_SLOTS];
    double span_seconds;         /* first to last timestamp of each batch, summed */
    uint64_t batches, dropped;   /* batches read; dispatches past a batch's pairs */
    /* The next dispatch's annotation (mcl_profile_op), consumed by it. */
    const char *next_op;
    double next_bytes, next_flops;
};

static mcl_status batch_create(mcl_context *ctx, mcl_profile_batch **out)
{
    mcl_profile_batch *b = mcl_mem_calloc(1, sizeof *b);
    if (!b)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * MCL_PROFILE_PAIRS,
    };
    VkResult result = ctx->vk.vkCreateQueryPool(ctx->device, &info, NULL, &b->pool);
    if (result != VK_SUCCESS) {
        mcl_mem_free(b);
        return mcl_vk_fail(ctx, result, "vkCreateQueryPool");
    }
    *out = b;
    return MCL_SUCCESS;
}

void mcl_profile_batch_destroy(mcl_context *ctx, mcl_profile_batch *b)
{
    if (!b)
        return;
    ctx->vk.vkDestroyQueryPool(ctx->device, b->pool, NULL);
    mcl_mem_free(b);
}

mcl_status mcl_profiler_start(mcl_context *ctx)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    if (!(ctx->info.features_enabled & MCL_FEATURE_TIMESTAMPS)) {
        status = mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                          "mcl_profiler_start: the device's compute queue has no timestamps");
        goto done;
    }
    if (ctx->stream.capture) {
        status = mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                          "mcl_profiler_start: not during a graph capture");
        goto done;
    }
    /* Work recorded before the start is not profiled: it is submitted and waited for. */
    if ((status = mcl_stream_finish(ctx)) != MCL_SUCCESS)
        goto done;
    mcl_profiler *p = ctx->profiler;
    if (!p) {
        p = mcl_mem_calloc(1, sizeof *p);
        if (!p) {
            status = mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
            goto done;
        }
        ctx->profiler = p;
    }
    for (int i = 0; i < MCL_STREAM_SLOTS && status == MCL_SUCCESS; i++)
        if (!p->slots[i])
            status = batch_create(ctx, &p->slots[i]);
    if (status == MCL_SUCCESS) {
        p->row_count = 0;
        p->span_seconds = 0.0;
        p->batches = p->dropped = 0;
        p->next_op = NULL;
        p->active = 1;
    }
done:
    mcl_context_leave(ctx);
    return status;
}

mcl_status mcl_profiler_stop(mcl_context *ctx)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    if (ctx->stream.capture)
        status = mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                          "mcl_profiler_stop: not during a graph capture");
    else
        status = mcl_stream_finish(ctx); /* reads what is still running */
    if (status == MCL_SUCCESS && ctx->profiler)
        ctx->profiler->active = 0;
    mcl_context_leave(ctx);
    return status;
}

void mcl_profiler_destroy(mcl_context *ctx)
{
    mcl_profiler *p = ctx->profiler;
    if (!p)
        return;
    for (int i = 0; i < MCL_STREAM_SLOTS; i++)
        mcl_profile_batch_destroy(ctx, p->slots[i]);
    mcl_mem_free(p->rows);
    mcl_mem_free(p);
    ctx->profiler = NULL;
}

void mcl_profile_op(mcl_context *ctx, const char *op, double bytes, double flops)
{
    mcl_profiler *p = ctx->profiler;
    if (!p || !p->active)
        return;
    p->next_op = op;
    p->next_bytes = bytes;
    p->next_flops = flops;
}

mcl_status mcl_profile_capture_begin(mcl_context *ctx, mcl_capture *capture)
{
    mcl_profiler *p = ctx->profiler;
    capture->profile = NULL;
    if (!p || !p->active)
        return MCL_SUCCESS;
    mcl_status status = batch_create(ctx, &capture->profile);
    if (status == MCL_SUCCESS)
        ctx->vk.vkCmdResetQueryPool(capture->cmd, capture->profile->pool, 0,
                                    2 * MCL_PROFILE_PAIRS);
    return status;
}

void mcl_profile_slot_begin(mcl_context *ctx, uint32_t slot, VkCommandBuffer cmd)
{
    mcl_profiler *p = ctx->profiler;
    if (!p || !p->active)
        return;
    p->slots[slot]->used = 0;
    ctx->vk.vkCmdResetQueryPool(cmd, p->slots[slot]->pool, 0, 2 * MCL_PROFILE_PAIRS);
}

/* The row of (kernel, op), added where new; UINT32_MAX when out of host memory. */
static uint32_t row_of(mcl_profiler *p, const mcl_kernel *kernel, const char *op)
{
    for (uint32_t i = 0; i < p->row_count; i++)
        if (p->rows[i].kernel == kernel && p->rows[i].op == op)
            return i;
    if (p->row_count == p->row_capacity) {
        uint32_t capacity = p->row_capacity ? 2 * p->row_capacity : 64;
        profile_row *grown = mcl_mem_realloc(p->rows, capacity * sizeof *grown);
        if (!grown)
            return UINT32_MAX;
        p->rows = grown;
        p->row_capacity = capacity;
    }
    p->rows[p->row_count] = (profile_row){.kernel = kernel, .op = op};
    return p->row_count++;
}

/* The batch a dispatch recorded now belongs to: the capture's, or the current slot's. */
static mcl_profile_batch *current_batch(mcl_context *ctx)
{
    mcl_profiler *p = ctx->profiler;
    if (ctx->stream.capture)
        return ctx->stream.capture->profile;
    return p && p->active ? p->slots[ctx->stream.current] : NULL;
}

int mcl_profile_before(mcl_context *ctx, VkCommandBuffer cmd)
{
    mcl_profile_batch *b = current_batch(ctx);
    if (!b)
        return 0;
    if (b->used == MCL_PROFILE_PAIRS) {
        ctx->profiler->dropped++;
        return 0;
    }
    ctx->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->pool,
                                2 * b->used);
    return 1;
}

void mcl_profile_after(mcl_context *ctx, VkCommandBuffer cmd, const mcl_kernel *kernel,
                       double bound_bytes, int timed)
{
    mcl_profiler *p = ctx->profiler;
    const char *op = p->next_op;
    p->next_op = NULL;
    if (!timed)
        return;
    mcl_profile_batch *b = current_batch(ctx);
    ctx->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->pool,
                                2 * b->used + 1);
    b->row[b->used] = row_of(p, kernel, op ? op : mcl_kernel_desc_name(&kernel->desc));
    b->bytes[b->used] = op ? p->next_bytes : bound_bytes;
    b->flops[b->used] = op ? p->next_flops : 0.0;
    b->used++;
}

/* Add a finished batch's timestamps to the rows. */
static mcl_status batch_read(mcl_context *ctx, mcl_profile_batch *b)
{
    mcl_profiler *p = ctx->profiler;
    if (!b || b->used == 0)
        return MCL_SUCCESS;
    uint64_t *ticks = mcl_mem_malloc(2 * (size_t)b->used * sizeof *ticks);
    if (!ticks)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    VkResult result = ctx->vk.vkGetQueryPoolResults(
        ctx->device, b->pool, 0, 2 * b->used, 2 * b->used * sizeof *ticks, ticks, sizeof *ticks,
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (result != VK_SUCCESS) {
        mcl_mem_free(ticks);
        return mcl_vk_fail(ctx, result, "vkGetQueryPoolResults");
    }
    uint32_t bits = ctx->info.timestamp_valid_bits;
    uint64_t mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    double tick = ctx->info.timestamp_period_ns * 1e-9;
    for (uint32_t i = 0; i < b->used; i++) {
        if (b->row[i] == UINT32_MAX)
            continue;
        profile_row *r = &p->rows[b->row[i]];
        r->count++;
        r->seconds += (double)(((ticks[2 * i + 1] & mask) - (ticks[2 * i] & mask)) & mask) * tick;
        r->bytes += b->bytes[i];
        r->flops += b->flops[i];
    }
    p->span_seconds +=
        (double)(((ticks[2 * b->used - 1] & mask) - (ticks[0] & mask)) & mask) * tick;
    p->batches++;
    mcl_mem_free(ticks);
    return MCL_SUCCESS;
}

mcl_status mcl_profile_slot_done(mcl_context *ctx, uint32_t slot)
{
    mcl_profiler *p = ctx->profiler;
    if (!p || !p->slots[slot] || p->slots[slot]->used == 0)
        return MCL_SUCCESS;
    mcl_status status = batch_read(ctx, p->slots[slot]);
    p->slots[slot]->used = 0;
    return status;
}

mcl_status mcl_profile_replayed(mcl_context *ctx, mcl_capture *capture)
{
    if (!capture->profile || !ctx->profiler || !ctx->profiler->active)
        return MCL_SUCCESS;
    /* The graph's pool is reset by its next replay: read this one's before that starts. */
    mcl_status status = mcl_stream_finish(ctx);
    if (status == MCL_SUCCESS)
        status = batch_read(ctx, capture->profile);
    return status;
}

/* --- Reports --------------------------------------------------------------------------- */

static int by_seconds(const void *a, const void *b)
{
    double x = ((const mcl_profile_row *)a)->seconds, y = ((const mcl_profile_row *)b)->seconds;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void kernel_label(const mcl_kernel *k, char *out, size_t size)
{
    int n = snprintf(out, size, "%s[x=%u", mcl_kernel_desc_name(&k->desc), k->local_size_x);
    for (uint32_t i = 0; i < k->desc.spec_count && n > 0 && (size_t)n < size; i++)
        n += snprintf(out + n, size - (size_t)n, ",%u", k->desc.spec[i]);
    if (n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, "]");
}

mcl_status mcl_profiler_rows(const mcl_context *ctx, mcl_profile_row *rows, uint32_t capacity,
                             uint32_t *count)
{
    if (!ctx || !count || (!rows && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    const mcl_profiler *p = ctx->profiler;
    uint32_t n = p ? p->row_count : 0;
    *count = n;
    if (!rows)
        return MCL_SUCCESS;
    if (capacity && rows[0].size < offsetof(mcl_profile_row, reserved))
        return MCL_ERROR_INVALID_ARGUMENT;
    size_t stride = rows[0].size;
    mcl_profile_row *all = mcl_mem_calloc(n ? n : 1, sizeof *all);
    if (!all)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        const profile_row *r = &p->rows[i];
        all[i].size = sizeof all[i];
        kernel_label(r->kernel, all[i].kernel, sizeof all[i].kernel);
        snprintf(all[i].op, sizeof all[i].op, "%s", r->op);
        all[i].count = r->count;
        all[i].seconds = r->seconds;
        all[i].bytes = r->bytes;
        all[i].flops = r->flops;
    }
    qsort(all, n, sizeof *all, by_seconds);
    for (uint32_t i = 0; i < n && i < capacity; i++) {
        mcl_profile_row *dst = (mcl_profile_row *)((char *)rows + i * stride);
        size_t keep = stride < sizeof all[i] ? stride : sizeof all[i];
        all[i].size = stride;
        memcpy(dst, &all[i], keep);
    }
    mcl_mem_free(all);
    return n <= capacity ? MCL_SUCCESS : MCL_ERROR_TOO_LARGE;
}

mcl_status mcl_profiler_totals(const mcl_context *ctx, double *dispatch_seconds,
                               double *span_seconds, uint64_t *dropped)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    const mcl_profiler *p = ctx->profiler;
    double sum = 0.0;
    for (uint32_t i = 0; p && i < p->row_count; i++)
        sum += p->rows[i].seconds;
    if (dispatch_seconds)
        *dispatch_seconds = sum;
    if (span_seconds)
        *span_seconds = p ? p->span_seconds : 0.0;
    if (dropped)
        *dropped = p ? p->dropped : 0;
    return MCL_SUCCESS;
}

mcl_status mcl_profiler_json(const mcl_context *ctx, char *buffer, size_t capacity,
                             size_t *needed)
{
    if (!ctx || (!buffer && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    uint32_t n = 0;
    mcl_profiler_rows(ctx, NULL, 0, &n);
    mcl_profile_row *rows = mcl_mem_calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    rows[0].size = sizeof *rows;
    mcl_status status = mcl_profiler_rows(ctx, rows, n, &n);
    double sum = 0.0, span = 0.0;
    uint64_t dropped = 0;
    mcl_profiler_totals(ctx, &sum, &span, &dropped);
    mcl_text t = {.buf = buffer, .cap = capacity};
    mcl_text_put(&t, "{\n  \"dispatch_seconds\": %.9g,\n  \"span_seconds\": %.9g,\n"
                     "  \"dropped\": %llu,\n  \"rows\": [",
                 sum, span, (unsigned long long)dropped);
    for (uint32_t i = 0; status == MCL_SUCCESS && i < n; i++)
        mcl_text_put(&t, "%s\n    {\"op\": \"%s\", \"kernel\": \"%s\", \"count\": %llu, "
                         "\"seconds\": %.9g, \"share\": %.6f, \"bytes\": %.17g, "
                         "\"flops\": %.17g}",
                     i ? "," : "", rows[i].op, rows[i].kernel,
                     (unsigned long long)rows[i].count, rows[i].seconds,
                     sum > 0.0 ? rows[i].seconds / sum : 0.0, rows[i].bytes, rows[i].flops);
    mcl_text_put(&t, "\n  ]\n}\n");
    mcl_mem_free(rows);
    if (status != MCL_SUCCESS)
        return status;
    if (needed)
        *needed = t.len + 1;
    return t.len < capacity ? MCL_SUCCESS : MCL_ERROR_TOO_LARGE;
}

void mcl_profiler_print(const mcl_context *ctx, FILE *out)
{
    uint32_t n = 0;
    mcl_profiler_rows(ctx, NULL, 0, &n);
    mcl_profile_row *rows = mcl_mem_calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return;
    rows[0].size = sizeof *rows;
    double sum = 0.0, span = 0.0;
    uint64_t dropped = 0;
    mcl_profiler_totals(ctx, &sum, &span, &dropped);
    if (mcl_profiler_rows(ctx, rows, n, &n) == MCL_SUCCESS) {
        fprintf(out, "profile: %.3f ms in dispatches, %.3f ms from first to last timestamp "
                     "of each batch%s\n", sum * 1e3, span * 1e3,
                dropped ? " (some dispatches past a batch's timestamps not timed)" : "");
        fprintf(out, "%8s %7s %9s %10s %10s  %-24s %s\n", "ms", "share", "count", "GB/s",
                "GFLOP/s", "op", "kernel");
        for (uint32_t i = 0; i < n; i++) {
            const mcl_profile_row *r = &rows[i];
            double s = r->seconds > 0.0 ? r->seconds : 1e-30;
            fprintf(out, "%8.3f %6.1f%% %9llu %10.1f %10.1f  %-24s %s\n", r->seconds * 1e3,
                    sum > 0.0 ? 100.0 * r->seconds / sum : 0.0, (unsigned long long)r->count,
                    r->bytes / s * 1e-9, r->flops / s * 1e-9, r->op, r->kernel);
        }
    }
    mcl_mem_free(rows);
}

void mcl_profiler_env_report(mcl_context *ctx)
{
    if (!ctx->env.gpu_profile || !ctx->profiler || mcl_stream_finish(ctx) != MCL_SUCCESS)
        return;
    if (ctx->env.gpu_profile == 1) {
        mcl_profiler_print(ctx, stderr);
        return;
    }
    size_t needed = 0;
    mcl_profiler_json(ctx, NULL, 0, &needed);
    char *text = mcl_mem_malloc(needed ? needed : 1);
    FILE *f = text ? fopen(ctx->env.profile_path, "w") : NULL;
    if (f && mcl_profiler_json(ctx, text, needed, NULL) == MCL_SUCCESS &&
        fputs(text, f) >= 0 && fclose(f) == 0)
        mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "profile written to %s", ctx->env.profile_path);
    else {
        if (f)
            fclose(f);
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "MOTIFCL_PROFILE: could not write %s",
                ctx->env.profile_path);
    }
    mcl_mem_free(text);
}
