/* Q4_0: blocks of 32 weights, one fp16 scale and 16 bytes of 4-bit quants; y = d * (q - 8).
 * Element j < 16 sits in the low nibble of qs[j], element j + 16 in its high nibble.
 *
 * Quantization follows ggml's reference (quantize_row_q4_0_ref): the value of largest
 * magnitude, max (with its sign), maps to q = 0 via d = max / -8, so it is reproduced up to
 * the fp16 rounding of d; q = min(15, trunc(x / d + 8.5)), i.e. round half up on the
 * 0..16 grid with 16 clipped to 15. Values of the other sign whose magnitude exceeds
 * 15/16 of |max| are clipped to 7 * d, an error of up to |d| (see quant.h). */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

/* The 4-bit code of x against inverse scale id, as ggml computes it. */
static uint8_t q4_0_code(float x, float id)
{
    float v = x * id + 8.5f;
    /* v lies in [0.5, 16.5] up to rounding; clamping in float keeps the conversion defined
     * whatever the rounding and equals ggml's MIN(15, (int8_t)v) on that range. */
    v = fminf(15.0f, fmaxf(0.0f, v));
    return (uint8_t)v; /* truncation, as in ggml */
}

void mcl_q4_0_quantize(const float *x, void *blocks, int64_t nblocks)
{
    unsigned char *out = blocks;
    for (int64_t b = 0; b < nblocks; b++, x += MCL_QK4_0) {
        /* First element of largest magnitude, with its sign (ties keep the earliest). */
        float amax = 0.0f;
        float max = 0.0f;
        for (int j = 0; j < MCL_QK4_0; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }

        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;

        mcl_block_q4_0 blk;
        blk.d = mcl_fp32_to_fp16(d);
        for (int j = 0; j < MCL_QK4_0 / 2; j++) {
            uint8_t lo = q4_0_code(x[j], id);
            uint8_t hi = q4_0_code(x[j + MCL_QK4_0 / 2], id);
            blk.qs[j] = (uint8_t)(lo | hi << 4);
        }
        memcpy(out + b * MCL_BLOCK_Q4_0_BYTES, &blk, sizeof blk);
    }
}

void mcl_q4_0_dequantize(const void *blocks, float *y, int64_t nblocks)
{
    const unsigned char *in = blocks;
    for (int64_t b = 0; b < nblocks; b++, y += MCL_QK4_0) {
        mcl_block_q4_0 blk;
        memcpy(&blk, in + b * MCL_BLOCK_Q4_0_BYTES, sizeof blk);
        const float d = mcl_fp16_to_fp32(blk.d);
        for (int j = 0; j < MCL_QK4_0 / 2; j++) {
            y[j] = (float)((blk.qs[j] & 0x0f) - 8) * d;
            y[j + MCL_QK4_0 / 2] = (float)((blk.qs[j] >> 4) - 8) * d;
        }
    }
}
