/* GGUF files (ggml's docs/gguf.md, versions 2 and 3): a parser over bytes already in memory (a
 * mapped file or a buffer) and a writer. The parser checks every count, length and offset
 * against the bytes it was given and against overflow before it uses it; a malformed file is
 * a status and a message naming the field, never a read out of bounds. It copies nothing
 * large: strings, arrays and tensor data are views into the bytes, which must outlive it.
 * No device: the model loader (src/model) uploads what it finds. Internal. */
#ifndef MCL_IO_GGUF_H
#define MCL_IO_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"

/* GGUF's metadata value types (gguf.md, "gguf_metadata_value_type"). */
typedef enum mcl_gguf_type {
    MCL_GGUF_UINT8 = 0,
    MCL_GGUF_INT8 = 1,
    MCL_GGUF_UINT16 = 2,
    MCL_GGUF_INT16 = 3,
    MCL_GGUF_UINT32 = 4,
    MCL_GGUF_INT32 = 5,
    MCL_GGUF_FLOAT32 = 6,
    MCL_GGUF_BOOL = 7,
    MCL_GGUF_STRING = 8,
    MCL_GGUF_ARRAY = 9,
    MCL_GGUF_UINT64 = 10,
    MCL_GGUF_INT64 = 11,
    MCL_GGUF_FLOAT64 = 12,
} mcl_gguf_type;

/* ggml's tensor types that the library reads (ggml.h's enum ggml_type values); the parser
 * knows the block shape of every ggml type below MCL_GGML_TYPE_KNOWN but the removed ones
 * (ids 4, 5 and 31 to 38, named with " (removed)"), and names no id from there on. */
enum {
    MCL_GGML_F32 = 0,
    MCL_GGML_F16 = 1,
    MCL_GGML_Q4_0 = 2,
    MCL_GGML_Q8_0 = 8,
    MCL_GGML_Q4_K = 12,
    MCL_GGML_Q5_K = 13,
    MCL_GGML_Q6_K = 14,
    MCL_GGML_BF16 = 30,
    MCL_GGML_TYPE_KNOWN = 42, /* one past the last id the tables describe (q1_0) */
};

/* A string in the file: `len` bytes at `data`, not NUL-terminated. */
typedef struct mcl_gguf_str {
    const char *data;
    uint64_t len;
} mcl_gguf_str;

/* One metadata key and its value. For an array, `type` is MCL_GGUF_ARRAY, `elem_type` the
 * type of its `count` elements and `data` the first element's bytes (strings: the first
 * string's length field). For a scalar, `elem_type` is `type`, `data` the value's bytes (a
 * string: its length field) and `count` 1. `bytes` counts from `data` to the value's end.
 * Arrays of arrays (which gguf.md allows but ggml neither writes nor reads) are refused. */
typedef struct mcl_gguf_kv {
    mcl_gguf_str key;
    mcl_gguf_type type;
    mcl_gguf_type elem_type;
    uint64_t count;
    const unsigned char *data;
    uint64_t bytes; /* bytes of the value in the file */
} mcl_gguf_kv;

/* One tensor's description. dims in GGUF's order: dims[0] varies fastest (a row of a weight
 * [N, K] is dims[0] = K long, dims[1] = N). */
#define MCL_GGUF_MAX_DIMS 4
typedef struct mcl_gguf_tensor {
    mcl_gguf_str name;
    uint32_t ndim;
    uint64_t dims[MCL_GGUF_MAX_DIMS];
    uint32_t type;             /* ggml type id */
    uint64_t offset;           /* from the start of the data section */
    uint64_t bytes;            /* 0 where the type's block shape is unknown */
    const unsigned char *data; /* its bytes in the file (NULL where bytes is 0) */
} mcl_gguf_tensor;

typedef struct mcl_gguf mcl_gguf;

/* Parse `size` bytes at `data`. MCL_ERROR_INVALID_ARGUMENT (or MCL_ERROR_UNSUPPORTED for a
 * version other than 2 and 3 or an array of arrays, MCL_ERROR_OUT_OF_HOST_MEMORY) with a
 * message in `why` (at most why_size bytes, may be NULL) naming the field: "tensor 3
 * (blk.0.attn_q.weight): offset 123 past the end of the file", "metadata key 7: string
 * length 2^63 past the end". Memory taken is proportional to the file's counts that fit in
 * the file, never to what a header claims beyond it. On success *out is the parser object
 * (free it with mcl_gguf_free), else NULL. The object is read-only after the parse: any
 * number of threads may read it at once. Keys and tensor names are found by hash. */
mcl_status mcl_gguf_parse(const void *data, uint64_t size, mcl_gguf **out, char *why,
                          size_t why_size);
/* Free the parser object (not the bytes it was given). Accepts NULL. */
void mcl_gguf_free(mcl_gguf *g);

/* The file's version (2 or 3). */
uint32_t mcl_gguf_version(const mcl_gguf *g);
/* general.alignment, default 32. */
uint32_t mcl_gguf_alignment(const mcl_gguf *g);
/* Where the data section starts: the end of the tensor infos rounded up to the alignment
 * (a file with no tensors may end before that: then its size). */
uint64_t mcl_gguf_data_offset(const mcl_gguf *g);

/* The number of metadata keys. */
uint64_t mcl_gguf_kv_count(const mcl_gguf *g);
/* Key i in the file's order, or NULL past the end. */
const mcl_gguf_kv *mcl_gguf_kv_at(const mcl_gguf *g, uint64_t i);
/* The key of that name, or NULL. */
const mcl_gguf_kv *mcl_gguf_find(const mcl_gguf *g, const char *key);

/* Typed reads of a scalar value: 1 when kv is present (not NULL) and of a type that converts
 * without loss (any integer type into u64 / i64 when it holds the value; float32, float64
 * and integers of at most 2^53 in magnitude into double; a bool byte of 0 or 1, the only
 * values gguf.md allows), else 0 and *out untouched. */
int mcl_gguf_get_u64(const mcl_gguf_kv *kv, uint64_t *out);
int mcl_gguf_get_i64(const mcl_gguf_kv *kv, int64_t *out);
int mcl_gguf_get_f64(const mcl_gguf_kv *kv, double *out);
int mcl_gguf_get_bool(const mcl_gguf_kv *kv, int *out);
int mcl_gguf_get_str(const mcl_gguf_kv *kv, mcl_gguf_str *out);

/* Element i of an array (index checked): as above, for arrays of that kind. Strings of an
 * array are found in O(1): the parser indexes them while it checks them; g is the parser
 * object kv came from (0 when it is not). */
int mcl_gguf_array_u64(const mcl_gguf_kv *kv, uint64_t i, uint64_t *out);
int mcl_gguf_array_i64(const mcl_gguf_kv *kv, uint64_t i, int64_t *out);
int mcl_gguf_array_f64(const mcl_gguf_kv *kv, uint64_t i, double *out);
int mcl_gguf_array_str(const mcl_gguf *g, const mcl_gguf_kv *kv, uint64_t i,
                       mcl_gguf_str *out);

/* The number of tensors. */
uint64_t mcl_gguf_tensor_count(const mcl_gguf *g);
/* Tensor i in the file's order, or NULL past the end. */
const mcl_gguf_tensor *mcl_gguf_tensor_at(const mcl_gguf *g, uint64_t i);
/* The tensor of that name, or NULL. */
const mcl_gguf_tensor *mcl_gguf_tensor_find(const mcl_gguf *g, const char *name);

/* GGUF's name of a metadata value type ("uint32", "string", "array"), or NULL. */
const char *mcl_gguf_type_name(uint32_t type);

/* ggml's name of a type ("q4_1", "q4_K", "iq2_xs", ...; a removed id as "q4_0_4_4
 * (removed)"), or NULL for an id ggml does not have. Static storage. */
const char *mcl_ggml_type_name(uint32_t type);
/* The library's dtype (an mcl_dtype) of a ggml type it uploads as it is: F32, Q8_0, Q4_0,
 * Q4_K, Q5_K, Q6_K; else -1 (F16 and BF16 too: the loader converts them to f32). */
int mcl_ggml_type_dtype(uint32_t type);
/* Elements per block and bytes per block of a ggml type (1 and the element size for plain
 * types); 0 for a type whose shape the parser does not know (a removed or unknown id). */
uint64_t mcl_ggml_block_elems(uint32_t type);
uint64_t mcl_ggml_block_bytes(uint32_t type);

/* A string view equal to a C string. */
int mcl_gguf_str_eq(mcl_gguf_str s, const char *c);

/* --- Writer ---------------------------------------------------------------------------------
 * Builds a file in memory: metadata in the order added, tensors in the order added, each
 * tensor's data at the alignment. Used by the tests and tools; its files are read by this
 * parser and by llama.cpp's own tools. */
typedef struct mcl_gguf_writer mcl_gguf_writer;

/* version 2 or 3; alignment a power of two (32 is GGUF's default; another is written as
 * general.alignment, the file's first key). NULL when out of memory or the arguments are
 * wrong. A call that fails adds nothing: the writer stays usable. */
mcl_gguf_writer *mcl_gguf_writer_create(uint32_t version, uint32_t alignment);
/* Free the writer. Accepts NULL. */
void mcl_gguf_writer_destroy(mcl_gguf_writer *w);
/* Scalars: `value` points at one value of `type` (a C string for MCL_GGUF_STRING, a uint8_t
 * of 0 or 1 for MCL_GGUF_BOOL). MCL_ERROR_INVALID_ARGUMENT for an empty or repeated key,
 * general.alignment (the writer's own), a type that is not a scalar type, a NULL value, a
 * bool other than 0 and 1; MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status mcl_gguf_writer_add(mcl_gguf_writer *w, const char *key, mcl_gguf_type type,
                               const void *value);
/* An array of `count` elements of elem_type at `values` (an array of `count` C strings for
 * strings; values may be NULL when count is 0). Statuses as above; arrays of arrays are
 * refused. */
mcl_status mcl_gguf_writer_add_array(mcl_gguf_writer *w, const char *key,
                                     mcl_gguf_type elem_type, uint64_t count,
                                     const void *values);
/* A tensor: dims in GGUF's order, `data` of the bytes its type and dims give (copied).
 * MCL_ERROR_INVALID_ARGUMENT for an empty or repeated name, one of 64 bytes or more (ggml's
 * GGML_MAX_NAME), ndim outside 1..4, a dim of 0, dims[0] not a multiple of the type's block,
 * `bytes` other than the size they give, more than 2^63 - 1 elements;
 * MCL_ERROR_UNSUPPORTED for a type whose block shape is unknown;
 * MCL_ERROR_OUT_OF_HOST_MEMORY. Tensors are laid out in the order added, each at the next
 * multiple of the alignment after the previous one's end, as ggml's reader requires. */
mcl_status mcl_gguf_writer_add_tensor(mcl_gguf_writer *w, const char *name, uint32_t ndim,
                                      const uint64_t *dims, uint32_t type, const void *data,
                                      uint64_t bytes);
/* The whole file: *out (malloc'd, the caller frees) of *size bytes. The writer is kept (more
 * may be added and the file built again). MCL_ERROR_OUT_OF_HOST_MEMORY,
 * MCL_ERROR_INVALID_ARGUMENT for NULL arguments. */
mcl_status mcl_gguf_writer_finish(mcl_gguf_writer *w, void **out, uint64_t *size);

#endif
