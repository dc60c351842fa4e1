/* The safetensors parser of safetensors.h: the header length, the header's JSON (json.h),
 * each tensor's entry, then the tiling of the data section checked in offset order. Also the
 * dtype table and the f32 read of a tensor. */
#include "io/safetensors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/text.h"
#include "io/convert.h"
#include "io/json.h"
#include "core/alloc.h"

/* Bytes of the header length that opens the file. */
#define HEADER_LENGTH_BYTES 8
/* The header's reserved key. */
#define METADATA_KEY "__metadata__"
/* Characters of a tensor name shown in a message. */
#define NAME_SHOWN 80

struct mcl_safetensors {
    mcl_json *header;
    const mcl_json_value *metadata; /* the "__metadata__" object, or NULL */
    mcl_st_tensor *tensors;         /* in offset order */
    const mcl_st_tensor **by_name;  /* sorted by name */
    int64_t *dims;                  /* every tensor's shape, back to back */
    uint64_t count;
    uint64_t data_offset;
};

static const struct {
    const char *name;
    uint32_t bits;
} dtypes[MCL_ST_DTYPE_COUNT] = {
    [MCL_ST_BOOL] = {"BOOL", 8},         [MCL_ST_U8] = {"U8", 8},
    [MCL_ST_I8] = {"I8", 8},             [MCL_ST_F8_E5M2] = {"F8_E5M2", 8},
    [MCL_ST_F8_E4M3] = {"F8_E4M3", 8},   [MCL_ST_F8_E8M0] = {"F8_E8M0", 8},
    [MCL_ST_I16] = {"I16", 16},          [MCL_ST_U16] = {"U16", 16},
    [MCL_ST_F16] = {"F16", 16},          [MCL_ST_BF16] = {"BF16", 16},
    [MCL_ST_I32] = {"I32", 32},          [MCL_ST_U32] = {"U32", 32},
    [MCL_ST_F32] = {"F32", 32},          [MCL_ST_F64] = {"F64", 64},
    [MCL_ST_I64] = {"I64", 64},          [MCL_ST_U64] = {"U64", 64},
    [MCL_ST_C64] = {"C64", 64},          [MCL_ST_F4] = {"F4", 4},
    [MCL_ST_F6_E2M3] = {"F6_E2M3", 6},   [MCL_ST_F6_E3M2] = {"F6_E3M2", 6},
};

const char *mcl_st_dtype_name(mcl_st_dtype dtype)
{
    return (unsigned)dtype < MCL_ST_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}

uint32_t mcl_st_dtype_bits(mcl_st_dtype dtype)
{
    return (unsigned)dtype < MCL_ST_DTYPE_COUNT ? dtypes[dtype].bits : 0;
}

int mcl_st_dtype_parse(const char *name, size_t len)
{
    if (!name)
        return -1;
    for (int i = 0; i < MCL_ST_DTYPE_COUNT; i++)
        if (strlen(dtypes[i].name) == len && memcmp(dtypes[i].name, name, len) == 0)
            return i;
    return -1;
}

int mcl_st_dtype_loadable(mcl_st_dtype dtype)
{
    return dtype == MCL_ST_F32 || dtype == MCL_ST_F16 || dtype == MCL_ST_BF16;
}

/* --- One tensor's entry ------------------------------------------------------------------ */

typedef struct entry_ctx {
    char *why;
    size_t why_size;
    const char *name;
    size_t name_len;
} entry_ctx;

static mcl_status entry_fail(entry_ctx *c, const mcl_json_value *v, const char *fmt, ...)
    MCL_PRINTF(3, 4);
static mcl_status entry_fail(entry_ctx *c, const mcl_json_value *v, const char *fmt, ...)
{
    if (c->why && c->why_size) {
        char shown[NAME_SHOWN + 4];
        mcl_text_show(c->name, c->name_len, NAME_SHOWN, shown, sizeof shown);
        int n = snprintf(c->why, c->why_size, "tensor \"%s\" (header byte %" PRIu64 "): ",
                         shown, mcl_json_offset(v));
        if (n >= 0 && (size_t)n < c->why_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->why + n, c->why_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return MCL_ERROR_INVALID_ARGUMENT;
}

/* Read a tensor's entry `e` into t; its sizes go to dims (room for mcl_json_count(shape)). */
static mcl_status read_entry(const mcl_json_value *e, mcl_st_tensor *t, int64_t *dims,
                             entry_ctx *c)
{
    if (mcl_json_kind_of(e) != MCL_JSON_OBJECT)
        return entry_fail(c, e, "expected an object, found %s",
                          mcl_json_kind_name(mcl_json_kind_of(e)));
    const mcl_json_value *dtype = mcl_json_find(e, "dtype");
    const mcl_json_value *shape = mcl_json_find(e, "shape");
    const mcl_json_value *offsets = mcl_json_find(e, "data_offsets");
    if (!dtype || !shape || !offsets)
        return entry_fail(c, e, "no \"%s\"", !dtype ? "dtype" : !shape ? "shape"
                                                                        : "data_offsets");
    size_t name_len;
    const char *name = mcl_json_string(dtype, &name_len);
    if (!name)
        return entry_fail(c, dtype, "dtype is %s, not a string",
                          mcl_json_kind_name(mcl_json_kind_of(dtype)));
    int d = mcl_st_dtype_parse(name, name_len);
    if (d < 0) {
        char shown[NAME_SHOWN + 4];
        mcl_text_show(name, name_len, NAME_SHOWN, shown, sizeof shown);
        return entry_fail(c, dtype, "unknown dtype \"%s\"", shown);
    }
    t->dtype = (mcl_st_dtype)d;

    if (mcl_json_kind_of(shape) != MCL_JSON_ARRAY)
        return entry_fail(c, shape, "shape is %s, not an array",
                          mcl_json_kind_name(mcl_json_kind_of(shape)));
    t->ndim = mcl_json_count(shape);
    t->shape = t->ndim ? dims : NULL;
    uint64_t elements = 1;
    int overflow = 0;
    for (uint32_t i = 0; i < t->ndim; i++) {
        int64_t size;
        if (!mcl_json_int(mcl_json_at(shape, i), &size) || size < 0)
            return entry_fail(c, shape, "shape[%" PRIu32 "] is not a non-negative integer", i);
        dims[i] = size;
        if (size && elements > UINT64_MAX / (uint64_t)size)
            overflow = 1; /* unless a later size is 0: checked below */
        else
            elements *= (uint64_t)size;
    }
    if (elements == 0)
        overflow = 0;
    if (overflow)
        return entry_fail(c, shape, "the shape's element count overflows 64 bits");
    t->elements = elements;

    int64_t begin, end;
    if (mcl_json_kind_of(offsets) != MCL_JSON_ARRAY || mcl_json_count(offsets) != 2 ||
        !mcl_json_int(mcl_json_at(offsets, 0), &begin) ||
        !mcl_json_int(mcl_json_at(offsets, 1), &end) || begin < 0 || end < 0)
        return entry_fail(c, offsets, "data_offsets is not [begin, end] of non-negative "
                          "integers");
    if (end < begin)
        return entry_fail(c, offsets, "data_offsets [%" PRId64 ", %" PRId64 "] end before "
                          "they begin", begin, end);
    t->begin = (uint64_t)begin;
    t->end = (uint64_t)end;

    uint32_t bits = mcl_st_dtype_bits(t->dtype);
    if (elements > UINT64_MAX / bits)
        return entry_fail(c, shape, "%s x %" PRIu64 " elements overflow 64 bits",
                          mcl_st_dtype_name(t->dtype), elements);
    uint64_t total_bits = elements * bits;
    if (total_bits % 8 != 0)
        return entry_fail(c, shape, "%" PRIu64 " elements of %s fill no whole number of bytes",
                          elements, mcl_st_dtype_name(t->dtype));
    if (total_bits / 8 != t->end - t->begin)
        return entry_fail(c, offsets, "data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                          " bytes but %" PRIu64 " elements of %s need %" PRIu64,
                          t->begin, t->end, t->end - t->begin, elements,
                          mcl_st_dtype_name(t->dtype), total_bits / 8);
    return MCL_SUCCESS;
}

/* --- Orders ------------------------------------------------------------------------------ */

static int name_cmp(const mcl_st_tensor *a, const mcl_st_tensor *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = n ? memcmp(a->name, b->name, n) : 0;
    if (c)
        return c;
    return (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

static int by_offsets(const void *pa, const void *pb)
{
    const mcl_st_tensor *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return name_cmp(a, b);
}

static int by_name(const void *pa, const void *pb)
{
    return name_cmp(*(const mcl_st_tensor *const *)pa, *(const mcl_st_tensor *const *)pb);
}

/* --- The metadata ------------------------------------------------------------------------ */

static mcl_status check_metadata(const mcl_json_value *m, char *why, size_t why_size)
{
    if (mcl_json_kind_of(m) != MCL_JSON_OBJECT)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "__metadata__ (header byte %"
                       PRIu64 ") is %s, not an object", mcl_json_offset(m),
                       mcl_json_kind_name(mcl_json_kind_of(m)));
    for (uint32_t i = 0; i < mcl_json_count(m); i++) {
        const mcl_json_value *v = mcl_json_at(m, i);
        if (mcl_json_kind_of(v) != MCL_JSON_STRING) {
            size_t len;
            const char *key = mcl_json_key(v, &len);
            char shown[NAME_SHOWN + 4];
            mcl_text_show(key, len, NAME_SHOWN, shown, sizeof shown);
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "__metadata__ \"%s\" "
                           "(header byte %" PRIu64 ") is %s, not a string", shown,
                           mcl_json_offset(v), mcl_json_kind_name(mcl_json_kind_of(v)));
        }
    }
    return MCL_SUCCESS;
}

/* --- Parsing ----------------------------------------------------------------------------- */

/* Read every tensor entry of the header object into st (entries in header order). */
static mcl_status read_tensors(mcl_safetensors *st, const mcl_json_value *root, char *why,
                               size_t why_size)
{
    uint32_t members = mcl_json_count(root);
    uint64_t n = members - (st->metadata ? 1u : 0u), total_dims = 0;
    for (uint32_t i = 0; i < members; i++) {
        const mcl_json_value *e = mcl_json_at(root, i);
        if (e != st->metadata)
            total_dims += mcl_json_count(mcl_json_find(e, "shape"));
    }
    st->tensors = mcl_mem_calloc(n ? n : 1, sizeof *st->tensors);
    st->by_name = mcl_mem_calloc(n ? n : 1, sizeof *st->by_name);
    st->dims = mcl_mem_calloc(total_dims ? total_dims : 1, sizeof *st->dims);
    if (!st->tensors || !st->by_name || !st->dims)
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for "
                       "%" PRIu64 " tensors", n);
    uint64_t k = 0, used_dims = 0;
    for (uint32_t i = 0; i < members; i++) {
        const mcl_json_value *e = mcl_json_at(root, i);
        if (e == st->metadata)
            continue;
        mcl_st_tensor *t = &st->tensors[k++];
        t->name = mcl_json_key(e, &t->name_len);
        entry_ctx c = {why, why_size, t->name, t->name_len};
        mcl_status s = read_entry(e, t, st->dims + used_dims, &c);
        if (s != MCL_SUCCESS)
            return s;
        used_dims += t->ndim;
    }
    st->count = n;
    return MCL_SUCCESS;
}

/* The tensors in offset order must tile [0, data_size) exactly. */
static mcl_status check_tiling(mcl_safetensors *st, uint64_t data_size, char *why,
                               size_t why_size)
{
    qsort(st->tensors, st->count, sizeof *st->tensors, by_offsets);
    uint64_t at = 0;
    for (uint64_t i = 0; i < st->count; i++) {
        const mcl_st_tensor *t = &st->tensors[i];
        char shown[NAME_SHOWN + 4];
        if (t->begin != at || t->end > data_size)
            mcl_text_show(t->name, t->name_len, NAME_SHOWN, shown, sizeof shown);
        if (t->begin > at)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "tensor \"%s\": "
                           "data_offsets [%" PRIu64 ", %" PRIu64 "] leave a gap: the data "
                           "before it ends at %" PRIu64, shown, t->begin, t->end, at);
        if (t->begin < at)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "tensor \"%s\": "
                           "data_offsets [%" PRIu64 ", %" PRIu64 "] overlap the tensor before "
                           "it, which ends at %" PRIu64, shown, t->begin, t->end, at);
        if (t->end > data_size)
            return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "tensor \"%s\": "
                           "data_offsets [%" PRIu64 ", %" PRIu64 "] past the end of the %"
                           PRIu64 "-byte data section", shown, t->begin, t->end, data_size);
        at = t->end;
    }
    if (at != data_size)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "the tensors end at byte %"
                       PRIu64 " of the %" PRIu64 "-byte data section: %" PRIu64 " bytes "
                       "belong to no tensor", at, data_size, data_size - at);
    return MCL_SUCCESS;
}

mcl_status mcl_safetensors_parse(const void *data, uint64_t size, mcl_safetensors **out,
                                 char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out || (!data && size))
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    const unsigned char *bytes = data;
    if (size < HEADER_LENGTH_BYTES)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "a %" PRIu64 "-byte file "
                       "is shorter than the 8-byte header length", size);
    uint64_t n = 0;
    for (int i = HEADER_LENGTH_BYTES - 1; i >= 0; i--)
        n = n << 8 | bytes[i];
    if (n > size - HEADER_LENGTH_BYTES)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "header length %" PRIu64
                       " past the end of the %" PRIu64 "-byte file", n, size);
    if (n > MCL_SAFETENSORS_MAX_HEADER)
        return mcl_text_fail(why, why_size, MCL_ERROR_TOO_LARGE, "header length %" PRIu64 " above "
                       "the limit of %u bytes", n, MCL_SAFETENSORS_MAX_HEADER);

    mcl_safetensors *st = mcl_mem_calloc(1, sizeof *st);
    if (!st)
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    st->data_offset = HEADER_LENGTH_BYTES + n;
    mcl_status s;
    char json_why[256];
    s = mcl_json_parse(bytes + HEADER_LENGTH_BYTES, n, &st->header, json_why, sizeof json_why);
    if (s != MCL_SUCCESS) {
        mcl_text_fail(why, why_size, s, "header: %s", json_why);
        goto fail;
    }
    const mcl_json_value *root = mcl_json_root(st->header);
    if (mcl_json_kind_of(root) != MCL_JSON_OBJECT) {
        s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "the header is %s, not an "
                    "object", mcl_json_kind_name(mcl_json_kind_of(root)));
        goto fail;
    }
    st->metadata = mcl_json_find(root, METADATA_KEY);
    if (st->metadata && (s = check_metadata(st->metadata, why, why_size)) != MCL_SUCCESS)
        goto fail;
    if ((s = read_tensors(st, root, why, why_size)) != MCL_SUCCESS ||
        (s = check_tiling(st, size - st->data_offset, why, why_size)) != MCL_SUCCESS)
        goto fail;
    for (uint64_t i = 0; i < st->count; i++) {
        mcl_st_tensor *t = &st->tensors[i];
        t->data = t->end > t->begin ? bytes + st->data_offset + t->begin : NULL;
        st->by_name[i] = t;
    }
    qsort(st->by_name, st->count, sizeof *st->by_name, by_name);
    *out = st;
    return MCL_SUCCESS;

fail:
    mcl_safetensors_free(st);
    return s;
}

void mcl_safetensors_free(mcl_safetensors *st)
{
    if (!st)
        return;
    mcl_json_free(st->header);
    mcl_mem_free(st->tensors);
    mcl_mem_free(st->by_name);
    mcl_mem_free(st->dims);
    mcl_mem_free(st);
}

uint64_t mcl_safetensors_count(const mcl_safetensors *st)
{
    return st ? st->count : 0;
}

const mcl_st_tensor *mcl_safetensors_at(const mcl_safetensors *st, uint64_t i)
{
    return st && i < st->count ? &st->tensors[i] : NULL;
}

const mcl_st_tensor *mcl_safetensors_find(const mcl_safetensors *st, const char *name)
{
    if (!st || !name)
        return NULL;
    mcl_st_tensor probe;
    probe.name = name;
    probe.name_len = strlen(name);
    uint64_t lo = 0, hi = st->count;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(st->by_name[mid], &probe);
        if (c == 0)
            return st->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

uint64_t mcl_safetensors_data_offset(const mcl_safetensors *st)
{
    return st ? st->data_offset : 0;
}

uint64_t mcl_safetensors_metadata_count(const mcl_safetensors *st)
{
    return st ? mcl_json_count(st->metadata) : 0;
}

int mcl_safetensors_metadata_at(const mcl_safetensors *st, uint64_t i, const char **key,
                                const char **value)
{
    if (!st || i >= mcl_json_count(st->metadata))
        return 0;
    const mcl_json_value *v = mcl_json_at(st->metadata, (uint32_t)i);
    if (key)
        *key = mcl_json_key(v, NULL);
    if (value)
        *value = mcl_json_string(v, NULL);
    return 1;
}

const char *mcl_safetensors_metadata(const mcl_safetensors *st, const char *key)
{
    return st ? mcl_json_string(mcl_json_find(st->metadata, key), NULL) : NULL;
}

mcl_status mcl_safetensors_read_f32(const mcl_st_tensor *t, float *dst, uint64_t n, char *why,
                                    size_t why_size)
{
    if (!t || (!dst && n))
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL argument");
    char shown[NAME_SHOWN + 4];
    mcl_text_show(t->name ? t->name : "", t->name ? t->name_len : 0, NAME_SHOWN, shown,
                  sizeof shown);
    if (!mcl_st_dtype_loadable(t->dtype))
        return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED, "tensor \"%s\": dtype %s is not "
                       "loaded (F32, F16 and BF16 are)", shown,
                       mcl_st_dtype_name(t->dtype) ? mcl_st_dtype_name(t->dtype) : "?");
    if (n != t->elements)
        return mcl_text_fail(why, why_size, MCL_ERROR_SHAPE_MISMATCH, "tensor \"%s\": %" PRIu64
                       " elements asked for, it has %" PRIu64, shown, n, t->elements);
    if (n && !t->data)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "tensor \"%s\": no data",
                       shown);
    switch (t->dtype) {
    case MCL_ST_F32: mcl_convert_f32_to_f32(t->data, dst, n); break;
    case MCL_ST_F16: mcl_convert_f16_to_f32(t->data, dst, n); break;
    default: mcl_convert_bf16_to_f32(t->data, dst, n); break;
    }
    return MCL_SUCCESS;
}
