/* The strict JSON parser of json.h: one pass over the bytes with an explicit stack of open
 * containers (no recursion), values kept in two arrays.
 *
 * A finished value goes onto `pending`; when its container closes, the container's children
 * (the top of `pending`) move in one block to `nodes`, so the members of every array and
 * object lie next to each other there and element i is found in O(1). Objects of more than
 * SMALL_OBJECT members get a list of their member positions sorted by key (checked for
 * duplicates on the way), which makes lookup O(log n). Strings are unescaped into one pool of
 * the input's size (unescaping never makes a string longer), so their addresses are final
 * from the start; container links are indices while the arrays grow, pointers at the end. */
#include "io/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_internal.h"
#include "core/alloc.h"

/* Objects up to this many members are searched (and checked for duplicates) linearly. */
#define SMALL_OBJECT 8u
/* No sorted index. */
#define NO_INDEX UINT32_MAX

/* --- Growth ------------------------------------------------------------------------------ */

/* Make room for `extra` more elements of `elem` bytes in a vector of *cap; 0 when out of
 * memory. Counts stay below 2^32 because the input does (one node per byte at most). */
static int reserve(void **data, uint32_t *cap, uint32_t len, uint32_t extra, size_t elem)
{
    uint64_t need = (uint64_t)len + extra;
    if (need <= *cap)
        return 1;
    uint64_t next = *cap ? (uint64_t)*cap * 2 : 64;
    while (next < need)
        next *= 2;
    if (next > UINT32_MAX)
        next = UINT32_MAX;
    if (next < need || next > SIZE_MAX / elem)
        return 0;
    void *grown = mcl_mem_realloc(*data, (size_t)next * elem);
    if (!grown)
        return 0;
    *data = grown;
    *cap = (uint32_t)next;
    return 1;
}

static int push_pending(mcl_json_parser *ps, const mcl_json_value *v)
{
    mcl_json_node_vec *pv = &ps->pending;
    if (!reserve((void **)&pv->data, &pv->cap, pv->len, 1, sizeof *pv->data))
        return mcl_json_out_of_memory(ps);
    pv->data[pv->len++] = *v;
    return 1;
}

/* A new value at `offset`, carrying the pending key (which it consumes). */
static mcl_json_value new_value(mcl_json_parser *ps, mcl_json_kind kind, uint64_t offset)
{
    mcl_json_value v;
    memset(&v, 0, sizeof v);
    v.kind = (uint8_t)kind;
    v.offset = (uint32_t)offset;
    v.key = ps->key;
    v.key_len = ps->key_len;
    ps->key = NULL;
    ps->key_len = 0;
    return v;
}

/* --- Scalars ----------------------------------------------------------------------------- */

static int push_literal(mcl_json_parser *ps, const char *word, mcl_json_kind kind, int truth)
{
    uint64_t start = ps->pos;
    if (!mcl_json_lex_literal(ps, word))
        return 0;
    mcl_json_value v = new_value(ps, kind, start);
    v.x.i = truth;
    return push_pending(ps, &v);
}

static int push_number(mcl_json_parser *ps)
{
    mcl_json_value v = new_value(ps, MCL_JSON_NUMBER, ps->pos);
    return mcl_json_lex_number(ps, &v) && push_pending(ps, &v);
}

/* --- Objects: key order and duplicates ------------------------------------------------- */

static int key_cmp(const mcl_json_value *a, const mcl_json_value *b)
{
    uint32_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = n ? memcmp(a->key, b->key, n) : 0;
    if (c)
        return c;
    return (a->key_len > b->key_len) - (a->key_len < b->key_len);
}

/* Sort member positions 0..n-1 by key: a bottom-up merge sort (stable, O(n log n), no
 * recursion) through `tmp` (n entries); the result is left in idx. */
static void sort_members(uint32_t *idx, uint32_t *tmp, const mcl_json_value *items, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        idx[i] = i;
    uint32_t *src = idx, *dst = tmp;
    for (uint64_t width = 1; width < n; width *= 2) {
        for (uint64_t lo = 0; lo < n; lo += 2 * width) {
            uint64_t mid = lo + width < n ? lo + width : n;
            uint64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = key_cmp(&items[src[b]], &items[src[a]]) < 0 ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        uint32_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != idx)
        memcpy(idx, src, n * sizeof *idx);
}

static int duplicate_key(mcl_json_parser *ps, const mcl_json_value *a, const mcl_json_value *b)
{
    const mcl_json_value *later = a->offset > b->offset ? a : b;
    /* Up to 64 bytes of the key, with anything unprintable shown as '?'. */
    char shown[68];
    uint32_t n = later->key_len < 64 ? later->key_len : 64;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)later->key[i];
        shown[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    strcpy(shown + n, later->key_len > 64 ? "..." : "");
    return mcl_json_fail_at(ps, later->offset, "duplicate key \"%s\" in an object", shown);
}

/* Check an object's members (items[0..n)) for duplicate keys; sort large ones. */
static int index_object(mcl_json_parser *ps, mcl_json_value *obj, const mcl_json_value *items, uint32_t n)
{
    obj->u.link.sorted = NO_INDEX;
    if (n <= SMALL_OBJECT) {
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = i + 1; j < n; j++)
                if (key_cmp(&items[i], &items[j]) == 0)
                    return duplicate_key(ps, &items[i], &items[j]);
        return 1;
    }
    if (!reserve((void **)&ps->sorted, &ps->sorted_cap, ps->sorted_len, n, sizeof *ps->sorted) ||
        !reserve((void **)&ps->scratch, &ps->scratch_cap, 0, n, sizeof *ps->scratch))
        return mcl_json_out_of_memory(ps);
    uint32_t *idx = ps->sorted + ps->sorted_len;
    sort_members(idx, ps->scratch, items, n);
    for (uint32_t i = 1; i < n; i++)
        if (key_cmp(&items[idx[i - 1]], &items[idx[i]]) == 0)
            return duplicate_key(ps, &items[idx[i - 1]], &items[idx[i]]);
    obj->u.link.sorted = ps->sorted_len;
    ps->sorted_len += n;
    return 1;
}

/* --- Containers -------------------------------------------------------------------------- */

static int open_container(mcl_json_parser *ps, mcl_json_kind kind)
{
    if (ps->depth == MCL_JSON_MAX_DEPTH)
        return mcl_json_fail_at(ps, ps->pos, "nesting deeper than %d arrays and objects",
                       MCL_JSON_MAX_DEPTH);
    mcl_json_frame *f = &ps->stack[ps->depth++];
    f->kind = (uint8_t)kind;
    f->pending_start = ps->pending.len;
    f->offset = (uint32_t)ps->pos;
    f->key = ps->key;
    f->key_len = ps->key_len;
    ps->key = NULL;
    ps->key_len = 0;
    ps->pos++;
    return 1;
}

/* Close the top container: its children move from pending to nodes in one block. */
static int close_container(mcl_json_parser *ps)
{
    mcl_json_frame *f = &ps->stack[--ps->depth];
    uint32_t n = ps->pending.len - f->pending_start;
    mcl_json_node_vec *nv = &ps->nodes;
    if (!reserve((void **)&nv->data, &nv->cap, nv->len, n, sizeof *nv->data))
        return mcl_json_out_of_memory(ps);
    uint32_t first = nv->len;
    if (n)
        memcpy(nv->data + first, ps->pending.data + f->pending_start, n * sizeof *nv->data);
    nv->len += n;
    ps->pending.len = f->pending_start;

    mcl_json_value v;
    memset(&v, 0, sizeof v);
    v.kind = f->kind;
    v.offset = f->offset;
    v.key = f->key;
    v.key_len = f->key_len;
    v.count = n;
    v.u.link.first = first;
    v.u.link.sorted = NO_INDEX;
    if (f->kind == MCL_JSON_OBJECT && n > 0 && !index_object(ps, &v, nv->data + first, n))
        return 0;
    return push_pending(ps, &v);
}

/* A member's key and colon, at pos (whitespace skipped); leaves pos at its value. */
static int parse_member_key(mcl_json_parser *ps)
{
    if (ps->pos >= ps->size || ps->p[ps->pos] != '"')
        return mcl_json_expected(ps, "a string key");
    if (!mcl_json_lex_string(ps, &ps->key, &ps->key_len))
        return 0;
    mcl_json_skip_ws(ps);
    if (ps->pos >= ps->size || ps->p[ps->pos] != ':')
        return mcl_json_expected(ps, "':' after an object key");
    ps->pos++;
    mcl_json_skip_ws(ps);
    return 1;
}

enum { VALUE_ERROR, VALUE_DONE, VALUE_OPENED };

/* The value at pos: a scalar is pushed (VALUE_DONE); an array or object is opened and, when
 * not empty, its first element is still to come (VALUE_OPENED). */
static int begin_value(mcl_json_parser *ps)
{
    if (ps->pos >= ps->size) {
        mcl_json_expected(ps, "a value");
        return VALUE_ERROR;
    }
    unsigned char c = ps->p[ps->pos];
    int ok;
    switch (c) {
    case '{':
    case '[': {
        int object = c == '{';
        if (!open_container(ps, object ? MCL_JSON_OBJECT : MCL_JSON_ARRAY))
            return VALUE_ERROR;
        mcl_json_skip_ws(ps);
        if (ps->pos < ps->size && ps->p[ps->pos] == (object ? '}' : ']')) {
            ps->pos++;
            return close_container(ps) ? VALUE_DONE : VALUE_ERROR;
        }
        if (object && !parse_member_key(ps))
            return VALUE_ERROR;
        return VALUE_OPENED;
    }
    case '"': {
        uint64_t start = ps->pos;
        const char *s;
        uint32_t len;
        if (!mcl_json_lex_string(ps, &s, &len))
            return VALUE_ERROR;
        mcl_json_value v = new_value(ps, MCL_JSON_STRING, start);
        v.u.str = s;
        v.count = len;
        ok = push_pending(ps, &v);
        break;
    }
    case 't': ok = push_literal(ps, "true", MCL_JSON_BOOL, 1); break;
    case 'f': ok = push_literal(ps, "false", MCL_JSON_BOOL, 0); break;
    case 'n': ok = push_literal(ps, "null", MCL_JSON_NULL, 0); break;
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            ok = push_number(ps);
        else
            ok = mcl_json_expected(ps, "a value");
        break;
    }
    return ok ? VALUE_DONE : VALUE_ERROR;
}

/* After a value inside containers: close what ends here; 1 when another value follows (pos
 * at it), 2 when the outermost value is complete, 0 on error. */
static int after_value(mcl_json_parser *ps)
{
    while (ps->depth > 0) {
        const mcl_json_frame *f = &ps->stack[ps->depth - 1];
        int object = f->kind == MCL_JSON_OBJECT;
        mcl_json_skip_ws(ps);
        unsigned char c = ps->pos < ps->size ? ps->p[ps->pos] : 0;
        if (ps->pos < ps->size && c == ',') {
            ps->pos++;
            mcl_json_skip_ws(ps);
            if (object && !parse_member_key(ps))
                return 0;
            return 1;
        }
        if (ps->pos < ps->size && c == (object ? '}' : ']')) {
            ps->pos++;
            if (!close_container(ps))
                return 0;
            continue;
        }
        return mcl_json_expected(ps, object ? "',' or '}' after an object member"
                                   : "',' or ']' after an array element");
    }
    return 2;
}

static int parse_document(mcl_json_parser *ps)
{
    mcl_json_skip_ws(ps);
    for (;;) {
        int r = begin_value(ps);
        if (r == VALUE_ERROR)
            return 0;
        if (r == VALUE_OPENED)
            continue;
        r = after_value(ps);
        if (r == 0)
            return 0;
        if (r == 2)
            break;
    }
    mcl_json_skip_ws(ps);
    if (ps->pos != ps->size)
        return mcl_json_expected(ps, "the end of the input after the value");
    return 1;
}

/* Turn the indices of containers into pointers, now that the arrays no longer move. */
static void link_nodes(mcl_json *doc, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        mcl_json_value *v = &doc->nodes[i];
        if (v->kind != MCL_JSON_ARRAY && v->kind != MCL_JSON_OBJECT)
            continue;
        uint32_t first = v->u.link.first, sorted = v->u.link.sorted;
        v->u.items = doc->nodes + first;
        v->x.sorted = sorted == NO_INDEX ? NULL : doc->sorted + sorted;
    }
}

mcl_status mcl_json_parse(const void *data, uint64_t size, mcl_json **out, char *why,
                          size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out || (!data && size)) {
        if (why && why_size)
            snprintf(why, why_size, "NULL argument");
        return MCL_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    if (size >= UINT32_MAX) {
        if (why && why_size)
            snprintf(why, why_size, "a JSON document of %" PRIu64 " bytes (the limit is 4 GiB)",
                     size);
        return MCL_ERROR_TOO_LARGE;
    }
    mcl_json_parser *ps = mcl_mem_calloc(1, sizeof *ps);
    mcl_json *doc = mcl_mem_calloc(1, sizeof *doc);
    if (ps)
        ps->pool = mcl_mem_malloc((size_t)size + 1);
    if (!ps || !doc || !ps->pool) {
        if (ps)
            mcl_mem_free(ps->pool);
        mcl_mem_free(ps);
        mcl_mem_free(doc);
        if (why && why_size)
            snprintf(why, why_size, "out of host memory");
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    }
    ps->p = data;
    ps->size = size;
    ps->why = why;
    ps->why_size = why_size;
    ps->status = MCL_SUCCESS;

    mcl_status status = MCL_SUCCESS;
    if (!parse_document(ps)) {
        status = ps->status;
        goto fail;
    }
    /* The root: the one value left pending, appended after every block of children. */
    mcl_json_node_vec *nv = &ps->nodes;
    if (!reserve((void **)&nv->data, &nv->cap, nv->len, 1, sizeof *nv->data)) {
        mcl_json_out_of_memory(ps);
        status = ps->status;
        goto fail;
    }
    nv->data[nv->len++] = ps->pending.data[0];
    doc->nodes = nv->data;
    doc->sorted = ps->sorted;
    doc->pool = ps->pool;
    link_nodes(doc, nv->len);
    doc->root = &doc->nodes[nv->len - 1];
    mcl_mem_free(ps->pending.data);
    mcl_mem_free(ps->scratch);
    mcl_mem_free(ps);
    *out = doc;
    return MCL_SUCCESS;

fail:
    mcl_mem_free(ps->pending.data);
    mcl_mem_free(ps->scratch);
    mcl_mem_free(ps->nodes.data);
    mcl_mem_free(ps->sorted);
    mcl_mem_free(ps->pool);
    mcl_mem_free(ps);
    mcl_mem_free(doc);
    return status;
}

void mcl_json_free(mcl_json *doc)
{
    if (!doc)
        return;
    mcl_mem_free(doc->nodes);
    mcl_mem_free(doc->sorted);
    mcl_mem_free(doc->pool);
    mcl_mem_free(doc);
}

/* --- Reading ----------------------------------------------------------------------------- */

const mcl_json_value *mcl_json_root(const mcl_json *doc)
{
    return doc ? doc->root : NULL;
}

mcl_json_kind mcl_json_kind_of(const mcl_json_value *v)
{
    return v ? (mcl_json_kind)v->kind : MCL_JSON_MISSING;
}

const char *mcl_json_kind_name(mcl_json_kind kind)
{
    switch (kind) {
    case MCL_JSON_NULL: return "null";
    case MCL_JSON_BOOL: return "a boolean";
    case MCL_JSON_NUMBER: return "a number";
    case MCL_JSON_STRING: return "a string";
    case MCL_JSON_ARRAY: return "an array";
    case MCL_JSON_OBJECT: return "an object";
    case MCL_JSON_MISSING: break;
    }
    return "nothing";
}

uint64_t mcl_json_offset(const mcl_json_value *v)
{
    return v ? v->offset : 0;
}

uint32_t mcl_json_count(const mcl_json_value *v)
{
    if (!v || (v->kind != MCL_JSON_ARRAY && v->kind != MCL_JSON_OBJECT))
        return 0;
    return v->count;
}

const mcl_json_value *mcl_json_at(const mcl_json_value *v, uint32_t i)
{
    if (i >= mcl_json_count(v))
        return NULL;
    return &v->u.items[i];
}

const mcl_json_value *mcl_json_find_n(const mcl_json_value *obj, const char *key, size_t len)
{
    if (!obj || obj->kind != MCL_JSON_OBJECT || !key || len > UINT32_MAX)
        return NULL;
    mcl_json_value probe;
    probe.key = key;
    probe.key_len = (uint32_t)len;
    const mcl_json_value *items = obj->u.items;
    if (!obj->x.sorted) {
        for (uint32_t i = 0; i < obj->count; i++)
            if (key_cmp(&items[i], &probe) == 0)
                return &items[i];
        return NULL;
    }
    uint32_t lo = 0, hi = obj->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const mcl_json_value *m = &items[obj->x.sorted[mid]];
        int c = key_cmp(m, &probe);
        if (c == 0)
            return m;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const mcl_json_value *mcl_json_find(const mcl_json_value *obj, const char *key)
{
    return key ? mcl_json_find_n(obj, key, strlen(key)) : NULL;
}

const char *mcl_json_key(const mcl_json_value *v, size_t *len)
{
    if (!v || !v->key)
        return NULL;
    if (len)
        *len = v->key_len;
    return v->key;
}

const char *mcl_json_string(const mcl_json_value *v, size_t *len)
{
    if (!v || v->kind != MCL_JSON_STRING)
        return NULL;
    if (len)
        *len = v->count;
    return v->u.str;
}

int mcl_json_string_eq(const mcl_json_value *v, const char *s)
{
    size_t len;
    const char *str = mcl_json_string(v, &len);
    return str && s && strlen(s) == len && memcmp(str, s, len) == 0;
}

int mcl_json_number(const mcl_json_value *v, double *out)
{
    if (!v || v->kind != MCL_JSON_NUMBER || !out)
        return 0;
    *out = v->u.num;
    return 1;
}

int mcl_json_int(const mcl_json_value *v, int64_t *out)
{
    if (!v || v->kind != MCL_JSON_NUMBER || !v->is_int || !out)
        return 0;
    *out = v->x.i;
    return 1;
}

int mcl_json_bool(const mcl_json_value *v, int *out)
{
    if (!v || v->kind != MCL_JSON_BOOL || !out)
        return 0;
    *out = v->x.i != 0;
    return 1;
}

int mcl_json_is_null(const mcl_json_value *v)
{
    return v && v->kind == MCL_JSON_NULL;
}
