/* Operations the library uses itself and the test suites reach through the static library,
 * but which are not part of the public API. */
#ifndef MCL_OPS_INTERNAL_H
#define MCL_OPS_INTERNAL_H

#include "motifcl.h"

/* Fill a 4-byte-element tensor with mcl_hash(seed ^ mcl_hash(i)) for word i: a pattern
 * distinct per tensor and per word, for no-aliasing checks. */
mcl_status mcl_fill_pattern(mcl_context *ctx, mcl_tensor *tensor, uint32_t seed);

#endif
