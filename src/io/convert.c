/* The 16-bit float to f32 conversions of convert.h. f16 reuses src/quant's exact
 * mcl_fp16_to_fp32; bf16 needs no arithmetic at all. */
#include "io/convert.h"

#include <string.h>

#include "quant/quant.h"

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void mcl_convert_f16_to_f32(const void *src, float *dst, uint64_t n)
{
    const unsigned char *s = src;
    for (uint64_t i = 0; i < n; i++)
        dst[i] = mcl_fp16_to_fp32((uint16_t)(s[2 * i] | s[2 * i + 1] << 8));
}

void mcl_convert_bf16_to_f32(const void *src, float *dst, uint64_t n)
{
    const unsigned char *s = src;
    for (uint64_t i = 0; i < n; i++)
        dst[i] = bits_to_float((uint32_t)s[2 * i] << 16 | (uint32_t)s[2 * i + 1] << 24);
}

void mcl_convert_f32_to_f32(const void *src, float *dst, uint64_t n)
{
    const unsigned char *s = src;
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *e = s + 4 * i;
        dst[i] = bits_to_float((uint32_t)e[0] | (uint32_t)e[1] << 8 | (uint32_t)e[2] << 16 |
                               (uint32_t)e[3] << 24);
    }
}
