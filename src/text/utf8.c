/* UTF-8 decoding and encoding, code point classes, texts as code point arrays, and GPT-2's
 * byte-to-unicode alphabet. */
#include <stdlib.h>

#include "text/text_internal.h"
#include "core/alloc.h"

/* Classes of ASCII, the common case, without a search. */
static int ascii_class(uint32_t cp)
{
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D))
        return MCL_CP_SPACE;
    if (cp >= '0' && cp <= '9')
        return MCL_CP_NUMBER;
    if ((cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z'))
        return MCL_CP_LETTER;
    return MCL_CP_OTHER;
}

int mcl_cp_class(uint32_t cp)
{
    if (cp < 0x80)
        return ascii_class(cp);
    size_t lo = 0, hi = mcl_cp_range_count; /* the range holding cp is in [lo, hi) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < mcl_cp_ranges[mid].first)
            hi = mid;
        else if (cp > mcl_cp_ranges[mid].last)
            lo = mid + 1;
        else
            return mcl_cp_ranges[mid].cls;
    }
    return MCL_CP_OTHER;
}

size_t mcl_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned b0 = s[0];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    size_t len;
    uint32_t min, v;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2, min = 0x80, v = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3, min = 0x800, v = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4, min = 0x10000, v = b0 & 0x07;
    } else {
        *cp = MCL_CP_INVALID; /* continuation byte, 0xC0/0xC1, 0xF5.. */
        return 1;
    }
    if (n < len) {
        *cp = MCL_CP_INVALID;
        return 1;
    }
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) {
            *cp = MCL_CP_INVALID;
            return 1;
        }
        v = (v << 6) | (s[k] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = MCL_CP_INVALID;
        return 1;
    }
    *cp = v;
    return len;
}

size_t mcl_utf8_put(uint32_t cp, unsigned char out[4])
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int mcl_cps_decode(mcl_cps *c, const char *text, size_t len)
{
    /* At most one code point per byte. */
    if (len + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 64;
        while (cap < len + 1)
            cap *= 2;
        uint32_t *cp = mcl_mem_realloc(c->cp, cap * sizeof *cp);
        if (!cp)
            return 0;
        c->cp = cp;
        uint8_t *cls = mcl_mem_realloc(c->cls, cap * sizeof *cls);
        if (!cls)
            return 0;
        c->cls = cls;
        uint32_t *off = mcl_mem_realloc(c->off, (cap + 1) * sizeof *off);
        if (!off)
            return 0;
        c->off = off;
        c->cap = cap;
    }
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, n = 0;
    while (i < len) {
        uint32_t cp;
        size_t k = mcl_utf8_next(s + i, len - i, &cp);
        c->cp[n] = cp;
        c->cls[n] = (uint8_t)mcl_cp_class(cp);
        c->off[n] = (uint32_t)i;
        n++;
        i += k;
    }
    c->off[n] = (uint32_t)len;
    c->n = n;
    return 1;
}

void mcl_cps_free(mcl_cps *c)
{
    mcl_mem_free(c->cp);
    mcl_mem_free(c->cls);
    mcl_mem_free(c->off);
    c->cp = NULL;
    c->cls = NULL;
    c->off = NULL;
    c->n = c->cap = 0;
}

static int gpt2_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t mcl_gpt2_byte_to_cp(unsigned byte)
{
    if (gpt2_printable(byte))
        return byte;
    /* The 68 others in byte order: 0x00..0x20 (33), 0x7F..0xA0 (34), 0xAD. */
    if (byte <= 0x20)
        return 0x100 + byte;
    if (byte <= 0xA0)
        return 0x100 + 33 + (byte - 0x7F);
    return 0x100 + 67;
}

int mcl_gpt2_cp_to_byte(uint32_t cp)
{
    if (cp < 0x100)
        return gpt2_printable(cp) ? (int)cp : -1;
    if (cp < 0x100 + 33)
        return (int)(cp - 0x100);
    if (cp < 0x100 + 67)
        return (int)(cp - 0x100 - 33 + 0x7F);
    if (cp == 0x100 + 67)
        return 0xAD;
    return -1;
}
