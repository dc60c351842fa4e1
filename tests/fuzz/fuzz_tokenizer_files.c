/* libFuzzer harness of the Hugging Face tokenizer readers (src/text/tokenizer_hf.c and
 * tokenizer_spm_model.c): each input, in the fuzzer's own buffer of exactly its size, is read
 * as a tokenizer.json and as a tokenizer.model, and a tokenizer that comes out encodes and
 * decodes a fixed text with every special token parsed, so that AddressSanitizer sees any
 * read past the input or the tables. Built only with clang and MOTIFCL_FUZZ=ON; how to run it
 * is in tests/fuzz/README.md. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "text/tokenizer.h"
#include "tokenizer_use.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where the results go, so that they are not optimised away. */
static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[256];
    mcl_tokenizer *t = NULL;
    uint32_t count = 0;
    if (mcl_tokenizer_from_hf_json((const char *)data, size, &t, why, sizeof why) ==
        MCL_SUCCESS)
        fuzz_use_tokenizer(t, &sink);
    if (mcl_tokenizer_hf_json_count((const char *)data, size, &count, why, sizeof why) ==
        MCL_SUCCESS)
        sink += count;
    t = NULL;
    if (mcl_tokenizer_from_spm_model(data, size, &t, why, sizeof why) == MCL_SUCCESS)
        fuzz_use_tokenizer(t, &sink);
    sink += (unsigned char)why[0];
    return 0;
}
