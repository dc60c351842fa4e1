/* What the tools and the test suites share beyond the library: GPU-written test patterns. */
#ifndef MCL_SUPPORT_PATTERN_H
#define MCL_SUPPORT_PATTERN_H

#include "motifcl.h"

/* Fill a 4-byte-element tensor with mcl_hash(seed ^ mcl_hash(i)) for word i: a pattern
 * distinct per tensor and per word, for no-aliasing checks. */
mcl_status mcl_fill_pattern(mcl_context *ctx, mcl_tensor *tensor, uint32_t seed);

#endif
