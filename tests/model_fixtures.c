/* A tiny random llama-family model in GGUF and Hugging Face form (model_fixtures.h). */
#include "model_fixtures.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "quant/quant.h"
#include "ref/ref.h"

#define FIXTURE_PI 3.14159265358979323846

static mcl_status fixture_fail(mcl_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "model_fixture: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return status;
}

/* --- Shared pieces -------------------------------------------------------------------- */

void model_fixture_permute(const float *hf, float *file, int64_t rows, int64_t k,
                           int64_t heads)
{
    int64_t hd = rows / heads, half = hd / 2;
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, j = r % hd, a = j % 2, i = j / 2;
        memcpy(file + r * k, hf + (h * hd + a * half + i) * k, (size_t)k * sizeof *file);
    }
}

void model_fixture_unpermute(const float *file, float *hf, int64_t rows, int64_t k,
                             int64_t heads)
{
    int64_t hd = rows / heads, half = hd / 2;
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, j = r % hd, a = j % 2, i = j / 2;
        memcpy(hf + (h * hd + a * half + i) * k, file + r * k, (size_t)k * sizeof *hf);
    }
}

uint16_t model_fixture_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* The library dtype of a block type, or -1. */
static int block_dtype(uint32_t type)
{
    int d = mcl_ggml_type_dtype(type);
    return d > (int)MCL_DTYPE_U8 ? d : -1;
}

static int type_read(uint32_t type)
{
    return type == MCL_GGML_F32 || type == MCL_GGML_F16 || type == MCL_GGML_BF16 ||
           block_dtype(type) >= 0;
}

unsigned char *model_fixture_encode(uint32_t type, const float *x, int64_t rows, int64_t k,
                                    uint64_t *bytes)
{
    int64_t per = (int64_t)mcl_ggml_block_elems(type);
    if (!type_read(type) || rows < 1 || k < 1 || per < 1 || k % per != 0)
        return NULL;
    size_t n = (size_t)(rows * k);
    *bytes = (uint64_t)rows * (uint64_t)(k / per) * mcl_ggml_block_bytes(type);
    unsigned char *out = malloc((size_t)*bytes);
    if (!out)
        return NULL;
    if (type == MCL_GGML_F32) {
        memcpy(out, x, n * sizeof *x);
    } else if (type == MCL_GGML_F16 || type == MCL_GGML_BF16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h = type == MCL_GGML_F16 ? mcl_fp32_to_fp16(x[i]) : model_fixture_bf16(x[i]);
            out[2 * i] = (unsigned char)h;
            out[2 * i + 1] = (unsigned char)(h >> 8);
        }
    } else if (mcl_quantize((mcl_dtype)block_dtype(type), x, out, (int64_t)n) != MCL_SUCCESS) {
        free(out);
        return NULL;
    }
    return out;
}

mcl_status model_fixture_decode(uint32_t type, const void *data, int64_t n, float *out)
{
    const unsigned char *p = data;
    if (type == MCL_GGML_F32) {
        memcpy(out, data, (size_t)n * sizeof *out);
    } else if (type == MCL_GGML_F16 || type == MCL_GGML_BF16) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            uint32_t u = (uint32_t)h << 16;
            if (type == MCL_GGML_F16)
                out[i] = mcl_fp16_to_fp32(h);
            else
                memcpy(&out[i], &u, sizeof u);
        }
    } else if (block_dtype(type) >= 0) {
        return mcl_dequantize((mcl_dtype)block_dtype(type), data, out, n);
    } else {
        return MCL_ERROR_UNSUPPORTED;
    }
    return MCL_SUCCESS;
}

/* The checkpoint's names of a mixture's tensors, per architecture: Mixtral's
 * block_sparse_moe, Qwen2-MoE's mlp; an expert stack's is a pattern of its experts' names (%d
 * the expert). */
static const struct {
    const char *gguf, *mixtral, *qwen2moe;
} moe_names[] = {
    {"ffn_gate_inp.weight", "block_sparse_moe.gate.weight", "mlp.gate.weight"},
    {"ffn_gate_exps.weight", "block_sparse_moe.experts.%d.w1.weight",
     "mlp.experts.%d.gate_proj.weight"},
    {"ffn_up_exps.weight", "block_sparse_moe.experts.%d.w3.weight",
     "mlp.experts.%d.up_proj.weight"},
    {"ffn_down_exps.weight", "block_sparse_moe.experts.%d.w2.weight",
     "mlp.experts.%d.down_proj.weight"},
    {"ffn_gate_inp_shexp.weight", NULL, "mlp.shared_expert_gate.weight"},
    {"ffn_gate_shexp.weight", NULL, "mlp.shared_expert.gate_proj.weight"},
    {"ffn_up_shexp.weight", NULL, "mlp.shared_expert.up_proj.weight"},
    {"ffn_down_shexp.weight", NULL, "mlp.shared_expert.down_proj.weight"},
};

int model_fixture_hf_name(const char *gguf, char *hf, size_t size)
{
    return model_fixture_hf_name_of(NULL, gguf, hf, size);
}

int model_fixture_hf_name_of(const char *arch, const char *gguf, char *hf, size_t size)
{
    static const struct {
        const char *gguf, *hf;
    } names[] = {
        {"attn_norm.weight", "input_layernorm.weight"},
        {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"},
        {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_q.bias", "self_attn.q_proj.bias"},
        {"attn_k.bias", "self_attn.k_proj.bias"},
        {"attn_v.bias", "self_attn.v_proj.bias"},
        {"attn_output.weight", "self_attn.o_proj.weight"},
        {"ffn_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"},
    };
    unsigned l = 0;
    int used = 0;
    hf[0] = '\0';
    if (strcmp(gguf, "token_embd.weight") == 0)
        snprintf(hf, size, "model.embed_tokens.weight");
    else if (strcmp(gguf, "output_norm.weight") == 0)
        snprintf(hf, size, "model.norm.weight");
    else if (strcmp(gguf, "output.weight") == 0)
        snprintf(hf, size, "lm_head.weight");
    else if (sscanf(gguf, "blk.%u.%n", &l, &used) == 1 && used > 0) {
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
            if (strcmp(gguf + used, names[j].gguf) == 0)
                snprintf(hf, size, "model.layers.%u.%s", l, names[j].hf);
        int qwen = arch && strcmp(arch, "qwen2moe") == 0;
        for (size_t j = 0; arch && j < sizeof moe_names / sizeof moe_names[0]; j++) {
            const char *name = qwen ? moe_names[j].qwen2moe : moe_names[j].mixtral;
            if (name && strcmp(gguf + used, moe_names[j].gguf) == 0)
                snprintf(hf, size, "model.layers.%u.%s", l, name);
        }
    }
    return hf[0] != '\0';
}

/* --- Generation ----------------------------------------------------------------------- */

enum { INIT_ROPE_FREQS = -1, INIT_MATRIX, INIT_EMBEDDING, INIT_NORM, INIT_BIAS };

/* Llama 3.1's per-pair divisors as llama.cpp's converter computes them (in double here). */
static void llama3_factors(const model_fixture_desc *d, float *out)
{
    double ctx = d->rope_original_context, low = d->rope_low_freq_factor,
           high = d->rope_high_freq_factor, factor = d->rope_factor;
    for (int i = 0; i < d->head_dim / 2; i++) {
        double freq = 1.0 / pow((double)d->rope_theta, 2.0 * i / d->head_dim);
        double wavelen = 2.0 * FIXTURE_PI / freq, f;
        if (wavelen < ctx / high) {
            f = 1.0;
        } else if (wavelen > ctx / low) {
            f = factor;
        } else {
            double smooth = (ctx / wavelen - low) / (high - low);
            f = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
        out[i] = (float)f;
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A uniform value in [0, 1) from word i of a seeded pattern. */
static double unit(uint32_t seed, uint32_t i)
{
    return (double)(ref_pattern(seed, i) >> 8) / 16777216.0;
}

/* desc.clear_routing (model_fixtures.h): the generated values of t shaped so that the token
 * alone decides each routing choice. */
static void clear_routing(const model_fixture_desc *d, model_fixture_tensor *t, uint32_t seed)
{
    const int64_t E = d->experts, D = d->dim, U = d->experts_used;
    int layer = 0;
    if (strcmp(t->name, "token_embd.weight") == 0) {
        for (int64_t v = 0; v < d->vocab; v++) {
            int64_t order[256];
            for (int64_t e = 0; e < E; e++)
                order[e] = e;
            for (int64_t e = E - 1; e > 0; e--) { /* Fisher-Yates, seeded by the token */
                int64_t j = (int64_t)(unit(seed ^ 0x5bd1e995u, (uint32_t)(v * E + e)) *
                                      (double)(e + 1));
                int64_t x = order[e];
                order[e] = order[j];
                order[j] = x;
            }
            for (int64_t i = 0; i < E; i++) {
                double u = unit(seed ^ 0x27d4eb2fu, (uint32_t)(v * E + i));
                t->source[v * D + order[i]] = (float)(i < U ? 0.8 + 0.2 * u : -u);
            }
        }
    } else if (ends_with(t->name, "ffn_gate_inp.weight") &&
               sscanf(t->name, "blk.%d.", &layer) == 1) {
        for (int64_t e = 0; e < E; e++) {
            for (int64_t c = 0; c < D; c++)
                t->source[e * D + c] *= 0.05f;
            t->source[e * D + (e + layer) % E] += 0.75f;
        }
    } else if (ends_with(t->name, "attn_output.weight") ||
               ends_with(t->name, "ffn_down_exps.weight") ||
               ends_with(t->name, "ffn_down_shexp.weight")) {
        for (int64_t r = 0; r < t->shape[0]; r++)
            if (r % D < E)
                memset(t->source + r * t->shape[1], 0, (size_t)t->shape[1] * sizeof(float));
    }
}

/* Tensor `name` added with its values generated and both forms' values computed. */
static mcl_status add(model_fixture *f, const char *name, int cls, uint32_t ndim, int64_t n,
                      int64_t k, int64_t permute_heads, int init)
{
    const model_fixture_desc *d = &f->desc;
    model_fixture_tensor *t = &f->tensors[f->count];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->cls = cls;
    t->ndim = ndim;
    t->shape[0] = n;
    t->shape[1] = ndim > 1 ? k : 0;
    t->gguf_type = cls >= 0 ? d->gguf_type[cls] : MCL_GGML_F32;
    t->permute_heads = strcmp(d->arch, "llama") == 0 ? permute_heads : 0;
    int64_t rows = ndim > 1 ? n : 1, cols = ndim > 1 ? k : n, count = rows * cols;
    size_t bytes = (size_t)count * sizeof(float);
    t->source = malloc(bytes);
    t->gguf = malloc(bytes);
    t->hf = init != INIT_ROPE_FREQS ? malloc(bytes) : NULL;
    float *file = malloc(bytes);
    f->count++;
    if (!t->source || !t->gguf || (init != INIT_ROPE_FREQS && !t->hf) || !file) {
        free(file);
        return fixture_fail(MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    }
    uint32_t seed = ref_pattern(d->seed, (uint32_t)f->count);
    float a = (float)(sqrt(3.0 / (double)cols) * d->weight_scale);
    if (init == INIT_MATRIX)
        mcl_fill_random(t->source, (size_t)count, seed, -a, a);
    else if (init == INIT_EMBEDDING)
        mcl_fill_random(t->source, (size_t)count, seed, -1.0f, 1.0f);
    else if (init == INIT_NORM)
        mcl_fill_random(t->source, (size_t)count, seed, 0.75f, 1.25f);
    else if (init == INIT_BIAS)
        mcl_fill_random(t->source, (size_t)count, seed, -0.5f, 0.5f);
    else
        llama3_factors(d, t->source);
    if (d->clear_routing)
        clear_routing(d, t, seed);

    /* The GGUF's values: encoded in the file's row order, decoded, put back (a bias's
     * permutation moves single elements: rows of one). */
    int64_t prow = ndim > 1 ? rows : n, pcol = ndim > 1 ? cols : 1;
    if (t->permute_heads)
        model_fixture_permute(t->source, file, prow, pcol, t->permute_heads);
    else
        memcpy(file, t->source, bytes);
    uint64_t size = 0;
    unsigned char *data = model_fixture_encode(t->gguf_type, file, rows, cols, &size);
    mcl_status s = data ? model_fixture_decode(t->gguf_type, data, count, file)
                        : fixture_fail(MCL_ERROR_INVALID_ARGUMENT,
                                       "%s: %s cannot hold rows of %lld", name,
                                       mcl_ggml_type_name(t->gguf_type), (long long)cols);
    free(data);
    if (s == MCL_SUCCESS && t->permute_heads)
        model_fixture_unpermute(file, t->gguf, prow, pcol, t->permute_heads);
    else if (s == MCL_SUCCESS)
        memcpy(t->gguf, file, bytes);
    /* The checkpoint's values: through its dtype. */
    if (s == MCL_SUCCESS && t->hf) {
        data = model_fixture_encode(d->hf_type, t->source, rows, cols, &size);
        s = data ? model_fixture_decode(d->hf_type, data, count, t->hf)
                 : fixture_fail(MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
        free(data);
    }
    free(file);
    return s;
}

/* The ref_llama of one form: `which` 0 the GGUF's values, 1 the checkpoint's. */
static void fill_ref(model_fixture *f, int which)
{
    const model_fixture_desc *d = &f->desc;
    ref_llama *m = which ? &f->hf_ref : &f->gguf_ref;
    ref_llama_layer *blk = which ? f->hf_blk : f->gguf_blk;
    memset(m, 0, sizeof *m);
    m->dim = d->dim;
    m->layers = d->layers;
    m->heads = d->heads;
    m->kv_heads = d->kv_heads;
    m->head_dim = d->head_dim;
    m->hidden = d->hidden;
    m->vocab = d->vocab;
    m->norm_eps = (double)d->norm_eps;
    m->rope_theta = (double)d->rope_theta;
    m->rope_freqs = f->rope_freqs;
    m->qkv_bias = d->qkv_bias;
    m->tied_output = d->tied;
    m->experts = d->experts;
    m->experts_used = d->experts ? d->experts_used : 0;
    m->expert_hidden = d->experts ? d->expert_hidden : 0;
    m->experts_norm = d->experts && strcmp(d->arch, "llama") == 0;
    m->shared_hidden = d->shared_hidden;
    m->blk = blk;
#define VALUES(name) (which ? model_fixture_find(f, name)->hf : model_fixture_find(f, name)->gguf)
    m->token_embd = VALUES("token_embd.weight");
    m->output_norm = VALUES("output_norm.weight");
    m->output = d->tied ? NULL : VALUES("output.weight");
    for (int l = 0; l < d->layers; l++) {
        char name[64];
#define LAYER(field, suffix)                                                                 \
    (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), blk[l].field = VALUES(name))
        LAYER(attn_norm, "attn_norm.weight");
        LAYER(attn_q, "attn_q.weight");
        LAYER(attn_k, "attn_k.weight");
        LAYER(attn_v, "attn_v.weight");
        LAYER(attn_output, "attn_output.weight");
        LAYER(ffn_norm, "ffn_norm.weight");
        if (d->experts == 0) {
            LAYER(ffn_gate, "ffn_gate.weight");
            LAYER(ffn_up, "ffn_up.weight");
            LAYER(ffn_down, "ffn_down.weight");
        } else {
            LAYER(ffn_gate_inp, "ffn_gate_inp.weight");
            LAYER(ffn_gate_exps, "ffn_gate_exps.weight");
            LAYER(ffn_up_exps, "ffn_up_exps.weight");
            LAYER(ffn_down_exps, "ffn_down_exps.weight");
        }
        if (d->shared_hidden > 0) {
            LAYER(ffn_gate_inp_shexp, "ffn_gate_inp_shexp.weight");
            LAYER(ffn_gate_shexp, "ffn_gate_shexp.weight");
            LAYER(ffn_up_shexp, "ffn_up_shexp.weight");
            LAYER(ffn_down_shexp, "ffn_down_shexp.weight");
        }
        if (d->qkv_bias) {
            LAYER(attn_q_bias, "attn_q.bias");
            LAYER(attn_k_bias, "attn_k.bias");
            LAYER(attn_v_bias, "attn_v.bias");
        }
#undef LAYER
    }
#undef VALUES
}

mcl_status model_fixture_create(const model_fixture_desc *desc, model_fixture *f)
{
    memset(f, 0, sizeof *f);
    model_fixture_desc *d = &f->desc;
    *d = *desc;
    d->arch = d->arch ? d->arch : "llama";
    d->kv_heads = d->kv_heads ? d->kv_heads : d->heads;
    d->head_dim = d->head_dim ? d->head_dim : (d->heads > 0 ? d->dim / d->heads : 0);
    d->rope_theta = d->rope_theta != 0.0f ? d->rope_theta : 10000.0f;
    d->norm_eps = d->norm_eps != 0.0f ? d->norm_eps : 1e-5f;
    d->context = d->context ? d->context : 2048;
    d->rope_low_freq_factor = d->rope_low_freq_factor != 0.0f ? d->rope_low_freq_factor : 1.0f;
    d->rope_high_freq_factor = d->rope_high_freq_factor != 0.0f ? d->rope_high_freq_factor : 4.0f;
    d->rope_original_context = d->rope_original_context ? d->rope_original_context : 8192;
    d->weight_scale = d->weight_scale != 0.0f ? d->weight_scale : 1.0f;
    if (strcmp(d->arch, "llama") != 0 && strcmp(d->arch, "qwen2") != 0 &&
        strcmp(d->arch, "qwen2moe") != 0)
        return fixture_fail(MCL_ERROR_INVALID_ARGUMENT,
                            "arch \"%s\" (llama, qwen2 and qwen2moe are written)", d->arch);
    d->experts_used = d->experts_used ? d->experts_used : 2;
    d->expert_hidden = d->expert_hidden ? d->expert_hidden : d->hidden;
    if ((strcmp(d->arch, "qwen2moe") == 0) != (d->experts > 0 && strcmp(d->arch, "llama") != 0)
        || d->experts < 0 || (d->experts > 0 && d->experts_used > d->experts) ||
        (d->shared_hidden > 0 && strcmp(d->arch, "qwen2moe") != 0))
        return fixture_fail(MCL_ERROR_INVALID_ARGUMENT,
                            "experts %d (%d used, shared %d) for arch %s: llama or qwen2moe "
                            "with experts, a shared expert for qwen2moe only", d->experts,
                            d->experts_used, d->shared_hidden, d->arch);
    if (d->clear_routing && (d->experts < 1 || d->experts > d->dim || d->experts > 256))
        return fixture_fail(MCL_ERROR_INVALID_ARGUMENT, "clear routing needs a mixture of at "
                            "most dim (%d) and 256 experts, not %d", d->dim, d->experts);
    if (d->dim < 1 || d->layers < 0 || d->heads < 1 || d->kv_heads < 1 || d->hidden < 1 ||
        d->vocab < 1 || d->head_dim < 2 || d->head_dim % 2 || d->heads % d->kv_heads)
        return fixture_fail(MCL_ERROR_INVALID_ARGUMENT, "shape: dim %d, heads %d/%d, head_dim %d",
                    d->dim, d->heads, d->kv_heads, d->head_dim);
    if (d->hf_type != MCL_GGML_F32 && d->hf_type != MCL_GGML_F16 && d->hf_type != MCL_GGML_BF16)
        return fixture_fail(MCL_ERROR_INVALID_ARGUMENT, "hf_type %u (f32, f16, bf16)", d->hf_type);
    for (int c = 0; c < FIXTURE_CLASSES; c++)
        if (!type_read(d->gguf_type[c]))
            return fixture_fail(MCL_ERROR_INVALID_ARGUMENT, "gguf_type[%d] %u is not read", c,
                        d->gguf_type[c]);
    if (!d->no_tokenizer && d->vocab < 3)
        return fixture_fail(MCL_ERROR_INVALID_ARGUMENT, "a tokenizer needs 3 tokens or more");

    const int64_t D = d->dim, Q = (int64_t)d->heads * d->head_dim,
                  KV = (int64_t)d->kv_heads * d->head_dim, F = d->hidden;
    f->tensors = calloc((size_t)(5 + 16 * d->layers), sizeof *f->tensors);
    f->gguf_blk = calloc((size_t)(d->layers ? d->layers : 1), sizeof *f->gguf_blk);
    f->hf_blk = calloc((size_t)(d->layers ? d->layers : 1), sizeof *f->hf_blk);
    if (!f->tensors || !f->gguf_blk || !f->hf_blk) {
        model_fixture_free(f);
        return fixture_fail(MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    }
    mcl_status s = MCL_SUCCESS;
    if (d->rope_factor > 0.0f) { /* the converter writes it first */
        s = add(f, "rope_freqs.weight", FIXTURE_F32_ONLY, 1, d->head_dim / 2, 0, 0,
                INIT_ROPE_FREQS);
        f->rope_freqs = f->tensors[0].gguf;
    }
    if (s == MCL_SUCCESS)
        s = add(f, "token_embd.weight", FIXTURE_TOKEN_EMBD, 2, d->vocab, D, 0, INIT_EMBEDDING);
    for (int l = 0; l < d->layers && s == MCL_SUCCESS; l++) {
        char name[64];
#define LAYER(suffix, cls, nd, n, k, heads, init)                                            \
    if (s == MCL_SUCCESS) {                                                                  \
        snprintf(name, sizeof name, "blk.%d.%s", l, suffix);                                 \
        s = add(f, name, cls, nd, n, k, heads, init);                                        \
    }
        LAYER("attn_norm.weight", FIXTURE_F32_ONLY, 1, D, 0, 0, INIT_NORM);
        LAYER("attn_q.weight", FIXTURE_ATTN_Q, 2, Q, D, d->heads, INIT_MATRIX);
        LAYER("attn_k.weight", FIXTURE_ATTN_K, 2, KV, D, d->kv_heads, INIT_MATRIX);
        LAYER("attn_v.weight", FIXTURE_ATTN_V, 2, KV, D, 0, INIT_MATRIX);
        if (d->qkv_bias) {
            LAYER("attn_q.bias", FIXTURE_F32_ONLY, 1, Q, 0, d->heads, INIT_BIAS);
            LAYER("attn_k.bias", FIXTURE_F32_ONLY, 1, KV, 0, d->kv_heads, INIT_BIAS);
            LAYER("attn_v.bias", FIXTURE_F32_ONLY, 1, KV, 0, 0, INIT_BIAS);
        }
        LAYER("attn_output.weight", FIXTURE_ATTN_OUTPUT, 2, D, Q, 0, INIT_MATRIX);
        LAYER("ffn_norm.weight", FIXTURE_F32_ONLY, 1, D, 0, 0, INIT_NORM);
        if (d->experts == 0) {
            LAYER("ffn_gate.weight", FIXTURE_FFN_GATE, 2, F, D, 0, INIT_MATRIX);
            LAYER("ffn_up.weight", FIXTURE_FFN_UP, 2, F, D, 0, INIT_MATRIX);
            LAYER("ffn_down.weight", FIXTURE_FFN_DOWN, 2, D, F, 0, INIT_MATRIX);
            continue;
        }
        /* A mixture: the router (f32, as llama.cpp's quantizer keeps it), then the experts
         * stacked [experts, rows, K] (each row's values drawn for its K, as one matrix). */
        const int64_t E = d->experts, FE = d->expert_hidden, FS = d->shared_hidden;
        LAYER("ffn_gate_inp.weight", FIXTURE_F32_ONLY, 2, E, D, 0, INIT_MATRIX);
        LAYER("ffn_gate_exps.weight", FIXTURE_FFN_GATE, 2, E * FE, D, 0, INIT_MATRIX);
        LAYER("ffn_up_exps.weight", FIXTURE_FFN_UP, 2, E * FE, D, 0, INIT_MATRIX);
        LAYER("ffn_down_exps.weight", FIXTURE_FFN_DOWN, 2, E * D, FE, 0, INIT_MATRIX);
        for (int j = 3; j >= 1 && s == MCL_SUCCESS; j--) {
            f->tensors[f->count - j].ndim = 3;
            f->tensors[f->count - j].experts = E;
        }
        if (FS > 0) {
            LAYER("ffn_gate_inp_shexp.weight", FIXTURE_F32_ONLY, 1, D, 0, 0, INIT_BIAS);
            LAYER("ffn_gate_shexp.weight", FIXTURE_FFN_GATE, 2, FS, D, 0, INIT_MATRIX);
            LAYER("ffn_up_shexp.weight", FIXTURE_FFN_UP, 2, FS, D, 0, INIT_MATRIX);
            LAYER("ffn_down_shexp.weight", FIXTURE_FFN_DOWN, 2, D, FS, 0, INIT_MATRIX);
        }
#undef LAYER
    }
    if (s == MCL_SUCCESS)
        s = add(f, "output_norm.weight", FIXTURE_F32_ONLY, 1, D, 0, 0, INIT_NORM);
    if (s == MCL_SUCCESS && !d->tied)
        s = add(f, "output.weight", FIXTURE_OUTPUT, 2, d->vocab, D, 0, INIT_MATRIX);
    if (s != MCL_SUCCESS) {
        model_fixture_free(f);
        return s;
    }
    fill_ref(f, 0);
    fill_ref(f, 1);
    return MCL_SUCCESS;
}

void model_fixture_free(model_fixture *f)
{
    if (!f)
        return;
    for (int i = 0; f->tensors && i < f->count; i++) {
        free(f->tensors[i].source);
        free(f->tensors[i].gguf);
        free(f->tensors[i].hf);
    }
    free(f->tensors);
    free(f->gguf_blk);
    free(f->hf_blk);
    memset(f, 0, sizeof *f);
}

const model_fixture_tensor *model_fixture_find(const model_fixture *f, const char *name)
{
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

double model_fixture_rel_rms(const float *got, const double *want, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

double model_fixture_tolerance(mcl_context *ctx, uint32_t type)
{
    mcl_device_info info = {.size = sizeof info};
    /* Without the device's features the stricter tolerance stands. */
    if (mcl_context_device_info(ctx, &info) != MCL_SUCCESS)
        info.features_enabled = 0;
    uint64_t approx = MCL_FEATURE_INTEGER_DOT_ACCELERATED | MCL_FEATURE_COOPERATIVE_MATRIX;
    /* The integer-dot path (chosen where it is accelerated, or forced) quantizes activations. */
    const char *path = getenv("MOTIFCL_QUANT_PATH");
    int forced_dot = path && strcmp(path, "dot") == 0;
    return type != MCL_GGML_F32 && ((info.features_enabled & approx) || forced_dot) ? 3e-2 : 1e-4;
}
