/* Llama-shaped GGUF files of random weights for the benchmarks (bench.h, "Models"): the
 * matrices in one block type with finite scales and pseudo-random codes, norms of ones, no
 * tokenizer. Written by a child process, so that the writer's memory is not the
 * benchmark's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "io/gguf.h"
#include "pattern.h"

uint64_t bench_llama_matrix_bytes(const bench_llama_shape *s, uint64_t n, uint64_t k)
{
    uint64_t block = mcl_ggml_block_elems(s->type), bytes = mcl_ggml_block_bytes(s->type);
    return n * k / block * bytes;
}

/* A layer's bytes with `ffn` feed-forwards of the expert (or dense) width. */
static uint64_t layer_bytes(const bench_llama_shape *s, uint64_t ffn)
{
    uint64_t kv = (uint64_t)s->dim / s->heads * s->kv_heads;
    return bench_llama_matrix_bytes(s, s->dim, s->dim) * 2 +
           bench_llama_matrix_bytes(s, kv, s->dim) * 2 +
           bench_llama_matrix_bytes(s, s->hidden, s->dim) * 3 * ffn + 2ull * s->dim * 4 +
           (s->experts ? 4ull * s->experts * s->dim : 0);
}

uint64_t bench_llama_layer_bytes(const bench_llama_shape *s)
{
    return layer_bytes(s, s->experts ? s->experts : 1);
}

uint64_t bench_llama_layer_read_bytes(const bench_llama_shape *s)
{
    return layer_bytes(s, s->experts ? s->experts_used : 1);
}

/* Blocks of `type` with a finite scale (fp16 `scale` of a pseudo-random sign, so that the
 * weights' mean is zero: bench_synth.c says why) and pseudo-random codes; f32 values uniform in
 * [-BENCH_F32_SCALE, BENCH_F32_SCALE), the device's pattern (bench_synth.c). */
static void fill(uint32_t type, unsigned char *p, uint64_t bytes, uint64_t seed, uint16_t scale)
{
    if (type == MCL_GGML_F32) {
        for (uint64_t i = 0; i < bytes / 4; i++) {
            float v = mcl_pattern_uniform((uint32_t)seed, (uint32_t)i, BENCH_F32_SCALE);
            memcpy(p + 4 * i, &v, 4);
        }
        return;
    }
    uint64_t block = mcl_ggml_block_bytes(type), x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint64_t b = 0; b + block <= bytes; b += block) {
        for (uint64_t i = 0; i < block; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(p + b + i, &x, block - i < 8 ? block - i : 8);
        }
        /* q4_0 and q8_0 open with d; q6_K ends with it; the K types' d and dmin lead (one
         * sign for both). */
        uint16_t d = (uint16_t)(scale | ((x >> 40) & 1u) << 15);
        if (type == MCL_GGML_Q6_K) {
            memcpy(p + b + block - 2, &d, 2);
        } else {
            memcpy(p + b, &d, 2);
            if (type == MCL_GGML_Q4_K || type == MCL_GGML_Q5_K)
                memcpy(p + b + 2, &d, 2);
        }
    }
}

static int add_u32(mcl_gguf_writer *w, const char *key, uint32_t v)
{
    return mcl_gguf_writer_add(w, key, MCL_GGUF_UINT32, &v) != MCL_SUCCESS;
}

static int add_matrix(mcl_gguf_writer *w, const bench_llama_shape *s, const bench_tensor *t,
                      unsigned char *scratch)
{
    uint64_t dims[2] = {t->k, t->rows}, bytes = bench_llama_matrix_bytes(s, t->rows, t->k);
    const char *name = t->name;
    fill(s->type, scratch, bytes, t->seed, t->scale);
    return mcl_gguf_writer_add_tensor(w, name, 2, dims, s->type, scratch, bytes) !=
           MCL_SUCCESS;
}

static int add_norm(mcl_gguf_writer *w, const char *name, const float *ones, uint64_t dim)
{
    uint64_t dims[1] = {dim};
    return mcl_gguf_writer_add_tensor(w, name, 1, dims, MCL_GGML_F32, ones, dim * 4) !=
           MCL_SUCCESS;
}

/* An expert stack [experts, n, k]: each expert's blocks filled as a matrix of its own. */
static int add_stack(mcl_gguf_writer *w, const bench_llama_shape *s, const char *name,
                     uint64_t n, uint64_t k, uint64_t *seed, uint16_t scale)
{
    uint64_t one = bench_llama_matrix_bytes(s, n, k);
    unsigned char *stack = malloc(one * s->experts);
    if (!stack)
        return 1;
    for (uint32_t e = 0; e < s->experts; e++)
        fill(s->type, stack + e * one, one, (*seed)++, scale);
    uint64_t dims[3] = {k, n, s->experts};
    int bad = mcl_gguf_writer_add_tensor(w, name, 3, dims, s->type, stack, one * s->experts) !=
              MCL_SUCCESS;
    free(stack);
    return bad;
}

float bench_llama_router(uint64_t seed, uint64_t i)
{
    return mcl_pattern_uniform((uint32_t)seed, (uint32_t)i, 0.5f);
}

int bench_llama_tensors(const bench_llama_shape *s, bench_tensor_fn fn, void *user)
{
    const uint64_t kv = (uint64_t)s->dim / s->heads * s->kv_heads;
    uint64_t seed = 1;
    bench_tensor t = {.type = s->type, .scale = BENCH_EMBED_SCALE};
#define EMIT(what, n, k_)                                                                      \
    do {                                                                                       \
        t.kind = (what), t.rows = (n), t.k = (k_), t.seed = seed;                               \
        seed += t.kind == BENCH_STACK ? s->experts : t.kind == BENCH_MATRIX;                    \
        if (fn(user, &t) != 0)                                                                 \
            return 1;                                                                          \
    } while (0)
#define NAME(x) snprintf(t.name, sizeof t.name, "blk.%u.%s", l, x)
    /* The embedding's scales BENCH_EMBED_SCALE, every other block matrix's BENCH_SCALE. */
    snprintf(t.name, sizeof t.name, "token_embd.weight");
    EMIT(BENCH_MATRIX, s->vocab, s->dim);
    t.scale = BENCH_SCALE;
    for (uint32_t l = 0; l < s->layers; l++) {
        NAME("attn_norm.weight");
        EMIT(BENCH_NORM, s->dim, 0);
        NAME("attn_q.weight");
        EMIT(BENCH_MATRIX, s->dim, s->dim);
        NAME("attn_k.weight");
        EMIT(BENCH_MATRIX, kv, s->dim);
        NAME("attn_v.weight");
        EMIT(BENCH_MATRIX, kv, s->dim);
        NAME("attn_output.weight");
        EMIT(BENCH_MATRIX, s->dim, s->dim);
        NAME("ffn_norm.weight");
        EMIT(BENCH_NORM, s->dim, 0);
        if (s->experts) {
            NAME("ffn_gate_inp.weight");
            EMIT(BENCH_ROUTER, s->experts, s->dim);
            NAME("ffn_gate_exps.weight");
            EMIT(BENCH_STACK, s->hidden, s->dim);
            NAME("ffn_up_exps.weight");
            EMIT(BENCH_STACK, s->hidden, s->dim);
            NAME("ffn_down_exps.weight");
            EMIT(BENCH_STACK, s->dim, s->hidden);
            continue;
        }
        NAME("ffn_gate.weight");
        EMIT(BENCH_MATRIX, s->hidden, s->dim);
        NAME("ffn_up.weight");
        EMIT(BENCH_MATRIX, s->hidden, s->dim);
        NAME("ffn_down.weight");
        EMIT(BENCH_MATRIX, s->dim, s->hidden);
    }
    snprintf(t.name, sizeof t.name, "output_norm.weight");
    EMIT(BENCH_NORM, s->dim, 0);
    snprintf(t.name, sizeof t.name, "output.weight");
    EMIT(BENCH_MATRIX, s->vocab, s->dim);
#undef NAME
#undef EMIT
    return 0;
}

typedef struct file_writer {
    mcl_gguf_writer *w;
    const bench_llama_shape *s;
    unsigned char *scratch;
    float *ones, *router;
} file_writer;

static int write_tensor(void *user, const bench_tensor *t)
{
    file_writer *f = user;
    const bench_llama_shape *s = f->s;
    switch (t->kind) {
    case BENCH_NORM:
        return add_norm(f->w, t->name, f->ones, t->rows);
    case BENCH_ROUTER: {
        uint64_t dims[2] = {t->k, t->rows};
        for (uint64_t i = 0; i < t->rows * t->k; i++)
            f->router[i] = bench_llama_router(t->seed, i);
        return mcl_gguf_writer_add_tensor(f->w, t->name, 2, dims, MCL_GGML_F32, f->router,
                                          4ull * t->rows * t->k) != MCL_SUCCESS;
    }
    case BENCH_STACK: {
        uint64_t seed = t->seed;
        return add_stack(f->w, s, t->name, t->rows, t->k, &seed, t->scale);
    }
    default:
        return add_matrix(f->w, s, t, f->scratch);
    }
}

/* The file at `path`; 0 on success. */
static int write_model(const char *path, const bench_llama_shape *s)
{
    mcl_gguf_writer *w = mcl_gguf_writer_create(3, 32);
    uint64_t widest = (uint64_t)(s->vocab > s->hidden ? s->vocab : s->hidden);
    unsigned char *scratch = malloc(bench_llama_matrix_bytes(s, widest, s->dim));
    float *ones = malloc((size_t)s->dim * sizeof *ones);
    if (!w || !scratch || !ones)
        return 1;
    for (uint32_t i = 0; i < s->dim; i++)
        ones[i] = 1.0f;
    int bad = mcl_gguf_writer_add(w, "general.architecture", MCL_GGUF_STRING, "llama") !=
              MCL_SUCCESS;
    bad |= mcl_gguf_writer_add(w, "general.name", MCL_GGUF_STRING, "motifcl-bench") !=
           MCL_SUCCESS;
    bad |= add_u32(w, "llama.context_length", 4096) | add_u32(w, "llama.embedding_length", s->dim);
    bad |= add_u32(w, "llama.block_count", s->layers) |
           add_u32(w, "llama.feed_forward_length", s->hidden);
    bad |= add_u32(w, "llama.attention.head_count", s->heads) |
           add_u32(w, "llama.attention.head_count_kv", s->kv_heads);
    float eps = 1e-5f;
    bad |= mcl_gguf_writer_add(w, "llama.attention.layer_norm_rms_epsilon", MCL_GGUF_FLOAT32,
                               &eps) != MCL_SUCCESS;
    if (s->experts)
        bad |= add_u32(w, "llama.expert_count", s->experts) |
               add_u32(w, "llama.expert_used_count", s->experts_used);
    /* A mixture's routers (each layer's own values, written by write_tensor). */
    float *router = s->experts ? malloc((size_t)s->experts * s->dim * sizeof *router) : NULL;
    if (s->experts && !router)
        return 1;
    file_writer f = {w, s, scratch, ones, router};
    bad |= bad ? 1 : bench_llama_tensors(s, write_tensor, &f);
    free(scratch);
    free(ones);
    free(router);
    void *file = NULL;
    uint64_t size = 0;
    if (bad || mcl_gguf_writer_finish(w, &file, &size) != MCL_SUCCESS)
        return 1;
    mcl_gguf_writer_destroy(w);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return 1;
    for (uint64_t done = 0; done < size;) {
        ssize_t n = write(fd, (const char *)file + done, size - done > (1u << 30)
                                                             ? (1u << 30)
                                                             : (size_t)(size - done));
        if (n <= 0) {
            close(fd);
            return 1;
        }
        done += (uint64_t)n;
    }
    free(file);
    return fsync(fd) != 0 || close(fd) != 0;
}

int bench_write_llama(const char *path, const bench_llama_shape *s)
{
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        _exit(write_model(path, s));
    int wstatus = 0;
    if (child < 0 || waitpid(child, &wstatus, 0) != child || !WIFEXITED(wstatus) ||
        WEXITSTATUS(wstatus) != 0) {
        fprintf(stderr, "motifcl-bench: could not write %s\n", path);
        unlink(path);
        return 1;
    }
    return 0;
}
