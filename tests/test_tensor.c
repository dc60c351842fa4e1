/* Tensors on a device: shapes, transfers, errors, and lifetime while work is recorded. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static mcl_context *ctx;

static void shapes_and_sizes(void **state)
{
    (void)state;
    int64_t shape[3] = {3, 5, 7};
    mcl_tensor *t = NULL;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 3, shape, &t));
    assert_int_equal(mcl_tensor_dtype(t), MCL_DTYPE_I32);
    assert_int_equal(mcl_tensor_ndim(t), 3);
    assert_int_equal(mcl_tensor_dim(t, 2), 7);
    assert_int_equal(mcl_tensor_dim(t, 3), 0);
    assert_int_equal(mcl_tensor_numel(t), 105);
    assert_int_equal(mcl_tensor_nbytes(t), 420);
    mcl_tensor_destroy(t);

    int64_t one = 1;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_U8, 1, &one, &t));
    assert_int_equal(mcl_tensor_nbytes(t), 1);
    mcl_tensor_destroy(t);
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    mcl_tensor *t = (mcl_tensor *)1;
    int64_t shape[5] = {2, 2, 2, 2, 2};
    assert_int_equal(mcl_tensor_create(ctx, MCL_DTYPE_F32, 0, shape, &t), MCL_ERROR_INVALID_ARGUMENT);
    assert_null(t);
    assert_int_equal(mcl_tensor_create(ctx, MCL_DTYPE_F32, 5, shape, &t), MCL_ERROR_INVALID_ARGUMENT);
    int64_t zero[2] = {4, 0};
    assert_int_equal(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, zero, &t), MCL_ERROR_INVALID_ARGUMENT);
    int64_t negative[1] = {-3};
    assert_int_equal(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, negative, &t), MCL_ERROR_INVALID_ARGUMENT);
    /* A block type's last dimension is a whole number of blocks. */
    assert_int_equal(mcl_tensor_create(ctx, MCL_DTYPE_Q4_0, 1, shape, &t), MCL_ERROR_INVALID_ARGUMENT);
    int64_t blocks[2] = {3, 64};
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_Q4_0, 2, blocks, &t));
    assert_int_equal(mcl_tensor_nbytes(t), 3 * 2 * 18);
    mcl_tensor_destroy(t);
    int64_t super[2] = {2, 512};
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_Q6_K, 2, super, &t));
    assert_int_equal(mcl_tensor_nbytes(t), 2 * 2 * 210);
    mcl_tensor_destroy(t);
    assert_int_equal(mcl_tensor_create(ctx, (mcl_dtype)99, 1, shape, &t), MCL_ERROR_INVALID_ARGUMENT);
    /* Larger than any buffer the device can address: refused, never truncated. */
    int64_t huge[2] = {INT64_C(1) << 31, INT64_C(1) << 20};
    assert_int_equal(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, huge, &t), MCL_ERROR_TOO_LARGE);
    int64_t overflow[2] = {INT64_MAX, 4};
    assert_int_equal(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, overflow, &t), MCL_ERROR_TOO_LARGE);
    assert_true(strlen(mcl_context_last_error(ctx)) > 0);

    int64_t n = 16;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &t));
    float data[17] = {0};
    assert_int_equal(mcl_tensor_upload(t, 0, data, 68), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_upload(t, 4, data, 64), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_upload(t, UINT64_MAX - 2, data, 8), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_upload(t, 0, NULL, 8), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_download(t, 0, data, 0), MCL_ERROR_INVALID_ARGUMENT);
    mcl_tensor_destroy(t);
}

static void upload_download_round_trip(void **state)
{
    (void)state;
    const size_t n = 100003;  /* prime: no power-of-two luck */
    int64_t shape = (int64_t)n;
    float *src = malloc(n * sizeof *src), *dst = malloc(n * sizeof *dst);
    assert_non_null(src);
    assert_non_null(dst);
    mcl_fill_random(src, n, 7, -1000.0f, 1000.0f);
    mcl_tensor *t;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &t));
    assert_mcl_ok(mcl_tensor_upload(t, 0, src, n * sizeof(float)));
    memset(dst, 0, n * sizeof *dst);
    assert_mcl_ok(mcl_tensor_download(t, 0, dst, n * sizeof(float)));
    int exact = memcmp(src, dst, n * sizeof(float)) == 0;
    mcl_test_record_bool("upload/download round trip is byte-exact", exact);
    assert_true(exact);

    /* Partial writes at odd byte offsets land where they were aimed and nowhere else. */
    const unsigned char patch[5] = {1, 2, 3, 4, 5};
    assert_mcl_ok(mcl_tensor_upload(t, 13, patch, sizeof patch));
    unsigned char window[9];
    assert_mcl_ok(mcl_tensor_download(t, 11, window, sizeof window));
    const unsigned char *orig = (const unsigned char *)src;
    assert_int_equal(window[0], orig[11]);
    assert_int_equal(window[1], orig[12]);
    assert_memory_equal(window + 2, patch, sizeof patch);
    assert_int_equal(window[7], orig[18]);
    assert_int_equal(window[8], orig[19]);
    mcl_tensor_destroy(t);
    free(src);
    free(dst);
}

/* Inputs destroyed after an op is recorded but before it runs: the memory must stay alive
 * until the work is done (otherwise the GPU reads freed memory). */
static void destroy_while_recorded(void **state)
{
    (void)state;
    const size_t n = 4099;
    int64_t shape = (int64_t)n;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *y = malloc(n * sizeof *y);
    mcl_fill_random(a, n, 11, -1, 1);
    mcl_fill_random(b, n, 12, -1, 1);
    mcl_tensor *ta, *tb, *ty;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &ta));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &tb));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &ty));
    assert_mcl_ok(mcl_tensor_upload(ta, 0, a, n * 4));
    assert_mcl_ok(mcl_tensor_upload(tb, 0, b, n * 4));
    assert_mcl_ok(mcl_add(ctx, ta, tb, ty));
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    /* New tensors must not reuse the memory the recorded add still reads. */
    mcl_tensor *tz;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &tz));
    float *zeros = calloc(n, sizeof *zeros);
    assert_mcl_ok(mcl_tensor_upload(tz, 0, zeros, n * 4));
    assert_mcl_ok(mcl_tensor_download(ty, 0, y, n * 4));
    for (size_t i = 0; i < n; i++)
        assert_true(y[i] == a[i] + b[i]);
    mcl_tensor_destroy(ty);
    mcl_tensor_destroy(tz);
    free(zeros);
    free(a);
    free(b);
    free(y);
}

static void tensors_of_other_contexts_are_refused(void **state)
{
    (void)state;
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_context *other = NULL;
    assert_mcl_ok(mcl_context_create(&desc, &other));
    int64_t n = 8;
    mcl_tensor *mine, *theirs;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &mine));
    assert_mcl_ok(mcl_tensor_create(other, MCL_DTYPE_F32, 1, &n, &theirs));
    assert_int_equal(mcl_add(ctx, mine, theirs, mine), MCL_ERROR_WRONG_CONTEXT);
    mcl_tensor_destroy(mine);
    /* Destroying a context takes its remaining tensors with it. */
    mcl_context_destroy(other);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes_and_sizes),
        cmocka_unit_test(bad_arguments_are_refused),
        cmocka_unit_test(upload_download_round_trip),
        cmocka_unit_test(destroy_while_recorded),
        cmocka_unit_test(tensors_of_other_contexts_are_refused),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
