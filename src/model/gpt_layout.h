/* A GPT's configuration checked and its parameter layout planned, and a checkpoint's header
 * read and checked (gpt_layout.c): host code that needs no device, shared by mcl_gpt_create,
 * the checkpoint loader and the checkpoint fuzz harness (tests/fuzz/fuzz_checkpoint.c). */
#ifndef MCL_MODEL_GPT_LAYOUT_H
#define MCL_MODEL_GPT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"

#define GPT_ALIGN_FLOATS 64
#define GPT_LAYER_PARAMS 9
#define GPT_LAYER_PARAMS_COUNTER 2 /* a counter-state model's f32 ones: attn_norm, mlp_norm */
/* The deepest model accepted: sixteen times the deepest published decoders (~128 layers);
 * it bounds the host memory of the parameter table before a configuration is trusted. */
#define GPT_MAX_LAYERS 2048
#define GPT_MAX_LAYERS_TEXT "2048"
/* The flat tensors hold at most this many floats: the ops count elements in 32 bits. */
#define GPT_MAX_FLAT_FLOATS UINT64_C(4294967295)

/* The checkpoint file (docs/gpt-checkpoint.md): a header, the parameters and both moments
 * (3 x flat_floats f32), a trailer holding the FNV-1a checksum of everything before it. */
#define GPT_MAGIC "MCLGPT\r\n"
#define GPT_VERSION 3u          /* the newest version read and written */
#define GPT_VERSION_ORDINARY 1u /* written for a model without flags (as before them) */
#define GPT_VERSION_FLAGS 2u    /* adds flags and reversible_anchor at 88 */
#define GPT_VERSION_COUNTER 3u  /* adds the counter section (MCL_GPT_COUNTER models only) */
#define GPT_COUNTER_HEADER_BYTES 16u /* the counter section's own header: C, seed, 8 zero */
#define GPT_COUNTER_LINEARS 7   /* a block's counter layers: wq, wk, wv, wo, gate, up, down */
#define GPT_HEADER_BYTES 96u
#define GPT_TRAILER_BYTES 8u
#define GPT_CHECKSUM_SEED UINT64_C(0xCBF29CE484222325)

/* What a configuration implies, computed before anything is allocated. */
typedef struct gpt_plan {
    uint32_t param_count;
    int64_t flat_floats, decay_end, total_params; /* as in mcl_gpt */
    /* MCL_GPT_COUNTER: the counter weights, and the checkpoint's counter section in bytes
     * (its header, then per layer and linear the packed state, the scales and the moments). */
    int64_t counter_weights;
    uint64_t counter_bytes;
} gpt_plan;

/* The shape [out, in] of linear `which` (MCL_GPT_WQ ..) of a block of `c`. */
void mcl_gpt_linear_shape(const mcl_gpt_desc *c, int which, int64_t *out, int64_t *in);

/* Check a configuration (filling in its defaults: kv_heads, rope_theta, norm_eps) against
 * its rules and hard bounds, and plan its layout with overflow-checked arithmetic.
 * MCL_ERROR_INVALID_ARGUMENT (a field) or MCL_ERROR_TOO_LARGE (more than
 * GPT_MAX_FLAT_FLOATS), with why written. */
mcl_status mcl_gpt_plan_check(mcl_gpt_desc *config, gpt_plan *plan, char *why,
                              size_t why_size);

/* A checkpoint's header (GPT_HEADER_BYTES bytes): its configuration into config (checked
 * and planned as mcl_gpt_plan_check does), its step, and the length the whole file must
 * have. MCL_ERROR_INVALID_ARGUMENT for anything a saved checkpoint cannot hold, with why. */
mcl_status mcl_gpt_checkpoint_header(const unsigned char *header, mcl_gpt_desc *config,
                                     gpt_plan *plan, uint64_t *step, uint64_t *file_bytes,
                                     char *why, size_t why_size);

/* FNV-1a of n bytes, continuing from h (GPT_CHECKSUM_SEED to start). */
uint64_t mcl_gpt_checksum(uint64_t h, const void *data, size_t n);

uint32_t mcl_gpt_get_u32(const unsigned char *p);
uint64_t mcl_gpt_get_u64(const unsigned char *p);

#endif
