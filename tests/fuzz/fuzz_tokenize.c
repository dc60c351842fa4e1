/* libFuzzer harness of the tokenizers' encoding of text (src/text): each input is a prompt,
 * encoded by the three real vocabularies of tests/data/vocab (GPT-2's byte-level BPE and
 * LLaMA's SentencePiece vocabulary from their GGUF files, a SentencePiece BPE tokenizer.model)
 * with and without BOS, EOS and special tokens, and decoded again. Beyond what the sanitizers
 * see, it aborts where the results break what src/text/tokenizer.h promises:
 *
 * - a count query (no room) gives the count that an encode with exactly that room fills,
 *   with the same ids as an encode with room to spare; every id is in the vocabulary;
 * - without special tokens, decode(encode(x)) is x for every byte string (invalid UTF-8
 *   included) that holds no U+2581 for a SentencePiece vocabulary (its space), with or
 *   without BOS (none of the three has user-defined tokens, whose text is split out
 *   whatever the flags);
 * - decoding with a buffer one byte short of the whole length is refused as cut, and what it
 *   wrote is the start of the whole text.
 *
 * Built only with clang and MOTIFCL_FUZZ=ON; how to run it is in tests/fuzz/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "text/tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define VOCABS 3

static mcl_tokenizer *vocab[VOCABS];
static int spm[VOCABS]; /* SentencePiece: U+2581 does not come back as itself */

static void die(const char *what, const char *name)
{
    fprintf(stderr, "fuzz_tokenize: %s (%s)\n", what, name);
    abort();
}

static unsigned char *read_file(const char *name, size_t *size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vocab/%s", MCL_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = n > 0 ? malloc((size_t)n) : NULL;
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n)
        die("cannot read", path);
    fclose(f);
    *size = (size_t)n;
    return data;
}

static mcl_tokenizer *from_gguf(const char *name)
{
    size_t size;
    unsigned char *data = read_file(name, &size);
    char why[256];
    mcl_gguf *g = NULL;
    mcl_tokenizer *t = NULL;
    if (mcl_gguf_parse(data, size, &g, why, sizeof why) != MCL_SUCCESS ||
        mcl_tokenizer_from_gguf(g, &t, why, sizeof why) != MCL_SUCCESS)
        die(why, name);
    mcl_gguf_free(g);
    free(data);
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    vocab[0] = from_gguf("ggml-vocab-gpt-2.gguf");
    vocab[1] = from_gguf("ggml-vocab-llama-spm.gguf");
    spm[1] = 1;
    size_t size;
    unsigned char *data = read_file("spm-bpe-700.model", &size);
    char why[256];
    if (mcl_tokenizer_from_spm_model(data, size, &vocab[2], why, sizeof why) != MCL_SUCCESS)
        die(why, "spm-bpe-700.model");
    spm[2] = 1;
    free(data);
    return 0;
}

/* Whether the bytes hold the string. */
static int contains(const uint8_t *data, size_t size, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(data + i, needle, n) == 0)
            return 1;
    return 0;
}

static void check(int v, const uint8_t *data, size_t size, uint32_t flags)
{
    const mcl_tokenizer *t = vocab[v];
    const char *text = (const char *)data;
    uint32_t count = 0;
    mcl_status s = mcl_tokenizer_encode(t, text, size, flags, NULL, 0, &count);
    if (s != (count ? MCL_ERROR_TOO_LARGE : MCL_SUCCESS))
        die("a count query's status does not match its count", mcl_tokenizer_model(t));
    /* Room for one more than needed: the encode must not use it. */
    int32_t *ids = malloc(((size_t)count + 1) * sizeof *ids);
    int32_t *exact = malloc(((size_t)count + 1) * sizeof *exact);
    if (!ids || !exact)
        abort();
    uint32_t n = 0, m = 0;
    ids[count] = -7;
    if (mcl_tokenizer_encode(t, text, size, flags, ids, count + 1, &n) != MCL_SUCCESS ||
        n != count || ids[count] != -7)
        die("an encode with room gave another count", mcl_tokenizer_model(t));
    if (mcl_tokenizer_encode(t, text, size, flags, exact, count, &m) != MCL_SUCCESS ||
        m != count || (count && memcmp(ids, exact, count * sizeof *ids) != 0))
        die("an encode with exactly the room gave other ids", mcl_tokenizer_model(t));
    for (uint32_t i = 0; i < count; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= mcl_tokenizer_vocab_size(t))
            die("an id outside the vocabulary", mcl_tokenizer_model(t));

    size_t needed = 0;
    if (mcl_tokenizer_decode(t, ids, count, NULL, 0, &needed) != MCL_ERROR_TOO_LARGE ||
        needed == 0)
        die("a decode's length query", mcl_tokenizer_model(t));
    char *back = malloc(needed), *cut = malloc(needed);
    if (!back || !cut)
        abort();
    size_t again = 0;
    if (mcl_tokenizer_decode(t, ids, count, back, needed, &again) != MCL_SUCCESS ||
        again != needed || back[needed - 1] != '\0')
        die("a decode with its length's room", mcl_tokenizer_model(t));
    if (needed > 1 &&
        (mcl_tokenizer_decode(t, ids, count, cut, needed - 1, &again) != MCL_ERROR_TOO_LARGE ||
         again != needed || cut[needed - 2] != '\0' || memcmp(cut, back, needed - 2) != 0))
        die("a decode one byte short is not the start of the whole", mcl_tokenizer_model(t));

    int round_trip = !(flags & MCL_TOKENIZE_PARSE_SPECIAL) &&
                     !(spm[v] && contains(data, size, "\xE2\x96\x81"));
    if (round_trip && (needed - 1 != size || memcmp(back, data, size) != 0))
        die("decode(encode(text)) is not the text", mcl_tokenizer_model(t));
    free(cut);
    free(back);
    free(exact);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t flags[] = {
        0,
        MCL_TOKENIZE_ADD_BOS,
        MCL_TOKENIZE_ADD_BOS | MCL_TOKENIZE_ADD_EOS | MCL_TOKENIZE_PARSE_SPECIAL,
    };
    for (int v = 0; v < VOCABS; v++)
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            check(v, data, size, flags[f]);
    return 0;
}
