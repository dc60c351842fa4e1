/* Typed reads of config.json values with defaults (config.h): absent or null gives the
 * default, a value of the wrong type is an error naming the key. */
#include "io/config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/text.h"

/* Defaults of a rope_scaling object's numbers (config.h). */
#define ROPE_DEFAULT_FACTOR 1.0
#define ROPE_DEFAULT_LOW_FREQ_FACTOR 1.0
#define ROPE_DEFAULT_HIGH_FREQ_FACTOR 4.0
#define ROPE_DEFAULT_ORIGINAL_MAX_POSITIONS 8192


static mcl_status wrong_type(const char *key, const mcl_json_value *v, const char *wanted,
                             char *why, size_t why_size)
{
    return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"%s\" (byte %" PRIu64 "): expected %s, found %s", key,
                       mcl_json_offset(v), wanted, mcl_json_kind_name(mcl_json_kind_of(v)));
}

/* The value of key, or NULL when absent or null; INVALID_ARGUMENT when obj is no object. */
static mcl_status lookup(const mcl_json_value *obj, const char *key, const mcl_json_value **v,
                         char *why, size_t why_size)
{
    *v = NULL;
    if (!key)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL key");
    if (mcl_json_kind_of(obj) != MCL_JSON_OBJECT)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "reading \"%s\": the configuration is %s, not an "
                           "object", key, mcl_json_kind_name(mcl_json_kind_of(obj)));
    const mcl_json_value *found = mcl_json_find(obj, key);
    if (found && !mcl_json_is_null(found))
        *v = found;
    return MCL_SUCCESS;
}

mcl_status mcl_config_int(const mcl_json_value *obj, const char *key, int64_t def,
                          int64_t *out, char *why, size_t why_size)
{
    const mcl_json_value *v;
    mcl_status s = lookup(obj, key, &v, why, why_size);
    if (s != MCL_SUCCESS || !out)
        return s != MCL_SUCCESS ? s : mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL output");
    if (!v) {
        *out = def;
        return MCL_SUCCESS;
    }
    if (mcl_json_kind_of(v) == MCL_JSON_NUMBER && !mcl_json_int(v, out))
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"%s\" (byte %" PRIu64 "): expected an integer, "
                           "found a number that is not an integer in int64's range", key,
                           mcl_json_offset(v));
    if (!mcl_json_int(v, out))
        return wrong_type(key, v, "an integer", why, why_size);
    return MCL_SUCCESS;
}

mcl_status mcl_config_float(const mcl_json_value *obj, const char *key, double def,
                            double *out, char *why, size_t why_size)
{
    const mcl_json_value *v;
    mcl_status s = lookup(obj, key, &v, why, why_size);
    if (s != MCL_SUCCESS || !out)
        return s != MCL_SUCCESS ? s : mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL output");
    if (!v) {
        *out = def;
        return MCL_SUCCESS;
    }
    if (!mcl_json_number(v, out))
        return wrong_type(key, v, "a number", why, why_size);
    return MCL_SUCCESS;
}

mcl_status mcl_config_string(const mcl_json_value *obj, const char *key, const char *def,
                             const char **out, char *why, size_t why_size)
{
    const mcl_json_value *v;
    mcl_status s = lookup(obj, key, &v, why, why_size);
    if (s != MCL_SUCCESS || !out)
        return s != MCL_SUCCESS ? s : mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL output");
    if (!v) {
        *out = def;
        return MCL_SUCCESS;
    }
    const char *str = mcl_json_string(v, NULL);
    if (!str)
        return wrong_type(key, v, "a string", why, why_size);
    *out = str;
    return MCL_SUCCESS;
}

mcl_status mcl_config_bool(const mcl_json_value *obj, const char *key, int def, int *out,
                           char *why, size_t why_size)
{
    const mcl_json_value *v;
    mcl_status s = lookup(obj, key, &v, why, why_size);
    if (s != MCL_SUCCESS || !out)
        return s != MCL_SUCCESS ? s : mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL output");
    if (!v) {
        *out = def;
        return MCL_SUCCESS;
    }
    if (!mcl_json_bool(v, out))
        return wrong_type(key, v, "true or false", why, why_size);
    return MCL_SUCCESS;
}

mcl_status mcl_config_int_list(const mcl_json_value *obj, const char *key, int64_t *out,
                               uint32_t cap, uint32_t *count, char *why, size_t why_size)
{
    const mcl_json_value *v;
    mcl_status s = lookup(obj, key, &v, why, why_size);
    if (s != MCL_SUCCESS || !count || (cap && !out))
        return s != MCL_SUCCESS ? s : mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL output");
    *count = 0;
    if (!v)
        return MCL_SUCCESS;
    if (mcl_json_kind_of(v) == MCL_JSON_NUMBER) {
        if (!cap) {
            mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"%s\" (byte %" PRIu64 "): 1 value, more than the 0 "
                        "expected", key, mcl_json_offset(v));
            return MCL_ERROR_TOO_LARGE;
        }
        if (!mcl_json_int(v, &out[0]))
            return wrong_type(key, v, "an integer or an array of integers", why, why_size);
        *count = 1;
        return MCL_SUCCESS;
    }
    if (mcl_json_kind_of(v) != MCL_JSON_ARRAY)
        return wrong_type(key, v, "an integer or an array of integers", why, why_size);
    uint32_t n = mcl_json_count(v);
    if (n > cap) {
        mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"%s\" (byte %" PRIu64 "): %" PRIu32 " values, more than "
                    "the %" PRIu32 " expected", key, mcl_json_offset(v), n, cap);
        return MCL_ERROR_TOO_LARGE;
    }
    for (uint32_t i = 0; i < n; i++) {
        const mcl_json_value *e = mcl_json_at(v, i);
        if (!mcl_json_int(e, &out[i]))
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"%s\" element %" PRIu32 " (byte %" PRIu64
                               "): expected an integer, found %s", key, i, mcl_json_offset(e),
                               mcl_json_kind_name(mcl_json_kind_of(e)));
    }
    *count = n;
    return MCL_SUCCESS;
}

mcl_status mcl_config_string_at(const mcl_json_value *obj, const char *key, uint32_t index,
                                const char *def, const char **out, char *why,
                                size_t why_size)
{
    const mcl_json_value *v;
    mcl_status s = lookup(obj, key, &v, why, why_size);
    if (s != MCL_SUCCESS || !out)
        return s != MCL_SUCCESS ? s : mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL output");
    *out = def;
    if (!v)
        return MCL_SUCCESS;
    if (mcl_json_kind_of(v) != MCL_JSON_ARRAY)
        return wrong_type(key, v, "an array of strings", why, why_size);
    for (uint32_t i = 0; i < mcl_json_count(v); i++) {
        const mcl_json_value *e = mcl_json_at(v, i);
        if (!mcl_json_string(e, NULL))
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"%s\" element %" PRIu32 " (byte %" PRIu64
                               "): expected a string, found %s", key, i, mcl_json_offset(e),
                               mcl_json_kind_name(mcl_json_kind_of(e)));
    }
    if (index < mcl_json_count(v))
        *out = mcl_json_string(mcl_json_at(v, index), NULL);
    return MCL_SUCCESS;
}

mcl_status mcl_config_rope_scaling(const mcl_json_value *obj, mcl_rope_scaling *out, char *why,
                                   size_t why_size)
{
    if (!out)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL output");
    memset(out, 0, sizeof *out);
    out->factor = ROPE_DEFAULT_FACTOR;
    out->low_freq_factor = ROPE_DEFAULT_LOW_FREQ_FACTOR;
    out->high_freq_factor = ROPE_DEFAULT_HIGH_FREQ_FACTOR;
    out->original_max_position_embeddings = ROPE_DEFAULT_ORIGINAL_MAX_POSITIONS;

    const mcl_json_value *rs;
    mcl_status s = lookup(obj, "rope_scaling", &rs, why, why_size);
    if (s != MCL_SUCCESS || !rs)
        return s;
    if (mcl_json_kind_of(rs) != MCL_JSON_OBJECT)
        return wrong_type("rope_scaling", rs, "an object", why, why_size);

    const char *rope_type = NULL, *old_type = NULL;
    if ((s = mcl_config_string(rs, "rope_type", NULL, &rope_type, why, why_size)) ||
        (s = mcl_config_string(rs, "type", NULL, &old_type, why, why_size)))
        return s;
    if (rope_type && old_type && strcmp(rope_type, old_type) != 0)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"rope_scaling\" (byte %" PRIu64 "): \"rope_type\" "
                           "is \"%s\" but \"type\" is \"%s\"", mcl_json_offset(rs), rope_type,
                           old_type);
    out->type = rope_type ? rope_type : old_type;
    if (!out->type)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "\"rope_scaling\" (byte %" PRIu64 "): neither "
                           "\"rope_type\" nor \"type\" is given", mcl_json_offset(rs));
    if ((s = mcl_config_float(rs, "factor", out->factor, &out->factor, why, why_size)) ||
        (s = mcl_config_float(rs, "low_freq_factor", out->low_freq_factor,
                              &out->low_freq_factor, why, why_size)) ||
        (s = mcl_config_float(rs, "high_freq_factor", out->high_freq_factor,
                              &out->high_freq_factor, why, why_size)) ||
        (s = mcl_config_int(rs, "original_max_position_embeddings",
                            out->original_max_position_embeddings,
                            &out->original_max_position_embeddings, why, why_size)))
        return s;
    return MCL_SUCCESS;
}
