/* safetensors files (huggingface/safetensors, the format of Hugging Face checkpoints): a
 * parser over bytes already in memory (a mapped file or a buffer) and a writer.
 *
 * The format: an 8-byte little-endian header length N, N bytes of JSON, then the data
 * section. The JSON is an object mapping each tensor's name to {"dtype": "F32", "shape": [2,
 * 3], "data_offsets": [begin, end]} (offsets into the data section, end exclusive), plus an
 * optional "__metadata__" object whose values are strings. Tensors are little-endian,
 * row-major, shape[0] the slowest dimension (PyTorch's order).
 *
 * The parser checks, before anything is used: 8 + N within the input and N at most
 * MCL_SAFETENSORS_MAX_HEADER; the header strict JSON (json.h: duplicate keys, so duplicate
 * tensor names, are refused) and an object; every tensor's dtype one the format names (the
 * library loads F32, F16 and BF16 and refuses the others only when asked to convert them),
 * its shape non-negative integers whose product times the element size equals end - begin
 * (no overflow), its offsets integers with begin <= end; and the tensors, in offset order,
 * tiling the data section exactly: no gap, no overlap, nothing after the last one. A
 * failure is a status and a message naming the tensor, never a read out of bounds.
 * Unknown members of a tensor's entry are ignored (as the reference reader does).
 *
 * It copies nothing large: names, metadata and tensor data are views into the parsed header
 * and the input bytes, which must outlive the parsed file. A parsed file is immutable and
 * may be read from any number of threads. Internal. */
#ifndef MCL_IO_SAFETENSORS_H
#define MCL_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"

/* Largest header accepted: the reference implementation's limit (MAX_HEADER_SIZE). */
#define MCL_SAFETENSORS_MAX_HEADER 100000000u

/* The element types the format names (safetensors' Dtype). */
typedef enum mcl_st_dtype {
    MCL_ST_BOOL = 0,
    MCL_ST_U8,
    MCL_ST_I8,
    MCL_ST_F8_E5M2,
    MCL_ST_F8_E4M3,
    MCL_ST_F8_E8M0,
    MCL_ST_I16,
    MCL_ST_U16,
    MCL_ST_F16,
    MCL_ST_BF16,
    MCL_ST_I32,
    MCL_ST_U32,
    MCL_ST_F32,
    MCL_ST_F64,
    MCL_ST_I64,
    MCL_ST_U64,
    MCL_ST_C64,
    MCL_ST_F4,      /* 4 bits per element: a tensor's bits must fill whole bytes */
    MCL_ST_F6_E2M3, /* 6 bits */
    MCL_ST_F6_E3M2, /* 6 bits */
    MCL_ST_DTYPE_COUNT
} mcl_st_dtype;

/* The dtype's name in files ("F32", "BF16", ...), or NULL for a value out of range. */
const char *mcl_st_dtype_name(mcl_st_dtype dtype);

/* Bits of one element (4, 6, 8, 16, 32 or 64), or 0 for a value out of range. */
uint32_t mcl_st_dtype_bits(mcl_st_dtype dtype);

/* The dtype named `name` (`len` bytes), or -1 for a name the format does not have. */
int mcl_st_dtype_parse(const char *name, size_t len);

/* Whether the library loads tensors of this dtype (F32, F16, BF16). */
int mcl_st_dtype_loadable(mcl_st_dtype dtype);

/* One tensor. */
typedef struct mcl_st_tensor {
    const char *name;          /* NUL-terminated (UTF-8) */
    size_t name_len;           /* bytes (a name may hold "\u0000") */
    mcl_st_dtype dtype;
    uint32_t ndim;             /* 0 for a scalar */
    const int64_t *shape;      /* ndim sizes, slowest first; NULL when ndim is 0 */
    uint64_t elements;         /* product of the sizes (1 for a scalar) */
    uint64_t begin, end;       /* its bytes in the data section */
    const unsigned char *data; /* end - begin bytes in the input (NULL when empty) */
} mcl_st_tensor;

typedef struct mcl_safetensors mcl_safetensors;

/* Parse `size` bytes at `data` (the whole file). On success *out is the parsed file (free it
 * with mcl_safetensors_free). Errors, with *out NULL and a message in `why` (at most
 * why_size bytes; may be NULL): MCL_ERROR_INVALID_ARGUMENT for a malformed file ("tensor
 * \"w\" (header byte 40): data_offsets [0, 12] hold 12 bytes but 4 elements of F32 need 16",
 * "header length 4096 past the end of the 100-byte file", "header: byte 17: expected ..."),
 * or a NULL argument;
 * MCL_ERROR_TOO_LARGE for a header larger than MCL_SAFETENSORS_MAX_HEADER;
 * MCL_ERROR_OUT_OF_HOST_MEMORY. Memory taken is proportional to the header. */
mcl_status mcl_safetensors_parse(const void *data, uint64_t size, mcl_safetensors **out,
                                 char *why, size_t why_size);

/* Free a parsed file. Accepts NULL. */
void mcl_safetensors_free(mcl_safetensors *st);

/* Number of tensors. */
uint64_t mcl_safetensors_count(const mcl_safetensors *st);

/* Tensor i in the order of their data (ascending offsets; among empty tensors at one offset,
 * by name), or NULL past the end. */
const mcl_st_tensor *mcl_safetensors_at(const mcl_safetensors *st, uint64_t i);

/* The tensor named `name` (a C string), or NULL. O(log n). */
const mcl_st_tensor *mcl_safetensors_find(const mcl_safetensors *st, const char *name);

/* Where the data section starts in the input: 8 + N. */
uint64_t mcl_safetensors_data_offset(const mcl_safetensors *st);

/* Number of "__metadata__" entries (0 when there is none). */
uint64_t mcl_safetensors_metadata_count(const mcl_safetensors *st);

/* Metadata entry i (in the file's order): its key and value (NUL-terminated) through the
 * pointers that are not NULL; 0 when i is out of range. */
int mcl_safetensors_metadata_at(const mcl_safetensors *st, uint64_t i, const char **key,
                                const char **value);

/* The metadata value of `key`, or NULL. */
const char *mcl_safetensors_metadata(const mcl_safetensors *st, const char *key);

/* A tensor's elements as f32 into dst[0..n): F32 copied, F16 and BF16 converted exactly
 * (convert.h). MCL_ERROR_UNSUPPORTED for another dtype ("tensor \"x\": dtype F64 is not
 * loaded (F32, F16 and BF16 are)"); MCL_ERROR_SHAPE_MISMATCH when n is not the tensor's
 * element count; MCL_ERROR_INVALID_ARGUMENT for NULL. */
mcl_status mcl_safetensors_read_f32(const mcl_st_tensor *t, float *dst, uint64_t n, char *why,
                                    size_t why_size);

/* --- Writer ---------------------------------------------------------------------------------
 * Builds a file in memory: the header lists metadata first, then tensors in the order added,
 * their data back to back in that order; the header is padded with spaces to a multiple of 8
 * bytes, as the reference writer does, so the data section starts 8-aligned: for the same
 * tensors in the same order its bytes are the reference writer's. Used by the tests and
 * tools. */
typedef struct mcl_safetensors_writer mcl_safetensors_writer;

/* A new, empty writer; NULL when out of memory. */
mcl_safetensors_writer *mcl_safetensors_writer_create(void);

/* Free a writer and what it holds. Accepts NULL. */
void mcl_safetensors_writer_destroy(mcl_safetensors_writer *w);

/* A "__metadata__" entry (both strings copied). INVALID_ARGUMENT for NULL or a key already
 * added; OUT_OF_HOST_MEMORY. */
mcl_status mcl_safetensors_writer_add_metadata(mcl_safetensors_writer *w, const char *key,
                                               const char *value);

/* A tensor: `ndim` sizes at `shape` (NULL when ndim is 0), `bytes` bytes at `data` (copied;
 * may be NULL when bytes is 0), which must be what the dtype and shape need.
 * INVALID_ARGUMENT for NULL, a negative size, a dtype out of range, a name that is empty or
 * "__metadata__" or already added, bytes that do not match; OUT_OF_HOST_MEMORY. */
mcl_status mcl_safetensors_writer_add_tensor(mcl_safetensors_writer *w, const char *name,
                                             mcl_st_dtype dtype, uint32_t ndim,
                                             const int64_t *shape, const void *data,
                                             uint64_t bytes);

/* The whole file: *out (malloc'd, the caller frees) of *size bytes. The writer stays valid
 * (another finish gives the same bytes). INVALID_ARGUMENT for NULL; OUT_OF_HOST_MEMORY. */
mcl_status mcl_safetensors_writer_finish(mcl_safetensors_writer *w, void **out,
                                         uint64_t *size);

#endif
