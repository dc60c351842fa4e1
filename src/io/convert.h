/* Element conversions the model loaders need on the host: the 16-bit float formats of
 * checkpoint files (IEEE binary16 "F16", bfloat16 "BF16") into f32, over buffers.
 *
 * Sources are little-endian element bytes at any alignment (a tensor inside a mapped file);
 * the results do not depend on the host's byte order or FPU modes. Both conversions are
 * exact: every f16 and every bf16 value is an f32 value (f16 through src/quant's
 * mcl_fp16_to_fp32; bf16 is the top 16 bits of an f32). Pure, safe from any thread. src and
 * dst must not overlap. n == 0 does nothing (and the pointers may then be NULL). Internal. */
#ifndef MCL_IO_CONVERT_H
#define MCL_IO_CONVERT_H

#include <stdint.h>

/* n binary16 values at src (2n bytes) into dst[0..n). */
void mcl_convert_f16_to_f32(const void *src, float *dst, uint64_t n);

/* n bfloat16 values at src (2n bytes) into dst[0..n): bits << 16, NaN payloads and signed
 * zeros kept. */
void mcl_convert_bf16_to_f32(const void *src, float *dst, uint64_t n);

/* n f32 values at src (4n little-endian bytes, any alignment) into dst[0..n). */
void mcl_convert_f32_to_f32(const void *src, float *dst, uint64_t n);

#endif
