/* snprintf-style text into a caller's buffer (text.h). */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

mcl_status mcl_text_fail(char *why, size_t why_size, mcl_status status, const char *fmt, ...)
{
    if (why && why_size) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(why, why_size, fmt, args);
        va_end(args);
    }
    return status;
}

void mcl_text_show(const char *s, size_t len, size_t max, char *buf, size_t size)
{
    size_t n = len < max ? len : max;
    if (n + 4 > size)
        n = size - 4;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    strcpy(buf + n, len > n ? "..." : "");
}
