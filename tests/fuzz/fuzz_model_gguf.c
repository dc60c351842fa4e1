/* libFuzzer harness of the model loader's reading of a GGUF (src/model/model_arch.c): the
 * architecture and hyperparameters (mixtures of experts among them), the tensor list, and the
 * check of every tensor against the shapes the hyperparameters give, all before anything
 * touches a device; and the tokenizer the file's tokenizer.* keys describe
 * (src/text/tokenizer_gguf.c, as mcl_model_open builds it, here whether or not the rest
 * passed), which then encodes and decodes a fixed text. Seeds: tests/fuzz/corpus/model (tiny
 * models the fixtures wrote, dense and mixtures, and tokenizer-only files of both kinds).
 * Built only with clang and MOTIFCL_FUZZ=ON; see tests/fuzz/README.md. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "model/model_internal.h"
#include "text/tokenizer.h"
#include "tokenizer_use.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

/* The tokenizer of the file's keys, where it has one, made and used. */
static void tokenizer(const mcl_gguf *g)
{
    if (!mcl_gguf_find(g, "tokenizer.ggml.model"))
        return;
    char why[256];
    mcl_tokenizer *t = NULL;
    if (mcl_tokenizer_from_gguf(g, &t, why, sizeof why) == MCL_SUCCESS)
        fuzz_use_tokenizer(t, &sink);
    else
        sink += (unsigned char)why[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcl_gguf *g = NULL;
    char why[256];
    if (mcl_gguf_parse(data, size, &g, why, sizeof why) != MCL_SUCCESS)
        return 0;
    mcl_model m;
    memset(&m, 0, sizeof m);
    m.gguf = g;
    m.info.size = sizeof m.info;
    if (mcl_model_arch_from_gguf(&m) == MCL_SUCCESS &&
        mcl_model_tensors_from_gguf(&m) == MCL_SUCCESS &&
        mcl_model_check_tensors(&m) == MCL_SUCCESS) {
        /* What a checked model hands the loader: every tensor's shape and bytes. */
        for (uint32_t i = 0; i < m.tensor_count; i++) {
            const model_tensor *t = &m.tensors[i];
            sink += t->bytes + (uint64_t)t->shape[t->ndim ? t->ndim - 1 : 0];
            if (t->bytes)
                sink += t->data[0] + t->data[t->bytes - 1];
        }
        sink += m.info.experts + m.info.expert_hidden + m.info.shared_hidden;
    }
    tokenizer(g);
    for (uint32_t i = 0; i < m.tensor_count; i++)
        mcl_mem_free(m.tensors[i].name);
    mcl_mem_free(m.tensors);
    mcl_gguf_free(g);
    return 0;
}
