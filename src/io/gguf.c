/* The GGUF parser of gguf.h: header, metadata and tensor infos read from bytes in memory with
 * every count, length and offset checked before use (the type tables and the typed reads of
 * values are gguf_types.c's). */
#include "gguf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "gguf_internal.h"
#include "core/alloc.h"

/* gguf.md: "GGUF" read as bytes, then version, tensor_count and metadata_kv_count. */
static const unsigned char gguf_magic[4] = {0x47, 0x47, 0x55, 0x46};

/* The smallest encodings of a key-value pair (key length, a one-byte key, value type, a
 * uint8) and of a tensor info (name length, a one-byte name, n_dims, one dim, type, offset):
 * a file of n bytes holds at most n / these of each, which bounds what a header may claim. */
#define GGUF_MIN_KV_BYTES (8 + 1 + 4 + 1)
#define GGUF_MIN_TENSOR_BYTES (8 + 1 + 4 + 8 + 4 + 8)

/* Where a message names a tensor or key, it shows at most this many bytes of the name. */
#define NAME_SHOWN 64
/* Bytes of such a description: "tensor 123 (", the name, "...)". */
#define WHERE_SIZE (48 + NAME_SHOWN)

/* ---------------------------------------------------------------------------------------
 * Name lookup: open addressing over item indices, FNV-1a hashes
 * ------------------------------------------------------------------------------------- */

typedef struct name_index {
    uint64_t *slots; /* item index + 1; 0 is empty */
    uint64_t mask;
    const unsigned char *items; /* the array of items and where each one's name lies */
    size_t stride, name_at;
} name_index;

static uint64_t fnv1a(const char *p, uint64_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

/* Room for n items, at most half full. 0 when out of memory. */
static int index_init(name_index *ix, uint64_t n, const void *items, size_t stride,
                      size_t name_at)
{
    uint64_t cap = 8;
    while (cap < 2 * n)
        cap *= 2;
    if (cap > SIZE_MAX / sizeof *ix->slots)
        return 0;
    ix->slots = mcl_mem_calloc((size_t)cap, sizeof *ix->slots);
    ix->mask = cap - 1;
    ix->items = items;
    ix->stride = stride;
    ix->name_at = name_at;
    return ix->slots != NULL;
}

static mcl_gguf_str item_name(const name_index *ix, uint64_t i)
{
    mcl_gguf_str s;
    memcpy(&s, ix->items + (size_t)i * ix->stride + ix->name_at, sizeof s);
    return s;
}

/* The slot holding that name, or the empty slot where it would go. */
static uint64_t index_slot(const name_index *ix, const char *name, uint64_t len)
{
    uint64_t at = fnv1a(name, len) & ix->mask;
    while (ix->slots[at]) {
        mcl_gguf_str s = item_name(ix, ix->slots[at] - 1);
        if (s.len == len && (len == 0 || memcmp(s.data, name, (size_t)len) == 0))
            return at;
        at = (at + 1) & ix->mask;
    }
    return at;
}

/* The index of the item of that name, or UINT64_MAX. */
static uint64_t index_find(const name_index *ix, const char *name, uint64_t len)
{
    if (!ix->slots)
        return UINT64_MAX;
    uint64_t at = index_slot(ix, name, len);
    return ix->slots[at] ? ix->slots[at] - 1 : UINT64_MAX;
}

/* Add item i (its name must be new: check with index_find first). */
static void index_add(name_index *ix, uint64_t i)
{
    mcl_gguf_str s = item_name(ix, i);
    ix->slots[index_slot(ix, s.data, s.len)] = i + 1;
}

/* ---------------------------------------------------------------------------------------
 * The parser object
 * ------------------------------------------------------------------------------------- */

struct mcl_gguf {
    const unsigned char *base;
    uint64_t size;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    mcl_gguf_kv *kvs;
    uint64_t **str_at; /* per key: where each string of a string array starts, else NULL */
    uint64_t n_tensors;
    mcl_gguf_tensor *tensors;
    name_index keys;
    name_index names;
};

/* The parse in progress: the bytes, the position, and what is being read, for messages. */
typedef struct parser {
    mcl_gguf *g;
    const unsigned char *base;
    uint64_t size;
    uint64_t pos;
    char *why;
    size_t why_size;
    char where[WHERE_SIZE];
} parser;

static mcl_status fail(parser *p, mcl_status status, const char *fmt, ...)
{
    if (p->why && p->why_size) {
        int n = snprintf(p->why, p->why_size, "%s: ", p->where);
        if (n >= 0 && (size_t)n < p->why_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->why + n, p->why_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return status;
}

/* An item's description, "tensor 3 (blk.0.attn_q.weight)", into buf (WHERE_SIZE bytes).
 * Control bytes of the name are shown as '?', and a long name is cut. */
static void describe(char *buf, const char *what, uint64_t i, const mcl_gguf_str *name)
{
    int n = snprintf(buf, WHERE_SIZE, "%s %" PRIu64, what, i);
    if (!name || n < 0)
        return;
    size_t at = (size_t)n;
    uint64_t shown = name->len < NAME_SHOWN ? name->len : NAME_SHOWN;
    buf[at++] = ' ';
    buf[at++] = '(';
    for (uint64_t k = 0; k < shown && at + 8 < WHERE_SIZE; k++) {
        unsigned char c = (unsigned char)name->data[k];
        buf[at++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (shown < name->len && at + 8 < WHERE_SIZE) {
        memcpy(buf + at, "...", 3);
        at += 3;
    }
    buf[at++] = ')';
    buf[at] = '\0';
}

static void set_where(parser *p, const char *what, uint64_t i, const mcl_gguf_str *name)
{
    describe(p->where, what, i, name);
}

static uint64_t left(const parser *p)
{
    return p->size - p->pos;
}

static mcl_status truncated(parser *p, const char *field, uint64_t need)
{
    return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                "%s: %" PRIu64 " bytes needed at offset %" PRIu64 ", but the file ends at %" PRIu64,
                field, need, p->pos, p->size);
}

static mcl_status read_u32(parser *p, const char *field, uint32_t *v)
{
    if (left(p) < 4)
        return truncated(p, field, 4);
    *v = mcl_le32(p->base + p->pos);
    p->pos += 4;
    return MCL_SUCCESS;
}

static mcl_status read_u64(parser *p, const char *field, uint64_t *v)
{
    if (left(p) < 8)
        return truncated(p, field, 8);
    *v = mcl_le64(p->base + p->pos);
    p->pos += 8;
    return MCL_SUCCESS;
}

/* A gguf_string: its length, checked against the bytes left, then its bytes. */
static mcl_status read_str(parser *p, const char *field, mcl_gguf_str *s)
{
    uint64_t len = 0;
    mcl_status st = read_u64(p, field, &len);
    if (st != MCL_SUCCESS)
        return st;
    if (len > left(p))
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "%s: string length %" PRIu64 " at offset %" PRIu64
                    " past the end of the file (%" PRIu64 " bytes left)",
                    field, len, p->pos - 8, left(p));
    s->data = (const char *)p->base + p->pos;
    s->len = len;
    p->pos += len;
    return MCL_SUCCESS;
}

/* ---------------------------------------------------------------------------------------
 * Metadata
 * ------------------------------------------------------------------------------------- */

/* The strings of an array of `count`: each checked, and where each starts recorded. */
static mcl_status read_string_array(parser *p, uint64_t count, uint64_t **at_out)
{
    *at_out = NULL;
    if (count > left(p) / 8)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "array of %" PRIu64 " strings past the end of the file (%" PRIu64
                    " bytes left hold at most %" PRIu64 ")",
                    count, left(p), left(p) / 8);
    if (count == 0)
        return MCL_SUCCESS;
    if (count > SIZE_MAX / sizeof(uint64_t))
        return fail(p, MCL_ERROR_OUT_OF_HOST_MEMORY, "array of %" PRIu64 " strings", count);
    uint64_t *at = mcl_mem_malloc((size_t)count * sizeof *at);
    if (!at)
        return fail(p, MCL_ERROR_OUT_OF_HOST_MEMORY, "no memory to index %" PRIu64 " strings",
                    count);
    /* read_str's checks, inline: a vocabulary has 10^5 strings. */
    for (uint64_t j = 0; j < count; j++) {
        if (left(p) < 8) {
            mcl_mem_free(at);
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "string %" PRIu64 " of the array: 8 bytes needed at offset %" PRIu64
                        ", but the file ends at %" PRIu64,
                        j, p->pos, p->size);
        }
        uint64_t len = mcl_le64(p->base + p->pos);
        if (len > left(p) - 8) {
            mcl_mem_free(at);
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "string %" PRIu64 " of the array: string length %" PRIu64
                        " at offset %" PRIu64 " past the end of the file (%" PRIu64
                        " bytes left)",
                        j, len, p->pos, left(p) - 8);
        }
        at[j] = p->pos;
        p->pos += 8 + len;
    }
    *at_out = at;
    return MCL_SUCCESS;
}

/* A value: its type, then a scalar or an array (the key is read already). */
static mcl_status read_value(parser *p, mcl_gguf_kv *kv, uint64_t **str_at)
{
    uint32_t type = 0;
    mcl_status st = read_u32(p, "value type", &type);
    if (st != MCL_SUCCESS)
        return st;
    if (!mcl_gguf_type_name(type))
        return fail(p, MCL_ERROR_INVALID_ARGUMENT, "value type %" PRIu32 " is not a GGUF type",
                    type);
    kv->type = (mcl_gguf_type)type;
    kv->elem_type = kv->type;
    kv->count = 1;
    if (type == MCL_GGUF_ARRAY) {
        uint32_t elem = 0;
        if ((st = read_u32(p, "array element type", &elem)) != MCL_SUCCESS ||
            (st = read_u64(p, "array count", &kv->count)) != MCL_SUCCESS)
            return st;
        if (elem == MCL_GGUF_ARRAY)
            return fail(p, MCL_ERROR_UNSUPPORTED, "an array of arrays (not supported)");
        if (!mcl_gguf_type_name(elem))
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "array element type %" PRIu32 " is not a GGUF type", elem);
        kv->elem_type = (mcl_gguf_type)elem;
    }
    kv->data = p->base + p->pos;
    uint64_t start = p->pos;
    if (kv->elem_type == MCL_GGUF_STRING) {
        if (type == MCL_GGUF_ARRAY) {
            st = read_string_array(p, kv->count, str_at);
        } else {
            mcl_gguf_str s;
            st = read_str(p, "string value", &s);
        }
        if (st != MCL_SUCCESS)
            return st;
    } else {
        uint64_t size = mcl_gguf_value_size(kv->elem_type);
        if (kv->count > left(p) / size)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "%" PRIu64 " %s values of %" PRIu64 " bytes at offset %" PRIu64
                        " past the end of the file (%" PRIu64 " bytes left)",
                        kv->count, mcl_gguf_type_name(kv->elem_type), size, p->pos, left(p));
        p->pos += kv->count * size;
    }
    kv->bytes = p->pos - start;
    return MCL_SUCCESS;
}

static mcl_status read_metadata(parser *p)
{
    mcl_gguf *g = p->g;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        mcl_gguf_kv *kv = &g->kvs[i];
        set_where(p, "metadata key", i, NULL);
        mcl_status st = read_str(p, "key", &kv->key);
        if (st != MCL_SUCCESS)
            return st;
        if (kv->key.len == 0)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT, "empty key");
        set_where(p, "metadata key", i, &kv->key);
        uint64_t twin = index_find(&g->keys, kv->key.data, kv->key.len);
        if (twin != UINT64_MAX)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "duplicate key (also metadata key %" PRIu64 ")", twin);
        index_add(&g->keys, i);
        if ((st = read_value(p, kv, &g->str_at[i])) != MCL_SUCCESS)
            return st;
    }
    /* general.alignment: gguf.md makes it a uint32, as ggml's reader requires. */
    g->alignment = MCL_GGUF_DEFAULT_ALIGNMENT;
    const mcl_gguf_kv *a = mcl_gguf_find(g, "general.alignment");
    if (a) {
        set_where(p, "metadata key", (uint64_t)(a - g->kvs), &a->key);
        if (a->type != MCL_GGUF_UINT32)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT, "of type %s, must be uint32",
                        mcl_gguf_type_name(a->type));
        uint32_t v = mcl_le32(a->data);
        if (v == 0 || (v & (v - 1)) != 0)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT, "%" PRIu32 " is not a power of two", v);
        g->alignment = v;
    }
    return MCL_SUCCESS;
}

/* ---------------------------------------------------------------------------------------
 * Tensor infos and the data section
 * ------------------------------------------------------------------------------------- */

/* One tensor info: name, dims, type and offset, and what they give (elements, bytes). */
static mcl_status read_tensor_info(parser *p, uint64_t i)
{
    mcl_gguf *g = p->g;
    mcl_gguf_tensor *t = &g->tensors[i];
    set_where(p, "tensor", i, NULL);
    mcl_status st = read_str(p, "name", &t->name);
    if (st != MCL_SUCCESS)
        return st;
    if (t->name.len == 0)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT, "empty name");
    set_where(p, "tensor", i, &t->name);
    uint64_t twin = index_find(&g->names, t->name.data, t->name.len);
    if (twin != UINT64_MAX)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT, "duplicate name (also tensor %" PRIu64 ")",
                    twin);
    index_add(&g->names, i);

    if ((st = read_u32(p, "n_dims", &t->ndim)) != MCL_SUCCESS)
        return st;
    if (t->ndim < 1 || t->ndim > MCL_GGUF_MAX_DIMS)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT, "n_dims %" PRIu32 " (must be 1 to %d)",
                    t->ndim, MCL_GGUF_MAX_DIMS);
    uint64_t elems = 1;
    for (uint32_t d = 0; d < t->ndim; d++) {
        static const char *const fields[MCL_GGUF_MAX_DIMS] = {"dims[0]", "dims[1]", "dims[2]",
                                                              "dims[3]"};
        const char *field = fields[d];
        if ((st = read_u64(p, field, &t->dims[d])) != MCL_SUCCESS)
            return st;
        if (t->dims[d] == 0)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT, "%s is 0", field);
        /* ggml counts elements in int64_t. */
        if (t->dims[d] > (uint64_t)INT64_MAX / elems)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "%s = %" PRIu64 ": more than 2^63 - 1 elements", field, t->dims[d]);
        elems *= t->dims[d];
    }
    for (uint32_t d = t->ndim; d < MCL_GGUF_MAX_DIMS; d++)
        t->dims[d] = 1;
    if ((st = read_u32(p, "type", &t->type)) != MCL_SUCCESS ||
        (st = read_u64(p, "offset", &t->offset)) != MCL_SUCCESS)
        return st;

    uint64_t block_elems = mcl_ggml_block_elems(t->type);
    uint64_t block_bytes = mcl_ggml_block_bytes(t->type);
    if (block_elems) {
        const char *tn = mcl_ggml_type_name(t->type);
        if (t->dims[0] % block_elems != 0)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "dims[0] = %" PRIu64 " is not a multiple of %s's block of %" PRIu64
                        " elements",
                        t->dims[0], tn, block_elems);
        uint64_t blocks = elems / block_elems;
        if (blocks > UINT64_MAX / block_bytes)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "%" PRIu64 " blocks of %s: more bytes than 2^64", blocks, tn);
        t->bytes = blocks * block_bytes;
    }
    if (t->offset % g->alignment != 0)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "offset %" PRIu64 " is not a multiple of the alignment %" PRIu32, t->offset,
                    g->alignment);
    return MCL_SUCCESS;
}

typedef struct extent {
    uint64_t offset, bytes, index;
} extent;

static int extent_order(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Each tensor within the data section, and no two of known size sharing a byte. */
static mcl_status place_tensors(parser *p)
{
    mcl_gguf *g = p->g;
    uint64_t data_size = g->size - g->data_offset;
    uint64_t known = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        mcl_gguf_tensor *t = &g->tensors[i];
        set_where(p, "tensor", i, &t->name);
        if (t->bytes == 0) {
            /* A type of unknown size still has to start inside the data section. */
            if (t->offset >= data_size)
                return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                            "offset %" PRIu64 " (type %" PRIu32 ") past the end of the data "
                            "section (%" PRIu64 " bytes from offset %" PRIu64 ")",
                            t->offset, t->type, data_size, g->data_offset);
            continue;
        }
        if (t->offset > data_size || t->bytes > data_size - t->offset)
            return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                        "%" PRIu64 " bytes at offset %" PRIu64 " past the end of the data "
                        "section (%" PRIu64 " bytes from offset %" PRIu64 ")",
                        t->bytes, t->offset, data_size, g->data_offset);
        t->data = p->base + g->data_offset + t->offset;
        known++;
    }
    if (known < 2)
        return MCL_SUCCESS;
    extent *e = mcl_mem_malloc((size_t)known * sizeof *e);
    if (!e) {
        snprintf(p->where, sizeof p->where, "tensor infos");
        return fail(p, MCL_ERROR_OUT_OF_HOST_MEMORY, "no memory to sort %" PRIu64 " tensors",
                    known);
    }
    uint64_t n = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if (g->tensors[i].bytes)
            e[n++] = (extent){g->tensors[i].offset, g->tensors[i].bytes, i};
    }
    qsort(e, (size_t)n, sizeof *e, extent_order);
    mcl_status st = MCL_SUCCESS;
    for (uint64_t k = 1; k < n; k++) {
        if (e[k - 1].offset + e[k - 1].bytes > e[k].offset) {
            char earlier[WHERE_SIZE];
            describe(earlier, "tensor", e[k - 1].index, &g->tensors[e[k - 1].index].name);
            set_where(p, "tensor", e[k].index, &g->tensors[e[k].index].name);
            st = fail(p, MCL_ERROR_INVALID_ARGUMENT,
                      "bytes [%" PRIu64 ", %" PRIu64 ") overlap those of %s, [%" PRIu64
                      ", %" PRIu64 ")",
                      e[k].offset, e[k].offset + e[k].bytes, earlier, e[k - 1].offset,
                      e[k - 1].offset + e[k - 1].bytes);
            break;
        }
    }
    mcl_mem_free(e);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * The parse
 * ------------------------------------------------------------------------------------- */

static mcl_status read_header(parser *p, uint64_t *n_tensors, uint64_t *n_kv)
{
    snprintf(p->where, sizeof p->where, "header");
    if (p->size < sizeof gguf_magic)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "%" PRIu64 " bytes, too short for the magic \"GGUF\"", p->size);
    if (memcmp(p->base, gguf_magic, sizeof gguf_magic) != 0)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "magic %02x %02x %02x %02x is not \"GGUF\" (47 47 55 46)", p->base[0],
                    p->base[1], p->base[2], p->base[3]);
    p->pos = sizeof gguf_magic;
    uint32_t version = 0;
    mcl_status st = read_u32(p, "version", &version);
    if (st != MCL_SUCCESS)
        return st;
    if (version == 1)
        return fail(p, MCL_ERROR_UNSUPPORTED,
                    "GGUF version 1 (32-bit counts) is not supported; versions 2 and 3 are");
    if (version != 2 && version != 3) {
        if ((version & 0xffff) == 0 && version != 0)
            return fail(p, MCL_ERROR_UNSUPPORTED,
                        "version 0x%08" PRIx32 ": a big-endian file? Only little-endian "
                        "GGUF (versions 2 and 3) is supported", version);
        return fail(p, MCL_ERROR_UNSUPPORTED,
                    "GGUF version %" PRIu32 " is not supported; versions 2 and 3 are", version);
    }
    p->g->version = version;
    if ((st = read_u64(p, "tensor_count", n_tensors)) != MCL_SUCCESS ||
        (st = read_u64(p, "metadata_kv_count", n_kv)) != MCL_SUCCESS)
        return st;
    /* Counts bounded by what the rest of the file can hold, before anything is allocated. */
    uint64_t rest = left(p);
    if (*n_kv > rest / GGUF_MIN_KV_BYTES)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "metadata_kv_count %" PRIu64 ": the %" PRIu64
                    " bytes left hold at most %" PRIu64 " keys",
                    *n_kv, rest, rest / GGUF_MIN_KV_BYTES);
    if (*n_tensors > rest / GGUF_MIN_TENSOR_BYTES)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "tensor_count %" PRIu64 ": the %" PRIu64
                    " bytes left hold at most %" PRIu64 " tensor infos",
                    *n_tensors, rest, rest / GGUF_MIN_TENSOR_BYTES);
    if (*n_kv * GGUF_MIN_KV_BYTES > rest - *n_tensors * GGUF_MIN_TENSOR_BYTES)
        return fail(p, MCL_ERROR_INVALID_ARGUMENT,
                    "metadata_kv_count %" PRIu64 " and tensor_count %" PRIu64
                    ": more than the %" PRIu64 " bytes left can hold",
                    *n_kv, *n_tensors, rest);
    return MCL_SUCCESS;
}

/* The arrays a parse fills, sized by the header's (already bounded) counts. */
static mcl_status allocate(parser *p, uint64_t n_tensors, uint64_t n_kv)
{
    mcl_gguf *g = p->g;
    /* Both counts are below size / 14, and size bytes are in memory, but a size_t of 32
     * bits is checked all the same. */
    if (n_kv >= SIZE_MAX / sizeof *g->kvs || n_tensors >= SIZE_MAX / sizeof *g->tensors)
        return fail(p, MCL_ERROR_OUT_OF_HOST_MEMORY,
                    "%" PRIu64 " keys and %" PRIu64 " tensors do not fit in memory", n_kv,
                    n_tensors);
    g->kvs = mcl_mem_calloc((size_t)n_kv + 1, sizeof *g->kvs);
    g->str_at = mcl_mem_calloc((size_t)n_kv + 1, sizeof *g->str_at);
    g->tensors = mcl_mem_calloc((size_t)n_tensors + 1, sizeof *g->tensors);
    if (!g->kvs || !g->str_at || !g->tensors ||
        !index_init(&g->keys, n_kv, g->kvs, sizeof *g->kvs, offsetof(mcl_gguf_kv, key)) ||
        !index_init(&g->names, n_tensors, g->tensors, sizeof *g->tensors,
                    offsetof(mcl_gguf_tensor, name)))
        return fail(p, MCL_ERROR_OUT_OF_HOST_MEMORY,
                    "no memory for %" PRIu64 " keys and %" PRIu64 " tensors", n_kv, n_tensors);
    g->n_kv = n_kv;
    g->n_tensors = n_tensors;
    return MCL_SUCCESS;
}

mcl_status mcl_gguf_parse(const void *data, uint64_t size, mcl_gguf **out, char *why,
                          size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (out)
        *out = NULL;
    parser p = {.base = data, .size = size, .why = why, .why_size = why_size};
    snprintf(p.where, sizeof p.where, "arguments");
    if (!out || (!data && size))
        return fail(&p, MCL_ERROR_INVALID_ARGUMENT, "out is NULL, or data is NULL with a size");
    mcl_gguf *g = mcl_mem_calloc(1, sizeof *g);
    if (!g)
        return fail(&p, MCL_ERROR_OUT_OF_HOST_MEMORY, "no memory for the parser");
    g->base = data;
    g->size = size;
    p.g = g;

    uint64_t n_tensors = 0, n_kv = 0;
    mcl_status st = read_header(&p, &n_tensors, &n_kv);
    if (st == MCL_SUCCESS)
        st = allocate(&p, n_tensors, n_kv);
    if (st == MCL_SUCCESS)
        st = read_metadata(&p);
    for (uint64_t i = 0; st == MCL_SUCCESS && i < g->n_tensors; i++)
        st = read_tensor_info(&p, i);
    if (st != MCL_SUCCESS)
        goto fail;

    /* The data section starts at the next multiple of the alignment; a file without tensors
     * may end before that (ggml's writer pads only when there is data). */
    uint64_t pad = (g->alignment - p.pos % g->alignment) % g->alignment;
    if (pad > left(&p)) {
        if (g->n_tensors) {
            snprintf(p.where, sizeof p.where, "data section");
            st = fail(&p, MCL_ERROR_INVALID_ARGUMENT,
                      "would start at offset %" PRIu64 " (tensor infos end at %" PRIu64
                      ", alignment %" PRIu32 "), past the end of the file (%" PRIu64 " bytes)",
                      p.pos + pad, p.pos, g->alignment, size);
            goto fail;
        }
        pad = left(&p);
    }
    g->data_offset = p.pos + pad;
    if ((st = place_tensors(&p)) != MCL_SUCCESS)
        goto fail;
    *out = g;
    return MCL_SUCCESS;

fail:
    mcl_gguf_free(g);
    return st;
}

void mcl_gguf_free(mcl_gguf *g)
{
    if (!g)
        return;
    if (g->str_at) {
        for (uint64_t i = 0; i < g->n_kv; i++)
            mcl_mem_free(g->str_at[i]);
    }
    mcl_mem_free(g->str_at);
    mcl_mem_free(g->kvs);
    mcl_mem_free(g->tensors);
    mcl_mem_free(g->keys.slots);
    mcl_mem_free(g->names.slots);
    mcl_mem_free(g);
}

/* ---------------------------------------------------------------------------------------
 * Queries
 * ------------------------------------------------------------------------------------- */

uint32_t mcl_gguf_version(const mcl_gguf *g)
{
    return g ? g->version : 0;
}

uint32_t mcl_gguf_alignment(const mcl_gguf *g)
{
    return g ? g->alignment : 0;
}

uint64_t mcl_gguf_data_offset(const mcl_gguf *g)
{
    return g ? g->data_offset : 0;
}

uint64_t mcl_gguf_kv_count(const mcl_gguf *g)
{
    return g ? g->n_kv : 0;
}

const mcl_gguf_kv *mcl_gguf_kv_at(const mcl_gguf *g, uint64_t i)
{
    return g && i < g->n_kv ? &g->kvs[i] : NULL;
}

const mcl_gguf_kv *mcl_gguf_find(const mcl_gguf *g, const char *key)
{
    if (!g || !key)
        return NULL;
    uint64_t i = index_find(&g->keys, key, strlen(key));
    return i == UINT64_MAX ? NULL : &g->kvs[i];
}

uint64_t mcl_gguf_tensor_count(const mcl_gguf *g)
{
    return g ? g->n_tensors : 0;
}

const mcl_gguf_tensor *mcl_gguf_tensor_at(const mcl_gguf *g, uint64_t i)
{
    return g && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const mcl_gguf_tensor *mcl_gguf_tensor_find(const mcl_gguf *g, const char *name)
{
    if (!g || !name)
        return NULL;
    uint64_t i = index_find(&g->names, name, strlen(name));
    return i == UINT64_MAX ? NULL : &g->tensors[i];
}

/* ---------------------------------------------------------------------------------------
 * Strings of string arrays (the parse's index of where each one starts)
 * ------------------------------------------------------------------------------------- */

int mcl_gguf_array_str(const mcl_gguf *g, const mcl_gguf_kv *kv, uint64_t i,
                       mcl_gguf_str *out)
{
    if (!g || !kv || kv->type != MCL_GGUF_ARRAY || kv->elem_type != MCL_GGUF_STRING ||
        i >= kv->count)
        return 0;
    /* kv must be one of g's keys: compared as addresses, not by pointer subtraction. */
    uintptr_t first = (uintptr_t)g->kvs, at = (uintptr_t)kv;
    if (at < first || at >= first + g->n_kv * sizeof *g->kvs ||
        (at - first) % sizeof *g->kvs != 0)
        return 0;
    const uint64_t *starts = g->str_at[(at - first) / sizeof *g->kvs];
    const unsigned char *p = g->base + starts[i];
    out->len = mcl_le64(p);
    out->data = (const char *)p + 8;
    return 1;
}
