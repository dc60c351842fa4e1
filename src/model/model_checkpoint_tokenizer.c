/* The tokenizer of a Hugging Face checkpoint: tokenizer.json where the folder has one, else
 * the SentencePiece tokenizer.model; a tokenizer.json refused as unsupported gives way to a
 * tokenizer.model beside it that numbers as many tokens (Llama 2 and Mistral folders carry
 * their SentencePiece model both ways, the JSON form as byte_fallback BPE). BOS and EOS ids
 * of config.json, and add_bos_token / add_eos_token of tokenizer_config.json, override what
 * the tokenizer files say. A tokenizer file that is present but cannot be read fails the
 * open. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "model_internal.h"
#include "../io/config.h"
#include "../io/json.h"

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A tokenizer file read: json 1 for tokenizer.json, 0 for tokenizer.model. When count_only,
 * *count receives the ids tokenizer.json numbers and no tokenizer is made. */
static mcl_status read_file(const char *path, int json, int count_only, mcl_tokenizer **out,
                            uint32_t *count, char *why, size_t why_size)
{
    mcl_mapped file = {0};
    mcl_status s = mcl_mapped_open(path, &file, why, why_size);
    if (s != MCL_SUCCESS)
        return s;
    if (count_only)
        s = mcl_tokenizer_hf_json_count((const char *)file.data, (size_t)file.size, count, why,
                                        why_size);
    else if (json)
        s = mcl_tokenizer_from_hf_json((const char *)file.data, (size_t)file.size, out, why,
                                       why_size);
    else
        s = mcl_tokenizer_from_spm_model(file.data, (size_t)file.size, out, why, why_size);
    mcl_mapped_close(&file);
    return s;
}

/* tokenizer_config.json's add_bos_token and add_eos_token (-1 where absent or null). */
static mcl_status read_tokenizer_config(mcl_model *m, const char *path, int flags[2])
{
    char why[256];
    mcl_mapped file = {0};
    mcl_json *doc = NULL;
    flags[0] = flags[1] = -1;
    if (!exists(path))
        return MCL_SUCCESS;
    mcl_status s = mcl_mapped_open(path, &file, why, sizeof why);
    if (s == MCL_SUCCESS)
        s = mcl_json_parse(file.data, file.size, &doc, why, sizeof why);
    mcl_mapped_close(&file);
    const mcl_json_value *root = mcl_json_root(doc);
    if (s == MCL_SUCCESS && mcl_json_kind_of(root) != MCL_JSON_OBJECT) {
        snprintf(why, sizeof why, "not an object");
        s = MCL_ERROR_INVALID_ARGUMENT;
    }
    if (s == MCL_SUCCESS)
        s = mcl_config_bool(root, "add_bos_token", -1, &flags[0], why, sizeof why);
    if (s == MCL_SUCCESS)
        s = mcl_config_bool(root, "add_eos_token", -1, &flags[1], why, sizeof why);
    mcl_json_free(doc);
    if (s != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, mcl_model_bad_file(s), "model: %s: %s", path, why);
    return MCL_SUCCESS;
}

/* tokenizer.model in place of a tokenizer.json refused as unsupported (its reason in
 * json_why), when it numbers as many tokens. */
static mcl_status spm_in_place_of_json(mcl_model *m, const char *json_path,
                                       const char *spm_path, const char *json_why)
{
    char why[512];
    uint32_t json_count = 0;
    mcl_status s = read_file(json_path, 1, 1, NULL, &json_count, why, sizeof why);
    if (s != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, mcl_model_bad_file(s), "model: %s: %s", json_path, why);
    s = read_file(spm_path, 0, 0, &m->tokenizer, NULL, why, sizeof why);
    if (s != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, mcl_model_bad_file(s), "model: %s: %s (and %s: %s)",
                          spm_path, why, json_path, json_why);
    if (mcl_tokenizer_vocab_size(m->tokenizer) != json_count)
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: %s: %s, and %s cannot stand in for it: it numbers %u tokens, "
                          "tokenizer.json %u", json_path, json_why, spm_path,
                          mcl_tokenizer_vocab_size(m->tokenizer), json_count);
    return MCL_SUCCESS;
}

mcl_status mcl_model_checkpoint_tokenizer(mcl_model *m, const char *folder)
{
    char why[512], json_path[4200], spm_path[4200], config_path[4200];
    snprintf(json_path, sizeof json_path, "%s/tokenizer.json", folder);
    snprintf(spm_path, sizeof spm_path, "%s/tokenizer.model", folder);
    snprintf(config_path, sizeof config_path, "%s/tokenizer_config.json", folder);
    int has_json = exists(json_path), has_spm = exists(spm_path);
    mcl_status s = MCL_SUCCESS;
    if (has_json) {
        s = read_file(json_path, 1, 0, &m->tokenizer, NULL, why, sizeof why);
        if (s == MCL_ERROR_UNSUPPORTED && has_spm)
            s = spm_in_place_of_json(m, json_path, spm_path, why);
        else if (s != MCL_SUCCESS)
            s = MODEL_FAIL(m->ctx, mcl_model_bad_file(s), "model: %s: %s", json_path, why);
    } else if (has_spm) {
        s = read_file(spm_path, 0, 0, &m->tokenizer, NULL, why, sizeof why);
        if (s != MCL_SUCCESS)
            s = MODEL_FAIL(m->ctx, mcl_model_bad_file(s), "model: %s: %s", spm_path, why);
    }
    if (s != MCL_SUCCESS || !m->tokenizer)
        return s;
    int flags[2];
    if ((s = read_tokenizer_config(m, config_path, flags)) != MCL_SUCCESS)
        return s;
    /* config.json's ids (read into m->info, -1 where it has none) */
    int32_t bos = m->info.bos >= 0 ? m->info.bos : -2, eos = m->info.eos >= 0 ? m->info.eos : -2;
    s = mcl_tokenizer_set_specials(m->tokenizer, bos, eos, flags[0], flags[1], why, sizeof why);
    if (s != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, mcl_model_bad_file(s),
                          "model: config.json's bos_token_id / eos_token_id or "
                          "tokenizer_config.json's add_bos_token / add_eos_token do not fit "
                          "the tokenizer: %s", why);
    return MCL_SUCCESS;
}
