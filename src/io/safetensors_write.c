/* The safetensors writer of safetensors.h: tensors and metadata collected in memory, then
 * the header written as JSON (checked by parsing it back), padded to 8 bytes, and the data
 * appended in the order the tensors were added. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/safetensors.h"
#include "core/alloc.h"

/* The header is padded with spaces to a multiple of this (the reference writer's rule). */
#define HEADER_ALIGN 8
#define HEADER_LENGTH_BYTES 8

typedef struct pending_tensor {
    char *name;
    mcl_st_dtype dtype;
    uint32_t ndim;
    int64_t *shape;
    unsigned char *data;
    uint64_t bytes;
} pending_tensor;

typedef struct pending_meta {
    char *key;
    char *value;
} pending_meta;

struct mcl_safetensors_writer {
    pending_tensor *tensors;
    size_t n_tensors, cap_tensors;
    pending_meta *meta;
    size_t n_meta, cap_meta;
};

/* A growing text buffer; `failed` once an allocation fails. */
typedef struct text_buf {
    char *data;
    size_t len, cap;
    int failed;
} text_buf;

static void put_bytes(text_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = mcl_mem_realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void put(text_buf *b, const char *s)
{
    put_bytes(b, s, strlen(s));
}

static void put_u64(text_buf *b, uint64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, v);
    put(b, num);
}

/* A JSON string: quotes, backslashes and control characters escaped; other bytes as given
 * (checked as UTF-8 when the header is parsed back). */
static void put_string(text_buf *b, const char *s)
{
    put(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put_bytes(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            put(b, esc);
        } else {
            put_bytes(b, (const char *)p, 1);
        }
    }
    put(b, "\"");
}

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = mcl_mem_malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

/* Room for one more element in an array of *cap. */
static int grow(void **data, size_t *cap, size_t len, size_t elem)
{
    if (len < *cap)
        return 1;
    size_t next = *cap ? *cap * 2 : 16;
    if (next > SIZE_MAX / elem)
        return 0;
    void *grown = mcl_mem_realloc(*data, next * elem);
    if (!grown)
        return 0;
    *data = grown;
    *cap = next;
    return 1;
}

mcl_safetensors_writer *mcl_safetensors_writer_create(void)
{
    return mcl_mem_calloc(1, sizeof(mcl_safetensors_writer));
}

void mcl_safetensors_writer_destroy(mcl_safetensors_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_tensors; i++) {
        mcl_mem_free(w->tensors[i].name);
        mcl_mem_free(w->tensors[i].shape);
        mcl_mem_free(w->tensors[i].data);
    }
    for (size_t i = 0; i < w->n_meta; i++) {
        mcl_mem_free(w->meta[i].key);
        mcl_mem_free(w->meta[i].value);
    }
    mcl_mem_free(w->tensors);
    mcl_mem_free(w->meta);
    mcl_mem_free(w);
}

mcl_status mcl_safetensors_writer_add_metadata(mcl_safetensors_writer *w, const char *key,
                                               const char *value)
{
    if (!w || !key || !value)
        return MCL_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < w->n_meta; i++)
        if (strcmp(w->meta[i].key, key) == 0)
            return MCL_ERROR_INVALID_ARGUMENT;
    if (!grow((void **)&w->meta, &w->cap_meta, w->n_meta, sizeof *w->meta))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    pending_meta m = {copy_string(key), copy_string(value)};
    if (!m.key || !m.value) {
        mcl_mem_free(m.key);
        mcl_mem_free(m.value);
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    }
    w->meta[w->n_meta++] = m;
    return MCL_SUCCESS;
}

mcl_status mcl_safetensors_writer_add_tensor(mcl_safetensors_writer *w, const char *name,
                                             mcl_st_dtype dtype, uint32_t ndim,
                                             const int64_t *shape, const void *data,
                                             uint64_t bytes)
{
    if (!w || !name || !name[0] || strcmp(name, "__metadata__") == 0 ||
        mcl_st_dtype_bits(dtype) == 0 || (ndim && !shape) || (bytes && !data))
        return MCL_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return MCL_ERROR_INVALID_ARGUMENT;
    uint64_t elements = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return MCL_ERROR_INVALID_ARGUMENT;
        if (shape[i] && elements > UINT64_MAX / (uint64_t)shape[i])
            return MCL_ERROR_INVALID_ARGUMENT;
        elements *= (uint64_t)shape[i];
    }
    uint32_t bits = mcl_st_dtype_bits(dtype);
    if (elements > UINT64_MAX / bits || elements * bits % 8 != 0 ||
        elements * bits / 8 != bytes || bytes > SIZE_MAX)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!grow((void **)&w->tensors, &w->cap_tensors, w->n_tensors, sizeof *w->tensors))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    pending_tensor t = {copy_string(name), dtype, ndim,
                        mcl_mem_malloc(ndim ? ndim * sizeof *shape : 1), mcl_mem_malloc(bytes ? bytes : 1),
                        bytes};
    if (!t.name || !t.shape || !t.data) {
        mcl_mem_free(t.name);
        mcl_mem_free(t.shape);
        mcl_mem_free(t.data);
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (ndim)
        memcpy(t.shape, shape, ndim * sizeof *shape);
    if (bytes)
        memcpy(t.data, data, (size_t)bytes);
    w->tensors[w->n_tensors++] = t;
    return MCL_SUCCESS;
}

/* The header's JSON, padded with spaces; 0 when out of memory. */
static int write_header(const mcl_safetensors_writer *w, text_buf *b)
{
    put(b, "{");
    if (w->n_meta) {
        put(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->n_meta; i++) {
            put(b, i ? "," : "");
            put_string(b, w->meta[i].key);
            put(b, ":");
            put_string(b, w->meta[i].value);
        }
        put(b, "}");
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const pending_tensor *t = &w->tensors[i];
        put(b, i || w->n_meta ? "," : "");
        put_string(b, t->name);
        put(b, ":{\"dtype\":\"");
        put(b, mcl_st_dtype_name(t->dtype));
        put(b, "\",\"shape\":[");
        for (uint32_t d = 0; d < t->ndim; d++) {
            put(b, d ? "," : "");
            put_u64(b, (uint64_t)t->shape[d]);
        }
        put(b, "],\"data_offsets\":[");
        put_u64(b, offset);
        put(b, ",");
        put_u64(b, offset + t->bytes);
        put(b, "]}");
        offset += t->bytes;
    }
    put(b, "}");
    while (!b->failed && b->len % HEADER_ALIGN)
        put(b, " ");
    return !b->failed;
}

mcl_status mcl_safetensors_writer_finish(mcl_safetensors_writer *w, void **out,
                                         uint64_t *size)
{
    if (!w || !out || !size)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    *size = 0;
    text_buf b = {0};
    if (!write_header(w, &b)) {
        mcl_mem_free(b.data);
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    }
    /* Parse it back: a name or metadata string that is not UTF-8 is refused here rather
     * than written into a file no reader accepts. */
    mcl_json *check = NULL;
    mcl_status s = mcl_json_parse(b.data, b.len, &check, NULL, 0);
    mcl_json_free(check);
    if (s != MCL_SUCCESS) {
        mcl_mem_free(b.data);
        return s == MCL_ERROR_OUT_OF_HOST_MEMORY ? s : MCL_ERROR_INVALID_ARGUMENT;
    }
    uint64_t data_bytes = 0;
    for (size_t i = 0; i < w->n_tensors; i++)
        data_bytes += w->tensors[i].bytes;
    uint64_t total = HEADER_LENGTH_BYTES + (uint64_t)b.len + data_bytes;
    unsigned char *file = total <= SIZE_MAX ? mcl_mem_malloc((size_t)total) : NULL;
    if (!file) {
        mcl_mem_free(b.data);
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    }
    uint64_t n = b.len;
    for (int i = 0; i < HEADER_LENGTH_BYTES; i++)
        file[i] = (unsigned char)(n >> (8 * i));
    memcpy(file + HEADER_LENGTH_BYTES, b.data, b.len);
    size_t at = HEADER_LENGTH_BYTES + b.len;
    for (size_t i = 0; i < w->n_tensors; i++) {
        if (w->tensors[i].bytes)
            memcpy(file + at, w->tensors[i].data, (size_t)w->tensors[i].bytes);
        at += (size_t)w->tensors[i].bytes;
    }
    mcl_mem_free(b.data);
    *out = file;
    *size = total;
    return MCL_SUCCESS;
}
