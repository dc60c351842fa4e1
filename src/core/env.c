/* The environment, read once per context into mcl_env_settings. */
#include "env.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "motifcl.h"
#include "log.h"

const char *mcl_env(const char *name)
{
    const char *value = getenv(name);
    return value && *value ? value : NULL;
}

static int equals_nocase(const char *a, const char *b)
{
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

/* The index of `value` in `words` (case-insensitive), or -1. */
static int word_index(const char *value, const char *const *words, int count)
{
    for (int i = 0; i < count; i++) {
        if (equals_nocase(value, words[i]))
            return i;
    }
    return -1;
}

static const char *const falsy[] = {"0", "false", "off", "no"};
static const char *const truthy[] = {"1", "true", "on", "yes"};

int mcl_env_truthy(const char *name)
{
    const char *value = mcl_env(name);
    return value && word_index(value, falsy, 4) < 0;
}

int mcl_list_contains(const char *list, const char *word)
{
    if (!list || !word)
        return 0;
    size_t word_len = strlen(word);
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t len = strcspn(p, ", ");
        if (len == word_len) {
            size_t i = 0;
            while (i < len && tolower((unsigned char)p[i]) == tolower((unsigned char)word[i]))
                i++;
            if (i == len)
                return 1;
        }
        p += len;
    }
    return 0;
}

int mcl_contains_nocase(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return 1;
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* The features named in a comma-separated list (case-insensitive); 0 when none is known. */
static uint64_t features_in_list(const char *list)
{
    uint64_t features = 0;
    for (uint32_t bit = 0; bit < 64; bit++) {
        const char *name = mcl_feature_name(UINT64_C(1) << bit);
        if (name && mcl_list_contains(list, name))
            features |= UINT64_C(1) << bit;
    }
    return features;
}

void mcl_env_defaults(mcl_env_settings *s)
{
    memset(s, 0, sizeof *s);
    s->log_level = -1;
}

static void problem(mcl_env_settings *s, const char *fmt, ...) MCL_PRINTF(2, 3);
static void problem(mcl_env_settings *s, const char *fmt, ...)
{
    size_t used = strlen(s->problems);
    if (used + 3 >= sizeof s->problems)
        return;
    if (used) {
        memcpy(s->problems + used, "; ", 3);
        used += 2;
    }
    va_list args;
    va_start(args, fmt);
    vsnprintf(s->problems + used, sizeof s->problems - used, fmt, args);
    va_end(args);
}

/* A whole decimal number in [lo, hi], else -1. */
static long long whole_number(const char *text, long long lo, long long hi)
{
    if (!isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end != '\0' || v < (unsigned long long)lo || v > (unsigned long long)hi)
        return -1;
    return (long long)v;
}

/* <BM>x<BN>, each side 64, 128 or 256 up to max_side, below 256 x 256. */
static int parse_tile(const char *text, uint32_t max_side, uint32_t tile[2])
{
    unsigned tm = 0, tn = 0;
    char end = 0;
    if (sscanf(text, "%ux%u%c", &tm, &tn, &end) != 2)
        return 0;
    int ok = (tm == 64 || tm == 128 || tm == 256) && (tn == 64 || tn == 128 || tn == 256) &&
             tm <= max_side && tn <= max_side && tm * tn < 256u * 256u;
    if (ok) {
        tile[0] = tm;
        tile[1] = tn;
    }
    return ok;
}

/* "key=value,..." with the keys of mcl_gemv_override. */
static int parse_gemv(const char *text, mcl_gemv_override *out)
{
    static const char *const keys[] = {"t", "g", "nr", "u", "pb", "st", "cvt"};
    mcl_gemv_override o = {0};
    uint32_t *fields[] = {&o.t, &o.g, &o.nr, &o.u, &o.pb, &o.st, &o.cvt};
    for (const char *c = text; *c;) {
        char key[8] = {0};
        unsigned value = 0;
        int used = 0;
        if (sscanf(c, "%7[a-z]=%u%n", key, &value, &used) != 2)
            return 0;
        c += used;
        if (*c == ',')
            c++;
        int i = word_index(key, keys, 7);
        if (i < 0)
            return 0;
        *fields[i] = value;
        o.set |= 1u << i;
    }
    o.st = o.st != 0;
    o.cvt = o.cvt != 0;
    *out = o;
    return 1;
}

static void copy_text(char *dst, const char *src)
{
    snprintf(dst, MCL_ENV_TEXT, "%s", src ? src : "");
}

void mcl_env_read(mcl_env_settings *s)
{
    static const char *const log_levels[] = {"error", "warning", "info", "debug"};
    static const char *const transfers[] = {"auto", "staging", "import"};
    static const char *const quant_paths[] = {"auto", "float", "dot"};
    const char *v;
    mcl_env_defaults(s);

    if ((v = mcl_env("MOTIFCL_LOG")) && strcmp(v, "0") != 0) {
        s->log_level = word_index(v, log_levels, 4);
        if (s->log_level < 0) {
            s->log_level = 1;
            problem(s, "MOTIFCL_LOG=%s is not error, warning, info or debug (warning taken)", v);
        }
    }
    copy_text(s->device, mcl_env("MOTIFCL_DEVICE"));
    copy_text(s->profile, mcl_env("MOTIFCL_DEVICE_PROFILE"));

    if ((v = mcl_env("MOTIFCL_VALIDATION"))) {
        if (equals_nocase(v, "sync"))
            s->validation = MCL_CONTEXT_VALIDATION | MCL_CONTEXT_VALIDATION_SYNC;
        else if (equals_nocase(v, "gpu"))
            s->validation = MCL_CONTEXT_VALIDATION | MCL_CONTEXT_VALIDATION_SYNC |
                            MCL_CONTEXT_VALIDATION_GPU_ASSISTED;
        else if (word_index(v, truthy, 4) >= 0)
            s->validation = MCL_CONTEXT_VALIDATION;
        else if (word_index(v, falsy, 4) < 0)
            problem(s, "MOTIFCL_VALIDATION=%s is not 0, 1, sync or gpu (off taken)", v);
    }

    if ((v = mcl_env("MOTIFCL_DISABLE")) && !(s->disable = features_in_list(v)))
        problem(s, "MOTIFCL_DISABLE=\"%s\" names no known feature", v);
    if ((v = mcl_env("MOTIFCL_FORCE")) && !(s->force = features_in_list(v)))
        problem(s, "MOTIFCL_FORCE=\"%s\" names no known feature", v);

    if ((v = mcl_env("MOTIFCL_TRANSFER"))) {
        int i = word_index(v, transfers, 3);
        s->transfer = i < 0 ? MCL_ENV_TRANSFER_INVALID : (mcl_env_transfer)i;
        copy_text(s->transfer_text, v);
    }
    if ((v = mcl_env("MOTIFCL_QUANT_PATH"))) {
        int i = word_index(v, quant_paths, 3);
        if (i < 0)
            problem(s, "MOTIFCL_QUANT_PATH=%s is not auto, float or dot (auto taken)", v);
        else
            s->quant_path = (mcl_env_quant_path)i;
    }
    if ((v = mcl_env("MOTIFCL_QUANT_GEMV_PLAN")) && !parse_gemv(v, &s->gemv))
        problem(s, "MOTIFCL_QUANT_GEMV_PLAN=%s is not key=value,... with keys t, g, nr, u, "
                "pb, st, cvt; ignored", v);
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_SLICES"))) {
        long long n = whole_number(v, 1, 16);
        if (n < 0)
            problem(s, "MOTIFCL_QUANT_GEMM_SLICES=%s is not 1..16; ignored", v);
        else
            s->gemm_slices = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_UNROLL"))) {
        long long n = whole_number(v, 1, 16);
        if (n < 0 || (n & (n - 1)) != 0)
            problem(s, "MOTIFCL_QUANT_GEMM_UNROLL=%s is not a power of two in 1..16; ignored", v);
        else
            s->gemm_unroll = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_FLOAT_TILE")) && !parse_tile(v, 256, s->gemm_float_tile))
        problem(s, "MOTIFCL_QUANT_GEMM_FLOAT_TILE=%s is not <BM>x<BN>, sides 64..256, powers "
                "of two, not 256x256; ignored", v);
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_TILE")) && !parse_tile(v, 128, s->gemm_matrix_tile))
        problem(s, "MOTIFCL_QUANT_GEMM_TILE=%s is not <BM>x<BN>, sides 64 or 128; ignored", v);
    s->pipeline_stats = mcl_env_truthy("MOTIFCL_PIPELINE_STATS");
    s->engine_eager = mcl_env_truthy("MOTIFCL_ENGINE_EAGER");
    if ((v = mcl_env("MOTIFCL_MAX_BINDING"))) {
        long long n = whole_number(v, 1, INT64_MAX);
        if (n < 0)
            problem(s, "MOTIFCL_MAX_BINDING=%s is not a positive byte count; ignored", v);
        else
            s->max_binding = (uint64_t)n;
    }
}
