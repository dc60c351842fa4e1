/* Per-format workers behind mcl_quantize_row() / mcl_dequantize_row(). They take a count of
 * whole blocks and trust their arguments: quant.c validates them first. */
#ifndef MCL_QUANT_INTERNAL_H
#define MCL_QUANT_INTERNAL_H

#include "quant/quant.h"

void mcl_q8_0_quantize(const float *x, void *blocks, int64_t nblocks);
void mcl_q8_0_dequantize(const void *blocks, float *y, int64_t nblocks);

void mcl_q4_0_quantize(const float *x, void *blocks, int64_t nblocks);
void mcl_q4_0_dequantize(const void *blocks, float *y, int64_t nblocks);

void mcl_q4_k_quantize(const float *x, void *blocks, int64_t nblocks);
void mcl_q4_k_dequantize(const void *blocks, float *y, int64_t nblocks);

void mcl_q5_k_quantize(const float *x, void *blocks, int64_t nblocks);
void mcl_q5_k_dequantize(const void *blocks, float *y, int64_t nblocks);

void mcl_q6_k_quantize(const float *x, void *blocks, int64_t nblocks);
void mcl_q6_k_dequantize(const void *blocks, float *y, int64_t nblocks);

#endif
