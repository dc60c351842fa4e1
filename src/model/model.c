/* Model files: mcl_model_open reads a GGUF file or a Hugging Face checkpoint into the
 * library's terms (architecture, hyperparameters, tensors named and shaped one way, a
 * tokenizer), then model_load.c puts the weights on the device. The queries of a model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_internal.h"
#include "core/alloc.h"

static void model_release_child(mcl_child *child);

static double seconds_now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static mcl_status open_gguf(mcl_model *m, const char *path)
{
    char why[256];
    m->files = mcl_mem_calloc(1, sizeof *m->files);
    if (!m->files)
        return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = mcl_mapped_open(path, m->files, why, sizeof why);
    if (status != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, status, "model: %s", why);
    m->file_count = 1;
    status = mcl_gguf_parse(m->files->data, m->files->size, &m->gguf, why, sizeof why);
    if (status != MCL_SUCCESS)
        return MODEL_FAIL(m->ctx, mcl_model_bad_file(status), "model: %s: %s", path, why);
    snprintf(m->info.format, sizeof m->info.format, "gguf %u", mcl_gguf_version(m->gguf));
    m->info.file_bytes = m->files->size;
    if ((status = mcl_model_arch_from_gguf(m)) != MCL_SUCCESS ||
        (status = mcl_model_tensors_from_gguf(m)) != MCL_SUCCESS)
        return status;
    uint64_t vocab = 0;
    char key[96];
    snprintf(key, sizeof key, "%s.vocab_size", m->info.architecture);
    if (mcl_gguf_get_u64(mcl_gguf_find(m->gguf, key), &vocab) && vocab <= UINT32_MAX)
        m->info.vocab = (uint32_t)vocab;
    if (mcl_gguf_find(m->gguf, "tokenizer.ggml.model")) {
        status = mcl_tokenizer_from_gguf(m->gguf, &m->tokenizer, why, sizeof why);
        if (status != MCL_SUCCESS)
            return MODEL_FAIL(m->ctx, mcl_model_bad_file(status), "model: tokenizer: %s", why);
    }
    return MCL_SUCCESS;
}

mcl_model *mcl_model_new(mcl_context *ctx)
{
    mcl_model *m = mcl_mem_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->ctx = ctx;
    mcl_context_adopt(ctx, &m->child, model_release_child);
    m->info.size = sizeof m->info;
    m->info.bos = m->info.eos = -1;
    return m;
}

mcl_status mcl_model_open(mcl_context *ctx, const char *path, const mcl_model_desc *desc,
                          mcl_model **out)
{
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx || !path)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_model_desc defaults = {.size = sizeof defaults};
    if (desc) {
        if (desc->size < offsetof(mcl_model_desc, reserved))
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_model_open: desc->size is not set");
        memcpy(&defaults, desc, desc->size < sizeof defaults ? desc->size : sizeof defaults);
    }
    desc = &defaults;
    if (desc->flags & ~(uint32_t)(MCL_MODEL_NO_WEIGHTS | MCL_MODEL_WEIGHT_TYPE_SET |
                                  MCL_MODEL_EXPERTS_IN_HOST_MEMORY))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_model_open: unknown flags 0x%x",
                        desc->flags);
    if ((desc->flags & MCL_MODEL_WEIGHT_TYPE_SET) && desc->weight_type != MCL_DTYPE_F32 &&
        desc->weight_type != MCL_DTYPE_Q8_0 && desc->weight_type != MCL_DTYPE_Q4_0)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_model_open: weights are stored as f32, q8_0 or q4_0, not %s",
                        mcl_dtype_name(desc->weight_type) ? mcl_dtype_name(desc->weight_type)
                                                          : "an unknown type");
    double t0 = seconds_now();
    mcl_model *m = mcl_model_new(ctx);
    if (!m)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = mcl_model_ends_with(path, ".gguf") || !mcl_model_checkpoint_path(path)
                            ? open_gguf(m, path)
                            : mcl_model_open_checkpoint(m, path);
    if (status == MCL_SUCCESS)
        status = mcl_model_check_tensors(m);
    if (status == MCL_SUCCESS && m->tokenizer) {
        snprintf(m->info.tokenizer, sizeof m->info.tokenizer, "%s",
                 mcl_tokenizer_model(m->tokenizer));
        snprintf(m->info.pre_tokenizer, sizeof m->info.pre_tokenizer, "%s",
                 mcl_tokenizer_pre(m->tokenizer));
        m->info.bos = mcl_tokenizer_bos(m->tokenizer);
        m->info.eos = mcl_tokenizer_eos(m->tokenizer);
    }
    if (status == MCL_SUCCESS && m->tokenizer &&
        mcl_tokenizer_vocab_size(m->tokenizer) > m->info.vocab)
        status = MODEL_FAIL(ctx, MCL_ERROR_BAD_FILE,
                            "model: the tokenizer has %u tokens, the embedding %u rows",
                            mcl_tokenizer_vocab_size(m->tokenizer), m->info.vocab);
    for (uint32_t i = 0; status == MCL_SUCCESS && i < m->tensor_count; i++) {
        int64_t n = 1;
        for (uint32_t d = 0; d < m->tensors[i].ndim; d++)
            n *= m->tensors[i].shape[d];
        m->info.parameters += (uint64_t)n;
    }
    if (status == MCL_SUCCESS)
        status = mcl_model_plan_weights(m, desc);
    if (status == MCL_SUCCESS && !(desc->flags & MCL_MODEL_NO_WEIGHTS))
        status = mcl_model_load_weights(m, desc);
    if (status != MCL_SUCCESS) {
        mcl_model_close(m);
        return status;
    }
    m->info.load_seconds = seconds_now() - t0;
    *out = m;
    return MCL_SUCCESS;
}

/* The model's device part: its weights (with its context, or first in mcl_model_close). */
static void model_release(mcl_model *m)
{
    for (uint32_t i = 0; m->tensors && i < m->tensor_count; i++) {
        mcl_tensor_destroy(m->tensors[i].tensor);
        m->tensors[i].tensor = NULL;
    }
}

static void model_release_child(mcl_child *child)
{
    model_release((mcl_model *)((char *)child - offsetof(mcl_model, child)));
}

mcl_status mcl_model_context_check(const mcl_model *m)
{
    return mcl_context_check(m->ctx);
}

void mcl_model_close(mcl_model *m)
{
    if (!m)
        return;
    model_release(m);
    for (uint32_t i = 0; m->tensors && i < m->tensor_count; i++) {
        mcl_mem_free(m->tensors[i].name);
        mcl_mem_free(m->tensors[i].part_data);
    }
    mcl_mem_free(m->tensors);
    mcl_tokenizer_free(m->tokenizer);
    mcl_gguf_free(m->gguf);
    mcl_model_free_checkpoint(m);
    for (uint32_t i = 0; i < m->file_count; i++)
        mcl_mapped_close(&m->files[i]);
    mcl_mem_free(m->files);
    mcl_context_disown(m->ctx, &m->child);
    mcl_mem_free(m);
}

mcl_status mcl_model_file_info(const mcl_model *m, mcl_model_info *info)
{
    if (!m || !info || info->size < offsetof(mcl_model_info, reserved))
        return MCL_ERROR_INVALID_ARGUMENT;
    size_t size = info->size < sizeof m->info ? info->size : sizeof m->info;
    mcl_model_info copy = m->info;
    copy.size = info->size;
    memcpy(info, &copy, size);
    return MCL_SUCCESS;
}

uint32_t mcl_model_tensor_count(const mcl_model *m)
{
    return m ? m->tensor_count : 0;
}

mcl_status mcl_model_tensor(const mcl_model *m, uint32_t index, mcl_model_tensor_info *info)
{
    if (!m || !info || info->size < offsetof(mcl_model_tensor_info, tensor) + sizeof(void *) ||
        index >= m->tensor_count)
        return MCL_ERROR_INVALID_ARGUMENT;
    const model_tensor *t = &m->tensors[index];
    mcl_model_tensor_info copy = {.size = info->size};
    copy.name = t->name;
    copy.file_type = mcl_ggml_type_name(t->file_type);
    copy.dtype = t->dtype;
    copy.ndim = t->ndim;
    for (uint32_t d = 0; d < t->ndim; d++)
        copy.shape[d] = t->shape[d];
    copy.tensor = t->tensor;
    size_t size = info->size < sizeof copy ? info->size : sizeof copy;
    memcpy(info, &copy, size);
    return MCL_SUCCESS;
}

mcl_tensor *mcl_model_find_tensor(const mcl_model *m, const char *name)
{
    if (!m || !name)
        return NULL;
    const model_tensor *t = mcl_model_tensor_named(m, name);
    return t ? t->tensor : NULL;
}

mcl_status mcl_model_tokenize(const mcl_model *m, const char *text, size_t length,
                              uint32_t flags, int32_t *tokens, uint32_t capacity,
                              uint32_t *count)
{
    if (!m || !count || (!text && length) || (!tokens && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!m->tokenizer)
        return mcl_fail(m->ctx, MCL_ERROR_UNSUPPORTED, "model: the file has no tokenizer");
    return mcl_tokenizer_encode(m->tokenizer, text ? text : "", length, flags, tokens,
                                capacity, count);
}

mcl_status mcl_model_detokenize(const mcl_model *m, const int32_t *tokens, uint32_t count,
                                char *buffer, size_t capacity, size_t *needed)
{
    if (!m || (!tokens && count) || (!buffer && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!m->tokenizer)
        return mcl_fail(m->ctx, MCL_ERROR_UNSUPPORTED, "model: the file has no tokenizer");
    return mcl_tokenizer_decode(m->tokenizer, tokens, count, buffer, capacity, needed);
}
