/* The tokens of the strict JSON parser (json.h): strings (escapes, surrogate pairs, UTF-8
 * validation), numbers (grammar, exact integers, locale-independent doubles), literals, and
 * the error messages with byte offsets. The tree is built in json.c. */
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_internal.h"
#include "core/alloc.h"

/* Exponents beyond this are saturated while reading the exact integer (any such number is
 * either 0 or far outside int64, and the double comes from strtod). */
#define EXPONENT_CAP 1000000000LL
/* Decimal digits of the largest integer that int64 can hold in magnitude (2^63 ~ 9.2e18). */
#define INT64_MAX_DIGITS 19
/* Integers up to 2^53 in magnitude are doubles exactly, so they need no strtod. */
#define EXACT_DOUBLE_INT (INT64_C(1) << 53)
/* Longest number text converted from a stack buffer; longer ones use the heap. */
#define NUMBER_STACK_BYTES 64

/* --- Errors ------------------------------------------------------------------------------ */

static void describe_byte(const mcl_json_parser *ps, uint64_t at, char *buf, size_t n)
{
    if (at >= ps->size) {
        snprintf(buf, n, "the end of the input");
        return;
    }
    unsigned c = ps->p[at];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, n, "'%c'", (char)c);
    else
        snprintf(buf, n, "byte 0x%02x", c);
}

/* Record a malformed document: "byte N: <message>". Returns 0 so callers can return it. */
int mcl_json_fail_at(mcl_json_parser *ps, uint64_t at, const char *fmt, ...)
{
    ps->status = MCL_ERROR_INVALID_ARGUMENT;
    if (ps->why && ps->why_size) {
        int n = snprintf(ps->why, ps->why_size, "byte %" PRIu64 ": ", at);
        if (n >= 0 && (size_t)n < ps->why_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->why + n, ps->why_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return 0;
}

/* "expected <what>, found <the byte at pos>". */
int mcl_json_expected(mcl_json_parser *ps, const char *what)
{
    char found[32];
    describe_byte(ps, ps->pos, found, sizeof found);
    return mcl_json_fail_at(ps, ps->pos, "expected %s, found %s", what, found);
}

int mcl_json_out_of_memory(mcl_json_parser *ps)
{
    ps->status = MCL_ERROR_OUT_OF_HOST_MEMORY;
    if (ps->why && ps->why_size)
        snprintf(ps->why, ps->why_size, "out of host memory at byte %" PRIu64, ps->pos);
    return 0;
}

/* --- Whitespace, literals ---------------------------------------------------------------- */

void mcl_json_skip_ws(mcl_json_parser *ps)
{
    while (ps->pos < ps->size) {
        unsigned char c = ps->p[ps->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        ps->pos++;
    }
}

int mcl_json_lex_literal(mcl_json_parser *ps, const char *word)
{
    size_t n = strlen(word);
    uint64_t start = ps->pos;
    for (size_t i = 0; i < n; i++) {
        if (start + i >= ps->size || ps->p[start + i] != (unsigned char)word[i]) {
            ps->pos = start + i;
            char what[32];
            snprintf(what, sizeof what, "'%c' of \"%s\"", word[i], word);
            return mcl_json_expected(ps, what);
        }
    }
    ps->pos = start + n;
    return 1;
}

/* --- Strings ----------------------------------------------------------------------------- */

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at pos (after "\u"); -1 with the error recorded. */
static long read_hex4(mcl_json_parser *ps)
{
    long value = 0;
    for (int i = 0; i < 4; i++) {
        int h = ps->pos < ps->size ? hex_value(ps->p[ps->pos]) : -1;
        if (h < 0) {
            mcl_json_expected(ps, "a hex digit in a \\u escape");
            return -1;
        }
        value = value * 16 + h;
        ps->pos++;
    }
    return value;
}

static void put_utf8(mcl_json_parser *ps, unsigned long cp)
{
    char *o = ps->pool + ps->pool_len;
    if (cp < 0x80) {
        o[0] = (char)cp;
        ps->pool_len += 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        ps->pool_len += 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        ps->pool_len += 3;
    } else {
        o[0] = (char)(0xf0 | cp >> 18);
        o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[3] = (char)(0x80 | (cp & 0x3f));
        ps->pool_len += 4;
    }
}

/* An escape after the backslash at pos - 1; its bytes go to the pool. */
static int parse_escape(mcl_json_parser *ps)
{
    uint64_t at = ps->pos - 1;
    if (ps->pos >= ps->size)
        return mcl_json_expected(ps, "an escape character after '\\'");
    unsigned char c = ps->p[ps->pos++];
    char simple = 0;
    switch (c) {
    case '"': simple = '"'; break;
    case '\\': simple = '\\'; break;
    case '/': simple = '/'; break;
    case 'b': simple = '\b'; break;
    case 'f': simple = '\f'; break;
    case 'n': simple = '\n'; break;
    case 'r': simple = '\r'; break;
    case 't': simple = '\t'; break;
    case 'u': break;
    default:
        ps->pos--;
        return mcl_json_expected(ps, "one of \" \\ / b f n r t u after '\\'");
    }
    if (simple) {
        ps->pool[ps->pool_len++] = simple;
        return 1;
    }
    long cp = read_hex4(ps);
    if (cp < 0)
        return 0;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return mcl_json_fail_at(ps, at, "unpaired low surrogate \\u%04lx", (unsigned long)cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (ps->size - ps->pos < 2 || ps->p[ps->pos] != '\\' || ps->p[ps->pos + 1] != 'u')
            return mcl_json_fail_at(ps, at, "high surrogate \\u%04lx not followed by a \\u low surrogate",
                           (unsigned long)cp);
        ps->pos += 2;
        long low = read_hex4(ps);
        if (low < 0)
            return 0;
        if (low < 0xdc00 || low > 0xdfff)
            return mcl_json_fail_at(ps, at, "high surrogate \\u%04lx followed by \\u%04lx, not a low "
                           "surrogate", (unsigned long)cp, (unsigned long)low);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    put_utf8(ps, (unsigned long)cp);
    return 1;
}

/* The length of the valid UTF-8 sequence at pos whose first byte is >= 0x80 (RFC 3629's
 * table: no overlong forms, no surrogates, nothing past U+10FFFF), or 0. */
static unsigned utf8_length(const mcl_json_parser *ps)
{
    const unsigned char *s = ps->p + ps->pos;
    uint64_t left = ps->size - ps->pos;
    unsigned char c = s[0];
    unsigned n;
    unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (left < n || s[1] < lo || s[1] > hi)
        return 0;
    for (unsigned i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* A string at pos (its opening quote), unescaped into the pool. */
int mcl_json_lex_string(mcl_json_parser *ps, const char **out, uint32_t *len)
{
    uint64_t start = ps->pos;
    ps->pos++;
    size_t begin = ps->pool_len;
    for (;;) {
        if (ps->pos >= ps->size)
            return mcl_json_fail_at(ps, start, "string not closed before the end of the input");
        unsigned char c = ps->p[ps->pos];
        if (c == '"') {
            ps->pos++;
            break;
        }
        if (c < 0x20)
            return mcl_json_fail_at(ps, ps->pos, "control character 0x%02x in a string (must be "
                           "escaped)", c);
        if (c == '\\') {
            ps->pos++;
            if (!parse_escape(ps))
                return 0;
            continue;
        }
        if (c < 0x80) {
            ps->pool[ps->pool_len++] = (char)c;
            ps->pos++;
            continue;
        }
        unsigned n = utf8_length(ps);
        if (!n)
            return mcl_json_fail_at(ps, ps->pos, "invalid UTF-8 in a string (byte 0x%02x)", c);
        memcpy(ps->pool + ps->pool_len, ps->p + ps->pos, n);
        ps->pool_len += n;
        ps->pos += n;
    }
    ps->pool[ps->pool_len++] = '\0';
    *out = ps->pool + begin;
    *len = (uint32_t)(ps->pool_len - 1 - begin);
    return 1;
}

/* --- Numbers ----------------------------------------------------------------------------- */

/* The span of a number's text, split into its parts. */
typedef struct number_text {
    uint64_t start, end;          /* the whole text */
    int negative;
    uint64_t int_begin, int_end;  /* digits before the point */
    uint64_t frac_begin, frac_end; /* digits after it (empty when none) */
    int64_t exponent;             /* saturated at +-EXPONENT_CAP */
} number_text;

static int is_digit(const mcl_json_parser *ps, uint64_t at)
{
    return at < ps->size && ps->p[at] >= '0' && ps->p[at] <= '9';
}

/* Check the grammar -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and find the parts. */
static int scan_number(mcl_json_parser *ps, number_text *t)
{
    memset(t, 0, sizeof *t);
    t->start = ps->pos;
    if (ps->p[ps->pos] == '-') {
        t->negative = 1;
        ps->pos++;
    }
    if (!is_digit(ps, ps->pos))
        return mcl_json_expected(ps, "a digit in a number");
    t->int_begin = ps->pos;
    if (ps->p[ps->pos] == '0') {
        ps->pos++;
        if (is_digit(ps, ps->pos))
            return mcl_json_fail_at(ps, t->int_begin, "leading zero in a number");
    } else {
        while (is_digit(ps, ps->pos))
            ps->pos++;
    }
    t->int_end = ps->pos;
    t->frac_begin = t->frac_end = ps->pos;
    if (ps->pos < ps->size && ps->p[ps->pos] == '.') {
        ps->pos++;
        if (!is_digit(ps, ps->pos))
            return mcl_json_expected(ps, "a digit after the decimal point");
        t->frac_begin = ps->pos;
        while (is_digit(ps, ps->pos))
            ps->pos++;
        t->frac_end = ps->pos;
    }
    if (ps->pos < ps->size && (ps->p[ps->pos] == 'e' || ps->p[ps->pos] == 'E')) {
        ps->pos++;
        int negative = 0;
        if (ps->pos < ps->size && (ps->p[ps->pos] == '+' || ps->p[ps->pos] == '-'))
            negative = ps->p[ps->pos++] == '-';
        if (!is_digit(ps, ps->pos))
            return mcl_json_expected(ps, "a digit in the exponent");
        int64_t e = 0;
        while (is_digit(ps, ps->pos)) {
            if (e < EXPONENT_CAP)
                e = e * 10 + (ps->p[ps->pos] - '0');
            ps->pos++;
        }
        t->exponent = negative ? -e : e;
    }
    t->end = ps->pos;
    return 1;
}

/* Digit k of the number's digits before and after the point, taken as one string. */
static int digit_at(const mcl_json_parser *ps, const number_text *t, uint64_t k)
{
    uint64_t n_int = t->int_end - t->int_begin;
    uint64_t at = k < n_int ? t->int_begin + k : t->frac_begin + (k - n_int);
    return ps->p[at] - '0';
}

/* The exact integer the text denotes, when it is one and fits int64. */
static int exact_int(const mcl_json_parser *ps, const number_text *t, int64_t *out)
{
    uint64_t n_int = t->int_end - t->int_begin, n_frac = t->frac_end - t->frac_begin;
    uint64_t n = n_int + n_frac, first = 0, last = n;
    while (first < n && digit_at(ps, t, first) == 0)
        first++;
    if (first == n) {
        *out = 0;
        return 1;
    }
    while (digit_at(ps, t, last - 1) == 0)
        last--;
    /* value = digits[first, last) * 10^scale */
    int64_t scale = t->exponent - (int64_t)n_frac + (int64_t)(n - last);
    if (scale < 0 || (int64_t)(last - first) + scale > INT64_MAX_DIGITS)
        return 0;
    uint64_t v = 0; /* at most 19 digits: below 10^19 < 2^64 */
    for (uint64_t k = first; k < last; k++)
        v = v * 10 + (uint64_t)digit_at(ps, t, k);
    for (int64_t s = 0; s < scale; s++)
        v *= 10;
    if (t->negative) {
        if (v > (uint64_t)INT64_MAX + 1)
            return 0;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return 0;
        *out = (int64_t)v;
    }
    return 1;
}

/* The nearest double, through strtod on a copy whose '.' is the locale's decimal point (the
 * grammar is already checked, so strtod sees a plain decimal number). */
static int to_double(mcl_json_parser *ps, const number_text *t, double *out)
{
    const char *point = ".";
    const struct lconv *lc = localeconv();
    if (lc && lc->decimal_point && lc->decimal_point[0])
        point = lc->decimal_point;
    size_t point_len = strlen(point);
    uint64_t text_len = t->end - t->start;
    if (text_len > SIZE_MAX - point_len - 1)
        return mcl_json_out_of_memory(ps);
    size_t need = (size_t)text_len + point_len + 1;
    char stack[NUMBER_STACK_BYTES];
    char *buf = need <= sizeof stack ? stack : mcl_mem_malloc(need);
    if (!buf)
        return mcl_json_out_of_memory(ps);
    size_t o = 0;
    for (uint64_t i = t->start; i < t->end; i++) {
        if (ps->p[i] == '.') {
            memcpy(buf + o, point, point_len);
            o += point_len;
        } else {
            buf[o++] = (char)ps->p[i];
        }
    }
    buf[o] = '\0';
    double d = strtod(buf, NULL);
    if (buf != stack)
        mcl_mem_free(buf);
    if (isinf(d))
        return mcl_json_fail_at(ps, t->start, "number out of the range of a double");
    *out = d;
    return 1;
}

int mcl_json_lex_number(mcl_json_parser *ps, mcl_json_value *v)
{
    number_text t;
    if (!scan_number(ps, &t))
        return 0;
    int64_t i = 0;
    v->is_int = (uint8_t)exact_int(ps, &t, &i);
    if (v->is_int)
        v->x.i = i;
    if (v->is_int && i >= -EXACT_DOUBLE_INT && i <= EXACT_DOUBLE_INT)
        v->u.num = i == 0 && t.negative ? -0.0 : (double)i; /* exact: no rounding to do */
    else if (!to_double(ps, &t, &v->u.num))
        return 0;
    return 1;
}
