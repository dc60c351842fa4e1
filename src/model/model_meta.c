/* A model's metadata as text (mcl_model_metadata): a GGUF key's value, or a member of a
 * checkpoint's config.json. */
#include <stdio.h>
#include <string.h>

#include "model_internal.h"
#include "../core/text.h"

/* The elements of an array written out at most. */
#define META_ARRAY_MAX 64

/* Element i of kv (an array) or kv itself (i = UINT64_MAX) as text. */
static void put_value(mcl_text *out, const mcl_gguf *g, const mcl_gguf_kv *kv, uint64_t i,
                      mcl_gguf_type type)
{
    int array = i != UINT64_MAX;
    uint64_t u;
    int64_t v;
    double f;
    int b;
    mcl_gguf_str s;
    switch (type) {
    case MCL_GGUF_BOOL:
        if (array ? mcl_gguf_array_u64(kv, i, &u) : mcl_gguf_get_bool(kv, &b))
            mcl_text_put(out, "%s", (array ? u != 0 : b) ? "true" : "false");
        break;
    case MCL_GGUF_FLOAT32:
    case MCL_GGUF_FLOAT64:
        if (array ? mcl_gguf_array_f64(kv, i, &f) : mcl_gguf_get_f64(kv, &f))
            mcl_text_put(out, "%.9g", f);
        break;
    case MCL_GGUF_STRING:
        if (array ? mcl_gguf_array_str(g, kv, i, &s) : mcl_gguf_get_str(kv, &s))
            mcl_text_put(out, "%.*s", (int)(s.len < 1u << 30 ? s.len : 1u << 30), s.data);
        break;
    case MCL_GGUF_INT8:
    case MCL_GGUF_INT16:
    case MCL_GGUF_INT32:
    case MCL_GGUF_INT64:
        if (array ? mcl_gguf_array_i64(kv, i, &v) : mcl_gguf_get_i64(kv, &v))
            mcl_text_put(out, "%lld", (long long)v);
        break;
    default:
        if (array ? mcl_gguf_array_u64(kv, i, &u) : mcl_gguf_get_u64(kv, &u))
            mcl_text_put(out, "%llu", (unsigned long long)u);
        break;
    }
}

mcl_status mcl_model_metadata(const mcl_model *m, const char *key, char *buffer,
                              size_t capacity, size_t *needed)
{
    if (!m || !key || (!buffer && capacity))
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_text out = {.buf = buffer, .cap = capacity};
    if (capacity)
        buffer[0] = '\0';
    if (m->gguf) {
        const mcl_gguf_kv *kv = mcl_gguf_find(m->gguf, key);
        if (!kv)
            return mcl_fail(m->ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_model_metadata: the file has no key \"%s\"", key);
        if (kv->type != MCL_GGUF_ARRAY) {
            put_value(&out, m->gguf, kv, UINT64_MAX, kv->type);
        } else {
            mcl_text_put(&out, "[");
            for (uint64_t i = 0; i < kv->count && i < META_ARRAY_MAX; i++) {
                if (i)
                    mcl_text_put(&out, ", ");
                put_value(&out, m->gguf, kv, i, kv->elem_type);
            }
            mcl_text_put(&out, "%s]", kv->count > META_ARRAY_MAX ? ", ..." : "");
        }
    } else {
        mcl_status status = mcl_model_checkpoint_metadata(m, key, &out);
        if (status != MCL_SUCCESS)
            return status;
    }
    if (needed)
        *needed = out.len + 1;
    return out.len < capacity ? MCL_SUCCESS : MCL_ERROR_TOO_LARGE;
}
