/* The GPU profiler: dispatches counted per kernel and operation, eager and in replayed graphs,
 * with their declared bytes and FLOPs; nothing counted while it is stopped or for a graph
 * captured before it started; its refusal where the device has no timestamps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "vk/runtime.h"

static mcl_context *ctx;

#define N 1000
#define ADDS 7

/* The line whose op is `op` (and whose kernel starts with `kernel`, where given). */
static const mcl_profile_row *find(const mcl_profile_row *rows, uint32_t n, const char *op,
                                   const char *kernel)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(rows[i].op, op) == 0 &&
            (!kernel || strncmp(rows[i].kernel, kernel, strlen(kernel)) == 0))
            return &rows[i];
    return NULL;
}

static uint32_t read_rows(mcl_profile_row *rows, uint32_t capacity)
{
    uint32_t n = 0;
    rows[0].size = sizeof rows[0];
    assert_mcl_ok(mcl_profiler_rows(ctx, rows, capacity, &n));
    for (uint32_t i = 0; i < n; i++)
        printf("  %-28s %-40s %6llu %10.3f ms %12.0f B %12.0f FLOP\n", rows[i].op,
               rows[i].kernel, (unsigned long long)rows[i].count, rows[i].seconds * 1e3,
               rows[i].bytes, rows[i].flops);
    return n;
}

static void eager_dispatches_are_counted(void **state)
{
    (void)state;
    int64_t shape = N, ms[2] = {8, 64}, ws[2] = {32, 64}, cs[2] = {8, 32};
    float *data = mcl_test_random_floats(N, 1, -1.0f, 1.0f);
    mcl_tensor *a = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &shape, data);
    mcl_tensor *b = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &shape, data);
    mcl_tensor *y = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &shape, NULL);
    mcl_tensor *x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ms, data);
    mcl_tensor *w = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, ws, data);
    mcl_tensor *c = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, cs, NULL);
    free(data);

    /* Before any start: nothing. */
    assert_mcl_ok(mcl_add(ctx, a, b, y));
    mcl_profile_row rows[64];
    uint32_t n = 0;
    assert_mcl_ok(mcl_profiler_rows(ctx, NULL, 0, &n));
    assert_int_equal(n, 0);

    assert_mcl_ok(mcl_profiler_start(ctx));
    for (int i = 0; i < ADDS; i++)
        assert_mcl_ok(mcl_add(ctx, a, b, y));
    assert_mcl_ok(mcl_matmul(ctx, x, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c));
    assert_mcl_ok(mcl_profiler_stop(ctx));
    /* Stopped: these are not counted. */
    assert_mcl_ok(mcl_add(ctx, a, b, y));
    assert_mcl_ok(mcl_finish(ctx));

    n = read_rows(rows, 64);
    const mcl_profile_row *add = find(rows, n, "binary_f32", NULL);
    assert_non_null(add);
    assert_int_equal(add->count, ADDS);
    assert_true(add->seconds > 0.0);
    /* No op named itself: the bytes of the three buffers bound, per dispatch. */
    assert_true(add->bytes == (double)ADDS * 3 * N * 4);
    assert_true(add->flops == 0.0);
    /* The matmul declares its FLOPs: 2 m n k. */
    const mcl_profile_row *mm = NULL;
    for (uint32_t i = 0; i < n && !mm; i++)
        if (strncmp(rows[i].op, "matmul", 6) == 0)
            mm = &rows[i];
    assert_non_null(mm);
    assert_int_equal(mm->count, 1);
    assert_true(mm->flops == 2.0 * 8 * 32 * 64);
    /* Most time first. */
    for (uint32_t i = 1; i < n; i++)
        assert_true(rows[i - 1].seconds >= rows[i].seconds);
    double sum = 0.0, span = 0.0;
    uint64_t dropped = 1;
    assert_mcl_ok(mcl_profiler_totals(ctx, &sum, &span, &dropped));
    assert_int_equal(dropped, 0);
    assert_true(sum > 0.0 && span >= sum * 0.999);

    /* A buffer too small for the lines, and the count query. */
    uint32_t one = 0;
    mcl_profile_row first[1] = {{.size = sizeof first[0]}};
    assert_int_equal(mcl_profiler_rows(ctx, first, 1, &one), n > 1 ? MCL_ERROR_TOO_LARGE
                                                                    : MCL_SUCCESS);
    assert_int_equal(one, n);
    assert_string_equal(first[0].op, rows[0].op);

    size_t needed = 0;
    assert_int_equal(mcl_profiler_json(ctx, NULL, 0, &needed), MCL_ERROR_TOO_LARGE);
    char *json = malloc(needed);
    assert_non_null(json);
    assert_mcl_ok(mcl_profiler_json(ctx, json, needed, NULL));
    assert_non_null(strstr(json, "\"op\": \"binary_f32\""));
    assert_non_null(strstr(json, "\"dispatch_seconds\""));
    free(json);

    /* A tool's kernel (fill_pattern_u32, not in the library's table) under its own name. */
    const mcl_kernel_desc fill = {
        .id = MCL_KERNEL_FILL_PATTERN_U32,
        .module = &mcl_spirv_tool_modules[MCL_KERNEL_FILL_PATTERN_U32],
        .binding_count = 1,
        .push_size = 7 * sizeof(uint32_t),
    };
    const mcl_kernel *kernel;
    assert_mcl_ok(mcl_kernel_get(ctx, &fill, &kernel));
    uint32_t push[7] = {N, 5}; /* n, seed; no stride, value, floats or signs */
    assert_mcl_ok(mcl_profiler_start(ctx));
    assert_mcl_ok(mcl_dispatch(ctx, kernel, NULL, 0, &y, 1, push, 4, 1, 1));
    assert_mcl_ok(mcl_profiler_stop(ctx));
    assert_mcl_ok(mcl_finish(ctx));
    n = read_rows(rows, 64);
    assert_non_null(find(rows, n, "fill_pattern_u32", "fill_pattern_u32[x="));

    /* A new start clears the profile. */
    assert_mcl_ok(mcl_profiler_start(ctx));
    assert_mcl_ok(mcl_profiler_stop(ctx));
    assert_mcl_ok(mcl_profiler_rows(ctx, NULL, 0, &n));
    assert_int_equal(n, 0);

    mcl_tensor *all[] = {a, b, y, x, w, c};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    assert_true(mcl_test_record_bool("profiler eager", 1));
}

static void graph_replays_are_counted(void **state)
{
    (void)state;
    int64_t shape = N;
    float *data = mcl_test_random_floats(N, 2, -1.0f, 1.0f);
    mcl_tensor *a = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &shape, data);
    mcl_tensor *b = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &shape, data);
    mcl_tensor *y = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &shape, NULL);
    free(data);

    /* Captured before the start: its replays carry no timestamps. */
    mcl_graph *before = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_add(ctx, a, b, y));
    assert_mcl_ok(mcl_graph_end(ctx, &before));

    assert_mcl_ok(mcl_profiler_start(ctx));
    mcl_graph *g = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_add(ctx, a, b, y));
    assert_mcl_ok(mcl_binary(ctx, MCL_BINARY_MUL, y, b, y));
    assert_mcl_ok(mcl_graph_end(ctx, &g));
    for (int i = 0; i < 3; i++) {
        assert_mcl_ok(mcl_graph_replay(ctx, g));
        assert_mcl_ok(mcl_graph_replay(ctx, before));
    }
    assert_mcl_ok(mcl_profiler_stop(ctx));

    mcl_profile_row rows[16];
    uint32_t n = read_rows(rows, 16);
    /* Two dispatches of binary_f32 per replay of g (the add and the multiply, one line or two
     * by their constants), none of the graph captured before the start. */
    uint64_t count = 0;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(rows[i].op, "binary_f32") == 0)
            count += rows[i].count;
    assert_int_equal(count, 6);
    mcl_graph_destroy(g);
    mcl_graph_destroy(before);
    mcl_tensor_destroy(a);
    mcl_tensor_destroy(b);
    mcl_tensor_destroy(y);
    assert_true(mcl_test_record_bool("profiler graphs", 1));
}

/* A device without timestamps (switched off) refuses; the control is the default context. */
static void refused_without_timestamps(void **state)
{
    (void)state;
    setenv("MOTIFCL_DISABLE", "timestamps", 1);
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_context *c = NULL;
    mcl_status s = mcl_context_create(&desc, &c);
    unsetenv("MOTIFCL_DISABLE");
    assert_mcl_ok(s);
    mcl_test_expect_status("profiler without timestamps", mcl_profiler_start(c),
                           MCL_ERROR_UNSUPPORTED);
    mcl_context_destroy(c);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    if (!(info.features_enabled & MCL_FEATURE_TIMESTAMPS)) {
        printf("the device has no timestamps: only the refusal is tested\n");
        const struct CMUnitTest tests[] = {cmocka_unit_test(refused_without_timestamps)};
        return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eager_dispatches_are_counted),
        cmocka_unit_test(graph_replays_are_counted),
        cmocka_unit_test(refused_without_timestamps),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
