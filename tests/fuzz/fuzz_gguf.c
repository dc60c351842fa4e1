/* libFuzzer harness of the GGUF parser (src/io/gguf.c): each input is parsed from the
 * fuzzer's own buffer of exactly its size, and what a successful parse hands out (every key's
 * values, every string of every array, every tensor's bytes) is read, so that AddressSanitizer
 * sees any read past the input. Built only with clang and MOTIFCL_FUZZ=ON; how to run it is in
 * tests/fuzz/README.md. */
#include <stddef.h>
#include <stdint.h>

#include "io/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where the reads go, so that they are not optimised away. */
static volatile uint64_t sink;

static void read_value(const mcl_gguf *g, const mcl_gguf_kv *kv)
{
    uint64_t u;
    int64_t i;
    double f;
    int b;
    mcl_gguf_str s;
    if (kv->type != MCL_GGUF_ARRAY) {
        sink += (uint64_t)mcl_gguf_get_u64(kv, &u) + (uint64_t)mcl_gguf_get_i64(kv, &i) +
                (uint64_t)mcl_gguf_get_f64(kv, &f) + (uint64_t)mcl_gguf_get_bool(kv, &b);
        if (mcl_gguf_get_str(kv, &s) && s.len)
            sink += (unsigned char)s.data[0] + (unsigned char)s.data[s.len - 1];
        return;
    }
    for (uint64_t k = 0; k < kv->count; k++) {
        if (kv->elem_type == MCL_GGUF_STRING) {
            if (mcl_gguf_array_str(g, kv, k, &s) && s.len)
                sink += (unsigned char)s.data[0] + (unsigned char)s.data[s.len - 1];
        } else {
            sink += (uint64_t)mcl_gguf_array_u64(kv, k, &u) +
                    (uint64_t)mcl_gguf_array_i64(kv, k, &i) +
                    (uint64_t)mcl_gguf_array_f64(kv, k, &f);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcl_gguf *g = NULL;
    char why[256];
    if (mcl_gguf_parse(data, size, &g, why, sizeof why) != MCL_SUCCESS)
        return 0;
    for (uint64_t k = 0; k < mcl_gguf_kv_count(g); k++) {
        const mcl_gguf_kv *kv = mcl_gguf_kv_at(g, k);
        read_value(g, kv);
        char key[80];
        uint64_t n = kv->key.len < sizeof key - 1 ? kv->key.len : sizeof key - 1;
        for (uint64_t c = 0; c < n; c++)
            key[c] = kv->key.data[c] ? kv->key.data[c] : '?';
        key[n] = '\0';
        sink += mcl_gguf_find(g, key) != NULL;
    }
    for (uint64_t t = 0; t < mcl_gguf_tensor_count(g); t++) {
        const mcl_gguf_tensor *ti = mcl_gguf_tensor_at(g, t);
        for (uint64_t b = 0; b < ti->bytes; b += 4096)
            sink += ti->data[b];
        if (ti->bytes)
            sink += ti->data[ti->bytes - 1];
        sink += (uint64_t)(mcl_ggml_type_name(ti->type) != NULL);
    }
    mcl_gguf_free(g);
    return 0;
}
