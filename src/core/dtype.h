/* The one table of MotifCL's data types: for every mcl_dtype its name, whether it is a block
 * type, and its block's shape (weights and bytes; a plain type is a block of one element).
 * The public getters mcl_dtype_name/size/block_weights/block_bytes read it, and so do the
 * block formats in src/quant, which add their byte layouts on top. */
#ifndef MCL_CORE_DTYPE_H
#define MCL_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"

/* Bytes of an IEEE 754 binary16 value (f16 elements, the block formats' scales). */
#define MCL_FP16_BYTES 2

/* Block shapes of the GGUF types. Source: ggml-common.h (QK8_0, QK4_0, QK_K, K_SCALE_SIZE
 * and the block_q8_0 / block_q4_0 / block_q4_K / block_q5_K / block_q6_K structs). */
#define MCL_QK8_0 32        /* weights per Q8_0 block */
#define MCL_QK4_0 32        /* weights per Q4_0 block */
#define MCL_QK_K 256        /* weights per K-quant super-block */
#define MCL_K_SCALE_SIZE 12 /* bytes of packed 6-bit (scale, min) pairs in Q4_K / Q5_K */

/* d, then one signed byte per weight: 34 bytes. */
#define MCL_BLOCK_Q8_0_BYTES (MCL_FP16_BYTES + MCL_QK8_0)
/* d, then one nibble per weight: 18 bytes. */
#define MCL_BLOCK_Q4_0_BYTES (MCL_FP16_BYTES + MCL_QK4_0 / 2)
/* d, dmin, the packed scales, one nibble per weight: 144 bytes. */
#define MCL_BLOCK_Q4_K_BYTES (2 * MCL_FP16_BYTES + MCL_K_SCALE_SIZE + MCL_QK_K / 2)
/* As Q4_K plus one high bit per weight (qh): 176 bytes. */
#define MCL_BLOCK_Q5_K_BYTES \
    (2 * MCL_FP16_BYTES + MCL_K_SCALE_SIZE + MCL_QK_K / 8 + MCL_QK_K / 2)
/* ql (4 bits per weight), qh (2 bits per weight), one int8 scale per 16 weights, d: 210. */
#define MCL_BLOCK_Q6_K_BYTES (MCL_QK_K / 2 + MCL_QK_K / 4 + MCL_QK_K / 16 + MCL_FP16_BYTES)

/* One row of the table. */
typedef struct mcl_dtype_traits {
    mcl_dtype dtype;
    const char *name;        /* what mcl_dtype_name() returns */
    int is_block;            /* 1 for the block-quantised (GGUF) types */
    uint32_t block_weights;  /* elements per block; 1 for a plain type */
    uint32_t block_bytes;    /* bytes per block; the element size for a plain type */
} mcl_dtype_traits;

/* The row of `dtype`, or NULL for a value that is not an mcl_dtype. */
const mcl_dtype_traits *mcl_dtype_traits_of(mcl_dtype dtype);

#endif
