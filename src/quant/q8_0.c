/* Q8_0: blocks of 32 weights, one fp16 scale and 32 signed bytes; y = d * q.
 *
 * Quantization follows ggml's reference (quantize_row_q8_0_ref) so that the bytes match
 * files made by llama.cpp: d = amax / 127 in float, q = round-half-away(x / d) computed as
 * x * (1/d), then d is stored rounded to fp16. Because q is chosen against the float d and
 * decoded with the fp16 one, the error bound is d/2 + 127 * |d - fp16(d)| (see quant.h). */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

void mcl_q8_0_quantize(const float *x, void *blocks, int64_t nblocks)
{
    unsigned char *out = blocks;
    for (int64_t b = 0; b < nblocks; b++, x += MCL_QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < MCL_QK8_0; j++)
            amax = fmaxf(amax, fabsf(x[j]));

        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;

        mcl_block_q8_0 blk;
        blk.d = mcl_fp32_to_fp16(d);
        for (int j = 0; j < MCL_QK8_0; j++) {
            /* |x * id| <= 127 up to one rounding of id, so the clamp only guards that ulp. */
            float q = roundf(x[j] * id);
            q = fminf(127.0f, fmaxf(-127.0f, q));
            blk.qs[j] = (int8_t)q;
        }
        memcpy(out + b * MCL_BLOCK_Q8_0_BYTES, &blk, sizeof blk);
    }
}

void mcl_q8_0_dequantize(const void *blocks, float *y, int64_t nblocks)
{
    const unsigned char *in = blocks;
    for (int64_t b = 0; b < nblocks; b++, y += MCL_QK8_0) {
        mcl_block_q8_0 blk;
        memcpy(&blk, in + b * MCL_BLOCK_Q8_0_BYTES, sizeof blk);
        const float d = mcl_fp16_to_fp32(blk.d);
        for (int j = 0; j < MCL_QK8_0; j++)
            y[j] = (float)blk.qs[j] * d;
    }
}
