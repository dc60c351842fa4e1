/* The pre-tokenizers of the byte-level BPE, written as scanners over code point classes (no
 * regex engine). Each finds the match that its regex, tried alternative by alternative at the
 * current position, would find; the text between matches is always empty for these regexes,
 * because their last alternatives take any whitespace and the others take everything else.
 * The regexes, as llama.cpp's llama-vocab.cpp and unicode.cpp give them:
 *
 *   gpt-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   llama-3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *             ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2:   the llama-3 regex with \p{N} in place of \p{N}{1,3}
 *
 * (?i:...) folds ASCII case only, as llama.cpp does. An invalid UTF-8 byte is one code point
 * of class "other". */
#include <stdlib.h>

#include "text/text_internal.h"
#include "core/alloc.h"

/* Length of the contraction ('s 't 're 've 'm 'll 'd) at i (cp[i] is an apostrophe), or 0. */
static size_t contraction(const mcl_cps *c, size_t i, int fold)
{
    if (i + 1 >= c->n)
        return 0;
    uint32_t a = c->cp[i + 1];
    if (fold && a >= 'A' && a <= 'Z')
        a += 'a' - 'A';
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if (i + 2 >= c->n)
        return 0;
    uint32_t b = c->cp[i + 2];
    if (fold && b >= 'A' && b <= 'Z')
        b += 'a' - 'A';
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* The end of the run of class `cls` that starts at i. */
static size_t run_of(const mcl_cps *c, size_t i, int cls)
{
    while (i < c->n && c->cls[i] == cls)
        i++;
    return i;
}

/* \s+(?!\S)|\s+ at i (a whitespace code point): the whole run when it ends the text, else
 * all of it but the last when that leaves one or more (the last then starts the next match),
 * else the single one. */
static size_t whitespace_tail(const mcl_cps *c, size_t i)
{
    size_t e = run_of(c, i, MCL_CP_SPACE);
    if (e == c->n)
        return e;
    return e - i >= 2 ? e - 1 : e;
}

static size_t next_gpt2(const mcl_cps *c, size_t i)
{
    if (c->cp[i] == '\'') {
        size_t k = contraction(c, i, 0);
        if (k)
            return i + k;
    }
    /* " ?X+" for X in \p{L}, \p{N}, [^\s\p{L}\p{N}]: one optional leading space. */
    size_t j = (c->cp[i] == ' ' && i + 1 < c->n) ? i + 1 : i;
    int cls = c->cls[j];
    if (cls != MCL_CP_SPACE)
        return run_of(c, j, cls);
    return whitespace_tail(c, i);
}

static int is_cr_lf(uint32_t cp)
{
    return cp == '\r' || cp == '\n';
}

static size_t next_llama3(const mcl_cps *c, size_t i, size_t max_digits)
{
    uint32_t cp = c->cp[i];
    int cls = c->cls[i];
    if (cp == '\'') {
        size_t k = contraction(c, i, 1);
        if (k)
            return i + k;
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (!is_cr_lf(cp) && cls != MCL_CP_NUMBER) {
        if (cls == MCL_CP_LETTER)
            return run_of(c, i, MCL_CP_LETTER);
        if (i + 1 < c->n && c->cls[i + 1] == MCL_CP_LETTER)
            return run_of(c, i + 1, MCL_CP_LETTER);
    }
    /* \p{N}{1,max} */
    if (cls == MCL_CP_NUMBER) {
        size_t e = i;
        while (e < c->n && c->cls[e] == MCL_CP_NUMBER && e - i < max_digits)
            e++;
        return e;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    size_t j = (cp == ' ' && i + 1 < c->n) ? i + 1 : i;
    if (c->cls[j] == MCL_CP_OTHER) {
        size_t e = run_of(c, j, MCL_CP_OTHER);
        while (e < c->n && is_cr_lf(c->cp[e]))
            e++;
        return e;
    }
    /* \s*[\r\n]+ : up to the last CR or LF of the whitespace run. */
    size_t e = run_of(c, i, MCL_CP_SPACE);
    for (size_t k = e; k > i; k--)
        if (is_cr_lf(c->cp[k - 1]))
            return k;
    return whitespace_tail(c, i);
}

size_t mcl_pretok_next(mcl_pretok pre, const mcl_cps *c, size_t i)
{
    size_t e;
    switch (pre) {
    case MCL_PRETOK_GPT2:
        e = next_gpt2(c, i);
        break;
    case MCL_PRETOK_LLAMA3:
        e = next_llama3(c, i, 3);
        break;
    case MCL_PRETOK_QWEN2:
        e = next_llama3(c, i, 1);
        break;
    default:
        e = c->n;
        break;
    }
    return e > i ? e : i + 1; /* never an empty match */
}

mcl_status mcl_pretok_split(mcl_pretok pre, const char *text, size_t len, size_t **ends,
                            size_t *count)
{
    *ends = NULL;
    *count = 0;
    if (len >= UINT32_MAX)
        return MCL_ERROR_TOO_LARGE;
    mcl_cps c = {0};
    size_t *out = mcl_mem_malloc((len + 1) * sizeof *out);
    if (!out || !mcl_cps_decode(&c, text, len)) {
        mcl_mem_free(out);
        mcl_cps_free(&c);
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    }
    size_t n = 0;
    for (size_t i = 0; i < c.n;) {
        i = mcl_pretok_next(pre, &c, i);
        out[n++] = c.off[i];
    }
    mcl_cps_free(&c);
    *ends = out;
    *count = n;
    return MCL_SUCCESS;
}
