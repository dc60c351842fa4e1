/* Recorded sequences: capture once, replay many times; results bit-identical to eager
 * recording, ordering with eager work, lifetime of the tensors a graph uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static mcl_context *ctx;

enum { N = 3001, STEPS = 100 };

typedef struct chain {
    mcl_tensor *x, *y, *z;
} chain;

static void chain_create(chain *c, const float *x0, const float *y0)
{
    int64_t n = N;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &c->x));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &c->y));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &c->z));
    assert_mcl_ok(mcl_tensor_upload(c->x, 0, x0, N * sizeof(float)));
    assert_mcl_ok(mcl_tensor_upload(c->y, 0, y0, N * sizeof(float)));
}

static void chain_destroy(chain *c)
{
    mcl_tensor_destroy(c->x);
    mcl_tensor_destroy(c->y);
    mcl_tensor_destroy(c->z);
}

/* STEPS dependent dispatches: z = y + x; y = z + x; ... each reads what the last wrote. */
static void chain_record(chain *c)
{
    for (int i = 0; i < STEPS; i++) {
        if (i % 2 == 0)
            assert_mcl_ok(mcl_add(ctx, c->y, c->x, c->z));
        else
            assert_mcl_ok(mcl_add(ctx, c->z, c->x, c->y));
    }
}

static void replay_matches_eager(void **state)
{
    (void)state;
    float *x0 = malloc(N * sizeof *x0), *y0 = malloc(N * sizeof *y0);
    float *eager = malloc(N * sizeof *eager), *replayed = malloc(N * sizeof *replayed);
    mcl_fill_random(x0, N, 1, -1, 1);
    mcl_fill_random(y0, N, 2, -1, 1);

    chain e;
    chain_create(&e, x0, y0);
    chain_record(&e);
    assert_mcl_ok(mcl_tensor_download(e.y, 0, eager, N * sizeof(float)));

    chain g;
    chain_create(&g, x0, y0);
    mcl_graph *graph = NULL;
    assert_mcl_ok(mcl_graph_begin(ctx));
    chain_record(&g);
    assert_mcl_ok(mcl_graph_end(ctx, &graph));
    assert_int_equal(mcl_graph_dispatch_count(graph), STEPS);

    /* Nothing ran during the capture. */
    assert_mcl_ok(mcl_tensor_download(g.y, 0, replayed, N * sizeof(float)));
    assert_memory_equal(replayed, y0, N * sizeof(float));

    assert_mcl_ok(mcl_graph_replay(ctx, graph));
    assert_mcl_ok(mcl_tensor_download(g.y, 0, replayed, N * sizeof(float)));
    int identical = memcmp(eager, replayed, N * sizeof(float)) == 0;
    mcl_test_record_bool("replay of 100 dependent dispatches is bit-identical to eager", identical);
    assert_true(identical);

    /* Replays queue up without waiting; each continues from the last one's y. */
    assert_mcl_ok(mcl_tensor_upload(g.y, 0, y0, N * sizeof(float)));
    for (int r = 0; r < 3; r++)
        assert_mcl_ok(mcl_graph_replay(ctx, graph));
    assert_mcl_ok(mcl_tensor_download(g.y, 0, replayed, N * sizeof(float)));
    assert_mcl_ok(mcl_tensor_upload(e.y, 0, y0, N * sizeof(float)));
    for (int r = 0; r < 3; r++)
        chain_record(&e);
    assert_mcl_ok(mcl_tensor_download(e.y, 0, eager, N * sizeof(float)));
    identical = memcmp(eager, replayed, N * sizeof(float)) == 0;
    mcl_test_record_bool("three queued replays equal three eager runs", identical);
    assert_true(identical);

    /* New inputs between replays are used: the negative control, the result must change. */
    mcl_fill_random(x0, N, 9, -1, 1);
    assert_mcl_ok(mcl_tensor_upload(g.x, 0, x0, N * sizeof(float)));
    assert_mcl_ok(mcl_tensor_upload(g.y, 0, y0, N * sizeof(float)));
    assert_mcl_ok(mcl_graph_replay(ctx, graph));
    float *changed = malloc(N * sizeof *changed);
    assert_mcl_ok(mcl_tensor_download(g.y, 0, changed, N * sizeof(float)));
    int differs = memcmp(changed, eager, N * sizeof(float)) != 0;
    mcl_test_record_bool("negative control: new inputs change a replay's result", differs);
    assert_true(differs);

    mcl_graph_destroy(graph);
    chain_destroy(&e);
    chain_destroy(&g);
    free(x0);
    free(y0);
    free(eager);
    free(replayed);
    free(changed);
}

static void capture_rules(void **state)
{
    (void)state;
    int64_t n = 16;
    mcl_tensor *t;
    float host[16] = {0};
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &t));
    mcl_graph *graph = (mcl_graph *)1;
    assert_int_equal(mcl_graph_end(ctx, &graph), MCL_ERROR_INVALID_ARGUMENT);
    assert_null(graph);
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_int_equal(mcl_graph_begin(ctx), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_upload(t, 0, host, sizeof host), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_download(t, 0, host, sizeof host), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_finish(ctx), MCL_ERROR_INVALID_ARGUMENT);
    assert_mcl_ok(mcl_add(ctx, t, t, t));
    assert_mcl_ok(mcl_graph_end(ctx, &graph));
    assert_int_equal(mcl_graph_replay(ctx, NULL), MCL_ERROR_INVALID_ARGUMENT);
    mcl_graph_destroy(graph);
    mcl_graph_destroy(NULL);
    mcl_tensor_destroy(t);
}

/* A tensor destroyed while a graph uses it keeps its memory until the graph goes. */
static void graph_keeps_tensors_alive(void **state)
{
    (void)state;
    int64_t n = 1 << 16;
    float *a = malloc((size_t)n * sizeof *a), *out = malloc((size_t)n * sizeof *out);
    mcl_fill_random(a, (size_t)n, 5, -1, 1);
    mcl_tensor *x, *y;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &x));
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &y));
    assert_mcl_ok(mcl_tensor_upload(x, 0, a, (uint64_t)n * sizeof(float)));
    mcl_graph *graph;
    assert_mcl_ok(mcl_graph_begin(ctx));
    assert_mcl_ok(mcl_add(ctx, x, x, y));
    assert_mcl_ok(mcl_graph_end(ctx, &graph));

    mcl_memory_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    assert_mcl_ok(mcl_context_memory_stats(ctx, &before));
    mcl_tensor_destroy(x);
    assert_mcl_ok(mcl_context_memory_stats(ctx, &after));
    assert_int_equal(after.bytes_allocated, before.bytes_allocated);
    assert_mcl_ok(mcl_graph_replay(ctx, graph));
    assert_mcl_ok(mcl_tensor_download(y, 0, out, (uint64_t)n * sizeof(float)));
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        ok &= out[i] == a[i] + a[i];
    mcl_test_record_bool("graph input destroyed by the caller stays valid", ok);
    assert_true(ok);
    mcl_graph_destroy(graph);
    assert_mcl_ok(mcl_context_memory_stats(ctx, &after));
    assert_int_equal(after.bytes_allocated, before.bytes_allocated - (uint64_t)n * sizeof(float));
    mcl_tensor_destroy(y);
    free(a);
    free(out);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replay_matches_eager),
        cmocka_unit_test(capture_rules),
        cmocka_unit_test(graph_keeps_tensors_alive),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
