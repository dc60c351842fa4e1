/* A tokenizer from a SentencePiece tokenizer.model: a protobuf ModelProto read field by field
 * with every varint, length and fixed-size value checked against the end of its message,
 * turned into the SPM vocabulary that the GGUF "llama" path makes (llama.cpp's converter
 * reads the same fields). Field numbers, from sentencepiece_model.proto:
 *
 *   ModelProto      1 pieces (repeated SentencePiece), 2 trainer_spec, 3 normalizer_spec
 *   SentencePiece   1 piece (string), 2 score (float), 3 type (enum, default NORMAL)
 *   TrainerSpec     3 model_type (1 UNIGRAM (default), 2 BPE, 3 WORD, 4 CHAR),
 *                   35 byte_fallback, 40 unk_id (default 0), 41 bos_id (1), 42 eos_id (2),
 *                   43 pad_id (-1)
 *   NormalizerSpec  3 add_dummy_prefix (default true)
 *
 * The piece types (1 NORMAL, 2 UNKNOWN, 3 CONTROL, 4 USER_DEFINED, 5 UNUSED, 6 BYTE) are GGUF's
 * token types. Other fields are skipped; groups (wire types 3 and 4) and wire types 6 and 7
 * are refused. A model that is not BPE (the SPM tokenizer merges by score, which is
 * SentencePiece's BPE, not its Unigram), or that has byte pieces without byte_fallback (the
 * SPM tokenizer always falls back to them), is refused by name. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"
#include "core/alloc.h"

#define MALFORMED(...) mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };
enum { MODEL_UNIGRAM = 1, MODEL_BPE = 2 };

/* A message being read: the bytes left of it. */
typedef struct pb_reader {
    const unsigned char *p, *end;
} pb_reader;

/* One field: its number, wire type and value (a varint or fixed value in `u`, the bytes of a
 * length-delimited one in `bytes`). */
typedef struct pb_field {
    uint32_t number;
    int wire;
    uint64_t u;
    pb_reader bytes;
} pb_field;

/* A varint of at most 10 bytes that ends before r->end: 1, else 0. */
static int pb_varint(pb_reader *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end)
            return 0;
        unsigned char b = *r->p++;
        if (i == 9 && b > 1)
            return 0; /* past 64 bits */
        x |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

/* The next field of r: 1, 0 at the end of the message, -1 for bytes that are no field (the
 * message in `what` for why). */
static int pb_next(pb_reader *r, pb_field *f, const char **what)
{
    uint64_t tag, len;
    if (r->p >= r->end)
        return 0;
    if (!pb_varint(r, &tag)) {
        *what = "a field tag runs past the end";
        return -1;
    }
    f->number = (uint32_t)(tag >> 3);
    f->wire = (int)(tag & 7);
    if (tag >> 3 == 0 || tag >> 3 > 0x1FFFFFFF) {
        *what = "a field number is 0 or past 2^29";
        return -1;
    }
    size_t left = (size_t)(r->end - r->p);
    switch (f->wire) {
    case WIRE_VARINT:
        if (!pb_varint(r, &f->u)) {
            *what = "a varint runs past the end";
            return -1;
        }
        return 1;
    case WIRE_FIXED64:
    case WIRE_FIXED32: {
        size_t n = f->wire == WIRE_FIXED64 ? 8 : 4;
        if (left < n) {
            *what = "a fixed-size value runs past the end";
            return -1;
        }
        f->u = 0;
        for (size_t i = 0; i < n; i++)
            f->u |= (uint64_t)r->p[i] << (8 * i);
        r->p += n;
        return 1;
    }
    case WIRE_BYTES:
        if (!pb_varint(r, &len) || len > (uint64_t)(r->end - r->p)) {
            *what = "a length runs past the end";
            return -1;
        }
        f->bytes.p = r->p;
        f->bytes.end = r->p + len;
        r->p += len;
        return 1;
    default:
        *what = f->wire == 3 || f->wire == 4 ? "a group (wire types 3 and 4) is not read"
                                             : "a wire type is 6 or 7";
        return -1;
    }
}

/* What the reader collects. */
typedef struct spm_model {
    const char **pieces;
    uint64_t *lens;
    float *scores;
    int32_t *types;
    size_t n, cap;
    int64_t model_type, unk, bos, eos, pad;
    int add_dummy_prefix, byte_fallback;
} spm_model;

static void spm_model_free(spm_model *m)
{
    mcl_mem_free(m->pieces);
    mcl_mem_free(m->lens);
    mcl_mem_free(m->scores);
    mcl_mem_free(m->types);
}

/* Whether field f has the wire type its number needs; the message when not. */
static int wire_is(const pb_field *f, int wire, const char *name, char *why, size_t why_size)
{
    if (f->wire == wire)
        return 1;
    MALFORMED("%s has wire type %d, not %d", name, f->wire, wire);
    return 0;
}

#define WIRE(f, wire, name)                                                                    \
    do {                                                                                       \
        if (!wire_is((f), (wire), (name), why, why_size))                                      \
            return MCL_ERROR_INVALID_ARGUMENT;                                                 \
    } while (0)

static mcl_status read_piece(spm_model *m, pb_reader r, char *why, size_t why_size)
{
    pb_field f;
    const char *what = "";
    size_t i = m->n++; /* below m->cap: the pieces were counted */
    m->pieces[i] = "";
    m->lens[i] = 0;
    m->scores[i] = 0.0f;
    m->types[i] = MCL_TOKEN_NORMAL;
    int got;
    while ((got = pb_next(&r, &f, &what)) > 0) {
        if (f.number == 1) {
            WIRE(&f, WIRE_BYTES, "pieces[].piece");
            m->pieces[i] = (const char *)f.bytes.p;
            m->lens[i] = (uint64_t)(f.bytes.end - f.bytes.p);
        } else if (f.number == 2) {
            WIRE(&f, WIRE_FIXED32, "pieces[].score");
            uint32_t bits = (uint32_t)f.u;
            memcpy(&m->scores[i], &bits, sizeof bits);
        } else if (f.number == 3) {
            WIRE(&f, WIRE_VARINT, "pieces[].type");
            if (f.u < MCL_TOKEN_NORMAL || f.u > MCL_TOKEN_BYTE)
                return MALFORMED("pieces[%zu].type is %llu (1 to 6 known)", i,
                                 (unsigned long long)f.u);
            m->types[i] = (int32_t)f.u;
        }
    }
    return got < 0 ? MALFORMED("pieces[%zu]: %s", i, what) : MCL_SUCCESS;
}

/* An int32 field (negative values are 10-byte varints) into *out. */
static mcl_status int32_field(const pb_field *f, const char *name, int64_t *out, char *why,
                              size_t why_size)
{
    WIRE(f, WIRE_VARINT, name);
    int64_t v = (int64_t)f->u;
    if (v < INT32_MIN || v > INT32_MAX)
        return MALFORMED("%s does not fit an int32", name);
    *out = v;
    return MCL_SUCCESS;
}

static mcl_status read_trainer(spm_model *m, pb_reader r, char *why, size_t why_size)
{
    pb_field f;
    const char *what = "";
    static const char *const id_names[4] = {"trainer_spec.unk_id", "trainer_spec.bos_id",
                                            "trainer_spec.eos_id", "trainer_spec.pad_id"};
    int64_t *ids[4] = {&m->unk, &m->bos, &m->eos, &m->pad};
    int got;
    while ((got = pb_next(&r, &f, &what)) > 0) {
        mcl_status s = MCL_SUCCESS;
        if (f.number == 3) {
            s = int32_field(&f, "trainer_spec.model_type", &m->model_type, why, why_size);
        } else if (f.number == 35) {
            WIRE(&f, WIRE_VARINT, "trainer_spec.byte_fallback");
            m->byte_fallback = f.u != 0;
        } else if (f.number >= 40 && f.number <= 43) {
            s = int32_field(&f, id_names[f.number - 40], ids[f.number - 40], why, why_size);
        }
        if (s != MCL_SUCCESS)
            return s;
    }
    return got < 0 ? MALFORMED("trainer_spec: %s", what) : MCL_SUCCESS;
}

static mcl_status read_normalizer(spm_model *m, pb_reader r, char *why, size_t why_size)
{
    pb_field f;
    const char *what = "";
    int got;
    while ((got = pb_next(&r, &f, &what)) > 0) {
        if (f.number == 3) {
            WIRE(&f, WIRE_VARINT, "normalizer_spec.add_dummy_prefix");
            m->add_dummy_prefix = f.u != 0;
        }
    }
    return got < 0 ? MALFORMED("normalizer_spec: %s", what) : MCL_SUCCESS;
}

/* The top-level fields: a first pass counts the pieces (and checks the framing), the second
 * reads them. */
static mcl_status read_model(spm_model *m, pb_reader top, char *why, size_t why_size)
{
    static const char *const names[4] = {"", "pieces", "trainer_spec", "normalizer_spec"};
    pb_field f;
    const char *what = "";
    pb_reader r = top;
    int got;
    size_t n = 0;
    while ((got = pb_next(&r, &f, &what)) > 0) {
        if (f.number >= 1 && f.number <= 3)
            WIRE(&f, WIRE_BYTES, names[f.number]);
        n += f.number == 1;
    }
    if (got < 0)
        return MALFORMED("the model: %s", what);
    if (n == 0 || n > INT32_MAX / 4)
        return MALFORMED("the model has %zu pieces (1 to 2^29 read)", n);
    m->pieces = mcl_mem_malloc(n * sizeof *m->pieces);
    m->lens = mcl_mem_malloc(n * sizeof *m->lens);
    m->scores = mcl_mem_malloc(n * sizeof *m->scores);
    m->types = mcl_mem_malloc(n * sizeof *m->types);
    if (!m->pieces || !m->lens || !m->scores || !m->types)
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    m->cap = n;
    r = top;
    while (pb_next(&r, &f, &what) > 0) {
        mcl_status s = MCL_SUCCESS;
        if (f.number == 1)
            s = read_piece(m, f.bytes, why, why_size);
        else if (f.number == 2)
            s = read_trainer(m, f.bytes, why, why_size);
        else if (f.number == 3)
            s = read_normalizer(m, f.bytes, why, why_size);
        if (s != MCL_SUCCESS)
            return s;
    }
    return MCL_SUCCESS;
}

/* The model's settings the SPM tokenizer follows: BPE, byte pieces only with byte fallback,
 * special ids among the pieces. */
static mcl_status check_model(const spm_model *m, char *why, size_t why_size)
{
    static const char *const types[5] = {"", "Unigram", "BPE", "Word", "Char"};
    if (m->model_type != MODEL_BPE && m->model_type >= 1 && m->model_type <= 4)
        return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED,
                             "SentencePiece model type %s is not supported (BPE is: the "
                             "library merges pieces by score)", types[m->model_type]);
    if (m->model_type != MODEL_BPE)
        return MALFORMED("trainer_spec.model_type is %lld (1 to 4 known)",
                         (long long)m->model_type);
    for (size_t i = 0; !m->byte_fallback && i < m->n; i++)
        if (m->types[i] == MCL_TOKEN_BYTE)
            return mcl_text_fail(why, why_size, MCL_ERROR_UNSUPPORTED,
                                 "byte pieces without byte_fallback are not supported (the "
                                 "library always falls back to them)");
    const int64_t ids[4] = {m->unk, m->bos, m->eos, m->pad};
    static const char *const names[4] = {"unk_id", "bos_id", "eos_id", "pad_id"};
    for (int k = 0; k < 4; k++)
        if (ids[k] < -1 || ids[k] >= (int64_t)m->n)
            return MALFORMED("trainer_spec.%s is %lld, not -1 or a piece of the %zu", names[k],
                             (long long)ids[k], m->n);
    return MCL_SUCCESS;
}

mcl_status mcl_tokenizer_from_spm_model(const unsigned char *data, size_t len,
                                        mcl_tokenizer **out, char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out || (!data && len))
        return MALFORMED("data or out is NULL");
    *out = NULL;
    spm_model m = {0};
    m.model_type = MODEL_UNIGRAM;
    m.unk = 0;
    m.bos = 1;
    m.eos = 2;
    m.pad = -1;
    m.add_dummy_prefix = 1;
    pb_reader r = {data, len ? data + len : data}; /* NULL + 0 is undefined */
    mcl_status s = read_model(&m, r, why, why_size);
    if (s == MCL_SUCCESS)
        s = check_model(&m, why, why_size);
    if (s == MCL_SUCCESS) {
        mcl_vocab_desc d = {0};
        d.kind = MCL_VOCAB_SPM;
        d.pre = MCL_PRETOK_NONE;
        d.n_tokens = (uint32_t)m.n;
        d.tokens = m.pieces;
        d.token_lens = m.lens;
        d.scores = m.scores;
        d.types = m.types;
        d.unk = (int32_t)m.unk;
        d.bos = (int32_t)m.bos;
        d.eos = (int32_t)m.eos;
        d.pad = (int32_t)m.pad;
        d.add_bos = d.bos >= 0; /* llama.cpp's default for "llama" */
        d.add_space_prefix = m.add_dummy_prefix;
        s = mcl_tokenizer_create(&d, out, why, why_size);
    }
    spm_model_free(&m);
    return s;
}
