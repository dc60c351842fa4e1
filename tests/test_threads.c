/* Threads and lifetimes, as motifcl.h promises them: contexts created, used and destroyed on
 * several threads at once (run under ThreadSanitizer by scripts/test.sh); one context entered
 * from a second thread refused with MCL_ERROR_CONTEXT_BUSY; models, sessions and GPTs that
 * outlive their context refused with MCL_ERROR_CONTEXT_DESTROYED and destroyed safely after it
 * (run under AddressSanitizer by scripts/test.sh). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model_fixtures.h"
#include "vk/private.h"

#define THREADS 4
#define ROUNDS 3
#define ELEMENTS 4099

static mcl_context *ctx;

/* One thread's work on a context of its own: sums against the host, every round. */
typedef struct worker {
    int index;
    mcl_status status;   /* the first failure, or MCL_SUCCESS */
    uint64_t validation_errors;
    int wrong;           /* elements that differ from the host's sum */
} worker;

static mcl_status add_once(mcl_context *c, uint32_t seed, int *wrong)
{
    float *a = malloc(ELEMENTS * sizeof *a), *b = malloc(ELEMENTS * sizeof *b);
    float *y = malloc(ELEMENTS * sizeof *y);
    mcl_tensor *ta = NULL, *tb = NULL, *ty = NULL;
    int64_t n = ELEMENTS;
    mcl_status s = a && b && y ? MCL_SUCCESS : MCL_ERROR_OUT_OF_HOST_MEMORY;
    if (s == MCL_SUCCESS) {
        mcl_fill_random(a, ELEMENTS, seed, -4.0f, 4.0f);
        mcl_fill_random(b, ELEMENTS, seed + 1, -4.0f, 4.0f);
        s = mcl_tensor_create(c, MCL_DTYPE_F32, 1, &n, &ta);
    }
    if (s == MCL_SUCCESS)
        s = mcl_tensor_create(c, MCL_DTYPE_F32, 1, &n, &tb);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_create(c, MCL_DTYPE_F32, 1, &n, &ty);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_upload(ta, 0, a, sizeof(float) * ELEMENTS);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_upload(tb, 0, b, sizeof(float) * ELEMENTS);
    if (s == MCL_SUCCESS)
        s = mcl_add(c, ta, tb, ty);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_download(ty, 0, y, sizeof(float) * ELEMENTS);
    for (int i = 0; s == MCL_SUCCESS && i < ELEMENTS; i++)
        *wrong += y[i] != a[i] + b[i];
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
    free(a);
    free(b);
    free(y);
    return s;
}

static void *worker_run(void *arg)
{
    worker *w = arg;
    for (int round = 0; round < ROUNDS && w->status == MCL_SUCCESS; round++) {
        /* Odd threads ask for validation themselves: instances with and without the debug
         * extension live side by side. */
        mcl_context_desc desc = {.size = sizeof desc, .device_index = -1,
                                 .flags = (w->index & 1) ? MCL_CONTEXT_VALIDATION : 0};
        mcl_context *c = NULL;
        w->status = mcl_context_create(&desc, &c);
        if (w->status != MCL_SUCCESS)
            break;
        w->status = add_once(c, (uint32_t)(w->index * 100 + round), &w->wrong);
        w->validation_errors += mcl_context_validation_errors(c);
        mcl_context_destroy(c);
    }
    return NULL;
}

/* THREADS contexts at once, each created, used and destroyed ROUNDS times. */
static void contexts_on_threads(void **state)
{
    (void)state;
    pthread_t threads[THREADS];
    worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker){.index = i};
        assert_int_equal(pthread_create(&threads[i], NULL, worker_run, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        printf("thread %d: %s, %d wrong, %llu validation errors\n", i,
               mcl_status_string(workers[i].status), workers[i].wrong,
               (unsigned long long)workers[i].validation_errors);
        assert_mcl_ok(workers[i].status);
        assert_int_equal(workers[i].wrong, 0);
        assert_int_equal(workers[i].validation_errors, 0);
    }
    assert_true(mcl_test_record_bool("contexts on threads", 1));
}

/* A second thread's calls while the first is inside one. The first thread's entry is held
 * open through the runtime's own guard, so the overlap is certain, not a matter of timing. */
typedef struct intruder {
    mcl_tensor *a, *b, *y;
    mcl_status add, upload, finish;
} intruder;

static void *intrude(void *arg)
{
    intruder *in = arg;
    float x = 1.0f;
    in->add = mcl_add(ctx, in->a, in->b, in->y);
    in->upload = mcl_tensor_upload(in->a, 0, &x, sizeof x);
    in->finish = mcl_finish(ctx);
    return NULL;
}

static void shared_context_is_refused(void **state)
{
    (void)state;
    int64_t n = 64;
    intruder in = {0};
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &in.a));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &in.b));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &in.y));
    assert_mcl_ok(mcl_tensor_zero(in.a));
    assert_mcl_ok(mcl_tensor_zero(in.b));

    /* Held by this thread: the other is refused, and nothing of the context changes. */
    pthread_t t;
    assert_mcl_ok(mcl_context_enter(ctx));
    assert_int_equal(pthread_create(&t, NULL, intrude, &in), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    mcl_context_leave(ctx);
    mcl_test_expect_status("add from a second thread", in.add, MCL_ERROR_CONTEXT_BUSY);
    mcl_test_expect_status("upload from a second thread", in.upload, MCL_ERROR_CONTEXT_BUSY);
    mcl_test_expect_status("finish from a second thread", in.finish, MCL_ERROR_CONTEXT_BUSY);

    /* Control: the same calls from the second thread once the first has left succeed (a
     * context may move between threads), and so do nested entries on one thread. */
    assert_int_equal(pthread_create(&t, NULL, intrude, &in), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    mcl_test_expect_status("add after the first thread left", in.add, MCL_SUCCESS);
    mcl_test_expect_status("upload after", in.upload, MCL_SUCCESS);
    mcl_test_expect_status("finish after", in.finish, MCL_SUCCESS);
    assert_mcl_ok(mcl_context_enter(ctx));
    assert_mcl_ok(mcl_add(ctx, in.a, in.b, in.y));
    mcl_context_leave(ctx);
    float y[64];
    assert_mcl_ok(mcl_tensor_download(in.y, 0, y, sizeof y));
    assert_true(y[0] == 1.0f);
    mcl_tensor_destroy(in.a);
    mcl_tensor_destroy(in.b);
    mcl_tensor_destroy(in.y);
    assert_true(mcl_test_record_bool("shared context refused", 1));
}

/* Two threads racing on one context (forbidden) get statuses, not a crash: every call either
 * succeeds or is refused as busy. */
typedef struct racer {
    mcl_tensor *a, *b, *y;
    int busy, other;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    for (int i = 0; i < 300; i++) {
        mcl_status s = mcl_add(ctx, r->a, r->b, r->y);
        if (s == MCL_ERROR_CONTEXT_BUSY)
            r->busy++;
        else if (s != MCL_SUCCESS)
            r->other++;
    }
    return NULL;
}

static void racing_threads_get_statuses(void **state)
{
    (void)state;
    int64_t n = 256;
    racer r[2] = {{0}};
    for (int i = 0; i < 2; i++) {
        assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &r[i].a));
        assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &r[i].b));
        assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &r[i].y));
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    printf("racing: %d and %d calls refused as busy, %d and %d other failures\n", r[0].busy,
           r[1].busy, r[0].other, r[1].other);
    assert_int_equal(r[0].other + r[1].other, 0);
    assert_mcl_ok(mcl_finish(ctx));
    for (int i = 0; i < 2; i++) {
        mcl_tensor_destroy(r[i].a);
        mcl_tensor_destroy(r[i].b);
        mcl_tensor_destroy(r[i].y);
    }
}

/* A model, a session and a GPT left alive when their context is destroyed: refused after it,
 * destroyed safely after it (under ASan: no use after free, no leak). */
static void objects_outlive_their_context(void **state)
{
    (void)state;
    model_fixture_desc d = {.dim = 16, .layers = 1, .heads = 2, .hidden = 24, .vocab = 40,
                            .seed = 5};
    model_fixture f;
    assert_mcl_ok(model_fixture_create(&d, &f));
    char path[512];
    snprintf(path, sizeof path, "%s/outlive.gguf", mcl_test_scratch_dir());
    assert_mcl_ok(model_fixture_write_gguf(&f, path));
    model_fixture_free(&f);

    for (int order = 0; order < 2; order++) {
        mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
        mcl_context *c = NULL;
        assert_mcl_ok(mcl_context_create(&desc, &c));
        mcl_model *m = NULL;
        assert_mcl_ok(mcl_model_open(c, path, NULL, &m));
        mcl_session *s = NULL;
        assert_mcl_ok(mcl_session_create(m, NULL, &s));
        int32_t tokens[3] = {1, 2, 3};
        float logits[40];
        assert_mcl_ok(mcl_session_feed(s, 0, tokens, 3, logits));
        mcl_gpt_desc g = {.size = sizeof g, .vocab = 16, .dim = 16, .layers = 1, .heads = 2,
                          .hidden = 32, .max_seq = 8, .tied_head = 1};
        mcl_gpt *gpt = NULL;
        assert_mcl_ok(mcl_gpt_create(c, &g, 1, &gpt));
        mcl_tensor *loose = NULL; /* a tensor of the caller's: destroyed with the context */
        int64_t n = 10;
        assert_mcl_ok(mcl_tensor_create(c, MCL_DTYPE_F32, 1, &n, &loose));

        mcl_context_destroy(c);
        int32_t token = -1;
        mcl_test_expect_status("feed after the context", mcl_session_feed(s, 0, tokens, 1, NULL),
                               MCL_ERROR_CONTEXT_DESTROYED);
        mcl_test_expect_status("sample after the context",
                               mcl_session_sample(s, 0, NULL, &token),
                               MCL_ERROR_CONTEXT_DESTROYED);
        mcl_session *late = NULL;
        mcl_test_expect_status("session after the context", mcl_session_create(m, NULL, &late),
                               MCL_ERROR_CONTEXT_DESTROYED);
        assert_null(late);
        mcl_test_expect_status("gpt backward after the context", mcl_gpt_backward(gpt),
                               MCL_ERROR_CONTEXT_DESTROYED);
        assert_null(mcl_gpt_parameters(gpt));
        /* Host-side queries still answer. */
        mcl_model_info info = {.size = sizeof info};
        assert_mcl_ok(mcl_model_file_info(m, &info));
        assert_int_equal(info.vocab, 40);
        if (order == 0) {
            mcl_session_destroy(s);
            mcl_model_close(m);
            mcl_gpt_destroy(gpt);
        } else {
            mcl_gpt_destroy(gpt);
            mcl_model_close(m);
            mcl_session_destroy(s);
        }
    }
    assert_true(mcl_test_record_bool("objects outlive their context", 1));
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(contexts_on_threads),
        cmocka_unit_test(shared_context_is_refused),
        cmocka_unit_test(racing_threads_get_statuses),
        cmocka_unit_test(objects_outlive_their_context),
    };
    return mcl_test_finish(
        cmocka_run_group_tests(tests, mcl_test_scratch_setup, mcl_test_scratch_teardown));
}
