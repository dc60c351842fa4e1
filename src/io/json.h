/* A strict JSON (RFC 8259) parser over bytes in memory, into a compact read-only tree: the
 * headers of safetensors files, their sharded-checkpoint index and a model's config.json.
 *
 * Strict means: exactly one value with optional whitespace (space, tab, LF, CR) around it; no
 * comments, trailing commas, byte-order mark, leading zeros, "+1", ".5", "1.", NaN or
 * Infinity; control characters (< 0x20) escaped in strings; only the escapes \" \\ \/ \b
 * \f \n \r \t \uXXXX, where a surrogate must be a high one followed by a low one (the pair
 * becomes one code point); the input valid UTF-8 (no overlong forms, no encoded surrogates,
 * nothing past U+10FFFF). Keys of an object must be distinct: a duplicate is refused (an
 * object whose meaning depends on which of two values a reader keeps is an error, and a
 * safetensors header must not name a tensor twice).
 *
 * Numbers are kept twice: as the nearest double (a number whose magnitude overflows a double
 * is refused; one that underflows becomes 0 or a subnormal), and as an exact int64 when the
 * decimal value is an integer in [-2^63, 2^63) ("12", "1.2e1", "120e-1" all are 12;
 * "9007199254740993" keeps its last digit, which the double loses).
 *
 * Bounds: nesting at most MCL_JSON_MAX_DEPTH arrays and objects; input below 4 GiB; at most
 * one node per input byte. The parser never recurses. A document holds 40 bytes per value
 * (on 64-bit hosts), a sorted index of 4 bytes per member of each object of more than 8
 * members, and a string pool of the input's size; parsing takes up to twice the values'
 * bytes for a moment. A malformed document is a status and a message with the byte offset
 * and what was expected, never a crash.
 *
 * Values are pointers into the document, valid until mcl_json_free. Every getter accepts
 * NULL (and then reports absence), so lookups chain: mcl_json_int(mcl_json_find(o, "n"), &n).
 * A parsed document is immutable: any number of threads may read it at once. Internal. */
#ifndef MCL_IO_JSON_H
#define MCL_IO_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"

/* Deepest nesting of arrays and objects accepted: 64 levels parse, 65 are refused. */
#define MCL_JSON_MAX_DEPTH 64

/* Kinds of value. MCL_JSON_MISSING is what mcl_json_kind reports for NULL (a lookup that
 * found nothing). */
typedef enum mcl_json_kind {
    MCL_JSON_MISSING = 0,
    MCL_JSON_NULL = 1,
    MCL_JSON_BOOL = 2,
    MCL_JSON_NUMBER = 3,
    MCL_JSON_STRING = 4,
    MCL_JSON_ARRAY = 5,
    MCL_JSON_OBJECT = 6,
} mcl_json_kind;

typedef struct mcl_json mcl_json;             /* a parsed document */
typedef struct mcl_json_value mcl_json_value; /* one value in it */

/* Parse `size` bytes at `data` (need not be NUL-terminated; data may be NULL when size is 0,
 * which is refused as empty). On success *out is the document (free it with mcl_json_free).
 * Errors, with *out NULL and a message in `why` (at most why_size bytes, always terminated;
 * why may be NULL): MCL_ERROR_INVALID_ARGUMENT for a malformed document ("byte 17: expected
 * ',' or '}' after an object member, found 'x'"), nesting past MCL_JSON_MAX_DEPTH or a NULL
 * `out`; MCL_ERROR_TOO_LARGE for 4 GiB or more; MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status mcl_json_parse(const void *data, uint64_t size, mcl_json **out, char *why,
                          size_t why_size);

/* Free a document and every value in it. Accepts NULL. */
void mcl_json_free(mcl_json *doc);

/* The top-level value (never NULL for a parsed document; NULL for a NULL doc). */
const mcl_json_value *mcl_json_root(const mcl_json *doc);

/* The value's kind; MCL_JSON_MISSING for NULL. */
mcl_json_kind mcl_json_kind_of(const mcl_json_value *v);

/* A kind's name for messages ("an object", "a string", ..., "nothing" for MISSING). */
const char *mcl_json_kind_name(mcl_json_kind kind);

/* The byte offset in the input where the value starts (0 for NULL): for messages. */
uint64_t mcl_json_offset(const mcl_json_value *v);

/* Elements of an array or members of an object; 0 for any other value and NULL. */
uint32_t mcl_json_count(const mcl_json_value *v);

/* Element i of an array, or member i of an object in document order (iteration: its key is
 * mcl_json_key); NULL when i >= mcl_json_count(v) or v is not an array or object. O(1). */
const mcl_json_value *mcl_json_at(const mcl_json_value *v, uint32_t i);

/* The member of object `obj` named `key` (a C string), or NULL (absent, or obj not an
 * object, or key NULL). Objects of more than a few members are searched through a sorted
 * index built at parse time: O(log n), so looking up every member of a large object costs
 * O(n log n). */
const mcl_json_value *mcl_json_find(const mcl_json_value *obj, const char *key);

/* As mcl_json_find, for a key of `len` bytes that may contain NUL. */
const mcl_json_value *mcl_json_find_n(const mcl_json_value *obj, const char *key, size_t len);

/* The key of a value that is a member of an object (NUL-terminated; its length in *len
 * when len is not NULL), or NULL for a value that is not a member (root, array element). */
const char *mcl_json_key(const mcl_json_value *v, size_t *len);

/* A string's bytes, unescaped, UTF-8 and NUL-terminated (its length in *len when len is not
 * NULL: a string may hold "\u0000"); NULL when v is not a string. */
const char *mcl_json_string(const mcl_json_value *v, size_t *len);

/* Whether v is a string equal to the C string `s`. */
int mcl_json_string_eq(const mcl_json_value *v, const char *s);

/* 1 and *out set when v is a number; else 0 and *out untouched. */
int mcl_json_number(const mcl_json_value *v, double *out);

/* 1 and *out set when v is a number whose decimal value is exactly an integer in int64's
 * range (see the file comment); else 0 and *out untouched. */
int mcl_json_int(const mcl_json_value *v, int64_t *out);

/* 1 and *out set to 0 or 1 when v is true or false; else 0 and *out untouched. */
int mcl_json_bool(const mcl_json_value *v, int *out);

/* Whether v is null (a JSON null, not a NULL pointer). */
int mcl_json_is_null(const mcl_json_value *v);

#endif
