/* libFuzzer harness of a Hugging Face checkpoint's files: each input is parsed as a
 * .safetensors file (mcl_safetensors_parse), as a model.safetensors.index.json
 * (mcl_st_index_parse) and as a config.json (mcl_json_parse, then every mcl_config_* read the
 * loader makes), from the fuzzer's own buffer of exactly its size; what a successful parse
 * hands out (every tensor's shape and bytes, converted to f32 where the dtype allows; every
 * name, shard and metadata value) is read, so that AddressSanitizer sees any read past the
 * input. Built only with clang and MOTIFCL_FUZZ=ON (tests/fuzz/README.md). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/config.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "io/safetensors_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where the reads go, so that they are not optimised away. */
static volatile uint64_t sink;

static void read_string(const char *s)
{
    if (s && s[0])
        sink += (unsigned char)s[0];
}

static void safetensors(const uint8_t *data, size_t size)
{
    mcl_safetensors *st = NULL;
    char why[256];
    if (mcl_safetensors_parse(data, size, &st, why, sizeof why) != MCL_SUCCESS)
        return;
    for (uint64_t i = 0; i < mcl_safetensors_count(st); i++) {
        const mcl_st_tensor *t = mcl_safetensors_at(st, i);
        read_string(t->name);
        sink += mcl_safetensors_find(st, t->name) != NULL;
        for (uint32_t d = 0; d < t->ndim; d++)
            sink += (uint64_t)t->shape[d];
        for (uint64_t b = 0; t->data && b < t->end - t->begin; b += 64)
            sink += t->data[b];
        if (t->elements <= 4096 && mcl_st_dtype_loadable(t->dtype)) {
            float *f = malloc((size_t)(t->elements ? t->elements : 1) * sizeof *f);
            if (f && mcl_safetensors_read_f32(t, f, t->elements, why, sizeof why) ==
                         MCL_SUCCESS &&
                t->elements)
                sink += (uint64_t)(f[0] == f[0]);
            free(f);
        }
    }
    for (uint64_t i = 0; i < mcl_safetensors_metadata_count(st); i++) {
        const char *key = NULL, *value = NULL;
        if (mcl_safetensors_metadata_at(st, i, &key, &value)) {
            read_string(key);
            read_string(value);
            read_string(mcl_safetensors_metadata(st, key));
        }
    }
    mcl_safetensors_free(st);
}

static void index_file(const uint8_t *data, size_t size)
{
    mcl_st_index *idx = NULL;
    char why[256];
    if (mcl_st_index_parse(data, size, &idx, why, sizeof why) != MCL_SUCCESS)
        return;
    for (uint32_t i = 0; i < mcl_st_index_tensor_count(idx); i++) {
        const char *name = NULL, *shard = NULL;
        if (mcl_st_index_tensor_at(idx, i, &name, &shard)) {
            read_string(name);
            read_string(shard);
            read_string(mcl_st_index_shard_of(idx, name));
        }
    }
    for (uint32_t i = 0; i < mcl_st_index_shard_count(idx); i++)
        read_string(mcl_st_index_shard_at(idx, i));
    sink += mcl_json_count(mcl_st_index_metadata(idx));
    mcl_st_index_free(idx);
}

static void config(const uint8_t *data, size_t size)
{
    mcl_json *doc = NULL;
    char why[256];
    if (mcl_json_parse(data, size, &doc, why, sizeof why) != MCL_SUCCESS)
        return;
    const mcl_json_value *root = mcl_json_root(doc);
    static const char *const ints[] = {"hidden_size", "num_hidden_layers", "num_attention_heads",
                                       "num_key_value_heads", "intermediate_size",
                                       "vocab_size", "max_position_embeddings", "head_dim"};
    int64_t v, list[8];
    double f;
    int b;
    uint32_t count;
    const char *s;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        sink += (uint64_t)(mcl_config_int(root, ints[i], 0, &v, why, sizeof why) == MCL_SUCCESS);
    sink += mcl_config_float(root, "rms_norm_eps", 1e-6, &f, why, sizeof why) == MCL_SUCCESS;
    sink += mcl_config_float(root, "rope_theta", 1e4, &f, why, sizeof why) == MCL_SUCCESS;
    sink += mcl_config_bool(root, "tie_word_embeddings", 0, &b, why, sizeof why) == MCL_SUCCESS;
    sink += mcl_config_string(root, "model_type", NULL, &s, why, sizeof why) == MCL_SUCCESS;
    sink += mcl_config_string_at(root, "architectures", 0, NULL, &s, why, sizeof why) ==
            MCL_SUCCESS;
    sink += mcl_config_int_list(root, "eos_token_id", list, 8, &count, why, sizeof why) ==
            MCL_SUCCESS;
    mcl_rope_scaling rs;
    sink += mcl_config_rope_scaling(root, &rs, why, sizeof why) == MCL_SUCCESS;
    mcl_json_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    safetensors(data, size);
    index_file(data, size);
    config(data, size);
    return 0;
}
