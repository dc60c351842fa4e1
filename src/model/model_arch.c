/* Architectures the model loader reads: their names, their hyperparameters from a GGUF's
 * metadata, the tensors each needs and the shapes the hyperparameters give them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "core/alloc.h"

/* The architectures read, as general.architecture names them. llama covers llama 1, 2 and 3
 * and TinyLlama; llama.cpp's converter writes most mistral models as llama too. */
static const struct {
    const char *name;
    int permutes_qk; /* llama.cpp's converter permutes q and k rows for its RoPE */
    int qkv_bias;    /* q, k and v projections have biases */
    int moe;         /* 0: dense; 1: experts where expert_count says so (Mixtral is written
                        as llama); 2: always experts, qwen2moe's (unnormalised top-k, an
                        optional shared expert) */
} architectures[] = {
    {"llama", 1, 0, 1},
    {"mistral", 1, 0, 1},
    {"qwen2", 0, 1, 0},
    {"qwen2moe", 0, 1, 2},
};
/* The most experts per block and per token the engine's routing takes. */
#define MODEL_MAX_EXPERTS 256u
#define MODEL_MAX_EXPERTS_USED 16u
#define ARCH_COUNT (sizeof architectures / sizeof architectures[0])

const char *mcl_model_architecture_name(uint32_t index)
{
    return index < ARCH_COUNT ? architectures[index].name : NULL;
}

static int arch_index(const char *name)
{
    for (size_t i = 0; i < ARCH_COUNT; i++) {
        if (strcmp(architectures[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

int mcl_model_arch_permutes_qk(const char *architecture)
{
    int i = arch_index(architecture);
    return i >= 0 && architectures[i].permutes_qk;
}

/* "llama, mistral, qwen2" */
static void arch_list(char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ARCH_COUNT && used < size; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", architectures[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* A GGUF string into a C buffer (cut to fit). */
static void str_copy(char *dst, size_t size, mcl_gguf_str s)
{
    size_t n = s.len < size - 1 ? (size_t)s.len : size - 1;
    memcpy(dst, s.data, n);
    dst[n] = '\0';
}

/* "<arch>.<suffix>" of the architecture's keys. */
static const mcl_gguf_kv *arch_key(const mcl_model *m, const char *suffix)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", m->info.architecture, suffix);
    return mcl_gguf_find(m->gguf, key);
}

/* A required positive count that fits 32 bits. */
static mcl_status need_u32(mcl_model *m, const char *suffix, uint32_t *out)
{
    uint64_t v = 0;
    const mcl_gguf_kv *kv = arch_key(m, suffix);
    if (!kv)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: the file has no %s.%s",
                          m->info.architecture, suffix);
    if (!mcl_gguf_get_u64(kv, &v) || v == 0 || v > UINT32_MAX)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: %s.%s is not a positive 32-bit count", m->info.architecture,
                          suffix);
    *out = (uint32_t)v;
    return MCL_SUCCESS;
}

/* An optional float: `fallback` when absent. */
static mcl_status opt_f32(mcl_model *m, const char *suffix, float fallback, float *out)
{
    double v = fallback;
    const mcl_gguf_kv *kv = arch_key(m, suffix);
    if (kv && (!mcl_gguf_get_f64(kv, &v) || !isfinite(v)))
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: %s.%s is not a finite number",
                          m->info.architecture, suffix);
    *out = (float)v;
    return MCL_SUCCESS;
}

/* The mixture's hyperparameters: expert_count (where `moe` is 1, its absence means dense),
 * expert_used_count, and qwen2moe's expert and shared-expert widths. */
static mcl_status read_experts(mcl_model *m, int moe)
{
    mcl_model_info *in = &m->info;
    mcl_status status;
    if (moe == 0 || (moe == 1 && !arch_key(m, "expert_count")))
        return MCL_SUCCESS;
    if ((status = need_u32(m, "expert_count", &in->experts)) != MCL_SUCCESS ||
        (status = need_u32(m, "expert_used_count", &in->experts_used)) != MCL_SUCCESS)
        return status;
    if (in->experts > MODEL_MAX_EXPERTS || in->experts_used > in->experts ||
        in->experts_used > MODEL_MAX_EXPERTS_USED)
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: %u experts with %u per token (the library routes up to %u "
                          "experts, %u per token)", in->experts, in->experts_used,
                          MODEL_MAX_EXPERTS, MODEL_MAX_EXPERTS_USED);
    in->experts_norm = moe == 1;
    if (moe == 2) {
        if ((status = need_u32(m, "expert_feed_forward_length", &in->expert_hidden)) !=
            MCL_SUCCESS)
            return status;
        if (arch_key(m, "expert_shared_feed_forward_length") &&
            (status = need_u32(m, "expert_shared_feed_forward_length", &in->shared_hidden)) !=
                MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

mcl_status mcl_model_arch_from_gguf(mcl_model *m)
{
    mcl_model_info *in = &m->info;
    mcl_gguf_str s;
    const mcl_gguf_kv *kv = mcl_gguf_find(m->gguf, "general.architecture");
    if (!kv || !mcl_gguf_get_str(kv, &s))
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: the file has no general.architecture");
    str_copy(in->architecture, sizeof in->architecture, s);
    int arch = arch_index(in->architecture);
    if (arch < 0 || s.len >= sizeof in->architecture) {
        char list[128];
        arch_list(list, sizeof list);
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: architecture \"%.*s\" is not read (the library reads %s)",
                          (int)(s.len < 64 ? s.len : 64), s.data, list);
    }
    if ((kv = mcl_gguf_find(m->gguf, "general.name")) && mcl_gguf_get_str(kv, &s))
        str_copy(in->name, sizeof in->name, s);

    mcl_status status;
    if ((status = read_experts(m, architectures[arch].moe)) != MCL_SUCCESS)
        return status;
    if (architectures[arch].moe == 2 && !arch_key(m, "feed_forward_length"))
        in->hidden = in->expert_hidden; /* no dense block reads it */
    else if ((status = need_u32(m, "feed_forward_length", &in->hidden)) != MCL_SUCCESS)
        return status;
    if (in->experts && architectures[arch].moe == 1)
        in->expert_hidden = in->hidden;
    if ((status = need_u32(m, "embedding_length", &in->dim)) != MCL_SUCCESS ||
        (status = need_u32(m, "block_count", &in->layers)) != MCL_SUCCESS ||
        (status = need_u32(m, "attention.head_count", &in->heads)) != MCL_SUCCESS ||
        (status = need_u32(m, "context_length", &in->context_length)) != MCL_SUCCESS)
        return status;
    in->kv_heads = in->heads;
    if (arch_key(m, "attention.head_count_kv") &&
        (status = need_u32(m, "attention.head_count_kv", &in->kv_heads)) != MCL_SUCCESS)
        return status;
    if (in->dim % in->heads != 0 || in->heads % in->kv_heads != 0 ||
        (in->dim / in->heads) % 2 != 0)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: %u heads (%u key/value heads) do not divide the width %u "
                          "into even heads", in->heads, in->kv_heads, in->dim);
    in->head_dim = in->dim / in->heads;
    uint32_t rot = in->head_dim;
    if (arch_key(m, "rope.dimension_count") &&
        (status = need_u32(m, "rope.dimension_count", &rot)) != MCL_SUCCESS)
        return status;
    if (rot != in->head_dim)
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: RoPE over %u of a head's %u dimensions is not read (whole "
                          "heads only)", rot, in->head_dim);
    const char *checked[] = {"attention.key_length", "attention.value_length"};
    for (int i = 0; i < 2; i++) {
        uint32_t len = in->head_dim;
        if (arch_key(m, checked[i]) &&
            (status = need_u32(m, checked[i], &len)) != MCL_SUCCESS)
            return status;
        if (len != in->head_dim)
            return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                              "model: %s.%s %u differs from the width per head %u",
                              in->architecture, checked[i], len, in->head_dim);
    }
    if ((status = opt_f32(m, "attention.layer_norm_rms_epsilon", 1e-5f, &in->norm_eps)) !=
            MCL_SUCCESS ||
        (status = opt_f32(m, "rope.freq_base", 10000.0f, &in->rope_theta)) != MCL_SUCCESS)
        return status;
    if ((kv = arch_key(m, "rope.scaling.type")) && mcl_gguf_get_str(kv, &s) &&
        !mcl_gguf_str_eq(s, "none"))
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: RoPE scaling \"%.*s\" is not read (llama 3's frequency "
                          "factors are)", (int)(s.len < 32 ? s.len : 32), s.data);
    in->qkv_bias = (uint32_t)architectures[arch].qkv_bias;
    return MCL_SUCCESS;
}

mcl_status mcl_model_tensors_from_gguf(mcl_model *m)
{
    int permutes = mcl_model_arch_permutes_qk(m->info.architecture);
    for (uint64_t i = 0; i < mcl_gguf_tensor_count(m->gguf); i++) {
        const mcl_gguf_tensor *g = mcl_gguf_tensor_at(m->gguf, i);
        model_tensor *t;
        mcl_status status = mcl_model_add_tensor(m, g->name.data, (size_t)g->name.len, &t);
        if (status != MCL_SUCCESS)
            return status;
        t->file_type = g->type;
        t->ndim = g->ndim;
        for (uint32_t d = 0; d < g->ndim; d++)
            t->shape[d] = (int64_t)g->dims[g->ndim - 1 - d];
        t->data = g->data;
        t->bytes = g->bytes;
        if (permutes && mcl_model_ends_with(t->name, ".attn_q.weight"))
            t->unpermute_heads = m->info.heads;
        else if (permutes && mcl_model_ends_with(t->name, ".attn_k.weight"))
            t->unpermute_heads = m->info.kv_heads;
    }
    return MCL_SUCCESS;
}

model_tensor *mcl_model_tensor_named(const mcl_model *m, const char *name)
{
    for (uint32_t i = 0; i < m->tensor_count; i++) {
        if (strcmp(m->tensors[i].name, name) == 0)
            return &m->tensors[i];
    }
    return NULL;
}

mcl_status mcl_model_add_tensor(mcl_model *m, const char *name, size_t name_len,
                                model_tensor **out)
{
    if (m->tensor_count == m->tensor_capacity) {
        uint32_t capacity = m->tensor_capacity ? 2 * m->tensor_capacity : 64;
        model_tensor *grown = mcl_mem_realloc(m->tensors, capacity * sizeof *grown);
        if (!grown)
            return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        m->tensors = grown;
        m->tensor_capacity = capacity;
    }
    model_tensor *t = &m->tensors[m->tensor_count];
    memset(t, 0, sizeof *t);
    t->name = mcl_mem_malloc(name_len + 1);
    if (!t->name)
        return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    memcpy(t->name, name, name_len);
    t->name[name_len] = '\0';
    m->tensor_count++;
    *out = t;
    return MCL_SUCCESS;
}

/* The tensor `name` must exist with `ndim` dimensions [d0, d1]; MCL_ERROR_BAD_FILE otherwise
 * (an absent optional one is fine). */
static mcl_status expect(mcl_model *m, const char *name, int optional, uint32_t ndim,
                         int64_t d0, int64_t d1)
{
    const model_tensor *t = mcl_model_tensor_named(m, name);
    if (!t)
        return optional ? MCL_SUCCESS
                        : MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                                     "model: the %s model has no tensor %s",
                                     m->info.architecture, name);
    int fits = t->ndim == ndim && t->shape[0] == d0 && (ndim < 2 || t->shape[1] == d1);
    if (!fits)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: tensor %s is [%lld%s%lld], the hyperparameters give "
                          "[%lld%s%lld]", name, (long long)t->shape[0],
                          t->ndim > 1 ? ", " : "", t->ndim > 1 ? (long long)t->shape[1] : 0LL,
                          (long long)d0, ndim > 1 ? ", " : "", ndim > 1 ? (long long)d1 : 0LL);
    return MCL_SUCCESS;
}

/* An expert stack `name`: [experts, d0, d1]. */
static mcl_status expect_experts(mcl_model *m, const char *name, int64_t d0, int64_t d1)
{
    const model_tensor *t = mcl_model_tensor_named(m, name);
    const int64_t e = m->info.experts;
    if (!t)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: the %s model has no tensor %s%s",
                          m->info.architecture, name,
                          mcl_model_tensor_named(m, "blk.0.ffn_gate.0.weight")
                              ? " (its experts are separate tensors, as older conversions wrote "
                                "them: convert the model again, for experts stacked in one)"
                              : "");
    if (t->ndim != 3 || t->shape[0] != e || t->shape[1] != d0 || t->shape[2] != d1)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: tensor %s is %u-D [%lld, %lld, %lld], the hyperparameters "
                          "give [%lld, %lld, %lld]", name, t->ndim, (long long)t->shape[0],
                          (long long)(t->ndim > 1 ? t->shape[1] : 0),
                          (long long)(t->ndim > 2 ? t->shape[2] : 0), (long long)e,
                          (long long)d0, (long long)d1);
    return MCL_SUCCESS;
}

/* A block's mixture: the router, the three stacks, and qwen2moe's shared expert. */
static mcl_status check_experts(mcl_model *m, uint32_t l)
{
    const mcl_model_info *in = &m->info;
    const int64_t d = in->dim, fe = in->expert_hidden, fs = in->shared_hidden;
    char name[96];
    mcl_status status;
#define NAMED(suffix) (snprintf(name, sizeof name, "blk.%u.%s", l, suffix), name)
    if ((status = expect(m, NAMED("ffn_gate_inp.weight"), 0, 2, in->experts, d)) !=
            MCL_SUCCESS ||
        (status = expect_experts(m, NAMED("ffn_gate_exps.weight"), fe, d)) != MCL_SUCCESS ||
        (status = expect_experts(m, NAMED("ffn_up_exps.weight"), fe, d)) != MCL_SUCCESS ||
        (status = expect_experts(m, NAMED("ffn_down_exps.weight"), d, fe)) != MCL_SUCCESS)
        return status;
    if (fs > 0 &&
        ((status = expect(m, NAMED("ffn_gate_inp_shexp.weight"), 0, 1, d, 0)) != MCL_SUCCESS ||
         (status = expect(m, NAMED("ffn_gate_shexp.weight"), 0, 2, fs, d)) != MCL_SUCCESS ||
         (status = expect(m, NAMED("ffn_up_shexp.weight"), 0, 2, fs, d)) != MCL_SUCCESS ||
         (status = expect(m, NAMED("ffn_down_shexp.weight"), 0, 2, d, fs)) != MCL_SUCCESS))
        return status;
#undef NAMED
    return MCL_SUCCESS;
}

mcl_status mcl_model_check_tensors(mcl_model *m)
{
    mcl_model_info *in = &m->info;
    const int64_t d = in->dim, hd = in->head_dim, q = (int64_t)in->heads * hd,
                  kv = (int64_t)in->kv_heads * hd, f = in->hidden;
    const model_tensor *embd = mcl_model_tensor_named(m, "token_embd.weight");
    if (!embd || embd->ndim != 2)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: the file has no 2-D token_embd.weight");
    if (!in->vocab)
        in->vocab = (uint32_t)embd->shape[0];
    mcl_status status;
    if ((status = expect(m, "token_embd.weight", 0, 2, in->vocab, d)) != MCL_SUCCESS ||
        (status = expect(m, "output_norm.weight", 0, 1, d, 0)) != MCL_SUCCESS ||
        (status = expect(m, "output.weight", 1, 2, in->vocab, d)) != MCL_SUCCESS ||
        (status = expect(m, "rope_freqs.weight", 1, 1, hd / 2, 0)) != MCL_SUCCESS)
        return status;
    in->tied_output = mcl_model_tensor_named(m, "output.weight") == NULL;
    if (mcl_model_tensor_named(m, "rope_freqs.weight"))
        in->rope_scaling = MCL_ROPE_SCALING_LLAMA3;
    static const struct {
        const char *suffix;
        int rows, cols, bias; /* 0 d, 1 q, 2 kv, 3 f */
    } layer[] = {
        {"attn_norm.weight", 0, -1, 0}, {"attn_q.weight", 1, 0, 0},
        {"attn_k.weight", 2, 0, 0},     {"attn_v.weight", 2, 0, 0},
        {"attn_output.weight", 0, 1, 0}, {"ffn_norm.weight", 0, -1, 0},
        {"ffn_gate.weight", 3, 0, 0},   {"ffn_up.weight", 3, 0, 0},
        {"ffn_down.weight", 0, 3, 0},   {"attn_q.bias", 1, -1, 1},
        {"attn_k.bias", 2, -1, 1},      {"attn_v.bias", 2, -1, 1},
    };
    const int64_t size_of[] = {d, q, kv, f};
    for (uint32_t l = 0; l < in->layers; l++) {
        if (in->experts && (status = check_experts(m, l)) != MCL_SUCCESS)
            return status;
        for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++) {
            if (layer[i].bias && !in->qkv_bias)
                continue;
            if (in->experts && (layer[i].rows == 3 || layer[i].cols == 3))
                continue; /* the dense feed-forward, which a mixture replaces */
            char name[96];
            snprintf(name, sizeof name, "blk.%u.%s", l, layer[i].suffix);
            int64_t rows = size_of[layer[i].rows];
            int64_t cols = layer[i].cols < 0 ? 0 : size_of[layer[i].cols];
            if ((status = expect(m, name, 0, layer[i].cols < 0 ? 1 : 2, rows, cols)) !=
                MCL_SUCCESS)
                return status;
        }
    }
    return MCL_SUCCESS;
}
