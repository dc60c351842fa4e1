/* The GGUF writer of gguf.h: builds a file in memory (header, metadata, tensor infos, the
 * aligned data section) by the layout rules of ggml's reader, so that llama.cpp reads what
 * it writes: tensors in the order added, each at the next multiple of the alignment, every
 * tensor (the last too) padded to the alignment with zeros. */
#include "gguf.h"

#include <stdlib.h>
#include <string.h>

#include "gguf_internal.h"
#include "core/alloc.h"

/* A growing byte buffer. */
typedef struct buffer {
    unsigned char *p;
    size_t len, cap;
} buffer;

/* A list of the names used so far (keys or tensor names), to refuse a repeated one. */
typedef struct name_list {
    char **items;
    size_t count, cap;
} name_list;

struct mcl_gguf_writer {
    uint32_t version;
    uint32_t alignment;
    buffer meta; /* the key-value pairs */
    uint64_t n_kv;
    buffer infos; /* the tensor infos */
    uint64_t n_tensors;
    buffer data; /* the data section: every tensor padded to the alignment */
    name_list keys;
    name_list names;
};

static int reserve(buffer *b, size_t more)
{
    if (more > SIZE_MAX - b->len)
        return 0;
    if (b->len + more <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap = cap > SIZE_MAX / 2 ? b->len + more : cap * 2;
    unsigned char *p = mcl_mem_realloc(b->p, cap);
    if (!p)
        return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}

/* Appends (room reserved by the caller). */
static void put(buffer *b, const void *src, size_t n)
{
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_le(buffer *b, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        b->p[b->len++] = (unsigned char)(v >> (8 * i));
}

static void put_str(buffer *b, const char *s, size_t n)
{
    put_le(b, n, 8);
    put(b, s, n);
}

static int name_used(const name_list *l, const char *name)
{
    for (size_t i = 0; i < l->count; i++) {
        if (strcmp(l->items[i], name) == 0)
            return 1;
    }
    return 0;
}

static int name_add(name_list *l, const char *name)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **items = mcl_mem_realloc(l->items, cap * sizeof *items);
        if (!items)
            return 0;
        l->items = items;
        l->cap = cap;
    }
    size_t n = strlen(name) + 1;
    char *copy = mcl_mem_malloc(n);
    if (!copy)
        return 0;
    memcpy(copy, name, n);
    l->items[l->count++] = copy;
    return 1;
}

static void names_free(name_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        mcl_mem_free(l->items[i]);
    mcl_mem_free(l->items);
}

mcl_gguf_writer *mcl_gguf_writer_create(uint32_t version, uint32_t alignment)
{
    if ((version != 2 && version != 3) || alignment == 0 || (alignment & (alignment - 1)))
        return NULL;
    mcl_gguf_writer *w = mcl_mem_calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->version = version;
    w->alignment = alignment;
    return w;
}

void mcl_gguf_writer_destroy(mcl_gguf_writer *w)
{
    if (!w)
        return;
    mcl_mem_free(w->meta.p);
    mcl_mem_free(w->infos.p);
    mcl_mem_free(w->data.p);
    names_free(&w->keys);
    names_free(&w->names);
    mcl_mem_free(w);
}

/* Bytes the encoding of one value takes (0: a type this cannot encode). */
static size_t value_bytes(mcl_gguf_type type, const void *value)
{
    if (type == MCL_GGUF_STRING) {
        size_t n = strlen((const char *)value);
        return n > SIZE_MAX - 8 ? 0 : 8 + n;
    }
    return mcl_gguf_value_size(type);
}

/* One value, little-endian; `value` as mcl_gguf_writer_add describes it. */
static void put_value(buffer *b, mcl_gguf_type type, const void *value)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (mcl_gguf_value_size(type)) {
    case 1: memcpy(&u8, value, 1); put_le(b, u8, 1); break;
    case 2: memcpy(&u16, value, 2); put_le(b, u16, 2); break;
    case 4: memcpy(&u32, value, 4); put_le(b, u32, 4); break;
    case 8: memcpy(&u64, value, 8); put_le(b, u64, 8); break;
    default: {
        const char *s = value;
        put_str(b, s, strlen(s));
        break;
    }
    }
}

/* The checks every key passes. */
static int key_ok(const mcl_gguf_writer *w, const char *key)
{
    return w && key && key[0] && strcmp(key, "general.alignment") != 0 &&
           !name_used(&w->keys, key);
}

/* A bool value (a uint8_t) is 0 or 1. */
static int bool_ok(mcl_gguf_type type, const void *value)
{
    return type != MCL_GGUF_BOOL || *(const uint8_t *)value <= 1;
}

/* The key and the value type, once the whole entry's room is reserved. */
static mcl_status put_key(mcl_gguf_writer *w, const char *key, size_t value_size)
{
    size_t key_len = strlen(key);
    if (key_len > SIZE_MAX - 12 - value_size || !reserve(&w->meta, 12 + key_len + value_size))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    if (!name_add(&w->keys, key))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    put_str(&w->meta, key, key_len);
    return MCL_SUCCESS;
}

mcl_status mcl_gguf_writer_add(mcl_gguf_writer *w, const char *key, mcl_gguf_type type,
                               const void *value)
{
    if (!key_ok(w, key) || !value || type == MCL_GGUF_ARRAY ||
        (type != MCL_GGUF_STRING && mcl_gguf_value_size(type) == 0) || !bool_ok(type, value))
        return MCL_ERROR_INVALID_ARGUMENT;
    size_t bytes = value_bytes(type, value);
    if (bytes == 0)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    mcl_status st = put_key(w, key, 4 + bytes);
    if (st != MCL_SUCCESS)
        return st;
    put_le(&w->meta, (uint32_t)type, 4);
    put_value(&w->meta, type, value);
    w->n_kv++;
    return MCL_SUCCESS;
}

mcl_status mcl_gguf_writer_add_array(mcl_gguf_writer *w, const char *key,
                                     mcl_gguf_type elem_type, uint64_t count,
                                     const void *values)
{
    if (!key_ok(w, key) || (count && !values) || elem_type == MCL_GGUF_ARRAY ||
        (elem_type != MCL_GGUF_STRING && mcl_gguf_value_size(elem_type) == 0))
        return MCL_ERROR_INVALID_ARGUMENT;
    if (count > SIZE_MAX)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    /* The elements' bytes, and their checks, before anything is written. */
    size_t size = mcl_gguf_value_size(elem_type), bytes = 0;
    const char *const *strings = values;
    for (uint64_t i = 0; i < count; i++) {
        const void *v = elem_type == MCL_GGUF_STRING ? (const void *)strings[i]
                                                     : (const unsigned char *)values + i * size;
        if (!v || !bool_ok(elem_type, v))
            return MCL_ERROR_INVALID_ARGUMENT;
        size_t n = value_bytes(elem_type, v);
        if (n == 0 || n > SIZE_MAX - bytes)
            return MCL_ERROR_OUT_OF_HOST_MEMORY;
        bytes += n;
    }
    if (bytes > SIZE_MAX - 16)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    mcl_status st = put_key(w, key, 16 + bytes);
    if (st != MCL_SUCCESS)
        return st;
    put_le(&w->meta, MCL_GGUF_ARRAY, 4);
    put_le(&w->meta, (uint32_t)elem_type, 4);
    put_le(&w->meta, count, 8);
    for (uint64_t i = 0; i < count; i++) {
        const void *v = elem_type == MCL_GGUF_STRING ? (const void *)strings[i]
                                                     : (const unsigned char *)values + i * size;
        put_value(&w->meta, elem_type, v);
    }
    w->n_kv++;
    return MCL_SUCCESS;
}

/* The size in bytes that ndim dims of a type give, or 0 when they are not a valid shape. */
static uint64_t tensor_bytes(uint32_t ndim, const uint64_t *dims, uint32_t type)
{
    uint64_t block_elems = mcl_ggml_block_elems(type), block_bytes = mcl_ggml_block_bytes(type);
    if (!block_elems || dims[0] % block_elems != 0)
        return 0;
    uint64_t elems = 1;
    for (uint32_t d = 0; d < ndim; d++) {
        if (dims[d] == 0 || dims[d] > (uint64_t)INT64_MAX / elems)
            return 0;
        elems *= dims[d];
    }
    uint64_t blocks = elems / block_elems;
    return blocks > UINT64_MAX / block_bytes ? 0 : blocks * block_bytes;
}

mcl_status mcl_gguf_writer_add_tensor(mcl_gguf_writer *w, const char *name, uint32_t ndim,
                                      const uint64_t *dims, uint32_t type, const void *data,
                                      uint64_t bytes)
{
    if (!w || !name || !name[0] || strlen(name) >= MCL_GGML_MAX_NAME ||
        name_used(&w->names, name) || ndim < 1 || ndim > MCL_GGUF_MAX_DIMS || !dims || !data)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_ggml_block_elems(type) == 0)
        return MCL_ERROR_UNSUPPORTED;
    uint64_t want = tensor_bytes(ndim, dims, type);
    if (want == 0 || bytes != want)
        return MCL_ERROR_INVALID_ARGUMENT;
    size_t pad = (size_t)((w->alignment - bytes % w->alignment) % w->alignment);
    size_t name_len = strlen(name);
    if (bytes > SIZE_MAX - pad || !reserve(&w->data, (size_t)bytes + pad) ||
        !reserve(&w->infos, 8 + name_len + 4 + 8 * ndim + 4 + 8) || !name_add(&w->names, name))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    put_str(&w->infos, name, name_len);
    put_le(&w->infos, ndim, 4);
    for (uint32_t d = 0; d < ndim; d++)
        put_le(&w->infos, dims[d], 8);
    put_le(&w->infos, type, 4);
    put_le(&w->infos, w->data.len, 8); /* a multiple of the alignment: each tensor is padded */
    put(&w->data, data, (size_t)bytes);
    memset(w->data.p + w->data.len, 0, pad);
    w->data.len += pad;
    w->n_tensors++;
    return MCL_SUCCESS;
}

mcl_status mcl_gguf_writer_finish(mcl_gguf_writer *w, void **out, uint64_t *size)
{
    if (!w || !out || !size)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    *size = 0;
    static const char align_key[] = "general.alignment";
    int write_alignment = w->alignment != MCL_GGUF_DEFAULT_ALIGNMENT;
    size_t align_kv = write_alignment ? 8 + (sizeof align_key - 1) + 4 + 4 : 0;
    size_t head = 4 + 4 + 8 + 8 + align_kv;
    /* The tensor infos end at head + meta + infos; the data section starts aligned. */
    size_t total = head;
    if (w->meta.len > SIZE_MAX - total || w->infos.len > SIZE_MAX - total - w->meta.len)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    total += w->meta.len + w->infos.len;
    size_t pad = w->n_tensors ? (w->alignment - total % w->alignment) % w->alignment : 0;
    if (pad > SIZE_MAX - total || w->data.len > SIZE_MAX - total - pad)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    total += pad + w->data.len;

    buffer file = {0};
    if (!reserve(&file, total ? total : 1))
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    put(&file, "GGUF", 4);
    put_le(&file, w->version, 4);
    put_le(&file, w->n_tensors, 8);
    put_le(&file, w->n_kv + (uint64_t)write_alignment, 8);
    if (write_alignment) {
        put_str(&file, align_key, sizeof align_key - 1);
        put_le(&file, MCL_GGUF_UINT32, 4);
        put_le(&file, w->alignment, 4);
    }
    put(&file, w->meta.p, w->meta.len);
    put(&file, w->infos.p, w->infos.len);
    memset(file.p + file.len, 0, pad);
    file.len += pad;
    put(&file, w->data.p, w->data.len);
    *out = file.p;
    *size = file.len;
    return MCL_SUCCESS;
}
