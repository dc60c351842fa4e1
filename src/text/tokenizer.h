/* Tokenizers of the model files the library reads: SentencePiece-style with scores
 * (tokenizer.ggml.model = "llama": byte fallback, add_space_prefix) and byte-level BPE with
 * merges ("gpt2", with the pre-tokenizer tokenizer.ggml.pre names: "gpt-2", "llama-bpe" /
 * llama-3, "qwen2"; others refused by name). Special and control tokens, BOS/EOS from the
 * metadata, detokenization that round-trips. No device. Internal (src/model uses it). */
#ifndef MCL_TEXT_TOKENIZER_H
#define MCL_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"
#include "../io/gguf.h"

typedef struct mcl_tokenizer mcl_tokenizer;

/* Encoding flags. */
enum {
    MCL_TOKENIZE_ADD_BOS = 1u << 0,       /* prepend BOS (where the vocabulary has one) */
    MCL_TOKENIZE_PARSE_SPECIAL = 1u << 1, /* text like "<s>" becomes its special token */
};

/* The tokenizer a GGUF file's tokenizer.ggml.* metadata describes (a copy: g may be freed
 * afterwards). MCL_ERROR_UNSUPPORTED naming an unknown model or pre-tokenizer, or
 * MCL_ERROR_INVALID_ARGUMENT naming a malformed key (lengths disagreeing, ids out of range),
 * with the message in `why`. */
mcl_status mcl_tokenizer_from_gguf(const mcl_gguf *g, mcl_tokenizer **out, char *why,
                                   size_t why_size);
void mcl_tokenizer_free(mcl_tokenizer *t);

/* Token ids of `len` bytes of UTF-8 text (invalid UTF-8 is encoded byte by byte, never
 * refused). *count receives how many ids the text needs; MCL_ERROR_TOO_LARGE when that is
 * more than `capacity` (ids then holds the first `capacity`). ids may be NULL with capacity
 * 0 (a count query). */
mcl_status mcl_tokenizer_encode(const mcl_tokenizer *t, const char *text, size_t len,
                                uint32_t flags, int32_t *ids, uint32_t capacity,
                                uint32_t *count);

/* The text of `count` ids, snprintf-style into buf (capacity bytes, NUL-terminated when
 * capacity > 0); *needed (may be NULL) the whole length with the NUL. Control tokens (BOS,
 * EOS) give no text; MCL_ERROR_INVALID_ARGUMENT for an id outside the vocabulary;
 * MCL_ERROR_TOO_LARGE when cut. */
mcl_status mcl_tokenizer_decode(const mcl_tokenizer *t, const int32_t *ids, uint32_t count,
                                char *buf, size_t capacity, size_t *needed);

uint32_t mcl_tokenizer_vocab_size(const mcl_tokenizer *t);
/* "llama" or "gpt2", and the pre-tokenizer ("" for none). */
const char *mcl_tokenizer_model(const mcl_tokenizer *t);
const char *mcl_tokenizer_pre(const mcl_tokenizer *t);
/* BOS, EOS, unknown and padding ids, -1 where the vocabulary has none. */
int32_t mcl_tokenizer_bos(const mcl_tokenizer *t);
int32_t mcl_tokenizer_eos(const mcl_tokenizer *t);
int32_t mcl_tokenizer_unk(const mcl_tokenizer *t);
int32_t mcl_tokenizer_pad(const mcl_tokenizer *t);
/* The piece of token id (its text in the vocabulary, not decoded), or NULL. */
const char *mcl_tokenizer_piece(const mcl_tokenizer *t, int32_t id, size_t *len);

#endif
