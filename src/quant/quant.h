/*
 * quant.h - GGUF-compatible block formats and their CPU reference (quantize / dequantize).
 *
 * Internal to the library (no MCL_API): these functions are the references that the GPU
 * dequantize and matmul kernels are tested against, and what the model loader uses to
 * check or convert weights. docs/quant-formats.md describes every layout byte by byte.
 *
 * Byte layouts are identical to GGUF / ggml (ggml-common.h): a file quantized by another
 * tool loads as-is, and a row quantized here can be written into a GGUF file. Multi-byte
 * fields (the fp16 scales) are little-endian IEEE 754 binary16, as in GGUF; the host is
 * assumed little-endian (checked below).
 *
 * Every function here is pure: no global state, safe to call from any thread at once.
 * Block pointers (`void *blocks`) need no alignment: blocks are copied through memcpy.
 */
#ifndef MCL_QUANT_H
#define MCL_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "motifcl.h"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "MotifCL's quant blocks are read as little-endian structs; port quant/ first"
#endif

/* ---------------------------------------------------------------------------------------
 * Constants. The block shapes (MCL_QK8_0, MCL_QK4_0, MCL_QK_K, MCL_K_SCALE_SIZE and
 * MCL_BLOCK_*_BYTES) are the data-type table's, core/dtype.h; the structs below must agree.
 * ------------------------------------------------------------------------------------- */

/* Largest |x| that mcl_quantize_row() accepts for each type: the largest magnitude for
 * which the block scale still fits in fp16 (max finite half = 65504).
 * Q8_0: d = amax / 127; Q4_0: d = |max| / 8; K-quants: the Q4_K/Q5_K min scale dmin =
 * max(-min) / 63 is the binding one (the others are smaller), and Q6_K shares the limit. */
#define MCL_FP16_MAX 65504.0f
#define MCL_Q8_0_MAX_ABS (127.0f * MCL_FP16_MAX)
#define MCL_Q4_0_MAX_ABS (8.0f * MCL_FP16_MAX)
#define MCL_K_MAX_ABS (63.0f * MCL_FP16_MAX)

/* ---------------------------------------------------------------------------------------
 * Block structs. Field order, sizes and offsets are GGUF's; `uint16_t` fields hold the raw
 * bits of an IEEE binary16 value.
 * ------------------------------------------------------------------------------------- */

/** Q8_0: 32 weights, y[j] = d * qs[j]. */
typedef struct mcl_block_q8_0 {
    uint16_t d;               /* fp16 scale */
    int8_t qs[MCL_QK8_0];     /* signed quants, element j in qs[j] */
} mcl_block_q8_0;

/** Q4_0: 32 weights, y[j] = d * (nibble(j) - 8). Element j < 16 is the low nibble of
 *  qs[j], element j + 16 the high nibble of qs[j]. */
typedef struct mcl_block_q4_0 {
    uint16_t d;               /* fp16 scale */
    uint8_t qs[MCL_QK4_0 / 2];
} mcl_block_q4_0;

/** Q4_K: 256 weights in 8 sub-blocks of 32. Sub-block s has a 6-bit scale sc[s] and a 6-bit
 *  min m[s] (packed in `scales`, see mcl_k_scale_min_get); y = d*sc[s]*q - dmin*m[s] with
 *  q a 4-bit quant. Elements 64c..64c+31 are the low nibbles of qs[32c..32c+31] (sub-block
 *  2c), elements 64c+32..64c+63 the high nibbles of the same bytes (sub-block 2c+1). */
typedef struct mcl_block_q4_k {
    uint16_t d;                          /* fp16 super-scale of the 6-bit scales */
    uint16_t dmin;                       /* fp16 super-scale of the 6-bit mins */
    uint8_t scales[MCL_K_SCALE_SIZE];    /* 8 (scale, min) pairs, 6 bits each */
    uint8_t qs[MCL_QK_K / 2];            /* low 4 bits of the quants */
} mcl_block_q4_k;

/** Q5_K: as Q4_K with a fifth quant bit: bit s of qh[l] is the high bit (value 16) of
 *  element 32s + l, so q = low nibble (as Q4_K) + 16 * ((qh[l] >> s) & 1), q in 0..31. */
typedef struct mcl_block_q5_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[MCL_K_SCALE_SIZE];
    uint8_t qh[MCL_QK_K / 8];            /* high (fifth) bit of the quants */
    uint8_t qs[MCL_QK_K / 2];            /* low 4 bits, placed as in Q4_K */
} mcl_block_q5_k;

/** Q6_K: 256 weights in 16 sub-blocks of 16, y = d * scales[e / 16] * (q - 32) with q a
 *  6-bit quant. Two halves of 128 elements; within half h (ql += 64h, qh += 32h), for
 *  l in 0..31: element 128h + l    = low  nibble of ql[l]      | bits 0-1 of qh[l] << 4,
 *              element 128h + 32+l = low  nibble of ql[32 + l] | bits 2-3 of qh[l] << 4,
 *              element 128h + 64+l = high nibble of ql[l]      | bits 4-5 of qh[l] << 4,
 *              element 128h + 96+l = high nibble of ql[32 + l] | bits 6-7 of qh[l] << 4. */
typedef struct mcl_block_q6_k {
    uint8_t ql[MCL_QK_K / 2];            /* low 4 bits of the quants */
    uint8_t qh[MCL_QK_K / 4];            /* high 2 bits of the quants */
    int8_t scales[MCL_QK_K / 16];        /* signed 8-bit sub-block scales */
    uint16_t d;                          /* fp16 super-scale */
} mcl_block_q6_k;

_Static_assert(sizeof(mcl_block_q8_0) == MCL_BLOCK_Q8_0_BYTES, "Q8_0 block must be 34 bytes");
_Static_assert(sizeof(mcl_block_q4_0) == MCL_BLOCK_Q4_0_BYTES, "Q4_0 block must be 18 bytes");
_Static_assert(sizeof(mcl_block_q4_k) == MCL_BLOCK_Q4_K_BYTES, "Q4_K block must be 144 bytes");
_Static_assert(sizeof(mcl_block_q5_k) == MCL_BLOCK_Q5_K_BYTES, "Q5_K block must be 176 bytes");
_Static_assert(sizeof(mcl_block_q6_k) == MCL_BLOCK_Q6_K_BYTES, "Q6_K block must be 210 bytes");
_Static_assert(offsetof(mcl_block_q4_k, scales) == 4 && offsetof(mcl_block_q4_k, qs) == 16,
               "Q4_K field offsets must match GGUF");
_Static_assert(offsetof(mcl_block_q5_k, qh) == 16 && offsetof(mcl_block_q5_k, qs) == 48,
               "Q5_K field offsets must match GGUF");
_Static_assert(offsetof(mcl_block_q6_k, qh) == 128 && offsetof(mcl_block_q6_k, scales) == 192 &&
                   offsetof(mcl_block_q6_k, d) == 208,
               "Q6_K field offsets must match GGUF");

/* ---------------------------------------------------------------------------------------
 * fp16 <-> fp32 (IEEE 754 binary16 <-> binary32), exact and independent of the host FPU.
 * ------------------------------------------------------------------------------------- */

/** The float equal to the half with bits `h`. Exact for every half (subnormals included);
 *  infinities map to infinities, NaNs to NaNs with the payload shifted into the top mantissa
 *  bits (quiet stays quiet, signalling stays signalling). */
float mcl_fp16_to_fp32(uint16_t h);

/** The half nearest to `f`, ties to even (IEEE round-to-nearest-even), with subnormal
 *  results. |f| >= 65520 (the midpoint between 65504 and 2^16) becomes +-inf; inf stays inf.
 *  A NaN stays NaN with sign and the top 10 payload bits kept (so every half NaN survives
 *  fp16 -> fp32 -> fp16 bit for bit); a NaN whose kept bits are all zero becomes quiet. */
uint16_t mcl_fp32_to_fp16(float f);

/* ---------------------------------------------------------------------------------------
 * K-quant scale packing (Q4_K and Q5_K), ggml's get_scale_min_k4 layout.
 * ------------------------------------------------------------------------------------- */

/** Read sub-block j's (0..7) 6-bit scale and min from the 12-byte array:
 *  j < 4: sc = s[j] & 63, m = s[j + 4] & 63;
 *  j >= 4: sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, m = (s[j + 4] >> 4) | (s[j] >> 6) << 4. */
void mcl_k_scale_min_get(const uint8_t scales[MCL_K_SCALE_SIZE], int j, uint8_t *sc,
                         uint8_t *m);

/** Write sub-block j's scale and min (each 0..63; higher bits are ignored) into the array,
 *  leaving the bits of the other sub-blocks untouched. */
void mcl_k_scale_min_set(uint8_t scales[MCL_K_SCALE_SIZE], int j, unsigned sc, unsigned m);

/* ---------------------------------------------------------------------------------------
 * Rows
 * ------------------------------------------------------------------------------------- */

/** Bytes that n weights of `type` occupy: n / block weights * block bytes, as the data-type
 *  table (core/dtype.h) gives them. 0 when `type` is not a block type, n is negative or not
 *  a multiple of the block size, or the size does not fit in size_t. (n == 0 also gives 0,
 *  which is then the right answer.) */
size_t mcl_quant_row_size(mcl_dtype type, int64_t n);

/** Quantize n floats into mcl_quant_row_size(type, n) bytes at `blocks`.
 *  Returns an mcl_status value: MCL_SUCCESS; MCL_ERROR_UNSUPPORTED for a non-block type;
 *  MCL_ERROR_INVALID_ARGUMENT when a pointer is NULL (n > 0), n is negative or not a
 *  multiple of the block size, or some x[i] is not finite or exceeds the type's
 *  MCL_*_MAX_ABS. On error nothing is written.
 *
 *  Q8_0 and Q4_0 reproduce ggml's reference quantizer (quantize_row_q8_0_ref /
 *  quantize_row_q4_0_ref) byte for byte when the compiler does not contract x*id + c into
 *  a fused multiply-add (the default under -std=c11). The K-quants use the min-max method
 *  documented in k_quants.c, not ggml's weighted search: different bytes, same format.
 *
 *  Error bounds per element (y the dequantized value). d, dmin, sc[s], m[s] are the values
 *  stored in the block, d32 the float scale before its rounding to fp16:
 *    Q8_0: |x - y| <= d32/2 + 127*|d32 - d|, d32 = amax/127 (at most ~0.563*d32).
 *    Q4_0: d32 = max/-8 with max the signed value of largest magnitude.
 *          |x - y| <= |d32|/2 + 8*|d32 - d| where x/d32 + 8.5 < 16; elsewhere (elements
 *          of the other sign above 15/16 of |max|, clipped to code 15 as in ggml)
 *          |x - y| <= |d32| + 8*|d32 - d|.
 *    Q4_K, Q5_K (nmax = 15, 31): |x - y| <= D/2 with D = d*sc[s], nothing clips, and
 *          D < (hi_s - lo_s + dmin)/nmax + d, where hi_s = max, lo_s = min(min, 0) of
 *          sub-block s and d ~= max_s(hi_s - lo_s + dmin)/(63*nmax).
 *    Q6_K: |x - y| <= D/2 with D = d*sc[s] < amax_s/31 + d, d ~= max_s amax_s/(127*31).
 *  Each up to float rounding (a few ulp of the block's largest |x|). */
int mcl_quantize_row(mcl_dtype type, const float *x, void *blocks, int64_t n);

/** Dequantize n weights of `type` from `blocks` into y[0..n). Returns MCL_SUCCESS,
 *  MCL_ERROR_UNSUPPORTED (non-block type) or MCL_ERROR_INVALID_ARGUMENT (NULL pointer with
 *  n > 0, n negative or not a multiple of the block size). Any bytes are accepted: a block
 *  whose fp16 scale is inf or NaN gives inf/NaN outputs, never a crash.
 *  Every product in the formulas is exact in float; only the final subtraction of Q4_K /
 *  Q5_K (d*sc*q - dmin*m) rounds, once, so the results do not depend on evaluation order or
 *  on FMA contraction. */
int mcl_dequantize_row(mcl_dtype type, const void *blocks, float *y, int64_t n);

/* ---------------------------------------------------------------------------------------
 * The device layout (docs/quant-formats.md, "On the device"). Q8_0, Q4_0 and Q6_K keep each
 * block's 2-byte d apart on the device, so that every block body (the block less its d: 32,
 * 16, 208 bytes) starts at a multiple of 16 bytes: a tensor of B blocks holds the B bodies
 * from byte 0 and then the B d values, 2 bytes each, in block order. Q4_K and Q5_K blocks are
 * stored as they are. Users see GGUF bytes: uploads split them into this layout and
 * downloads merge them back, for any byte range.
 * ------------------------------------------------------------------------------------- */

/** How `type` is laid out on the device; `split` is 0 for a type stored as GGUF stores it. */
typedef struct mcl_quant_layout {
    uint32_t block_bytes; /* GGUF bytes per block */
    uint32_t body_bytes;  /* bytes per block in the body area (block_bytes when not split) */
    uint32_t d_at;        /* split: offset of d inside the GGUF block (0, or block_bytes - 2) */
    int split;
} mcl_quant_layout;

/** The layout of `type`; 0 (and *out zeroed) for a type that is not a block type. */
int mcl_quant_layout_of(mcl_dtype type, mcl_quant_layout *out);

/** Where GGUF bytes [offset, offset + bytes) of a split tensor of `blocks` blocks lie on the
 *  device: body bytes [*body_at, *body_at + *body_bytes) and d bytes [*d_at, *d_at +
 *  *d_bytes), both device offsets (the d area begins at blocks * body_bytes). Either part
 *  may be empty. */
void mcl_quant_device_ranges(const mcl_quant_layout *l, uint64_t blocks, uint64_t offset,
                             uint64_t bytes, uint64_t *body_at, uint64_t *body_bytes,
                             uint64_t *d_at, uint64_t *d_bytes);

/** GGUF bytes [offset, offset + bytes) of a split tensor (`gguf`, `bytes` long) to their
 *  device form in `dev` (`bytes` long): the body bytes first, then the d bytes, each part in
 *  the order mcl_quant_device_ranges gives. */
void mcl_quant_split(const mcl_quant_layout *l, uint64_t offset, const void *gguf,
                     uint64_t bytes, void *dev);

/** mcl_quant_split with the body bytes written at `body` and the d bytes at `d` (a mapped
 *  tensor's two ranges, for one). */
void mcl_quant_split_to(const mcl_quant_layout *l, uint64_t offset, const void *gguf,
                        uint64_t bytes, void *body, void *d);

/** The inverse of mcl_quant_split: `dev` (body bytes, then d bytes) back to GGUF bytes. */
void mcl_quant_merge(const mcl_quant_layout *l, uint64_t offset, const void *dev,
                     uint64_t bytes, void *gguf);

#endif
