/* What the tools and the test suites share beyond the library: GPU-written test patterns. */
#ifndef MCL_SUPPORT_PATTERN_H
#define MCL_SUPPORT_PATTERN_H

#include <stdint.h>

#include "motifcl.h"
#include "core/hash.h"

/* Fill a 4-byte-element tensor with mcl_hash(seed ^ mcl_hash(i)) for word i: a pattern
 * distinct per tensor and per word, for no-aliasing checks. */
mcl_status mcl_fill_pattern(mcl_context *ctx, mcl_tensor *tensor, uint32_t seed);

/* The same into the words of any tensor whose bytes are a multiple of 4 (a bytes view of a
 * block-quantised one), except that where stride > 0 every word i with i % stride == 0 is
 * `value` (stride 1: every word). Below 2^32 words. */
mcl_status mcl_fill_pattern_ex(mcl_context *ctx, mcl_tensor *tensor, uint32_t seed,
                               uint32_t stride, uint32_t value);

/* mcl_fill_pattern_ex with random signs: a word that is `value` has the bits of `signs`
 * flipped where that word's hash has them set, or all of them where its bit 0 is (whole). */
mcl_status mcl_fill_pattern_signed(mcl_context *ctx, mcl_tensor *tensor, uint32_t seed,
                                   uint32_t stride, uint32_t value, uint32_t signs, int whole);

/* An f32 tensor's element i: (h / 2^23 - 1) * scale for h = mcl_hash(seed ^ mcl_hash(i)) >> 8,
 * uniform in [-scale, scale); the CPU's value below is the GPU's bit for bit where scale is a
 * power of two. */
mcl_status mcl_fill_uniform(mcl_context *ctx, mcl_tensor *tensor, uint32_t seed, float scale);

static inline float mcl_pattern_uniform(uint32_t seed, uint32_t i, float scale)
{
    uint32_t h = mcl_hash32(seed ^ mcl_hash32(i)) >> 8;
    return ((float)h * (1.0f / 8388608.0f) - 1.0f) * scale;
}

/* Word i of that pattern, computed on the CPU. */
static inline uint32_t mcl_pattern_word(uint32_t seed, uint32_t i, uint32_t stride,
                                        uint32_t value)
{
    return stride && i % stride == 0 ? value : mcl_hash32(seed ^ mcl_hash32(i));
}

/* Word i of mcl_fill_pattern_signed's pattern, computed on the CPU. */
static inline uint32_t mcl_pattern_word_signed(uint32_t seed, uint32_t i, uint32_t stride,
                                               uint32_t value, uint32_t signs, int whole)
{
    uint32_t h = mcl_hash32(seed ^ mcl_hash32(i));
    uint32_t flip = whole ? ((h & 1u) ? signs : 0u) : h & signs;
    return stride && i % stride == 0 ? value ^ flip : h;
}

#endif
