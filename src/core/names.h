/* The names of device features and quirks (motifcl-info's, MOTIFCL_DISABLE's and
 * MOTIFCL_FORCE's words), and the features each quirk switches off. */
#ifndef MCL_CORE_NAMES_H
#define MCL_CORE_NAMES_H

#include <stdint.h>

#include "motifcl.h"

/* The features a quirk bit switches off (0 for an unknown bit). */
uint64_t mcl_quirk_features(uint64_t quirk_bit);

#endif
