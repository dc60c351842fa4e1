/* Text built into a caller's buffer, snprintf-style: what does not fit is counted, not
 * written, so the caller learns the whole length (the JSON dumps). */
#ifndef MCL_CORE_TEXT_H
#define MCL_CORE_TEXT_H

#include <stddef.h>

#include "log.h"

typedef struct mcl_text {
    char *buf;  /* may be NULL when cap is 0 */
    size_t cap; /* bytes of buf */
    size_t len; /* characters the whole text needs so far */
} mcl_text;

/* Append printf-style; buf stays terminated while the text fits, and is cut (terminated) at
 * cap - 1 characters when it does not. */
void mcl_text_put(mcl_text *t, const char *fmt, ...) MCL_PRINTF(2, 3);

#endif
