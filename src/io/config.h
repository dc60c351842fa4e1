/* Typed reads of a Hugging Face config.json (or any JSON object) with defaults, for the model
 * loader: "hidden_size", "rms_norm_eps", "model_type", "tie_word_embeddings", "eos_token_id"
 * (an integer or a list), "rope_scaling" (an object).
 *
 * Every reader follows one rule: a key that is absent, or present with the value null (as
 * transformers writes for an unset option), gives the default and MCL_SUCCESS; a key present
 * with a value of another type is MCL_ERROR_INVALID_ARGUMENT with a message naming the key,
 * its byte offset and what was found ("\"hidden_size\" (byte 31): expected an integer, found
 * a string"), so a mistyped config is reported, never silently replaced by the default. The
 * caller checks ranges. `why` (may be NULL) gets at most why_size bytes. Internal. */
#ifndef MCL_IO_CONFIG_H
#define MCL_IO_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "io/json.h"
#include "motifcl.h"

/* An integer (a number whose value is an exact integer: 4096, 4096.0, 4.096e3). */
mcl_status mcl_config_int(const mcl_json_value *obj, const char *key, int64_t def,
                          int64_t *out, char *why, size_t why_size);

/* Any number, as a double (1e-5, 10000, 500000.0). */
mcl_status mcl_config_float(const mcl_json_value *obj, const char *key, double def,
                            double *out, char *why, size_t why_size);

/* A string: *out points into the document (valid until mcl_json_free), or is `def` (may be
 * NULL) when the key is absent or null. */
mcl_status mcl_config_string(const mcl_json_value *obj, const char *key, const char *def,
                             const char **out, char *why, size_t why_size);

/* true or false, as 1 or 0. */
mcl_status mcl_config_bool(const mcl_json_value *obj, const char *key, int def, int *out,
                           char *why, size_t why_size);

/* An integer or an array of integers ("eos_token_id": 2 or [128001, 128008, 128009]): up to
 * `cap` values into out[], their number in *count (0 when absent or null). More than `cap`
 * values is MCL_ERROR_TOO_LARGE; an element that is not an integer, INVALID_ARGUMENT. */
mcl_status mcl_config_int_list(const mcl_json_value *obj, const char *key, int64_t *out,
                               uint32_t cap, uint32_t *count, char *why, size_t why_size);

/* String element `index` of an array of strings ("architectures": ["LlamaForCausalLM"]):
 * `def` when the key is absent or null or the array is shorter; an array with an element
 * that is not a string, or another type, is INVALID_ARGUMENT. */
mcl_status mcl_config_string_at(const mcl_json_value *obj, const char *key, uint32_t index,
                                const char *def, const char **out, char *why,
                                size_t why_size);

/* What "rope_scaling" says. type is NULL when the config has no rope_scaling (or null); the
 * numbers not given keep the defaults below (factor 1, low 1, high 4, original 8192: the
 * values of Llama 3's published configs). */
typedef struct mcl_rope_scaling {
    const char *type;                          /* "llama3", "linear", "dynamic", ... */
    double factor;
    double low_freq_factor;
    double high_freq_factor;
    int64_t original_max_position_embeddings;
} mcl_rope_scaling;

/* Read obj's "rope_scaling": an object whose kind is "rope_type" (the current key) or "type"
 * (the older one; both present must agree), with "factor", "low_freq_factor",
 * "high_freq_factor" and "original_max_position_embeddings" read as above. A rope_scaling
 * that is not an object, or an object with no kind, is INVALID_ARGUMENT. The caller decides
 * which kinds it supports. */
mcl_status mcl_config_rope_scaling(const mcl_json_value *obj, mcl_rope_scaling *out, char *why,
                                   size_t why_size);

#endif
