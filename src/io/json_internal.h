/* What the two halves of the JSON parser share: json_lex.c reads tokens (strings, numbers,
 * literals) and reports errors, json.c builds the tree and answers the getters of json.h.
 * Private to those two files. */
#ifndef MCL_IO_JSON_INTERNAL_H
#define MCL_IO_JSON_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "io/json.h"

/* A value. Members of an array or object lie next to each other in the document's node
 * array; while parsing, containers link to them by index (u.link), afterwards by pointer. */
struct mcl_json_value {
    const char *key;  /* member name in the pool, or NULL */
    uint32_t key_len;
    uint32_t offset;  /* where the value starts in the input */
    uint8_t kind;     /* mcl_json_kind */
    uint8_t is_int;   /* a number with an exact int64 in x.i */
    uint32_t count;   /* elements (array, object) or bytes (string) */
    union {
        double num;
        const char *str;
        const mcl_json_value *items;             /* after parsing */
        struct { uint32_t first, sorted; } link; /* while parsing: indices */
    } u;
    union {
        int64_t i;
        const uint32_t *sorted; /* member positions in key order, or NULL */
    } x;
};

/* A parsed document: every value, the sorted indices of large objects, the strings. */
struct mcl_json {
    mcl_json_value *nodes;
    uint32_t *sorted;
    char *pool;
    const mcl_json_value *root;
};

/* A growing array of values. */
typedef struct mcl_json_node_vec {
    mcl_json_value *data;
    uint32_t len, cap;
} mcl_json_node_vec;

/* An array or object still open: where its children start in `pending`, and its own key. */
typedef struct mcl_json_frame {
    uint8_t kind;
    uint32_t pending_start;
    uint32_t offset;
    const char *key;
    uint32_t key_len;
} mcl_json_frame;

/* The parser's state over one input. */
typedef struct mcl_json_parser {
    const unsigned char *p;
    uint64_t size;
    uint64_t pos;
    char *why;
    size_t why_size;
    mcl_status status;
    char *pool;
    size_t pool_len;
    mcl_json_node_vec pending, nodes;
    uint32_t *sorted;
    uint32_t sorted_len, sorted_cap;
    uint32_t *scratch; /* the merge sort's second buffer */
    uint32_t scratch_cap;
    mcl_json_frame stack[MCL_JSON_MAX_DEPTH];
    int depth;
    const char *key; /* the key of the next value, inside an object */
    uint32_t key_len;
} mcl_json_parser;

/* Record a malformed document, "byte N: <message>", in the parser; returns 0. */
int mcl_json_fail_at(mcl_json_parser *ps, uint64_t at, const char *fmt, ...) MCL_PRINTF(3, 4);

/* "expected <what>, found <the byte at pos>"; returns 0. */
int mcl_json_expected(mcl_json_parser *ps, const char *what);

/* Record MCL_ERROR_OUT_OF_HOST_MEMORY; returns 0. */
int mcl_json_out_of_memory(mcl_json_parser *ps);

/* Step over JSON whitespace (space, tab, LF, CR). */
void mcl_json_skip_ws(mcl_json_parser *ps);

/* The literal `word` ("true", "false", "null") at pos, stepped over; 0 (error recorded) when
 * the bytes differ. */
int mcl_json_lex_literal(mcl_json_parser *ps, const char *word);

/* The string whose opening quote is at pos, unescaped into the pool (NUL-terminated): its
 * address and length; 0 with the error recorded. */
int mcl_json_lex_string(mcl_json_parser *ps, const char **out, uint32_t *len);

/* The number at pos ('-' or a digit): v's double, and its exact integer when it has one
 * (u.num, is_int, x.i); 0 with the error recorded. */
int mcl_json_lex_number(mcl_json_parser *ps, mcl_json_value *v);

#endif
