/* IEEE 754 binary16 <-> binary32 conversion done on the bit patterns, so the result is the
 * same on every host whatever its FPU, rounding mode or flush-to-zero setting.
 *
 * binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
 * binary32: 1 sign bit, 8 exponent bits (bias 127), 23 mantissa bits.
 * Every half is exactly a float; the other way rounds to nearest, ties to even. */
#include <string.h>

#include "quant/quant.h"

#define F32_EXP_MASK 0x7f800000u
#define F32_ABS_MASK 0x7fffffffu
#define F16_EXP_MASK 0x7c00u
#define F16_MAN_MASK 0x03ffu
#define F16_QUIET_BIT 0x0200u
#define EXP_BIAS_DIFF 112u /* 127 - 15 */
#define F32_MIN_NORMAL_HALF 0x38800000u /* 2^-14, the smallest normal half, as float bits */
#define F32_HALF_OVERFLOW 0x477ff000u   /* 65520: halfway between 65504 and 2^16 */
#define F32_HALF_TINY_TIE 0x33000000u   /* 2^-25: halfway between 0 and the least subnormal */

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float mcl_fp16_to_fp32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h & F16_EXP_MASK) >> 10;
    uint32_t man = h & F16_MAN_MASK;

    if (exp == 0x1f) /* inf or NaN: keep the payload in the top mantissa bits */
        return bits_float(sign | F32_EXP_MASK | man << 13);
    if (exp != 0)
        return bits_float(sign | (exp + EXP_BIAS_DIFF) << 23 | man << 13);
    if (man == 0)
        return bits_float(sign);

    /* Subnormal half: man * 2^-24. Normalise so that the leading 1 becomes implicit. */
    int e = -14;
    while (!(man & 0x400u)) {
        man <<= 1;
        e--;
    }
    man &= F16_MAN_MASK;
    return bits_float(sign | (uint32_t)(e + 127) << 23 | man << 13);
}

/* Shift `value` right by `shift` (1..31) bits, rounding to nearest with ties to even. */
static uint32_t shift_round_even(uint32_t value, unsigned shift)
{
    uint32_t kept = value >> shift;
    uint32_t rest = value & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    return kept;
}

uint16_t mcl_fp32_to_fp16(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & F32_ABS_MASK;

    if (a > F32_EXP_MASK) { /* NaN: keep the top payload bits; never let it become inf */
        uint16_t man = (uint16_t)((a >> 13) & F16_MAN_MASK);
        return (uint16_t)(sign | F16_EXP_MASK | (man ? man : F16_QUIET_BIT));
    }
    if (a >= F32_HALF_OVERFLOW) /* includes inf */
        return (uint16_t)(sign | F16_EXP_MASK);
    if (a >= F32_MIN_NORMAL_HALF) {
        /* Rebias the exponent and round the 23-bit mantissa to 10 bits. A carry out of the
         * mantissa correctly increments the exponent (65504 < a < 65520 cannot carry). */
        return (uint16_t)(sign | shift_round_even(a - (EXP_BIAS_DIFF << 23), 13));
    }
    if (a <= F32_HALF_TINY_TIE) /* rounds to zero; the tie at 2^-25 goes to even (0) */
        return sign;

    /* Subnormal result: the value is (1.man) * 2^(exp - 127); in units of 2^-24 that is the
     * 24-bit significand shifted right by 126 - exp (14..24 here). Rounding up to 0x400
     * yields the smallest normal half, which is the right encoding. */
    uint32_t exp = a >> 23;
    uint32_t significand = (a & 0x007fffffu) | 0x00800000u;
    return (uint16_t)(sign | shift_round_even(significand, 126u - exp));
}
