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

/* The feature called `word` (len bytes, case-insensitive), or 0. */
static uint64_t feature_named(const char *word, size_t len)
{
    for (uint32_t bit = 0; bit < 64; bit++) {
        const char *name = mcl_feature_name(UINT64_C(1) << bit);
        if (name && strlen(name) == len) {
            size_t i = 0;
            while (i < len && tolower((unsigned char)name[i]) == tolower((unsigned char)word[i]))
                i++;
            if (i == len)
                return UINT64_C(1) << bit;
        }
    }
    return 0;
}

/* The known feature names, comma-separated, for a warning. */
static void feature_names(char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t bit = 0; bit < 64 && used < size; bit++) {
        const char *name = mcl_feature_name(UINT64_C(1) << bit);
        if (name) {
            int n = snprintf(out + used, size - used, "%s%s", used ? ", " : "", name);
            used += n > 0 ? (size_t)n : 0;
        }
    }
}

void mcl_env_defaults(mcl_env_settings *s)
{
    memset(s, 0, sizeof *s);
    s->log_level = -1;
    s->engine_norm_fold = -1;
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

static void copy_text(char *dst, const char *src)
{
    snprintf(dst, MCL_ENV_TEXT, "%s", src ? src : "");
}

/* The features of a comma-separated list (case-insensitive); every word that names none is
 * a problem, and the known words are still taken. */
static uint64_t features_in_list(mcl_env_settings *s, const char *variable, const char *list)
{
    uint64_t features = 0;
    char unknown[256] = "";
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t len = strcspn(p, ", ");
        if (len == 0)
            break;
        uint64_t f = feature_named(p, len);
        if (f)
            features |= f;
        else {
            size_t used = strlen(unknown);
            snprintf(unknown + used, sizeof unknown - used, "%s%.*s", used ? ", " : "",
                     (int)len, p);
        }
        p += len;
    }
    if (unknown[0]) {
        char known[512];
        feature_names(known, sizeof known);
        problem(s, "%s=\"%s\": %s %s no feature (known: %s)", variable, list, unknown,
                strchr(unknown, ',') ? "name" : "names", known);
    }
    return features;
}

/* A whole decimal number in [lo, hi]: digits only (no sign, space or trailing text), in
 * range; else -1. */
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

/* <BM>x<BN>, each side 64, 128 or 256 up to max_side, below 256 x 256; nothing else. */
static int parse_tile(const char *text, uint32_t max_side, uint32_t tile[2])
{
    char side[2][8];
    size_t m = strcspn(text, "x");
    if (text[m] == '\0' || m == 0 || m >= sizeof side[0] || strlen(text + m + 1) >= sizeof side[1])
        return 0;
    memcpy(side[0], text, m);
    side[0][m] = '\0';
    strcpy(side[1], text + m + 1);
    long long tm = whole_number(side[0], 64, 256), tn = whole_number(side[1], 64, 256);
    int ok = (tm == 64 || tm == 128 || tm == 256) && (tn == 64 || tn == 128 || tn == 256) &&
             tm <= max_side && tn <= max_side && tm * tn < 256 * 256;
    if (ok) {
        tile[0] = (uint32_t)tm;
        tile[1] = (uint32_t)tn;
    }
    return ok;
}

/* "key=value,..." with the keys of mcl_gemv_override, each value a whole number; no empty
 * item. */
static int parse_gemv(const char *text, mcl_gemv_override *out)
{
    static const char *const keys[] = {"t", "g", "nr", "u", "pb", "st", "cvt"};
    mcl_gemv_override o = {0};
    uint32_t *fields[] = {&o.t, &o.g, &o.nr, &o.u, &o.pb, &o.st, &o.cvt};
    for (const char *c = text;;) {
        size_t item = strcspn(c, ",");
        size_t key_len = strcspn(c, "=,");
        char key[8], value[16];
        if (key_len == 0 || key_len >= sizeof key || c[key_len] != '=' ||
            item - key_len - 1 >= sizeof value)
            return 0;
        memcpy(key, c, key_len);
        key[key_len] = '\0';
        memcpy(value, c + key_len + 1, item - key_len - 1);
        value[item - key_len - 1] = '\0';
        int i = word_index(key, keys, 7);
        long long v = whole_number(value, 0, UINT32_MAX);
        if (i < 0 || v < 0)
            return 0;
        *fields[i] = (uint32_t)v;
        o.set |= 1u << i;
        c += item;
        if (*c == '\0')
            break;
        c++; /* the comma; an item must follow */
    }
    o.st = o.st != 0;
    o.cvt = o.cvt != 0;
    *out = o;
    return 1;
}

/* An on/off switch: 1, true, on, yes or 0, false, off, no; anything else is a problem and
 * leaves it off. */
static int switch_value(mcl_env_settings *s, const char *variable)
{
    const char *v = mcl_env(variable);
    if (!v || word_index(v, falsy, 4) >= 0)
        return 0;
    if (word_index(v, truthy, 4) >= 0)
        return 1;
    problem(s, "%s=%s is not 1, true, on, yes or 0, false, off, no (off taken)", variable, v);
    return 0;
}

/* MOTIFCL_DEVICE: digits only is an index (kept whole: one past 32 bits is refused as an
 * index that does not exist, not taken as another); a sign followed by digits is a problem;
 * anything else is part of a device name. */
static void read_device(mcl_env_settings *s)
{
    const char *v = mcl_env("MOTIFCL_DEVICE");
    if (!v)
        return;
    const char *digits = v + (*v == '-' || *v == '+');
    if (isdigit((unsigned char)*digits) && digits[strspn(digits, "0123456789")] == '\0') {
        if (digits != v) {
            problem(s, "MOTIFCL_DEVICE=%s is not a device index (0, 1, ...) or part of a "
                    "device's name; ignored", v);
            return;
        }
        errno = 0;
        unsigned long long index = strtoull(v, NULL, 10);
        s->device_by_index = 1;
        s->device_index = errno == ERANGE ? UINT64_MAX : (uint64_t)index;
    }
    copy_text(s->device, v);
}

/* MOTIFCL_PIPELINE_CACHE: a switch word or an absolute folder. Set but empty is a problem
 * too (mcl_env would take it for unset): a script that meant to name a folder should hear that
 * it did not. A relative path is refused: a mistyped word would otherwise become a folder in
 * whatever the working directory happens to be. */
static void read_pipeline_cache(mcl_env_settings *s)
{
    const char *v = getenv("MOTIFCL_PIPELINE_CACHE");
    if (!v)
        return;
    if (word_index(v, falsy, 4) >= 0)
        s->pipeline_cache = MCL_ENV_PIPELINE_CACHE_OFF;
    else if (word_index(v, truthy, 4) >= 0)
        s->pipeline_cache = MCL_ENV_PIPELINE_CACHE_DEFAULT;
    else if (v[0] != '/')
        problem(s, "MOTIFCL_PIPELINE_CACHE=\"%s\" is not an absolute folder path or 0, false, "
                "off, no or 1, true, on, yes (the default folder taken)", v);
    else if (strlen(v) >= sizeof s->pipeline_cache_dir)
        problem(s, "MOTIFCL_PIPELINE_CACHE: a path of %zu bytes is longer than the %zu taken "
                "(the default folder taken)", strlen(v), sizeof s->pipeline_cache_dir - 1);
    else {
        s->pipeline_cache = MCL_ENV_PIPELINE_CACHE_DIR;
        snprintf(s->pipeline_cache_dir, sizeof s->pipeline_cache_dir, "%s", v);
    }
}

/* MOTIFCL_PROFILE: a switch word, or an absolute path for the JSON (a relative one is
 * refused for the reason MOTIFCL_PIPELINE_CACHE gives). */
static void read_profile(mcl_env_settings *s)
{
    const char *v = getenv("MOTIFCL_PROFILE");
    if (!v || word_index(v, falsy, 4) >= 0)
        return;
    if (word_index(v, truthy, 4) >= 0)
        s->gpu_profile = 1;
    else if (v[0] != '/' || strlen(v) >= sizeof s->profile_path)
        problem(s, "MOTIFCL_PROFILE=\"%s\" is not 0, false, off, no, 1, true, on, yes or an "
                "absolute file path shorter than %zu bytes (no profile taken)", v,
                sizeof s->profile_path);
    else {
        s->gpu_profile = 2;
        snprintf(s->profile_path, sizeof s->profile_path, "%s", v);
    }
}

int mcl_env_user_cache_dir(char *out, size_t size)
{
    const char *xdg = mcl_env("XDG_CACHE_HOME");
    const char *home = mcl_env("HOME");
    int n = -1;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, size, "%s/motifcl", xdg);
    else if (home)
        n = snprintf(out, size, "%s/.cache/motifcl", home);
    if (n < 0 || (size_t)n >= size) {
        if (size)
            out[0] = '\0';
        return 0;
    }
    return 1;
}

/* MOTIFCL_FAULT: device_lost@N or timeout@N, N a whole number from 1. */
static int parse_fault(const char *text, mcl_env_fault *fault, uint64_t *at)
{
    static const char *const kinds[] = {"device_lost", "timeout"};
    size_t len = strcspn(text, "@");
    char kind[16];
    if (text[len] != '@' || len == 0 || len >= sizeof kind)
        return 0;
    memcpy(kind, text, len);
    kind[len] = '\0';
    int k = word_index(kind, kinds, 2);
    long long n = whole_number(text + len + 1, 1, INT64_MAX);
    if (k < 0 || n < 0)
        return 0;
    *fault = k == 0 ? MCL_ENV_FAULT_DEVICE_LOST : MCL_ENV_FAULT_TIMEOUT;
    *at = (uint64_t)n;
    return 1;
}

void mcl_env_read(mcl_env_settings *s)
{
    static const char *const log_levels[] = {"error", "warning", "info", "debug"};
    static const char *const transfers[] = {"auto", "staging", "import"};
    static const char *const quant_paths[] = {"auto", "float", "dot"};
    const char *v;
    mcl_env_defaults(s);

    /* An unknown MOTIFCL_LOG takes warning, so that its own warning is seen. */
    if ((v = mcl_env("MOTIFCL_LOG")) && word_index(v, falsy, 4) < 0) {
        s->log_level = word_index(v, log_levels, 4);
        if (s->log_level < 0) {
            s->log_level = 1;
            problem(s, "MOTIFCL_LOG=%s is not error, warning, info, debug or 0, off (warning "
                    "taken)", v);
        }
    }
    read_device(s);
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
            problem(s, "MOTIFCL_VALIDATION=%s is not 1, on, sync, gpu or 0, off (off taken)",
                    v);
    }

    if ((v = mcl_env("MOTIFCL_DISABLE")))
        s->disable = features_in_list(s, "MOTIFCL_DISABLE", v);
    if ((v = mcl_env("MOTIFCL_FORCE")))
        s->force = features_in_list(s, "MOTIFCL_FORCE", v);

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
                "pb, st, cvt and whole numbers; ignored", v);
    const uint32_t f32_keys = MCL_GEMV_SET_T | MCL_GEMV_SET_G | MCL_GEMV_SET_NR | MCL_GEMV_SET_U;
    if ((v = mcl_env("MOTIFCL_GEMV_PLAN")) &&
        (!parse_gemv(v, &s->gemv_f32) || (s->gemv_f32.set & ~f32_keys))) {
        problem(s, "MOTIFCL_GEMV_PLAN=%s is not key=value,... with keys t, g, nr, u and whole "
                "numbers; ignored", v);
        s->gemv_f32 = (mcl_gemv_override){0};
    }
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_SLICES"))) {
        long long n = whole_number(v, 1, 16);
        if (n < 0)
            problem(s, "MOTIFCL_QUANT_GEMM_SLICES=%s is not 1..16; ignored", v);
        else
            s->gemm_slices = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_ATTENTION_SPLITS"))) {
        long long n = whole_number(v, 1, 64);
        if (n < 0)
            problem(s, "MOTIFCL_ATTENTION_SPLITS=%s is not 1..64; ignored", v);
        else
            s->attention_splits = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_ATTENTION_WG"))) {
        long long n = whole_number(v, 64, 256);
        if (n < 0 || (n & (n - 1)) != 0)
            problem(s, "MOTIFCL_ATTENTION_WG=%s is not 64, 128 or 256; ignored", v);
        else
            s->attention_wg = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_GEMM_UNROLL"))) {
        long long n = whole_number(v, 1, 16);
        if (n < 0 || (n & (n - 1)) != 0)
            problem(s, "MOTIFCL_GEMM_UNROLL=%s is not a power of two in 1..16; ignored", v);
        else
            s->gemm_f32_unroll = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_UNROLL"))) {
        long long n = whole_number(v, 1, 16);
        if (n < 0 || (n & (n - 1)) != 0)
            problem(s, "MOTIFCL_QUANT_GEMM_UNROLL=%s is not a power of two in 1..16; ignored", v);
        else
            s->gemm_unroll = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_GEMM_TILE")) && !parse_tile(v, 128, s->gemm_f32_tile))
        problem(s, "MOTIFCL_GEMM_TILE=%s is not <BM>x<BN>, sides 64 or 128; ignored", v);
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_FLOAT_TILE")) && !parse_tile(v, 256, s->gemm_float_tile))
        problem(s, "MOTIFCL_QUANT_GEMM_FLOAT_TILE=%s is not <BM>x<BN>, sides 64..256, powers "
                "of two, not 256x256; ignored", v);
    if ((v = mcl_env("MOTIFCL_QUANT_GEMM_TILE")) && !parse_tile(v, 128, s->gemm_matrix_tile))
        problem(s, "MOTIFCL_QUANT_GEMM_TILE=%s is not <BM>x<BN>, sides 64 or 128; ignored", v);
    s->pipeline_stats = switch_value(s, "MOTIFCL_PIPELINE_STATS");
    s->engine_eager = switch_value(s, "MOTIFCL_ENGINE_EAGER");
    s->engine_split_glu = switch_value(s, "MOTIFCL_ENGINE_SPLIT_GLU");
    if ((v = mcl_env("MOTIFCL_ENGINE_SPLIT_MOE"))) {
        long long n = whole_number(v, 0, 3);
        if (n < 0)
            problem(s, "MOTIFCL_ENGINE_SPLIT_MOE=%s is not 0..3; ignored", v);
        else
            s->engine_split_moe = (uint32_t)n;
    }
    if ((v = mcl_env("MOTIFCL_ENGINE_NORM_FOLD"))) {
        const int on = word_index(v, truthy, 4) >= 0;
        if (on || word_index(v, falsy, 4) >= 0)
            s->engine_norm_fold = on;
        else
            problem(s, "MOTIFCL_ENGINE_NORM_FOLD=%s is not 1, true, on, yes or 0, false, off, "
                    "no; ignored", v);
    }
    if ((v = mcl_env("MOTIFCL_ENGINE_WARM"))) {
        long long n = whole_number(v, 0, 7);
        if (n < 0)
            problem(s, "MOTIFCL_ENGINE_WARM=%s is not 0..7; ignored", v);
        else
            s->engine_warm = (uint32_t)n;
    }
    s->attention_f32 = switch_value(s, "MOTIFCL_ATTENTION_F32");
    if ((v = mcl_env("MOTIFCL_COUNTER_ROWS"))) {
        long long n = whole_number(v, 16, 64);
        if (n != 16 && n != 32 && n != 64)
            problem(s, "MOTIFCL_COUNTER_ROWS=%s is not 16, 32 or 64; ignored", v);
        else
            s->counter_rows = (uint32_t)n;
    }
    read_pipeline_cache(s);
    read_profile(s);
    if ((v = mcl_env("MOTIFCL_MAX_BINDING"))) {
        long long n = whole_number(v, 1, INT64_MAX);
        if (n < 0)
            problem(s, "MOTIFCL_MAX_BINDING=%s is not a byte count in 1..2^63-1; ignored", v);
        else
            s->max_binding = (uint64_t)n;
    }
    if ((v = mcl_env("MOTIFCL_FENCE_TIMEOUT_MS"))) {
        long long n = whole_number(v, 1, 1000000000000LL);
        if (n < 0)
            problem(s, "MOTIFCL_FENCE_TIMEOUT_MS=%s is not milliseconds in 1..10^12 (%d taken)",
                    v, MCL_FENCE_TIMEOUT_MS_DEFAULT);
        else
            s->fence_timeout_ms = (uint64_t)n;
    }
    if ((v = mcl_env("MOTIFCL_FAULT")) && !parse_fault(v, &s->fault, &s->fault_at))
        problem(s, "MOTIFCL_FAULT=%s is not device_lost@N or timeout@N with N from 1; ignored",
                v);
}
