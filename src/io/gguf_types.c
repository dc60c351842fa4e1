/* GGUF's tables and typed reads (gguf.h): the value types and ggml's tensor types (names,
 * sizes, block shapes, the library's dtype of each), the little-endian reads, and the typed
 * reads of metadata values and array elements. */
#include "gguf.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "gguf_internal.h"

/* ---------------------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------------------- */

/* gguf.md, gguf_metadata_value_type: the names ggml's gguf.cpp prints, and the size of a
 * value of each fixed-size type (0 for string and array). */
static const struct {
    const char *name;
    uint32_t size;
} value_types[] = {
    [MCL_GGUF_UINT8] = {"uint8", 1},     [MCL_GGUF_INT8] = {"int8", 1},
    [MCL_GGUF_UINT16] = {"uint16", 2},   [MCL_GGUF_INT16] = {"int16", 2},
    [MCL_GGUF_UINT32] = {"uint32", 4},   [MCL_GGUF_INT32] = {"int32", 4},
    [MCL_GGUF_FLOAT32] = {"float32", 4}, [MCL_GGUF_BOOL] = {"bool", 1},
    [MCL_GGUF_STRING] = {"string", 0},   [MCL_GGUF_ARRAY] = {"array", 0},
    [MCL_GGUF_UINT64] = {"uint64", 8},   [MCL_GGUF_INT64] = {"int64", 8},
    [MCL_GGUF_FLOAT64] = {"float64", 8},
};
#define VALUE_TYPE_COUNT (sizeof value_types / sizeof value_types[0])

/* ggml's tensor types. Ids and names: ggml/include/ggml.h (enum ggml_type) and ggml.c's
 * type_traits (llama.cpp); block shapes: the block_* structs of ggml/src/ggml-common.h and
 * their static_asserts, written here as those structs' fields add up. The types the library
 * uploads take their shape from src/core/dtype.h's table (dtype >= 0 below), not from here.
 * Removed ids keep a name so that a loader can say what it refuses. */
typedef struct ggml_type_row {
    const char *name;
    int dtype;            /* the library's mcl_dtype, or -1 */
    uint32_t block_elems; /* 0: unknown shape (or taken from the dtype table) */
    uint32_t block_bytes;
} ggml_type_row;

#define HALF MCL_FP16_BYTES
#define QK MCL_QK_K /* elements per super-block of the k-, i- and t-quants */

static const ggml_type_row ggml_types[MCL_GGML_TYPE_KNOWN] = {
    [0] = {"f32", MCL_DTYPE_F32, 0, 0},
    [1] = {"f16", -1, 1, HALF},
    [2] = {"q4_0", MCL_DTYPE_Q4_0, 0, 0},
    [3] = {"q4_1", -1, 32, 2 * HALF + 32 / 2},
    [4] = {"q4_2 (removed)", -1, 0, 0},
    [5] = {"q4_3 (removed)", -1, 0, 0},
    [6] = {"q5_0", -1, 32, HALF + 4 + 32 / 2},
    [7] = {"q5_1", -1, 32, 2 * HALF + 4 + 32 / 2},
    [8] = {"q8_0", MCL_DTYPE_Q8_0, 0, 0},
    [9] = {"q8_1", -1, 32, 2 * HALF + 32},
    [10] = {"q2_K", -1, QK, 2 * HALF + QK / 16 + QK / 4},
    [11] = {"q3_K", -1, QK, HALF + QK / 4 + QK / 8 + 12},
    [12] = {"q4_K", MCL_DTYPE_Q4_K, 0, 0},
    [13] = {"q5_K", MCL_DTYPE_Q5_K, 0, 0},
    [14] = {"q6_K", MCL_DTYPE_Q6_K, 0, 0},
    [15] = {"q8_K", -1, QK, 4 + QK + QK / 16 * 2},
    [16] = {"iq2_xxs", -1, QK, HALF + QK / 8 * 2},
    [17] = {"iq2_xs", -1, QK, HALF + QK / 8 * 2 + QK / 32},
    [18] = {"iq3_xxs", -1, QK, HALF + 3 * (QK / 8)},
    [19] = {"iq1_s", -1, QK, HALF + QK / 8 + QK / 16},
    [20] = {"iq4_nl", -1, 32, HALF + 32 / 2},
    [21] = {"iq3_s", -1, QK, HALF + 13 * (QK / 32) + QK / 64},
    [22] = {"iq2_s", -1, QK, HALF + QK / 4 + QK / 16},
    [23] = {"iq4_xs", -1, QK, HALF + 2 + QK / 64 + QK / 2},
    [24] = {"i8", -1, 1, 1},
    [25] = {"i16", -1, 1, 2},
    [26] = {"i32", -1, 1, 4},
    [27] = {"i64", -1, 1, 8},
    [28] = {"f64", -1, 1, 8},
    [29] = {"iq1_m", -1, QK, QK / 8 + QK / 16 + QK / 32},
    [30] = {"bf16", -1, 1, 2},
    [31] = {"q4_0_4_4 (removed)", -1, 0, 0},
    [32] = {"q4_0_4_8 (removed)", -1, 0, 0},
    [33] = {"q4_0_8_8 (removed)", -1, 0, 0},
    [34] = {"tq1_0", -1, QK, HALF + QK / 64 + (QK - 4 * QK / 64) / 5},
    [35] = {"tq2_0", -1, QK, HALF + QK / 4},
    [36] = {"iq4_nl_4_4 (removed)", -1, 0, 0},
    [37] = {"iq4_nl_4_8 (removed)", -1, 0, 0},
    [38] = {"iq4_nl_8_8 (removed)", -1, 0, 0},
    [39] = {"mxfp4", -1, 32, 1 + 32 / 2},
    [40] = {"nvfp4", -1, 64, 64 / 16 + 64 / 2},
    [41] = {"q1_0", -1, 128, HALF + 128 / 8},
};

const char *mcl_gguf_type_name(uint32_t type)
{
    return type < VALUE_TYPE_COUNT ? value_types[type].name : NULL;
}

const char *mcl_ggml_type_name(uint32_t type)
{
    return type < MCL_GGML_TYPE_KNOWN ? ggml_types[type].name : NULL;
}

int mcl_ggml_type_dtype(uint32_t type)
{
    return type < MCL_GGML_TYPE_KNOWN ? ggml_types[type].dtype : -1;
}

/* The block shape of a type: from the dtype table for the library's own types. */
static void block_shape(uint32_t type, uint64_t *elems, uint64_t *bytes)
{
    *elems = 0;
    *bytes = 0;
    if (type >= MCL_GGML_TYPE_KNOWN)
        return;
    const ggml_type_row *row = &ggml_types[type];
    if (row->dtype >= 0) {
        const mcl_dtype_traits *t = mcl_dtype_traits_of((mcl_dtype)row->dtype);
        if (t) {
            *elems = t->block_weights;
            *bytes = t->block_bytes;
        }
        return;
    }
    *elems = row->block_elems;
    *bytes = row->block_bytes;
}

uint64_t mcl_ggml_block_elems(uint32_t type)
{
    uint64_t elems, bytes;
    block_shape(type, &elems, &bytes);
    return elems;
}

uint64_t mcl_ggml_block_bytes(uint32_t type)
{
    uint64_t elems, bytes;
    block_shape(type, &elems, &bytes);
    return bytes;
}

uint32_t mcl_gguf_value_size(uint32_t type)
{
    return type < VALUE_TYPE_COUNT ? value_types[type].size : 0;
}

int mcl_gguf_str_eq(mcl_gguf_str s, const char *c)
{
    if (!c)
        return 0;
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.data, c, n) == 0);
}

/* ---------------------------------------------------------------------------------------
 * Little-endian reads (any host, any alignment)
 * ------------------------------------------------------------------------------------- */

uint16_t mcl_le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

uint32_t mcl_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t mcl_le64(const unsigned char *p)
{
    return (uint64_t)mcl_le32(p) | (uint64_t)mcl_le32(p + 4) << 32;
}

/* ---------------------------------------------------------------------------------------
 * Typed reads of values
 * ------------------------------------------------------------------------------------- */

/* A number as the file holds it: which kind, and its value in that kind. */
typedef struct number {
    enum { NUM_NONE, NUM_UNSIGNED, NUM_SIGNED, NUM_FLOAT } kind; /* bool is none */
    uint64_t u;
    int64_t i;
    double f;
} number;

static number decode(const unsigned char *p, mcl_gguf_type type)
{
    number n = {NUM_NONE, 0, 0, 0.0};
    uint32_t bits32;
    uint64_t bits64;
    float f;
    switch (type) {
    case MCL_GGUF_UINT8: n.u = p[0]; break;
    case MCL_GGUF_UINT16: n.u = mcl_le16(p); break;
    case MCL_GGUF_UINT32: n.u = mcl_le32(p); break;
    case MCL_GGUF_UINT64: n.u = mcl_le64(p); break;
    case MCL_GGUF_INT8: n.i = (int8_t)p[0]; break;
    case MCL_GGUF_INT16: n.i = (int16_t)mcl_le16(p); break;
    case MCL_GGUF_INT32: n.i = (int32_t)mcl_le32(p); break;
    case MCL_GGUF_INT64: n.i = (int64_t)mcl_le64(p); break;
    case MCL_GGUF_FLOAT32:
        bits32 = mcl_le32(p);
        memcpy(&f, &bits32, sizeof f);
        n.f = f;
        break;
    case MCL_GGUF_FLOAT64:
        bits64 = mcl_le64(p);
        memcpy(&n.f, &bits64, sizeof n.f);
        break;
    default: return n;
    }
    switch (type) {
    case MCL_GGUF_UINT8: case MCL_GGUF_UINT16: case MCL_GGUF_UINT32: case MCL_GGUF_UINT64:
        n.kind = NUM_UNSIGNED;
        break;
    case MCL_GGUF_FLOAT32: case MCL_GGUF_FLOAT64: n.kind = NUM_FLOAT; break;
    default: n.kind = NUM_SIGNED; break;
    }
    return n;
}

_Static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE 754 binary32 and binary64");

/* Integers that a double holds exactly: |v| <= 2^53. */
#define EXACT_IN_DOUBLE (UINT64_C(1) << 53)

static int number_u64(number n, uint64_t *out)
{
    if (n.kind == NUM_UNSIGNED || (n.kind == NUM_SIGNED && n.i >= 0)) {
        *out = n.kind == NUM_UNSIGNED ? n.u : (uint64_t)n.i;
        return 1;
    }
    return 0;
}

static int number_i64(number n, int64_t *out)
{
    if (n.kind == NUM_SIGNED || (n.kind == NUM_UNSIGNED && n.u <= (uint64_t)INT64_MAX)) {
        *out = n.kind == NUM_SIGNED ? n.i : (int64_t)n.u;
        return 1;
    }
    return 0;
}

static int number_f64(number n, double *out)
{
    if (n.kind == NUM_FLOAT) {
        *out = n.f;
        return 1;
    }
    if (n.kind == NUM_UNSIGNED && n.u <= EXACT_IN_DOUBLE) {
        *out = (double)n.u;
        return 1;
    }
    if (n.kind == NUM_SIGNED && n.i >= -(int64_t)EXACT_IN_DOUBLE &&
        n.i <= (int64_t)EXACT_IN_DOUBLE) {
        *out = (double)n.i;
        return 1;
    }
    return 0;
}

static int is_scalar(const mcl_gguf_kv *kv)
{
    return kv && kv->type != MCL_GGUF_ARRAY && kv->type != MCL_GGUF_STRING;
}

int mcl_gguf_get_u64(const mcl_gguf_kv *kv, uint64_t *out)
{
    return is_scalar(kv) && number_u64(decode(kv->data, kv->type), out);
}

int mcl_gguf_get_i64(const mcl_gguf_kv *kv, int64_t *out)
{
    return is_scalar(kv) && number_i64(decode(kv->data, kv->type), out);
}

int mcl_gguf_get_f64(const mcl_gguf_kv *kv, double *out)
{
    return is_scalar(kv) && number_f64(decode(kv->data, kv->type), out);
}

int mcl_gguf_get_bool(const mcl_gguf_kv *kv, int *out)
{
    if (!kv || kv->type != MCL_GGUF_BOOL || kv->data[0] > 1)
        return 0;
    *out = kv->data[0];
    return 1;
}

int mcl_gguf_get_str(const mcl_gguf_kv *kv, mcl_gguf_str *out)
{
    if (!kv || kv->type != MCL_GGUF_STRING)
        return 0;
    out->len = mcl_le64(kv->data);
    out->data = (const char *)kv->data + 8;
    return 1;
}

/* Element i of a numeric array, or NULL. */
static const unsigned char *element(const mcl_gguf_kv *kv, uint64_t i)
{
    if (!kv || kv->type != MCL_GGUF_ARRAY || i >= kv->count)
        return NULL;
    uint32_t size = mcl_gguf_value_size(kv->elem_type);
    return size ? kv->data + i * size : NULL;
}

int mcl_gguf_array_u64(const mcl_gguf_kv *kv, uint64_t i, uint64_t *out)
{
    const unsigned char *p = element(kv, i);
    return p && number_u64(decode(p, kv->elem_type), out);
}

int mcl_gguf_array_i64(const mcl_gguf_kv *kv, uint64_t i, int64_t *out)
{
    const unsigned char *p = element(kv, i);
    return p && number_i64(decode(p, kv->elem_type), out);
}

int mcl_gguf_array_f64(const mcl_gguf_kv *kv, uint64_t i, double *out)
{
    const unsigned char *p = element(kv, i);
    return p && number_f64(decode(p, kv->elem_type), out);
}
