/* snprintf-style text into a caller's buffer (text.h). */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>

void mcl_text_put(mcl_text *t, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    int n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, args);
    va_end(args);
    if (n > 0)
        t->len += (size_t)n;
}
