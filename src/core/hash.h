/* The 32-bit integer hash of shaders/hash.glsl, for the host side of what a kernel hashes
 * (the sampler's keys, the tools' test patterns). tests/ref keeps its own copy on purpose: a
 * reference written apart from the code it checks. */
#ifndef MCL_CORE_HASH_H
#define MCL_CORE_HASH_H

#include <stdint.h>

static inline uint32_t mcl_hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

#endif
