/* What the GGUF parser (gguf.c) and writer (gguf_write.c) share: the format's constants and
 * the little-endian reads. Internal to src/io. */
#ifndef MCL_IO_GGUF_INTERNAL_H
#define MCL_IO_GGUF_INTERNAL_H

#include <stdint.h>

/* gguf.md: the alignment of the data section and of every tensor when general.alignment is
 * absent. */
#define MCL_GGUF_DEFAULT_ALIGNMENT 32

/* ggml.h's GGML_MAX_NAME: ggml's reader refuses a tensor name of this many bytes or more. */
#define MCL_GGML_MAX_NAME 64

/* The little-endian unsigned integer of 2, 4 or 8 bytes at p (any alignment, any host). */
uint16_t mcl_le16(const unsigned char *p);
uint32_t mcl_le32(const unsigned char *p);
uint64_t mcl_le64(const unsigned char *p);

/* Bytes of one value of a fixed-size metadata type; 0 for string, array or an unknown id. */
uint32_t mcl_gguf_value_size(uint32_t type);

#endif
