/* CPU reference implementations that the device suites compare against. Written for
 * clarity, not speed: a reference must be obviously right. */
#ifndef MCL_TEST_REF_H
#define MCL_TEST_REF_H

#include <stddef.h>
#include <stdint.h>

/* y[i] = a[i] + b[i] */
void ref_add_f32(const float *a, const float *b, float *y, size_t n);

/* The integer hash of shaders/hash.glsl. */
uint32_t ref_hash(uint32_t x);

/* What mcl_fill_pattern writes into word i. */
static inline uint32_t ref_pattern(uint32_t seed, uint32_t i)
{
    return ref_hash(seed ^ ref_hash(i));
}

#endif
