/* Tokenizers of the model files the library reads: SentencePiece-style with scores
 * (tokenizer.ggml.model = "llama": byte fallback, add_space_prefix) and byte-level BPE with
 * merges ("gpt2", with the pre-tokenizer tokenizer.ggml.pre names: "gpt-2", "llama-bpe" /
 * llama-3, "qwen2"; others refused by name), from a GGUF file's metadata or from a Hugging
 * Face checkpoint's tokenizer.json or SentencePiece tokenizer.model. Special and control
 * tokens, BOS/EOS from the metadata, detokenization that round-trips. No device. Internal (src/model uses it).
 *
 * The reference is llama.cpp's llama-vocab.cpp (tokenizers, defaults) and unicode.cpp
 * (pre-tokenizer splits); where this code chooses otherwise, the comment of the function says
 * so. A tokenizer is immutable once made: encode and decode may run on one tokenizer from
 * several threads at once (each call allocates its own scratch). */
#ifndef MCL_TEXT_TOKENIZER_H
#define MCL_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"
#include "../io/gguf.h"

typedef struct mcl_tokenizer mcl_tokenizer;

/* Encoding flags: MCL_TOKENIZE_ADD_BOS, MCL_TOKENIZE_PARSE_SPECIAL and MCL_TOKENIZE_ADD_EOS of
 * motifcl.h (its experimental section, which the library is built with). */

/* Token types: GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
typedef enum mcl_token_type {
    MCL_TOKEN_NORMAL = 1,
    MCL_TOKEN_UNKNOWN = 2,
    MCL_TOKEN_CONTROL = 3,
    MCL_TOKEN_USER_DEFINED = 4,
    MCL_TOKEN_UNUSED = 5,
    MCL_TOKEN_BYTE = 6,
} mcl_token_type;

/* The tokenizer algorithms. */
typedef enum mcl_vocab_kind {
    MCL_VOCAB_SPM = 1, /* "llama": SentencePiece BPE by score, byte fallback */
    MCL_VOCAB_BPE = 2, /* "gpt2": byte-level BPE by merge rank after a pre-tokenizer */
} mcl_vocab_kind;

/* The pre-tokenizers of the byte-level BPE (each the regex named in pretok.c). */
typedef enum mcl_pretok {
    MCL_PRETOK_NONE = 0,   /* SPM: none */
    MCL_PRETOK_GPT2 = 1,   /* "gpt-2" */
    MCL_PRETOK_LLAMA3 = 2, /* "llama-bpe", "llama3", "llama-v3" */
    MCL_PRETOK_QWEN2 = 3,  /* "qwen2" */
} mcl_pretok;

/* A vocabulary described directly (mcl_tokenizer_from_gguf builds one from the metadata;
 * the tests build their own). Everything is copied by mcl_tokenizer_create. */
typedef struct mcl_vocab_desc {
    mcl_vocab_kind kind;
    mcl_pretok pre;       /* BPE: which pre-tokenizer; SPM: MCL_PRETOK_NONE */
    const char *pre_name; /* reported by mcl_tokenizer_pre(); NULL means "" */
    uint32_t n_tokens;
    /* n_tokens pieces as stored (SPM with U+2581 for spaces, BPE in GPT-2's byte alphabet);
     * token_lens[i] bytes each, or NUL-terminated where token_lens is NULL. */
    const char *const *tokens;
    const uint64_t *token_lens;
    const float *scores;   /* SPM merge scores, n_tokens; NULL means all 0 */
    const int32_t *types;  /* mcl_token_type values, n_tokens; NULL means all normal */
    uint32_t n_merges;     /* BPE: merges in rank order, "left right" (split at the first */
    const char *const *merges; /* space after the first byte); lengths as for tokens */
    const uint64_t *merge_lens;
    /* Special ids, -1 for none. */
    int32_t bos, eos, unk, pad;
    int add_bos;          /* MCL_TOKENIZE_ADD_BOS adds BOS only when this is nonzero */
    int add_eos;          /* MCL_TOKENIZE_ADD_EOS adds EOS only when this is nonzero */
    int add_space_prefix; /* SPM: a space before the text and after each special token */
    int ignore_merges;    /* BPE: a pre-token that is a whole token is taken as is (llama-3) */
} mcl_vocab_desc;

/* The tokenizer a vocabulary describes. MCL_ERROR_INVALID_ARGUMENT with a message in `why`
 * (at most why_size bytes, may be NULL) for an inconsistent description: a special id out of
 * range, a token type unknown, a piece given twice, a merge without a space;
 * MCL_ERROR_UNSUPPORTED for a kind or pre-tokenizer that is not one of the above;
 * MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status mcl_tokenizer_create(const mcl_vocab_desc *desc, mcl_tokenizer **out, char *why,
                                size_t why_size);

/* The tokenizer a GGUF file's tokenizer.ggml.* metadata describes (a copy: g may be freed
 * afterwards). MCL_ERROR_UNSUPPORTED naming an unknown model or pre-tokenizer, or
 * MCL_ERROR_INVALID_ARGUMENT naming a malformed key (lengths disagreeing, ids out of range),
 * with the message in `why`. Keys and defaults (llama.cpp's): tokenizer.ggml.model "llama"
 * or "gpt2"; tokenizer.ggml.pre for gpt2 ("default" or absent is refused: llama.cpp splits
 * such text with a pipeline of four regexes that is not GPT-2's); tokens, scores (SPM),
 * token_type, merges (BPE); bos/eos/unknown/padding_token_id, for "llama" 1 / 2 / 0 / none
 * when absent, for "gpt2" none; add_bos_token, add_eos_token; add_space_prefix (true for
 * "llama" when absent, false for "gpt2"). */
mcl_status mcl_tokenizer_from_gguf(const mcl_gguf *g, mcl_tokenizer **out, char *why,
                                   size_t why_size);

/* The tokenizer a Hugging Face tokenizer.json describes (`len` bytes of JSON, read with
 * src/io/json.h; a copy: json may be freed afterwards). Read: model.type "BPE" (vocab, merges
 * as "left right" strings or ["left", "right"] pairs, ignore_merges, unk_token), added_tokens
 * (special: control tokens, else user-defined), the pre-tokenizer found by comparison with
 * the files of GPT-2 (ByteLevel with use_regex), llama 3 and Qwen2 (a Split of their regex,
 * Isolated, then ByteLevel without regex), the normalizer (none, or NFC, which is accepted
 * and not applied, as llama.cpp does), the decoder (none or ByteLevel), the post-processor
 * (ByteLevel; TemplateProcessing "[special] $A [special]" gives BOS / EOS and asks for them).
 * BOS and EOS are none otherwise; the caller may set them (mcl_tokenizer_set_specials).
 * MCL_ERROR_UNSUPPORTED naming what is refused (another model type, byte_fallback BPE,
 * dropout, subword affixes, another pre-tokenizer, normalizer, decoder or post-processor,
 * an added token with lstrip, rstrip or single_word); MCL_ERROR_INVALID_ARGUMENT (as
 * mcl_tokenizer_from_gguf) naming a malformed field: JSON that does not parse, a member of
 * another type, a token id given twice or missing; MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status mcl_tokenizer_from_hf_json(const char *json, size_t len, mcl_tokenizer **out,
                                      char *why, size_t why_size);

/* The number of token ids a tokenizer.json numbers (one past the largest id of model.vocab and
 * added_tokens) into *count, whatever its model type: for a caller that reads another
 * tokenizer file in its place and checks that the two agree. MCL_ERROR_INVALID_ARGUMENT for
 * JSON that does not parse or an id that is not one; MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status mcl_tokenizer_hf_json_count(const char *json, size_t len, uint32_t *count,
                                       char *why, size_t why_size);

/* The tokenizer a SentencePiece tokenizer.model describes (`len` bytes of protobuf
 * ModelProto; a copy): the SPM vocabulary that mcl_tokenizer_from_gguf makes of a "llama"
 * file: pieces, scores and types; unknown, BOS, EOS and padding ids from trainer_spec
 * (SentencePiece's defaults 0, 1, 2, none when absent); BOS added; a space prefix unless
 * normalizer_spec.add_dummy_prefix is false. The normalization rules (name, precompiled
 * charsmap, remove_extra_whitespaces) are not applied, as llama.cpp does not.
 * MCL_ERROR_UNSUPPORTED for a model type other than BPE (Unigram, Word, Char) and for byte
 * pieces without byte_fallback; MCL_ERROR_INVALID_ARGUMENT naming what is malformed (a
 * varint, length or value past the end of its message, a group or unknown wire type, a field
 * of the wrong wire type, a piece type outside 1 to 6, an id outside the pieces, no pieces);
 * MCL_ERROR_OUT_OF_HOST_MEMORY. */
mcl_status mcl_tokenizer_from_spm_model(const unsigned char *data, size_t len,
                                        mcl_tokenizer **out, char *why, size_t why_size);

/* Set the special ids of a tokenizer just made, before it is used or shared (a Hugging Face
 * checkpoint's config.json and tokenizer_config.json override what the tokenizer files say):
 * bos / eos a token id, -1 for none or -2 to keep; add_bos / add_eos 0 or 1, or -1 to keep.
 * MCL_ERROR_INVALID_ARGUMENT, with nothing changed, for an id outside the vocabulary or a
 * token to be added that has no id. Not thread-safe: the one call that changes a tokenizer. */
mcl_status mcl_tokenizer_set_specials(mcl_tokenizer *t, int32_t bos, int32_t eos, int add_bos,
                                      int add_eos, char *why, size_t why_size);

/* Frees the tokenizer; NULL is accepted. */
void mcl_tokenizer_free(mcl_tokenizer *t);

/* Token ids of `len` bytes of UTF-8 text (invalid UTF-8 is encoded byte by byte, never
 * refused). *count receives how many ids the text needs; MCL_ERROR_TOO_LARGE when that is
 * more than `capacity` (ids then holds the first `capacity`), or when one special-free run of
 * the text is 4 GiB or longer. ids may be NULL with capacity 0 (a count query, answered with
 * MCL_ERROR_TOO_LARGE when the count is not 0). MCL_ERROR_OUT_OF_HOST_MEMORY for the scratch
 * (proportional to the longest special-free run). Time O(n log n) in the text's length. */
mcl_status mcl_tokenizer_encode(const mcl_tokenizer *t, const char *text, size_t len,
                                uint32_t flags, int32_t *ids, uint32_t capacity,
                                uint32_t *count);

/* The text of `count` ids, snprintf-style into buf (capacity bytes, NUL-terminated when
 * capacity > 0); *needed (may be NULL) the whole length with the NUL. Control, unknown and
 * unused tokens (BOS, EOS) give no text; byte tokens give their byte; user-defined tokens
 * their text as is; an SPM vocabulary with add_space_prefix loses the leading space of the
 * first piece of text. So decode(encode(x)) is x, with or without BOS, for any text without
 * special-token text and, for SPM, without U+2581 (which is SentencePiece's space and comes
 * back as one).
 * MCL_ERROR_INVALID_ARGUMENT for an id outside the vocabulary; MCL_ERROR_TOO_LARGE when cut.
 * buf may be NULL with capacity 0. */
mcl_status mcl_tokenizer_decode(const mcl_tokenizer *t, const int32_t *ids, uint32_t count,
                                char *buf, size_t capacity, size_t *needed);

/* The number of tokens. */
uint32_t mcl_tokenizer_vocab_size(const mcl_tokenizer *t);
/* "llama" or "gpt2", and the pre-tokenizer ("" for none). */
const char *mcl_tokenizer_model(const mcl_tokenizer *t);
const char *mcl_tokenizer_pre(const mcl_tokenizer *t);
/* BOS, EOS, unknown and padding ids, -1 where the vocabulary has none. */
int32_t mcl_tokenizer_bos(const mcl_tokenizer *t);
int32_t mcl_tokenizer_eos(const mcl_tokenizer *t);
int32_t mcl_tokenizer_unk(const mcl_tokenizer *t);
int32_t mcl_tokenizer_pad(const mcl_tokenizer *t);
/* Whether the vocabulary asks for BOS / EOS (what MCL_TOKENIZE_ADD_BOS / ADD_EOS obey), and
 * whether an SPM vocabulary adds a space prefix: 1 or 0. */
int mcl_tokenizer_add_bos(const mcl_tokenizer *t);
int mcl_tokenizer_add_eos(const mcl_tokenizer *t);
int mcl_tokenizer_add_space_prefix(const mcl_tokenizer *t);
/* The type of token id (mcl_token_type), or 0 for an id outside the vocabulary. */
int mcl_tokenizer_token_type(const mcl_tokenizer *t, int32_t id);
/* The piece of token id (its text in the vocabulary, not decoded), or NULL. *len (may be
 * NULL) receives its length; the piece is NUL-terminated. */
const char *mcl_tokenizer_piece(const mcl_tokenizer *t, int32_t id, size_t *len);

#endif
