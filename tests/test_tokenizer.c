/* The tokenizers (src/text) on vocabularies built here: the SentencePiece merge by score, byte
 * fallback and the unknown token, the byte-level BPE by merge rank, each pre-tokenizer's
 * splitting of tricky text, special tokens, BOS/EOS, decoding and its round trip, the code
 * point classes and UTF-8; and on the real vocabularies of tests/data/vocab with their
 * reference vectors. No device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/mapped.h"
#include "text/text_internal.h"
#include "tokenizer_files.h"

#ifndef MCL_TEST_DATA_DIR
#error "MCL_TEST_DATA_DIR (tests/data) is set by tests/CMakeLists.txt"
#endif

#define MAX_TOKENS 1024

/* --- Vocabulary builder -------------------------------------------------------------------- */

typedef struct vocab {
    const char *tokens[MAX_TOKENS];
    int32_t types[MAX_TOKENS];
    float scores[MAX_TOKENS];
    uint32_t n;
    const char *merges[64];
    uint32_t n_merges;
    char storage[MAX_TOKENS][16]; /* texts made here (<0xXX>, GPT-2 characters) */
} vocab;

static int32_t add_token(vocab *v, const char *text, int type, float score)
{
    assert_true(v->n < MAX_TOKENS);
    v->tokens[v->n] = text;
    v->types[v->n] = type;
    v->scores[v->n] = score;
    return (int32_t)v->n++;
}

/* <unk>, <s>, </s> and (with_bytes) the 256 byte tokens <0x00>..<0xFF>. */
static void spm_base(vocab *v, int with_bytes)
{
    memset(v, 0, sizeof *v);
    add_token(v, "<unk>", MCL_TOKEN_UNKNOWN, 0);
    add_token(v, "<s>", MCL_TOKEN_CONTROL, 0);
    add_token(v, "</s>", MCL_TOKEN_CONTROL, 0);
    for (int b = 0; with_bytes && b < 256; b++) {
        snprintf(v->storage[v->n], sizeof v->storage[0], "<0x%02X>", b);
        add_token(v, v->storage[v->n], MCL_TOKEN_BYTE, 0);
    }
}

static mcl_tokenizer *make(const vocab *v, mcl_vocab_kind kind, mcl_pretok pre,
                           int add_space_prefix, int add_bos, int ignore_merges)
{
    mcl_vocab_desc d = {0};
    d.kind = kind;
    d.pre = pre;
    d.pre_name = "test";
    d.n_tokens = v->n;
    d.tokens = v->tokens;
    d.scores = v->scores;
    d.types = v->types;
    d.n_merges = v->n_merges;
    d.merges = v->merges;
    d.bos = kind == MCL_VOCAB_SPM ? 1 : -1;
    d.eos = kind == MCL_VOCAB_SPM ? 2 : -1;
    d.unk = kind == MCL_VOCAB_SPM ? 0 : -1;
    d.pad = -1;
    d.add_bos = add_bos;
    d.add_eos = add_bos;
    d.add_space_prefix = add_space_prefix;
    d.ignore_merges = ignore_merges;
    mcl_tokenizer *t = NULL;
    char why[256];
    mcl_status s = mcl_tokenizer_create(&d, &t, why, sizeof why);
    if (s != MCL_SUCCESS)
        fail_msg("mcl_tokenizer_create: %s: %s", mcl_status_string(s), why);
    return t;
}

/* GPT-2's bytes_to_unicode as its encoder.py writes it: the printable bytes, then the rest
 * numbered from 256 in byte order. Independent of the library's arithmetic. */
static uint32_t reference_byte_cp(unsigned byte)
{
    uint32_t cps[256];
    int mapped[256] = {0};
    for (unsigned b = '!'; b <= '~'; b++)
        mapped[b] = 1;
    for (unsigned b = 0xA1; b <= 0xAC; b++)
        mapped[b] = 1;
    for (unsigned b = 0xAE; b <= 0xFF; b++)
        mapped[b] = 1;
    uint32_t n = 0;
    for (unsigned b = 0; b < 256; b++)
        cps[b] = mapped[b] ? b : 256 + n++;
    return cps[byte];
}

/* Raw bytes -> their text in GPT-2's alphabet (out has 2 bytes per input byte + 1). */
static const char *g2(const char *raw, char *out)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p; p++) {
        uint32_t cp = reference_byte_cp(*p);
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else {
            out[n++] = (char)(0xC0 | (cp >> 6));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[n] = '\0';
    return out;
}

/* A BPE vocabulary: the 256 byte tokens (id = byte), then `pieces` (raw bytes), then the
 * merges ("left right" of raw bytes) in rank order. */
static void bpe_vocab(vocab *v, const char *const *pieces, const char *const *merges)
{
    memset(v, 0, sizeof *v);
    static char merge_text[64][80];
    for (unsigned b = 0; b < 256; b++) {
        char raw[2] = {(char)(b ? b : 1), 0};
        if (b == 0) { /* NUL is not a C string: write its character by hand */
            uint32_t cp = reference_byte_cp(0);
            v->storage[b][0] = (char)(0xC0 | (cp >> 6));
            v->storage[b][1] = (char)(0x80 | (cp & 0x3F));
            v->storage[b][2] = '\0';
        } else {
            g2(raw, v->storage[b]);
        }
        add_token(v, v->storage[b], MCL_TOKEN_NORMAL, 0);
    }
    for (size_t i = 0; pieces && pieces[i]; i++)
        add_token(v, g2(pieces[i], v->storage[v->n]), MCL_TOKEN_NORMAL, 0);
    for (size_t i = 0; merges && merges[i]; i++) {
        char left[16], right[16], a[40], b[40];
        assert_int_equal(sscanf(merges[i], "%15s %15s", left, right), 2);
        snprintf(merge_text[i], sizeof merge_text[i], "%s %s", g2(left, a), g2(right, b));
        v->merges[v->n_merges++] = merge_text[i];
    }
}

/* --- Checks --------------------------------------------------------------------------------- */

/* What a failed check prints before its line: a negative control's failure is the expected
 * outcome, and says so. */
static const char *report_prefix = "  ";

#define NEGATIVE(check)                                                                      \
    do {                                                                                     \
        report_prefix = "  (negative control, failing as it should) ";                      \
        int negative_passed_ = (check);                                                      \
        report_prefix = "  ";                                                                \
        assert_false(negative_passed_);                                                      \
    } while (0)

/* Whether encoding `text` gives exactly the tokens whose pieces are listed (NULL-ended),
 * printing both on a mismatch. */
static int encodes_as(const mcl_tokenizer *t, const char *text, size_t len, uint32_t flags,
                      const char *const *want)
{
    int32_t ids[256];
    uint32_t n = 0;
    mcl_status s = mcl_tokenizer_encode(t, text, len, flags, ids, 256, &n);
    size_t w = 0;
    while (want[w])
        w++;
    int ok = s == MCL_SUCCESS && n == w;
    for (uint32_t i = 0; ok && i < n; i++) {
        size_t plen;
        const char *p = mcl_tokenizer_piece(t, ids[i], &plen);
        ok = p && strlen(want[i]) == plen && memcmp(p, want[i], plen) == 0;
    }
    if (!ok) {
        printf("%s'%.*s' (%s) encodes as", report_prefix, (int)len, text, mcl_status_string(s));
        for (uint32_t i = 0; i < n && i < 256; i++)
            printf(" [%s]", mcl_tokenizer_piece(t, ids[i], NULL));
        printf(", expected");
        for (size_t i = 0; i < w; i++)
            printf(" [%s]", want[i]);
        printf("\n");
    }
    return ok;
}

#define ENC(t, text, flags, ...)                                                             \
    encodes_as((t), (text), strlen(text), (flags), (const char *const[]){__VA_ARGS__, NULL})

/* Whether decode(encode(text)) is text. */
static int round_trips(const mcl_tokenizer *t, const char *text, size_t len, uint32_t flags)
{
    uint32_t n = 0;
    mcl_status s = mcl_tokenizer_encode(t, text, len, flags, NULL, 0, &n);
    if (s != MCL_SUCCESS && s != MCL_ERROR_TOO_LARGE)
        return 0;
    int32_t *ids = malloc((n + 1) * sizeof *ids);
    char *back = malloc(len + 2);
    size_t needed = 0;
    int ok = ids && back &&
             mcl_tokenizer_encode(t, text, len, flags, ids, n, &n) == MCL_SUCCESS &&
             mcl_tokenizer_decode(t, ids, n, back, len + 2, &needed) == MCL_SUCCESS &&
             needed == len + 1 && memcmp(back, text, len) == 0;
    if (!ok)
        printf("%s'%.*s' does not round-trip\n", report_prefix, (int)(len > 80 ? 80 : len), text);
    free(ids);
    free(back);
    return ok;
}

/* Whether a pre-tokenizer splits `text` into exactly the listed pieces (NULL-ended). */
static int splits_as(mcl_pretok pre, const char *text, size_t len, const char *const *want)
{
    size_t *ends = NULL, n = 0, w = 0;
    assert_int_equal(mcl_pretok_split(pre, text, len, &ends, &n), MCL_SUCCESS);
    while (want[w])
        w++;
    int ok = n == w;
    for (size_t i = 0, start = 0; ok && i < n; start = ends[i], i++)
        ok = strlen(want[i]) == ends[i] - start &&
             memcmp(want[i], text + start, ends[i] - start) == 0;
    if (!ok) {
        printf("%s'%.*s' splits as", report_prefix, (int)len, text);
        for (size_t i = 0, start = 0; i < n; start = ends[i], i++)
            printf(" [%.*s]", (int)(ends[i] - start), text + start);
        printf(", expected");
        for (size_t i = 0; i < w; i++)
            printf(" [%s]", want[i]);
        printf("\n");
    }
    free(ends);
    return ok;
}

#define SPLIT(pre, text, ...)                                                                \
    splits_as((pre), (text), strlen(text), (const char *const[]){__VA_ARGS__, NULL})

/* --- Unicode and UTF-8 ---------------------------------------------------------------------- */

static void code_point_classes(void **state)
{
    (void)state;
    for (size_t i = 0; i < mcl_cp_range_count; i++) {
        assert_true(mcl_cp_ranges[i].first <= mcl_cp_ranges[i].last);
        assert_true(mcl_cp_ranges[i].cls != MCL_CP_OTHER);
        if (i)
            assert_true(mcl_cp_ranges[i - 1].last < mcl_cp_ranges[i].first);
    }
    assert_string_equal(mcl_unicode_version, "14.0.0");
    struct { uint32_t cp; int cls; } cases[] = {
        {'A', MCL_CP_LETTER},     {'z', MCL_CP_LETTER},     {'5', MCL_CP_NUMBER},
        {' ', MCL_CP_SPACE},      {'\n', MCL_CP_SPACE},     {'\'', MCL_CP_OTHER},
        {0x00BD, MCL_CP_NUMBER},  /* ½, No */ {0x0660, MCL_CP_NUMBER}, /* Arabic-Indic 0 */
        {0x2168, MCL_CP_NUMBER},  /* Roman numeral, Nl */ {0x00E9, MCL_CP_LETTER},
        {0x4E2D, MCL_CP_LETTER},  /* 中 */ {0x1780, MCL_CP_LETTER}, /* Khmer KA */
        {0x17B6, MCL_CP_OTHER},   /* Khmer vowel sign, Mc */ {0x3000, MCL_CP_SPACE},
        {0x00A0, MCL_CP_SPACE},   {0x0085, MCL_CP_SPACE},   {0x2029, MCL_CP_SPACE},
        {0x001C, MCL_CP_OTHER},   /* not White_Space, though str.isspace() says so */
        {0x200B, MCL_CP_OTHER},   /* zero width space: Cf */ {0x1F999, MCL_CP_OTHER},
        {0x2581, MCL_CP_OTHER},   {0x10FFFF, MCL_CP_OTHER}, {MCL_CP_INVALID, MCL_CP_OTHER},
        {0x20000, MCL_CP_LETTER}, /* CJK extension B */ {0x1D7CE, MCL_CP_NUMBER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (mcl_cp_class(cases[i].cp) != cases[i].cls)
            fail_msg("U+%04X: class %d, expected %d", cases[i].cp, mcl_cp_class(cases[i].cp),
                     cases[i].cls);
    /* Negative control: the table does separate the classes. */
    assert_int_not_equal(mcl_cp_class('A'), mcl_cp_class('5'));
}

static void utf8_decoding(void **state)
{
    (void)state;
    struct { const char *s; size_t len; uint32_t cp; } cases[] = {
        {"A", 1, 'A'},
        {"\xC3\xA9", 2, 0xE9},
        {"\xE2\x96\x81", 3, 0x2581},
        {"\xF0\x9F\xA6\x99", 4, 0x1F999},
        {"\xC0\xAF", 1, MCL_CP_INVALID},     /* overlong */
        {"\xE0\x80\xAF", 1, MCL_CP_INVALID}, /* overlong */
        {"\xED\xA0\x80", 1, MCL_CP_INVALID}, /* surrogate */
        {"\xF4\x90\x80\x80", 1, MCL_CP_INVALID}, /* past U+10FFFF */
        {"\xE2\x96", 1, MCL_CP_INVALID},     /* cut short */
        {"\x80", 1, MCL_CP_INVALID},         /* stray continuation */
        {"\xFF", 1, MCL_CP_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t cp = 0;
        size_t n = mcl_utf8_next((const unsigned char *)cases[i].s, strlen(cases[i].s), &cp);
        if (n != cases[i].len || cp != cases[i].cp)
            fail_msg("case %zu: %zu bytes, U+%04X", i, n, cp);
    }
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp += cp < 0x800 ? 1 : 97) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        unsigned char buf[4];
        uint32_t back;
        size_t n = mcl_utf8_put(cp, buf);
        assert_int_equal(mcl_utf8_next(buf, n, &back), n);
        assert_int_equal(back, cp);
    }
}

static void gpt2_alphabet(void **state)
{
    (void)state;
    int seen[512] = {0};
    for (unsigned b = 0; b < 256; b++) {
        uint32_t cp = mcl_gpt2_byte_to_cp(b);
        assert_int_equal(cp, reference_byte_cp(b));
        assert_true(cp < 512 && !seen[cp]);
        seen[cp] = 1;
        assert_int_equal(mcl_gpt2_cp_to_byte(cp), (int)b);
    }
    assert_int_equal(mcl_gpt2_byte_to_cp(' '), 0x120); /* Ġ */
    assert_int_equal(mcl_gpt2_byte_to_cp('\n'), 0x10A); /* Ċ */
    assert_int_equal(mcl_gpt2_cp_to_byte(0x20), -1);   /* a raw space is not in it */
    assert_int_equal(mcl_gpt2_cp_to_byte(0x144), -1);
}

/* --- Pre-tokenizers ------------------------------------------------------------------------- */

/* gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static void pretok_gpt2(void **state)
{
    (void)state;
    const mcl_pretok p = MCL_PRETOK_GPT2;
    assert_true(SPLIT(p, "Hello world", "Hello", " world"));
    assert_true(SPLIT(p, "I'm don't we'll they're", "I", "'m", " don", "'t", " we", "'ll",
                      " they", "'re"));
    /* Case-sensitive contractions: 'S is punctuation, then a letter. */
    assert_true(SPLIT(p, "IT'S", "IT", "'", "S"));
    assert_true(SPLIT(p, "it's 'S", "it", "'s", " '", "S"));
    assert_true(SPLIT(p, "abc 12345 x", "abc", " 12345", " x"));
    assert_true(SPLIT(p, "4 \xC2\xBD months", "4", " \xC2\xBD", " months")); /* ½ is \p{N} */
    assert_true(SPLIT(p, "Hello!!! ?? ...", "Hello", "!!!", " ??", " ..."));
    assert_true(SPLIT(p, "a   b", "a", "  ", " b"));
    assert_true(SPLIT(p, "a  ", "a", "  "));
    assert_true(SPLIT(p, "a\n\nb", "a", "\n", "\n", "b"));
    assert_true(SPLIT(p, "\t\n", "\t\n"));
    assert_true(SPLIT(p, " \n x", " \n", " x"));
    assert_true(SPLIT(p, "\xD0\x9F\xD1\x80\xD0\xB8 \xD0\xBC\xD0\xB8\xD1\x80", /* При мир */
                      "\xD0\x9F\xD1\x80\xD0\xB8", " \xD0\xBC\xD0\xB8\xD1\x80"));
    assert_true(SPLIT(p, "\xE6\x88\x91\xE6\x83\xB3" "apple", "\xE6\x88\x91\xE6\x83\xB3" "apple"));
    assert_true(SPLIT(p, "hi \xF0\x9F\xA6\x99!", "hi", " \xF0\x9F\xA6\x99!")); /* 🦙 is \S */
    assert_true(SPLIT(p, "a\xFF\xFE" "b", "a", "\xFF\xFE", "b")); /* invalid bytes: \S */
    assert_true(SPLIT(p, "x\xE3\x80\x80y", "x", "\xE3\x80\x80", "y")); /* U+3000 is \s */
    /* Negative control: a wrong expectation is reported. */
    NEGATIVE(SPLIT(p, "Hello world", "Hello ", "world"));
}

/* llama-3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static void pretok_llama3(void **state)
{
    (void)state;
    const mcl_pretok p = MCL_PRETOK_LLAMA3;
    assert_true(SPLIT(p, "Hello world", "Hello", " world"));
    assert_true(SPLIT(p, "I'M DON'T we'Ll", "I", "'M", " DON", "'T", " we", "'Ll"));
    assert_true(SPLIT(p, "'hello", "'hello")); /* no contraction: [^\r\n\p{L}\p{N}]?\p{L}+ */
    assert_true(SPLIT(p, "12345678", "123", "456", "78"));
    assert_true(SPLIT(p, "a 1234", "a", " ", "123", "4"));
    assert_true(SPLIT(p, "$hello (world)", "$hello", " (", "world", ")"));
    assert_true(SPLIT(p, "foo!!\n\nbar", "foo", "!!\n\n", "bar"));
    assert_true(SPLIT(p, "a  \n  b", "a", "  \n", " ", " b"));
    assert_true(SPLIT(p, "\tword", "\tword"));
    assert_true(SPLIT(p, "\nword", "\n", "word"));
    assert_true(SPLIT(p, "\r\n\r\nx", "\r\n\r\n", "x"));
    assert_true(SPLIT(p, "hello   ", "hello", "   "));
    assert_true(SPLIT(p, "a   b", "a", "  ", " b"));
    /* "При, мир!" */
    assert_true(SPLIT(p, "\xD0\x9F\xD1\x80\xD0\xB8, \xD0\xBC\xD0\xB8\xD1\x80!",
                      "\xD0\x9F\xD1\x80\xD0\xB8", ",", " \xD0\xBC\xD0\xB8\xD1\x80", "!"));
    assert_true(SPLIT(p, "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99 ok", "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99",
                      " ok"));
    assert_true(SPLIT(p, "a\xFF\n", "a", "\xFF\n"));
    assert_true(SPLIT(p, "x \n", "x", " \n"));
    NEGATIVE(SPLIT(p, "12345678", "1234", "5678"));
}

/* qwen2: the llama-3 regex with \p{N} for \p{N}{1,3}. */
static void pretok_qwen2(void **state)
{
    (void)state;
    const mcl_pretok p = MCL_PRETOK_QWEN2;
    assert_true(SPLIT(p, "a 1234", "a", " ", "1", "2", "3", "4"));
    assert_true(SPLIT(p, "x12", "x", "1", "2"));
    assert_true(SPLIT(p, "We'LL see", "We", "'LL", " see"));
    assert_true(SPLIT(p, "foo!!\n\nbar", "foo", "!!\n\n", "bar"));
    assert_true(SPLIT(p, "$hello (world)", "$hello", " (", "world", ")"));
    assert_true(SPLIT(p, "\xE6\x88\x91 3\xE5\xA4\xA9", "\xE6\x88\x91", " ", "3", "\xE5\xA4\xA9"));
    NEGATIVE(SPLIT(p, "a 1234", "a", " ", "123", "4"));
}

/* --- SentencePiece -------------------------------------------------------------------------- */

static void spm_pieces(vocab *v, float score_ab, float score_bc)
{
    add_token(v, "\xE2\x96\x81", MCL_TOKEN_NORMAL, -5);                /* ▁ */
    add_token(v, "a", MCL_TOKEN_NORMAL, -3);
    add_token(v, "b", MCL_TOKEN_NORMAL, -3);
    add_token(v, "c", MCL_TOKEN_NORMAL, -3);
    add_token(v, "ab", MCL_TOKEN_NORMAL, score_ab);
    add_token(v, "bc", MCL_TOKEN_NORMAL, score_bc);
    add_token(v, "aa", MCL_TOKEN_NORMAL, -2);
    add_token(v, "\xE2\x96\x81" "a", MCL_TOKEN_NORMAL, -1);            /* ▁a */
    add_token(v, "\xE2\x96\x81" "b", MCL_TOKEN_NORMAL, -1);            /* ▁b */
    add_token(v, "\xE2\x96\x81\xE2\x96\x81", MCL_TOKEN_NORMAL, -1.5f); /* ▁▁ */
    add_token(v, "<tool>", MCL_TOKEN_USER_DEFINED, 0);
    add_token(v, "<to", MCL_TOKEN_USER_DEFINED, 0);
}

static void spm_merges_by_score(void **state)
{
    (void)state;
    vocab v;
    spm_base(&v, 1);
    spm_pieces(&v, -1, -2);
    mcl_tokenizer *ab_first = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 0, 0, 0);
    spm_base(&v, 1);
    spm_pieces(&v, -2, -1);
    mcl_tokenizer *bc_first = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 0, 0, 0);
    assert_true(ENC(ab_first, "abc", 0, "ab", "c"));
    assert_true(ENC(bc_first, "abc", 0, "a", "bc"));
    /* Negative control: the order of the scores is what decides. */
    NEGATIVE(ENC(bc_first, "abc", 0, "ab", "c"));
    /* Equal scores: the leftmost pair first. */
    assert_true(ENC(ab_first, "aaa", 0, "aa", "a"));
    assert_true(ENC(ab_first, "aaaa", 0, "aa", "aa"));
    uint32_t n = 7;
    assert_int_equal(mcl_tokenizer_encode(ab_first, "", 0, 0, NULL, 0, &n), MCL_SUCCESS);
    assert_int_equal(n, 0);
    mcl_tokenizer_free(ab_first);
    mcl_tokenizer_free(bc_first);
}

static void spm_space_prefix_and_fallback(void **state)
{
    (void)state;
    vocab v;
    spm_base(&v, 1);
    spm_pieces(&v, -1, -2);
    mcl_tokenizer *t = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 1, 1, 0);
    assert_int_equal(mcl_tokenizer_add_space_prefix(t), 1);
    assert_true(ENC(t, "a b", 0, "\xE2\x96\x81" "a", "\xE2\x96\x81" "b"));
    /* "▁▁a": ▁a (-1) beats ▁▁ (-1.5). */
    assert_true(ENC(t, " a", 0, "\xE2\x96\x81", "\xE2\x96\x81" "a"));
    /* é has no piece: its bytes; an invalid byte: its byte. */
    assert_true(ENC(t, "a\xC3\xA9", 0, "\xE2\x96\x81" "a", "<0xC3>", "<0xA9>"));
    assert_true(ENC(t, "a\xFF", 0, "\xE2\x96\x81" "a", "<0xFF>"));
    assert_true(ENC(t, "\t", 0, "\xE2\x96\x81", "<0x09>"));
    const char *texts[] = {"a b", " a", "a\xC3\xA9", "a\xFF", "  a  b  ", "\n\t", "abcabc a"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        assert_true(round_trips(t, texts[i], strlen(texts[i]), 0));
        assert_true(round_trips(t, texts[i], strlen(texts[i]), MCL_TOKENIZE_ADD_BOS));
    }
    /* The one exception: U+2581 in the text is SentencePiece's space, and decodes as one. */
    NEGATIVE(round_trips(t, "c\xE2\x96\x81" "c", 5, 0));
    int32_t ids[8];
    uint32_t n = 0;
    char back[8];
    assert_int_equal(mcl_tokenizer_encode(t, "c\xE2\x96\x81" "c", 5, 0, ids, 8, &n), MCL_SUCCESS);
    assert_int_equal(mcl_tokenizer_decode(t, ids, n, back, sizeof back, NULL), MCL_SUCCESS);
    assert_string_equal(back, "c c");
    mcl_tokenizer_free(t);

    /* Without byte tokens: one unknown token per character that has no piece. */
    spm_base(&v, 0);
    spm_pieces(&v, -1, -2);
    t = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 0, 0, 0);
    assert_true(ENC(t, "a\xC3\xA9\xC3\xA9" "b", 0, "a", "<unk>", "<unk>", "b"));
    char text[8];
    size_t needed = 0;
    assert_int_equal(mcl_tokenizer_encode(t, "a\xC3\xA9", 3, 0, ids, 4, &n), MCL_SUCCESS);
    assert_int_equal(mcl_tokenizer_decode(t, ids, n, text, sizeof text, &needed), MCL_SUCCESS);
    assert_string_equal(text, "a"); /* the unknown token gives no text */
    mcl_tokenizer_free(t);
}

static void spm_special_tokens_bos_eos(void **state)
{
    (void)state;
    vocab v;
    spm_base(&v, 1);
    spm_pieces(&v, -1, -2);
    mcl_tokenizer *t = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 1, 1, 0);
    const uint32_t parse = MCL_TOKENIZE_PARSE_SPECIAL;
    /* Parsed: the control token, and a space prefix after it. */
    assert_true(ENC(t, "a<s>b", parse, "\xE2\x96\x81" "a", "<s>", "\xE2\x96\x81" "b"));
    assert_true(ENC(t, "<s>", parse, "<s>"));
    assert_true(ENC(t, "<unk>", parse, "<unk>"));
    /* Not parsed: plain text (bytes here). */
    assert_true(ENC(t, "<s>", 0, "\xE2\x96\x81", "<0x3C>", "<0x73>", "<0x3E>"));
    /* User-defined tokens are matched either way, the longest first. */
    assert_true(ENC(t, "a<tool>", 0, "\xE2\x96\x81" "a", "<tool>"));
    assert_true(ENC(t, "a<tool>", parse, "\xE2\x96\x81" "a", "<tool>"));
    assert_true(ENC(t, "<tob", 0, "<to", "\xE2\x96\x81" "b"));
    /* BOS and EOS where the vocabulary asks for them. */
    assert_true(ENC(t, "a", MCL_TOKENIZE_ADD_BOS, "<s>", "\xE2\x96\x81" "a"));
    assert_true(ENC(t, "a", MCL_TOKENIZE_ADD_BOS | MCL_TOKENIZE_ADD_EOS, "<s>",
                    "\xE2\x96\x81" "a", "</s>"));
    assert_true(ENC(t, "", MCL_TOKENIZE_ADD_BOS, "<s>"));
    mcl_tokenizer_free(t);
    t = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 1, 0, 0); /* add_bos_token false */
    assert_int_equal(mcl_tokenizer_add_bos(t), 0);
    assert_true(ENC(t, "a", MCL_TOKENIZE_ADD_BOS, "\xE2\x96\x81" "a"));
    mcl_tokenizer_free(t);
}

static void decode_rules(void **state)
{
    (void)state;
    vocab v;
    spm_base(&v, 1);
    spm_pieces(&v, -1, -2);
    mcl_tokenizer *t = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 1, 1, 0);
    int32_t ids[8];
    uint32_t n = 0;
    assert_int_equal(mcl_tokenizer_encode(t, "a b", 3, MCL_TOKENIZE_ADD_BOS | MCL_TOKENIZE_ADD_EOS,
                                          ids, 8, &n),
                     MCL_SUCCESS);
    assert_int_equal(n, 4);
    char buf[16];
    size_t needed = 0;
    assert_int_equal(mcl_tokenizer_decode(t, ids, n, buf, sizeof buf, &needed), MCL_SUCCESS);
    assert_string_equal(buf, "a b"); /* BOS/EOS give nothing; the prefix space goes */
    assert_int_equal(needed, 4);
    /* Cut: snprintf-style. */
    assert_int_equal(mcl_tokenizer_decode(t, ids, n, buf, 2, &needed), MCL_ERROR_TOO_LARGE);
    assert_string_equal(buf, "a");
    assert_int_equal(needed, 4);
    assert_int_equal(mcl_tokenizer_decode(t, ids, n, NULL, 0, &needed), MCL_ERROR_TOO_LARGE);
    assert_int_equal(needed, 4);
    /* Byte tokens give their bytes; user-defined tokens their text. */
    int32_t bytes[3] = {3 + 0xC3, 3 + 0xA9, 0};
    size_t plen;
    const char *p = mcl_tokenizer_piece(t, 3 + 0xC3, &plen);
    assert_string_equal(p, "<0xC3>");
    assert_int_equal(mcl_tokenizer_decode(t, bytes, 2, buf, sizeof buf, NULL), MCL_SUCCESS);
    assert_string_equal(buf, "\xC3\xA9");
    /* Out of range ids are refused. */
    int32_t bad[2] = {5, (int32_t)mcl_tokenizer_vocab_size(t)};
    assert_int_equal(mcl_tokenizer_decode(t, bad, 2, buf, sizeof buf, NULL),
                     MCL_ERROR_INVALID_ARGUMENT);
    bad[1] = -1;
    assert_int_equal(mcl_tokenizer_decode(t, bad, 2, buf, sizeof buf, NULL),
                     MCL_ERROR_INVALID_ARGUMENT);
    /* Count query and a short id buffer. */
    assert_int_equal(mcl_tokenizer_encode(t, "a b a", 5, 0, NULL, 0, &n), MCL_ERROR_TOO_LARGE);
    assert_int_equal(n, 3);
    int32_t two[2] = {-7, -7};
    assert_int_equal(mcl_tokenizer_encode(t, "a b a", 5, 0, two, 1, &n), MCL_ERROR_TOO_LARGE);
    assert_int_equal(n, 3);
    assert_int_equal(two[1], -7); /* nothing written past the capacity */
    assert_int_equal(mcl_tokenizer_encode(t, NULL, 1, 0, two, 2, &n),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tokenizer_encode(t, "a", 1, 0, NULL, 2, &n),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_string_equal(mcl_tokenizer_model(t), "llama");
    assert_int_equal(mcl_tokenizer_bos(t), 1);
    assert_int_equal(mcl_tokenizer_eos(t), 2);
    assert_int_equal(mcl_tokenizer_unk(t), 0);
    assert_int_equal(mcl_tokenizer_pad(t), -1);
    assert_int_equal(mcl_tokenizer_token_type(t, 1), MCL_TOKEN_CONTROL);
    assert_int_equal(mcl_tokenizer_token_type(t, -1), 0);
    assert_null(mcl_tokenizer_piece(t, 100000, NULL));
    mcl_tokenizer_free(t);
    mcl_tokenizer_free(NULL);
}

/* --- Byte-level BPE ------------------------------------------------------------------------- */

static void bpe_merges_by_rank(void **state)
{
    (void)state;
    vocab v;
    const char *pieces[] = {"ab", "bc", "aa", NULL};
    bpe_vocab(&v, pieces, (const char *const[]){"a b", "b c", "a a", NULL});
    mcl_tokenizer *ab_first = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_GPT2, 0, 0, 0);
    bpe_vocab(&v, pieces, (const char *const[]){"b c", "a b", "a a", NULL});
    mcl_tokenizer *bc_first = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_GPT2, 0, 0, 0);
    assert_true(ENC(ab_first, "abc", 0, "ab", "c"));
    assert_true(ENC(bc_first, "abc", 0, "a", "bc"));
    NEGATIVE(ENC(ab_first, "abc", 0, "a", "bc"));
    assert_true(ENC(ab_first, "aaa", 0, "aa", "a"));    /* equal ranks: the leftmost */
    mcl_tokenizer_free(ab_first);
    mcl_tokenizer_free(bc_first);

    /* Merges never cross a pre-token: gpt-2 splits "!a" in two, llama-3 keeps it whole
     * ([^\r\n\p{L}\p{N}]?\p{L}+), so the merge "! a" applies only there. */
    const char *pieces2[] = {"!a", NULL};
    bpe_vocab(&v, pieces2, (const char *const[]){"! a", NULL});
    mcl_tokenizer *t = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_GPT2, 0, 0, 0);
    assert_true(ENC(t, "!a", 0, "!", "a"));
    mcl_tokenizer_free(t);
    t = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_LLAMA3, 0, 0, 0);
    assert_true(ENC(t, "!a", 0, "!a"));
    mcl_tokenizer_free(t);
}

static void bpe_words_and_bytes(void **state)
{
    (void)state;
    /* Merges written in GPT-2's alphabet directly: Ġ is the space. */
    vocab v;
    memset(&v, 0, sizeof v);
    const char *pieces[] = {" w", "or", " wor", "ld", " world", "he", "ll", "hell", "hello",
                            NULL};
    bpe_vocab(&v, pieces, NULL);
    static const char *merges[] = {"\xC4\xA0 w", "o r", "\xC4\xA0w or", "l d",
                                   "\xC4\xA0wor ld", "h e", "l l", "he ll", "hell o"};
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++)
        v.merges[v.n_merges++] = merges[i];
    mcl_tokenizer *t = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_GPT2, 0, 0, 0);
    char g[40];
    assert_true(ENC(t, "hello world", 0, "hello", g2(" world", g)));
    assert_true(ENC(t, "hello  world", 0, "hello", g2(" ", g), "\xC4\xA0world"));
    assert_true(ENC(t, "helloworld", 0, "hello", "w", "or", "ld"));
    assert_true(ENC(t, "hell\xC3\xA9", 0, "hell", "\xC3\x83", "\xC2\xA9"));
    /* Every byte string round-trips, invalid UTF-8 included. */
    char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (char)(255 - i);
    assert_true(round_trips(t, all, sizeof all, 0));
    const char *texts[] = {"hello world", " \n\n x", ("a\xFF\xFE" "b"), "\xF0\x9F\xA6\x99!!",
                           "it's 12345", "\t\t \r\n"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        assert_true(round_trips(t, texts[i], strlen(texts[i]), 0));
    mcl_tokenizer_free(t);
}

static void bpe_ignore_merges_and_specials(void **state)
{
    (void)state;
    vocab v;
    const char *pieces[] = {"abc", NULL};
    bpe_vocab(&v, pieces, NULL);
    int32_t eot = add_token(&v, "<|endoftext|>", MCL_TOKEN_CONTROL, 0);
    mcl_tokenizer *plain = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_LLAMA3, 0, 0, 0);
    mcl_tokenizer *whole = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_LLAMA3, 0, 0, 1);
    assert_true(ENC(plain, "abc", 0, "a", "b", "c"));
    assert_true(ENC(whole, "abc", 0, "abc")); /* a word that is a token: taken as is */
    assert_true(ENC(whole, "x<|endoftext|>y", MCL_TOKENIZE_PARSE_SPECIAL, "x", "<|endoftext|>",
                    "y"));
    assert_true(ENC(whole, "<|endoftext|>", 0, "<", "|", "e", "n", "d", "o", "f", "t", "e", "x",
                    "t", "|", ">"));
    int32_t ids[2] = {eot, 'a'};
    char buf[8];
    assert_int_equal(mcl_tokenizer_decode(whole, ids, 2, buf, sizeof buf, NULL), MCL_SUCCESS);
    assert_string_equal(buf, "a"); /* control tokens give no text */
    assert_string_equal(mcl_tokenizer_model(whole), "gpt2");
    mcl_tokenizer_free(plain);
    mcl_tokenizer_free(whole);
}

static void bad_descriptions_are_refused(void **state)
{
    (void)state;
    vocab v;
    spm_base(&v, 0);
    mcl_vocab_desc d = {0};
    d.kind = MCL_VOCAB_SPM;
    d.n_tokens = v.n;
    d.tokens = v.tokens;
    d.types = v.types;
    d.bos = d.eos = d.unk = d.pad = -1;
    mcl_tokenizer *t = NULL;
    char why[128];
    assert_int_equal(mcl_tokenizer_create(&d, &t, why, sizeof why), MCL_SUCCESS); /* control */
    mcl_tokenizer_free(t);
    d.bos = (int32_t)v.n;
    assert_int_equal(mcl_tokenizer_create(&d, &t, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "BOS"));
    assert_null(t);
    d.bos = -1;
    v.tokens[2] = "<s>"; /* a piece given twice */
    assert_int_equal(mcl_tokenizer_create(&d, &t, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "same text"));
    v.tokens[2] = "</s>";
    v.types[1] = 9;
    assert_int_equal(mcl_tokenizer_create(&d, &t, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    v.types[1] = MCL_TOKEN_CONTROL;
    d.kind = MCL_VOCAB_BPE;
    d.pre = MCL_PRETOK_NONE;
    assert_int_equal(mcl_tokenizer_create(&d, &t, why, sizeof why), MCL_ERROR_UNSUPPORTED);
    d.pre = MCL_PRETOK_GPT2;
    const char *merges[] = {"ab"};
    d.n_merges = 1;
    d.merges = merges;
    assert_int_equal(mcl_tokenizer_create(&d, &t, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "merge 0"));
    assert_int_equal(mcl_tokenizer_create(NULL, &t, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
}

/* A megabyte of mixed text through both encoders: it finishes and round-trips (no timing
 * here: a test asserts results, not speed). */
static void one_megabyte(void **state)
{
    (void)state;
    const char *unit = "Hello, y'all! 12345 \xF0\x9F\xA6\x99 \xD0\xBC\xD0\xB8\xD1\x80  abc\n\t"
                       "aaaa bbb\xC3\xA9\xFF ";
    size_t ulen = strlen(unit), len = 1u << 20;
    char *text = malloc(len);
    assert_non_null(text);
    for (size_t i = 0; i < len; i++)
        text[i] = unit[i % ulen];
    vocab v;
    spm_base(&v, 1);
    spm_pieces(&v, -1, -2);
    mcl_tokenizer *spm = make(&v, MCL_VOCAB_SPM, MCL_PRETOK_NONE, 1, 1, 0);
    assert_true(round_trips(spm, text, len, 0));
    mcl_tokenizer_free(spm);
    const char *pieces[] = {"ab", "bc", "aa", NULL};
    bpe_vocab(&v, pieces, (const char *const[]){"a b", "b c", "a a", NULL});
    for (int pre = MCL_PRETOK_GPT2; pre <= MCL_PRETOK_QWEN2; pre++) {
        mcl_tokenizer *bpe = make(&v, MCL_VOCAB_BPE, (mcl_pretok)pre, 0, 0, 0);
        assert_true(round_trips(bpe, text, len, 0));
        mcl_tokenizer_free(bpe);
    }
    /* One word of a megabyte: the merge queue, not a quadratic scan. */
    memset(text, 'a', len);
    mcl_tokenizer *bpe = make(&v, MCL_VOCAB_BPE, MCL_PRETOK_GPT2, 0, 0, 0);
    uint32_t n = 0;
    assert_int_equal(mcl_tokenizer_encode(bpe, text, len, 0, NULL, 0, &n), MCL_ERROR_TOO_LARGE);
    assert_int_equal(n, len / 2);
    mcl_tokenizer_free(bpe);
    free(text);
}

/* --- The real vocabularies and their reference vectors ------------------------------------- */

/* The separator of the .inp files (tests/data/vocab/README.md). */
#define CASE_SEPARATOR "\n__ggml_vocab_test__\n"

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* The tokenizer of a GGUF file under tests/data/vocab, its file closed again. */
static mcl_tokenizer *load_vocab(const char *name)
{
    char path[512], why[256];
    snprintf(path, sizeof path, "%s/vocab/%s", MCL_TEST_DATA_DIR, name);
    mcl_mapped m = {0};
    mcl_gguf *g = NULL;
    mcl_tokenizer *t = NULL;
    if (mcl_mapped_open(path, &m, why, sizeof why) != MCL_SUCCESS)
        fail_msg("%s: %s", path, why);
    if (mcl_gguf_parse(m.data, m.size, &g, why, sizeof why) != MCL_SUCCESS)
        fail_msg("%s: %s", path, why);
    mcl_status s = mcl_tokenizer_from_gguf(g, &t, why, sizeof why);
    mcl_gguf_free(g);
    mcl_mapped_close(&m); /* the tokenizer keeps its own copy */
    if (s != MCL_SUCCESS)
        fail_msg("%s: %s: %s", name, mcl_status_string(s), why);
    return t;
}

/* Set around a negative control whose failing cases are expected: they are counted, not
 * printed. */
static int vectors_quiet;

typedef struct vector_result {
    int cases;      /* cases checked */
    int id_errors;  /* cases whose ids differ from the reference */
    int round_trip; /* cases whose decode is not the text */
} vector_result;

/* Every case of <name>.inp against <name>.out: the ids (no BOS, flags 0) and the round trip.
 * `corrupt` >= 0 adds 1 to the first expected id of that case (the negative control). */
static vector_result check_vectors(const mcl_tokenizer *t, const char *name, int corrupt)
{
    char path[512];
    size_t inp_len, out_len;
    snprintf(path, sizeof path, "%s/vocab/%s.inp", MCL_TEST_DATA_DIR, name);
    char *inp = read_all(path, &inp_len);
    snprintf(path, sizeof path, "%s/vocab/%s.out", MCL_TEST_DATA_DIR, name);
    char *out = read_all(path, &out_len);
    vector_result r = {0, 0, 0};
    const size_t sep_len = strlen(CASE_SEPARATOR);
    char *text = inp, *line = out;
    int32_t *ids = malloc(65536 * sizeof *ids);
    char *back = malloc(inp_len + 1);
    assert_true(ids && back);
    for (;;) {
        char *end = strstr(text, CASE_SEPARATOR);
        if (!end)
            break; /* the file ends with a separator: nothing follows the last one */
        char *eol = strchr(line, '\n');
        assert_non_null(eol);
        *eol = '\0';
        size_t len = (size_t)(end - text);
        uint32_t n = 0;
        assert_int_equal(mcl_tokenizer_encode(t, text, len, 0, ids, 65536, &n), MCL_SUCCESS);
        int same = 1;
        uint32_t k = 0;
        for (char *p = line, *q; ; p = q, k++) {
            long want = strtol(p, &q, 10);
            if (q == p)
                break;
            if (k == 0 && r.cases == corrupt)
                want++;
            same = same && k < n && ids[k] == want;
        }
        same = same && k == n;
        if (!same) {
            r.id_errors++;
            if (r.cases != corrupt && !vectors_quiet) {
                printf("  %s case %d '%.*s': got", name, r.cases, (int)(len > 60 ? 60 : len),
                       text);
                for (uint32_t i = 0; i < n; i++)
                    printf(" %d", ids[i]);
                printf(", expected%s\n", line);
            }
        }
        size_t needed = 0;
        mcl_status s = mcl_tokenizer_decode(t, ids, n, back, inp_len + 1, &needed);
        if (s != MCL_SUCCESS || needed != len + 1 || memcmp(back, text, len) != 0) {
            r.round_trip++;
            printf("  %s case %d does not round-trip\n", name, r.cases);
        }
        r.cases++;
        text = end + sep_len;
        line = eol + 1;
    }
    free(ids);
    free(back);
    free(inp);
    free(out);
    return r;
}

static void real_llama_spm(void **state)
{
    (void)state;
    const char *name = "ggml-vocab-llama-spm.gguf";
    mcl_tokenizer *t = load_vocab(name);
    assert_string_equal(mcl_tokenizer_model(t), "llama");
    assert_string_equal(mcl_tokenizer_pre(t), "");
    assert_int_equal(mcl_tokenizer_vocab_size(t), 32000);
    assert_int_equal(mcl_tokenizer_bos(t), 1);
    assert_int_equal(mcl_tokenizer_eos(t), 2);
    assert_int_equal(mcl_tokenizer_unk(t), 0);
    assert_int_equal(mcl_tokenizer_pad(t), -1);
    assert_int_equal(mcl_tokenizer_add_bos(t), 1);
    assert_int_equal(mcl_tokenizer_add_space_prefix(t), 1); /* absent: llama.cpp's default */
    vector_result r = check_vectors(t, name, -1);
    printf("  %s: %d cases, %d with other ids, %d not round-tripping\n", name, r.cases,
           r.id_errors, r.round_trip);
    assert_int_equal(r.cases, 46);
    assert_int_equal(r.id_errors, 0);
    assert_int_equal(r.round_trip, 0);
    /* Negative control: one wrong expected id is one failing case. */
    r = check_vectors(t, name, 11);
    assert_int_equal(r.id_errors, 1);
    /* BOS and special text on the real vocabulary. */
    int32_t ids[8];
    uint32_t n = 0;
    assert_int_equal(mcl_tokenizer_encode(t, "Hello</s>", 9,
                                          MCL_TOKENIZE_ADD_BOS | MCL_TOKENIZE_PARSE_SPECIAL, ids,
                                          8, &n),
                     MCL_SUCCESS);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 15043); /* ▁Hello, as in the vectors */
    assert_int_equal(ids[2], 2);
    mcl_tokenizer_free(t);
}

static void real_gpt2(void **state)
{
    (void)state;
    const char *name = "ggml-vocab-gpt-2.gguf";
    mcl_tokenizer *t = load_vocab(name);
    assert_string_equal(mcl_tokenizer_model(t), "gpt2");
    assert_string_equal(mcl_tokenizer_pre(t), "gpt-2");
    assert_int_equal(mcl_tokenizer_vocab_size(t), 50257);
    assert_int_equal(mcl_tokenizer_bos(t), 50256);
    assert_int_equal(mcl_tokenizer_eos(t), 50256);
    assert_int_equal(mcl_tokenizer_unk(t), -1);
    assert_int_equal(mcl_tokenizer_add_bos(t), 0); /* absent: false for gpt2 */
    assert_int_equal(mcl_tokenizer_add_space_prefix(t), 0);
    vector_result r = check_vectors(t, name, -1);
    printf("  %s: %d cases, %d with other ids, %d not round-tripping\n", name, r.cases,
           r.id_errors, r.round_trip);
    assert_int_equal(r.cases, 46);
    assert_int_equal(r.id_errors, 0);
    assert_int_equal(r.round_trip, 0);
    r = check_vectors(t, name, 0);
    assert_int_equal(r.id_errors, 1);
    int32_t ids[8];
    uint32_t n = 0;
    assert_int_equal(mcl_tokenizer_encode(t, "Hello<|endoftext|>", 18,
                                          MCL_TOKENIZE_PARSE_SPECIAL, ids, 8, &n),
                     MCL_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 15496);
    assert_int_equal(ids[1], 50256);
    mcl_tokenizer_free(t);
}

/* --- GGUF keys ------------------------------------------------------------------------------ */

/* A small vocabulary file; NULL strings and negative values leave a key out. */
typedef struct tiny_file {
    const char *model, *pre;
    int tokens;       /* write tokenizer.ggml.tokens */
    int short_scores; /* scores one shorter than the tokens */
    int float_types;  /* token_type as float32 */
    int merges;       /* BPE: write the merges */
    int64_t bos;
    int add_bos, add_space_prefix;
} tiny_file;

static mcl_status tiny_tokenizer(const tiny_file *o, mcl_tokenizer **t, char *why,
                                 size_t why_size)
{
    mcl_gguf_writer *w = mcl_gguf_writer_create(3, 32);
    assert_non_null(w);
    int spm = o->model && strcmp(o->model, "llama") == 0;
    static const char *const spm_tokens[] = {"<unk>", "<s>", "</s>", "a", ("\xE2\x96\x81" "a")};
    static const char *const bpe_tokens[] = {"a", "b", "c", "ab", "abc", "<|endoftext|>"};
    static const float scores[] = {0, 0, 0, -2, -1, 0};
    static const int32_t spm_types[] = {2, 3, 3, 1, 1};
    static const int32_t bpe_types[] = {1, 1, 1, 1, 1, 3};
    static const float float_types[] = {1, 1, 1, 1, 1, 1};
    static const char *const merges[] = {"a b"};
    uint64_t n = spm ? 5 : 6;
    if (o->model)
        assert_mcl_ok(mcl_gguf_writer_add(w, "tokenizer.ggml.model", MCL_GGUF_STRING, o->model));
    if (o->pre)
        assert_mcl_ok(mcl_gguf_writer_add(w, "tokenizer.ggml.pre", MCL_GGUF_STRING, o->pre));
    if (o->tokens)
        assert_mcl_ok(mcl_gguf_writer_add_array(w, "tokenizer.ggml.tokens", MCL_GGUF_STRING, n,
                                                spm ? spm_tokens : bpe_tokens));
    assert_mcl_ok(mcl_gguf_writer_add_array(w, "tokenizer.ggml.scores", MCL_GGUF_FLOAT32,
                                            n - (o->short_scores ? 1 : 0), scores));
    if (o->float_types)
        assert_mcl_ok(mcl_gguf_writer_add_array(w, "tokenizer.ggml.token_type",
                                                MCL_GGUF_FLOAT32, n, float_types));
    else
        assert_mcl_ok(mcl_gguf_writer_add_array(w, "tokenizer.ggml.token_type", MCL_GGUF_INT32,
                                                n, spm ? spm_types : bpe_types));
    if (o->merges)
        assert_mcl_ok(mcl_gguf_writer_add_array(w, "tokenizer.ggml.merges", MCL_GGUF_STRING, 1,
                                                merges));
    if (o->bos >= 0) {
        uint32_t bos = (uint32_t)o->bos;
        assert_mcl_ok(mcl_gguf_writer_add(w, "tokenizer.ggml.bos_token_id", MCL_GGUF_UINT32,
                                          &bos));
    }
    uint8_t flag;
    if (o->add_bos >= 0) {
        flag = (uint8_t)o->add_bos;
        assert_mcl_ok(mcl_gguf_writer_add(w, "tokenizer.ggml.add_bos_token", MCL_GGUF_BOOL,
                                          &flag));
    }
    if (o->add_space_prefix >= 0) {
        flag = (uint8_t)o->add_space_prefix;
        assert_mcl_ok(mcl_gguf_writer_add(w, "tokenizer.ggml.add_space_prefix", MCL_GGUF_BOOL,
                                          &flag));
    }
    void *bytes = NULL;
    uint64_t size = 0;
    assert_mcl_ok(mcl_gguf_writer_finish(w, &bytes, &size));
    mcl_gguf_writer_destroy(w);
    mcl_gguf *g = NULL;
    assert_mcl_ok(mcl_gguf_parse(bytes, size, &g, why, why_size));
    mcl_status s = mcl_tokenizer_from_gguf(g, t, why, why_size);
    mcl_gguf_free(g);
    free(bytes);
    return s;
}

static tiny_file tiny(const char *model, const char *pre)
{
    tiny_file o = {model, pre, 1, 0, 0, 1, -1, -1, -1};
    return o;
}

/* Whether making a tokenizer from the file fails with `want` and `word` in the message. */
static int refused(tiny_file o, mcl_status want, const char *word)
{
    mcl_tokenizer *t = NULL;
    char why[256] = "";
    mcl_status s = tiny_tokenizer(&o, &t, why, sizeof why);
    int ok = s == want && t == NULL && strstr(why, word) != NULL;
    if (!ok)
        printf("%s%s / %s: %s '%s', expected %s naming '%s'\n", report_prefix,
               o.model ? o.model : "-", o.pre ? o.pre : "-", mcl_status_string(s), why,
               mcl_status_string(want), word);
    mcl_tokenizer_free(t);
    return ok;
}

static void gguf_keys(void **state)
{
    (void)state;
    char why[256];
    mcl_tokenizer *t = NULL;
    /* Models and pre-tokenizers refused by name. */
    assert_true(refused(tiny("bert", NULL), MCL_ERROR_UNSUPPORTED, "'bert'"));
    assert_true(refused(tiny("t5", NULL), MCL_ERROR_UNSUPPORTED, "'t5'"));
    assert_true(refused(tiny("rwkv", NULL), MCL_ERROR_UNSUPPORTED, "'rwkv'"));
    assert_true(refused(tiny(NULL, NULL), MCL_ERROR_INVALID_ARGUMENT, "tokenizer.ggml.model"));
    assert_true(refused(tiny("gpt2", NULL), MCL_ERROR_UNSUPPORTED, "tokenizer.ggml.pre"));
    assert_true(refused(tiny("gpt2", "default"), MCL_ERROR_UNSUPPORTED, "'default'"));
    assert_true(refused(tiny("gpt2", "falcon"), MCL_ERROR_UNSUPPORTED, "'falcon'"));
    /* Malformed keys. */
    tiny_file o = tiny("gpt2", "gpt-2");
    o.merges = 0;
    assert_true(refused(o, MCL_ERROR_INVALID_ARGUMENT, "tokenizer.ggml.merges"));
    o = tiny("gpt2", "gpt-2");
    o.tokens = 0;
    assert_true(refused(o, MCL_ERROR_INVALID_ARGUMENT, "tokenizer.ggml.tokens"));
    o = tiny("llama", NULL);
    o.short_scores = 1;
    assert_true(refused(o, MCL_ERROR_INVALID_ARGUMENT, "tokenizer.ggml.scores"));
    o = tiny("llama", NULL);
    o.float_types = 1;
    assert_true(refused(o, MCL_ERROR_INVALID_ARGUMENT, "tokenizer.ggml.token_type"));
    o = tiny("llama", NULL);
    o.bos = 5;
    assert_true(refused(o, MCL_ERROR_INVALID_ARGUMENT, "bos_token_id"));
    o = tiny("gpt2", "qwen2");
    o.add_bos = 1; /* and no BOS id */
    assert_true(refused(o, MCL_ERROR_INVALID_ARGUMENT, "add_bos_token"));
    /* Negative control: the refusal check does fail on a file that loads. */
    NEGATIVE(refused(tiny("gpt2", "gpt-2"), MCL_ERROR_UNSUPPORTED, "gpt-2"));

    /* llama-bpe: llama.cpp's defaults (BOS added, whole-token words skip the merges). */
    o = tiny("gpt2", "llama-bpe");
    o.bos = 5;
    assert_mcl_ok(tiny_tokenizer(&o, &t, why, sizeof why));
    assert_string_equal(mcl_tokenizer_pre(t), "llama-bpe");
    assert_int_equal(mcl_tokenizer_add_bos(t), 1);
    assert_true(ENC(t, "abc", MCL_TOKENIZE_ADD_BOS, "<|endoftext|>", "abc"));
    mcl_tokenizer_free(t);
    o.add_bos = 0; /* the key wins over the default */
    assert_mcl_ok(tiny_tokenizer(&o, &t, why, sizeof why));
    assert_true(ENC(t, "abc", MCL_TOKENIZE_ADD_BOS, "abc"));
    mcl_tokenizer_free(t);
    /* qwen2: no BOS by default, merges applied. */
    o = tiny("gpt2", "qwen2");
    o.bos = 5;
    assert_mcl_ok(tiny_tokenizer(&o, &t, why, sizeof why));
    assert_true(ENC(t, "abc", MCL_TOKENIZE_ADD_BOS, "ab", "c"));
    mcl_tokenizer_free(t);
    /* llama: a space prefix unless add_space_prefix says no. */
    o = tiny("llama", "default");
    assert_mcl_ok(tiny_tokenizer(&o, &t, why, sizeof why));
    assert_true(ENC(t, "a", 0, "\xE2\x96\x81" "a"));
    mcl_tokenizer_free(t);
    o.add_space_prefix = 0;
    assert_mcl_ok(tiny_tokenizer(&o, &t, why, sizeof why));
    assert_int_equal(mcl_tokenizer_add_space_prefix(t), 0);
    assert_true(ENC(t, "a", 0, "a"));
    mcl_tokenizer_free(t);
    assert_int_equal(mcl_tokenizer_from_gguf(NULL, &t, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
}

/* --- Hugging Face tokenizer files ----------------------------------------------------------- */

#define GPT2_VOCAB "ggml-vocab-gpt-2.gguf"
#define LLAMA_VOCAB "ggml-vocab-llama-spm.gguf"

/* A GGUF vocabulary of tests/data/vocab kept open (its arrays are views into the file). */
typedef struct vocab_file {
    mcl_mapped map;
    mcl_gguf *g;
} vocab_file;

static void vocab_open(vocab_file *f, const char *name)
{
    char path[512], why[256];
    snprintf(path, sizeof path, "%s/vocab/%s", MCL_TEST_DATA_DIR, name);
    memset(f, 0, sizeof *f);
    if (mcl_mapped_open(path, &f->map, why, sizeof why) != MCL_SUCCESS ||
        mcl_gguf_parse(f->map.data, f->map.size, &f->g, why, sizeof why) != MCL_SUCCESS)
        fail_msg("%s: %s", path, why);
}

static void vocab_close(vocab_file *f)
{
    mcl_gguf_free(f->g);
    mcl_mapped_close(&f->map);
}

/* A tokenizer from the bytes of a tokenizer.json (json) or tokenizer.model, read from a copy
 * of exactly their size (so that AddressSanitizer sees a read past the end): the status, *t
 * the tokenizer or NULL. */
static mcl_status read_hf(const char *bytes, size_t len, int json, mcl_tokenizer **t,
                          char *why, size_t why_size)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, bytes, len);
    mcl_status s = json ? mcl_tokenizer_from_hf_json(copy, len, t, why, why_size)
                        : mcl_tokenizer_from_spm_model((const unsigned char *)copy, len, t, why,
                                                       why_size);
    free(copy);
    return s;
}

/* The tokenizer of a written file; the test fails if it is refused. The buffer is freed. */
static mcl_tokenizer *made_from(tf_buffer *b, int json)
{
    mcl_tokenizer *t = NULL;
    char why[256] = "";
    mcl_status s = read_hf(b->data, b->len, json, &t, why, sizeof why);
    free(b->data);
    memset(b, 0, sizeof *b);
    if (s != MCL_SUCCESS)
        fail_msg("%s refused: %s: %s", json ? "tokenizer.json" : "tokenizer.model",
                 mcl_status_string(s), why);
    return t;
}

static tf_json_options json_options(tf_pre pre)
{
    tf_json_options o = {pre, 0, -1, 0, -1};
    return o;
}

static mcl_tokenizer *json_tokenizer(const mcl_gguf *g, const tf_json_options *o)
{
    tf_buffer b = {0};
    tf_tokenizer_json(g, o, &b);
    return made_from(&b, 1);
}

static mcl_tokenizer *model_tokenizer(const mcl_gguf *g, const tf_spm_options *o)
{
    tf_buffer b = {0};
    tf_tokenizer_model(g, o, &b);
    return made_from(&b, 0);
}

/* The cases of <name>.inp on which two tokenizers give different ids. */
static int cases_differing(const mcl_tokenizer *a, const mcl_tokenizer *b, const char *name)
{
    char path[512];
    size_t len;
    snprintf(path, sizeof path, "%s/vocab/%s.inp", MCL_TEST_DATA_DIR, name);
    char *inp = read_all(path, &len);
    int32_t *x = malloc(2 * 65536 * sizeof *x), *y = x + 65536;
    assert_non_null(x);
    int differing = 0, cases = 0;
    for (char *text = inp, *end; (end = strstr(text, CASE_SEPARATOR)) != NULL;
         text = end + strlen(CASE_SEPARATOR), cases++) {
        uint32_t nx = 0, ny = 0;
        assert_mcl_ok(mcl_tokenizer_encode(a, text, (size_t)(end - text), 0, x, 65536, &nx));
        assert_mcl_ok(mcl_tokenizer_encode(b, text, (size_t)(end - text), 0, y, 65536, &ny));
        differing += nx != ny || memcmp(x, y, nx * sizeof *x) != 0;
    }
    assert_int_equal(cases, 46);
    free(x);
    free(inp);
    return differing;
}

/* The GGUF's byte-level BPE vocabulary under another pre-tokenizer (mcl_tokenizer_create). */
static mcl_tokenizer *gguf_bpe_with(const mcl_gguf *g, mcl_pretok pre, int ignore_merges)
{
    const mcl_gguf_kv *tokens = mcl_gguf_find(g, "tokenizer.ggml.tokens");
    const mcl_gguf_kv *types = mcl_gguf_find(g, "tokenizer.ggml.token_type");
    const mcl_gguf_kv *merges = mcl_gguf_find(g, "tokenizer.ggml.merges");
    assert_true(tokens && types && merges);
    size_t n = (size_t)tokens->count, nm = (size_t)merges->count;
    const char **text = malloc(n * sizeof *text), **merge = malloc(nm * sizeof *merge);
    uint64_t *len = malloc(n * sizeof *len), *merge_len = malloc(nm * sizeof *merge_len);
    int32_t *type = malloc(n * sizeof *type);
    assert_true(text && merge && len && merge_len && type);
    for (size_t i = 0; i < n; i++) {
        mcl_gguf_str str;
        int64_t v = 0;
        assert_true(mcl_gguf_array_str(g, tokens, i, &str) && mcl_gguf_array_i64(types, i, &v));
        text[i] = str.data;
        len[i] = str.len;
        type[i] = (int32_t)v;
    }
    for (size_t r = 0; r < nm; r++) {
        mcl_gguf_str str;
        assert_true(mcl_gguf_array_str(g, merges, r, &str));
        merge[r] = str.data;
        merge_len[r] = str.len;
    }
    mcl_vocab_desc d = {.kind = MCL_VOCAB_BPE, .pre = pre, .pre_name = "reference",
                        .n_tokens = (uint32_t)n, .tokens = text, .token_lens = len,
                        .types = type, .n_merges = (uint32_t)nm, .merges = merge,
                        .merge_lens = merge_len, .bos = -1, .eos = -1, .unk = -1, .pad = -1,
                        .ignore_merges = ignore_merges};
    mcl_tokenizer *t = NULL;
    char why[256];
    if (mcl_tokenizer_create(&d, &t, why, sizeof why) != MCL_SUCCESS)
        fail_msg("reference tokenizer: %s", why);
    free(text);
    free(len);
    free(type);
    free(merge);
    free(merge_len);
    return t;
}

/* Every case of <name> gives exactly the reference ids through t and round-trips; `what`
 * names t in the printed line. */
static void expect_all_vectors(const mcl_tokenizer *t, const char *name, const char *what)
{
    vector_result r = check_vectors(t, name, -1);
    printf("  %s: %d cases, %d with other ids, %d not round-tripping\n", what, r.cases,
           r.id_errors, r.round_trip);
    assert_int_equal(r.cases, 46);
    assert_int_equal(r.id_errors, 0);
    assert_int_equal(r.round_trip, 0);
}

/* How many cases of <name> a negative control's tokenizer gets wrong (not printed one by
 * one), printed with what was changed. */
static int failing_cases(const mcl_tokenizer *t, const char *name, const char *change)
{
    vectors_quiet = 1;
    vector_result r = check_vectors(t, name, -1);
    vectors_quiet = 0;
    printf("  (negative control) %s: %d of %d cases with other ids\n", change, r.id_errors,
           r.cases);
    return r.id_errors;
}

/* GPT-2's vocabulary written as a tokenizer.json (merges as strings, then as pairs): every
 * reference case gives the reference ids and round-trips; one merge changed fails cases. */
static void hf_json_gpt2_vectors(void **state)
{
    (void)state;
    vocab_file f;
    vocab_open(&f, GPT2_VOCAB);
    tf_json_options o = json_options(TF_PRE_BYTE_LEVEL);
    for (int pairs = 0; pairs < 2; pairs++) {
        o.merges_as_pairs = pairs;
        mcl_tokenizer *t = json_tokenizer(f.g, &o);
        assert_string_equal(mcl_tokenizer_model(t), "gpt2");
        assert_string_equal(mcl_tokenizer_pre(t), "gpt-2");
        assert_int_equal(mcl_tokenizer_vocab_size(t), 50257);
        assert_int_equal(mcl_tokenizer_token_type(t, 50256), MCL_TOKEN_CONTROL);
        assert_int_equal(mcl_tokenizer_bos(t), -1); /* tokenizer.json names none */
        assert_int_equal(mcl_tokenizer_add_bos(t), 0);
        expect_all_vectors(t, GPT2_VOCAB, pairs ? "tokenizer.json, merges as pairs"
                                                 : "tokenizer.json, merges as strings");
        int32_t ids[8];
        uint32_t n = 0;
        assert_mcl_ok(mcl_tokenizer_encode(t, "Hello<|endoftext|>", 18,
                                           MCL_TOKENIZE_PARSE_SPECIAL, ids, 8, &n));
        assert_int_equal(n, 2);
        assert_int_equal(ids[0], 15496);
        assert_int_equal(ids[1], 50256);
        mcl_tokenizer_free(t);
    }
    /* Negative control: merge 0 ("Ġ t") written as "t Ġ". */
    o.changed_merge = 0;
    mcl_tokenizer *bad = json_tokenizer(f.g, &o);
    assert_true(failing_cases(bad, GPT2_VOCAB, "merge 0 changed") >= 1);
    mcl_tokenizer_free(bad);
    vocab_close(&f);
}

/* The pre-tokenizer found from the file: GPT-2's vocabulary written with llama 3's and with
 * Qwen2's Split gives, on every reference text, the ids of the same vocabulary made with that
 * pre-tokenizer directly; the two are told apart; a regex one character off is refused. */
static void hf_json_pre_tokenizers(void **state)
{
    (void)state;
    vocab_file f;
    vocab_open(&f, GPT2_VOCAB);
    const struct {
        tf_pre written;
        mcl_pretok pre;
        const char *name;
        int ignore_merges;
    } cases[] = {{TF_PRE_LLAMA3, MCL_PRETOK_LLAMA3, "llama-bpe", 1},
                 {TF_PRE_QWEN2, MCL_PRETOK_QWEN2, "qwen2", 0}};
    mcl_tokenizer *made[2], *reference[2];
    for (int k = 0; k < 2; k++) {
        tf_json_options o = json_options(cases[k].written);
        o.ignore_merges = cases[k].ignore_merges;
        o.bos = 50256; /* a TemplateProcessing "[<|endoftext|>] $A" */
        made[k] = json_tokenizer(f.g, &o);
        reference[k] = gguf_bpe_with(f.g, cases[k].pre, cases[k].ignore_merges);
        assert_string_equal(mcl_tokenizer_pre(made[k]), cases[k].name);
        assert_int_equal(mcl_tokenizer_bos(made[k]), 50256);
        assert_int_equal(mcl_tokenizer_add_bos(made[k]), 1);
        int differing = cases_differing(made[k], reference[k], GPT2_VOCAB);
        printf("  %s from tokenizer.json: %d of 46 cases differ from the direct one\n",
               cases[k].name, differing);
        assert_int_equal(differing, 0);
        int32_t ids[4];
        uint32_t n = 0;
        assert_mcl_ok(mcl_tokenizer_encode(made[k], "Hi", 2, MCL_TOKENIZE_ADD_BOS, ids, 4, &n));
        assert_true(n == 2 && ids[0] == 50256);
    }
    /* Negative control: llama 3's split is not Qwen2's (digits). */
    int differing = cases_differing(made[0], reference[1], GPT2_VOCAB);
    printf("  (negative control) llama-bpe against qwen2: %d cases differ\n", differing);
    assert_true(differing >= 1);
    for (int k = 0; k < 2; k++) {
        mcl_tokenizer_free(made[k]);
        mcl_tokenizer_free(reference[k]);
    }
    /* A regex one character off ("\s+" at the end as "\s*") is another pre-tokenizer. */
    tf_json_options o = json_options(TF_PRE_LLAMA3);
    tf_buffer b = {0};
    tf_tokenizer_json(f.g, &o, &b);
    char *end = strstr(b.data, "\\\\s+\"}");
    assert_non_null(end);
    end[3] = '*';
    mcl_tokenizer *t = NULL;
    char why[256];
    assert_int_equal(read_hf(b.data, b.len, 1, &t, why, sizeof why), MCL_ERROR_UNSUPPORTED);
    assert_non_null(strstr(why, "pre-tokenizer Split"));
    assert_null(t);
    free(b.data);
    vocab_close(&f);
}

/* LLaMA's vocabulary written as a tokenizer.model: every reference case exactly, the round
 * trip, the special ids; two pieces' scores exchanged fail cases. */
static void spm_model_llama_vectors(void **state)
{
    (void)state;
    vocab_file f;
    vocab_open(&f, LLAMA_VOCAB);
    tf_spm_options o = {-1, -1, 2, 1};
    mcl_tokenizer *t = model_tokenizer(f.g, &o);
    assert_string_equal(mcl_tokenizer_model(t), "llama");
    assert_string_equal(mcl_tokenizer_pre(t), "");
    assert_int_equal(mcl_tokenizer_vocab_size(t), 32000);
    assert_int_equal(mcl_tokenizer_bos(t), 1);
    assert_int_equal(mcl_tokenizer_eos(t), 2);
    assert_int_equal(mcl_tokenizer_unk(t), 0);
    assert_int_equal(mcl_tokenizer_pad(t), -1);
    assert_int_equal(mcl_tokenizer_add_bos(t), 1);
    assert_int_equal(mcl_tokenizer_add_space_prefix(t), 1);
    assert_int_equal(mcl_tokenizer_token_type(t, 3), MCL_TOKEN_BYTE);
    expect_all_vectors(t, LLAMA_VOCAB, "tokenizer.model");
    int32_t ids[8];
    uint32_t n = 0;
    assert_mcl_ok(mcl_tokenizer_encode(t, "Hello</s>", 9,
                                       MCL_TOKENIZE_ADD_BOS | MCL_TOKENIZE_PARSE_SPECIAL, ids, 8,
                                       &n));
    assert_int_equal(n, 3);
    assert_true(ids[0] == 1 && ids[1] == 15043 && ids[2] == 2);
    mcl_tokenizer_free(t);
    /* Negative control: the scores of "df" (2176, -1917) and "▁huge" (12176, -11917)
     * exchanged: "dsdfhu" of one case is then split otherwise. (Scores of pieces that do not
     * compete for the same characters change nothing: most exchanges are no control.) */
    o.swap_a = 2176;
    o.swap_b = 12176;
    t = model_tokenizer(f.g, &o);
    assert_true(failing_cases(t, LLAMA_VOCAB, "two scores exchanged") >= 1);
    mcl_tokenizer_free(t);
    vocab_close(&f);
}

/* A tokenizer.model that SentencePiece wrote (tests/data/vocab/README.md): its fields as
 * SentencePiece serializes them (the precompiled charsmap, every trainer option), and every
 * case tokenized as SentencePiece tokenized it. */
static void spm_model_written_by_sentencepiece(void **state)
{
    (void)state;
    const char *name = "spm-bpe-700.model";
    char path[512], why[256];
    snprintf(path, sizeof path, "%s/vocab/%s", MCL_TEST_DATA_DIR, name);
    size_t len = 0;
    char *bytes = read_all(path, &len);
    mcl_tokenizer *t = NULL;
    mcl_status s = read_hf(bytes, len, 0, &t, why, sizeof why);
    if (s != MCL_SUCCESS)
        fail_msg("%s: %s: %s", name, mcl_status_string(s), why);
    free(bytes);
    assert_int_equal(mcl_tokenizer_vocab_size(t), 700);
    assert_int_equal(mcl_tokenizer_unk(t), 0);
    assert_int_equal(mcl_tokenizer_bos(t), 1);
    assert_int_equal(mcl_tokenizer_eos(t), 2);
    assert_int_equal(mcl_tokenizer_pad(t), -1);
    assert_int_equal(mcl_tokenizer_add_space_prefix(t), 1);
    expect_all_vectors(t, name, name);
    vector_result r = check_vectors(t, name, 11); /* negative control: one wrong expected id */
    assert_int_equal(r.id_errors, 1);
    mcl_tokenizer_free(t);
}

/* A small tokenizer.model: pieces <unk>, <s>, </s>, a, ▁a (the last of type `last_type`),
 * then a trainer_spec (model_type, unk / bos / eos 0 / 1 / 2 unless bos_id is given, pad
 * -1) and a normalizer_spec. ends[] receives where each top-level field ends. */
static void small_model(tf_buffer *b, int model_type, int last_type, int64_t bos_id,
                        size_t ends[8], size_t *n_ends)
{
    static const char *const pieces[5] = {"<unk>", "<s>", "</s>", "a", ("\xE2\x96\x81" "a")};
    const int types[5] = {2, 3, 3, 1, last_type};
    *n_ends = 0;
    for (int i = 0; i < 5; i++) {
        tf_buffer p = {0};
        tf_pb_bytes(&p, 1, pieces[i], strlen(pieces[i]));
        tf_pb_fixed32(&p, 2, tf_float_bits(-(float)i));
        tf_pb_varint(&p, 3, (uint64_t)types[i]);
        tf_pb_bytes(b, 1, p.data, p.len);
        ends[(*n_ends)++] = b->len;
        free(p.data);
    }
    tf_buffer trainer = {0};
    tf_pb_varint(&trainer, 3, (uint64_t)model_type);
    tf_pb_varint(&trainer, 41, (uint64_t)bos_id);
    tf_pb_varint(&trainer, 43, (uint64_t)(int64_t)-1);
    tf_pb_bytes(b, 2, trainer.data, trainer.len);
    ends[(*n_ends)++] = b->len;
    free(trainer.data);
    tf_buffer normalizer = {0};
    tf_pb_varint(&normalizer, 3, 1);
    tf_pb_bytes(b, 3, normalizer.data, normalizer.len);
    ends[(*n_ends)++] = b->len;
    free(normalizer.data);
}

/* Whether reading bytes gives `want` with `word` in the message (and no tokenizer). */
static int hf_refused(const char *bytes, size_t len, int json, mcl_status want,
                      const char *word)
{
    mcl_tokenizer *t = NULL;
    char why[512] = "";
    mcl_status s = read_hf(bytes, len, json, &t, why, sizeof why);
    int ok = s == want && t == NULL && strstr(why, word) != NULL;
    if (!ok)
        printf("%s%s: %s '%s', expected %s naming '%s'\n", report_prefix,
               json ? "tokenizer.json" : "tokenizer.model", mcl_status_string(s), why,
               mcl_status_string(want), word);
    mcl_tokenizer_free(t);
    return ok;
}

/* Malformed and refused tokenizer.model files: every truncation of a small one (a cut inside
 * a field is malformed, a cut between top-level fields a shorter model, read or refused by
 * what it lacks), varints and lengths past the end, wire types, field values. */
static void spm_model_refusals(void **state)
{
    (void)state;
    tf_buffer b = {0};
    size_t ends[8], n_ends = 0;
    small_model(&b, 2, 1, 1, ends, &n_ends);
    mcl_tokenizer *t = NULL;
    char why[256];
    assert_mcl_ok(read_hf(b.data, b.len, 0, &t, why, sizeof why)); /* control */
    assert_true(ENC(t, "a", MCL_TOKENIZE_ADD_BOS, "<s>", "\xE2\x96\x81" "a"));
    mcl_tokenizer_free(t);
    int malformed = 0, boundary = 0;
    for (size_t len = 0; len < b.len; len++) {
        int at_boundary = len == 0;
        for (size_t k = 0; k < n_ends; k++)
            at_boundary |= ends[k] == len;
        t = NULL;
        mcl_status s = read_hf(b.data, len, 0, &t, why, sizeof why);
        if (at_boundary) {
            /* No pieces; pieces without a trainer_spec (Unigram, its default); no
             * normalizer_spec (its defaults). */
            boundary++;
            assert_true(s == (len == 0         ? MCL_ERROR_INVALID_ARGUMENT
                              : len < ends[5] ? MCL_ERROR_UNSUPPORTED
                                              : MCL_SUCCESS));
        } else {
            if (s != MCL_ERROR_INVALID_ARGUMENT || t || !why[0])
                fail_msg("truncated to %zu of %zu bytes: %s '%s'", len, b.len,
                         mcl_status_string(s), why);
            malformed++;
        }
        mcl_tokenizer_free(t);
    }
    printf("  %zu truncations: %d malformed, %d between fields\n", b.len, malformed, boundary);
    free(b.data);

    const uint32_t inv = MCL_ERROR_INVALID_ARGUMENT;
    /* A varint that runs past the end: an unterminated tag, an unterminated value. */
    assert_true(hf_refused("\x80", 1, 0, inv, "tag runs past the end"));
    assert_true(hf_refused("\x10\xFF\xFF", 3, 0, inv, "varint runs past the end"));
    /* Eleven bytes: past 64 bits. */
    assert_true(hf_refused("\x10\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x7F", 11, 0, inv,
                           "varint"));
    /* A length past the end, at the top and inside a piece. */
    assert_true(hf_refused("\x0A\x05" "ab", 4, 0, inv, "length runs past the end"));
    assert_true(hf_refused("\x0A\x04\x0A\x09" "ab", 6, 0, inv, "pieces[0]"));
    assert_true(hf_refused("\x0A\x06\x0A\x01" "a\x15" "ab", 8, 0, inv, "fixed-size value"));
    /* Groups and unknown wire types, field number 0. */
    assert_true(hf_refused("\x0B", 1, 0, inv, "group"));
    assert_true(hf_refused("\x0E", 1, 0, inv, "wire type is 6 or 7"));
    assert_true(hf_refused("\x02\x00", 2, 0, inv, "field number"));
    /* A known field of the wrong wire type: pieces as a varint. */
    assert_true(hf_refused("\x08\x01", 2, 0, inv, "pieces has wire type 0"));
    /* Values: Unigram, a piece type 7, BYTE pieces without byte_fallback, bos_id outside. */
    const struct {
        int model_type, last_type;
        int64_t bos;
        mcl_status want;
        const char *word;
    } values[] = {
        {1, 1, 1, MCL_ERROR_UNSUPPORTED, "model type Unigram"},
        {2, 7, 1, MCL_ERROR_INVALID_ARGUMENT, "pieces[4].type is 7"},
        {2, 6, 1, MCL_ERROR_UNSUPPORTED, "byte_fallback"},
        {2, 1, 5, MCL_ERROR_INVALID_ARGUMENT, "bos_id is 5"},
        {2, 1, -2, MCL_ERROR_INVALID_ARGUMENT, "bos_id is -2"},
        {9, 1, 1, MCL_ERROR_INVALID_ARGUMENT, "model_type is 9"},
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        tf_buffer v = {0};
        small_model(&v, values[i].model_type, values[i].last_type, values[i].bos, ends, &n_ends);
        assert_true(hf_refused(v.data, v.len, 0, values[i].want, values[i].word));
        free(v.data);
    }
    NEGATIVE(hf_refused("\x0A\x05" "ab", 4, 0, inv, "wire type"));
    assert_int_equal(mcl_tokenizer_from_spm_model(NULL, 0, &t, why, sizeof why), inv);
}

/* A small byte-level BPE tokenizer.json that the edits below break one way each. */
static const char tiny_json[] =
    "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 5, \"content\": \"<|end|>\", "
    "\"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
    "\"special\": true}],\n \"normalizer\": null,\n"
    " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
    "\"trim_offsets\": true, \"use_regex\": true},\n"
    " \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
    "\"trim_offsets\": false, \"use_regex\": true},\n"
    " \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": "
    "true, \"use_regex\": true},\n"
    " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
    "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": false, "
    "\"byte_fallback\": false, \"ignore_merges\": false,\n"
    "  \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"abc\": 4},\n"
    "  \"merges\": [\"a b\", \"ab c\"]}}";

/* tiny_json with the first `from` replaced by `to` (static storage, one at a time). */
static const char *edited(const char *from, const char *to)
{
    static char out[sizeof tiny_json + 1024];
    const char *at = strstr(tiny_json, from);
    assert_non_null(at);
    size_t head = (size_t)(at - tiny_json), from_len = strlen(from), to_len = strlen(to);
    assert_true(sizeof tiny_json - from_len + to_len < sizeof out);
    memcpy(out, tiny_json, head);
    memcpy(out + head, to, to_len);
    strcpy(out + head + to_len, at + from_len);
    return out;
}

#define JSON_REFUSED(from, to, status, word)                                                 \
    do {                                                                                     \
        const char *doc_ = edited((from), (to));                                             \
        assert_true(hf_refused(doc_, strlen(doc_), 1, (status), (word)));                    \
    } while (0)

static void hf_json_refusals(void **state)
{
    (void)state;
    mcl_tokenizer *t = NULL;
    char why[256];
    /* Control: the document as it is, and NFC (accepted) and a BOS template. */
    assert_mcl_ok(read_hf(tiny_json, strlen(tiny_json), 1, &t, why, sizeof why));
    assert_true(ENC(t, "abc", 0, "abc"));
    assert_true(ENC(t, "cab", 0, "c", "ab"));
    assert_true(ENC(t, "a<|end|>", MCL_TOKENIZE_PARSE_SPECIAL, "a", "<|end|>"));
    mcl_tokenizer_free(t);
    const char *doc = edited("\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}");
    assert_mcl_ok(read_hf(doc, strlen(doc), 1, &t, why, sizeof why));
    mcl_tokenizer_free(t);
    doc = edited("{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": false",
                 "{\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": "
                 "\"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"<|end|>\", "
                 "\"type_id\": 0}}], \"special_tokens\": {\"<|end|>\": {\"id\": \"<|end|>\", "
                 "\"ids\": [5], \"tokens\": [\"<|end|>\"]}}, \"trim_offsets\": false");
    assert_mcl_ok(read_hf(doc, strlen(doc), 1, &t, why, sizeof why));
    assert_int_equal(mcl_tokenizer_eos(t), 5);
    assert_int_equal(mcl_tokenizer_bos(t), -1);
    assert_true(ENC(t, "ab", MCL_TOKENIZE_ADD_BOS | MCL_TOKENIZE_ADD_EOS, "ab", "<|end|>"));
    mcl_tokenizer_free(t);

    const mcl_status no = MCL_ERROR_UNSUPPORTED, bad = MCL_ERROR_INVALID_ARGUMENT;
    const char *byte_level = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                             "\"trim_offsets\": true, \"use_regex\": true}";
    JSON_REFUSED("\"BPE\"", "\"WordPiece\"", no, "model type WordPiece");
    JSON_REFUSED("\"BPE\"", "\"Unigram\"", no, "model type Unigram");
    JSON_REFUSED("\"byte_fallback\": false", "\"byte_fallback\": true", no, "byte_fallback BPE");
    JSON_REFUSED("\"dropout\": null", "\"dropout\": 0.1", no, "dropout");
    JSON_REFUSED("\"continuing_subword_prefix\": null", "\"continuing_subword_prefix\": \"##\"",
                 no, "continuing_subword_prefix");
    JSON_REFUSED(byte_level, "{\"type\": \"Metaspace\", \"replacement\": \"\xE2\x96\x81\", "
                             "\"prepend_scheme\": \"first\", \"split\": false}",
                 no, "pre-tokenizer Metaspace");
    JSON_REFUSED(byte_level, "null", no, "without a pre-tokenizer");
    JSON_REFUSED("\"add_prefix_space\": false", "\"add_prefix_space\": true", no,
                 "ByteLevel with add_prefix_space");
    JSON_REFUSED(byte_level, "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                             "\"Split\", \"pattern\": {\"Regex\": \"\\\\p{N}{1,2}\"}, "
                             "\"behavior\": \"Isolated\", \"invert\": false}, " "{\"type\": "
                             "\"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
                 no, "pre-tokenizer Split with the regex \"\\p{N}{1,2}\"");
    JSON_REFUSED(byte_level, "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                             "\"Digits\", \"individual_digits\": true}, " "{\"type\": "
                             "\"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}]}",
                 no, "pre-tokenizer Sequence of 2 (Digits first)");
    JSON_REFUSED("\"normalizer\": null", "\"normalizer\": {\"type\": \"Lowercase\"}", no,
                 "normalizer Lowercase");
    JSON_REFUSED("\"decoder\": {\"type\": \"ByteLevel\"", "\"decoder\": {\"type\": \"WordPiece\"",
                 no, "decoder WordPiece");
    JSON_REFUSED("\"post_processor\": {\"type\": \"ByteLevel\"",
                 "\"post_processor\": {\"type\": \"RobertaProcessing\"", no,
                 "post-processor RobertaProcessing");
    JSON_REFUSED("\"lstrip\": false", "\"lstrip\": true", no, "with lstrip");
    /* Malformed. */
    JSON_REFUSED("\"merges\": [\"a b\", \"ab c\"]}}", "\"merges\": [\"a b\"", bad, "not JSON");
    JSON_REFUSED("{\"version\"", "[{\"version\"", bad, "not JSON");
    JSON_REFUSED("\"type\": \"BPE\", ", "", bad, "model.type is nothing");
    JSON_REFUSED("\"a\": 0", "\"a\": \"0\"", bad, "model.vocab[\"a\"]");
    JSON_REFUSED("\"b\": 1", "\"b\": 0", bad, "gives id 0 to two tokens");
    JSON_REFUSED("\"abc\": 4", "\"abc\": 9", bad, "token id 9 is larger");
    JSON_REFUSED("\"abc\": 4", "\"<|end|>\": 5", bad, "token id 4 is in neither");
    JSON_REFUSED("\"id\": 5", "\"id\": 4", bad, "has the id 4 of another token");
    JSON_REFUSED("\"id\": 5", "\"id\": -1", bad, "added_tokens[0].id");
    JSON_REFUSED("\"ab c\"", "7", bad, "model.merges[1] is neither");
    JSON_REFUSED("\"ab c\"", "[\"ab\", \"c\", \"d\"]", bad, "model.merges[1] is neither");
    JSON_REFUSED("\"ab c\"", "\"abc\"", bad, "merge 1 has no space");
    JSON_REFUSED("\"unk_token\": null", "\"unk_token\": \"<unk>\"", bad, "unk_token");
    JSON_REFUSED("\"ignore_merges\": false", "\"ignore_merges\": 1", bad, "ignore_merges");
    JSON_REFUSED("\"use_regex\": true}", "\"use_regex\": \"yes\"}", bad, "use_regex");
    JSON_REFUSED("\"post_processor\": {\"type\": \"ByteLevel\"",
                 "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{"
                 "\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}], \"special_tokens\": "
                 "{}, \"x\": \"ByteLevel\"", bad, "single[0] is not a special token");
    NEGATIVE(hf_refused(tiny_json, strlen(tiny_json), 1, no, "BPE"));
    assert_int_equal(mcl_tokenizer_from_hf_json(NULL, 1, &t, why, sizeof why), bad);
}

/* Special ids set after the fact (what a checkpoint's config files do). */
static void set_specials(void **state)
{
    (void)state;
    mcl_tokenizer *t = NULL;
    char why[256];
    assert_mcl_ok(read_hf(tiny_json, strlen(tiny_json), 1, &t, why, sizeof why));
    assert_true(ENC(t, "ab", MCL_TOKENIZE_ADD_BOS, "ab")); /* none asked for */
    assert_mcl_ok(mcl_tokenizer_set_specials(t, 5, -2, 1, -1, why, sizeof why));
    assert_true(ENC(t, "ab", MCL_TOKENIZE_ADD_BOS, "<|end|>", "ab"));
    assert_int_equal(mcl_tokenizer_eos(t), -1);
    /* Refused, and nothing changed: an id outside, an EOS to add without an id. */
    assert_int_equal(mcl_tokenizer_set_specials(t, 6, -2, -1, -1, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "BOS id 6"));
    assert_int_equal(mcl_tokenizer_set_specials(t, -1, -2, -1, 1, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tokenizer_bos(t), 5);
    assert_int_equal(mcl_tokenizer_add_bos(t), 1);
    assert_mcl_ok(mcl_tokenizer_set_specials(t, -2, -2, 0, -1, why, sizeof why));
    assert_true(ENC(t, "ab", MCL_TOKENIZE_ADD_BOS, "ab"));
    mcl_tokenizer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(code_point_classes),
        cmocka_unit_test(utf8_decoding),
        cmocka_unit_test(gpt2_alphabet),
        cmocka_unit_test(pretok_gpt2),
        cmocka_unit_test(pretok_llama3),
        cmocka_unit_test(pretok_qwen2),
        cmocka_unit_test(spm_merges_by_score),
        cmocka_unit_test(spm_space_prefix_and_fallback),
        cmocka_unit_test(spm_special_tokens_bos_eos),
        cmocka_unit_test(decode_rules),
        cmocka_unit_test(bpe_merges_by_rank),
        cmocka_unit_test(bpe_words_and_bytes),
        cmocka_unit_test(bpe_ignore_merges_and_specials),
        cmocka_unit_test(bad_descriptions_are_refused),
        cmocka_unit_test(one_megabyte),
        cmocka_unit_test(real_llama_spm),
        cmocka_unit_test(real_gpt2),
        cmocka_unit_test(gguf_keys),
        cmocka_unit_test(hf_json_gpt2_vectors),
        cmocka_unit_test(hf_json_pre_tokenizers),
        cmocka_unit_test(spm_model_llama_vectors),
        cmocka_unit_test(spm_model_written_by_sentencepiece),
        cmocka_unit_test(spm_model_refusals),
        cmocka_unit_test(hf_json_refusals),
        cmocka_unit_test(set_specials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
