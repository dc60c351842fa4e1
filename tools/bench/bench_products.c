/* motifcl-bench decode products=1 (bench.h): a dense model's products timed alone, with their
 * quantized activations made as a decode step makes them or otherwise. */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "engine/engine_internal.h"
#include "ops/ops_internal.h"

/* 200 calls after 20 (one wait) of the gate and up products (count 2) or the gate alone
 * (count 1) of layers[i % layer_count], each after its producer: 1 the step's norm into act,
 * 2 mcl_quantize_activations into act, 0 none (act as it is). A call's time, the producer's
 * included; where a product is slower inside the step than alone (the K types on NVIDIA,
 * docs/tuning.md), which of these it takes to make it so. */
static double products_timed(mcl_context *ctx, int producer, mcl_tensor *x, mcl_tensor *n,
                             mcl_tensor *act, const engine_layer *layers, uint32_t layer_count,
                             uint32_t count, mcl_tensor *const *out, float eps)
{
    double t0 = 0;
    for (int i = 0; i < 220; i++) {
        const engine_layer *L = &layers[(uint32_t)i % layer_count];
        const mcl_tensor *w[2] = {L->w_gate, L->w_up};
        if (i == 20) {
            if (mcl_finish(ctx) != MCL_SUCCESS)
                return -1;
            t0 = bench_now();
        }
        mcl_status st = MCL_SUCCESS;
        if (producer == 1)
            st = mcl_norm_q8(ctx, NULL, L->ffn_norm, eps, x, n, act);
        else if (producer == 2)
            st = mcl_quantize_activations(ctx, n, 1, (uint32_t)n->shape[1], act);
        if (st == MCL_SUCCESS)
            st = mcl_matmul_multi_given(ctx, n, act, count, w, NULL, out);
        if (st != MCL_SUCCESS)
            return -1;
    }
    if (mcl_finish(ctx) != MCL_SUCCESS)
        return -1;
    return (bench_now() - t0) / 200;
}

int bench_products(bench *b, mcl_session *s, const char *label)
{
    const engine_layer *L = &s->layers[0];
    if (!L->w_gate) {
        fprintf(stderr, "motifcl-bench decode: products=1 takes a dense model\n");
        return 1;
    }
    mcl_context *ctx = b->ctx;
    int64_t dim = L->w_gate->shape[1], hid = L->w_gate->shape[0];
    int64_t row[2] = {1, dim}, wide[2] = {1, hid}, words = s->act->shape[0];
    mcl_tensor *x = NULL, *n = NULL, *g = NULL, *u = NULL, *own = NULL;
    float *host = malloc((size_t)dim * sizeof *host);
    int rc = 1;
    if (!host || mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, row, &x) ||
        mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, row, &n) ||
        mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, wide, &g) ||
        mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, wide, &u) ||
        mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &words, &own))
        goto done;
    for (int64_t i = 0; i < dim; i++)
        host[i] = (float)((i * 37 % 101) - 50) / 50.0f;
    if (mcl_tensor_upload(x, 0, host, (uint64_t)dim * 4) ||
        mcl_tensor_upload(n, 0, host, (uint64_t)dim * 4))
        goto done;
    mcl_tensor *out[2] = {g, u};
    static const struct {
        int producer, own;
        uint32_t count;
        const char *what;
    } cases[] = {
        {1, 0, 2, "norm_q8 then layer 0's gate and up, the session's quantization buffer"},
        {2, 0, 2, "mcl_quantize_activations then layer 0's gate and up, the session's buffer"},
        {0, 0, 2, "layer 0's gate and up from the session's buffer as it is"},
        {0, 0, 1, "layer 0's gate alone from the session's buffer as it is"},
        {1, 1, 2, "norm_q8 then layer 0's gate and up, a buffer of their own"},
        {0, 1, 2, "layer 0's gate and up from a buffer of their own as it is"},
        {1, 0, 0, "norm_q8 then gate and up of every layer in turn, the session's buffer"},
    };
    char name[256];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        /* count 0: both products, of every layer in turn (their weights not in a cache). */
        uint32_t count = cases[c].count ? cases[c].count : 2;
        double t = products_timed(ctx, cases[c].producer, x, n, cases[c].own ? own : s->act,
                                  L, cases[c].count ? 1 : s->info.layers, count, out,
                                  s->info.norm_eps);
        if (t < 0)
            goto done;
        snprintf(name, sizeof name, "%s: products alone, %s", label, cases[c].what);
        bench_figure(b, name, t * 1e6, "us");
    }
    rc = 0;
done:
    free(host);
    mcl_tensor_destroy(x);
    mcl_tensor_destroy(n);
    mcl_tensor_destroy(g);
    mcl_tensor_destroy(u);
    mcl_tensor_destroy(own);
    return rc;
}
