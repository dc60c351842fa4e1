/* The model object's private structure, shared by model.c (open, queries, tokenizer),
 * model_arch.c (architectures, hyperparameters, names) and model_load.c (weights onto the
 * device). Internal to src/model. */
#ifndef MCL_MODEL_MODEL_INTERNAL_H
#define MCL_MODEL_MODEL_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "motifcl.h"
#include "../io/gguf.h"
#include "../io/mapped.h"
#include "../text/tokenizer.h"
#include "../vk/runtime.h"

/* A tensor as the file holds it, described in the library's terms whatever the format. */
typedef struct model_tensor {
    char *name;                /* GGUF's name (a checkpoint's mapped to it); owned */
    uint32_t file_type;        /* ggml type id of the bytes in the file */
    uint32_t ndim;
    int64_t shape[4];          /* the library's order: [N, K] for a weight */
    const unsigned char *data; /* its bytes in a mapped file */
    uint64_t bytes;
    /* A checkpoint's expert stack, its experts separate tensors of the files: `parts` of
     * part_rows rows each, stacked in order (data is then NULL; bytes counts them all). */
    const unsigned char **part_data;
    uint32_t parts;
    uint64_t part_rows;
    uint32_t unpermute_heads;  /* >0: rows are llama.cpp's RoPE permutation over this many
                                * heads; the loader restores Hugging Face's order */
    mcl_dtype dtype;           /* on the device (decided before the upload) */
    mcl_tensor *tensor;        /* on the device; NULL without weights */
} model_tensor;

/* Whether s ends with suffix (file names, tensor names). */
static inline int mcl_model_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* MCL_SUCCESS while the model's context lives (the engine asks before a session). */
mcl_status mcl_model_context_check(const mcl_model *model);

/* An empty model of ctx (no file, no tensors; bos and eos -1), released with ctx or by
 * mcl_model_close: what mcl_model_open fills, and the benchmarks' models made on the device.
 * NULL when out of host memory. */
mcl_model *mcl_model_new(mcl_context *ctx);

struct mcl_model {
    mcl_context *ctx;
    mcl_child child;           /* on the context's list: released with it */
    mcl_model_info info;
    mcl_mapped *files;         /* the mapped files (one, or a checkpoint's shards) */
    uint32_t file_count;
    mcl_gguf *gguf;            /* a GGUF's parse, NULL for a checkpoint */
    struct checkpoint *checkpoint; /* a checkpoint's parses (model_checkpoint.c), or NULL */
    model_tensor *tensors;
    uint32_t tensor_count, tensor_capacity;
    mcl_tokenizer *tokenizer;  /* NULL where the file has none */
};

/* Record a failure as the context's last error and return status. */
#define MODEL_FAIL(ctx, status, ...) mcl_fail(ctx, status, __VA_ARGS__)

/* A file parser's INVALID_ARGUMENT is a fault of the file, not of the caller. */
static inline mcl_status mcl_model_bad_file(mcl_status status)
{
    return status == MCL_ERROR_INVALID_ARGUMENT ? MCL_ERROR_BAD_FILE : status;
}

/* --- model_arch.c ------------------------------------------------------------------------- */

/* The hyperparameters and architecture of a GGUF's metadata into m->info (m->gguf set);
 * MCL_ERROR_UNSUPPORTED for an architecture not read (naming the ones read),
 * MCL_ERROR_BAD_FILE for a missing or inconsistent key (named). */
mcl_status mcl_model_arch_from_gguf(mcl_model *m);

/* A GGUF's tensors (m->gguf parsed, m->info's architecture read) as the loader's, shapes
 * reversed into the library's order, q and k marked for llama.cpp's permutation where the
 * architecture has it. */
mcl_status mcl_model_tensors_from_gguf(mcl_model *m);

/* Whether llama.cpp's converter permutes the q and k rows of this architecture. */
int mcl_model_arch_permutes_qk(const char *architecture);

/* Check m's tensors against what the architecture needs (every one present, each of the
 * shape the hyperparameters give): MCL_ERROR_BAD_FILE naming the first that is not. */
mcl_status mcl_model_check_tensors(mcl_model *m);

/* The tensor named `name`, or NULL. */
model_tensor *mcl_model_tensor_named(const mcl_model *m, const char *name);

/* Add a tensor (name copied). MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status mcl_model_add_tensor(mcl_model *m, const char *name, size_t name_len,
                                model_tensor **out);

/* --- model_checkpoint.c: Hugging Face checkpoints ---------------------------------------- */

/* Whether path names a checkpoint: a .safetensors file, a model.safetensors.index.json, or a
 * folder holding config.json. */
int mcl_model_checkpoint_path(const char *path);
/* Open one: config.json into m->info, the tokenizer (below), the shards mapped and parsed,
 * their tensors under GGUF's names. */
mcl_status mcl_model_open_checkpoint(mcl_model *m, const char *path);
/* model_checkpoint_tokenizer.c: m->tokenizer from the folder's tokenizer.json, else its
 * tokenizer.model (also in place of a tokenizer.json refused as unsupported, when the two
 * number as many tokens); none when it has neither. config.json's BOS and EOS ids (m->info,
 * read before) and tokenizer_config.json's add_bos_token / add_eos_token override the file's.
 * MCL_ERROR_BAD_FILE, MCL_ERROR_UNSUPPORTED or MCL_ERROR_IO naming the file and what in it. */
mcl_status mcl_model_checkpoint_tokenizer(mcl_model *m, const char *folder);
/* The config.json member `key` as JSON text into out; MCL_ERROR_INVALID_ARGUMENT for a key it
 * does not have. */
struct mcl_text;
mcl_status mcl_model_checkpoint_metadata(const mcl_model *m, const char *key,
                                         struct mcl_text *out);
/* Free what mcl_model_open_checkpoint kept (accepts a model without a checkpoint). */
void mcl_model_free_checkpoint(mcl_model *m);

/* --- model_load.c ------------------------------------------------------------------------- */

/* The device type of every tensor under desc and the device bytes they need (info);
 * MCL_ERROR_UNSUPPORTED naming a tensor of a type the library does not read, except with
 * MCL_MODEL_NO_WEIGHTS, where such a tensor's dtype is -1. */
mcl_status mcl_model_plan_weights(mcl_model *m, const mcl_model_desc *desc);

/* The budget check (before anything is uploaded), then each tensor converted (f16 and bf16
 * to f32, quantized or dequantized as planned, llama.cpp's q and k permutation undone) and
 * uploaded, progress reported. */
mcl_status mcl_model_load_weights(mcl_model *m, const mcl_model_desc *desc);

#endif
