/* Test support (model_fixtures.c, model_fixtures_write.c; the library motifcl_test_fixtures):
 * a tiny random llama-family model, written to disk as llama.cpp's converter writes a GGUF
 * file and as Hugging Face stores a checkpoint (config.json and model.safetensors), with the
 * host f32 weights each file holds filled into a ref_llama (tests/ref/ref_llama.h), so that an
 * engine's logits for either file can be compared with the reference's on exactly the values
 * the device holds.
 *
 * The GGUF file: general.architecture "llama" or "qwen2", the <arch>.* hyperparameter keys,
 * one tensor per GGUF name with its dims listed K first. For llama the rows of attn_q and
 * attn_k (and their biases, as the converter does) are permuted within each head as the
 * converter stores them: row 2i + a of a head is Hugging Face's row a * head_dim / 2 + i;
 * qwen2 is stored unpermuted. Each matrix class is in the caller's type (f32, f16, bf16,
 * q8_0, q4_0, q4_K, q5_K, q6_K); norms, biases and rope_freqs.weight are f32. Unless left
 * out, a small SentencePiece-style vocabulary comes with it (tokenizer.ggml.model "llama":
 * <unk>, <s>, </s>, "▁", single characters, then filler pieces). The host weights of the GGUF
 * form are the file's values decoded by the library's own conversions (mcl_fp16_to_fp32,
 * bf16 widening, mcl_dequantize) and put back in Hugging Face's row order: what
 * mcl_model_open() gives.
 *
 * The checkpoint: the same generated weights under Hugging Face's names, unpermuted, every
 * tensor in one dtype (f32, f16 or bf16), and config.json (llama 3.1's rope_scaling when set;
 * the loader then computes rope_freqs.weight from it).
 *
 * Weights are uniform random: matrices in +-sqrt(3 / K) * weight_scale (unit variance out of
 * unit-variance inputs), the embedding in +-1, norm weights in 1 +- 0.25, biases in +-0.5.
 * Functions return MCL_SUCCESS or an error status, with a message on stderr. */
#ifndef MCL_TEST_MODEL_FIXTURES_H
#define MCL_TEST_MODEL_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"
#include "ref/ref_llama.h"

/* The matrix classes, whose type in the GGUF file the caller chooses. */
enum {
    FIXTURE_TOKEN_EMBD,
    FIXTURE_ATTN_Q,
    FIXTURE_ATTN_K,
    FIXTURE_ATTN_V,
    FIXTURE_ATTN_OUTPUT,
    FIXTURE_FFN_GATE,
    FIXTURE_FFN_UP,
    FIXTURE_FFN_DOWN,
    FIXTURE_OUTPUT,
    FIXTURE_CLASSES,
    FIXTURE_F32_ONLY = -1 /* a tensor's class when it is a norm, a bias or rope_freqs */
};

/* What to generate. Zero-initialise, then set at least dim, layers, heads, hidden, vocab. */
typedef struct model_fixture_desc {
    const char *arch;       /* "llama" (q and k permuted in the GGUF), "qwen2" or "qwen2moe"
                               (experts > 0); NULL means "llama". The loader gives qwen2's
                               q, k and v biases and llama none: set qkv_bias to match */
    int dim, layers, heads;
    int kv_heads;           /* 0 means heads */
    int head_dim;           /* 0 means dim / heads (another is written as key_length and
                               head_dim, which the loader refuses today) */
    int hidden, vocab;
    int tied;               /* 1: no output.weight, the embedding is the head */
    int qkv_bias;           /* 1: attn_q.bias, attn_k.bias, attn_v.bias */
    float rope_theta;       /* 0 means 10000 */
    float norm_eps;         /* 0 means 1e-5 */
    int context;            /* context_length; 0 means 2048 */
    float rope_factor;      /* > 0: llama 3.1's RoPE scaling with these parameters */
    float rope_low_freq_factor, rope_high_freq_factor; /* 0 mean 1 and 4 */
    int rope_original_context;                         /* 0 means 8192 */
    uint32_t seed;
    uint32_t gguf_type[FIXTURE_CLASSES]; /* ggml type ids (MCL_GGML_*); 0 is f32. K-quants
                                            need rows (K) a multiple of 256, q8_0 and q4_0 of
                                            32 */
    uint32_t hf_type;       /* the checkpoint's dtype as a ggml id: MCL_GGML_F32 (0), F16,
                               BF16 */
    float weight_scale;     /* 0 means 1 */
    int no_tokenizer;       /* 1: no tokenizer.* keys in the GGUF */
    int experts;            /* > 0: every block's feed-forward is a mixture of this many
                               experts (ffn_gate_inp and the 3-D _exps tensors) */
    int experts_used;       /* the experts a token takes; 0 means 2 */
    int expert_hidden;      /* each expert's width; 0 means hidden */
    int shared_hidden;      /* qwen2moe: > 0 adds the shared expert of this width */
    int clear_routing;      /* 1 (a mixture, dim >= experts): every routing choice is decided
                               by the token alone, with a wide margin, so that a path which
                               rounds its activations chooses as the reference does. The
                               residual's first `experts` components hold the embedding's
                               values through every block (attn_output's and the down
                               products' rows there are zero); a token's embedding is in
                               [0.8, 1] there for experts_used of them (a shuffle seeded by
                               the token) and in [-1, 0] for the rest; layer l's router row e
                               is 0.75 at component (e + l) % experts plus a twentieth of a
                               random row. The rounding of a path then moves a router
                               probability by about 1e-3 (only the norm's scale and the small
                               random part see it), and the reference's margins
                               (ref_llama_margin) are 0.045 or more in the mixture tests */
    int chat_tokens;        /* 1: the vocabulary's last pieces are ChatML's and llama 3's
                             * control tokens (<|im_start|>, <|im_end|>,
                             * <|start_header_id|>, <|end_header_id|>, <|eot_id|>) */
} model_fixture_desc;

/* One tensor of the model. */
typedef struct model_fixture_tensor {
    char name[64];          /* GGUF's name */
    int cls;                /* FIXTURE_* class, or FIXTURE_F32_ONLY */
    uint32_t ndim;          /* 1, 2, or 3 for an expert stack [experts, N / experts, K] */
    int64_t shape[2];       /* the library's order: [N, K], or [N]; an expert stack's N
                               counts every expert's rows */
    int64_t experts;        /* 3-D: the experts stacked */
    uint32_t gguf_type;     /* its ggml type in the GGUF file */
    int64_t permute_heads;  /* > 0: its rows are permuted over this many heads in the GGUF */
    float *source;          /* the generated values, Hugging Face's row order */
    float *gguf;            /* the values the GGUF file holds, Hugging Face's row order */
    float *hf;              /* the values the checkpoint holds (NULL for rope_freqs.weight,
                               which config.json gives) */
} model_fixture_tensor;

/* A generated model. The ref_llama structs point into `tensors`: the fixture owns them. */
typedef struct model_fixture {
    model_fixture_desc desc;      /* as given, defaults filled in */
    int count;
    model_fixture_tensor *tensors;
    const float *rope_freqs;      /* [head_dim / 2] llama 3.1 factors (in tensors), or NULL */
    ref_llama_layer *gguf_blk, *hf_blk;
    ref_llama gguf_ref;           /* the model as the GGUF file holds it */
    ref_llama hf_ref;             /* the model as the checkpoint holds it */
} model_fixture;

/* Generate the weights and both forms' host values. On failure *f is empty (freeing it is
 * harmless). MCL_ERROR_INVALID_ARGUMENT for a shape the files cannot hold (a type whose block
 * does not divide K, heads not divisible by kv_heads, an odd head width, an unknown arch or
 * type), MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status model_fixture_create(const model_fixture_desc *desc, model_fixture *f);

/* Free what the fixture holds; f may be NULL. */
void model_fixture_free(model_fixture *f);

/* Write the GGUF file (version 3, alignment 32) at path. */
mcl_status model_fixture_write_gguf(const model_fixture *f, const char *path);

/* Write config.json and model.safetensors into the existing folder dir. */
mcl_status model_fixture_write_checkpoint(const model_fixture *f, const char *dir);

/* The tensor of GGUF name `name`, or NULL. */
const model_fixture_tensor *model_fixture_find(const model_fixture *f, const char *name);

/* --- Pieces of the writers, shared with test_model -------------------------------------- */

/* llama.cpp's converter's permutation of q or k: rows [rows, k] in Hugging Face's order to
 * the file's (row 2i + a of a head of rows / heads is Hugging Face's row a * head / 2 + i). */
void model_fixture_permute(const float *hf, float *file, int64_t rows, int64_t k,
                           int64_t heads);
/* Its inverse: the file's order back to Hugging Face's. */
void model_fixture_unpermute(const float *file, float *hf, int64_t rows, int64_t k,
                             int64_t heads);

/* f32 to bf16 by rounding to nearest even, as torch does. */
uint16_t model_fixture_bf16(float f);

/* `rows` rows of k floats as the bytes of ggml type `type` (f32, f16, bf16 or a block type,
 * through the library's quantizer), malloc'd, their size in *bytes; NULL for a type not read,
 * a k its block does not divide, a value the quantizer refuses, memory exhausted. */
unsigned char *model_fixture_encode(uint32_t type, const float *x, int64_t rows, int64_t k,
                                    uint64_t *bytes);

/* n values of ggml type `type` from `data` to f32 with the library's conversions. */
mcl_status model_fixture_decode(uint32_t type, const void *data, int64_t n, float *out);

/* Hugging Face's name of a GGUF tensor name into hf (size bytes); 0 if it has none. With
 * arch (the fixture's), a mixture's tensors too: an expert stack's name is the pattern of its
 * experts' names, "%d" standing for the expert. */
/* Relative RMS of got (floats) against want (doubles), n values (the plain RMS where want is
 * all zero): how logits are held to the reference. */
double model_fixture_rel_rms(const float *got, const double *want, size_t n);

/* The logits' tolerance for matrices of GGUF type `type` on ctx's device: 3e-2 where a path
 * that rounds the activations runs (integer dot product, cooperative matrices) and the type
 * is not f32, else 1e-4. */
double model_fixture_tolerance(mcl_context *ctx, uint32_t type);

int model_fixture_hf_name(const char *gguf, char *hf, size_t size);
int model_fixture_hf_name_of(const char *arch, const char *gguf, char *hf, size_t size);

#endif
