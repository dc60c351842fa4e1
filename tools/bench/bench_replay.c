/* The CPU cost of dispatches: eager recording against replaying a captured sequence. */
#include <stdio.h>
#include <time.h>

#include "bench.h"

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int bench_replay(bench *b)
{
    enum { DISPATCHES = 100, ROUNDS = 200 };
    mcl_context *ctx = b->ctx;
    int64_t n = 256;
    mcl_tensor *x, *y;
    if (mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &x) != MCL_SUCCESS ||
        mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, &y) != MCL_SUCCESS)
        return 1;
    float zeros[256] = {0};
    mcl_tensor_upload(x, 0, zeros, sizeof zeros);
    mcl_tensor_upload(y, 0, zeros, sizeof zeros);

    /* Eager: record 100 dependent adds, then submit and wait; CPU time of the recording. */
    double record = 0.0, eager_wall = 0.0;
    for (int r = 0; r < ROUNDS; r++) {
        double start = thread_cpu_seconds(), wall = bench_now();
        for (int i = 0; i < DISPATCHES; i++)
            mcl_add(ctx, y, x, y);
        record += thread_cpu_seconds() - start;
        mcl_finish(ctx);
        eager_wall += bench_now() - wall;
    }

    mcl_graph *graph;
    if (mcl_graph_begin(ctx) != MCL_SUCCESS)
        return 1;
    for (int i = 0; i < DISPATCHES; i++)
        mcl_add(ctx, y, x, y);
    if (mcl_graph_end(ctx, &graph) != MCL_SUCCESS)
        return 1;
    double replay = 0.0, replay_wall = 0.0;
    for (int r = 0; r < ROUNDS; r++) {
        double start = thread_cpu_seconds(), wall = bench_now();
        mcl_graph_replay(ctx, graph);
        replay += thread_cpu_seconds() - start;
        mcl_finish(ctx);
        replay_wall += bench_now() - wall;
    }
    mcl_graph_destroy(graph);
    mcl_tensor_destroy(x);
    mcl_tensor_destroy(y);

    const double per = 1e6 / (double)(ROUNDS * DISPATCHES);
    bench_figure(b, "eager: CPU time to record one dispatch", record * per, "us");
    bench_figure(b, "replay: CPU time per dispatch (submit of 100)", replay * per, "us");
    bench_figure(b, "eager: wall time per 100 dispatches incl. wait", eager_wall * 1e6 / ROUNDS,
                 "us");
    bench_figure(b, "replay: wall time per 100 dispatches incl. wait",
                 replay_wall * 1e6 / ROUNDS, "us");
    return 0;
}
