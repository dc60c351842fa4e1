/* GGUF reader and writer (src/io/gguf.h) and file maps (src/io/mapped.h). Needs no device.
 *
 *   - the type tables against the block shapes of ggml-common.h, written here as literals;
 *   - round trips: files from the writer (both versions, alignments 32, 64 and 1024, a tensor
 *     of every type whose shape is known, metadata of every type) read back bit-identical;
 *   - the real vocabulary files of tests/data/vocab (llama.cpp's models/), with the time the
 *     GPT-2 one takes to parse noted in the witness;
 *   - a malformed corpus built from a valid file that this file lays out byte by byte (not
 *     with the writer): every truncation, counts and lengths near 2^64, bad offsets, overlaps,
 *     repeats, bad types and shapes; each gives its status and names its field.
 * Every parse of a damaged file reads from an allocation of exactly the file's size, so that
 * the sanitizer build (scripts/test.sh, label unit) catches a read past the end.
 * Negative controls: the undamaged corpus file parses, a no-op patch parses, and the round
 * trip's comparison finds a flipped tensor byte and a changed metadata value.
 *
 * MOTIFCL_GGUF_SEED_DIR=<folder> also writes the valid files the suite builds there: the
 * fuzzer's seeds (tests/fuzz/README.md). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "io/gguf.h"
#include "io/mapped.h"

#ifndef MCL_TEST_DATA_DIR
#error "MCL_TEST_DATA_DIR (tests/data) is set by tests/CMakeLists.txt"
#endif

/* ---------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill_random(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(rng_next() >> 56);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Where parse_copy sums the bytes it touches, so that the reads are not optimised away. */
static volatile unsigned touched;

/* Parse `len` bytes of `file` from a copy of exactly that size (so that the sanitizers see
 * a read past its end), and return the status; *why gets the message. */
static mcl_status parse_copy(const unsigned char *file, uint64_t len, char *why, size_t why_size)
{
    unsigned char *copy = NULL;
    if (len) {
        copy = malloc((size_t)len);
        assert_non_null(copy);
        memcpy(copy, file, (size_t)len);
    }
    mcl_gguf *g = NULL;
    mcl_status st = mcl_gguf_parse(copy, len, &g, why, why_size);
    if (st == MCL_SUCCESS) {
        /* Touch everything the parser hands out, inside the copy. */
        for (uint64_t i = 0; i < mcl_gguf_kv_count(g); i++) {
            const mcl_gguf_kv *kv = mcl_gguf_kv_at(g, i);
            mcl_gguf_str s;
            for (uint64_t j = 0; kv->elem_type == MCL_GGUF_STRING && j < kv->count; j++)
                if (mcl_gguf_array_str(g, kv, j, &s) && s.len)
                    touched += (unsigned char)s.data[0] + (unsigned char)s.data[s.len - 1];
        }
        for (uint64_t i = 0; i < mcl_gguf_tensor_count(g); i++) {
            const mcl_gguf_tensor *t = mcl_gguf_tensor_at(g, i);
            if (t->bytes)
                touched += t->data[0] + t->data[t->bytes - 1];
        }
    } else {
        assert_null(g);
    }
    mcl_gguf_free(g);
    free(copy);
    return st;
}

/* Write a file the suite built into $MOTIFCL_GGUF_SEED_DIR, when that is set. */
static void write_seed(const char *name, const void *data, uint64_t size)
{
    const char *dir = getenv("MOTIFCL_GGUF_SEED_DIR");
    if (!dir || !*dir)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, (size_t)size, f) != size)
        fail_msg("could not write the seed %s", path);
    fclose(f);
}

/* ---------------------------------------------------------------------------------------
 * The type tables
 * ------------------------------------------------------------------------------------- */

/* ggml type id, elements per block, bytes per block: ggml-common.h's block structs (and the
 * sizes their static_asserts hold), copied as numbers. */
static const struct {
    uint32_t id;
    uint64_t elems, bytes;
    const char *name;
} ggml_shapes[] = {
    {0, 1, 4, "f32"},          {1, 1, 2, "f16"},         {2, 32, 18, "q4_0"},
    {3, 32, 20, "q4_1"},       {6, 32, 22, "q5_0"},      {7, 32, 24, "q5_1"},
    {8, 32, 34, "q8_0"},       {9, 32, 36, "q8_1"},      {10, 256, 84, "q2_K"},
    {11, 256, 110, "q3_K"},    {12, 256, 144, "q4_K"},   {13, 256, 176, "q5_K"},
    {14, 256, 210, "q6_K"},    {15, 256, 292, "q8_K"},   {16, 256, 66, "iq2_xxs"},
    {17, 256, 74, "iq2_xs"},   {18, 256, 98, "iq3_xxs"}, {19, 256, 50, "iq1_s"},
    {20, 32, 18, "iq4_nl"},    {21, 256, 110, "iq3_s"},  {22, 256, 82, "iq2_s"},
    {23, 256, 136, "iq4_xs"},  {24, 1, 1, "i8"},         {25, 1, 2, "i16"},
    {26, 1, 4, "i32"},         {27, 1, 8, "i64"},        {28, 1, 8, "f64"},
    {29, 256, 56, "iq1_m"},    {30, 1, 2, "bf16"},       {34, 256, 54, "tq1_0"},
    {35, 256, 66, "tq2_0"},    {39, 32, 17, "mxfp4"},    {40, 64, 36, "nvfp4"},
    {41, 128, 18, "q1_0"},
};
#define N_SHAPES (sizeof ggml_shapes / sizeof ggml_shapes[0])

static const uint32_t removed_ids[] = {4, 5, 31, 32, 33, 36, 37, 38};

static void type_tables(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < N_SHAPES; i++) {
        uint32_t id = ggml_shapes[i].id;
        const char *name = mcl_ggml_type_name(id);
        if (mcl_ggml_block_elems(id) != ggml_shapes[i].elems ||
            mcl_ggml_block_bytes(id) != ggml_shapes[i].bytes || !name ||
            strcmp(name, ggml_shapes[i].name) != 0) {
            print_message("type %u: %" PRIu64 " x %" PRIu64 " bytes, name %s\n", id,
                          mcl_ggml_block_elems(id), mcl_ggml_block_bytes(id),
                          name ? name : "(null)");
            bad++;
        }
    }
    for (size_t i = 0; i < sizeof removed_ids / sizeof removed_ids[0]; i++) {
        const char *name = mcl_ggml_type_name(removed_ids[i]);
        if (mcl_ggml_block_elems(removed_ids[i]) || mcl_ggml_block_bytes(removed_ids[i]) ||
            !name || !strstr(name, "(removed)") || mcl_ggml_type_dtype(removed_ids[i]) != -1)
            bad++;
    }
    static const uint32_t unknown_ids[] = {42, 100, UINT32_MAX};
    for (size_t i = 0; i < sizeof unknown_ids / sizeof unknown_ids[0]; i++) {
        if (mcl_ggml_type_name(unknown_ids[i]) || mcl_ggml_block_elems(unknown_ids[i]) ||
            mcl_ggml_block_bytes(unknown_ids[i]) || mcl_ggml_type_dtype(unknown_ids[i]) != -1)
            bad++;
    }
    /* The types the library uploads as they are; f16 and bf16 are converted by the loader. */
    static const struct {
        uint32_t id;
        int dtype;
    } dtypes[] = {{0, MCL_DTYPE_F32},  {2, MCL_DTYPE_Q4_0}, {8, MCL_DTYPE_Q8_0},
                  {12, MCL_DTYPE_Q4_K}, {13, MCL_DTYPE_Q5_K}, {14, MCL_DTYPE_Q6_K},
                  {1, -1},              {30, -1},             {3, -1},
                  {15, -1}};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        bad += mcl_ggml_type_dtype(dtypes[i].id) != dtypes[i].dtype;
    /* The library's own block table agrees with ggml's for the types it uploads. */
    for (size_t i = 0; i < N_SHAPES; i++) {
        int d = mcl_ggml_type_dtype(ggml_shapes[i].id);
        if (d >= 0)
            bad += (uint64_t)mcl_dtype_block_bytes((mcl_dtype)d) != ggml_shapes[i].bytes ||
                   (uint64_t)mcl_dtype_block_weights((mcl_dtype)d) != ggml_shapes[i].elems;
    }
    bad += strcmp(mcl_gguf_type_name(MCL_GGUF_UINT32), "uint32") != 0 ||
           strcmp(mcl_gguf_type_name(MCL_GGUF_ARRAY), "array") != 0 ||
           mcl_gguf_type_name(13) != NULL;
    assert_true(mcl_test_record_bool("type_tables", bad == 0));
}

/* ---------------------------------------------------------------------------------------
 * Round trips through the writer
 * ------------------------------------------------------------------------------------- */

/* One metadata entry: `count` values of elem type `type` at `values` (C strings for
 * strings), a scalar when is_array is 0. */
typedef struct meta_spec {
    const char *key;
    mcl_gguf_type type;
    int is_array;
    uint64_t count;
    const void *values;
} meta_spec;

static const uint8_t v_u8[] = {200, 0, 255, 7, 1};
static const int8_t v_i8[] = {-100, 127, -128};
static const uint16_t v_u16[] = {60000, 0, 65535, 1};
static const int16_t v_i16[] = {-30000, 32767, -32768, 0};
static const uint32_t v_u32[] = {4000000000u, 0, 123456789};
static const int32_t v_i32[] = {-2000000000, 2147483647, -1};
static const float v_f32[] = {3.25f, -0.0f, 1e-30f, 65504.0f};
static const uint8_t v_bool[] = {1, 0, 1};
static const uint64_t v_u64[] = {(1ull << 63) + 5, UINT64_MAX};
static const int64_t v_i64[] = {-(1ll << 62) - 3, INT64_MAX};
static const double v_f64[] = {-1.5e300, 0.1, 2.0};
static const char *const v_str[] = {"hello, GGUF", "", "\xc4\xa0the", "<|endoftext|>"};
static const char *const v_empty_str[] = {""};
static const int32_t v_i32_changed[] = {-2000000000, 2147483646, -1};

static const meta_spec round_trip_meta[] = {
    {"test.u8", MCL_GGUF_UINT8, 0, 1, v_u8},
    {"test.i8", MCL_GGUF_INT8, 0, 1, v_i8},
    {"test.u16", MCL_GGUF_UINT16, 0, 1, v_u16},
    {"test.i16", MCL_GGUF_INT16, 0, 1, v_i16},
    {"test.u32", MCL_GGUF_UINT32, 0, 1, v_u32},
    {"test.i32", MCL_GGUF_INT32, 0, 1, v_i32},
    {"test.f32", MCL_GGUF_FLOAT32, 0, 1, v_f32},
    {"test.bool", MCL_GGUF_BOOL, 0, 1, v_bool},
    {"test.string", MCL_GGUF_STRING, 0, 1, v_str},
    {"test.empty_string", MCL_GGUF_STRING, 0, 1, v_empty_str},
    {"test.u64", MCL_GGUF_UINT64, 0, 1, v_u64},
    {"test.i64", MCL_GGUF_INT64, 0, 1, v_i64},
    {"test.f64", MCL_GGUF_FLOAT64, 0, 1, v_f64},
    {"test.arr.u8", MCL_GGUF_UINT8, 1, 5, v_u8},
    {"test.arr.i8", MCL_GGUF_INT8, 1, 3, v_i8},
    {"test.arr.u16", MCL_GGUF_UINT16, 1, 4, v_u16},
    {"test.arr.i16", MCL_GGUF_INT16, 1, 4, v_i16},
    {"test.arr.u32", MCL_GGUF_UINT32, 1, 3, v_u32},
    {"test.arr.i32", MCL_GGUF_INT32, 1, 3, v_i32},
    {"test.arr.f32", MCL_GGUF_FLOAT32, 1, 4, v_f32},
    {"test.arr.bool", MCL_GGUF_BOOL, 1, 3, v_bool},
    {"test.arr.string", MCL_GGUF_STRING, 1, 4, v_str},
    {"test.arr.u64", MCL_GGUF_UINT64, 1, 2, v_u64},
    {"test.arr.i64", MCL_GGUF_INT64, 1, 2, v_i64},
    {"test.arr.f64", MCL_GGUF_FLOAT64, 1, 3, v_f64},
    {"test.arr.empty", MCL_GGUF_UINT32, 1, 0, NULL},
    {"test.arr.empty_strings", MCL_GGUF_STRING, 1, 0, NULL},
    {"test.arr.one_empty_string", MCL_GGUF_STRING, 1, 1, v_empty_str},
};
#define N_META (sizeof round_trip_meta / sizeof round_trip_meta[0])

static mcl_status write_meta(mcl_gguf_writer *w, const meta_spec *m)
{
    if (m->is_array)
        return mcl_gguf_writer_add_array(w, m->key, m->type, m->count, m->values);
    if (m->type == MCL_GGUF_STRING)
        return mcl_gguf_writer_add(w, m->key, m->type, ((const char *const *)m->values)[0]);
    return mcl_gguf_writer_add(w, m->key, m->type, m->values);
}

/* Whether element i of kv is what the spec wrote, read through the typed getters. */
static int element_matches(const mcl_gguf *g, const mcl_gguf_kv *kv, const meta_spec *m,
                           uint64_t i)
{
    uint64_t u = 0;
    int64_t s = 0;
    double f = 0;
    int b = 0;
    mcl_gguf_str str = {0};
    int arr = m->is_array;
    switch (m->type) {
    case MCL_GGUF_UINT8:
    case MCL_GGUF_UINT16:
    case MCL_GGUF_UINT32:
    case MCL_GGUF_UINT64: {
        uint64_t want = m->type == MCL_GGUF_UINT8    ? ((const uint8_t *)m->values)[i]
                        : m->type == MCL_GGUF_UINT16 ? ((const uint16_t *)m->values)[i]
                        : m->type == MCL_GGUF_UINT32 ? ((const uint32_t *)m->values)[i]
                                                     : ((const uint64_t *)m->values)[i];
        return (arr ? mcl_gguf_array_u64(kv, i, &u) : mcl_gguf_get_u64(kv, &u)) && u == want;
    }
    case MCL_GGUF_INT8:
    case MCL_GGUF_INT16:
    case MCL_GGUF_INT32:
    case MCL_GGUF_INT64: {
        int64_t want = m->type == MCL_GGUF_INT8    ? ((const int8_t *)m->values)[i]
                       : m->type == MCL_GGUF_INT16 ? ((const int16_t *)m->values)[i]
                       : m->type == MCL_GGUF_INT32 ? ((const int32_t *)m->values)[i]
                                                   : ((const int64_t *)m->values)[i];
        return (arr ? mcl_gguf_array_i64(kv, i, &s) : mcl_gguf_get_i64(kv, &s)) && s == want;
    }
    case MCL_GGUF_FLOAT32:
    case MCL_GGUF_FLOAT64: {
        double want = m->type == MCL_GGUF_FLOAT32 ? (double)((const float *)m->values)[i]
                                                  : ((const double *)m->values)[i];
        return (arr ? mcl_gguf_array_f64(kv, i, &f) : mcl_gguf_get_f64(kv, &f)) &&
               memcmp(&f, &want, sizeof f) == 0;
    }
    case MCL_GGUF_BOOL:
        if (arr)
            return kv->data[i] == ((const uint8_t *)m->values)[i];
        return mcl_gguf_get_bool(kv, &b) && b == ((const uint8_t *)m->values)[i];
    case MCL_GGUF_STRING: {
        const char *want = ((const char *const *)m->values)[i];
        int ok = arr ? mcl_gguf_array_str(g, kv, i, &str) : mcl_gguf_get_str(kv, &str);
        return ok && mcl_gguf_str_eq(str, want);
    }
    default: return 0;
    }
}

/* Mismatches between the file's key and the spec (0: the same). */
static int meta_mismatches(const mcl_gguf *g, const meta_spec *m)
{
    const mcl_gguf_kv *kv = mcl_gguf_find(g, m->key);
    if (!kv || !mcl_gguf_str_eq(kv->key, m->key) || kv->elem_type != m->type ||
        kv->type != (m->is_array ? MCL_GGUF_ARRAY : m->type) || kv->count != m->count) {
        print_message("%s: missing or of another type or count\n", m->key);
        return 1;
    }
    int bad = 0;
    for (uint64_t i = 0; i < m->count; i++) {
        if (!element_matches(g, kv, m, i)) {
            print_message("%s: element %" PRIu64 " differs\n", m->key, i);
            bad++;
        }
    }
    /* Past the end: refused. */
    uint64_t u;
    mcl_gguf_str s;
    if (m->is_array &&
        (mcl_gguf_array_u64(kv, m->count, &u) || mcl_gguf_array_str(g, kv, m->count, &s)))
        bad++;
    return bad;
}

/* A tensor the round trip writes: its type and dims, and its random bytes. */
typedef struct tensor_spec {
    char name[48];
    uint32_t type;
    uint32_t ndim;
    uint64_t dims[4];
    uint64_t bytes;
    unsigned char *data;
} tensor_spec;

/* Every type whose shape is known, [2 blocks, 3]; f32 in 3 and 4 dimensions; an i8 of 7
 * bytes and a q4_0 of one block (18 bytes), whose ends need padding. */
static size_t make_tensors(tensor_spec *t, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < N_SHAPES && n < cap; i++, n++) {
        tensor_spec *s = &t[n];
        snprintf(s->name, sizeof s->name, "blk.%zu.%s.weight", i, ggml_shapes[i].name);
        s->type = ggml_shapes[i].id;
        s->ndim = 2;
        s->dims[0] = 2 * ggml_shapes[i].elems;
        s->dims[1] = 3;
        s->bytes = 6 * ggml_shapes[i].bytes;
    }
    static const struct {
        const char *name;
        uint32_t type, ndim;
        uint64_t dims[4], bytes;
    } extra[] = {
        {"f32.3d", 0, 3, {5, 3, 2, 1}, 120},
        {"f32.4d", 0, 4, {2, 2, 2, 3}, 96},
        {"i8.odd", 24, 1, {7, 1, 1, 1}, 7},
        {"q4_0.one_block", 2, 1, {32, 1, 1, 1}, 18},
    };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < cap; i++, n++) {
        tensor_spec *s = &t[n];
        snprintf(s->name, sizeof s->name, "%s", extra[i].name);
        s->type = extra[i].type;
        s->ndim = extra[i].ndim;
        memcpy(s->dims, extra[i].dims, sizeof s->dims);
        s->bytes = extra[i].bytes;
    }
    for (size_t i = 0; i < n; i++) {
        t[i].data = malloc((size_t)t[i].bytes);
        assert_non_null(t[i].data);
        fill_random(t[i].data, (size_t)t[i].bytes);
    }
    return n;
}

/* Mismatches between the parsed tensors and the specs, offsets included: tensor i at the
 * alignment after tensor i-1, as ggml lays them out. */
static int tensor_mismatches(const mcl_gguf *g, const tensor_spec *t, size_t n,
                             uint32_t alignment)
{
    int bad = 0;
    uint64_t offset = 0;
    if (mcl_gguf_tensor_count(g) != n)
        return 1;
    for (size_t i = 0; i < n; i++) {
        const mcl_gguf_tensor *p = mcl_gguf_tensor_at(g, i);
        int ok = p && mcl_gguf_tensor_find(g, t[i].name) == p &&
                 mcl_gguf_str_eq(p->name, t[i].name) && p->type == t[i].type &&
                 p->ndim == t[i].ndim && p->bytes == t[i].bytes && p->offset == offset &&
                 p->offset % alignment == 0 && p->data &&
                 p->data == (const unsigned char *)mcl_gguf_tensor_at(g, 0)->data + offset &&
                 memcmp(p->data, t[i].data, (size_t)t[i].bytes) == 0;
        for (uint32_t d = 0; ok && d < MCL_GGUF_MAX_DIMS; d++)
            ok = p->dims[d] == (d < t[i].ndim ? t[i].dims[d] : 1);
        if (!ok) {
            print_message("tensor %zu (%s) differs\n", i, t[i].name);
            bad++;
        }
        offset += (t[i].bytes + alignment - 1) / alignment * alignment;
    }
    return bad;
}

static void round_trip(void **state)
{
    (void)state;
    rng_state = 42;
    tensor_spec tensors[64];
    size_t n_tensors = make_tensors(tensors, 64);
    static const uint32_t versions[] = {2, 3};
    static const uint32_t alignments[] = {32, 64, 1024};
    int bad = 0, files = 0;
    void *last_file = NULL;
    uint64_t last_size = 0;
    for (size_t v = 0; v < 2; v++) {
        for (size_t a = 0; a < 3; a++) {
            mcl_gguf_writer *w = mcl_gguf_writer_create(versions[v], alignments[a]);
            assert_non_null(w);
            for (size_t i = 0; i < N_META; i++)
                assert_mcl_ok(write_meta(w, &round_trip_meta[i]));
            for (size_t i = 0; i < n_tensors; i++)
                assert_mcl_ok(mcl_gguf_writer_add_tensor(w, tensors[i].name, tensors[i].ndim,
                                                         tensors[i].dims, tensors[i].type,
                                                         tensors[i].data, tensors[i].bytes));
            void *file;
            uint64_t size;
            assert_mcl_ok(mcl_gguf_writer_finish(w, &file, &size));
            mcl_gguf_writer_destroy(w);

            char why[256];
            mcl_gguf *g = NULL;
            mcl_status st = mcl_gguf_parse(file, size, &g, why, sizeof why);
            if (st != MCL_SUCCESS)
                fail_msg("version %u alignment %u: %s", versions[v], alignments[a], why);
            int here = 0;
            here += mcl_gguf_version(g) != versions[v];
            here += mcl_gguf_alignment(g) != alignments[a];
            here += mcl_gguf_data_offset(g) % alignments[a] != 0;
            /* general.alignment is written only when it is not GGUF's default. */
            const mcl_gguf_kv *ak = mcl_gguf_find(g, "general.alignment");
            uint64_t av = 0;
            here += alignments[a] == 32 ? ak != NULL
                                        : !(mcl_gguf_get_u64(ak, &av) && av == alignments[a]);
            here += mcl_gguf_kv_count(g) != N_META + (alignments[a] != 32);
            for (size_t i = 0; i < N_META; i++)
                here += meta_mismatches(g, &round_trip_meta[i]);
            here += tensor_mismatches(g, tensors, n_tensors, alignments[a]);
            /* The last tensor is padded too: the file ends at a multiple of the alignment. */
            here += size % alignments[a] != 0;
            if (here)
                print_message("version %u alignment %u: %d mismatches\n", versions[v],
                              alignments[a], here);
            bad += here;
            files++;
            mcl_gguf_free(g);
            if ((v == 0 && a == 0) || (v == 1 && a == 1)) {
                char seed[64];
                snprintf(seed, sizeof seed, "round-trip-v%u-align%u.gguf", versions[v],
                         alignments[a]);
                write_seed(seed, file, size);
            }
            free(last_file);
            last_file = file;
            last_size = size;
        }
    }
    mcl_test_record_bool("round_trip_bit_identical", bad == 0 && files == 6);

    /* Controls: the same comparisons catch one flipped tensor byte and a changed value. */
    print_message("controls (one difference each is expected):\n");
    mcl_gguf *g = NULL;
    unsigned char *file = last_file;
    const mcl_gguf_tensor *t5;
    assert_mcl_ok(mcl_gguf_parse(file, last_size, &g, NULL, 0));
    t5 = mcl_gguf_tensor_at(g, 5);
    file[(size_t)(t5->data - file) + t5->bytes / 2] ^= 0x10;
    int flipped = tensor_mismatches(g, tensors, n_tensors, 1024);
    meta_spec changed = {"test.arr.i32", MCL_GGUF_INT32, 1, 3, v_i32_changed};
    int changed_bad = meta_mismatches(g, &changed);
    mcl_gguf_free(g);
    mcl_test_record_bool("round_trip_control_catches_changes", flipped == 1 && changed_bad == 1);
    free(last_file);
    for (size_t i = 0; i < n_tensors; i++)
        free(tensors[i].data);
    assert_int_equal(bad, 0);
    assert_int_equal(flipped, 1);
    assert_int_equal(changed_bad, 1);
}

/* The writer refuses what ggml's reader would refuse, and a refused call adds nothing. */
static void writer_refusals(void **state)
{
    (void)state;
    mcl_test_wrong_statuses = 0;
    assert_null(mcl_gguf_writer_create(1, 32));
    assert_null(mcl_gguf_writer_create(4, 32));
    assert_null(mcl_gguf_writer_create(3, 48));
    assert_null(mcl_gguf_writer_create(3, 0));
    mcl_gguf_writer *w = mcl_gguf_writer_create(3, 32);
    assert_non_null(w);
    uint32_t one = 1;
    uint8_t two = 2;
    float f = 1.0f;
    const char *strs[] = {"a", NULL};
    uint64_t dims[4] = {32, 2, 1, 1};
    unsigned char block[4 * 34] = {0};
    EXPECT_STATUS(mcl_gguf_writer_add(w, "a.key", MCL_GGUF_UINT32, &one), MCL_SUCCESS);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "a.key", MCL_GGUF_UINT32, &one), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "", MCL_GGUF_UINT32, &one), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, NULL, MCL_GGUF_UINT32, &one), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "general.alignment", MCL_GGUF_UINT32, &one), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "b.key", MCL_GGUF_ARRAY, &one), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "b.key", (mcl_gguf_type)13, &one), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "b.key", MCL_GGUF_BOOL, &two), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "b.key", MCL_GGUF_FLOAT32, NULL), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_array(w, "b.key", MCL_GGUF_ARRAY, 1, &one), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_array(w, "b.key", MCL_GGUF_STRING, 2, strs), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_array(w, "b.key", MCL_GGUF_FLOAT32, 1, NULL), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add(w, "b.key", MCL_GGUF_FLOAT32, &f), MCL_SUCCESS);

    char long_name[80];
    memset(long_name, 'n', sizeof long_name);
    long_name[64] = '\0'; /* 64 bytes: ggml's GGML_MAX_NAME refuses it */
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, long_name, 2, dims, 8, block, 68), INVALID);
    long_name[63] = '\0'; /* 63 bytes: accepted */
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, long_name, 2, dims, 8, block, 68), MCL_SUCCESS);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, long_name, 2, dims, 8, block, 68), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "", 2, dims, 8, block, 68), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 0, dims, 8, block, 68), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 5, dims, 8, block, 68), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, dims, 8, block, 67), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, dims, 8, NULL, 68), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, dims, 4, block, 68), UNSUPPORTED);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, dims, 99, block, 68), UNSUPPORTED);
    uint64_t odd[2] = {33, 2};
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, odd, 8, block, 68), INVALID);
    uint64_t zero[2] = {32, 0};
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, zero, 8, block, 0), INVALID);
    uint64_t huge[4] = {1ull << 32, 1ull << 32, 1, 1};
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, huge, 0, block, 68), INVALID);
    EXPECT_STATUS(mcl_gguf_writer_add_tensor(w, "t", 2, dims, 8, block, 68), MCL_SUCCESS);

    /* What was refused left nothing behind: two keys, two tensors. */
    void *file;
    uint64_t size;
    char why[256];
    assert_mcl_ok(mcl_gguf_writer_finish(w, &file, &size));
    mcl_gguf_writer_destroy(w);
    mcl_gguf *g = NULL;
    mcl_status st = mcl_gguf_parse(file, size, &g, why, sizeof why);
    if (st != MCL_SUCCESS)
        fail_msg("%s", why);
    write_seed("writer-two-tensors.gguf", file, size);
    int ok = mcl_gguf_kv_count(g) == 2 && mcl_gguf_tensor_count(g) == 2 &&
             mcl_gguf_tensor_find(g, "t") && mcl_gguf_tensor_find(g, long_name) &&
             mcl_gguf_tensor_at(g, 1)->offset == 96;
    mcl_gguf_free(g);
    free(file);
    mcl_gguf_writer_destroy(NULL);
    assert_true(mcl_test_record_bool("writer_refusals", ok && mcl_test_wrong_statuses == 0));
}

/* The typed reads convert only without loss, and refuse other kinds and NULL. */
static void typed_reads(void **state)
{
    (void)state;
    mcl_gguf_writer *w = mcl_gguf_writer_create(3, 32);
    assert_non_null(w);
    int32_t minus_one = -1;
    uint64_t big = (1ull << 63) + 5, exact = 1ull << 53, inexact = (1ull << 53) + 1;
    float quarter = 0.25f;
    uint8_t yes = 1;
    const uint32_t nums[2] = {7, 8};
    assert_mcl_ok(mcl_gguf_writer_add(w, "i32", MCL_GGUF_INT32, &minus_one));
    assert_mcl_ok(mcl_gguf_writer_add(w, "u64.big", MCL_GGUF_UINT64, &big));
    assert_mcl_ok(mcl_gguf_writer_add(w, "u64.exact", MCL_GGUF_UINT64, &exact));
    assert_mcl_ok(mcl_gguf_writer_add(w, "u64.inexact", MCL_GGUF_UINT64, &inexact));
    assert_mcl_ok(mcl_gguf_writer_add(w, "f32", MCL_GGUF_FLOAT32, &quarter));
    assert_mcl_ok(mcl_gguf_writer_add(w, "bool", MCL_GGUF_BOOL, &yes));
    assert_mcl_ok(mcl_gguf_writer_add(w, "str", MCL_GGUF_STRING, "text"));
    assert_mcl_ok(mcl_gguf_writer_add_array(w, "arr", MCL_GGUF_UINT32, 2, nums));
    void *file;
    uint64_t size;
    assert_mcl_ok(mcl_gguf_writer_finish(w, &file, &size));
    mcl_gguf_writer_destroy(w);
    mcl_gguf *g = NULL;
    assert_mcl_ok(mcl_gguf_parse(file, size, &g, NULL, 0));
    const mcl_gguf_kv *i32 = mcl_gguf_find(g, "i32"), *ubig = mcl_gguf_find(g, "u64.big"),
                      *uex = mcl_gguf_find(g, "u64.exact"),
                      *uinex = mcl_gguf_find(g, "u64.inexact"), *f32 = mcl_gguf_find(g, "f32"),
                      *b = mcl_gguf_find(g, "bool"), *str = mcl_gguf_find(g, "str"),
                      *arr = mcl_gguf_find(g, "arr");
    uint64_t u = 99;
    int64_t i = 99;
    double f = 99;
    int flag = 99;
    mcl_gguf_str s;
    int ok = !mcl_gguf_get_u64(i32, &u) && u == 99 && mcl_gguf_get_i64(i32, &i) && i == -1 &&
             mcl_gguf_get_f64(i32, &f) && f == -1.0 && !mcl_gguf_get_i64(ubig, &i) &&
             mcl_gguf_get_u64(ubig, &u) && u == big && !mcl_gguf_get_f64(ubig, &f) &&
             mcl_gguf_get_f64(uex, &f) && f == 9007199254740992.0 &&
             !mcl_gguf_get_f64(uinex, &f) && mcl_gguf_get_f64(f32, &f) && f == 0.25 &&
             !mcl_gguf_get_u64(f32, &u) && !mcl_gguf_get_u64(b, &u) &&
             mcl_gguf_get_bool(b, &flag) && flag == 1 && !mcl_gguf_get_bool(i32, &flag) &&
             !mcl_gguf_get_u64(str, &u) && mcl_gguf_get_str(str, &s) &&
             mcl_gguf_str_eq(s, "text") && !mcl_gguf_str_eq(s, "tex") &&
             !mcl_gguf_get_str(i32, &s) && !mcl_gguf_get_u64(arr, &u) &&
             mcl_gguf_array_u64(arr, 1, &u) && u == 8 && !mcl_gguf_array_u64(arr, 2, &u) &&
             !mcl_gguf_array_u64(i32, 0, &u) && !mcl_gguf_array_str(g, arr, 0, &s) &&
             !mcl_gguf_get_u64(NULL, &u) && !mcl_gguf_get_str(NULL, &s) &&
             !mcl_gguf_find(g, "missing") && !mcl_gguf_find(g, "") &&
             !mcl_gguf_tensor_find(g, "arr") && !mcl_gguf_kv_at(g, 8) && mcl_gguf_kv_at(g, 7);
    write_seed("typed-values.gguf", file, size);
    /* A bool byte of 2 is no bool (gguf.md allows 0 and 1). */
    unsigned char *bytes = file;
    size_t bool_at = (size_t)(b->data - bytes);
    mcl_gguf_free(g);
    bytes[bool_at] = 2;
    assert_mcl_ok(mcl_gguf_parse(file, size, &g, NULL, 0));
    ok = ok && !mcl_gguf_get_bool(mcl_gguf_find(g, "bool"), &flag);
    mcl_gguf_free(g);
    free(file);
    assert_true(mcl_test_record_bool("typed_reads", ok));
}

/* ---------------------------------------------------------------------------------------
 * The real vocabulary files
 * ------------------------------------------------------------------------------------- */

#define VOCAB_DIR MCL_TEST_DATA_DIR "/vocab/"

static mcl_gguf *open_vocab(const char *name, mcl_mapped *m)
{
    char path[512], why[256];
    snprintf(path, sizeof path, "%s%s", VOCAB_DIR, name);
    mcl_status st = mcl_mapped_open(path, m, why, sizeof why);
    if (st != MCL_SUCCESS)
        fail_msg("%s", why);
    mcl_gguf *g = NULL;
    st = mcl_gguf_parse(m->data, m->size, &g, why, sizeof why);
    if (st != MCL_SUCCESS)
        fail_msg("%s: %s", name, why);
    return g;
}

static int token_is(const mcl_gguf *g, const mcl_gguf_kv *kv, uint64_t i, const char *want)
{
    mcl_gguf_str s;
    if (mcl_gguf_array_str(g, kv, i, &s) && mcl_gguf_str_eq(s, want))
        return 1;
    print_message("%s[%" PRIu64 "] is not \"%s\"\n", kv ? "tokens" : "(missing)", i, want);
    return 0;
}

static int str_key_is(const mcl_gguf *g, const char *key, const char *want)
{
    mcl_gguf_str s;
    return mcl_gguf_get_str(mcl_gguf_find(g, key), &s) && mcl_gguf_str_eq(s, want);
}

static int u64_key_is(const mcl_gguf *g, const char *key, uint64_t want)
{
    uint64_t v;
    return mcl_gguf_get_u64(mcl_gguf_find(g, key), &v) && v == want;
}

static void vocab_llama_spm(void **state)
{
    (void)state;
    mcl_mapped m;
    mcl_gguf *g = open_vocab("ggml-vocab-llama-spm.gguf", &m);
    const mcl_gguf_kv *tokens = mcl_gguf_find(g, "tokenizer.ggml.tokens");
    const mcl_gguf_kv *scores = mcl_gguf_find(g, "tokenizer.ggml.scores");
    const mcl_gguf_kv *types = mcl_gguf_find(g, "tokenizer.ggml.token_type");
    double score, eps;
    int64_t type0;
    mcl_gguf_str past_end;
    int add_bos = 0, add_eos = 1;
    int ok = m.is_mapped && mcl_gguf_version(g) == 3 && mcl_gguf_tensor_count(g) == 0 &&
             mcl_gguf_kv_count(g) == 22 && mcl_gguf_alignment(g) == 32 &&
             mcl_gguf_data_offset(g) == m.size &&
             str_key_is(g, "tokenizer.ggml.model", "llama") &&
             str_key_is(g, "general.architecture", "llama") &&
             tokens && tokens->elem_type == MCL_GGUF_STRING && tokens->count == 32000 &&
             token_is(g, tokens, 0, "<unk>") && token_is(g, tokens, 1, "<s>") &&
             token_is(g, tokens, 2, "</s>") && token_is(g, tokens, 3, "<0x00>") &&
             token_is(g, tokens, 450, "\xe2\x96\x81The") && token_is(g, tokens, 1576, "The") &&
             token_is(g, tokens, 29871, "\xe2\x96\x81") &&
             token_is(g, tokens, 31999, "\xe7\xbb\x99") &&
             scores && scores->elem_type == MCL_GGUF_FLOAT32 && scores->count == 32000 &&
             mcl_gguf_array_f64(scores, 450, &score) && score == -191.0 &&
             types && types->count == 32000 && mcl_gguf_array_i64(types, 0, &type0) &&
             type0 == 2 && u64_key_is(g, "tokenizer.ggml.bos_token_id", 1) &&
             u64_key_is(g, "tokenizer.ggml.eos_token_id", 2) &&
             u64_key_is(g, "llama.vocab_size", 32000) &&
             mcl_gguf_get_bool(mcl_gguf_find(g, "tokenizer.ggml.add_bos_token"), &add_bos) &&
             add_bos == 1 &&
             mcl_gguf_get_bool(mcl_gguf_find(g, "tokenizer.ggml.add_eos_token"), &add_eos) &&
             add_eos == 0 &&
             mcl_gguf_get_f64(mcl_gguf_find(g, "llama.attention.layer_norm_rms_epsilon"), &eps) &&
             eps == (double)1e-5f && !mcl_gguf_array_str(g, tokens, 32000, &past_end) &&
             !mcl_gguf_find(g, "tokenizer.ggml.merges");
    mcl_gguf_free(g);
    mcl_mapped_close(&m);
    assert_true(mcl_test_record_bool("vocab_llama_spm", ok));
}

static void vocab_gpt2(void **state)
{
    (void)state;
    mcl_mapped m;
    mcl_gguf *g = open_vocab("ggml-vocab-gpt-2.gguf", &m);
    const mcl_gguf_kv *tokens = mcl_gguf_find(g, "tokenizer.ggml.tokens");
    const mcl_gguf_kv *merges = mcl_gguf_find(g, "tokenizer.ggml.merges");
    int ok = mcl_gguf_version(g) == 3 && mcl_gguf_tensor_count(g) == 0 &&
             mcl_gguf_kv_count(g) == 16 && str_key_is(g, "tokenizer.ggml.model", "gpt2") &&
             str_key_is(g, "tokenizer.ggml.pre", "gpt-2") && tokens && tokens->count == 50257 &&
             token_is(g, tokens, 0, "!") && token_is(g, tokens, 198, "\xc4\x8a") &&
             token_is(g, tokens, 220, "\xc4\xa0") && token_is(g, tokens, 464, "The") &&
             token_is(g, tokens, 50256, "<|endoftext|>") && merges && merges->count == 50000 &&
             token_is(g, merges, 0, "\xc4\xa0 t") && token_is(g, merges, 2, "h e") &&
             token_is(g, merges, 49999, "\xc4\xa0g azed") &&
             u64_key_is(g, "tokenizer.ggml.bos_token_id", 50256);
    /* Every string of both arrays, in O(1) each. */
    uint64_t total = 0;
    mcl_gguf_str s;
    for (uint64_t i = 0; tokens && i < tokens->count; i++)
        total += mcl_gguf_array_str(g, tokens, i, &s) ? s.len : 0;
    for (uint64_t i = 0; merges && i < merges->count; i++)
        total += mcl_gguf_array_str(g, merges, i, &s) ? s.len : 0;
    ok = ok && total > 0;
    /* A key that is not one of g's (a copy) is refused. */
    mcl_gguf_kv copy = *tokens;
    ok = ok && !mcl_gguf_array_str(g, &copy, 0, &s) && !mcl_gguf_array_str(NULL, tokens, 0, &s);
    mcl_gguf_free(g);

    /* Time sanity, not an assertion: the fastest of 20 parses of the mapped file. */
    double best = 1e30;
    for (int r = 0; r < 20; r++) {
        double t0 = now_ms();
        assert_mcl_ok(mcl_gguf_parse(m.data, m.size, &g, NULL, 0));
        double t1 = now_ms();
        mcl_gguf_free(g);
        best = t1 - t0 < best ? t1 - t0 : best;
    }
    char note[128];
    snprintf(note, sizeof note, "%.3f ms (fastest of 20; %" PRIu64 " bytes, 100257 strings)",
             best, m.size);
    mcl_test_note("gpt2_vocab_parse_ms", note);
    print_message("gpt-2 vocabulary: parsed in %s\n", note);
    mcl_mapped_close(&m);
    assert_true(mcl_test_record_bool("vocab_gpt2", ok));
}

/* Truncations and single-byte damage of a real file: never a crash, never a success for a
 * cut inside the metadata. */
static void vocab_damage(void **state)
{
    (void)state;
    mcl_mapped m;
    char why[256];
    mcl_gguf *g = open_vocab("ggml-vocab-llama-spm.gguf", &m);
    mcl_gguf_free(g);
    rng_state = 7;
    int bad = 0;
    for (int r = 0; r < 200; r++) {
        uint64_t cut = r < 64 ? (uint64_t)r : rng_next() % m.size;
        why[0] = '\0';
        if (parse_copy(m.data, cut, why, sizeof why) == MCL_SUCCESS || !why[0])
            bad++;
    }
    /* A byte damaged: any status, but the parse must stay inside the copy. */
    unsigned char *copy = malloc((size_t)m.size);
    assert_non_null(copy);
    memcpy(copy, m.data, (size_t)m.size);
    for (int r = 0; r < 100; r++) {
        uint64_t at = r < 40 ? (uint64_t)r : rng_next() % 4096;
        unsigned char was = copy[at];
        copy[at] ^= (unsigned char)(1u << (r % 8));
        (void)parse_copy(copy, m.size, why, sizeof why);
        copy[at] = was;
    }
    free(copy);
    mcl_mapped_close(&m);
    assert_true(mcl_test_record_bool("vocab_truncations_fail", bad == 0));
}

/* A vocabulary-sized array of 150000 strings, written and parsed: the index makes every
 * access O(1), and the parse takes milliseconds (noted, not asserted). */
static void large_string_array(void **state)
{
    (void)state;
    enum { COUNT = 150000 };
    char **strs = malloc(COUNT * sizeof *strs);
    assert_non_null(strs);
    rng_state = 9;
    for (size_t i = 0; i < COUNT; i++) {
        strs[i] = malloc(24);
        assert_non_null(strs[i]);
        snprintf(strs[i], 24, "tok%zu_%u", i, (unsigned)(rng_next() % 1000));
    }
    mcl_gguf_writer *w = mcl_gguf_writer_create(3, 32);
    assert_non_null(w);
    assert_mcl_ok(mcl_gguf_writer_add_array(w, "tokenizer.ggml.tokens", MCL_GGUF_STRING, COUNT,
                                            (const char *const *)strs));
    void *file;
    uint64_t size;
    assert_mcl_ok(mcl_gguf_writer_finish(w, &file, &size));
    mcl_gguf_writer_destroy(w);
    mcl_gguf *g = NULL;
    double t0 = now_ms();
    assert_mcl_ok(mcl_gguf_parse(file, size, &g, NULL, 0));
    double t1 = now_ms();
    const mcl_gguf_kv *kv = mcl_gguf_find(g, "tokenizer.ggml.tokens");
    int bad = !kv || kv->count != COUNT;
    for (size_t k = 0; !bad && k < COUNT; k++) {
        size_t i = (size_t)(rng_next() % COUNT); /* random order */
        mcl_gguf_str s;
        bad += !mcl_gguf_array_str(g, kv, i, &s) || !mcl_gguf_str_eq(s, strs[i]);
    }
    double t2 = now_ms();
    char note[128];
    snprintf(note, sizeof note, "parse %.3f ms, %d random reads %.3f ms", t1 - t0, COUNT,
             t2 - t1);
    mcl_test_note("string_array_150k", note);
    print_message("150000 strings: %s\n", note);
    mcl_gguf_free(g);
    free(file);
    for (size_t i = 0; i < COUNT; i++)
        free(strs[i]);
    free(strs);
    assert_true(mcl_test_record_bool("string_array_150k", bad == 0));
}

/* ---------------------------------------------------------------------------------------
 * File maps
 * ------------------------------------------------------------------------------------- */

static void mapped_files(void **state)
{
    (void)state;
    mcl_mapped m;
    char why[256];
    int ok = 1;
    ok &= mcl_mapped_open(MCL_TEST_DATA_DIR, &m, why, sizeof why) == MCL_ERROR_IO &&
          strstr(why, "directory") != NULL && m.data == NULL;
    ok &= mcl_mapped_open(MCL_TEST_DATA_DIR "/no-such-file.gguf", &m, why, sizeof why) ==
              MCL_ERROR_IO &&
          why[0] != '\0';
    ok &= mcl_mapped_open(NULL, &m, why, sizeof why) == INVALID;

    char path[] = "/tmp/motifcl-gguf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ok &= mcl_mapped_open(path, &m, why, sizeof why) == MCL_SUCCESS && m.data == NULL &&
          m.size == 0;
    /* An empty file is no GGUF file. */
    mcl_gguf *g = NULL;
    ok &= mcl_gguf_parse(m.data, m.size, &g, why, sizeof why) == INVALID && g == NULL &&
          strstr(why, "too short") != NULL;
    mcl_mapped_close(&m);
    mcl_mapped_close(&m); /* a closed map is accepted */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("GGUF", f);
    fclose(f);
    ok &= mcl_mapped_open(path, &m, why, sizeof why) == MCL_SUCCESS && m.size == 4 &&
          memcmp(m.data, "GGUF", 4) == 0 && m.is_mapped;
    mcl_mapped_close(&m);
    ok &= m.data == NULL && m.size == 0;
    remove(path);
    mcl_mapped zero = {0};
    mcl_mapped_close(&zero);
    mcl_mapped_close(NULL);
    assert_true(mcl_test_record_bool("mapped_files", ok));
}

/* ---------------------------------------------------------------------------------------
 * The malformed corpus
 * ------------------------------------------------------------------------------------- */

/* The corpus file, laid out here byte by byte (version 3, alignment 32 written as a key):
 *   key 0 general.alignment = uint32 32
 *   key 1 test.name = "corpus"
 *   key 2 test.list = string[3] {"a", "bc", ""}
 *   key 3 test.nums = uint32[3] {1, 2, 3}
 *   tensor 0 tensor.a: q8_0 [32, 2], 68 bytes at 0
 *   tensor 1 tensor.b: f32 [8], 32 bytes at 96
 *   tensor 2 tensor.c: i8 [3], 3 bytes at 128, then padding to 160 */
typedef struct layout {
    uint64_t magic, version, n_tensors, n_kv;
    uint64_t key_len[4], key[4], type[4];
    uint64_t align_value, str_len;
    uint64_t list_elem, list_count, list_str_len[3];
    uint64_t nums_elem, nums_count;
    uint64_t name_len[3], name[3], ndim[3], dims[3][2], ttype[3], offset[3];
    uint64_t data_offset, data_end, size;
} layout;

typedef struct emitter {
    unsigned char buf[1024];
    uint64_t len;
} emitter;

static uint64_t emit_le(emitter *e, uint64_t v, unsigned bytes)
{
    uint64_t at = e->len;
    for (unsigned i = 0; i < bytes; i++)
        e->buf[e->len++] = (unsigned char)(v >> (8 * i));
    return at;
}

static uint64_t emit_str(emitter *e, const char *s, uint64_t *bytes_at)
{
    uint64_t at = emit_le(e, strlen(s), 8);
    if (bytes_at)
        *bytes_at = e->len;
    memcpy(e->buf + e->len, s, strlen(s));
    e->len += strlen(s);
    return at;
}

static void build_corpus_file(emitter *e, layout *l)
{
    memset(e, 0, sizeof *e);
    memset(l, 0, sizeof *l);
    l->magic = e->len;
    memcpy(e->buf, "GGUF", 4);
    e->len = 4;
    l->version = emit_le(e, 3, 4);
    l->n_tensors = emit_le(e, 3, 8);
    l->n_kv = emit_le(e, 4, 8);

    static const char *const keys[4] = {"general.alignment", "test.name", "test.list",
                                        "test.nums"};
    for (int k = 0; k < 4; k++) {
        l->key_len[k] = emit_str(e, keys[k], &l->key[k]);
        l->type[k] = emit_le(e, k == 0 ? 4 : k == 1 ? 8 : 9, 4);
        if (k == 0)
            l->align_value = emit_le(e, 32, 4);
        if (k == 1)
            l->str_len = emit_str(e, "corpus", NULL);
        if (k == 2) {
            static const char *const list[3] = {"a", "bc", ""};
            l->list_elem = emit_le(e, 8, 4);
            l->list_count = emit_le(e, 3, 8);
            for (int j = 0; j < 3; j++)
                l->list_str_len[j] = emit_str(e, list[j], NULL);
        }
        if (k == 3) {
            l->nums_elem = emit_le(e, 4, 4);
            l->nums_count = emit_le(e, 3, 8);
            for (uint32_t j = 1; j <= 3; j++)
                emit_le(e, j, 4);
        }
    }
    static const struct {
        const char *name;
        uint32_t ndim, type;
        uint64_t dims[2], offset;
    } t[3] = {
        {"tensor.a", 2, 8, {32, 2}, 0},
        {"tensor.b", 1, 0, {8, 0}, 96},
        {"tensor.c", 1, 24, {3, 0}, 128},
    };
    for (int i = 0; i < 3; i++) {
        l->name_len[i] = emit_str(e, t[i].name, &l->name[i]);
        l->ndim[i] = emit_le(e, t[i].ndim, 4);
        for (uint32_t d = 0; d < t[i].ndim; d++)
            l->dims[i][d] = emit_le(e, t[i].dims[d], 8);
        l->ttype[i] = emit_le(e, t[i].type, 4);
        l->offset[i] = emit_le(e, t[i].offset, 8);
    }
    while (e->len % 32)
        e->buf[e->len++] = 0;
    l->data_offset = e->len;
    for (uint64_t i = 0; i < 160; i++)
        e->buf[e->len++] = (unsigned char)(i * 7 + 1);
    l->data_end = l->data_offset + 131; /* tensor.c's last byte + 1 */
    l->size = e->len;
}

/* A change to the corpus file: `width` bytes (4 or 8: a little-endian value; 0: the bytes
 * of `text`) at a field of the layout. */
typedef struct patch {
    size_t field; /* offsetof(layout, ...) */
    unsigned width;
    uint64_t value;
    const char *text;
} patch;

typedef struct corpus_case {
    const char *what;
    patch patches[2];
    mcl_status want;
    const char *message; /* a part of the message, or NULL */
} corpus_case;

#define AT(f) offsetof(layout, f)
#define P4(f, v) {AT(f), 4, (v), NULL}
#define P8(f, v) {AT(f), 8, (v), NULL}
#define PT(f, s) {AT(f), 0, 0, (s)}
#define NONE {0, 0, 0, NULL}

static const corpus_case corpus[] = {
    /* Controls: the undamaged file, and a patch that writes what is there. */
    {"control", {NONE, NONE}, MCL_SUCCESS, NULL},
    {"no-op patch", {P4(version, 3), P8(offset[1], 96)}, MCL_SUCCESS, NULL},
    {"version 2", {P4(version, 2), NONE}, MCL_SUCCESS, NULL},
    /* Header. */
    {"bad magic", {PT(magic, "GGUG"), NONE}, INVALID, "header: magic 47 47 55 47"},
    {"version 1", {P4(version, 1), NONE}, UNSUPPORTED, "version 1 (32-bit counts)"},
    {"version 4", {P4(version, 4), NONE}, UNSUPPORTED, "version 4 is not supported"},
    {"version 0", {P4(version, 0), NONE}, UNSUPPORTED, "version 0 is not supported"},
    {"big-endian version", {P4(version, 0x03000000), NONE}, UNSUPPORTED, "big-endian"},
    {"kv count 2^60", {P8(n_kv, 1ull << 60), NONE}, INVALID,
     "metadata_kv_count 1152921504606846976"},
    {"kv count 2^64-1", {P8(n_kv, UINT64_MAX), NONE}, INVALID, "metadata_kv_count"},
    {"kv count one past", {P8(n_kv, 5), NONE}, INVALID, NULL},
    {"tensor count 2^60", {P8(n_tensors, 1ull << 60), NONE}, INVALID, "tensor_count"},
    {"tensor count 2^64-1", {P8(n_tensors, UINT64_MAX), NONE}, INVALID, "tensor_count"},
    {"tensor count one past", {P8(n_tensors, 4), NONE}, INVALID, "tensor 3: empty name"},
    {"counts together too many", {P8(n_kv, 20), P8(n_tensors, 9)}, INVALID, "more than the"},
    /* Keys and values. */
    {"key length 2^64-1", {P8(key_len[1], UINT64_MAX), NONE}, INVALID,
     "metadata key 1: key: string length 18446744073709551615"},
    {"key length 2^63", {P8(key_len[1], 1ull << 63), NONE}, INVALID, "past the end of the file"},
    {"key length one past", {P8(key_len[1], 1000), NONE}, INVALID, "past the end"},
    {"empty key", {P8(key_len[1], 0), NONE}, INVALID, "metadata key 1: empty key"},
    {"duplicate key", {PT(key[3], "test.name"), NONE}, INVALID,
     "metadata key 3 (test.name): duplicate key (also metadata key 1)"},
    {"string length 2^64-1", {P8(str_len, UINT64_MAX), NONE}, INVALID,
     "metadata key 1 (test.name): string value: string length"},
    {"unknown value type", {P4(type[1], 13), NONE}, INVALID, "value type 13 is not a GGUF type"},
    {"value type 2^32-1", {P4(type[1], UINT32_MAX), NONE}, INVALID, "value type 4294967295"},
    {"nested array", {P4(nums_elem, 9), NONE}, UNSUPPORTED,
     "metadata key 3 (test.nums): an array of arrays"},
    {"unknown element type", {P4(nums_elem, 13), NONE}, INVALID, "array element type 13"},
    {"u32 array count 2^62", {P8(nums_count, 1ull << 62), NONE}, INVALID, "uint32 values"},
    {"u32 array count 2^64-1", {P8(nums_count, UINT64_MAX), NONE}, INVALID, "past the end"},
    {"u32 array count one past", {P8(nums_count, 1000), NONE}, INVALID, "past the end"},
    {"string array count 2^61", {P8(list_count, 1ull << 61), NONE}, INVALID,
     "array of 2305843009213693952 strings"},
    {"array string length 2^64-4", {P8(list_str_len[1], UINT64_MAX - 3), NONE}, INVALID,
     "string 1 of the array"},
    {"alignment 0", {P4(align_value, 0), NONE}, INVALID, "0 is not a power of two"},
    {"alignment 48", {P4(align_value, 48), NONE}, INVALID, "48 is not a power of two"},
    {"alignment of type int32", {P4(type[0], 5), NONE}, INVALID, "of type int32, must be uint32"},
    {"alignment 64", {P4(align_value, 64), NONE}, INVALID,
     "tensor 1 (tensor.b): offset 96 is not a multiple of the alignment 64"},
    /* Tensor infos. */
    {"empty name", {P8(name_len[1], 0), NONE}, INVALID, "tensor 1: empty name"},
    {"name length 2^64-1", {P8(name_len[1], UINT64_MAX), NONE}, INVALID, "tensor 1: name"},
    {"duplicate name", {PT(name[2], "tensor.a"), NONE}, INVALID,
     "tensor 2 (tensor.a): duplicate name (also tensor 0)"},
    {"n_dims 0", {P4(ndim[1], 0), NONE}, INVALID, "tensor 1 (tensor.b): n_dims 0"},
    {"n_dims 5", {P4(ndim[1], 5), NONE}, INVALID, "n_dims 5 (must be 1 to 4)"},
    {"n_dims 2^32-1", {P4(ndim[1], UINT32_MAX), NONE}, INVALID, "n_dims 4294967295"},
    {"dim 0", {P8(dims[0][1], 0), NONE}, INVALID, "tensor 0 (tensor.a): dims[1] is 0"},
    {"dims overflow", {P8(dims[0][1], 1ull << 62), NONE}, INVALID, "more than 2^63 - 1"},
    {"dims[0] not a block multiple", {P8(dims[0][0], 33), NONE}, INVALID,
     "dims[0] = 33 is not a multiple of q8_0's block of 32"},
    {"bytes past the end", {P8(dims[0][1], 1ull << 50), NONE}, INVALID,
     "tensor 0 (tensor.a): 38280596832649216 bytes at offset 0 past the end"},
    {"misaligned offset", {P8(offset[1], 97), NONE}, INVALID,
     "tensor 1 (tensor.b): offset 97 is not a multiple of the alignment 32"},
    {"control bytes in a name", {PT(name[1], "tensor\n\x01"), P8(offset[1], 97)}, INVALID,
     "tensor 1 (tensor?" "?): offset 97"},
    {"offset past the end", {P8(offset[2], 4096), NONE}, INVALID,
     "tensor 2 (tensor.c): 3 bytes at offset 4096 past the end of the data section"},
    {"offset at the end", {P8(offset[2], 160), NONE}, INVALID, "past the end of the data section"},
    {"offset 2^64-32", {P8(offset[2], UINT64_MAX - 31), NONE}, INVALID, "past the end"},
    {"overlap", {P8(offset[1], 64), NONE}, INVALID,
     "tensor 1 (tensor.b): bytes [64, 96) overlap those of tensor 0 (tensor.a), [0, 68)"},
    {"same offset", {P8(offset[2], 96), NONE}, INVALID, "overlap those of tensor 1"},
    /* Unknown and removed types parse with no size, but must start in the data section. */
    {"unknown type", {P4(ttype[2], 99), NONE}, MCL_SUCCESS, NULL},
    {"removed type", {P4(ttype[2], 31), NONE}, MCL_SUCCESS, NULL},
    {"unknown type past the end", {P4(ttype[2], 99), P8(offset[2], 4096)}, INVALID,
     "offset 4096 (type 99) past the end of the data section"},
    {"unknown type at the end", {P4(ttype[2], 99), P8(offset[2], 160)}, INVALID,
     "(type 99) past the end"},
};
#define N_CORPUS (sizeof corpus / sizeof corpus[0])

static void apply(unsigned char *file, const layout *l, const patch *p)
{
    if (p->width == 0 && !p->text)
        return;
    uint64_t at;
    memcpy(&at, (const unsigned char *)l + p->field, sizeof at);
    if (p->text) {
        memcpy(file + at, p->text, strlen(p->text));
        return;
    }
    for (unsigned i = 0; i < p->width; i++)
        file[at + i] = (unsigned char)(p->value >> (8 * i));
}

static void malformed_corpus(void **state)
{
    (void)state;
    emitter e;
    layout l;
    build_corpus_file(&e, &l);
    write_seed("corpus.gguf", e.buf, l.size);
    int bad = 0;
    char why[512];
    for (size_t c = 0; c < N_CORPUS; c++) {
        unsigned char file[sizeof e.buf];
        memcpy(file, e.buf, sizeof file);
        apply(file, &l, &corpus[c].patches[0]);
        apply(file, &l, &corpus[c].patches[1]);
        why[0] = '\0';
        double t0 = now_ms();
        mcl_status st = parse_copy(file, l.size, why, sizeof why);
        double ms = now_ms() - t0;
        int ok = st == corpus[c].want &&
                 (st == MCL_SUCCESS ? why[0] == '\0' : why[0] != '\0') &&
                 (!corpus[c].message || strstr(why, corpus[c].message)) && !strchr(why, '\n');
        if (!ok) {
            print_message("corpus \"%s\": %s (want %s), \"%s\"\n", corpus[c].what,
                          mcl_status_string(st), mcl_status_string(corpus[c].want), why);
            bad++;
        } else if (getenv("MOTIFCL_GGUF_VERBOSE")) {
            print_message("corpus \"%s\": %s %.3f ms \"%s\"\n", corpus[c].what,
                          mcl_status_string(st), ms, why);
        }
    }
    /* The parse of the unknown and removed types: no size, no data, a name for the loader. */
    {
        unsigned char file[sizeof e.buf];
        memcpy(file, e.buf, sizeof file);
        patch p = P4(ttype[2], 31);
        apply(file, &l, &p);
        mcl_gguf *g = NULL;
        assert_mcl_ok(mcl_gguf_parse(file, l.size, &g, NULL, 0));
        const mcl_gguf_tensor *t = mcl_gguf_tensor_find(g, "tensor.c");
        bad += !t || t->bytes != 0 || t->data != NULL || t->type != 31 ||
               strcmp(mcl_ggml_type_name(t->type), "q4_0_4_4 (removed)") != 0;
        mcl_gguf_free(g);
    }
    mcl_test_record_bool("malformed_corpus_statuses", bad == 0);
    assert_int_equal(bad, 0);
}

/* Every truncation of the corpus file fails with a message, up to the last tensor byte;
 * from there (the padding after it) it parses. */
static void corpus_truncations(void **state)
{
    (void)state;
    emitter e;
    layout l;
    build_corpus_file(&e, &l);
    int bad = 0, failed = 0;
    char why[512];
    for (uint64_t len = 0; len <= l.size; len++) {
        why[0] = '\0';
        mcl_status st = parse_copy(e.buf, len, why, sizeof why);
        int want_ok = len >= l.data_end;
        if ((st == MCL_SUCCESS) != want_ok || (!want_ok && !why[0])) {
            print_message("truncated to %" PRIu64 ": %s \"%s\"\n", len, mcl_status_string(st),
                          why);
            bad++;
        }
        failed += st != MCL_SUCCESS;
    }
    mcl_test_record_bool("corpus_truncations", bad == 0 && failed == (int)l.data_end);
    assert_int_equal(bad, 0);
}

/* Every byte of the header, metadata and tensor infos damaged in turn (three ways): any
 * status, but no read outside the file (the sanitizer build checks that). */
static void corpus_byte_damage(void **state)
{
    (void)state;
    emitter e;
    layout l;
    build_corpus_file(&e, &l);
    static const unsigned char flips[] = {0x01, 0x80, 0xff};
    int parsed = 0, refused = 0;
    char why[512];
    for (uint64_t at = 0; at < l.data_offset; at++) {
        for (size_t f = 0; f < sizeof flips; f++) {
            unsigned char file[sizeof e.buf];
            memcpy(file, e.buf, sizeof file);
            file[at] ^= flips[f];
            if (parse_copy(file, l.size, why, sizeof why) == MCL_SUCCESS)
                parsed++;
            else
                refused++;
        }
    }
    char note[96];
    snprintf(note, sizeof note, "%d damaged files refused, %d parsed", refused, parsed);
    mcl_test_note("corpus_byte_damage", note);
    assert_true(mcl_test_record_bool("corpus_byte_damage", refused > 0));
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(type_tables),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(writer_refusals),
        cmocka_unit_test(typed_reads),
        cmocka_unit_test(vocab_llama_spm),
        cmocka_unit_test(vocab_gpt2),
        cmocka_unit_test(vocab_damage),
        cmocka_unit_test(large_string_array),
        cmocka_unit_test(mapped_files),
        cmocka_unit_test(malformed_corpus),
        cmocka_unit_test(corpus_truncations),
        cmocka_unit_test(corpus_byte_damage),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
