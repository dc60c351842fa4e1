/* libFuzzer harness of the model loader's reading of a Hugging Face checkpoint
 * (src/model/model_checkpoint.c): config.json (the architecture, its hyperparameters, a
 * mixture's keys) and a model.safetensors, mapped to GGUF's names, a mixture's experts stacked,
 * then every tensor checked against the shapes the hyperparameters give; no device. Each input
 * is the two files joined by a NUL byte (config.json first), written to a scratch folder per
 * run. Seeds: tests/fuzz/corpus/model_checkpoint (tiny checkpoints the fixtures wrote, dense
 * and mixtures). Built only with clang and MOTIFCL_FUZZ=ON; see tests/fuzz/README.md. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "model/model_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;
static char folder[64];

static int put(const char *name, const uint8_t *bytes, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    size_t wrote = fwrite(bytes, 1, n, f);
    return fclose(f) == 0 && wrote == n;
}

/* The scratch folder removed when the fuzzer exits. */
static void remove_folder(void)
{
    char path[128];
    const char *names[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", folder, names[i]);
        unlink(path);
    }
    rmdir(folder);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!folder[0]) {
        snprintf(folder, sizeof folder, "/tmp/motifcl-fuzz-ckpt-XXXXXX");
        if (!mkdtemp(folder))
            abort();
        atexit(remove_folder);
    }
    const uint8_t *nul = memchr(data, 0, size);
    if (!nul)
        return 0;
    size_t config = (size_t)(nul - data);
    if (!put("config.json", data, config) ||
        !put("model.safetensors", nul + 1, size - config - 1))
        abort();
    mcl_model m;
    memset(&m, 0, sizeof m);
    m.info.size = sizeof m.info;
    m.info.bos = m.info.eos = -1;
    if (mcl_model_open_checkpoint(&m, folder) == MCL_SUCCESS &&
        mcl_model_check_tensors(&m) == MCL_SUCCESS) {
        for (uint32_t i = 0; i < m.tensor_count; i++) {
            const model_tensor *t = &m.tensors[i];
            for (uint32_t q = 0; q < (t->parts ? t->parts : 1); q++) {
                const unsigned char *p = t->parts ? t->part_data[q] : t->data;
                uint64_t each = t->bytes / (t->parts ? t->parts : 1);
                if (p && each)
                    sink += p[0] + p[each - 1];
            }
        }
    }
    for (uint32_t i = 0; i < m.tensor_count; i++) {
        mcl_mem_free(m.tensors[i].name);
        mcl_mem_free(m.tensors[i].part_data);
    }
    mcl_mem_free(m.tensors);
    mcl_tokenizer_free(m.tokenizer);
    mcl_model_free_checkpoint(&m);
    for (uint32_t i = 0; i < m.file_count; i++)
        mcl_mapped_close(&m.files[i]);
    mcl_mem_free(m.files);
    return 0;
}
