/* The benchmarks' llama-shaped models made on the device (bench.h, "Models"): the
 * tensors bench_model.c writes into a file, created in device memory and filled by the GPU,
 * so that a 7B or Mixtral-shaped model takes seconds and no disk. The matrices are in the
 * device layout of their block type (docs/quant-formats.md, "On the device"): every block's
 * scales are the file's (bench.h, BENCH_SCALE) of a pseudo-random sign (Q4_K, Q5_K: d and
 * dmin, one sign), every other word is pseudo-random; f32 matrices hold the file's uniform
 * values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "io/gguf.h"
#include "model/model_internal.h"
#include "quant/quant.h"
#include "pattern.h"

/* The sign bits of a word of two fp16 scales. The signs are random, so that the weights' mean
 * is zero: codes alone are not (Q4_0's average -0.5 of 16 steps), and a mean shared by every
 * row of W makes every product add the same multiple of its input's sum, which grows layer
 * after layer until the hidden state is one vector for every token, and a mixture routes
 * every token alike. */
#define SYNTH_SIGNS 0x80008000u

typedef struct synth {
    mcl_model *m;
    const bench_llama_shape *s;
    int host_experts;
    float *host;       /* a norm's ones, or a router's values */
    mcl_status status; /* the first failure */
} synth;

/* The codes and scales of a block-quantised matrix t: its bodies pseudo-random words; its
 * scales +-scale (fp16), in the d area after the bodies (a split type: each d its own sign)
 * or the first word of each block (Q4_K, Q5_K: d and dmin one sign). */
static mcl_status fill_matrix(mcl_context *ctx, mcl_tensor *t, uint32_t seed, uint16_t scale)
{
    const uint32_t scales = (uint32_t)scale << 16 | scale;
    mcl_quant_layout l;
    if (!mcl_quant_layout_of(t->dtype, &l))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "bench: %s is not a block type",
                        mcl_dtype_name(t->dtype));
    if (!l.split) {
        if (l.block_bytes % 4 != 0 || l.d_at != 0)
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "bench: %s blocks are not whole words "
                            "led by their scales", mcl_dtype_name(t->dtype));
        return mcl_fill_pattern_signed(ctx, t, seed, l.block_bytes / 4, scales, SYNTH_SIGNS,
                                       1);
    }
    uint64_t blocks = t->nbytes / l.block_bytes, body = blocks * l.body_bytes;
    uint64_t d_bytes = blocks * (l.block_bytes - l.body_bytes);
    if (body % 4 != 0 || d_bytes % 4 != 0)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "bench: %llu %s blocks do not end on a word",
                        (unsigned long long)blocks, mcl_dtype_name(t->dtype));
    mcl_tensor *v = NULL;
    mcl_status status = mcl_tensor_bytes_view(t, 0, body, &v);
    if (status == MCL_SUCCESS)
        status = mcl_fill_pattern_ex(ctx, v, seed, 0, 0);
    mcl_tensor_destroy(v);
    v = NULL;
    if (status == MCL_SUCCESS)
        status = mcl_tensor_bytes_view(t, body, d_bytes, &v);
    if (status == MCL_SUCCESS)
        status = mcl_fill_pattern_signed(ctx, v, seed, 1, scales, SYNTH_SIGNS, 0);
    mcl_tensor_destroy(v);
    return status;
}

static mcl_status make_one(synth *y, const bench_tensor *bt);

static int make_tensor(void *user, const bench_tensor *bt)
{
    synth *y = user;
    y->status = make_one(y, bt);
    return y->status != MCL_SUCCESS;
}

static mcl_status make_one(synth *y, const bench_tensor *bt)
{
    mcl_model *m = y->m;
    mcl_context *ctx = m->ctx;
    model_tensor *t = NULL;
    mcl_status status = mcl_model_add_tensor(m, bt->name, strlen(bt->name), &t);
    if (status != MCL_SUCCESS)
        return status;
    uint64_t experts = bt->kind == BENCH_STACK ? y->s->experts : 1;
    int block = bt->kind == BENCH_MATRIX || bt->kind == BENCH_STACK;
    t->file_type = block ? bt->type : MCL_GGML_F32;
    t->dtype = block ? (mcl_dtype)mcl_ggml_type_dtype(bt->type) : MCL_DTYPE_F32;
    t->ndim = bt->kind == BENCH_NORM ? 1 : bt->kind == BENCH_STACK ? 3 : 2;
    if (bt->kind == BENCH_STACK) {
        t->shape[0] = (int64_t)experts, t->shape[1] = (int64_t)bt->rows;
        t->shape[2] = (int64_t)bt->k;
    } else {
        t->shape[0] = (int64_t)bt->rows, t->shape[1] = (int64_t)bt->k;
    }
    /* A stack is one matrix [experts x rows, k] on the device, as the loader makes it. */
    int64_t shape[2] = {(int64_t)(experts * bt->rows), (int64_t)bt->k};
    if (bt->kind == BENCH_STACK && y->host_experts)
        status = mcl_tensor_create_host_pool(ctx, t->dtype, 2, shape, &t->tensor);
    else
        status = mcl_tensor_create(ctx, t->dtype, t->ndim == 1 ? 1 : 2, shape, &t->tensor);
    if (status != MCL_SUCCESS)
        return status;
    m->info.parameters += experts * bt->rows * (bt->k ? bt->k : 1);
    if (!(bt->kind == BENCH_STACK && y->host_experts))
        m->info.device_bytes += t->tensor->nbytes;
    if (block && t->dtype == MCL_DTYPE_F32)
        return mcl_fill_uniform(ctx, t->tensor, (uint32_t)bt->seed, BENCH_F32_SCALE);
    if (block)
        return fill_matrix(ctx, t->tensor, (uint32_t)bt->seed, bt->scale);
    uint64_t n = bt->rows * (bt->k ? bt->k : 1);
    for (uint64_t i = 0; i < n; i++)
        y->host[i] = bt->kind == BENCH_NORM ? 1.0f : bench_llama_router(bt->seed, i);
    return mcl_tensor_upload(t->tensor, 0, y->host, n * 4);
}

mcl_status bench_synth_llama(mcl_context *ctx, const bench_llama_shape *s, int host_experts,
                             mcl_model **out)
{
    *out = NULL;
    if (mcl_ggml_type_dtype(s->type) < 0)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "bench: %s matrices are not uploaded as "
                        "they are", mcl_ggml_type_name(s->type));
    mcl_model *m = mcl_model_new(ctx);
    uint64_t widest = s->experts > 1 ? (uint64_t)s->experts * s->dim : s->dim;
    float *host = malloc(widest * sizeof *host);
    if (!m || !host) {
        mcl_model_close(m);
        free(host);
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    /* What bench_model.c's file says, as the loader reads it. */
    mcl_model_info *in = &m->info;
    snprintf(in->architecture, sizeof in->architecture, "llama");
    snprintf(in->name, sizeof in->name, "motifcl-bench");
    snprintf(in->format, sizeof in->format, "made on the device");
    in->vocab = s->vocab, in->dim = s->dim, in->layers = s->layers;
    in->heads = s->heads, in->kv_heads = s->kv_heads, in->head_dim = s->dim / s->heads;
    in->hidden = s->hidden, in->context_length = 4096;
    in->norm_eps = 1e-5f, in->rope_theta = 10000.0f;
    if (s->experts) {
        in->experts = s->experts, in->experts_used = s->experts_used;
        in->expert_hidden = s->hidden, in->experts_norm = 1;
    }
    synth y = {m, s, host_experts, host, MCL_SUCCESS};
    mcl_status status = bench_llama_tensors(s, make_tensor, &y) == 0
                            ? mcl_model_check_tensors(m)
                            : y.status;
    free(host);
    if (status == MCL_SUCCESS)
        status = mcl_finish(ctx);
    if (status != MCL_SUCCESS) {
        mcl_model_close(m);
        return status;
    }
    *out = m;
    return MCL_SUCCESS;
}
