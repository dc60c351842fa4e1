/* The benchmarks' models made on the device (tools/bench/bench_synth.c) against the same
 * shapes written to a GGUF file and loaded (bench_model.c): the same model description, every
 * tensor's words as the pattern says (pseudo-random codes, fixed scales in the device layout,
 * f32 matrices' uniform values, norms of ones, the router's values), finite logits; control:
 * the pattern of another seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "harness.h"
#include "io/gguf.h"
#include "model/model_internal.h"
#include "pattern.h"
#include "quant/quant.h"

static mcl_context *ctx;

#define SIGNS 0x80008000u

typedef struct expect {
    const mcl_model *m;
    uint64_t words, wrong, control_wrong; /* words checked, mismatched, and against seed + 1 */
    int missing;
} expect;

/* Word i of a block matrix's device bytes. */
static uint32_t matrix_word(const mcl_quant_layout *l, uint64_t blocks, uint32_t seed,
                            uint32_t scales, uint64_t i)
{
    if (!l->split)
        return mcl_pattern_word_signed(seed, (uint32_t)i, l->block_bytes / 4, scales, SIGNS, 1);
    const uint64_t body = blocks * l->body_bytes / 4;
    return i < body ? mcl_pattern_word(seed, (uint32_t)i, 0, 0)
                    : mcl_pattern_word_signed(seed, (uint32_t)(i - body), 1, scales, SIGNS, 0);
}

static int check_tensor(void *user, const bench_tensor *bt)
{
    expect *e = user;
    const model_tensor *t = mcl_model_tensor_named(e->m, bt->name);
    if (!t || !t->tensor) {
        e->missing++;
        return 0;
    }
    uint64_t bytes = t->tensor->nbytes, n = bytes / 4;
    uint32_t *got = malloc(bytes);
    assert_non_null(got);
    /* The device's bytes (a download of the block tensor itself gives the file's layout). */
    mcl_tensor *raw = NULL;
    assert_mcl_ok(mcl_tensor_bytes_view(t->tensor, 0, bytes, &raw));
    assert_mcl_ok(mcl_tensor_download(raw, 0, got, bytes));
    mcl_tensor_destroy(raw);
    mcl_quant_layout l = {0};
    int block = bt->kind == BENCH_MATRIX || bt->kind == BENCH_STACK;
    if (block && t->dtype != MCL_DTYPE_F32)
        assert_true(mcl_quant_layout_of(t->dtype, &l));
    uint64_t blocks = l.block_bytes ? bytes / l.block_bytes : 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t want, other = 0;
        if (block && t->dtype == MCL_DTYPE_F32) {
            float f = mcl_pattern_uniform((uint32_t)bt->seed, (uint32_t)i, BENCH_F32_SCALE);
            float g = mcl_pattern_uniform((uint32_t)bt->seed + 1, (uint32_t)i, BENCH_F32_SCALE);
            memcpy(&want, &f, 4);
            memcpy(&other, &g, 4);
        } else if (block) {
            const uint32_t sc = bt->scale;
            want = matrix_word(&l, blocks, (uint32_t)bt->seed, sc << 16 | sc, i);
            other = matrix_word(&l, blocks, (uint32_t)bt->seed + 1, sc << 16 | sc, i);
        } else {
            float f = bt->kind == BENCH_NORM ? 1.0f : bench_llama_router(bt->seed, i);
            memcpy(&want, &f, 4);
        }
        e->wrong += got[i] != want;
        e->control_wrong += block && got[i] != other;
    }
    e->words += n;
    free(got);
    return 0;
}

static void one(const bench_llama_shape *s, int host_experts, const char *what)
{
    char path[512], name[160];
    snprintf(path, sizeof path, "%s/bench.gguf", mcl_test_scratch_dir());
    assert_int_equal(bench_write_llama(path, s), 0);
    mcl_model_desc md = {.size = sizeof md,
                         .flags = host_experts ? MCL_MODEL_EXPERTS_IN_HOST_MEMORY : 0};
    mcl_model *file = NULL, *made = NULL;
    assert_mcl_ok(mcl_model_open(ctx, path, &md, &file));
    assert_mcl_ok(bench_synth_llama(ctx, s, host_experts, &made));

    /* The same description as the loader reads from the file. */
    const mcl_model_info *a = &file->info, *b = &made->info;
    int same = a->vocab == b->vocab && a->dim == b->dim && a->layers == b->layers &&
               a->heads == b->heads && a->kv_heads == b->kv_heads &&
               a->head_dim == b->head_dim && a->hidden == b->hidden &&
               a->context_length == b->context_length && a->norm_eps == b->norm_eps &&
               a->rope_theta == b->rope_theta && a->rope_scaling == b->rope_scaling &&
               a->tied_output == b->tied_output && a->qkv_bias == b->qkv_bias &&
               a->experts == b->experts && a->experts_used == b->experts_used &&
               a->expert_hidden == b->expert_hidden && a->experts_norm == b->experts_norm &&
               a->parameters == b->parameters && a->device_bytes == b->device_bytes &&
               strcmp(a->architecture, b->architecture) == 0 &&
               file->tensor_count == made->tensor_count;
    for (uint32_t i = 0; same && i < file->tensor_count; i++) {
        const model_tensor *f = &file->tensors[i];
        const model_tensor *m = mcl_model_tensor_named(made, f->name);
        same = m && m->dtype == f->dtype && m->ndim == f->ndim &&
               memcmp(m->shape, f->shape, sizeof f->shape) == 0 &&
               m->tensor->nbytes == f->tensor->nbytes &&
               mcl_tensor_in_host_pool(m->tensor) == mcl_tensor_in_host_pool(f->tensor);
    }
    snprintf(name, sizeof name, "%s: the model made on the device described as the file's", what);
    assert_true(mcl_test_record_bool(name, same));

    /* Every word as the pattern says; the pattern of the next seed would not match. */
    expect e = {.m = made};
    assert_int_equal(bench_llama_tensors(s, check_tensor, &e), 0);
    assert_int_equal(e.missing, 0);
    snprintf(name, sizeof name, "%s: words of the tensors not as the pattern says", what);
    assert_true(mcl_test_record(name, "words", (double)e.wrong, 0));
    snprintf(name, sizeof name, "%s: control, the next seed's pattern matches words", what);
    assert_true(mcl_test_record_bool(name, e.control_wrong > e.words / 2));

    /* A session runs on it: finite logits. */
    mcl_session_desc sd = {.size = sizeof sd, .context_length = 32};
    mcl_session *session = NULL;
    assert_mcl_ok(mcl_session_create(made, &sd, &session));
    int32_t tokens[4] = {1, 7, 3, 11};
    float *logits = malloc((size_t)s->vocab * sizeof *logits);
    assert_non_null(logits);
    assert_mcl_ok(mcl_session_feed(session, 0, tokens, 4, logits));
    int finite = 1;
    for (uint32_t i = 0; i < s->vocab; i++)
        finite &= isfinite(logits[i]) != 0;
    snprintf(name, sizeof name, "%s: logits of a prompt finite", what);
    assert_true(mcl_test_record_bool(name, finite));
    free(logits);
    mcl_session_destroy(session);
    mcl_model_close(made);
    mcl_model_close(file);
    remove(path);
}

static const bench_llama_shape small = {.dim = 512, .layers = 2, .heads = 8, .kv_heads = 4,
                                        .hidden = 1024, .vocab = 512};

static void dense_types(void **state)
{
    (void)state;
    const uint32_t types[4] = {MCL_GGML_Q4_0, MCL_GGML_Q8_0, MCL_GGML_Q4_K, MCL_GGML_F32};
    for (int i = 0; i < 4; i++) {
        bench_llama_shape s = small;
        s.type = types[i];
        one(&s, 0, mcl_ggml_type_name(types[i]));
    }
}

static void mixture(void **state)
{
    (void)state;
    bench_llama_shape s = small;
    s.type = MCL_GGML_Q4_0, s.experts = 8, s.experts_used = 2;
    one(&s, 0, "mixture, q4_0");
    one(&s, 1, "mixture, q4_0, experts in host memory");
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(dense_types, mcl_test_scratch_setup,
                                        mcl_test_scratch_teardown),
        cmocka_unit_test_setup_teardown(mixture, mcl_test_scratch_setup,
                                        mcl_test_scratch_teardown),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
