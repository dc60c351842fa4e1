/* Hugging Face tokenizer files written from a GGUF vocabulary (tests/data/vocab), for the
 * suites that read them back: a tokenizer.json (the tokenizers library's format) of a
 * byte-level BPE vocabulary ("gpt2") and a SentencePiece tokenizer.model (protobuf
 * ModelProto) of a "llama" one. Written from the formats' descriptions (the layout of the
 * published GPT-2, llama 3 and Qwen2 tokenizer.json files, sentencepiece_model.proto), not
 * from the library's readers. Every failure fails the calling test. */
#ifndef MCL_TEST_TOKENIZER_FILES_H
#define MCL_TEST_TOKENIZER_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "io/gguf.h"

/* Bytes written; the caller frees data. */
typedef struct tf_buffer {
    char *data;
    size_t len, cap;
} tf_buffer;

/* The pre-tokenizer a tokenizer.json is written with. */
typedef enum tf_pre {
    TF_PRE_BYTE_LEVEL = 0, /* ByteLevel with use_regex: GPT-2's */
    TF_PRE_LLAMA3 = 1,     /* Split (llama 3's regex, Isolated), ByteLevel without regex */
    TF_PRE_QWEN2 = 2,      /* the same with Qwen2's regex */
} tf_pre;

typedef struct tf_json_options {
    tf_pre pre;
    int merges_as_pairs;   /* merges as ["left", "right"] (tokenizers 0.20 on), else "l r" */
    int64_t changed_merge; /* >= 0: that merge written with its halves swapped */
    int ignore_merges;     /* model.ignore_merges */
    int64_t bos;           /* >= 0: a TemplateProcessing "[that token] $A" post-processor */
} tf_json_options;

/* tokenizer.json of g's "gpt2" vocabulary: every token in model.vocab, control and
 * user-defined ones also in added_tokens (special: control), the merges in order. */
void tf_tokenizer_json(const mcl_gguf *g, const tf_json_options *o, tf_buffer *out);

typedef struct tf_spm_options {
    int64_t swap_a, swap_b; /* >= 0: the scores of these two pieces exchanged */
    int model_type;         /* trainer_spec.model_type: 2 BPE, 1 Unigram */
    int byte_fallback;      /* trainer_spec.byte_fallback */
} tf_spm_options;

/* tokenizer.model of g's "llama" vocabulary: a piece (text, score, type) per token, a
 * trainer_spec (model type, byte_fallback, unk / bos / eos ids from g, pad_id -1, and fields
 * the reader skips: input, vocab_size, character_coverage), a normalizer_spec ("identity",
 * add_dummy_prefix from tokenizer.ggml.add_space_prefix, true when absent), an unknown
 * extension field of wire type 1 at the end. */
void tf_tokenizer_model(const mcl_gguf *g, const tf_spm_options *o, tf_buffer *out);

/* Append bytes (the buffer grows). */
void tf_put(tf_buffer *b, const void *bytes, size_t len);
/* printf-style text appended. */
void tf_printf(tf_buffer *b, const char *fmt, ...);
/* Protobuf: a varint; a field's tag (number, wire type); a length-delimited field (wire type
 * 2), a varint field (0), a fixed32 field (5); a float's bits. */
void tf_put_varint(tf_buffer *b, uint64_t v);
void tf_pb_tag(tf_buffer *b, uint32_t field, int wire);
void tf_pb_bytes(tf_buffer *b, uint32_t field, const void *bytes, size_t len);
void tf_pb_varint(tf_buffer *b, uint32_t field, uint64_t v);
void tf_pb_fixed32(tf_buffer *b, uint32_t field, uint32_t v);
uint32_t tf_float_bits(float f);

/* Write the buffer to a file. */
void tf_write_file(const char *path, const tf_buffer *b);

#endif
