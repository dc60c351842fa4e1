/* The files of a model fixture (model_fixtures.h): the GGUF file as llama.cpp's converter
 * writes it, and the Hugging Face checkpoint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "io/safetensors.h"
#include "model_fixtures.h"

/* "▁", SentencePiece's word boundary, in UTF-8. */
#define SPM_SPACE "\xe2\x96\x81"

static mcl_status fixture_fail(mcl_status status, const char *what)
{
    fprintf(stderr, "model_fixture: %s: %s\n", what, mcl_status_string(status));
    return status;
}

static mcl_status write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return fixture_fail(MCL_ERROR_IO, path);
    int ok = fwrite(data, 1, size, f) == size;
    ok &= fclose(f) == 0;
    return ok ? MCL_SUCCESS : fixture_fail(MCL_ERROR_IO, path);
}

static mcl_status put_u32(mcl_gguf_writer *g, const char *arch, const char *suffix, uint32_t v)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return mcl_gguf_writer_add(g, key, MCL_GGUF_UINT32, &v);
}

static mcl_status put_f32(mcl_gguf_writer *g, const char *arch, const char *suffix, float v)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return mcl_gguf_writer_add(g, key, MCL_GGUF_FLOAT32, &v);
}

/* The chat templates' control tokens, the last pieces of a vocabulary with chat_tokens. */
static const char *const chat_tokens[] = {"<|im_start|>", "<|im_end|>", "<|start_header_id|>",
                                          "<|end_header_id|>", "<|eot_id|>"};
enum { CHAT_TOKENS = sizeof chat_tokens / sizeof chat_tokens[0] };

/* A SentencePiece-style vocabulary of n tokens: <unk>, <s>, </s>, "▁", single characters,
 * then filler pieces "▁w<i>"; scores fall with the id. With `chat`, the last pieces are the
 * chat templates' control tokens. */
static mcl_status put_tokenizer(mcl_gguf_writer *g, int n, int chat)
{
    static const char chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'-";
    enum { PIECE = 24 };
    char *text = calloc((size_t)n, PIECE);
    const char **tokens = calloc((size_t)n, sizeof *tokens);
    float *scores = calloc((size_t)n, sizeof *scores);
    int32_t *types = calloc((size_t)n, sizeof *types);
    mcl_status s = text && tokens && scores && types ? MCL_SUCCESS : MCL_ERROR_OUT_OF_HOST_MEMORY;
    for (int i = 0; s == MCL_SUCCESS && i < n; i++) {
        char *t = text + (size_t)i * PIECE;
        int c = i - 4;
        if (i < 3)
            snprintf(t, PIECE, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else if (i == 3)
            snprintf(t, PIECE, SPM_SPACE);
        else if (c < (int)sizeof chars - 1)
            snprintf(t, PIECE, "%c", chars[c]);
        else
            snprintf(t, PIECE, SPM_SPACE "w%d", i);
        int chat_at = chat ? i - (n - CHAT_TOKENS) : -1;
        if (chat_at >= 0)
            snprintf(t, PIECE, "%s", chat_tokens[chat_at]);
        tokens[i] = t;
        scores[i] = i < 3 || chat_at >= 0 ? 0.0f : -(float)i;
        types[i] = i == 0 ? 2 : i < 3 || chat_at >= 0 ? 3 : 1; /* unknown, control, normal */
    }
    uint32_t bos = 1, eos = 2, unk = 0;
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add(g, "tokenizer.ggml.model", MCL_GGUF_STRING, "llama");
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add_array(g, "tokenizer.ggml.tokens", MCL_GGUF_STRING,
                                      (uint64_t)n, tokens);
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add_array(g, "tokenizer.ggml.scores", MCL_GGUF_FLOAT32,
                                      (uint64_t)n, scores);
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add_array(g, "tokenizer.ggml.token_type", MCL_GGUF_INT32,
                                      (uint64_t)n, types);
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add(g, "tokenizer.ggml.bos_token_id", MCL_GGUF_UINT32, &bos);
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add(g, "tokenizer.ggml.eos_token_id", MCL_GGUF_UINT32, &eos);
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add(g, "tokenizer.ggml.unknown_token_id", MCL_GGUF_UINT32, &unk);
    free(text);
    free(tokens);
    free(scores);
    free(types);
    return s;
}

/* The hyperparameter keys llama.cpp's converter writes for llama and qwen2. */
static mcl_status put_hparams(mcl_gguf_writer *g, const model_fixture_desc *d)
{
    const char *a = d->arch;
    mcl_status s = mcl_gguf_writer_add(g, "general.architecture", MCL_GGUF_STRING, a);
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_add(g, "general.name", MCL_GGUF_STRING, "motifcl-fixture");
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "vocab_size", (uint32_t)d->vocab);
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "context_length", (uint32_t)d->context);
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "embedding_length", (uint32_t)d->dim);
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "block_count", (uint32_t)d->layers);
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "feed_forward_length", (uint32_t)d->hidden);
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "rope.dimension_count", (uint32_t)d->head_dim);
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "attention.head_count", (uint32_t)d->heads);
    if (s == MCL_SUCCESS)
        s = put_u32(g, a, "attention.head_count_kv", (uint32_t)d->kv_heads);
    if (s == MCL_SUCCESS && d->head_dim != d->dim / d->heads)
        s = put_u32(g, a, "attention.key_length", (uint32_t)d->head_dim);
    if (s == MCL_SUCCESS && d->head_dim != d->dim / d->heads)
        s = put_u32(g, a, "attention.value_length", (uint32_t)d->head_dim);
    if (s == MCL_SUCCESS)
        s = put_f32(g, a, "attention.layer_norm_rms_epsilon", d->norm_eps);
    if (s == MCL_SUCCESS)
        s = put_f32(g, a, "rope.freq_base", d->rope_theta);
    if (s == MCL_SUCCESS && d->experts > 0)
        s = put_u32(g, a, "expert_count", (uint32_t)d->experts);
    if (s == MCL_SUCCESS && d->experts > 0)
        s = put_u32(g, a, "expert_used_count", (uint32_t)d->experts_used);
    if (s == MCL_SUCCESS && strcmp(a, "qwen2moe") == 0)
        s = put_u32(g, a, "expert_feed_forward_length", (uint32_t)d->expert_hidden);
    if (s == MCL_SUCCESS && strcmp(a, "qwen2moe") == 0 && d->shared_hidden > 0)
        s = put_u32(g, a, "expert_shared_feed_forward_length", (uint32_t)d->shared_hidden);
    return s;
}

mcl_status model_fixture_write_gguf(const model_fixture *f, const char *path)
{
    const model_fixture_desc *d = &f->desc;
    mcl_gguf_writer *g = mcl_gguf_writer_create(3, 32);
    if (!g)
        return fixture_fail(MCL_ERROR_OUT_OF_HOST_MEMORY, "gguf writer");
    mcl_status s = put_hparams(g, d);
    if (s == MCL_SUCCESS && !d->no_tokenizer)
        s = put_tokenizer(g, d->vocab, d->chat_tokens);
    for (int i = 0; s == MCL_SUCCESS && i < f->count; i++) {
        const model_fixture_tensor *t = &f->tensors[i];
        int64_t n = t->shape[0], k = t->ndim > 1 ? t->shape[1] : n, rows = t->ndim > 1 ? n : 1;
        float *file = malloc((size_t)(rows * k) * sizeof *file);
        if (!file) {
            s = MCL_ERROR_OUT_OF_HOST_MEMORY;
            break;
        }
        if (t->permute_heads && t->ndim > 1)
            model_fixture_permute(t->source, file, n, k, t->permute_heads);
        else if (t->permute_heads)
            model_fixture_permute(t->source, file, n, 1, t->permute_heads);
        else
            memcpy(file, t->source, (size_t)(rows * k) * sizeof *file);
        uint64_t bytes = 0;
        unsigned char *data = model_fixture_encode(t->gguf_type, file, rows, k, &bytes);
        uint64_t dims[3] = {(uint64_t)k, (uint64_t)n, 1};
        if (t->ndim == 3) { /* [experts, rows, K] reversed */
            dims[1] = (uint64_t)(n / t->experts);
            dims[2] = (uint64_t)t->experts;
        }
        s = data ? mcl_gguf_writer_add_tensor(g, t->name, t->ndim, dims, t->gguf_type, data,
                                              bytes)
                 : MCL_ERROR_INVALID_ARGUMENT;
        free(data);
        free(file);
    }
    void *file = NULL;
    uint64_t size = 0;
    if (s == MCL_SUCCESS)
        s = mcl_gguf_writer_finish(g, &file, &size);
    mcl_gguf_writer_destroy(g);
    if (s != MCL_SUCCESS)
        return fixture_fail(s, path);
    s = write_file(path, file, (size_t)size);
    free(file);
    return s;
}

/* config.json as Hugging Face's transformers writes it for the model. */
static mcl_status write_config(const model_fixture_desc *d, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return fixture_fail(MCL_ERROR_IO, path);
    int qwen = strcmp(d->arch, "qwen2") == 0, qwen_moe = strcmp(d->arch, "qwen2moe") == 0;
    int mixtral = d->experts > 0 && strcmp(d->arch, "llama") == 0;
    const char *dtype = d->hf_type == MCL_GGML_F16    ? "float16"
                        : d->hf_type == MCL_GGML_BF16 ? "bfloat16"
                                                      : "float32";
    fprintf(f, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n",
            qwen       ? "Qwen2ForCausalLM"
            : qwen_moe ? "Qwen2MoeForCausalLM"
            : mixtral  ? "MixtralForCausalLM"
                       : "LlamaForCausalLM",
            qwen_moe ? "qwen2_moe" : mixtral ? "mixtral" : d->arch);
    if (mixtral)
        fprintf(f, "  \"num_local_experts\": %d,\n  \"num_experts_per_tok\": %d,\n",
                d->experts, d->experts_used);
    if (qwen_moe)
        fprintf(f, "  \"num_experts\": %d,\n  \"num_experts_per_tok\": %d,\n"
                   "  \"moe_intermediate_size\": %d,\n"
                   "  \"shared_expert_intermediate_size\": %d,\n  \"norm_topk_prob\": false,\n"
                   "  \"decoder_sparse_step\": 1,\n  \"mlp_only_layers\": [],\n",
                d->experts, d->experts_used, d->expert_hidden, d->shared_hidden);
    fprintf(f, "  \"hidden_size\": %d,\n  \"num_hidden_layers\": %d,\n", d->dim, d->layers);
    fprintf(f, "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n", d->heads,
            d->kv_heads);
    fprintf(f, "  \"head_dim\": %d,\n  \"intermediate_size\": %d,\n  \"vocab_size\": %d,\n",
            d->head_dim, d->hidden, d->vocab);
    fprintf(f, "  \"max_position_embeddings\": %d,\n", d->context);
    fprintf(f, "  \"rms_norm_eps\": %.9g,\n  \"rope_theta\": %.9g,\n", (double)d->norm_eps,
            (double)d->rope_theta);
    if (!qwen && !qwen_moe)
        fprintf(f, "  \"attention_bias\": %s,\n  \"mlp_bias\": false,\n",
                d->qkv_bias ? "true" : "false");
    if (d->rope_factor > 0.0f)
        fprintf(f, "  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": %.9g, "
                   "\"low_freq_factor\": %.9g, \"high_freq_factor\": %.9g, "
                   "\"original_max_position_embeddings\": %d},\n",
                (double)d->rope_factor, (double)d->rope_low_freq_factor,
                (double)d->rope_high_freq_factor, d->rope_original_context);
    else
        fprintf(f, "  \"rope_scaling\": null,\n");
    fprintf(f, "  \"tie_word_embeddings\": %s,\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n"
               "  \"torch_dtype\": \"%s\"\n}\n",
            d->tied ? "true" : "false", dtype);
    return fclose(f) == 0 ? MCL_SUCCESS : fixture_fail(MCL_ERROR_IO, path);
}

mcl_status model_fixture_write_checkpoint(const model_fixture *f, const char *dir)
{
    const model_fixture_desc *d = &f->desc;
    mcl_st_dtype dtype = d->hf_type == MCL_GGML_F16    ? MCL_ST_F16
                         : d->hf_type == MCL_GGML_BF16 ? MCL_ST_BF16
                                                       : MCL_ST_F32;
    mcl_safetensors_writer *w = mcl_safetensors_writer_create();
    if (!w)
        return fixture_fail(MCL_ERROR_OUT_OF_HOST_MEMORY, "safetensors writer");
    mcl_status s = mcl_safetensors_writer_add_metadata(w, "format", "pt");
    for (int i = 0; s == MCL_SUCCESS && i < f->count; i++) {
        const model_fixture_tensor *t = &f->tensors[i];
        char name[96];
        if (!t->hf)
            continue; /* rope_freqs.weight: config.json's rope_scaling gives it */
        if (!model_fixture_hf_name_of(d->arch, t->name, name, sizeof name)) {
            s = MCL_ERROR_INVALID_ARGUMENT;
            break;
        }
        int64_t n = t->shape[0], k = t->ndim > 1 ? t->shape[1] : n, rows = t->ndim > 1 ? n : 1;
        if (t->ndim == 3) {
            /* An expert stack: each expert its own tensor, as the checkpoints hold them. */
            int64_t per = n / t->experts, shape[2] = {per, k};
            for (int64_t e = 0; s == MCL_SUCCESS && e < t->experts; e++) {
                char expert[128];
                snprintf(expert, sizeof expert, name, (int)e);
                uint64_t bytes = 0;
                unsigned char *data = model_fixture_encode(d->hf_type, t->source + e * per * k,
                                                           per, k, &bytes);
                s = data ? mcl_safetensors_writer_add_tensor(w, expert, dtype, 2, shape, data,
                                                             bytes)
                         : MCL_ERROR_OUT_OF_HOST_MEMORY;
                free(data);
            }
            continue;
        }
        /* qwen2moe's shared expert gate is a [1, dim] matrix in the checkpoint. */
        int row_matrix = strstr(t->name, "ffn_gate_inp_shexp") != NULL;
        int64_t shape[2] = {row_matrix ? 1 : t->shape[0], row_matrix ? n : t->shape[1]};
        uint64_t bytes = 0;
        unsigned char *data = model_fixture_encode(d->hf_type, t->source, rows, k, &bytes);
        s = data ? mcl_safetensors_writer_add_tensor(w, name, dtype, row_matrix ? 2 : t->ndim,
                                                     shape, data, bytes)
                 : MCL_ERROR_OUT_OF_HOST_MEMORY;
        free(data);
    }
    void *file = NULL;
    uint64_t size = 0;
    if (s == MCL_SUCCESS)
        s = mcl_safetensors_writer_finish(w, &file, &size);
    mcl_safetensors_writer_destroy(w);
    if (s != MCL_SUCCESS)
        return fixture_fail(s, dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    s = write_file(path, file, (size_t)size);
    free(file);
    snprintf(path, sizeof path, "%s/config.json", dir);
    return s == MCL_SUCCESS ? write_config(d, path) : s;
}
