/* Witness files: what ran, where, and with what result, as JSON. */
#include "witness.h"
#include "alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(_WIN32)
#include <direct.h>
#define make_dir(path) _mkdir(path)
#else
#include <sys/stat.h>
#define make_dir(path) mkdir((path), 0777)
#endif

#define MCL_WITNESS_TEXT 256

#if !defined(_WIN32)
extern char **environ;
#endif

typedef struct witness_entry {
    char name[MCL_WITNESS_TEXT];
    char metric[64];   /* check: metric; figure: unit */
    char label[16];    /* figure: measured/modeled; note: unused */
    char text[MCL_WITNESS_TEXT]; /* note value */
    double value, tolerance;
    int passed;
    int kind;          /* 0 check, 1 figure, 2 note */
} witness_entry;

struct mcl_witness {
    char kind[16];
    char name[MCL_WITNESS_TEXT];
    char command[2048];
    char started[32];
    int has_device;
    mcl_device_info device;
    uint64_t validation_errors;
    char *traits;      /* the context's traits, a JSON object; NULL when not given */
    char environment[4096]; /* the MOTIFCL_* variables as the run began, "NAME=value\n" each */
    witness_entry *entries;
    size_t count, capacity;
};

static void utc_now(char *out, size_t size)
{
    time_t now = time(NULL);
    struct tm tm;
#if defined(_WIN32)
    gmtime_s(&tm, &now);
#else
    gmtime_r(&now, &tm);
#endif
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

mcl_witness *mcl_witness_create(const char *kind, const char *name, int argc,
                                char *const *argv)
{
    mcl_witness *w = mcl_mem_calloc(1, sizeof *w);
    if (!w)
        return NULL;
    snprintf(w->kind, sizeof w->kind, "%s", kind);
    /* The program's base name, so the file name is stable wherever the binary lives. */
    const char *base = strrchr(name, '/');
    snprintf(w->name, sizeof w->name, "%s", base ? base + 1 : name);
    size_t used = 0;
    for (int i = 0; i < argc && argv && used + 1 < sizeof w->command; i++) {
        int n = snprintf(w->command + used, sizeof w->command - used, "%s%s", i ? " " : "",
                         argv[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    utc_now(w->started, sizeof w->started);
    /* Every MOTIFCL_* variable that shaped the run (a tuning override, a forced path, the
     * pipeline cache's folder), as it stood when the run began. */
#if !defined(_WIN32)
    used = 0;
    for (char **e = environ; e && *e && used + 1 < sizeof w->environment; e++) {
        if (strncmp(*e, "MOTIFCL_", 8) != 0)
            continue;
        int n = snprintf(w->environment + used, sizeof w->environment - used, "%s\n", *e);
        if (n < 0 || (size_t)n >= sizeof w->environment - used) {
            w->environment[used] = '\0'; /* no half a variable */
            break;
        }
        used += (size_t)n;
    }
#endif
    return w;
}

void mcl_witness_destroy(mcl_witness *w)
{
    if (!w)
        return;
    mcl_mem_free(w->entries);
    mcl_mem_free(w->traits);
    mcl_mem_free(w);
}

void mcl_witness_set_device(mcl_witness *w, const mcl_device_info *info,
                            uint64_t validation_errors, const char *traits_json)
{
    if (!w || !info)
        return;
    size_t size = info->size < sizeof w->device ? info->size : sizeof w->device;
    memset(&w->device, 0, sizeof w->device);
    memcpy(&w->device, info, size);
    w->device.size = sizeof w->device;
    w->has_device = 1;
    w->validation_errors = validation_errors;
    mcl_mem_free(w->traits);
    w->traits = NULL;
    if (traits_json && traits_json[0] == '{') {
        size_t n = strlen(traits_json) + 1;
        w->traits = mcl_mem_malloc(n);
        if (w->traits)
            memcpy(w->traits, traits_json, n);
    }
}

static witness_entry *push(mcl_witness *w)
{
    if (w->count == w->capacity) {
        size_t capacity = w->capacity ? 2 * w->capacity : 32;
        witness_entry *entries = mcl_mem_realloc(w->entries, capacity * sizeof *entries);
        if (!entries)
            return NULL;
        w->entries = entries;
        w->capacity = capacity;
    }
    witness_entry *e = &w->entries[w->count++];
    memset(e, 0, sizeof *e);
    return e;
}

void mcl_witness_set_note(mcl_witness *w, const char *key, const char *value)
{
    witness_entry *e = w ? push(w) : NULL;
    if (!e)
        return;
    e->kind = 2;
    snprintf(e->name, sizeof e->name, "%s", key);
    snprintf(e->text, sizeof e->text, "%s", value ? value : "");
}

void mcl_witness_add_check(mcl_witness *w, const char *name, const char *metric, double value,
                           double tolerance, int passed)
{
    witness_entry *e = w ? push(w) : NULL;
    if (!e)
        return;
    e->kind = 0;
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->metric, sizeof e->metric, "%s", metric);
    e->value = value;
    e->tolerance = tolerance;
    e->passed = passed;
}

void mcl_witness_add_figure(mcl_witness *w, const char *name, double value, const char *unit,
                            const char *label)
{
    witness_entry *e = w ? push(w) : NULL;
    if (!e)
        return;
    e->kind = 1;
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->metric, sizeof e->metric, "%s", unit);
    snprintf(e->label, sizeof e->label, "%s", label);
    e->value = value;
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* JSON has no NaN or infinity: write them as strings so the file stays valid. */
static void put_number(FILE *f, double v)
{
    if (v != v)
        fputs("\"nan\"", f);
    else if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
        fputs(v > 0 ? "\"inf\"" : "\"-inf\"", f);
    else
        fprintf(f, "%.9g", v);
}

static void put_device(FILE *f, const mcl_device_info *d, uint64_t validation_errors)
{
    fputs("  \"device\": {\n    \"name\": ", f);
    put_string(f, d->name);
    fputs(",\n    \"type\": ", f);
    put_string(f, mcl_device_type_name(d->device_type));
    fprintf(f, ",\n    \"vendor_id\": \"0x%04x\",\n    \"device_id\": \"0x%04x\",\n",
            d->vendor_id, d->device_id);
    fputs("    \"driver_name\": ", f);
    put_string(f, d->driver_name);
    fputs(",\n    \"driver_info\": ", f);
    put_string(f, d->driver_info);
    fprintf(f, ",\n    \"driver_version_raw\": %u,\n    \"api_version\": \"%u.%u.%u\",\n",
            d->driver_version, d->api_version >> 22, (d->api_version >> 12) & 0x3ffu,
            d->api_version & 0xfffu);
    fprintf(f, "    \"subgroup_size\": %u,\n    \"profile\": ", d->subgroup_size);
    put_string(f, d->profile);
    fputs(",\n    \"features_enabled\": [", f);
    int first = 1;
    for (int bit = 0; bit < 64; bit++) {
        const char *name = mcl_feature_name(UINT64_C(1) << bit);
        if (name && (d->features_enabled & (UINT64_C(1) << bit))) {
            fputs(first ? "" : ", ", f);
            put_string(f, name);
            first = 0;
        }
    }
    fputs("],\n    \"quirks\": [", f);
    first = 1;
    for (int bit = 0; bit < 64; bit++) {
        const char *name = mcl_quirk_name(UINT64_C(1) << bit);
        if (name && (d->quirks & (UINT64_C(1) << bit))) {
            fputs(first ? "" : ", ", f);
            put_string(f, name);
            first = 0;
        }
    }
    fprintf(f, "]\n  },\n  \"validation\": {\"enabled\": %s, \"synchronization\": %s, "
               "\"gpu_assisted\": %s, \"errors\": %llu},\n",
            (d->validation & MCL_CONTEXT_VALIDATION) ? "true" : "false",
            (d->validation & MCL_CONTEXT_VALIDATION_SYNC) ? "true" : "false",
            (d->validation & MCL_CONTEXT_VALIDATION_GPU_ASSISTED) ? "true" : "false",
            (unsigned long long)validation_errors);
}

/* dir and its missing parents made (mkdir -p): 0, or -1 where one cannot be made. */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path)
        return -1;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
#if defined(_WIN32)
        if (path[i] != '/' && path[i] != '\\' && path[i] != '\0')
            continue;
#else
        if (path[i] != '/' && path[i] != '\0')
            continue;
#endif
        char c = path[i];
        path[i] = '\0';
        if (make_dir(path) != 0 && errno != EEXIST)
            return -1;
        path[i] = c;
    }
    return 0;
}

int mcl_witness_write(mcl_witness *w, const char *dir, const char *result)
{
    if (!w || !dir)
        return -1;
    char path[4096], part[4096 + 8];
    int len = snprintf(path, sizeof path, "%s/%s.json", dir, w->name);
    if (len < 0 || (size_t)len >= sizeof path || make_dirs(dir) != 0)
        return -1;
    /* Written whole beside the final name, then renamed over it: a run that stops midway
     * leaves the last complete witness, never a truncated one. */
    snprintf(part, sizeof part, "%s.part", path);
    FILE *f = fopen(part, "w");
    if (!f)
        return -1;
    char finished[32];
    utc_now(finished, sizeof finished);

    fputs("{\n  \"schema\": \"motifcl-witness/1\",\n  \"kind\": ", f);
    put_string(f, w->kind);
    fputs(",\n  \"name\": ", f);
    put_string(f, w->name);
    fputs(",\n  \"result\": ", f);
    put_string(f, result);
    fputs(",\n  \"library_version\": ", f);
    put_string(f, mcl_version_string());
    fputs(",\n  \"git_commit\": ", f);
    put_string(f, mcl_git_commit());
    fputs(",\n  \"backend\": \"vulkan\",\n  \"command\": ", f);
    put_string(f, w->command);
    fputs(",\n  \"started\": ", f);
    put_string(f, w->started);
    fputs(",\n  \"finished\": ", f);
    put_string(f, finished);
    fputs(",\n", f);
    if (w->has_device)
        put_device(f, &w->device, w->validation_errors);
    else
        fputs("  \"device\": null,\n", f);
    fprintf(f, "  \"traits\": %s,\n", w->traits ? w->traits : "null");
    fputs("  \"environment\": {", f);
    const char *line = w->environment;
    for (int first = 1; *line; first = 0) {
        const char *eq = strchr(line, '='), *end = strchr(line, '\n');
        char name[MCL_WITNESS_TEXT], value[MCL_WITNESS_TEXT];
        snprintf(name, sizeof name, "%.*s", (int)(eq - line), line);
        snprintf(value, sizeof value, "%.*s", (int)(end - eq - 1), eq + 1);
        fputs(first ? "\n    " : ",\n    ", f);
        put_string(f, name);
        fputs(": ", f);
        put_string(f, value);
        line = end + 1;
    }
    fputs(w->environment[0] ? "\n  },\n" : "},\n", f);

    static const char *const sections[] = {"checks", "figures", "notes"};
    for (int kind = 0; kind < 3; kind++) {
        fprintf(f, "  \"%s\": %s", sections[kind], kind == 2 ? "{" : "[");
        int first = 1;
        for (size_t i = 0; i < w->count; i++) {
            const witness_entry *e = &w->entries[i];
            if (e->kind != kind)
                continue;
            fputs(first ? "\n    " : ",\n    ", f);
            first = 0;
            if (kind == 2) {
                put_string(f, e->name);
                fputs(": ", f);
                put_string(f, e->text);
                continue;
            }
            fputs("{\"name\": ", f);
            put_string(f, e->name);
            if (kind == 0) {
                fputs(", \"metric\": ", f);
                put_string(f, e->metric);
                fputs(", \"value\": ", f);
                put_number(f, e->value);
                fputs(", \"tolerance\": ", f);
                put_number(f, e->tolerance);
                fprintf(f, ", \"passed\": %s}", e->passed ? "true" : "false");
            } else {
                fputs(", \"value\": ", f);
                put_number(f, e->value);
                fputs(", \"unit\": ", f);
                put_string(f, e->metric);
                fputs(", \"label\": ", f);
                put_string(f, e->label);
                fputs("}", f);
            }
        }
        fprintf(f, "%s%s%s\n", first ? "" : "\n  ", kind == 2 ? "}" : "]", kind == 2 ? "" : ",");
    }
    fputs("}\n", f);
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        remove(part);
        return -1;
    }
#if defined(_WIN32)
    remove(path); /* rename does not replace a file there */
#endif
    if (rename(part, path) != 0) {
        remove(part);
        return -1;
    }
    return 0;
}
