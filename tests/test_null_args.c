/* The NULL rules of motifcl.h, function by function: each "NULL:" line of the header is
 * checked here. For every function with pointer arguments, a call with every argument valid
 * succeeds (the control: a refusal below comes from the NULL, not from the other
 * arguments), each pointer the header says may not be NULL is refused with
 * MCL_ERROR_INVALID_ARGUMENT (or, for a getter, gives the value the header names) without a
 * crash, and each pointer it says may be NULL is accepted. The experimental section's
 * functions are covered too (this suite is built with MOTIFCL_EXPERIMENTAL).
 * No tolerance: every check is an exact status or value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static mcl_context *ctx;

/* The call succeeds / is refused as a NULL argument. */
#define OK(call) EXPECT_STATUS(call, MCL_SUCCESS)
#define NULL_REFUSED(call) EXPECT_STATUS(call, INVALID)

/* Getters and void functions: the value the header documents for a NULL argument. */
static int wrong_values;
#define EXPECT_VALUE(cond)                                                                 \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("wrong value: %s\n", #cond);                                            \
            wrong_values++;                                                                \
        }                                                                                  \
    } while (0)

static mcl_tensor *f32(int64_t d0, int64_t d1)
{
    const int64_t shape[2] = {d0, d1};
    float *zeros = calloc((size_t)(d0 * d1), sizeof *zeros);
    assert_non_null(zeros);
    mcl_tensor *t = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, shape, zeros);
    free(zeros);
    return t;
}

static mcl_tensor *f32_4d(int64_t b, int64_t t, int64_t h, int64_t d)
{
    const int64_t shape[4] = {b, t, h, d};
    float *zeros = calloc((size_t)(b * t * h * d), sizeof *zeros);
    assert_non_null(zeros);
    mcl_tensor *x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, zeros);
    free(zeros);
    return x;
}

static mcl_tensor *i32(int64_t n)
{
    int32_t *zeros = calloc((size_t)n, sizeof *zeros);
    assert_non_null(zeros);
    mcl_tensor *t = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, &n, zeros);
    free(zeros);
    return t;
}

static void context_and_tensors(void **state)
{
    (void)state;
    mcl_context *other = NULL;
    OK(mcl_context_create(NULL, &other));
    mcl_context_destroy(other);
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    NULL_REFUSED(mcl_context_create(&desc, NULL));
    mcl_context_destroy(NULL);

    OK(mcl_finish(ctx));
    NULL_REFUSED(mcl_finish(NULL));
    EXPECT_VALUE(mcl_context_validation_errors(NULL) == 0);
    EXPECT_VALUE(mcl_context_last_error(NULL) != NULL &&
                 strcmp(mcl_context_last_error(NULL), "") == 0);
    EXPECT_VALUE(mcl_context_last_error(ctx) != NULL);

    mcl_device_info info = {.size = sizeof info};
    OK(mcl_context_device_info(ctx, &info));
    NULL_REFUSED(mcl_context_device_info(NULL, &info));
    NULL_REFUSED(mcl_context_device_info(ctx, NULL));

    const int64_t shape[1] = {8};
    mcl_tensor *t = NULL;
    NULL_REFUSED(mcl_tensor_create(NULL, MCL_DTYPE_F32, 1, shape, &t));
    EXPECT_VALUE(t == NULL);
    NULL_REFUSED(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, NULL, &t));
    NULL_REFUSED(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, NULL));
    OK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &t));
    mcl_tensor_desc td = {.size = sizeof td, .dtype = MCL_DTYPE_F32, .ndim = 1, .shape = {8}};
    mcl_tensor *t2 = NULL;
    NULL_REFUSED(mcl_tensor_create_ex(NULL, &td, &t2));
    NULL_REFUSED(mcl_tensor_create_ex(ctx, NULL, &t2));
    NULL_REFUSED(mcl_tensor_create_ex(ctx, &td, NULL));
    OK(mcl_tensor_create_ex(ctx, &td, &t2));
    mcl_tensor_destroy(t2);
    mcl_tensor_destroy(NULL);

    float host[8] = {0};
    OK(mcl_tensor_upload(t, 0, host, sizeof host));
    NULL_REFUSED(mcl_tensor_upload(NULL, 0, host, sizeof host));
    NULL_REFUSED(mcl_tensor_upload(t, 0, NULL, sizeof host));
    OK(mcl_tensor_download(t, 0, host, sizeof host));
    NULL_REFUSED(mcl_tensor_download(NULL, 0, host, sizeof host));
    NULL_REFUSED(mcl_tensor_download(t, 0, NULL, sizeof host));

    void *pinned = NULL;
    OK(mcl_host_alloc(ctx, 256, &pinned));
    void *unused = NULL;
    NULL_REFUSED(mcl_host_alloc(NULL, 256, &unused));
    NULL_REFUSED(mcl_host_alloc(ctx, 256, NULL));
    mcl_host_free(NULL, pinned); /* ignored: nothing happens */
    mcl_host_free(ctx, NULL);
    mcl_host_free(ctx, pinned);

    EXPECT_VALUE(mcl_tensor_dtype(t) == MCL_DTYPE_F32 && mcl_tensor_ndim(t) == 1 &&
                 mcl_tensor_dim(t, 0) == 8 && mcl_tensor_numel(t) == 8 &&
                 mcl_tensor_nbytes(t) == 32);
    EXPECT_VALUE(mcl_tensor_dtype(NULL) == MCL_DTYPE_F32);
    EXPECT_VALUE(mcl_tensor_ndim(NULL) == 0);
    EXPECT_VALUE(mcl_tensor_dim(NULL, 0) == 0);
    EXPECT_VALUE(mcl_tensor_numel(NULL) == 0);
    EXPECT_VALUE(mcl_tensor_nbytes(NULL) == 0);

    mcl_memory_stats stats = {.size = sizeof stats};
    OK(mcl_context_memory_stats(ctx, &stats));
    NULL_REFUSED(mcl_context_memory_stats(NULL, &stats));
    NULL_REFUSED(mcl_context_memory_stats(ctx, NULL));
    size_t needed = 0;
    /* buffer NULL with capacity 0 is a size query: truncated, with the length. */
    EXPECT_STATUS(mcl_context_memory_json(ctx, NULL, 0, &needed), MCL_ERROR_TOO_LARGE);
    EXPECT_VALUE(needed > 1);
    EXPECT_STATUS(mcl_context_memory_json(ctx, NULL, 0, NULL), MCL_ERROR_TOO_LARGE);
    NULL_REFUSED(mcl_context_memory_json(ctx, NULL, 16, NULL));
    NULL_REFUSED(mcl_context_memory_json(NULL, NULL, 0, &needed));
    char *json = malloc(needed);
    assert_non_null(json);
    OK(mcl_context_memory_json(ctx, json, needed, NULL));
    free(json);
    needed = 0;
    EXPECT_STATUS(mcl_context_traits_json(ctx, NULL, 0, &needed), MCL_ERROR_TOO_LARGE);
    EXPECT_VALUE(needed > 1);
    EXPECT_STATUS(mcl_context_traits_json(ctx, NULL, 0, NULL), MCL_ERROR_TOO_LARGE);
    NULL_REFUSED(mcl_context_traits_json(ctx, NULL, 16, NULL));
    NULL_REFUSED(mcl_context_traits_json(NULL, NULL, 0, &needed));
    json = malloc(needed);
    assert_non_null(json);
    OK(mcl_context_traits_json(ctx, json, needed, NULL));
    EXPECT_VALUE(strlen(json) + 1 == needed && json[0] == '{');
    free(json);

    float x[32], back[32];
    unsigned char blocks[34];
    for (int i = 0; i < 32; i++)
        x[i] = (float)i / 8.0f;
    OK(mcl_quantize(MCL_DTYPE_Q8_0, x, blocks, 32));
    NULL_REFUSED(mcl_quantize(MCL_DTYPE_Q8_0, NULL, blocks, 32));
    NULL_REFUSED(mcl_quantize(MCL_DTYPE_Q8_0, x, NULL, 32));
    OK(mcl_quantize(MCL_DTYPE_Q8_0, NULL, NULL, 0));
    OK(mcl_dequantize(MCL_DTYPE_Q8_0, blocks, back, 32));
    NULL_REFUSED(mcl_dequantize(MCL_DTYPE_Q8_0, NULL, back, 32));
    NULL_REFUSED(mcl_dequantize(MCL_DTYPE_Q8_0, blocks, NULL, 32));
    OK(mcl_dequantize(MCL_DTYPE_Q8_0, NULL, NULL, 0));
    mcl_tensor_destroy(t);
}

static void operations(void **state)
{
    (void)state;
    mcl_tensor *a = f32(4, 8), *b = f32(4, 8), *y = f32(4, 8);
    const int64_t eight = 8, four = 4;
    mcl_tensor *w1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &eight, NULL);
    mcl_tensor *bias1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &eight, NULL);
    mcl_tensor *r = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &four, NULL);

    OK(mcl_binary(ctx, MCL_BINARY_MUL, a, b, y));
    NULL_REFUSED(mcl_binary(NULL, MCL_BINARY_MUL, a, b, y));
    NULL_REFUSED(mcl_binary(ctx, MCL_BINARY_MUL, NULL, b, y));
    NULL_REFUSED(mcl_binary(ctx, MCL_BINARY_MUL, a, NULL, y));
    NULL_REFUSED(mcl_binary(ctx, MCL_BINARY_MUL, a, b, NULL));
    OK(mcl_add(ctx, a, b, y));
    NULL_REFUSED(mcl_add(NULL, a, b, y));
    NULL_REFUSED(mcl_add(ctx, NULL, b, y));
    NULL_REFUSED(mcl_add(ctx, a, NULL, y));
    NULL_REFUSED(mcl_add(ctx, a, b, NULL));
    OK(mcl_scale(ctx, a, 2.0f, 1.0f, y));
    NULL_REFUSED(mcl_scale(NULL, a, 2.0f, 1.0f, y));
    NULL_REFUSED(mcl_scale(ctx, NULL, 2.0f, 1.0f, y));
    NULL_REFUSED(mcl_scale(ctx, a, 2.0f, 1.0f, NULL));
    OK(mcl_activate(ctx, MCL_ACTIVATION_GELU, a, y));
    NULL_REFUSED(mcl_activate(NULL, MCL_ACTIVATION_GELU, a, y));
    NULL_REFUSED(mcl_activate(ctx, MCL_ACTIVATION_GELU, NULL, y));
    NULL_REFUSED(mcl_activate(ctx, MCL_ACTIVATION_GELU, a, NULL));
    OK(mcl_swiglu(ctx, a, b, y));
    NULL_REFUSED(mcl_swiglu(NULL, a, b, y));
    NULL_REFUSED(mcl_swiglu(ctx, NULL, b, y));
    NULL_REFUSED(mcl_swiglu(ctx, a, NULL, y));
    NULL_REFUSED(mcl_swiglu(ctx, a, b, NULL));

    OK(mcl_softmax(ctx, a, 1.0f, 1, y));
    NULL_REFUSED(mcl_softmax(NULL, a, 1.0f, 1, y));
    NULL_REFUSED(mcl_softmax(ctx, NULL, 1.0f, 1, y));
    NULL_REFUSED(mcl_softmax(ctx, a, 1.0f, 1, NULL));
    OK(mcl_reduce_rows(ctx, MCL_REDUCE_SUM, a, r));
    NULL_REFUSED(mcl_reduce_rows(NULL, MCL_REDUCE_SUM, a, r));
    NULL_REFUSED(mcl_reduce_rows(ctx, MCL_REDUCE_SUM, NULL, r));
    NULL_REFUSED(mcl_reduce_rows(ctx, MCL_REDUCE_SUM, a, NULL));
    OK(mcl_rmsnorm(ctx, a, w1, 1e-5f, y));
    OK(mcl_rmsnorm(ctx, a, NULL, 1e-5f, y));
    NULL_REFUSED(mcl_rmsnorm(NULL, a, w1, 1e-5f, y));
    NULL_REFUSED(mcl_rmsnorm(ctx, NULL, w1, 1e-5f, y));
    NULL_REFUSED(mcl_rmsnorm(ctx, a, w1, 1e-5f, NULL));
    OK(mcl_layernorm(ctx, a, w1, bias1, 1e-5f, y));
    OK(mcl_layernorm(ctx, a, NULL, NULL, 1e-5f, y));
    NULL_REFUSED(mcl_layernorm(NULL, a, w1, bias1, 1e-5f, y));
    NULL_REFUSED(mcl_layernorm(ctx, NULL, w1, bias1, 1e-5f, y));
    NULL_REFUSED(mcl_layernorm(ctx, a, w1, bias1, 1e-5f, NULL));

    /* a [4, 8] times b^T ([8, 8] stored [N, K]) plus bias [8]. */
    mcl_tensor *bm = f32(8, 8);
    OK(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, bm, MCL_TRANSPOSE, bias1, y));
    OK(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, bm, MCL_TRANSPOSE, NULL, y));
    NULL_REFUSED(mcl_matmul(NULL, a, MCL_NO_TRANSPOSE, bm, MCL_TRANSPOSE, NULL, y));
    NULL_REFUSED(mcl_matmul(ctx, NULL, MCL_NO_TRANSPOSE, bm, MCL_TRANSPOSE, NULL, y));
    NULL_REFUSED(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, NULL, MCL_TRANSPOSE, NULL, y));
    NULL_REFUSED(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, bm, MCL_TRANSPOSE, NULL, NULL));

    /* Q8_0 [8, 32] dequantized; and mcl_matmul_multi with it. */
    const int64_t qshape[2] = {8, 32};
    float *qsrc = mcl_test_random_floats(8 * 32, 3, -1.0f, 1.0f);
    unsigned char qbytes[8 * 34];
    assert_mcl_ok(mcl_quantize(MCL_DTYPE_Q8_0, qsrc, qbytes, 8 * 32));
    free(qsrc);
    mcl_tensor *q = mcl_test_tensor(ctx, MCL_DTYPE_Q8_0, 2, qshape, qbytes);
    mcl_tensor *dq = f32(8, 32);
    OK(mcl_dequantize_tensor(ctx, q, dq));
    NULL_REFUSED(mcl_dequantize_tensor(NULL, q, dq));
    NULL_REFUSED(mcl_dequantize_tensor(ctx, NULL, dq));
    NULL_REFUSED(mcl_dequantize_tensor(ctx, q, NULL));

    /* One quantized and one f32 weight. */
    mcl_tensor *xin = f32(2, 32), *c0 = f32(2, 8), *c1 = f32(2, 8);
    mcl_tensor *wf = f32(8, 32);
    const mcl_tensor *wsq[2] = {q, wf};
    const mcl_tensor *biases[2] = {bias1, NULL};
    mcl_tensor *cs[2] = {c0, c1};
    mcl_tensor *cs_null[2] = {c0, NULL};
    const mcl_tensor *wsq_null[2] = {q, NULL};
    OK(mcl_matmul_multi(ctx, xin, 2, wsq, biases, cs));
    OK(mcl_matmul_multi(ctx, xin, 2, wsq, NULL, cs));
    NULL_REFUSED(mcl_matmul_multi(NULL, xin, 2, wsq, NULL, cs));
    NULL_REFUSED(mcl_matmul_multi(ctx, NULL, 2, wsq, NULL, cs));
    NULL_REFUSED(mcl_matmul_multi(ctx, xin, 2, NULL, NULL, cs));
    NULL_REFUSED(mcl_matmul_multi(ctx, xin, 2, wsq, NULL, NULL));
    NULL_REFUSED(mcl_matmul_multi(ctx, xin, 2, wsq_null, NULL, cs));
    NULL_REFUSED(mcl_matmul_multi(ctx, xin, 2, wsq, NULL, cs_null));

    /* Layout. */
    mcl_tensor *x4 = f32_4d(1, 3, 4, 8), *y4 = f32_4d(1, 3, 4, 8);
    OK(mcl_rope(ctx, x4, MCL_ROPE_SPLIT_HALF, 10000.0f, 0, y4));
    NULL_REFUSED(mcl_rope(NULL, x4, MCL_ROPE_SPLIT_HALF, 10000.0f, 0, y4));
    NULL_REFUSED(mcl_rope(ctx, NULL, MCL_ROPE_SPLIT_HALF, 10000.0f, 0, y4));
    NULL_REFUSED(mcl_rope(ctx, x4, MCL_ROPE_SPLIT_HALF, 10000.0f, 0, NULL));
    mcl_tensor *table = f32(5, 8), *ids = i32(3), *emb = f32(3, 8);
    OK(mcl_embedding(ctx, table, ids, emb));
    NULL_REFUSED(mcl_embedding(NULL, table, ids, emb));
    NULL_REFUSED(mcl_embedding(ctx, NULL, ids, emb));
    NULL_REFUSED(mcl_embedding(ctx, table, NULL, emb));
    NULL_REFUSED(mcl_embedding(ctx, table, ids, NULL));
    OK(mcl_copy(ctx, a, y));
    NULL_REFUSED(mcl_copy(NULL, a, y));
    NULL_REFUSED(mcl_copy(ctx, NULL, y));
    NULL_REFUSED(mcl_copy(ctx, a, NULL));
    mcl_tensor *at = f32(8, 4);
    const uint32_t perm[2] = {1, 0};
    OK(mcl_permute(ctx, a, perm, at));
    NULL_REFUSED(mcl_permute(NULL, a, perm, at));
    NULL_REFUSED(mcl_permute(ctx, NULL, perm, at));
    NULL_REFUSED(mcl_permute(ctx, a, NULL, at));
    NULL_REFUSED(mcl_permute(ctx, a, perm, NULL));
    mcl_tensor *cat = f32(8, 8);
    OK(mcl_concat(ctx, a, b, 0, cat));
    NULL_REFUSED(mcl_concat(NULL, a, b, 0, cat));
    NULL_REFUSED(mcl_concat(ctx, NULL, b, 0, cat));
    NULL_REFUSED(mcl_concat(ctx, a, NULL, 0, cat));
    NULL_REFUSED(mcl_concat(ctx, a, b, 0, NULL));

    /* Attention, grouped-query: 4 query heads, 2 kv heads. */
    mcl_tensor *k4 = f32_4d(1, 3, 2, 8), *v4 = f32_4d(1, 3, 2, 8), *o4 = f32_4d(1, 3, 4, 8);
    mcl_tensor *do4 = f32_4d(1, 3, 4, 8), *dq4 = f32_4d(1, 3, 4, 8);
    mcl_tensor *dk4 = f32_4d(1, 3, 2, 8), *dv4 = f32_4d(1, 3, 2, 8);
    mcl_attention_desc ad = {.size = sizeof ad, .causal = 1};
    OK(mcl_attention(ctx, x4, k4, v4, &ad, o4));
    OK(mcl_attention(ctx, x4, k4, v4, NULL, o4));
    NULL_REFUSED(mcl_attention(NULL, x4, k4, v4, NULL, o4));
    NULL_REFUSED(mcl_attention(ctx, NULL, k4, v4, NULL, o4));
    NULL_REFUSED(mcl_attention(ctx, x4, NULL, v4, NULL, o4));
    NULL_REFUSED(mcl_attention(ctx, x4, k4, NULL, NULL, o4));
    NULL_REFUSED(mcl_attention(ctx, x4, k4, v4, NULL, NULL));
    OK(mcl_attention_backward(ctx, x4, k4, v4, o4, do4, &ad, dq4, dk4, dv4));
    OK(mcl_attention_backward(ctx, x4, k4, v4, o4, do4, NULL, dq4, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(NULL, x4, k4, v4, o4, do4, NULL, dq4, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, NULL, k4, v4, o4, do4, NULL, dq4, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, x4, NULL, v4, o4, do4, NULL, dq4, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, x4, k4, NULL, o4, do4, NULL, dq4, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, x4, k4, v4, NULL, do4, NULL, dq4, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, x4, k4, v4, o4, NULL, NULL, dq4, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, x4, k4, v4, o4, do4, NULL, NULL, dk4, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, x4, k4, v4, o4, do4, NULL, dq4, NULL, dv4));
    NULL_REFUSED(mcl_attention_backward(ctx, x4, k4, v4, o4, do4, NULL, dq4, dk4, NULL));

    /* Loss. */
    mcl_tensor *logits = f32(3, 5), *targets = i32(3), *lse = NULL, *dlogits = f32(3, 5);
    const int64_t one = 1, three = 3;
    mcl_tensor *loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    lse = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &three, NULL);
    OK(mcl_cross_entropy(ctx, logits, targets, loss, lse));
    OK(mcl_cross_entropy(ctx, logits, targets, loss, NULL));
    NULL_REFUSED(mcl_cross_entropy(NULL, logits, targets, loss, lse));
    NULL_REFUSED(mcl_cross_entropy(ctx, NULL, targets, loss, lse));
    NULL_REFUSED(mcl_cross_entropy(ctx, logits, NULL, loss, lse));
    NULL_REFUSED(mcl_cross_entropy(ctx, logits, targets, NULL, lse));

    /* Backward passes. */
    mcl_tensor *dy = f32(4, 8), *dx = f32(4, 8), *dx2 = f32(4, 8);
    OK(mcl_activate_backward(ctx, MCL_ACTIVATION_SILU, a, dy, dx));
    NULL_REFUSED(mcl_activate_backward(NULL, MCL_ACTIVATION_SILU, a, dy, dx));
    NULL_REFUSED(mcl_activate_backward(ctx, MCL_ACTIVATION_SILU, NULL, dy, dx));
    NULL_REFUSED(mcl_activate_backward(ctx, MCL_ACTIVATION_SILU, a, NULL, dx));
    NULL_REFUSED(mcl_activate_backward(ctx, MCL_ACTIVATION_SILU, a, dy, NULL));
    OK(mcl_swiglu_backward(ctx, a, b, dy, dx, dx2));
    NULL_REFUSED(mcl_swiglu_backward(NULL, a, b, dy, dx, dx2));
    NULL_REFUSED(mcl_swiglu_backward(ctx, NULL, b, dy, dx, dx2));
    NULL_REFUSED(mcl_swiglu_backward(ctx, a, NULL, dy, dx, dx2));
    NULL_REFUSED(mcl_swiglu_backward(ctx, a, b, NULL, dx, dx2));
    NULL_REFUSED(mcl_swiglu_backward(ctx, a, b, dy, NULL, dx2));
    NULL_REFUSED(mcl_swiglu_backward(ctx, a, b, dy, dx, NULL));
    OK(mcl_softmax_backward(ctx, y, dy, 1.0f, dx));
    NULL_REFUSED(mcl_softmax_backward(NULL, y, dy, 1.0f, dx));
    NULL_REFUSED(mcl_softmax_backward(ctx, NULL, dy, 1.0f, dx));
    NULL_REFUSED(mcl_softmax_backward(ctx, y, NULL, 1.0f, dx));
    NULL_REFUSED(mcl_softmax_backward(ctx, y, dy, 1.0f, NULL));
    mcl_tensor *dw = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &eight, NULL);
    mcl_tensor *db = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &eight, NULL);
    OK(mcl_rmsnorm_backward(ctx, a, w1, dy, 1e-5f, dx, dw));
    OK(mcl_rmsnorm_backward(ctx, a, NULL, dy, 1e-5f, dx, NULL));
    NULL_REFUSED(mcl_rmsnorm_backward(NULL, a, w1, dy, 1e-5f, dx, dw));
    NULL_REFUSED(mcl_rmsnorm_backward(ctx, NULL, w1, dy, 1e-5f, dx, dw));
    NULL_REFUSED(mcl_rmsnorm_backward(ctx, a, w1, NULL, 1e-5f, dx, dw));
    NULL_REFUSED(mcl_rmsnorm_backward(ctx, a, w1, dy, 1e-5f, NULL, dw));
    OK(mcl_layernorm_backward(ctx, a, w1, dy, 1e-5f, dx, dw, db));
    OK(mcl_layernorm_backward(ctx, a, NULL, dy, 1e-5f, dx, NULL, NULL));
    NULL_REFUSED(mcl_layernorm_backward(NULL, a, w1, dy, 1e-5f, dx, dw, db));
    NULL_REFUSED(mcl_layernorm_backward(ctx, NULL, w1, dy, 1e-5f, dx, dw, db));
    NULL_REFUSED(mcl_layernorm_backward(ctx, a, w1, NULL, 1e-5f, dx, dw, db));
    NULL_REFUSED(mcl_layernorm_backward(ctx, a, w1, dy, 1e-5f, NULL, dw, db));
    OK(mcl_rope_backward(ctx, x4, MCL_ROPE_INTERLEAVED, 10000.0f, 0, y4));
    NULL_REFUSED(mcl_rope_backward(NULL, x4, MCL_ROPE_INTERLEAVED, 10000.0f, 0, y4));
    NULL_REFUSED(mcl_rope_backward(ctx, NULL, MCL_ROPE_INTERLEAVED, 10000.0f, 0, y4));
    NULL_REFUSED(mcl_rope_backward(ctx, x4, MCL_ROPE_INTERLEAVED, 10000.0f, 0, NULL));
    mcl_tensor *dtable = f32(5, 8);
    OK(mcl_embedding_backward(ctx, ids, emb, dtable));
    NULL_REFUSED(mcl_embedding_backward(NULL, ids, emb, dtable));
    NULL_REFUSED(mcl_embedding_backward(ctx, NULL, emb, dtable));
    NULL_REFUSED(mcl_embedding_backward(ctx, ids, NULL, dtable));
    NULL_REFUSED(mcl_embedding_backward(ctx, ids, emb, NULL));
    OK(mcl_cross_entropy_backward(ctx, logits, targets, lse, 1.0f, dlogits));
    NULL_REFUSED(mcl_cross_entropy_backward(NULL, logits, targets, lse, 1.0f, dlogits));
    NULL_REFUSED(mcl_cross_entropy_backward(ctx, NULL, targets, lse, 1.0f, dlogits));
    NULL_REFUSED(mcl_cross_entropy_backward(ctx, logits, NULL, lse, 1.0f, dlogits));
    NULL_REFUSED(mcl_cross_entropy_backward(ctx, logits, targets, NULL, 1.0f, dlogits));
    NULL_REFUSED(mcl_cross_entropy_backward(ctx, logits, targets, lse, 1.0f, NULL));

    /* Optimizers: arrays may be NULL only for count 0, entries never. */
    mcl_tensor *P[1] = {a}, *G[1] = {b}, *M[1] = {dx}, *V[1] = {dx2}, *NT[1] = {NULL};
    mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-3f, .step = 1};
    OK(mcl_adamw_step(ctx, &adam, P, G, M, V, 1));
    OK(mcl_adamw_step(ctx, &adam, NULL, NULL, NULL, NULL, 0));
    NULL_REFUSED(mcl_adamw_step(NULL, &adam, P, G, M, V, 1));
    NULL_REFUSED(mcl_adamw_step(ctx, NULL, P, G, M, V, 1));
    NULL_REFUSED(mcl_adamw_step(ctx, &adam, NULL, G, M, V, 1));
    NULL_REFUSED(mcl_adamw_step(ctx, &adam, P, NULL, M, V, 1));
    NULL_REFUSED(mcl_adamw_step(ctx, &adam, P, G, NULL, V, 1));
    NULL_REFUSED(mcl_adamw_step(ctx, &adam, P, G, M, NULL, 1));
    NULL_REFUSED(mcl_adamw_step(ctx, &adam, NT, G, M, V, 1));
    mcl_sgd_desc sgd = {.size = sizeof sgd, .lr = 1e-2f, .momentum = 0.9f};
    mcl_sgd_desc plain = {.size = sizeof plain, .lr = 1e-2f};
    OK(mcl_sgd_step(ctx, &sgd, P, G, M, 1));
    OK(mcl_sgd_step(ctx, &plain, P, G, NULL, 1));
    OK(mcl_sgd_step(ctx, &plain, NULL, NULL, NULL, 0));
    NULL_REFUSED(mcl_sgd_step(ctx, &sgd, P, G, NULL, 1)); /* momentum needs a velocity */
    NULL_REFUSED(mcl_sgd_step(NULL, &plain, P, G, NULL, 1));
    NULL_REFUSED(mcl_sgd_step(ctx, NULL, P, G, NULL, 1));
    NULL_REFUSED(mcl_sgd_step(ctx, &plain, NULL, G, NULL, 1));
    NULL_REFUSED(mcl_sgd_step(ctx, &plain, P, NULL, NULL, 1));
    NULL_REFUSED(mcl_sgd_step(ctx, &sgd, P, G, NT, 1));
    OK(mcl_grad_norm(ctx, G, 1, loss));
    OK(mcl_grad_norm(ctx, NULL, 0, loss));
    NULL_REFUSED(mcl_grad_norm(NULL, G, 1, loss));
    NULL_REFUSED(mcl_grad_norm(ctx, NULL, 1, loss));
    NULL_REFUSED(mcl_grad_norm(ctx, G, 1, NULL));
    NULL_REFUSED(mcl_grad_norm(ctx, NT, 1, loss));
    OK(mcl_clip_grads(ctx, G, 1, loss, 1.0f));
    OK(mcl_clip_grads(ctx, NULL, 0, loss, 1.0f));
    NULL_REFUSED(mcl_clip_grads(NULL, G, 1, loss, 1.0f));
    NULL_REFUSED(mcl_clip_grads(ctx, NULL, 1, loss, 1.0f));
    NULL_REFUSED(mcl_clip_grads(ctx, G, 1, NULL, 1.0f));
    NULL_REFUSED(mcl_clip_grads(ctx, NT, 1, loss, 1.0f));
    assert_mcl_ok(mcl_finish(ctx));

    mcl_tensor *all[] = {a,   b,   y,   w1,  bias1, r,      bm,      q,   dq,      xin,
                         c0,  c1,  wf,  x4,  y4,    table,  ids,     emb, at,      cat,
                         k4,  v4,  o4,  do4, dq4,   dk4,    dv4,     logits, targets, lse,
                         dlogits, loss, dy, dx, dx2, dw, db, dtable};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
}

static void graphs_and_models(void **state)
{
    (void)state;
    mcl_tensor *a = f32(2, 4), *y = f32(2, 4);
    mcl_graph *g = NULL;
    NULL_REFUSED(mcl_graph_begin(NULL));
    OK(mcl_graph_begin(ctx));
    OK(mcl_scale(ctx, a, 2.0f, 0.0f, y));
    NULL_REFUSED(mcl_graph_end(NULL, &g));
    NULL_REFUSED(mcl_graph_end(ctx, NULL));
    OK(mcl_graph_end(ctx, &g));
    OK(mcl_graph_replay(ctx, g));
    NULL_REFUSED(mcl_graph_replay(NULL, g));
    NULL_REFUSED(mcl_graph_replay(ctx, NULL));
    EXPECT_VALUE(mcl_graph_dispatch_count(g) >= 1);
    EXPECT_VALUE(mcl_graph_dispatch_count(NULL) == 0);
    mcl_graph_destroy(g);
    mcl_graph_destroy(NULL);

    /* The counter-state layer. */
    mcl_counter_linear_desc cd = {.size = sizeof cd, .out = 2, .in = 16};
    mcl_counter_linear *layer = NULL;
    NULL_REFUSED(mcl_counter_linear_create(NULL, &cd, &layer));
    NULL_REFUSED(mcl_counter_linear_create(ctx, NULL, &layer));
    NULL_REFUSED(mcl_counter_linear_create(ctx, &cd, NULL));
    OK(mcl_counter_linear_create(ctx, &cd, &layer));
    EXPECT_VALUE(mcl_counter_linear_state(layer) != NULL);
    EXPECT_VALUE(mcl_counter_linear_state(NULL) == NULL);
    EXPECT_VALUE(mcl_counter_linear_scale(NULL) == NULL);
    EXPECT_VALUE(mcl_counter_linear_moment(NULL) == NULL);
    float cw[32] = {0};
    NULL_REFUSED(mcl_counter_linear_from_f32(NULL, cw, 0.7f));
    NULL_REFUSED(mcl_counter_linear_from_f32(layer, NULL, 0.7f));
    OK(mcl_counter_linear_from_f32(layer, cw, 0.7f));
    OK(mcl_counter_linear_to_f32(layer, NULL, NULL, NULL));
    NULL_REFUSED(mcl_counter_linear_to_f32(NULL, cw, NULL, NULL));
    int64_t cx_shape[2] = {1, 16}, cy_shape[2] = {1, 2};
    mcl_tensor *cx = NULL, *cy = NULL;
    OK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, cx_shape, &cx));
    OK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, cy_shape, &cy));
    float zeros16[16] = {0};
    OK(mcl_tensor_upload(cx, 0, zeros16, sizeof zeros16));
    OK(mcl_tensor_upload(cy, 0, zeros16, 2 * sizeof(float)));
    OK(mcl_counter_linear_forward(layer, cx, cy));
    NULL_REFUSED(mcl_counter_linear_forward(NULL, cx, cy));
    NULL_REFUSED(mcl_counter_linear_forward(layer, NULL, cy));
    NULL_REFUSED(mcl_counter_linear_forward(layer, cx, NULL));
    OK(mcl_counter_linear_backward(layer, cx, cy, NULL, NULL));
    NULL_REFUSED(mcl_counter_linear_backward(NULL, cx, cy, NULL, NULL));
    NULL_REFUSED(mcl_counter_linear_backward(layer, NULL, cy, NULL, NULL));
    NULL_REFUSED(mcl_counter_linear_backward(layer, cx, NULL, NULL, NULL));
    mcl_tensor_destroy(cx);
    mcl_tensor_destroy(cy);
    mcl_counter_linear_destroy(layer);
    mcl_counter_linear_destroy(NULL);

    /* The GPT's counter-state layers. */
    mcl_gpt_desc gd = {.size = sizeof gd, .vocab = 4, .dim = 16, .layers = 1, .heads = 1,
                       .hidden = 16, .max_seq = 2, .tied_head = 1, .flags = MCL_GPT_COUNTER};
    mcl_gpt *cgpt = NULL;
    OK(mcl_gpt_create(ctx, &gd, 1, &cgpt));
    EXPECT_VALUE(mcl_gpt_counter_layer(cgpt, 0, MCL_GPT_WQ) != NULL);
    EXPECT_VALUE(mcl_gpt_counter_layer(NULL, 0, MCL_GPT_WQ) == NULL);
    mcl_counter_update_desc ud = {.size = sizeof ud, .lr = 1e-3f};
    OK(mcl_gpt_set_counter_update(cgpt, &ud));
    NULL_REFUSED(mcl_gpt_set_counter_update(NULL, &ud));
    NULL_REFUSED(mcl_gpt_set_counter_update(cgpt, NULL));
    mcl_gpt_destroy(cgpt);

    /* The profiler. */
    NULL_REFUSED(mcl_profiler_start(NULL));
    OK(mcl_profiler_start(ctx));
    OK(mcl_scale(ctx, a, 2.0f, 0.0f, y));
    NULL_REFUSED(mcl_profiler_stop(NULL));
    OK(mcl_profiler_stop(ctx));
    uint32_t lines = 0;
    OK(mcl_profiler_rows(ctx, NULL, 0, &lines));
    EXPECT_VALUE(lines >= 1);
    NULL_REFUSED(mcl_profiler_rows(NULL, NULL, 0, &lines));
    NULL_REFUSED(mcl_profiler_rows(ctx, NULL, 0, NULL));
    NULL_REFUSED(mcl_profiler_rows(ctx, NULL, 1, &lines));
    OK(mcl_profiler_totals(ctx, NULL, NULL, NULL));
    NULL_REFUSED(mcl_profiler_totals(NULL, NULL, NULL, NULL));
    size_t profile_bytes = 0;
    EXPECT_STATUS(mcl_profiler_json(ctx, NULL, 0, &profile_bytes), MCL_ERROR_TOO_LARGE);
    EXPECT_STATUS(mcl_profiler_json(ctx, NULL, 0, NULL), MCL_ERROR_TOO_LARGE);
    NULL_REFUSED(mcl_profiler_json(ctx, NULL, 16, NULL));
    NULL_REFUSED(mcl_profiler_json(NULL, NULL, 0, &profile_bytes));

    mcl_gpt_desc desc = {.size = sizeof desc, .vocab = 7, .dim = 8, .layers = 1, .heads = 2,
                         .hidden = 16, .max_seq = 4, .tied_head = 1};
    mcl_gpt *gpt = NULL;
    NULL_REFUSED(mcl_gpt_create(NULL, &desc, 1, &gpt));
    NULL_REFUSED(mcl_gpt_create(ctx, NULL, 1, &gpt));
    NULL_REFUSED(mcl_gpt_create(ctx, &desc, 1, NULL));
    OK(mcl_gpt_create(ctx, &desc, 1, &gpt));
    assert_non_null(gpt);
    mcl_gpt_desc got = {.size = sizeof got};
    OK(mcl_gpt_config(gpt, &got));
    NULL_REFUSED(mcl_gpt_config(NULL, &got));
    NULL_REFUSED(mcl_gpt_config(gpt, NULL));
    EXPECT_VALUE(mcl_gpt_param_numel(gpt) > 0 && mcl_gpt_param_numel(NULL) == 0);
    EXPECT_VALUE(mcl_gpt_param_count(gpt) > 0 && mcl_gpt_param_count(NULL) == 0);
    mcl_gpt_param_info info;
    OK(mcl_gpt_param(gpt, 0, &info));
    NULL_REFUSED(mcl_gpt_param(NULL, 0, &info));
    NULL_REFUSED(mcl_gpt_param(gpt, 0, NULL));
    EXPECT_VALUE(mcl_gpt_parameters(gpt) != NULL && mcl_gpt_parameters(NULL) == NULL);
    EXPECT_VALUE(mcl_gpt_gradients(gpt) != NULL && mcl_gpt_gradients(NULL) == NULL);
    EXPECT_VALUE(mcl_gpt_logits(gpt) == NULL); /* before the first forward pass */
    EXPECT_VALUE(mcl_gpt_grad_norm(gpt) != NULL && mcl_gpt_grad_norm(NULL) == NULL);

    const int64_t bt[2] = {1, 4}, one = 1;
    const int32_t ids[4] = {1, 2, 3, 4};
    mcl_tensor *tokens = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, bt, ids);
    mcl_tensor *targets = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, bt, ids);
    mcl_tensor *loss = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, &one, NULL);
    OK(mcl_gpt_forward(gpt, tokens, NULL, NULL));
    EXPECT_VALUE(mcl_gpt_logits(gpt) != NULL && mcl_gpt_logits(NULL) == NULL);
    EXPECT_STATUS(mcl_gpt_backward(gpt), INVALID); /* that pass had no targets */
    NULL_REFUSED(mcl_gpt_forward(NULL, tokens, targets, loss));
    NULL_REFUSED(mcl_gpt_forward(gpt, NULL, targets, loss));
    NULL_REFUSED(mcl_gpt_forward(gpt, tokens, NULL, loss));
    NULL_REFUSED(mcl_gpt_forward(gpt, tokens, targets, NULL));
    OK(mcl_gpt_forward(gpt, tokens, targets, loss));
    OK(mcl_gpt_backward(gpt));
    NULL_REFUSED(mcl_gpt_backward(NULL));
    mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-3f, .step = 1};
    EXPECT_STATUS(mcl_gpt_step(gpt), INVALID); /* nothing set yet */
    NULL_REFUSED(mcl_gpt_set_optimizer(NULL, &adam, 1.0f));
    NULL_REFUSED(mcl_gpt_set_optimizer(gpt, NULL, 1.0f));
    OK(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
    OK(mcl_gpt_step(gpt));
    NULL_REFUSED(mcl_gpt_step(NULL));
    EXPECT_VALUE(mcl_gpt_optimizer_step(gpt) == 1 && mcl_gpt_optimizer_step(NULL) == 0);

    char path[] = "/tmp/motifcl-null-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    OK(mcl_gpt_save(gpt, path));
    NULL_REFUSED(mcl_gpt_save(NULL, path));
    NULL_REFUSED(mcl_gpt_save(gpt, NULL));
    mcl_gpt *loaded = NULL;
    NULL_REFUSED(mcl_gpt_load(NULL, path, &loaded));
    NULL_REFUSED(mcl_gpt_load(ctx, NULL, &loaded));
    NULL_REFUSED(mcl_gpt_load(ctx, path, NULL));
    OK(mcl_gpt_load(ctx, path, &loaded));
    remove(path);
    mcl_gpt_destroy(loaded);
    mcl_gpt_destroy(gpt);
    mcl_gpt_destroy(NULL);
    mcl_tensor *all[] = {a, y, tokens, targets, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
}

static void summary(void **state)
{
    (void)state;
    printf("wrong statuses %d, wrong values %d\n", mcl_test_wrong_statuses, wrong_values);
    int passed = mcl_test_record("NULL rules of every function with pointer arguments",
                                 "wrong statuses", mcl_test_wrong_statuses, 0);
    passed &= mcl_test_record("values of getters and void functions given NULL",
                              "wrong values", wrong_values, 0);
    /* Negative control: a wrong expectation of either kind is counted (then taken back). */
    int statuses = mcl_test_wrong_statuses, values = wrong_values;
    OK(mcl_finish(NULL));
    EXPECT_VALUE(mcl_tensor_ndim(NULL) == 1);
    int caught = mcl_test_wrong_statuses == statuses + 1 && wrong_values == values + 1;
    mcl_test_wrong_statuses = statuses;
    wrong_values = values;
    passed &= mcl_test_record_bool("negative control: a wrong status and a wrong value are "
                                   "counted", caught);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(context_and_tensors),
        cmocka_unit_test(operations),
        cmocka_unit_test(graphs_and_models),
        cmocka_unit_test(summary),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
