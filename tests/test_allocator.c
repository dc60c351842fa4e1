/* The tensor allocator on a device: no aliasing across a large pool, exhaustion and recovery,
 * chunked and zero-copy transfers, statistics, memory classes, the runtime's host pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "harness.h"
#include "pattern.h"
#include "ref/ref.h"
#include "vk/inspect.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static mcl_context *ctx;
static mcl_device_info info;

static uint64_t largest_device_heap(void)
{
    uint64_t best = 0;
    for (uint32_t i = 0; i < info.memory_heap_count; i++) {
        if (info.memory_heaps[i].device_local && info.memory_heaps[i].size > best)
            best = info.memory_heaps[i].size;
    }
    return best;
}

static mcl_tensor *make_u32(mcl_context *c, uint64_t bytes, mcl_memory_class cls)
{
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_I32, .ndim = 1,
                            .shape = {(int64_t)(bytes / 4)}, .memory_class = cls};
    mcl_tensor *t = NULL;
    mcl_status s = mcl_tensor_create_ex(c, &desc, &t);
    return s == MCL_SUCCESS ? t : NULL;
}

/* Words of `t` that differ from the pattern of `seed`. */
static uint64_t pattern_mismatches(mcl_tensor *t, uint32_t seed, uint32_t *scratch,
                                   uint64_t scratch_words)
{
    uint64_t words = mcl_tensor_nbytes(t) / 4, bad = 0;
    for (uint64_t start = 0; start < words; start += scratch_words) {
        uint64_t n = words - start < scratch_words ? words - start : scratch_words;
        if (mcl_tensor_download(t, start * 4, scratch, n * 4) != MCL_SUCCESS)
            return words;
        for (uint64_t i = 0; i < n; i++)
            bad += scratch[i] != ref_pattern(seed, (uint32_t)(start + i));
    }
    return bad;
}

static int ranges_overlap(const mcl_tensor *a, const mcl_tensor *b)
{
    mcl_placement pa = mcl_inspect_placement(a), pb = mcl_inspect_placement(b);
    if (pa.block != pb.block)
        return 0;
    return pa.offset < pb.offset + pb.size && pb.offset < pa.offset + pa.size;
}

/* Many tensors, several blocks and dedicated allocations; a distinct GPU-written pattern in
 * each; every one read back. With a heap of 16 GiB or more the pool passes 4 GiB in total;
 * on smaller heaps (Lavapipe: 2 GiB) it is scaled to 40% of the heap and says so. */
static void no_aliasing_across_pool(void **state)
{
    (void)state;
    uint64_t heap = largest_device_heap();
    int full = heap >= 16 * GIB;
    uint64_t target = full ? 4 * GIB + 640 * MIB : heap / 10 * 4;
    uint64_t range = info.max_storage_buffer_range;
    uint64_t big = (range < 300 * MIB ? range : 300 * MIB) / 4 * 4;
    const uint64_t sizes[] = {64 * MIB, 3 * MIB + 12, 4100, big, 17 * MIB + 4, 256};
    mcl_test_note("pool_scale", full ? "full: more than 4 GiB of tensors"
                                     : "scaled to 40% of the device heap (heap under 16 GiB)");

    size_t capacity = 4096, count = 0;
    mcl_tensor **tensors = calloc(capacity, sizeof *tensors);
    assert_non_null(tensors);
    uint64_t total = 0;
    while (total < target && count < capacity) {
        uint64_t bytes = sizes[count % (sizeof sizes / sizeof sizes[0])];
        if (total + bytes > target && bytes > 4096)
            bytes = 4096;
        tensors[count] = make_u32(ctx, bytes, count % 3 == 1 ? MCL_MEMORY_WEIGHTS
                                                               : MCL_MEMORY_ACTIVATIONS);
        assert_non_null(tensors[count]);
        assert_mcl_ok(mcl_fill_pattern(ctx, tensors[count], (uint32_t)(count * 2654435761u + 1)));
        total += bytes;
        count++;
    }
    assert_mcl_ok(mcl_finish(ctx));

    mcl_memory_stats stats = {.size = sizeof stats};
    assert_mcl_ok(mcl_context_memory_stats(ctx, &stats));
    printf("pool: %zu tensors, %.1f MiB, %llu blocks of %.0f MiB, %llu dedicated\n", count,
           (double)total / MIB, (unsigned long long)stats.block_count,
           (double)stats.block_size / MIB, (unsigned long long)stats.dedicated_count);
    assert_true(stats.block_count >= 2);
    assert_true(stats.dedicated_count >= 1);
    assert_true(stats.bytes_allocated >= total);

    /* The allocator's own view: no two tensors share a byte of a block. */
    uint64_t overlaps = 0;
    for (size_t i = 0; i < count; i++) {
        for (size_t j = i + 1; j < count; j++)
            overlaps += (uint64_t)ranges_overlap(tensors[i], tensors[j]);
    }
    mcl_test_record("allocator ranges overlapping", "count", (double)overlaps, 0.0);
    assert_int_equal(overlaps, 0);

    /* The device's view: every tensor still holds its own pattern. */
    const uint64_t scratch_words = 16 * MIB / 4;
    uint32_t *scratch = malloc(scratch_words * 4);
    assert_non_null(scratch);
    uint64_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += pattern_mismatches(tensors[i], (uint32_t)(i * 2654435761u + 1), scratch,
                                  scratch_words);
    char name[128];
    snprintf(name, sizeof name, "no aliasing: %zu tensors, %.0f MiB, words differing", count,
             (double)total / MIB);
    mcl_test_record(name, "count", (double)bad, 0.0);
    assert_int_equal(bad, 0);

    /* Negative control: a tensor that does share another's bytes is caught by the same check.
     * A second handle on tensor 0's memory gets another pattern. */
    mcl_tensor *alias = NULL;
    assert_mcl_ok(mcl_tensor_view(tensors[0], 0, tensors[0]->dtype, tensors[0]->ndim,
                                  tensors[0]->shape, &alias));
    assert_mcl_ok(mcl_fill_pattern(ctx, alias, 0xdeadbeefu));
    assert_mcl_ok(mcl_finish(ctx));
    mcl_tensor_destroy(alias);
    uint64_t caught = pattern_mismatches(tensors[0], 1, scratch, scratch_words);
    mcl_test_record_bool("negative control: an aliased tensor is detected", caught > 0);
    assert_true(caught > 0);
    free(scratch);

    for (size_t i = 0; i < count; i++)
        mcl_tensor_destroy(tensors[i]);
    free(tensors);
    assert_mcl_ok(mcl_finish(ctx));
    assert_mcl_ok(mcl_context_memory_stats(ctx, &stats));
    assert_int_equal(stats.bytes_allocated, 0);
    assert_int_equal(stats.dedicated_count, 0);
    assert_true(stats.block_count <= MCL_MEMORY_CLASS_COUNT);

    if (info.max_memory_allocation_size <= 4 * GIB)
        mcl_test_note("single_buffer_past_4GiB",
                      "capability skip: maxMemoryAllocationSize is at most 4 GiB, so no single "
                      "buffer can hold bytes past 4 GiB on this device");
}

/* Allocate until refused, then free one and allocate again; a kernel still runs. */
static void out_of_memory_and_recovery(void **state)
{
    (void)state;
    uint64_t chunk = info.max_storage_buffer_range < 2 * GIB ? info.max_storage_buffer_range
                                                              : 2 * GIB;
    if (chunk > info.max_memory_allocation_size)
        chunk = info.max_memory_allocation_size;
    chunk = chunk / MIB * MIB;
    size_t capacity = 1024, count = 0;
    mcl_tensor **held = calloc(capacity, sizeof *held);
    assert_non_null(held);
    mcl_status status = MCL_SUCCESS;
    while (count < capacity) {
        mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_U8, .ndim = 1,
                                .shape = {(int64_t)chunk}};
        status = mcl_tensor_create_ex(ctx, &desc, &held[count]);
        if (status != MCL_SUCCESS)
            break;
        count++;
    }
    printf("allocated %zu tensors of %.0f MiB before: %s (%s)\n", count, (double)chunk / MIB,
           mcl_status_string(status), mcl_context_last_error(ctx));
    char name[128];
    snprintf(name, sizeof name, "exhaustion refused with out-of-device-memory after %zu x %.0f MiB",
             count, (double)chunk / MIB);
    mcl_test_record_bool(name, status == MCL_ERROR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(status, MCL_ERROR_OUT_OF_DEVICE_MEMORY);
    assert_true(count >= 1);

    mcl_tensor_destroy(held[--count]);
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_U8, .ndim = 1,
                            .shape = {(int64_t)chunk}};
    assert_mcl_ok(mcl_tensor_create_ex(ctx, &desc, &held[count]));
    count++;
    for (size_t i = 0; i < count; i++)
        mcl_tensor_destroy(held[i]);
    free(held);

    /* The context works after the refusal. */
    int64_t n = 1000;
    mcl_tensor *a, *b;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &a));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &b));
    float x[1000], y[1000];
    mcl_fill_random(x, 1000, 3, -1, 1);
    assert_mcl_ok(mcl_tensor_upload(a, 0, x, sizeof x));
    assert_mcl_ok(mcl_add(ctx, a, a, b));
    assert_mcl_ok(mcl_tensor_download(b, 0, y, sizeof y));
    int ok = 1;
    for (int i = 0; i < 1000; i++)
        ok &= y[i] == x[i] + x[i];
    mcl_test_record_bool("kernel runs after out-of-memory", ok);
    assert_true(ok);
    mcl_tensor_destroy(a);
    mcl_tensor_destroy(b);
}

/* Transfers larger than the staging ring, at odd offsets, on the zero-copy path where the
 * device has one and on the staged path (forced with MOTIFCL_TRANSFER=staging). */
static void transfers_round_trip(mcl_context *c, const char *label)
{
    mcl_memory_stats stats = {.size = sizeof stats};
    uint64_t bytes = 100 * MIB + 12;
    if (bytes > info.max_storage_buffer_range)
        bytes = info.max_storage_buffer_range / 4 * 4;
    unsigned char *src = malloc(bytes), *dst = malloc(bytes);
    assert_true(src && dst);
    mcl_fill_random((float *)src, bytes / 4, 42, -1, 1);
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_U8, .ndim = 1,
                            .shape = {(int64_t)bytes}};
    mcl_tensor *t;
    assert_mcl_ok(mcl_tensor_create_ex(c, &desc, &t));
    assert_mcl_ok(mcl_tensor_upload(t, 0, src, bytes));
    memset(dst, 0, bytes);
    assert_mcl_ok(mcl_tensor_download(t, 0, dst, bytes));
    int whole = memcmp(src, dst, bytes) == 0;

    /* An odd-sized write at an odd offset, then an overlapping read. */
    uint64_t off = 70 * MIB + 3, len = 9 * MIB + 5;
    if (off + len > bytes) {
        off = bytes / 3 + 1;
        len = bytes / 5 + 3;
    }
    memset(src + off, 0x5a, len);
    assert_mcl_ok(mcl_tensor_upload(t, off, src + off, len));
    assert_mcl_ok(mcl_tensor_download(t, off - 1001, dst, len + 2002));
    int window = memcmp(src + off - 1001, dst, len + 2002) == 0;
    assert_mcl_ok(mcl_context_memory_stats(c, &stats));
    char name[128];
    snprintf(name, sizeof name, "%s transfers of %.1f MiB (ring %.0f MiB) byte-exact", label,
             (double)bytes / MIB, (double)stats.staging_bytes / MIB);
    mcl_test_record_bool(name, whole && window);
    assert_true(whole);
    assert_true(window);
    mcl_tensor_destroy(t);
    free(src);
    free(dst);
}

/* A block type that the device stores split (q4_0, q6_K: bodies, then the d values) uploaded
 * in GGUF bytes larger than the staging ring, whole and then at an odd offset inside a block,
 * downloads as the same bytes. */
static void split_round_trip(mcl_context *c, const char *label, mcl_dtype dtype)
{
    const int64_t k = 4096;
    uint64_t row = (uint64_t)k / mcl_dtype_block_weights(dtype) * mcl_dtype_block_bytes(dtype);
    uint64_t limit = info.max_storage_buffer_range < 100 * MIB ? info.max_storage_buffer_range
                                                               : 100 * MIB;
    int64_t rows = (int64_t)(limit / row);
    uint64_t bytes = (uint64_t)rows * row;
    unsigned char *src = malloc(bytes), *dst = malloc(bytes);
    assert_true(src && dst);
    mcl_fill_random((float *)src, bytes / 4, 43, -1, 1);
    int64_t shape[2] = {rows, k};
    mcl_tensor *t;
    assert_mcl_ok(mcl_tensor_create(c, dtype, 2, shape, &t));
    assert_mcl_ok(mcl_tensor_upload(t, 0, src, bytes));
    memset(dst, 0, bytes);
    assert_mcl_ok(mcl_tensor_download(t, 0, dst, bytes));
    int whole = memcmp(src, dst, bytes) == 0;
    uint64_t off = bytes / 7 + 5, len = bytes / 2 + 11;
    memset(src + off, 0xa5, len);
    assert_mcl_ok(mcl_tensor_upload(t, off, src + off, len));
    memset(dst, 0, bytes);
    assert_mcl_ok(mcl_tensor_download(t, 0, dst, bytes));
    int window = memcmp(src, dst, bytes) == 0;
    char name[128];
    snprintf(name, sizeof name, "%s %s transfers of %.1f MiB byte-exact", label,
             mcl_dtype_name(dtype), (double)bytes / MIB);
    mcl_test_record_bool(name, whole && window);
    assert_true(whole);
    assert_true(window);
    mcl_tensor_destroy(t);
    free(src);
    free(dst);
}

static void transfers_default_path(void **state)
{
    (void)state;
    mcl_memory_stats stats = {.size = sizeof stats};
    assert_mcl_ok(mcl_context_memory_stats(ctx, &stats));
    transfers_round_trip(ctx, stats.zero_copy ? "zero-copy" : "staged");
    split_round_trip(ctx, stats.zero_copy ? "zero-copy" : "staged", MCL_DTYPE_Q4_0);
    split_round_trip(ctx, stats.zero_copy ? "zero-copy" : "staged", MCL_DTYPE_Q6_K);
}

/* A context whose transfers take one forced path. */
static mcl_context *context_with_transfer(const char *mode)
{
    setenv("MOTIFCL_TRANSFER", mode, 1);
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_context *c = NULL;
    mcl_status s = mcl_context_create(&desc, &c);
    unsetenv("MOTIFCL_TRANSFER");
    assert_int_equal(s, MCL_SUCCESS);
    return c;
}

/* Transfers through imported caller memory, and from or to mcl_host_alloc memory, so far. */
static uint64_t imported_copies(const mcl_context *c)
{
    uint64_t imported, pinned;
    mcl_inspect_transfers(c, &imported, &pinned);
    return imported;
}

static uint64_t pinned_copies(const mcl_context *c)
{
    uint64_t imported, pinned;
    mcl_inspect_transfers(c, &imported, &pinned);
    return pinned;
}

/* Caller memory imported for the GPU to copy from and to, where the device can import it. */
static void transfers_imported_path(void **state)
{
    (void)state;
    if (!(info.features_enabled & MCL_FEATURE_EXTERNAL_HOST_MEMORY)) {
        mcl_test_note("imported_transfers", "capability skip: no VK_EXT_external_memory_host");
        skip();
    }
    mcl_context *c = context_with_transfer("import");
    transfers_round_trip(c, "imported");
    char name[96];
    snprintf(name, sizeof name, "imported path ran (%llu imported copies)",
             (unsigned long long)imported_copies(c));
    mcl_test_record_bool(name, imported_copies(c) >= 3);
    assert_true(imported_copies(c) >= 3);
    assert_int_equal(mcl_context_validation_errors(c), 0);
    mcl_context_destroy(c);
}

/* Memory from mcl_host_alloc is copied from and to directly, at any offset and size. */
static void transfers_pinned_path(void **state)
{
    (void)state;
    mcl_context *c = context_with_transfer("import");
    uint64_t bytes = 48 * MIB + 20;
    if (bytes > info.max_storage_buffer_range)
        bytes = info.max_storage_buffer_range / 4 * 4;
    unsigned char *pinned = NULL, *back = NULL;
    assert_mcl_ok(mcl_host_alloc(c, bytes, (void **)&pinned));
    assert_mcl_ok(mcl_host_alloc(c, bytes, (void **)&back));
    assert_int_equal((uintptr_t)pinned % 256, 0);
    mcl_fill_random((float *)pinned, bytes / 4, 77, -1, 1);
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_U8, .ndim = 1,
                            .shape = {(int64_t)bytes}};
    mcl_tensor *t;
    assert_mcl_ok(mcl_tensor_create_ex(c, &desc, &t));
    assert_mcl_ok(mcl_tensor_upload(t, 0, pinned, bytes));
    memset(back, 0, bytes);
    assert_mcl_ok(mcl_tensor_download(t, 0, back, bytes));
    int whole = memcmp(pinned, back, bytes) == 0;
    /* A sub-range inside the pinned allocation, at odd offsets on both sides. */
    assert_mcl_ok(mcl_tensor_upload(t, 7, pinned + 1001, 4099));
    assert_mcl_ok(mcl_tensor_download(t, 7, back + 3, 4099));
    int part = memcmp(pinned + 1001, back + 3, 4099) == 0;
    char name[96];
    snprintf(name, sizeof name, "pinned transfers byte-exact (%llu pinned copies)",
             (unsigned long long)pinned_copies(c));
    mcl_test_record_bool(name, whole && part && pinned_copies(c) == 4);
    assert_true(whole && part);
    assert_int_equal(pinned_copies(c), 4);

    assert_int_equal(mcl_host_alloc(c, 0, (void **)&back), MCL_ERROR_INVALID_ARGUMENT);
    assert_null(back);
    int not_ours = 0;
    mcl_host_free(c, &not_ours);
    mcl_host_free(c, NULL);
    mcl_tensor_destroy(t);
    mcl_host_free(c, pinned);
    assert_int_equal(mcl_context_validation_errors(c), 0);
    mcl_context_destroy(c);   /* frees the second allocation */
}

static void transfers_staged_path(void **state)
{
    (void)state;
    mcl_context *c = context_with_transfer("staging");
    mcl_memory_stats stats = {.size = sizeof stats};
    assert_mcl_ok(mcl_context_memory_stats(c, &stats));
    assert_int_equal(stats.zero_copy, 0);
    transfers_round_trip(c, "staged");
    split_round_trip(c, "staged", MCL_DTYPE_Q4_0);
    split_round_trip(c, "staged", MCL_DTYPE_Q6_K);
    assert_mcl_ok(mcl_context_memory_stats(c, &stats));
    assert_true(stats.staging_bytes > 0);
    assert_int_equal(imported_copies(c), 0);
    assert_int_equal(mcl_context_validation_errors(c), 0);
    mcl_context_destroy(c);
}

/* Bytes the budget still allows on the heap that holds the most of c's blocks: the budget
 * less the usage where VK_EXT_memory_budget reports them, else the heap less c's blocks. */
static uint64_t budget_left(mcl_context *c)
{
    mcl_device_info di = {.size = sizeof di};
    mcl_memory_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_context_device_info(c, &di));
    assert_mcl_ok(mcl_context_memory_stats(c, &st));
    uint32_t h = 0;
    for (uint32_t i = 1; i < di.memory_heap_count && i < MCL_MAX_MEMORY_HEAPS; i++)
        h = st.heap_reserved[i] > st.heap_reserved[h] ? i : h;
    const mcl_memory_heap *heap = &di.memory_heaps[h];
    if (di.features_enabled & MCL_FEATURE_MEMORY_BUDGET)
        return heap->budget > heap->usage ? heap->budget - heap->usage : 0;
    return heap->size > st.heap_reserved[h] ? heap->size - st.heap_reserved[h] : 0;
}

/* Fill the heap with dedicated tensors until less than a block is left, then small tensors
 * must still succeed: they take a smaller block (or an allocation of their own) instead of
 * failing for want of a whole new block. A fresh context, so no block of the suite's context
 * has room to spare. Negative control: on the code before the fallback the 1 KiB tensor was
 * refused with out-of-device-memory. */
static void small_tensor_near_the_budget(void **state)
{
    (void)state;
    mcl_context *c = context_with_transfer("auto");
    mcl_memory_stats st = {.size = sizeof st};
    assert_mcl_ok(mcl_context_memory_stats(c, &st));
    uint64_t block = st.block_size;
    /* A tensor above a quarter of a block gets an allocation of its own. */
    uint64_t floor = (block / 4 + 4 * MIB) / MIB * MIB;
    uint64_t chunk = info.max_storage_buffer_range < 2 * GIB ? info.max_storage_buffer_range
                                                              : 2 * GIB;
    if (chunk > info.max_memory_allocation_size)
        chunk = info.max_memory_allocation_size;
    chunk = chunk / MIB * MIB;
    assert_true(chunk >= floor);

    /* Warm the transfer path first: a staging ring made later would need budget too. */
    mcl_tensor *warm = make_u32(c, 4096, MCL_MEMORY_ACTIVATIONS);
    assert_non_null(warm);
    uint32_t word = 7;
    assert_mcl_ok(mcl_tensor_upload(warm, 0, &word, sizeof word));
    mcl_tensor_destroy(warm);
    assert_mcl_ok(mcl_finish(c));

    size_t capacity = 4096, count = 0;
    mcl_tensor **held = calloc(capacity, sizeof *held);
    assert_non_null(held);
    uint64_t last = 0;
    for (;;) {
        mcl_tensor *t = count < capacity ? make_u32(c, chunk, MCL_MEMORY_WEIGHTS) : NULL;
        if (t) {
            held[count++] = t;
            last = chunk;
            continue;
        }
        if (chunk == floor || count == capacity)
            break;
        chunk = chunk / 2 > floor ? chunk / 2 / MIB * MIB : floor;
    }
    /* Leave some room (an eighth of a block and 8 MiB where the sizes allow, else 4 MiB):
     * give back the last tensor and take less. */
    uint64_t room = last - block / 8 - 8 * MIB > block / 4 ? block / 8 + 8 * MIB : 4 * MIB;
    if (budget_left(c) < 2 * MIB && count > 0 && last - room > block / 4) {
        mcl_tensor_destroy(held[--count]);
        assert_mcl_ok(mcl_finish(c));
        held[count] = make_u32(c, last - room, MCL_MEMORY_WEIGHTS);
        assert_non_null(held[count]);
        count++;
    }
    uint64_t left = budget_left(c);
    printf("filled with %zu dedicated tensors; %.1f MiB left, blocks of %.0f MiB\n", count,
           (double)left / MIB, (double)block / MIB);
    mcl_test_record_figure("budget left after the fill", (double)left / MIB, "MiB");
    assert_true(left < block);

    /* A pooled tensor (a quarter of a block at most) for which no halving of the block size
     * both holds it and fits the budget takes an allocation of exactly its size. */
    mcl_tensor *middle = NULL;
    uint64_t middle_bytes = (left - left / 8) / 256 * 256, halving = block;
    while (halving / 2 >= middle_bytes)
        halving /= 2;
    if (middle_bytes >= MIB && middle_bytes <= block / 4 && halving > left) {
        mcl_memory_stats pre = {.size = sizeof pre}, post = {.size = sizeof post};
        assert_mcl_ok(mcl_context_memory_stats(c, &pre));
        middle = make_u32(c, middle_bytes, MCL_MEMORY_ACTIVATIONS);
        mcl_test_record_bool("a pooled tensor takes an allocation of its own near the budget",
                             middle != NULL);
        assert_non_null(middle);
        assert_mcl_ok(mcl_context_memory_stats(c, &post));
        assert_int_equal(post.dedicated_count, pre.dedicated_count + 1);
        assert_int_equal(post.block_count, pre.block_count);
        assert_true(post.bytes_reserved - pre.bytes_reserved >= middle_bytes);
        assert_true(post.bytes_reserved - pre.bytes_reserved < halving);
        left = budget_left(c);
        printf("%.1f MiB tensor in an allocation of its own; %.1f MiB left\n",
               (double)middle_bytes / MIB, (double)left / MIB);
    } else {
        mcl_test_note("own_allocation", "not reached: the room left suits no such tensor");
    }

    mcl_memory_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    assert_mcl_ok(mcl_context_memory_stats(c, &before));
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_I32, .ndim = 1,
                            .shape = {256}};
    mcl_tensor *small = NULL, *second = NULL;
    mcl_status status = mcl_tensor_create_ex(c, &desc, &small);
    printf("1 KiB tensor: %s (%s)\n", mcl_status_string(status),
           status == MCL_SUCCESS ? "" : mcl_context_last_error(c));
    mcl_test_record_bool("1 KiB tensor allocated with less than a block left",
                         status == MCL_SUCCESS);
    assert_int_equal(status, MCL_SUCCESS);
    assert_mcl_ok(mcl_tensor_create_ex(c, &desc, &second));

    /* The statistics count the smaller block as it is. */
    assert_mcl_ok(mcl_context_memory_stats(c, &after));
    uint64_t added = after.bytes_reserved - before.bytes_reserved;
    assert_true(added >= 1024 && added < block);
    assert_true(added <= left);
    assert_int_equal(after.bytes_allocated, before.bytes_allocated + 2048);
    assert_int_equal(after.allocation_count, before.allocation_count + 2);
    assert_int_equal(after.block_count + after.dedicated_count,
                     before.block_count + before.dedicated_count + 1);
    if (after.block_count > before.block_count) {
        /* A smaller block: the second small tensor shares it. */
        assert_ptr_equal(mcl_inspect_placement(small).block, mcl_inspect_placement(second).block);
        assert_true(after.largest_free_range < added);
    }
    size_t needed = 0;
    mcl_context_memory_json(c, NULL, 0, &needed);
    char *json = malloc(needed), size_field[64];
    assert_non_null(json);
    assert_mcl_ok(mcl_context_memory_json(c, json, needed, NULL));
    snprintf(size_field, sizeof size_field, "\"size\": %llu", (unsigned long long)added);
    assert_non_null(strstr(json, size_field));
    free(json);
    mcl_test_record_figure("fallback allocation", (double)added / MIB, "MiB");

    /* Usable: the GPU writes a pattern, the host reads it back. */
    uint32_t words[256];
    assert_mcl_ok(mcl_fill_pattern(c, second, 11));
    assert_int_equal(pattern_mismatches(second, 11, words, 256), 0);

    /* Beyond the budget is still refused, and the context still works after the refusal. */
    mcl_tensor *too_big = NULL;
    uint64_t beyond = left + 4 * MIB > floor ? left + 4 * MIB : floor;
    desc.shape[0] = (int64_t)(beyond / 4);
    assert_int_equal(mcl_tensor_create_ex(c, &desc, &too_big), MCL_ERROR_OUT_OF_DEVICE_MEMORY);

    mcl_tensor_destroy(small);
    mcl_tensor_destroy(second);
    mcl_tensor_destroy(middle);
    for (size_t i = 0; i < count; i++)
        mcl_tensor_destroy(held[i]);
    free(held);
    assert_mcl_ok(mcl_finish(c));
    assert_mcl_ok(mcl_context_memory_stats(c, &after));
    assert_int_equal(after.bytes_allocated, 0);
    assert_int_equal(mcl_context_validation_errors(c), 0);
    mcl_context_destroy(c);
}

static void statistics_and_json(void **state)
{
    (void)state;
    mcl_memory_stats before = {.size = sizeof before}, during = {.size = sizeof during};
    assert_mcl_ok(mcl_context_memory_stats(ctx, &before));
    mcl_tensor *t[10];
    uint64_t bytes = 0;
    for (int i = 0; i < 10; i++) {
        t[i] = make_u32(ctx, 4096 * (uint64_t)(i + 1), MCL_MEMORY_ACTIVATIONS);
        assert_non_null(t[i]);
        bytes += 4096 * (uint64_t)(i + 1);
    }
    assert_mcl_ok(mcl_context_memory_stats(ctx, &during));
    assert_int_equal(during.bytes_allocated, before.bytes_allocated + bytes);
    assert_int_equal(during.allocation_count, before.allocation_count + 10);
    assert_true(during.bytes_allocated_peak >= during.bytes_allocated);
    assert_true(during.bytes_reserved >= during.bytes_allocated);
    assert_true(during.largest_free_range > 0 && during.largest_free_range < during.block_size);

    size_t needed = 0;
    assert_int_equal(mcl_context_memory_json(ctx, NULL, 0, &needed), MCL_ERROR_TOO_LARGE);
    assert_true(needed > 100);
    char *json = malloc(needed);
    assert_mcl_ok(mcl_context_memory_json(ctx, json, needed, NULL));
    assert_int_equal(strlen(json) + 1, needed);
    assert_non_null(strstr(json, "\"blocks\""));
    assert_non_null(strstr(json, "\"activations\""));
    char small[32];
    assert_int_equal(mcl_context_memory_json(ctx, small, sizeof small, NULL), MCL_ERROR_TOO_LARGE);
    assert_int_equal(strlen(small), sizeof small - 1);
    free(json);

    for (int i = 0; i < 10; i++)
        mcl_tensor_destroy(t[i]);
    assert_mcl_ok(mcl_finish(ctx));
    assert_mcl_ok(mcl_context_memory_stats(ctx, &during));
    assert_int_equal(during.bytes_allocated, before.bytes_allocated);
}

/* Scratch tensors are bump-allocated and reclaimed together when the last one goes. */
static void scratch_class_resets(void **state)
{
    (void)state;
    mcl_tensor *t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = make_u32(ctx, 1000 * 4, MCL_MEMORY_SCRATCH);
        assert_non_null(t[i]);
    }
    assert_true(mcl_inspect_placement(t[1]).offset > mcl_inspect_placement(t[0]).offset);
    assert_ptr_equal(mcl_inspect_placement(t[0]).block, mcl_inspect_placement(t[3]).block);
    assert_mcl_ok(mcl_fill_pattern(ctx, t[2], 7));
    for (int i = 0; i < 4; i++)
        mcl_tensor_destroy(t[i]);
    assert_mcl_ok(mcl_finish(ctx));
    mcl_tensor *again = make_u32(ctx, 4000, MCL_MEMORY_SCRATCH);
    assert_non_null(again);
    assert_int_equal(mcl_inspect_placement(again).offset, 0);
    mcl_tensor_destroy(again);

    mcl_tensor_desc bad = {.size = sizeof bad, .dtype = MCL_DTYPE_F32, .ndim = 1, .shape = {4},
                           .memory_class = (mcl_memory_class)9};
    mcl_tensor *none;
    assert_int_equal(mcl_tensor_create_ex(ctx, &bad, &none), MCL_ERROR_INVALID_ARGUMENT);
}

/* The host pool (a model's expert stacks): host-visible memory, outside device-local memory
 * on a device with memory of its own and the tensors' own memory where memory is unified;
 * each tensor an allocation of its own; read by a kernel and transferred like any tensor. A
 * caller's descriptor cannot name it: the class past the public ones is refused. */
static void host_pool_class(void **state)
{
    (void)state;
    const uint32_t visible = 0x2 /* VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT */,
                   local = 0x1 /* VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT */;
    int64_t n = 5000;
    mcl_tensor *a = NULL, *b = NULL, *dev = NULL;
    assert_mcl_ok(mcl_tensor_create_host_pool(ctx, MCL_DTYPE_F32, 1, &n, &a));
    assert_mcl_ok(mcl_tensor_create_host_pool(ctx, MCL_DTYPE_F32, 1, &n, &b));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &dev));
    uint32_t flags = mcl_inspect_memory_flags(a), dev_flags = mcl_inspect_memory_flags(dev);
    int unified = info.device_type == MCL_DEVICE_TYPE_INTEGRATED ||
                  info.device_type == MCL_DEVICE_TYPE_CPU;
    int ok = (flags & visible) && mcl_tensor_in_host_pool(a) && !mcl_tensor_in_host_pool(dev);
    ok &= unified ? flags == dev_flags : !(flags & local);
    ok &= mcl_inspect_placement(a).offset == 0 &&
          mcl_inspect_placement(a).block != mcl_inspect_placement(b).block;
    float *host = malloc((size_t)n * sizeof *host), *back = malloc((size_t)n * sizeof *back);
    assert_true(host && back);
    for (int64_t i = 0; i < n; i++)
        host[i] = (float)i * 0.5f - 7.0f;
    assert_mcl_ok(mcl_tensor_upload(a, 0, host, (uint64_t)n * 4));
    assert_mcl_ok(mcl_copy(ctx, a, dev));
    assert_mcl_ok(mcl_tensor_download(dev, 0, back, (uint64_t)n * 4));
    ok &= memcmp(host, back, (size_t)n * 4) == 0;
    assert_mcl_ok(mcl_tensor_download(a, 0, back, (uint64_t)n * 4));
    ok &= memcmp(host, back, (size_t)n * 4) == 0;
    assert_true(mcl_test_record_bool("host pool: host-visible, its own allocation, a kernel "
                                     "reads it, transfers round-trip", ok));
    mcl_tensor_desc bad = {.size = sizeof bad, .dtype = MCL_DTYPE_F32, .ndim = 1, .shape = {4},
                           .memory_class = MCL_MEMORY_CLASS_COUNT};
    mcl_tensor *none;
    assert_int_equal(mcl_tensor_create_ex(ctx, &bad, &none), MCL_ERROR_INVALID_ARGUMENT);
    free(host);
    free(back);
    mcl_tensor_destroy(a);
    mcl_tensor_destroy(b);
    mcl_tensor_destroy(dev);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    info.size = sizeof info;
    mcl_context_device_info(ctx, &info);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(statistics_and_json),
        cmocka_unit_test(scratch_class_resets),
        cmocka_unit_test(host_pool_class),
        cmocka_unit_test(transfers_default_path),
        cmocka_unit_test(transfers_staged_path),
        cmocka_unit_test(transfers_imported_path),
        cmocka_unit_test(transfers_pinned_path),
        cmocka_unit_test(no_aliasing_across_pool),
        cmocka_unit_test(out_of_memory_and_recovery),
        cmocka_unit_test(small_tensor_near_the_budget),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
