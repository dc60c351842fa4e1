/* safetensors files (src/io/safetensors.h), the sharded-checkpoint index and shard listing
 * (src/io/safetensors_index.h) and the 16-bit float conversions (src/io/convert.h): round
 * trips through the writer, a corpus of malformed files built here (each a status, the
 * undamaged control parsing), every truncation, random mutations, the index's refused shard
 * names, and the listing on real folders. Needs no device.
 *
 * Files are parsed from heap buffers of exactly their size, so a read past the end is an
 * AddressSanitizer error in the sanitizer build. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "io/convert.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "io/safetensors_index.h"
#include "quant/quant.h"

/* --- Helpers ------------------------------------------------------------------------------ */

/* Parse a copy of the bytes in an exact-size buffer; the parsed file is freed (its views
 * would dangle). Returns the status; `why` gets the message. */
static mcl_status parse_copy(const void *file, uint64_t size, char *why, size_t why_size)
{
    unsigned char *copy = malloc(size ? (size_t)size : 1);
    assert_non_null(copy);
    if (size)
        memcpy(copy, file, (size_t)size);
    mcl_safetensors *st = (mcl_safetensors *)1;
    mcl_status s = mcl_safetensors_parse(size ? copy : NULL, size, &st, why, why_size);
    if (s != MCL_SUCCESS)
        assert_null(st);
    if (s == MCL_SUCCESS) {
        /* Every view lies inside the input. */
        for (uint64_t i = 0; i < mcl_safetensors_count(st); i++) {
            const mcl_st_tensor *t = mcl_safetensors_at(st, i);
            uint64_t bytes = t->end - t->begin;
            if (bytes) {
                assert_true(t->data >= copy);
                assert_true((uint64_t)(t->data - copy) + bytes <= size);
            }
        }
    }
    mcl_safetensors_free(st == (mcl_safetensors *)1 ? NULL : st);
    free(copy);
    return s;
}

/* A file from a header text and `data_len` data bytes (value i & 0xff), with the header
 * length field given (UINT64_MAX: the header's real length). *size gets the file's size. */
static unsigned char *make_file(const char *header, uint64_t n_field, size_t data_len,
                                uint64_t *size)
{
    size_t n = strlen(header);
    unsigned char *f = malloc(8 + n + data_len);
    assert_non_null(f);
    uint64_t field = n_field == UINT64_MAX ? n : n_field;
    for (int i = 0; i < 8; i++)
        f[i] = (unsigned char)(field >> (8 * i));
    memcpy(f + 8, header, n);
    for (size_t i = 0; i < data_len; i++)
        f[8 + n + i] = (unsigned char)i;
    *size = 8 + n + data_len;
    return f;
}

/* The status of parsing a file made from `header` and data_len bytes; the message in why. */
static mcl_status status_of(const char *header, size_t data_len, char *why, size_t why_size)
{
    uint64_t size;
    unsigned char *f = make_file(header, UINT64_MAX, data_len, &size);
    why[0] = '\0';
    mcl_status s = parse_copy(f, size, why, why_size);
    free(f);
    return s;
}

/* --- Conversions -------------------------------------------------------------------------- */

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void conversions_are_exact(void **state)
{
    (void)state;
    /* Every 16-bit pattern, little-endian, from an odd address. */
    unsigned char *src = malloc(2 * 65536 + 1);
    float *dst = malloc(65536 * sizeof *dst);
    assert_non_null(src);
    assert_non_null(dst);
    for (uint32_t h = 0; h < 65536; h++) {
        src[1 + 2 * h] = (unsigned char)h;
        src[2 + 2 * h] = (unsigned char)(h >> 8);
    }
    mcl_convert_bf16_to_f32(src + 1, dst, 65536);
    for (uint32_t h = 0; h < 65536; h++)
        if (float_bits(dst[h]) != h << 16)
            fail_msg("bf16 0x%04x -> 0x%08x", h, float_bits(dst[h]));
    mcl_convert_f16_to_f32(src + 1, dst, 65536);
    for (uint32_t h = 0; h < 65536; h++)
        if (float_bits(dst[h]) != float_bits(mcl_fp16_to_fp32((uint16_t)h)))
            fail_msg("f16 0x%04x differs from mcl_fp16_to_fp32", h);
    /* Known values, stated literally. */
    assert_true(dst[0x3c00] == 1.0f);
    assert_true(dst[0xc000] == -2.0f);
    assert_true(dst[0x7bff] == 65504.0f);
    assert_true(dst[0x0001] == 0x1p-24f);
    assert_true(isinf(dst[0xfc00]) && dst[0xfc00] < 0);
    assert_true(isnan(dst[0x7e00]));
    mcl_convert_bf16_to_f32(src + 1, dst, 65536);
    assert_true(dst[0x3f80] == 1.0f);
    assert_true(dst[0x4049] == 3.140625f);
    assert_true(dst[0xc000] == -2.0f);
    assert_true(isinf(dst[0xff80]) && dst[0xff80] < 0);
    assert_true(isnan(dst[0x7fc0]));
    /* f32 from unaligned little-endian bytes. */
    const unsigned char f32[9] = {0xff, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc1};
    mcl_convert_f32_to_f32(f32 + 1, dst, 2);
    assert_true(dst[0] == 1.0f);
    assert_true(dst[1] == -10.0f);
    /* n == 0 writes nothing. */
    dst[0] = 7.0f;
    mcl_convert_f16_to_f32(NULL, dst, 0);
    assert_true(dst[0] == 7.0f);
    free(src);
    free(dst);
}

/* --- Round trip --------------------------------------------------------------------------- */

typedef struct made_tensor {
    char name[32];
    mcl_st_dtype dtype;
    uint32_t ndim;
    int64_t shape[4];
    uint64_t bytes;
    unsigned char data[64];
} made_tensor;

static void writer_round_trip(void **state)
{
    (void)state;
    made_tensor ts[MCL_ST_DTYPE_COUNT + 3];
    size_t n = 0;
    /* One tensor of every dtype, shaped so that its bits fill whole bytes. */
    for (int d = 0; d < MCL_ST_DTYPE_COUNT; d++) {
        made_tensor *t = &ts[n++];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "t.%s", mcl_st_dtype_name((mcl_st_dtype)d));
        t->dtype = (mcl_st_dtype)d;
        t->ndim = 2;
        t->shape[0] = 2;
        t->shape[1] = 4;
        t->bytes = 8 * mcl_st_dtype_bits(t->dtype) / 8;
    }
    /* A scalar, an empty tensor, and a 4-d one. */
    made_tensor *t = &ts[n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "scalar");
    t->dtype = MCL_ST_F32;
    t->ndim = 0;
    t->bytes = 4;
    t = &ts[n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "empty");
    t->dtype = MCL_ST_F16;
    t->ndim = 2;
    t->shape[0] = 0;
    t->shape[1] = 3;
    t->bytes = 0;
    t = &ts[n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "model.layers.0.w \"q\"\xc3\xa9");
    t->dtype = MCL_ST_BF16;
    t->ndim = 4;
    t->shape[0] = 2;
    t->shape[1] = 3;
    t->shape[2] = 1;
    t->shape[3] = 2;
    t->bytes = 24;
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < ts[i].bytes; b++)
            ts[i].data[b] = (unsigned char)(31 * i + 7 * b + 1);

    mcl_safetensors_writer *w = mcl_safetensors_writer_create();
    assert_non_null(w);
    assert_mcl_ok(mcl_safetensors_writer_add_metadata(w, "format", "pt"));
    assert_mcl_ok(mcl_safetensors_writer_add_metadata(w, "note", "a \"quoted\"\n\\line \xc3\xa9"));
    for (size_t i = 0; i < n; i++)
        assert_mcl_ok(mcl_safetensors_writer_add_tensor(w, ts[i].name, ts[i].dtype, ts[i].ndim,
                                                        ts[i].ndim ? ts[i].shape : NULL,
                                                        ts[i].data, ts[i].bytes));
    void *file;
    uint64_t size;
    assert_mcl_ok(mcl_safetensors_writer_finish(w, &file, &size));

    mcl_safetensors *st = NULL;
    char why[256];
    if (mcl_safetensors_parse(file, size, &st, why, sizeof why) != MCL_SUCCESS)
        fail_msg("round trip: %s", why);
    assert_int_equal(mcl_safetensors_data_offset(st) % 8, 0);
    assert_int_equal(mcl_safetensors_count(st), n);
    for (size_t i = 0; i < n; i++) {
        const mcl_st_tensor *g = mcl_safetensors_find(st, ts[i].name);
        assert_non_null(g);
        assert_string_equal(g->name, ts[i].name);
        assert_int_equal(g->dtype, ts[i].dtype);
        assert_int_equal(g->ndim, ts[i].ndim);
        uint64_t elements = 1;
        for (uint32_t k = 0; k < g->ndim; k++) {
            assert_int_equal(g->shape[k], ts[i].shape[k]);
            elements *= (uint64_t)ts[i].shape[k];
        }
        if (g->ndim == 0)
            assert_null(g->shape);
        assert_int_equal(g->elements, elements);
        assert_int_equal(g->end - g->begin, ts[i].bytes);
        if (ts[i].bytes)
            assert_memory_equal(g->data, ts[i].data, ts[i].bytes);
        else
            assert_null(g->data);
    }
    /* In offset order. */
    for (uint64_t i = 1; i < mcl_safetensors_count(st); i++)
        assert_true(mcl_safetensors_at(st, i)->begin >= mcl_safetensors_at(st, i - 1)->end);
    assert_null(mcl_safetensors_at(st, n));
    assert_null(mcl_safetensors_find(st, "absent"));
    assert_null(mcl_safetensors_find(st, "__metadata__"));
    /* Metadata. */
    assert_int_equal(mcl_safetensors_metadata_count(st), 2);
    assert_string_equal(mcl_safetensors_metadata(st, "format"), "pt");
    assert_string_equal(mcl_safetensors_metadata(st, "note"), "a \"quoted\"\n\\line \xc3\xa9");
    assert_null(mcl_safetensors_metadata(st, "absent"));
    const char *k, *v;
    assert_true(mcl_safetensors_metadata_at(st, 1, &k, &v));
    assert_string_equal(k, "note");
    assert_false(mcl_safetensors_metadata_at(st, 2, &k, &v));

    /* f32 reads: loadable dtypes converted, others refused. */
    float out[8];
    const mcl_st_tensor *bf = mcl_safetensors_find(st, "t.BF16");
    assert_mcl_ok(mcl_safetensors_read_f32(bf, out, 8, why, sizeof why));
    for (int e = 0; e < 8; e++) {
        uint32_t want = (uint32_t)bf->data[2 * e] << 16 | (uint32_t)bf->data[2 * e + 1] << 24;
        assert_int_equal(float_bits(out[e]), want);
    }
    const mcl_st_tensor *f16 = mcl_safetensors_find(st, "t.F16");
    assert_mcl_ok(mcl_safetensors_read_f32(f16, out, 8, why, sizeof why));
    for (int e = 0; e < 8; e++)
        assert_int_equal(float_bits(out[e]),
                         float_bits(mcl_fp16_to_fp32((uint16_t)(f16->data[2 * e] |
                                                                f16->data[2 * e + 1] << 8))));
    assert_mcl_ok(mcl_safetensors_read_f32(mcl_safetensors_find(st, "t.F32"), out, 8, why,
                                           sizeof why));
    assert_mcl_ok(mcl_safetensors_read_f32(mcl_safetensors_find(st, "scalar"), out, 1, why,
                                           sizeof why));
    assert_mcl_ok(mcl_safetensors_read_f32(mcl_safetensors_find(st, "empty"), NULL, 0, why,
                                           sizeof why));
    assert_int_equal(mcl_safetensors_read_f32(mcl_safetensors_find(st, "t.F64"), out, 8, why,
                                              sizeof why), MCL_ERROR_UNSUPPORTED);
    assert_string_equal(why, "tensor \"t.F64\": dtype F64 is not loaded (F32, F16 and BF16 are)");
    for (int d = 0; d < MCL_ST_DTYPE_COUNT; d++)
        assert_int_equal(mcl_st_dtype_loadable((mcl_st_dtype)d),
                         d == MCL_ST_F32 || d == MCL_ST_F16 || d == MCL_ST_BF16);
    assert_int_equal(mcl_safetensors_read_f32(bf, out, 7, why, sizeof why),
                     MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_safetensors_read_f32(NULL, out, 7, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    mcl_safetensors_free(st);

    /* The same bytes from an exact-size copy (the sanitizer's bounds), and finish again. */
    assert_int_equal(parse_copy(file, size, why, sizeof why), MCL_SUCCESS);
    void *again;
    uint64_t size2;
    assert_mcl_ok(mcl_safetensors_writer_finish(w, &again, &size2));
    assert_int_equal(size2, size);
    assert_memory_equal(again, file, size);
    free(again);
    free(file);
    mcl_safetensors_writer_destroy(w);
}

/* An empty checkpoint is a file: "{}" and nothing after it. */
static void empty_file_parses(void **state)
{
    (void)state;
    char why[256];
    assert_int_equal(status_of("{}", 0, why, sizeof why), MCL_SUCCESS);
    assert_int_equal(status_of("{}      ", 0, why, sizeof why), MCL_SUCCESS);
    assert_int_equal(status_of("{\"__metadata__\":{}}", 0, why, sizeof why), MCL_SUCCESS);
    mcl_safetensors_writer *w = mcl_safetensors_writer_create();
    void *file;
    uint64_t size;
    assert_mcl_ok(mcl_safetensors_writer_finish(w, &file, &size));
    assert_int_equal(size, 16);
    assert_int_equal(parse_copy(file, size, why, sizeof why), MCL_SUCCESS);
    free(file);
    mcl_safetensors_writer_destroy(w);
}

/* The example file of the safetensors documentation (an unpadded 60-byte header), and the
 * bytes the reference writer produces for the same tensor (padded to 64 with spaces), which
 * the writer must reproduce exactly. */
static void reference_bytes(void **state)
{
    (void)state;
    static const char json[] = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],"
                               "\"data_offsets\":[0,16]}}";
    char why[256];
    assert_int_equal(strlen(json), 60);
    assert_int_equal(status_of(json, 16, why, sizeof why), MCL_SUCCESS);

    unsigned char want[8 + 64 + 16] = {64};
    memcpy(want + 8, json, 60);
    memcpy(want + 68, "    ", 4);
    mcl_safetensors_writer *w = mcl_safetensors_writer_create();
    const int64_t shape[2] = {2, 2};
    const int32_t zeros[4] = {0};
    assert_mcl_ok(mcl_safetensors_writer_add_tensor(w, "test", MCL_ST_I32, 2, shape, zeros, 16));
    void *file;
    uint64_t size;
    assert_mcl_ok(mcl_safetensors_writer_finish(w, &file, &size));
    assert_int_equal(size, sizeof want);
    assert_memory_equal(file, want, sizeof want);
    mcl_safetensors *st = NULL;
    assert_mcl_ok(mcl_safetensors_parse(file, size, &st, why, sizeof why));
    const mcl_st_tensor *t = mcl_safetensors_find(st, "test");
    assert_non_null(t);
    assert_int_equal(t->dtype, MCL_ST_I32);
    assert_int_equal(t->elements, 4);
    assert_int_equal(mcl_safetensors_data_offset(st), 72);
    mcl_safetensors_free(st);
    free(file);
    mcl_safetensors_writer_destroy(w);
}

static void writer_refuses_bad_input(void **state)
{
    (void)state;
    mcl_safetensors_writer *w = mcl_safetensors_writer_create();
    const int64_t shape[2] = {2, 2}, negative[1] = {-1};
    float data[4] = {0};
    assert_mcl_ok(mcl_safetensors_writer_add_tensor(w, "a", MCL_ST_F32, 2, shape, data, 16));
    assert_int_equal(mcl_safetensors_writer_add_tensor(w, "a", MCL_ST_F32, 2, shape, data, 16),
                     MCL_ERROR_INVALID_ARGUMENT); /* duplicate */
    assert_int_equal(mcl_safetensors_writer_add_tensor(w, "b", MCL_ST_F32, 2, shape, data, 12),
                     MCL_ERROR_INVALID_ARGUMENT); /* size */
    assert_int_equal(mcl_safetensors_writer_add_tensor(w, "b", MCL_ST_F32, 1, negative, data,
                                                       0), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_safetensors_writer_add_tensor(w, "b", MCL_ST_DTYPE_COUNT, 2, shape,
                                                       data, 16), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_safetensors_writer_add_tensor(w, "__metadata__", MCL_ST_F32, 2, shape,
                                                       data, 16), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_safetensors_writer_add_tensor(w, "", MCL_ST_F32, 2, shape, data, 16),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_safetensors_writer_add_tensor(w, "c", MCL_ST_F4, 1,
                                                       (const int64_t[]){3}, data, 1),
                     MCL_ERROR_INVALID_ARGUMENT); /* 12 bits */
    assert_mcl_ok(mcl_safetensors_writer_add_metadata(w, "k", "v"));
    assert_int_equal(mcl_safetensors_writer_add_metadata(w, "k", "w"),
                     MCL_ERROR_INVALID_ARGUMENT);
    void *file;
    uint64_t size;
    assert_mcl_ok(mcl_safetensors_writer_finish(w, &file, &size));
    free(file);
    /* A name that is not UTF-8 is refused when the file is made. */
    assert_mcl_ok(mcl_safetensors_writer_add_tensor(w, "bad\xff", MCL_ST_F32, 2, shape, data,
                                                    16));
    assert_int_equal(mcl_safetensors_writer_finish(w, &file, &size), MCL_ERROR_INVALID_ARGUMENT);
    assert_null(file);
    mcl_safetensors_writer_destroy(w);
    mcl_safetensors_writer_destroy(NULL);
}

/* --- The malformed corpus ----------------------------------------------------------------- */

#define T8(name, dt, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

/* The undamaged control: two F32 tensors of 8 bytes each, 16 bytes of data. */
static const char control_header[] = "{" T8("a", "F32", "[2]", 0, 8) "," T8("b", "F32", "[2]", 8, 16) "}";

typedef struct bad_file {
    const char *header;
    size_t data_len;
    mcl_status want;
    const char *message_part; /* a piece of the message that must appear (NULL: any) */
} bad_file;

static const bad_file corpus[] = {
    /* Offsets and tiling. */
    {"{" T8("a", "F32", "[4]", 0, 16) "}", 8, INVALID, "past the end"},
    {"{" T8("a", "F32", "[2]", 0, 8) "," T8("b", "F32", "[2]", 4, 12) "}", 12, INVALID,
     "tensor \"b\": data_offsets [4, 12] overlap"},
    {"{" T8("a", "F32", "[2]", 0, 8) "," T8("b", "F32", "[2]", 12, 20) "}", 20, INVALID,
     "tensor \"b\": data_offsets [12, 20] leave a gap"},
    {"{" T8("a", "F32", "[2]", 4, 12) "}", 12, INVALID, "tensor \"a\""},
    {"{" T8("a", "F32", "[2]", 0, 8) "}", 12, INVALID, "4 bytes belong to no tensor"},
    {"{" T8("a", "F32", "[2]", 0, 8) "," T8("b", "F32", "[2]", 0, 8) "}", 8, INVALID, "overlap"},
    {"{" T8("a", "F32", "[2]", 8, 0) "}", 8, INVALID, "end before"},
    {"{" T8("a", "F32", "[2]", 0, 18446744073709551615) "}", 8, INVALID, "\"a\""},
    {"{" T8("a", "F32", "[2]", -8, 0) "}", 8, INVALID, "non-negative"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, INVALID,
     "data_offsets"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, INVALID,
     "data_offsets"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[\"0\",\"8\"]}}", 8, INVALID,
     "data_offsets"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.5]}}", 8, INVALID,
     "data_offsets"},
    /* Shape and size. */
    {"{" T8("a", "F32", "[3]", 0, 8) "}", 8, INVALID,
     "tensor \"a\" (header byte 47): data_offsets [0, 8] hold 8 bytes but 3 elements of F32 "
     "need 12"},
    {"{" T8("a", "BF16", "[2]", 0, 8) "}", 8, INVALID, "need 4"},
    {"{" T8("a", "F32", "[-1]", 0, 8) "}", 8, INVALID, "shape[0]"},
    {"{" T8("a", "F32", "[1.5]", 0, 8) "}", 8, INVALID, "shape[0]"},
    {"{" T8("a", "F32", "2", 0, 8) "}", 8, INVALID, "shape is a number"},
    {"{" T8("a", "F32", "[4294967296,4294967296,16]", 0, 8) "}", 8, INVALID, "overflows"},
    {"{" T8("a", "F32", "[4611686018427387904]", 0, 8) "}", 8, INVALID, "overflow"},
    {"{" T8("a", "F4", "[3]", 0, 2) "}", 2, INVALID, "whole number of bytes"},
    {"{" T8("a", "F32", "[]", 0, 8) "}", 8, INVALID, "need 4"},
    /* dtypes. */
    {"{" T8("a", "F33", "[2]", 0, 8) "}", 8, INVALID, "unknown dtype \"F33\""},
    {"{" T8("a", "f32", "[2]", 0, 8) "}", 8, INVALID, "unknown dtype"},
    {"{" T8("a", "", "[2]", 0, 8) "}", 8, INVALID, "unknown dtype"},
    {"{\"a\":{\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, INVALID, "dtype is"},
    /* Entries. */
    {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, INVALID, "no \"dtype\""},
    {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, INVALID, "no \"shape\""},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, INVALID, "no \"data_offsets\""},
    {"{\"a\":[\"F32\",[2],[0,8]]}", 8, INVALID, "expected an object"},
    {"{\"a\":null}", 0, INVALID, "tensor \"a\""},
    /* Names and the header. */
    {"{" T8("a", "F32", "[2]", 0, 8) "," T8("a", "F32", "[2]", 8, 16) "}", 16, INVALID,
     "duplicate key \"a\""},
    {"[]", 0, INVALID, "not an object"},
    {"1", 0, INVALID, "not an object"},
    {"", 0, INVALID, "header: byte 0"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, INVALID, "header:"},
    {"{\"a\xff\":{}}", 0, INVALID, "UTF-8"},
    {"{\"__metadata__\":[],\"a\":1}", 0, INVALID, "__metadata__"},
    {"{\"__metadata__\":{\"k\":1}}", 0, INVALID, "__metadata__ \"k\""},
    {"{\"__metadata__\":null}", 0, INVALID, "__metadata__"},
};

/* Whether a file is refused: the check every corpus entry goes through, shown able to
 * report a file that is not refused by the control. */
static int refused(const char *header, size_t data_len, mcl_status want, const char *part,
                   int verbose)
{
    char why[512];
    mcl_status s = status_of(header, data_len, why, sizeof why);
    int ok = s == want && strlen(why) > 0 && (!part || strstr(why, part));
    if (!ok && verbose)
        print_message("%s\n  -> %s: %s\n", header, mcl_status_string(s), why);
    return ok;
}

static void malformed_corpus_is_refused(void **state)
{
    (void)state;
    char why[256];
    /* Control: the undamaged file parses. */
    assert_int_equal(status_of(control_header, 16, why, sizeof why), MCL_SUCCESS);
    int bad = 0;
    for (size_t i = 0; i < sizeof corpus / sizeof *corpus; i++)
        bad += !refused(corpus[i].header, corpus[i].data_len, corpus[i].want,
                        corpus[i].message_part, 1);
    assert_int_equal(bad, 0);
    /* Negative control: the same check on the control file reports it as not refused. */
    assert_false(refused(control_header, 16, INVALID, NULL, 0));
}

static void header_length_is_checked(void **state)
{
    (void)state;
    char why[256];
    uint64_t size;
    unsigned char *f = make_file(control_header, UINT64_MAX, 16, &size);
    uint64_t real = size - 8 - 16;
    /* Files shorter than the length field. */
    for (uint64_t cut = 0; cut < 8; cut++)
        assert_int_equal(parse_copy(f, cut, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    const uint64_t lengths[] = {size - 8 + 1, size, UINT64_MAX, UINT64_MAX - 7,
                                (uint64_t)1 << 63, (uint64_t)1 << 32};
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        for (int b = 0; b < 8; b++)
            f[b] = (unsigned char)(lengths[i] >> (8 * b));
        why[0] = '\0';
        assert_int_equal(parse_copy(f, size, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
        assert_non_null(strstr(why, "past the end"));
    }
    /* Shorter lengths cut the JSON (or leave it followed by data bytes). */
    for (uint64_t n = 0; n < real; n++) {
        for (int b = 0; b < 8; b++)
            f[b] = (unsigned char)(n >> (8 * b));
        assert_int_equal(parse_copy(f, size, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    }
    free(f);
    /* A header above the limit that lies within the file: refused before it is read. */
    uint64_t big = MCL_SAFETENSORS_MAX_HEADER + 1;
    unsigned char *huge = calloc(1, (size_t)big + 8);
    assert_non_null(huge);
    for (int b = 0; b < 8; b++)
        huge[b] = (unsigned char)(big >> (8 * b));
    mcl_safetensors *st = NULL;
    assert_int_equal(mcl_safetensors_parse(huge, big + 8, &st, why, sizeof why),
                     MCL_ERROR_TOO_LARGE);
    assert_null(st);
    free(huge);
    /* NULL arguments. */
    assert_int_equal(mcl_safetensors_parse(NULL, 16, &st, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_safetensors_parse("", 0, NULL, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
}

/* Every proper prefix of a valid file is refused (the header length then points past the
 * end, or the data section is short). */
static void every_truncation_fails(void **state)
{
    (void)state;
    char why[256];
    uint64_t size;
    unsigned char *f = make_file(control_header, UINT64_MAX, 16, &size);
    assert_int_equal(parse_copy(f, size, why, sizeof why), MCL_SUCCESS);
    for (uint64_t cut = 0; cut < size; cut++)
        if (parse_copy(f, cut, why, sizeof why) == MCL_SUCCESS)
            fail_msg("a prefix of %llu bytes parsed", (unsigned long long)cut);
    free(f);
}

static uint64_t rng_state = 0x452821e638d01377ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random byte changes of a valid file (header length and JSON included): a status or a file
 * whose views stay inside the input (parse_copy checks), never a crash. */
static void mutations_fail_cleanly(void **state)
{
    (void)state;
    static const char interesting[] = "0123456789[]{}\",:-.eE \x00\xff";
    uint64_t size;
    unsigned char *f = make_file(control_header, UINT64_MAX, 16, &size);
    unsigned char *m = malloc((size_t)size);
    assert_non_null(m);
    int parsed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(m, f, (size_t)size);
        int edits = 1 + (int)(rng_next() % 3);
        for (int e = 0; e < edits; e++) {
            uint64_t at = rng_next() % size;
            if (rng_next() % 2)
                m[at] = (unsigned char)interesting[rng_next() % (sizeof interesting - 1)];
            else
                m[at] ^= (unsigned char)(1u << (rng_next() % 8));
        }
        char why[256];
        mcl_status s = parse_copy(m, size, why, sizeof why);
        assert_true(s == MCL_SUCCESS || s == MCL_ERROR_INVALID_ARGUMENT ||
                    s == MCL_ERROR_TOO_LARGE);
        parsed += s == MCL_SUCCESS;
    }
    print_message("%d of 20000 mutated files parsed\n", parsed);
    free(m);
    free(f);
}

/* A header of thousands of tensors: each found by name (O(log n) each). */
static void many_tensors_are_found(void **state)
{
    (void)state;
    const int n = 3000;
    mcl_safetensors_writer *w = mcl_safetensors_writer_create();
    const int64_t shape[1] = {1};
    for (int i = 0; i < n; i++) {
        char name[48];
        snprintf(name, sizeof name, "model.layers.%d.mlp.weight", (i * 7919) % n);
        uint16_t v = (uint16_t)i;
        assert_mcl_ok(mcl_safetensors_writer_add_tensor(w, name, MCL_ST_BF16, 1, shape, &v, 2));
    }
    void *file;
    uint64_t size;
    assert_mcl_ok(mcl_safetensors_writer_finish(w, &file, &size));
    mcl_safetensors_writer_destroy(w);
    mcl_safetensors *st = NULL;
    char why[256];
    assert_int_equal(mcl_safetensors_parse(file, size, &st, why, sizeof why), MCL_SUCCESS);
    for (int i = 0; i < n; i++) {
        char name[48];
        snprintf(name, sizeof name, "model.layers.%d.mlp.weight", (i * 7919) % n);
        const mcl_st_tensor *t = mcl_safetensors_find(st, name);
        assert_non_null(t);
        assert_string_equal(t->name, name);
        assert_int_equal(t->begin, 2 * (uint64_t)i);
        assert_int_equal(t->data[0] | t->data[1] << 8, i & 0xffff);
        assert_ptr_equal(mcl_safetensors_at(st, (uint64_t)i), t); /* offset order */
    }
    mcl_safetensors_free(st);
    free(file);
}

/* --- The index ---------------------------------------------------------------------------- */

static const char valid_index[] =
    "{\"metadata\":{\"total_size\":123456},\"weight_map\":{"
    "\"lm_head.weight\":\"model-00002-of-00002.safetensors\","
    "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
    "\"model.norm.weight\":\"model-00002-of-00002.safetensors\"}}";

static void index_parses(void **state)
{
    (void)state;
    mcl_st_index *idx = NULL;
    char why[256];
    assert_int_equal(mcl_st_index_parse(valid_index, strlen(valid_index), &idx, why, sizeof why),
                     MCL_SUCCESS);
    assert_int_equal(mcl_st_index_tensor_count(idx), 3);
    assert_int_equal(mcl_st_index_shard_count(idx), 2);
    assert_string_equal(mcl_st_index_shard_at(idx, 0), "model-00001-of-00002.safetensors");
    assert_string_equal(mcl_st_index_shard_at(idx, 1), "model-00002-of-00002.safetensors");
    assert_null(mcl_st_index_shard_at(idx, 2));
    assert_string_equal(mcl_st_index_shard_of(idx, "model.norm.weight"),
                        "model-00002-of-00002.safetensors");
    assert_null(mcl_st_index_shard_of(idx, "model.absent"));
    const char *name, *shard;
    assert_true(mcl_st_index_tensor_at(idx, 1, &name, &shard));
    assert_string_equal(name, "model.embed_tokens.weight");
    assert_string_equal(shard, "model-00001-of-00002.safetensors");
    assert_false(mcl_st_index_tensor_at(idx, 3, &name, &shard));
    int64_t total;
    assert_true(mcl_json_int(mcl_json_find(mcl_st_index_metadata(idx), "total_size"), &total));
    assert_int_equal(total, 123456);
    mcl_st_index_free(idx);
    /* No metadata is fine; so is an empty map. */
    const char *plain = "{\"weight_map\":{}}";
    assert_int_equal(mcl_st_index_parse(plain, strlen(plain), &idx, why, sizeof why),
                     MCL_SUCCESS);
    assert_int_equal(mcl_st_index_shard_count(idx), 0);
    assert_null(mcl_st_index_metadata(idx));
    mcl_st_index_free(idx);
}

static int index_refused(const char *text, const char *part)
{
    mcl_st_index *idx = NULL;
    char why[512] = "";
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    memcpy(copy, text, len);
    mcl_status s = mcl_st_index_parse(copy, len, &idx, why, sizeof why);
    free(copy);
    mcl_st_index_free(idx);
    int ok = s == MCL_ERROR_INVALID_ARGUMENT && !idx && (!part || strstr(why, part));
    if (!ok)
        print_message("%s\n  -> %s: %s\n", text, mcl_status_string(s), why);
    return ok;
}

static void index_refuses_traversal_and_bad_maps(void **state)
{
    (void)state;
#define MAP(shard) "{\"weight_map\":{\"w\":\"" shard "\"}}"
    assert_true(index_refused(MAP("../model-00001-of-00002.safetensors"), "contains"));
    assert_true(index_refused(MAP("/etc/model.safetensors"), "path separator"));
    assert_true(index_refused(MAP("sub/model.safetensors"), "path separator"));
    assert_true(index_refused(MAP("sub\\\\model.safetensors"), "path separator"));
    assert_true(index_refused(MAP("C:model.safetensors"), "path separator"));
    assert_true(index_refused(MAP("..safetensors"), "\"..\""));
    assert_true(index_refused(MAP("x..y.safetensors"), "\"..\""));
    assert_true(index_refused(MAP(".."), NULL));
    assert_true(index_refused(MAP("model.bin"), "does not end in"));
    assert_true(index_refused(MAP(".safetensors"), "does not end in"));
    assert_true(index_refused(MAP(""), "is empty"));
    assert_true(index_refused(MAP("a\\u0000.safetensors"), "control character"));
    assert_true(index_refused(MAP("a\\n.safetensors"), "control character"));
    assert_true(index_refused("{\"weight_map\":{\"w\":5}}", "not a string"));
    assert_true(index_refused("{\"weight_map\":[]}", "\"weight_map\" is not an object"));
    assert_true(index_refused("{\"metadata\":{}}", "no \"weight_map\""));
    assert_true(index_refused("{\"metadata\":[],\"weight_map\":{}}", "\"metadata\""));
    assert_true(index_refused("[]", "not an object"));
    assert_true(index_refused("{\"weight_map\":{\"w\":\"a.safetensors\",\"w\":\"b.safetensors\"}}",
                              "duplicate key"));
    assert_true(index_refused("{\"weight_map\":", "index: byte"));
    /* The name check on its own, and its negative control. */
    assert_true(mcl_st_shard_name_ok("model-00001-of-00002.safetensors", 32));
    assert_false(mcl_st_shard_name_ok("../a.safetensors", 16));
    assert_false(index_refused(MAP("model.safetensors"), NULL));
#undef MAP
}

/* --- Listing the files of a checkpoint ------------------------------------------------------ */

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void remove_in(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
}

static void shards_are_listed(void **state)
{
    (void)state;
    char dir[] = "/tmp/motifcl-st-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char why[512], path[512];
    mcl_st_shards list;

    /* An empty folder holds neither file. */
    assert_int_equal(mcl_st_shards_list(dir, &list, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "neither"));
    assert_int_equal(list.count, 0);

    /* A single-file checkpoint. */
    write_text(dir, MCL_ST_SINGLE_NAME, "x");
    assert_mcl_ok(mcl_st_shards_list(dir, &list, why, sizeof why));
    assert_int_equal(list.count, 1);
    snprintf(path, sizeof path, "%s/%s", dir, MCL_ST_SINGLE_NAME);
    assert_string_equal(list.paths[0], path);
    mcl_st_shards_free(&list);

    /* A sharded one: the index wins over model.safetensors; a trailing slash is dropped. */
    write_text(dir, MCL_ST_INDEX_NAME, valid_index);
    char slashed[600];
    snprintf(slashed, sizeof slashed, "%s/", dir);
    assert_mcl_ok(mcl_st_shards_list(slashed, &list, why, sizeof why));
    assert_int_equal(list.count, 2);
    snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", dir);
    assert_string_equal(list.paths[0], path);
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
    assert_string_equal(list.paths[1], path);
    mcl_st_shards_free(&list);
    assert_int_equal(list.count, 0);

    /* The index named directly, and one .safetensors file named directly. */
    snprintf(path, sizeof path, "%s/%s", dir, MCL_ST_INDEX_NAME);
    assert_mcl_ok(mcl_st_shards_list(path, &list, why, sizeof why));
    assert_int_equal(list.count, 2);
    mcl_st_shards_free(&list);
    snprintf(path, sizeof path, "%s/%s", dir, MCL_ST_SINGLE_NAME);
    assert_mcl_ok(mcl_st_shards_list(path, &list, why, sizeof why));
    assert_int_equal(list.count, 1);
    assert_string_equal(list.paths[0], path);
    mcl_st_shards_free(&list);

    /* An index that names a file outside the folder is refused, with the index's path. */
    write_text(dir, "evil.json", "{\"weight_map\":{\"w\":\"../../x.safetensors\"}}");
    snprintf(path, sizeof path, "%s/evil.json", dir);
    assert_int_equal(mcl_st_shards_list(path, &list, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "evil.json"));
    assert_non_null(strstr(why, "contains"));
    assert_int_equal(list.count, 0);

    /* Neither kind of file; a missing path; NULL. */
    write_text(dir, "notes.txt", "x");
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    assert_int_equal(mcl_st_shards_list(path, &list, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    snprintf(path, sizeof path, "%s/absent", dir);
    assert_int_equal(mcl_st_shards_list(path, &list, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_st_shards_list(NULL, &list, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    mcl_st_shards_free(NULL);

    remove_in(dir, MCL_ST_SINGLE_NAME);
    remove_in(dir, MCL_ST_INDEX_NAME);
    remove_in(dir, "evil.json");
    remove_in(dir, "notes.txt");
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conversions_are_exact),
        cmocka_unit_test(writer_round_trip),
        cmocka_unit_test(empty_file_parses),
        cmocka_unit_test(reference_bytes),
        cmocka_unit_test(writer_refuses_bad_input),
        cmocka_unit_test(malformed_corpus_is_refused),
        cmocka_unit_test(header_length_is_checked),
        cmocka_unit_test(every_truncation_fails),
        cmocka_unit_test(mutations_fail_cleanly),
        cmocka_unit_test(many_tensors_are_found),
        cmocka_unit_test(index_parses),
        cmocka_unit_test(index_refuses_traversal_and_bad_maps),
        cmocka_unit_test(shards_are_listed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
