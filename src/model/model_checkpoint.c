/* Hugging Face checkpoints: config.json into the model's architecture and hyperparameters, the
 * safetensors shards mapped and parsed, their tensors under GGUF's names (Hugging Face's row
 * order is the loader's, so nothing is permuted), llama 3.1's RoPE frequency factors computed
 * from rope_scaling as llama.cpp's converter computes them. The tokenizer files are read by
 * model_checkpoint_tokenizer.c. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_internal.h"
#include "../core/text.h"
#include "../io/config.h"
#include "../io/json.h"
#include "../io/safetensors.h"
#include "../io/safetensors_index.h"
#include "core/alloc.h"

/* What a checkpoint keeps besides the mapped files. */
typedef struct checkpoint {
    mcl_json *config;
    mcl_safetensors **shards;
    uint32_t shard_count;
    float *rope_freqs;      /* computed llama 3 factors (a tensor's data), or NULL */
    int tied;               /* tie_word_embeddings */
} checkpoint;

/* pi, to double precision (math.h's M_PI is not C11's). */
#define PI 3.14159265358979323846

int mcl_model_checkpoint_path(const char *path)
{
    struct stat st;
    if (mcl_model_ends_with(path, ".safetensors") || mcl_model_ends_with(path, ".json"))
        return 1;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Hugging Face's names of a layer's tensors and GGUF's. */
static const struct {
    const char *hf, *gguf;
} layer_names[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

/* A mixture's: Mixtral's (block_sparse_moe) and Qwen2-MoE's (mlp) router and shared expert;
 * their experts come in expert_names. */
static const struct {
    const char *hf, *gguf;
} moe_names[] = {
    {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
};

/* An expert's tensor: the prefix and suffix around its index, and the stack it goes to
 * (0 gate, 1 up, 2 down). */
static const struct {
    const char *prefix, *suffix;
    int stack;
} expert_names[] = {
    {"block_sparse_moe.experts.", ".w1.weight", 0},
    {"block_sparse_moe.experts.", ".w3.weight", 1},
    {"block_sparse_moe.experts.", ".w2.weight", 2},
    {"mlp.experts.", ".gate_proj.weight", 0},
    {"mlp.experts.", ".up_proj.weight", 1},
    {"mlp.experts.", ".down_proj.weight", 2},
};
static const char *const stack_names[3] = {"ffn_gate_exps.weight", "ffn_up_exps.weight",
                                           "ffn_down_exps.weight"};

static const struct {
    const char *hf, *gguf;
} model_names[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

/* GGUF's name of a checkpoint tensor into out (size bytes): 1, or 0 for a name a model of
 * these architectures does not have; -1 for one to leave out (the rotary embedding's cached
 * frequencies, which the configuration gives). */
static int gguf_name(const char *hf, char *out, size_t size)
{
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0]; i++) {
        if (strcmp(hf, model_names[i].hf) == 0) {
            snprintf(out, size, "%s", model_names[i].gguf);
            return 1;
        }
    }
    if (mcl_model_ends_with(hf, "rotary_emb.inv_freq"))
        return -1;
    unsigned layer = 0;
    int used = 0;
    if (sscanf(hf, "model.layers.%u.%n", &layer, &used) != 1 || used == 0)
        return 0;
    for (size_t i = 0; i < sizeof layer_names / sizeof layer_names[0]; i++) {
        if (strcmp(hf + used, layer_names[i].hf) == 0) {
            snprintf(out, size, "blk.%u.%s", layer, layer_names[i].gguf);
            return 1;
        }
    }
    for (size_t i = 0; i < sizeof moe_names / sizeof moe_names[0]; i++) {
        if (strcmp(hf + used, moe_names[i].hf) == 0) {
            snprintf(out, size, "blk.%u.%s", layer, moe_names[i].gguf);
            return 1;
        }
    }
    return 0;
}

/* Whether hf is an expert's tensor: its layer, expert and stack (0 gate, 1 up, 2 down). */
static int expert_tensor(const char *hf, unsigned *layer, unsigned *expert, int *stack)
{
    int used = 0;
    if (sscanf(hf, "model.layers.%u.%n", layer, &used) != 1 || used == 0)
        return 0;
    const char *rest = hf + used;
    for (size_t i = 0; i < sizeof expert_names / sizeof expert_names[0]; i++) {
        size_t n = strlen(expert_names[i].prefix);
        if (strncmp(rest, expert_names[i].prefix, n) != 0 ||
            !isdigit((unsigned char)rest[n]))
            continue;
        char *end = NULL;
        unsigned long e = strtoul(rest + n, &end, 10);
        if (end && strcmp(end, expert_names[i].suffix) == 0 && e < 100000) {
            *expert = (unsigned)e;
            *stack = expert_names[i].stack;
            return 1;
        }
    }
    return 0;
}

/* The folder of a path ("." for a bare name). */
static void folder_of(const char *path, char *out, size_t size)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(out, size, "%s", path);
        return;
    }
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, size, ".");
    else
        snprintf(out, size, "%.*s", (int)(slash - path), path);
}

/* A config.json member into a bounded hyperparameter. */
static mcl_status config_u32(mcl_model *m, const mcl_json_value *cfg, const char *key,
                             int64_t def, uint32_t *out)
{
    char why[256];
    int64_t v = 0;
    mcl_status status = mcl_config_int(cfg, key, def, &v, why, sizeof why);
    if (status != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: config.json: %s", why);
    if (v <= 0 || v > UINT32_MAX)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: config.json: \"%s\" is %lld, not a positive 32-bit count",
                          key, (long long)v);
    *out = (uint32_t)v;
    return MCL_SUCCESS;
}

static mcl_status config_float(mcl_model *m, const mcl_json_value *cfg, const char *key,
                               double def, float *out)
{
    char why[256];
    double v = def;
    if (mcl_config_float(cfg, key, def, &v, why, sizeof why) != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: config.json: %s", why);
    if (!isfinite(v) || v <= 0)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: config.json: \"%s\" is %g, not a positive number", key, v);
    *out = (float)v;
    return MCL_SUCCESS;
}

/* Llama 3.1's per-pair RoPE divisors (llama.cpp's converter: 1 for wavelengths below the high
 * frequency bound, `factor` above the low one, interpolated between), in double precision. */
static void llama3_factors(const mcl_model_info *in, float *out)
{
    double low_wavelen = in->rope_original_context / (double)in->rope_low_freq_factor;
    double high_wavelen = in->rope_original_context / (double)in->rope_high_freq_factor;
    for (uint32_t i = 0; i < in->head_dim / 2; i++) {
        double freq = 1.0 / pow((double)in->rope_theta, 2.0 * i / in->head_dim);
        double wavelen = 2.0 * PI / freq;
        double f;
        if (wavelen < high_wavelen) {
            f = 1.0;
        } else if (wavelen > low_wavelen) {
            f = in->rope_factor;
        } else {
            double smooth = (in->rope_original_context / wavelen - in->rope_low_freq_factor) /
                            (in->rope_high_freq_factor - in->rope_low_freq_factor);
            f = 1.0 / ((1.0 - smooth) / in->rope_factor + smooth);
        }
        out[i] = (float)f;
    }
}

/* config.json into m->info. */
/* A mixture's config.json members: Mixtral's num_local_experts (its experts as wide as
 * intermediate_size, their weights renormalised), Qwen2-MoE's num_experts,
 * moe_intermediate_size, shared_expert_intermediate_size and norm_topk_prob (every layer a
 * mixture: decoder_sparse_step 1, no mlp_only_layers). */
static mcl_status read_experts_config(mcl_model *m, const mcl_json_value *cfg, int moe)
{
    mcl_model_info *in = &m->info;
    char why[256];
    mcl_status status;
    if ((status = config_u32(m, cfg, moe == 1 ? "num_local_experts" : "num_experts", 0,
                             &in->experts)) != MCL_SUCCESS ||
        (status = config_u32(m, cfg, "num_experts_per_tok", 0, &in->experts_used)) !=
            MCL_SUCCESS)
        return status;
    in->expert_hidden = in->hidden;
    in->experts_norm = 1;
    if (moe == 2) {
        int64_t shared = 0, step = 1, only[4];
        uint32_t only_count = 0;
        int norm = 0;
        if ((status = config_u32(m, cfg, "moe_intermediate_size", 0, &in->expert_hidden)) !=
                MCL_SUCCESS)
            return status;
        if (mcl_config_int(cfg, "shared_expert_intermediate_size", 0, &shared, why,
                           sizeof why) != MCL_SUCCESS ||
            mcl_config_int(cfg, "decoder_sparse_step", 1, &step, why, sizeof why) !=
                MCL_SUCCESS ||
            mcl_config_bool(cfg, "norm_topk_prob", 0, &norm, why, sizeof why) != MCL_SUCCESS ||
            mcl_config_int_list(cfg, "mlp_only_layers", only, 4, &only_count, why,
                                sizeof why) != MCL_SUCCESS)
            return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: config.json: %s", why);
        if (shared < 0 || shared > UINT32_MAX)
            return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                              "model: config.json: shared_expert_intermediate_size is %lld",
                              (long long)shared);
        if (step != 1 || only_count != 0)
            return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                              "model: config.json: dense layers among the mixtures "
                              "(decoder_sparse_step %lld, %u mlp_only_layers) are not read",
                              (long long)step, only_count);
        in->shared_hidden = (uint32_t)shared;
        in->experts_norm = (uint32_t)norm;
    }
    if (in->experts > 256 || in->experts_used > in->experts || in->experts_used > 16)
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: %u experts with %u per token (the library routes up to 256 "
                          "experts, 16 per token)", in->experts, in->experts_used);
    return MCL_SUCCESS;
}

static mcl_status read_config(mcl_model *m, checkpoint *c)
{
    mcl_model_info *in = &m->info;
    const mcl_json_value *cfg = mcl_json_root(c->config);
    char why[256];
    const char *type = NULL;
    if (mcl_json_kind_of(cfg) != MCL_JSON_OBJECT ||
        mcl_config_string(cfg, "model_type", NULL, &type, why, sizeof why) != MCL_SUCCESS ||
        !type)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: config.json is not an object with a \"model_type\"");
    /* Mixtures: transformers' names of the architectures GGUF calls llama (with experts) and
     * qwen2moe. */
    int moe = strcmp(type, "mixtral") == 0 ? 1 : strcmp(type, "qwen2_moe") == 0 ? 2 : 0;
    const char *arch = moe == 1 ? "llama" : moe == 2 ? "qwen2moe" : type;
    int known = 0;
    for (uint32_t i = 0; mcl_model_architecture_name(i); i++)
        known |= strcmp(arch, mcl_model_architecture_name(i)) == 0;
    if (!known || strlen(arch) >= sizeof in->architecture)
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: architecture \"%.64s\" is not read (the library reads llama, "
                          "mistral, qwen2, mixtral, qwen2_moe)", type);
    snprintf(in->architecture, sizeof in->architecture, "%s", arch);
    const char *name = NULL;
    if (mcl_config_string(cfg, "_name_or_path", "", &name, why, sizeof why) == MCL_SUCCESS &&
        name)
        snprintf(in->name, sizeof in->name, "%s", name);
    mcl_status status;
    if ((status = config_u32(m, cfg, "hidden_size", 0, &in->dim)) != MCL_SUCCESS ||
        (status = config_u32(m, cfg, "num_hidden_layers", 0, &in->layers)) != MCL_SUCCESS ||
        (status = config_u32(m, cfg, "num_attention_heads", 0, &in->heads)) != MCL_SUCCESS ||
        (status = config_u32(m, cfg, "intermediate_size", 0, &in->hidden)) != MCL_SUCCESS ||
        (status = config_u32(m, cfg, "vocab_size", 0, &in->vocab)) != MCL_SUCCESS ||
        (status = config_u32(m, cfg, "max_position_embeddings", 2048, &in->context_length)) !=
            MCL_SUCCESS ||
        (status = config_u32(m, cfg, "num_key_value_heads", in->heads, &in->kv_heads)) !=
            MCL_SUCCESS ||
        (status = config_float(m, cfg, "rms_norm_eps", 1e-6, &in->norm_eps)) != MCL_SUCCESS ||
        (status = config_float(m, cfg, "rope_theta", 10000.0, &in->rope_theta)) != MCL_SUCCESS)
        return status;
    if (in->dim % in->heads != 0 || in->heads % in->kv_heads != 0 ||
        (in->dim / in->heads) % 2 != 0)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: config.json: %u heads (%u key/value heads) do not divide the "
                          "width %u into even heads", in->heads, in->kv_heads, in->dim);
    in->head_dim = in->dim / in->heads;
    uint32_t head_dim = in->head_dim;
    if ((status = config_u32(m, cfg, "head_dim", in->head_dim, &head_dim)) != MCL_SUCCESS)
        return status;
    if (head_dim != in->head_dim)
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: config.json: head_dim %u differs from the width per head %u",
                          head_dim, in->head_dim);
    int tied = 0;
    if (mcl_config_bool(cfg, "tie_word_embeddings", 0, &tied, why, sizeof why) != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: config.json: %s", why);
    int64_t ids[8];
    uint32_t n = 0;
    if (mcl_config_int_list(cfg, "bos_token_id", ids, 8, &n, why, sizeof why) == MCL_SUCCESS &&
        n)
        in->bos = (int32_t)ids[0];
    if (mcl_config_int_list(cfg, "eos_token_id", ids, 8, &n, why, sizeof why) == MCL_SUCCESS &&
        n)
        in->eos = (int32_t)ids[0];
    mcl_rope_scaling rs;
    if (mcl_config_rope_scaling(cfg, &rs, why, sizeof why) != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: config.json: %s", why);
    if (rs.type && strcmp(rs.type, "llama3") != 0 && strcmp(rs.type, "default") != 0)
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: RoPE scaling \"%.32s\" is not read (llama 3's is)", rs.type);
    if (rs.type && strcmp(rs.type, "llama3") == 0) {
        if (!(rs.factor > 0) || !(rs.low_freq_factor > 0) ||
            !(rs.high_freq_factor > rs.low_freq_factor) ||
            rs.original_max_position_embeddings <= 0)
            return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                              "model: config.json: rope_scaling's llama3 factors are not "
                              "positive with high_freq_factor above low_freq_factor");
        in->rope_scaling = MCL_ROPE_SCALING_LLAMA3;
        in->rope_factor = (float)rs.factor;
        in->rope_low_freq_factor = (float)rs.low_freq_factor;
        in->rope_high_freq_factor = (float)rs.high_freq_factor;
        in->rope_original_context = (uint32_t)rs.original_max_position_embeddings;
    }
    in->qkv_bias = strcmp(type, "qwen2") == 0 || moe == 2;
    c->tied = tied;
    return moe ? read_experts_config(m, cfg, moe) : MCL_SUCCESS;
}

/* An expert's tensor found in a shard, until its stack is made. */
typedef struct expert_part {
    unsigned layer, expert;
    int stack;
    const mcl_st_tensor *st;
    uint32_t type;
} expert_part;

/* The ggml type of a checkpoint dtype read, or UINT32_MAX. */
static uint32_t ggml_type_of(mcl_st_dtype dtype)
{
    return dtype == MCL_ST_F32    ? MCL_GGML_F32
           : dtype == MCL_ST_F16  ? MCL_GGML_F16
           : dtype == MCL_ST_BF16 ? MCL_GGML_BF16
                                  : UINT32_MAX;
}

/* The mixture's expert tensors, each a separate tensor of the checkpoint, as GGUF's stacks
 * [experts, rows, K]: every expert present once, all of one shape and type. */
static mcl_status make_stacks(mcl_model *m, expert_part *parts, uint32_t count)
{
    const uint32_t experts = m->info.experts;
    if (count && !experts)
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: tensor \"%.80s\" is an expert's, and config.json names no "
                          "experts", parts[0].st->name);
    for (uint32_t i = 0; i < count; i++) {
        if (!parts[i].st)
            continue; /* taken into an earlier stack */
        unsigned layer = parts[i].layer;
        int stack = parts[i].stack;
        char name[96];
        snprintf(name, sizeof name, "blk.%u.%s", layer, stack_names[stack]);
        const unsigned char **data = mcl_mem_calloc(experts, sizeof *data);
        if (!data)
            return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        const mcl_st_tensor *first = parts[i].st;
        uint32_t type = parts[i].type, found = 0;
        mcl_status status = MCL_SUCCESS;
        for (uint32_t j = i; j < count && status == MCL_SUCCESS; j++) {
            const mcl_st_tensor *st = parts[j].st;
            if (!st || parts[j].layer != layer || parts[j].stack != stack)
                continue;
            if (parts[j].expert >= experts || data[parts[j].expert])
                status = MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                                    "model: tensor \"%.80s\": expert %u twice or beyond the "
                                    "%u of config.json", st->name, parts[j].expert, experts);
            else if (st->ndim != 2 || first->ndim != 2 || st->shape[0] != first->shape[0] ||
                     st->shape[1] != first->shape[1] || parts[j].type != type)
                status = MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                                    "model: tensor \"%.80s\" differs in shape or type from "
                                    "its layer's other experts", st->name);
            else {
                data[parts[j].expert] = st->data;
                found++;
                parts[j].st = NULL;
            }
        }
        if (status == MCL_SUCCESS && found != experts)
            status = MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                                "model: %s: %u of the %u experts are in the checkpoint", name,
                                found, experts);
        model_tensor *t = NULL;
        if (status == MCL_SUCCESS && mcl_model_tensor_named(m, name))
            status = MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE, "model: %s twice", name);
        if (status == MCL_SUCCESS)
            status = mcl_model_add_tensor(m, name, strlen(name), &t);
        if (status != MCL_SUCCESS) {
            mcl_mem_free(data);
            return status;
        }
        t->file_type = type;
        t->ndim = 3;
        t->shape[0] = experts;
        t->shape[1] = first->shape[0];
        t->shape[2] = first->shape[1];
        t->part_data = data;
        t->parts = experts;
        t->part_rows = (uint64_t)first->shape[0];
        t->bytes = (first->end - first->begin) * (uint64_t)experts;
    }
    return MCL_SUCCESS;
}

/* Map and parse every shard, and take their tensors (a mixture's experts into parts). */
static mcl_status read_shard_tensors(mcl_model *m, checkpoint *c, const mcl_st_shards *list,
                                     expert_part **parts, uint32_t *part_count,
                                     uint32_t *part_capacity)
{
    char why[256];
    m->files = mcl_mem_calloc(list->count ? list->count : 1, sizeof *m->files);
    c->shards = mcl_mem_calloc(list->count ? list->count : 1, sizeof *c->shards);
    if (!m->files || !c->shards)
        return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t s = 0; s < list->count; s++) {
        mcl_status status = mcl_mapped_open(list->paths[s], &m->files[s], why, sizeof why);
        if (status != MCL_SUCCESS)
            return MODEL_FAIL(m->ctx, status, "model: %s", why);
        m->file_count = s + 1;
        m->info.file_bytes += m->files[s].size;
        status = mcl_safetensors_parse(m->files[s].data, m->files[s].size, &c->shards[s], why,
                                       sizeof why);
        if (status != MCL_SUCCESS)
            return MODEL_FAIL(m->ctx, status == MCL_ERROR_OUT_OF_HOST_MEMORY ? status
                                                                             : MCL_ERROR_BAD_FILE,
                              "model: %s: %s", list->paths[s], why);
        c->shard_count = s + 1;
        for (uint64_t i = 0; i < mcl_safetensors_count(c->shards[s]); i++) {
            const mcl_st_tensor *st = mcl_safetensors_at(c->shards[s], i);
            char name[96];
            unsigned layer = 0, expert = 0;
            int stack = 0;
            if (expert_tensor(st->name, &layer, &expert, &stack)) {
                if (*part_count == *part_capacity) {
                    uint32_t grown_to = *part_capacity ? 2 * *part_capacity : 64;
                    expert_part *grown = mcl_mem_realloc(*parts, grown_to * sizeof *grown);
                    if (!grown)
                        return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY,
                                          "out of host memory");
                    *parts = grown;
                    *part_capacity = grown_to;
                }
                uint32_t type = ggml_type_of(st->dtype);
                if (type == UINT32_MAX)
                    return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                                      "model: tensor \"%.80s\" is %s, which the library does "
                                      "not read (it reads F32, F16 and BF16)", st->name,
                                      mcl_st_dtype_name(st->dtype));
                (*parts)[(*part_count)++] = (expert_part){layer, expert, stack, st, type};
                continue;
            }
            int known = gguf_name(st->name, name, sizeof name);
            if (known < 0)
                continue;
            if (known == 0)
                return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                                  "model: tensor \"%.80s\" is not one a %s model has",
                                  st->name, m->info.architecture);
            if (mcl_model_tensor_named(m, name))
                return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                                  "model: tensor \"%.80s\" appears in two shards", st->name);
            uint32_t type = ggml_type_of(st->dtype);
            if (type == UINT32_MAX)
                return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                                  "model: tensor \"%.80s\" is %s, which the library does not "
                                  "read (it reads F32, F16 and BF16)", st->name,
                                  mcl_st_dtype_name(st->dtype));
            if (st->ndim < 1 || st->ndim > 2)
                return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                                  "model: tensor \"%.80s\" has %u dimensions", st->name,
                                  st->ndim);
            model_tensor *t;
            status = mcl_model_add_tensor(m, name, strlen(name), &t);
            if (status != MCL_SUCCESS)
                return status;
            t->file_type = type;
            t->ndim = st->ndim;
            for (uint32_t d = 0; d < st->ndim; d++)
                t->shape[d] = st->shape[d];
            /* Qwen2-MoE's shared expert gate is a [1, dim] matrix; GGUF's a vector. */
            if (mcl_model_ends_with(name, ".ffn_gate_inp_shexp.weight") && st->ndim == 2 &&
                st->shape[0] == 1) {
                t->ndim = 1;
                t->shape[0] = st->shape[1];
            }
            t->data = st->data;
            t->bytes = st->end - st->begin;
        }
    }
    return MCL_SUCCESS;
}

/* Map and parse every shard, and take their tensors. */
static mcl_status read_shards(mcl_model *m, checkpoint *c, const mcl_st_shards *list)
{
    expert_part *parts = NULL;
    uint32_t part_count = 0, part_capacity = 0;
    mcl_status status = read_shard_tensors(m, c, list, &parts, &part_count, &part_capacity);
    if (status == MCL_SUCCESS)
        status = make_stacks(m, parts, part_count);
    mcl_mem_free(parts);
    return status;
}

mcl_status mcl_model_open_checkpoint(mcl_model *m, const char *path)
{
    char why[512], folder[4096], config_path[4200];
    checkpoint *c = mcl_mem_calloc(1, sizeof *c);
    if (!c)
        return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    m->checkpoint = c;
    snprintf(m->info.format, sizeof m->info.format, "safetensors");
    folder_of(path, folder, sizeof folder);
    snprintf(config_path, sizeof config_path, "%s/config.json", folder);
    mcl_mapped config = {0};
    mcl_status status = mcl_mapped_open(config_path, &config, why, sizeof why);
    if (status != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, status, "model: a checkpoint needs its config.json: %s", why);
    status = mcl_json_parse(config.data, config.size, &c->config, why, sizeof why);
    mcl_mapped_close(&config);
    if (status != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, status == MCL_ERROR_OUT_OF_HOST_MEMORY ? status
                                                                         : MCL_ERROR_BAD_FILE,
                          "model: %s: %s", config_path, why);
    if ((status = read_config(m, c)) != MCL_SUCCESS ||
        (status = mcl_model_checkpoint_tokenizer(m, folder)) != MCL_SUCCESS)
        return status;
    mcl_st_shards list = {0};
    status = mcl_st_shards_list(path, &list, why, sizeof why);
    if (status != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, status == MCL_ERROR_OUT_OF_HOST_MEMORY ? status
                                                                         : MCL_ERROR_IO,
                          "model: %s", why);
    status = read_shards(m, c, &list);
    mcl_st_shards_free(&list);
    if (status != MCL_SUCCESS)
        return status;
    if (!c->tied && !mcl_model_tensor_named(m, "output.weight"))
        return MODEL_FAIL(m->ctx, MCL_ERROR_BAD_FILE,
                          "model: config.json says the head is not tied to the embedding, and "
                          "the checkpoint has no lm_head.weight");
    if (m->info.rope_scaling == MCL_ROPE_SCALING_LLAMA3) {
        c->rope_freqs = mcl_mem_malloc(m->info.head_dim / 2 * sizeof *c->rope_freqs);
        model_tensor *t;
        if (!c->rope_freqs)
            return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        llama3_factors(&m->info, c->rope_freqs);
        status = mcl_model_add_tensor(m, "rope_freqs.weight", 17, &t);
        if (status != MCL_SUCCESS)
            return status;
        t->file_type = MCL_GGML_F32;
        t->ndim = 1;
        t->shape[0] = m->info.head_dim / 2;
        t->data = (const unsigned char *)c->rope_freqs;
        t->bytes = m->info.head_dim / 2 * sizeof(float);
    }
    return MCL_SUCCESS;
}

void mcl_model_free_checkpoint(mcl_model *m)
{
    checkpoint *c = m->checkpoint;
    if (!c)
        return;
    for (uint32_t s = 0; s < c->shard_count; s++)
        mcl_safetensors_free(c->shards[s]);
    mcl_mem_free(c->shards);
    mcl_json_free(c->config);
    mcl_mem_free(c->rope_freqs);
    mcl_mem_free(c);
    m->checkpoint = NULL;
}

/* A JSON value written back as JSON (depth at most the parser's). */
static void put_json(mcl_text *out, const mcl_json_value *v)
{
    double d;
    int64_t i;
    int b;
    size_t len;
    const char *s;
    switch (mcl_json_kind_of(v)) {
    case MCL_JSON_BOOL:
        mcl_json_bool(v, &b);
        mcl_text_put(out, "%s", b ? "true" : "false");
        break;
    case MCL_JSON_NUMBER:
        if (mcl_json_int(v, &i))
            mcl_text_put(out, "%lld", (long long)i);
        else if (mcl_json_number(v, &d))
            mcl_text_put(out, "%.17g", d);
        break;
    case MCL_JSON_STRING:
        s = mcl_json_string(v, &len);
        mcl_text_put(out, "%.*s", (int)(len < 1u << 30 ? len : 1u << 30), s);
        break;
    case MCL_JSON_ARRAY:
    case MCL_JSON_OBJECT: {
        int object = mcl_json_kind_of(v) == MCL_JSON_OBJECT;
        mcl_text_put(out, "%s", object ? "{" : "[");
        for (uint32_t k = 0; k < mcl_json_count(v); k++) {
            const mcl_json_value *e = mcl_json_at(v, k);
            if (k)
                mcl_text_put(out, ", ");
            if (object)
                mcl_text_put(out, "%s: ", mcl_json_key(e, NULL));
            put_json(out, e);
        }
        mcl_text_put(out, "%s", object ? "}" : "]");
        break;
    }
    default:
        mcl_text_put(out, "null");
        break;
    }
}

mcl_status mcl_model_checkpoint_metadata(const mcl_model *m, const char *key,
                                         struct mcl_text *out)
{
    const checkpoint *c = m->checkpoint;
    const mcl_json_value *v = c ? mcl_json_find(mcl_json_root(c->config), key) : NULL;
    if (!v)
        return mcl_fail(m->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_model_metadata: the configuration has no key \"%s\"", key);
    put_json(out, v);
    return MCL_SUCCESS;
}
