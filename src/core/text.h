/* Text built into a caller's buffer, snprintf-style: what does not fit is counted, not
 * written, so the caller learns the whole length (the JSON dumps). */
#ifndef MCL_CORE_TEXT_H
#define MCL_CORE_TEXT_H

#include <stddef.h>

#include "log.h"
#include "motifcl.h"

typedef struct mcl_text {
    char *buf;  /* may be NULL when cap is 0 */
    size_t cap; /* bytes of buf */
    size_t len; /* characters the whole text needs so far */
} mcl_text;

/* Append printf-style; buf stays terminated while the text fits, and is cut (terminated) at
 * cap - 1 characters when it does not. */
void mcl_text_put(mcl_text *t, const char *fmt, ...) MCL_PRINTF(2, 3);

/* Write a printf-style message into why (why_size bytes; may be NULL) and return status: how
 * the readers (src/io, src/text) report a refusal. */
mcl_status mcl_text_fail(char *why, size_t why_size, mcl_status status, const char *fmt, ...)
    MCL_PRINTF(4, 5);

/* Up to `max` bytes of s (len bytes) for a message into buf (size > 4 bytes): unprintable
 * bytes as '?', "..." when cut. */
void mcl_text_show(const char *s, size_t len, size_t max, char *buf, size_t size);

#endif
