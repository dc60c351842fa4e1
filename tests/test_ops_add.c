/* The first kernel end to end: embedded SPIR-V -> pipeline -> recorded dispatch -> submit ->
 * download, against the CPU reference.
 *
 * Tolerance: Vulkan requires OpFAdd to be correctly rounded, so the GPU sum equals the CPU
 * sum exactly for normal inputs; the inputs here are drawn away from the denormal range,
 * which some devices flush. The NMSE limit is therefore 0, and any difference fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref/ref.h"

static mcl_context *ctx;

typedef struct buffers {
    float *a, *b, *y, *want;
    mcl_tensor *ta, *tb, *ty;
} buffers;

static void setup(buffers *s, size_t n, uint32_t seed)
{
    int64_t shape = (int64_t)n;
    s->a = malloc(n * sizeof(float));
    s->b = malloc(n * sizeof(float));
    s->y = malloc(n * sizeof(float));
    s->want = malloc(n * sizeof(float));
    assert_true(s->a && s->b && s->y && s->want);
    mcl_fill_random(s->a, n, seed, -4.0f, 4.0f);
    mcl_fill_random(s->b, n, seed * 7 + 1, -4.0f, 4.0f);
    ref_add_f32(s->a, s->b, s->want, n);
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &s->ta));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &s->tb));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &shape, &s->ty));
    assert_mcl_ok(mcl_tensor_upload(s->ta, 0, s->a, n * sizeof(float)));
    assert_mcl_ok(mcl_tensor_upload(s->tb, 0, s->b, n * sizeof(float)));
}

static void teardown(buffers *s)
{
    mcl_tensor_destroy(s->ta);
    mcl_tensor_destroy(s->tb);
    mcl_tensor_destroy(s->ty);
    free(s->a);
    free(s->b);
    free(s->y);
    free(s->want);
}

static void add_matches_reference(void **state)
{
    (void)state;
    /* 1, primes, around the 256-wide workgroup, and past 65535 workgroups (grid-stride). */
    static const size_t sizes[] = {1, 7, 255, 256, 257, 1000003, 65535u * 256u + 4097u};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        buffers s;
        setup(&s, n, (uint32_t)(k + 1));
        assert_mcl_ok(mcl_add(ctx, s.ta, s.tb, s.ty));
        assert_mcl_ok(mcl_tensor_download(s.ty, 0, s.y, n * sizeof(float)));
        double nmse = mcl_nmse(s.y, s.want, n);
        char name[64];
        snprintf(name, sizeof name, "add_f32 n=%zu", n);
        printf("%s: nmse %.3g\n", name, nmse);
        int passed = mcl_test_record(name, "nmse", nmse, 0.0);
        teardown(&s);
        assert_true(passed);
    }
}

/* The comparison itself can fail: a reference that is off in one element is caught. */
static void negative_control_wrong_reference(void **state)
{
    (void)state;
    const size_t n = 1031;
    buffers s;
    setup(&s, n, 99);
    assert_mcl_ok(mcl_add(ctx, s.ta, s.tb, s.ty));
    assert_mcl_ok(mcl_tensor_download(s.ty, 0, s.y, n * sizeof(float)));
    s.want[517] += 0.5f;
    double nmse = mcl_nmse(s.y, s.want, n);
    int caught = nmse > 0.0;
    mcl_test_record_bool("negative control: a wrong reference is detected", caught);
    teardown(&s);
    assert_true(caught);
}

/* Dependent ops in one batch: the second reads what the first wrote (a barrier is needed),
 * and an op writes into one of its own inputs. */
static void chained_and_aliased(void **state)
{
    (void)state;
    const size_t n = 70001;
    buffers s;
    setup(&s, n, 5);
    assert_mcl_ok(mcl_add(ctx, s.ta, s.tb, s.ty));   /* y = a + b */
    assert_mcl_ok(mcl_add(ctx, s.ty, s.ta, s.ty));   /* y = y + a */
    assert_mcl_ok(mcl_add(ctx, s.ty, s.ty, s.tb));   /* b = y + y */
    assert_mcl_ok(mcl_tensor_download(s.tb, 0, s.y, n * sizeof(float)));
    for (size_t i = 0; i < n; i++) {
        float y = s.a[i] + s.b[i];
        y = y + s.a[i];
        s.want[i] = y + y;
    }
    double nmse = mcl_nmse(s.y, s.want, n);
    int passed = mcl_test_record("chained adds with aliasing", "nmse", nmse, 0.0);
    teardown(&s);
    assert_true(passed);
}

/* An upload recorded after an op must not overtake it: the op sees the old contents. */
static void upload_does_not_overtake_recorded_work(void **state)
{
    (void)state;
    const size_t n = 40009;
    buffers s;
    setup(&s, n, 17);
    assert_mcl_ok(mcl_add(ctx, s.ta, s.tb, s.ty));  /* recorded, not yet run */
    float *other = calloc(n, sizeof *other);
    assert_mcl_ok(mcl_tensor_upload(s.ta, 0, other, n * sizeof(float)));
    assert_mcl_ok(mcl_tensor_download(s.ty, 0, s.y, n * sizeof(float)));
    double nmse = mcl_nmse(s.y, s.want, n);
    int passed = mcl_test_record("upload ordered after recorded add", "nmse", nmse, 0.0);
    /* And the upload did happen, after the add. */
    assert_mcl_ok(mcl_tensor_download(s.ta, 0, s.y, n * sizeof(float)));
    assert_memory_equal(s.y, other, n * sizeof(float));
    free(other);
    teardown(&s);
    assert_true(passed);
}

static void bad_arguments(void **state)
{
    (void)state;
    int64_t n4 = 4, n5 = 5, shape2[2] = {2, 2};
    mcl_tensor *a, *b, *c, *i32;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n4, &a));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n5, &b));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, shape2, &c));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &n4, &i32));
    assert_int_equal(mcl_add(ctx, a, b, a), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_add(ctx, a, c, a), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_add(ctx, a, i32, a), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_add(ctx, a, NULL, a), MCL_ERROR_INVALID_ARGUMENT);
    mcl_tensor_destroy(a);
    mcl_tensor_destroy(b);
    mcl_tensor_destroy(c);
    mcl_tensor_destroy(i32);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_matches_reference),
        cmocka_unit_test(negative_control_wrong_reference),
        cmocka_unit_test(chained_and_aliased),
        cmocka_unit_test(upload_does_not_overtake_recorded_work),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
