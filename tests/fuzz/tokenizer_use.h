/* What the harnesses that make a tokenizer do with it: encode a fixed text (special tokens
 * parsed, BOS and EOS asked for) and decode the ids, so that the sanitizers see any read past
 * the tokenizer's tables; the results go to *sink so that they are not optimised away. The
 * tokenizer is freed. */
#ifndef MCL_FUZZ_TOKENIZER_USE_H
#define MCL_FUZZ_TOKENIZER_USE_H

#include <stdint.h>

#include "text/tokenizer.h"

static inline void fuzz_use_tokenizer(mcl_tokenizer *t, volatile uint64_t *sink)
{
    static const char text[] = "Hello, world! 12345 the \xC3\xA9\xF0\x9F\xA6\x99 <s></s><|end|>"
                               "<|user|><|endoftext|>\n\n\t  x\xFF";
    int32_t ids[256];
    char back[512];
    uint32_t n = 0;
    size_t needed = 0;
    if (mcl_tokenizer_encode(t, text, sizeof text - 1,
                             MCL_TOKENIZE_ADD_BOS | MCL_TOKENIZE_ADD_EOS |
                                 MCL_TOKENIZE_PARSE_SPECIAL,
                             ids, 256, &n) == MCL_SUCCESS &&
        mcl_tokenizer_decode(t, ids, n, back, sizeof back, &needed) == MCL_SUCCESS)
        *sink += n + needed + (unsigned char)back[0];
    *sink += (uint64_t)mcl_tokenizer_bos(t) + (uint64_t)mcl_tokenizer_eos(t);
    mcl_tokenizer_free(t);
}

#endif
