/* The strict JSON parser (src/io/json.h) and the config.json readers (src/io/config.h): a
 * conformance set of valid and invalid documents, exact integers, escapes and UTF-8, the depth
 * limit, lookup in large objects, every truncation of a document, random mutations, and the
 * typed reads a model loader makes. Needs no device.
 *
 * Every document is copied into a buffer of exactly its size before parsing, so a read past
 * the end is an AddressSanitizer error in the sanitizer build. */
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/config.h"
#include "io/json.h"

/* Parse `len` bytes copied into an exact-size heap buffer; why gets the message. */
static mcl_status parse_exact(const char *text, size_t len, mcl_json **doc, char *why,
                              size_t why_size)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, text, len);
    mcl_status s = mcl_json_parse(len ? copy : NULL, len, doc, why, why_size);
    free(copy);
    return s;
}

static mcl_json *parse_ok(const char *text)
{
    mcl_json *doc = NULL;
    char why[256];
    mcl_status s = parse_exact(text, strlen(text), &doc, why, sizeof why);
    if (s != MCL_SUCCESS)
        fail_msg("%s: %s (%s)", text, mcl_status_string(s), why);
    return doc;
}

/* A conformance case: the text (len 0: strlen) and whether it must parse. */
typedef struct json_case {
    const char *text;
    size_t len;
    int valid;
} json_case;

/* How many cases the parser decides against their expectation (printing each). The tests
 * assert 0; the negative control feeds it a case with the wrong expectation. */
static int conformance_mismatches(const json_case *cases, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
        mcl_json *doc = NULL;
        char why[256] = "";
        mcl_status s = parse_exact(cases[i].text, len, &doc, why, sizeof why);
        int ok = s == MCL_SUCCESS;
        if (ok != cases[i].valid) {
            print_message("case %zu (%.*s): %s, expected %s; %s\n", i, (int)len, cases[i].text,
                          ok ? "parsed" : "refused", cases[i].valid ? "valid" : "invalid", why);
            bad++;
        }
        if (ok && (!doc || !mcl_json_root(doc))) {
            print_message("case %zu: success without a root\n", i);
            bad++;
        }
        if (!ok && (doc || s != MCL_ERROR_INVALID_ARGUMENT || !strstr(why, "byte "))) {
            print_message("case %zu: refused with %s, message \"%s\"\n", i,
                          mcl_status_string(s), why);
            bad++;
        }
        mcl_json_free(doc);
    }
    return bad;
}

static const json_case valid_cases[] = {
    {"{}", 0, 1},
    {"[]", 0, 1},
    {" \t\r\n{ } \n", 0, 1},
    {"0", 0, 1},
    {"-0", 0, 1},
    {"-0.0e-0", 0, 1},
    {"1.5E+10", 0, 1},
    {"1e-400", 0, 1}, /* underflows to 0: accepted */
    {"123456789012345678901234567890", 0, 1},
    {"\"\"", 0, 1},
    {"\"a\\u00e9\\ud83d\\ude00\\u0000\"", 0, 1},
    {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", 0, 1},
    {"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf\"", 0, 1},
    {"true", 0, 1},
    {"false", 0, 1},
    {"null", 0, 1},
    {"[1,\"a\",true,false,null,{},[],-1.5e-3]", 0, 1},
    {"{\"a\":[1,{\"b\":null}],\"c\":{\"d\":{}}}", 0, 1},
    {"{\"\":1}", 0, 1},
    {"{\"a\":1,\"A\":2,\"a \":3}", 0, 1},
    {"[[[[[[[[[[]]]]]]]]]]", 0, 1},
};

static const json_case invalid_cases[] = {
    {"", 0, 0},
    {"   ", 0, 0},
    {"[1,]", 0, 0},
    {"{\"a\":1,}", 0, 0},
    {"[,1]", 0, 0},
    {"[1,,2]", 0, 0},
    {"01", 0, 0},
    {"-01", 0, 0},
    {"00", 0, 0},
    {"1.", 0, 0},
    {".5", 0, 0},
    {"+1", 0, 0},
    {"-", 0, 0},
    {"1e", 0, 0},
    {"1e+", 0, 0},
    {"1.e5", 0, 0},
    {"0x10", 0, 0},
    {"NaN", 0, 0},
    {"Infinity", 0, 0},
    {"-Infinity", 0, 0},
    {"1e400", 0, 0},
    {"-1e400", 0, 0},
    {"[1e99999999999999999999]", 0, 0},
    {"[1 2]", 0, 0},
    {"{\"a\" 1}", 0, 0},
    {"{\"a\":}", 0, 0},
    {"{a:1}", 0, 0},
    {"{'a':1}", 0, 0},
    {"{1:1}", 0, 0},
    {"\"abc", 0, 0},
    {"\"a\tb\"", 0, 0},
    {"\"a\nb\"", 0, 0},
    {"\"\x01\"", 0, 0},
    {"\"\x1f\"", 0, 0},
    {"\"\\x41\"", 0, 0},
    {"\"\\'\"", 0, 0},
    {"\"\\U0041\"", 0, 0},
    {"\"\\u12\"", 0, 0},
    {"\"\\u12G4\"", 0, 0},
    {"\"\\ud800\"", 0, 0},
    {"\"\\udc00\"", 0, 0},
    {"\"\\udfff\\ud800\"", 0, 0},
    {"\"\\ud800\\u0041\"", 0, 0},
    {"\"\\ud800\\ud800\"", 0, 0},
    {"\"\\ud800x\"", 0, 0},
    {"\"\\ud800\\\"", 0, 0},
    {"\"\\", 0, 0},
    {"[1]]", 0, 0},
    {"[1] x", 0, 0},
    {"{} {}", 0, 0},
    {"\"a\" \"b\"", 0, 0},
    {"tru", 0, 0},
    {"truee", 0, 0},
    {"True", 0, 0},
    {"nul", 0, 0},
    {"[", 0, 0},
    {"{", 0, 0},
    {"{\"a\"", 0, 0},
    {"{\"a\":", 0, 0},
    {"]", 0, 0},
    {"\xef\xbb\xbf{}", 0, 0},          /* byte-order mark */
    {"\"\xc0\xaf\"", 0, 0},            /* overlong '/' */
    {"\"\xe0\x80\xaf\"", 0, 0},        /* overlong, 3 bytes */
    {"\"\xed\xa0\x80\"", 0, 0},        /* an encoded surrogate */
    {"\"\xf4\x90\x80\x80\"", 0, 0},    /* past U+10FFFF */
    {"\"\xf5\x80\x80\x80\"", 0, 0},
    {"\"\x80\"", 0, 0},                /* a lone continuation byte */
    {"\"\xe2\x82\"", 0, 0},            /* a truncated sequence */
    {"\"\xe2\x82", 0, 0},
    {"\"\xff\"", 0, 0},
    {"/* c */ 1", 0, 0},
    {"// c\n1", 0, 0},
    {"[1\x00]", 4, 0},
    {"\x00", 1, 0},
    {"[1]\x00", 4, 0},
    {"[\v1]", 0, 0},
    {"[\f1]", 0, 0},
    {"{\"a\":1,\"a\":2}", 0, 0},
    {"{\"a\":1,\"b\":{\"c\":1,\"c\":2}}", 0, 0},
    {"{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,"
     "\"k9\":9,\"k3\":10}", 0, 0},
    {"{\"\\u0061\":1,\"a\":2}", 0, 0}, /* the same key, once escaped */
};

static void conformance_valid(void **state)
{
    (void)state;
    assert_int_equal(conformance_mismatches(valid_cases, sizeof valid_cases / sizeof *valid_cases), 0);
}

static void conformance_invalid(void **state)
{
    (void)state;
    assert_int_equal(
        conformance_mismatches(invalid_cases, sizeof invalid_cases / sizeof *invalid_cases), 0);
}

/* Negative control: the conformance check reports a case whose expectation is wrong, in both
 * directions. */
static void conformance_check_can_fail(void **state)
{
    (void)state;
    const json_case wrong[] = {{"[1,]", 0, 1}, {"[1]", 0, 0}};
    assert_int_equal(conformance_mismatches(wrong, 2), 2);
}

static void error_messages_name_the_offset(void **state)
{
    (void)state;
    mcl_json *doc = (mcl_json *)1;
    char why[256];
    assert_int_equal(parse_exact("{\"a\":1 x}", 9, &doc, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_null(doc);
    assert_string_equal(why, "byte 7: expected ',' or '}' after an object member, found 'x'");
    assert_int_equal(parse_exact("[1,2", 4, &doc, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_string_equal(why, "byte 4: expected ',' or ']' after an array element, found the "
                             "end of the input");
    assert_int_equal(parse_exact("{\"b\":1,\"b\":2}", 13, &doc, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_string_equal(why, "byte 11: duplicate key \"b\" in an object");
    assert_int_equal(parse_exact("[\"\\ud800\"]", 10, &doc, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "byte 2: high surrogate"));
    /* A short buffer is cut and terminated; NULL why is fine. */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    assert_int_equal(parse_exact("[1,]", 4, &doc, tiny, sizeof tiny), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    assert_int_equal(parse_exact("[1,]", 4, &doc, NULL, 0), MCL_ERROR_INVALID_ARGUMENT);
    /* NULL out, NULL data with a size. */
    assert_int_equal(mcl_json_parse("1", 1, NULL, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_json_parse(NULL, 5, &doc, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_json_parse(NULL, 0, &doc, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_json_parse("1", (uint64_t)1 << 32, &doc, why, sizeof why),
                     MCL_ERROR_TOO_LARGE);
}

/* --- Depth -------------------------------------------------------------------------------- */

static char *nested(int depth, int objects, size_t *len)
{
    /* objects: {"a":{"a":...{}...}}; arrays: [[...]] */
    size_t open = objects ? 5 : 1;
    char *s = malloc((size_t)depth * (open + 1) + 1);
    assert_non_null(s);
    size_t n = 0;
    for (int i = 0; i < depth; i++) {
        if (objects && i + 1 < depth) {
            memcpy(s + n, "{\"a\":", 5);
            n += 5;
        } else {
            s[n++] = objects ? '{' : '[';
        }
    }
    for (int i = 0; i < depth; i++)
        s[n++] = objects ? '}' : ']';
    s[n] = '\0';
    *len = n;
    return s;
}

static void depth_limit(void **state)
{
    (void)state;
    char why[256];
    for (int objects = 0; objects <= 1; objects++) {
        size_t len;
        char *s = nested(MCL_JSON_MAX_DEPTH, objects, &len);
        mcl_json *doc = NULL;
        assert_int_equal(parse_exact(s, len, &doc, why, sizeof why), MCL_SUCCESS);
        /* Walk down: exactly MCL_JSON_MAX_DEPTH containers. */
        const mcl_json_value *v = mcl_json_root(doc);
        int levels = 0;
        while (v) {
            levels++;
            v = objects ? mcl_json_find(v, "a") : mcl_json_at(v, 0);
        }
        assert_int_equal(levels, MCL_JSON_MAX_DEPTH);
        mcl_json_free(doc);
        free(s);

        s = nested(MCL_JSON_MAX_DEPTH + 1, objects, &len);
        doc = NULL;
        assert_int_equal(parse_exact(s, len, &doc, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
        assert_null(doc);
        assert_non_null(strstr(why, "nesting deeper than 64"));
        free(s);
    }
    /* A million '[' are refused at the limit, not by exhausting a stack. */
    size_t big = 1000000;
    char *s = malloc(big);
    assert_non_null(s);
    memset(s, '[', big);
    mcl_json *doc = NULL;
    assert_int_equal(mcl_json_parse(s, big, &doc, why, sizeof why), MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "byte 64: nesting"));
    free(s);
}

/* --- Numbers ------------------------------------------------------------------------------ */

static void numbers_exact_and_double(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int is_int;
        int64_t i;
        double d;
    } cases[] = {
        {"0", 1, 0, 0.0},
        {"-0", 1, 0, -0.0},
        {"12", 1, 12, 12.0},
        {"-12", 1, -12, -12.0},
        {"1.0", 1, 1, 1.0},
        {"1e3", 1, 1000, 1000.0},
        {"1.5e1", 1, 15, 15.0},
        {"120e-1", 1, 12, 12.0},
        {"100000000000000000000e-2", 1, 1000000000000000000, 1e18},
        {"0e5000", 1, 0, 0.0},
        {"0.000e-7", 1, 0, 0.0},
        {"9007199254740993", 1, 9007199254740993LL, 9007199254740992.0},
        {"9223372036854775807", 1, INT64_MAX, 9223372036854775807.0},
        {"-9223372036854775808", 1, INT64_MIN, -9223372036854775808.0},
        {"9223372036854775808", 0, 0, 9223372036854775808.0},
        {"-9223372036854775809", 0, 0, -9223372036854775808.0},
        {"1e19", 0, 0, 1e19},
        {"1.25", 0, 0, 1.25},
        {"0.1", 0, 0, 0.1},
        {"1e-5", 0, 0, 1e-5},
        {"2.5e-1", 0, 0, 0.25},
        {"1E2", 1, 100, 100.0},
        {"5e-324", 0, 0, 5e-324},
        {"1e-400", 0, 0, 0.0},
        {"1.7976931348623157e308", 0, 0, 1.7976931348623157e308},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mcl_json *doc = parse_ok(cases[i].text);
        const mcl_json_value *v = mcl_json_root(doc);
        assert_int_equal(mcl_json_kind_of(v), MCL_JSON_NUMBER);
        double d = -1;
        assert_true(mcl_json_number(v, &d));
        if (d != cases[i].d || signbit(d) != signbit(cases[i].d))
            fail_msg("%s: double %.17g, expected %.17g", cases[i].text, d, cases[i].d);
        int64_t got = 42;
        int is_int = mcl_json_int(v, &got);
        if (is_int != cases[i].is_int || (is_int && got != cases[i].i))
            fail_msg("%s: int %d/%lld, expected %d/%lld", cases[i].text, is_int,
                     (long long)got, cases[i].is_int, (long long)cases[i].i);
        if (!is_int)
            assert_int_equal(got, 42); /* untouched */
        mcl_json_free(doc);
    }
}

/* The double does not depend on the C locale's decimal point (checked where a locale with a
 * comma is installed). */
static void numbers_ignore_the_locale(void **state)
{
    (void)state;
    static const char *const comma_locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                                "fr_FR.utf8", "de_DE", "fr_FR"};
    const char *old = setlocale(LC_NUMERIC, NULL);
    char saved[64];
    snprintf(saved, sizeof saved, "%s", old ? old : "C");
    const char *set = NULL;
    for (size_t i = 0; i < sizeof comma_locales / sizeof *comma_locales && !set; i++)
        set = setlocale(LC_NUMERIC, comma_locales[i]);
    if (!set) {
        print_message("no locale with a decimal comma installed: checked in \"C\" only\n");
    }
    mcl_json *doc = parse_ok("[1.5,2.25e1]");
    double a = 0, b = 0;
    assert_true(mcl_json_number(mcl_json_at(mcl_json_root(doc), 0), &a));
    assert_true(mcl_json_number(mcl_json_at(mcl_json_root(doc), 1), &b));
    setlocale(LC_NUMERIC, saved);
    assert_true(a == 1.5);
    assert_true(b == 22.5);
    mcl_json_free(doc);
}

/* --- Strings ------------------------------------------------------------------------------ */

static void strings_are_unescaped(void **state)
{
    (void)state;
    mcl_json *doc = parse_ok("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", "
                             "\"\\ud83d\\ude00\", \"a\\u0000b\", \"\xc3\xa9\", \"\"]");
    const mcl_json_value *root = mcl_json_root(doc);
    size_t len;
    const char *s = mcl_json_string(mcl_json_at(root, 0), &len);
    assert_int_equal(len, 8);
    assert_memory_equal(s, "\"\\/\b\f\n\r\t", 9);
    s = mcl_json_string(mcl_json_at(root, 1), &len);
    assert_int_equal(len, 5);
    assert_memory_equal(s, "\xc3\xa9\xe2\x82\xac", 6);
    s = mcl_json_string(mcl_json_at(root, 2), &len);
    assert_int_equal(len, 4);
    assert_memory_equal(s, "\xf0\x9f\x98\x80", 5);
    s = mcl_json_string(mcl_json_at(root, 3), &len);
    assert_int_equal(len, 3);
    assert_memory_equal(s, "a\0b", 4);
    assert_false(mcl_json_string_eq(mcl_json_at(root, 3), "a"));
    assert_true(mcl_json_string_eq(mcl_json_at(root, 4), "\xc3\xa9"));
    s = mcl_json_string(mcl_json_at(root, 5), &len);
    assert_int_equal(len, 0);
    assert_string_equal(s, "");
    /* Not a string. */
    assert_null(mcl_json_string(root, &len));
    mcl_json_free(doc);
}

/* --- Access ------------------------------------------------------------------------------- */

static void access_and_null_chaining(void **state)
{
    (void)state;
    mcl_json *doc = parse_ok("{\"n\":7,\"f\":0.5,\"t\":true,\"z\":null,\"s\":\"x\","
                             "\"a\":[10,20,30],\"o\":{\"k\":\"v\"}}");
    const mcl_json_value *root = mcl_json_root(doc);
    assert_int_equal(mcl_json_kind_of(root), MCL_JSON_OBJECT);
    assert_int_equal(mcl_json_count(root), 7);
    assert_null(mcl_json_key(root, NULL));
    int64_t i;
    double d;
    int b = 5;
    assert_true(mcl_json_int(mcl_json_find(root, "n"), &i));
    assert_int_equal(i, 7);
    assert_true(mcl_json_number(mcl_json_find(root, "f"), &d));
    assert_true(d == 0.5);
    assert_false(mcl_json_int(mcl_json_find(root, "f"), &i));
    assert_true(mcl_json_bool(mcl_json_find(root, "t"), &b));
    assert_int_equal(b, 1);
    assert_true(mcl_json_is_null(mcl_json_find(root, "z")));
    assert_false(mcl_json_is_null(mcl_json_find(root, "missing")));
    assert_int_equal(mcl_json_kind_of(mcl_json_find(root, "missing")), MCL_JSON_MISSING);
    const mcl_json_value *a = mcl_json_find(root, "a");
    assert_int_equal(mcl_json_count(a), 3);
    assert_true(mcl_json_int(mcl_json_at(a, 2), &i));
    assert_int_equal(i, 30);
    assert_null(mcl_json_at(a, 3));
    assert_null(mcl_json_key(mcl_json_at(a, 0), NULL));
    assert_string_equal(mcl_json_string(mcl_json_find(mcl_json_find(root, "o"), "k"), NULL),
                        "v");
    /* Member i in document order, with its key. */
    size_t klen;
    assert_string_equal(mcl_json_key(mcl_json_at(root, 4), &klen), "s");
    assert_int_equal(klen, 1);
    assert_int_equal(mcl_json_offset(mcl_json_find(root, "n")), 5);
    /* Chained lookups through absent values and wrong kinds report absence. */
    assert_null(mcl_json_find(mcl_json_find(root, "missing"), "x"));
    assert_null(mcl_json_find(a, "x"));
    assert_null(mcl_json_at(mcl_json_find(root, "n"), 0));
    assert_int_equal(mcl_json_count(NULL), 0);
    assert_false(mcl_json_int(NULL, &i));
    assert_false(mcl_json_bool(mcl_json_find(root, "n"), &b));
    assert_null(mcl_json_find(root, NULL));
    assert_null(mcl_json_root(NULL));
    assert_string_equal(mcl_json_kind_name(MCL_JSON_ARRAY), "an array");
    mcl_json_free(doc);
    mcl_json_free(NULL);
}

/* An object of thousands of members (a safetensors header): iteration in document order and
 * lookup of every key through the sorted index; keys differing only in length or a NUL. */
static void large_object_lookup(void **state)
{
    (void)state;
    const int n = 5000;
    size_t cap = (size_t)n * 40 + 64, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    text[len++] = '{';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "%s\"layers.%d.w\":%d", i ? "," : "",
                                (i * 7919) % n, i);
    len += (size_t)snprintf(text + len, cap - len, ",\"x\\u0000y\":-1,\"x\":-2}");
    mcl_json *doc = NULL;
    char why[256];
    assert_int_equal(parse_exact(text, len, &doc, why, sizeof why), MCL_SUCCESS);
    const mcl_json_value *root = mcl_json_root(doc);
    assert_int_equal(mcl_json_count(root), n + 2);
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "layers.%d.w", (i * 7919) % n);
        int64_t v = -5;
        assert_true(mcl_json_int(mcl_json_find(root, key), &v));
        assert_int_equal(v, i);
        assert_string_equal(mcl_json_key(mcl_json_at(root, (uint32_t)i), NULL), key);
    }
    int64_t v;
    assert_true(mcl_json_int(mcl_json_find_n(root, "x\0y", 3), &v));
    assert_int_equal(v, -1);
    assert_true(mcl_json_int(mcl_json_find(root, "x"), &v));
    assert_int_equal(v, -2);
    assert_null(mcl_json_find(root, "layers.5000.w"));
    assert_null(mcl_json_find(root, "layers.1.w "));
    assert_null(mcl_json_find(root, ""));
    mcl_json_free(doc);
    free(text);
}

/* --- Truncation and mutation -------------------------------------------------------------- */

static const char sample[] =
    "{\"__metadata__\":{\"format\":\"pt\"},\"model.embed.weight\":{\"dtype\":\"BF16\","
    "\"shape\":[32000,2048],\"data_offsets\":[0,131072000]},\"s\":\"\\u00e9\\ud83d\\ude00\","
    "\"n\":[-1.5e-3,true,false,null,{}],\"u\":\"\xe2\x82\xac\"}";

static void every_truncation_fails(void **state)
{
    (void)state;
    size_t len = strlen(sample);
    mcl_json *doc = NULL;
    char why[256];
    /* Control: the whole document parses. */
    assert_int_equal(parse_exact(sample, len, &doc, why, sizeof why), MCL_SUCCESS);
    mcl_json_free(doc);
    for (size_t cut = 0; cut < len; cut++) {
        doc = (mcl_json *)1;
        mcl_status s = parse_exact(sample, cut, &doc, why, sizeof why);
        if (s != MCL_ERROR_INVALID_ARGUMENT || doc)
            fail_msg("prefix of %zu bytes: %s", cut, mcl_status_string(s));
    }
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random byte changes, insertions and deletions of the sample: each parse succeeds or is a
 * status, never a crash or a read out of bounds (the sanitizer build checks the latter). A
 * successful parse must still be walkable. */
static void mutations_fail_cleanly(void **state)
{
    (void)state;
    static const char interesting[] = "{}[]\",:\\u0123456789.eE+-tfn \x00\x7f\x80\xc3\xed\xf4";
    size_t base = strlen(sample);
    char *buf = malloc(base + 8);
    assert_non_null(buf);
    int parsed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, sample, base);
        size_t len = base;
        int edits = 1 + (int)(rng_next() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)(rng_next() % len);
            char c = interesting[rng_next() % (sizeof interesting - 1)];
            switch (rng_next() % 3) {
            case 0: buf[at] = c; break;
            case 1:
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = c;
                len++;
                break;
            default:
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            }
        }
        char *exact = malloc(len);
        assert_non_null(exact);
        memcpy(exact, buf, len);
        mcl_json *doc = NULL;
        char why[128];
        mcl_status s = mcl_json_parse(exact, len, &doc, why, sizeof why);
        free(exact);
        assert_true(s == MCL_SUCCESS || s == MCL_ERROR_INVALID_ARGUMENT);
        if (s == MCL_SUCCESS) {
            parsed++;
            const mcl_json_value *root = mcl_json_root(doc);
            for (uint32_t i = 0; i < mcl_json_count(root); i++)
                (void)mcl_json_kind_of(mcl_json_at(root, i));
        }
        mcl_json_free(doc);
    }
    print_message("%d of 20000 mutated documents parsed\n", parsed);
    free(buf);
}

/* --- config.json --------------------------------------------------------------------------- */

static const char llama_config[] =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"attention_bias\":false,"
    "\"bos_token_id\":128000,\"eos_token_id\":[128001,128008,128009],"
    "\"hidden_act\":\"silu\",\"hidden_size\":2048,\"intermediate_size\":8192,"
    "\"max_position_embeddings\":131072,\"model_type\":\"llama\","
    "\"num_attention_heads\":32,\"num_hidden_layers\":16,\"num_key_value_heads\":8,"
    "\"rms_norm_eps\":1e-05,\"rope_scaling\":{\"factor\":32.0,\"high_freq_factor\":4.0,"
    "\"low_freq_factor\":1.0,\"original_max_position_embeddings\":8192,"
    "\"rope_type\":\"llama3\"},\"rope_theta\":500000.0,\"tie_word_embeddings\":true,"
    "\"torch_dtype\":\"bfloat16\",\"vocab_size\":128256,\"head_dim\":64.0,"
    "\"pad_token_id\":null}";

static void config_reads_a_llama_config(void **state)
{
    (void)state;
    mcl_json *doc = parse_ok(llama_config);
    const mcl_json_value *cfg = mcl_json_root(doc);
    char why[256];
    int64_t i;
    double d;
    int b;
    const char *s;
    assert_mcl_ok(mcl_config_int(cfg, "hidden_size", 0, &i, why, sizeof why));
    assert_int_equal(i, 2048);
    assert_mcl_ok(mcl_config_int(cfg, "num_key_value_heads", 0, &i, why, sizeof why));
    assert_int_equal(i, 8);
    assert_mcl_ok(mcl_config_int(cfg, "head_dim", 0, &i, why, sizeof why)); /* 64.0 */
    assert_int_equal(i, 64);
    assert_mcl_ok(mcl_config_int(cfg, "sliding_window", -1, &i, why, sizeof why));
    assert_int_equal(i, -1);
    assert_mcl_ok(mcl_config_int(cfg, "pad_token_id", -7, &i, why, sizeof why)); /* null */
    assert_int_equal(i, -7);
    assert_mcl_ok(mcl_config_float(cfg, "rms_norm_eps", 0, &d, why, sizeof why));
    assert_true(d == 1e-5);
    assert_mcl_ok(mcl_config_float(cfg, "vocab_size", 0, &d, why, sizeof why));
    assert_true(d == 128256.0);
    assert_mcl_ok(mcl_config_float(cfg, "rope_theta", 0, &d, why, sizeof why));
    assert_true(d == 500000.0);
    assert_mcl_ok(mcl_config_bool(cfg, "tie_word_embeddings", 0, &b, why, sizeof why));
    assert_int_equal(b, 1);
    assert_mcl_ok(mcl_config_bool(cfg, "use_cache", 1, &b, why, sizeof why));
    assert_int_equal(b, 1);
    assert_mcl_ok(mcl_config_string(cfg, "model_type", NULL, &s, why, sizeof why));
    assert_string_equal(s, "llama");
    assert_mcl_ok(mcl_config_string(cfg, "absent", "dflt", &s, why, sizeof why));
    assert_string_equal(s, "dflt");
    assert_mcl_ok(mcl_config_string_at(cfg, "architectures", 0, NULL, &s, why, sizeof why));
    assert_string_equal(s, "LlamaForCausalLM");
    assert_mcl_ok(mcl_config_string_at(cfg, "architectures", 1, "none", &s, why, sizeof why));
    assert_string_equal(s, "none");

    int64_t eos[4];
    uint32_t n = 99;
    assert_mcl_ok(mcl_config_int_list(cfg, "eos_token_id", eos, 4, &n, why, sizeof why));
    assert_int_equal(n, 3);
    assert_int_equal(eos[0], 128001);
    assert_int_equal(eos[2], 128009);
    assert_mcl_ok(mcl_config_int_list(cfg, "bos_token_id", eos, 4, &n, why, sizeof why));
    assert_int_equal(n, 1);
    assert_int_equal(eos[0], 128000);
    assert_mcl_ok(mcl_config_int_list(cfg, "absent", eos, 4, &n, why, sizeof why));
    assert_int_equal(n, 0);
    assert_int_equal(mcl_config_int_list(cfg, "eos_token_id", eos, 2, &n, why, sizeof why),
                     MCL_ERROR_TOO_LARGE);

    mcl_rope_scaling rs;
    assert_mcl_ok(mcl_config_rope_scaling(cfg, &rs, why, sizeof why));
    assert_string_equal(rs.type, "llama3");
    assert_true(rs.factor == 32.0);
    assert_true(rs.low_freq_factor == 1.0);
    assert_true(rs.high_freq_factor == 4.0);
    assert_int_equal(rs.original_max_position_embeddings, 8192);
    mcl_json_free(doc);
}

/* Wrong types are errors naming the key, never the default (the negative controls of the
 * defaults above). */
static void config_refuses_wrong_types(void **state)
{
    (void)state;
    mcl_json *doc = parse_ok("{\"hidden_size\":\"2048\",\"eps\":\"1e-5\",\"frac\":1.5,"
                             "\"big\":1e30,\"flag\":1,\"name\":7,\"eos\":[1,\"2\"],"
                             "\"eos2\":{},\"arch\":\"Llama\",\"arch2\":[\"a\",3]}");
    const mcl_json_value *cfg = mcl_json_root(doc);
    char why[256];
    int64_t i = 11;
    double d = 11;
    int b = 11;
    const char *s = "keep";
    int64_t list[4];
    uint32_t n;
    assert_int_equal(mcl_config_int(cfg, "hidden_size", 0, &i, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_string_equal(why, "\"hidden_size\" (byte 15): expected an integer, found a string");
    assert_int_equal(mcl_config_int(cfg, "frac", 0, &i, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "\"frac\""));
    assert_int_equal(mcl_config_int(cfg, "big", 0, &i, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_float(cfg, "eps", 0, &d, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_bool(cfg, "flag", 0, &b, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_string(cfg, "name", NULL, &s, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_int_list(cfg, "eos", list, 4, &n, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(why, "element 1"));
    assert_int_equal(mcl_config_int_list(cfg, "eos2", list, 4, &n, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_string_at(cfg, "arch", 0, NULL, &s, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_string_at(cfg, "arch2", 0, NULL, &s, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(i, 11);
    assert_true(d == 11);
    assert_int_equal(b, 11);
    /* Not an object, NULL key. */
    assert_int_equal(mcl_config_int(mcl_json_find(cfg, "eos"), "x", 0, &i, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_int(NULL, "x", 0, &i, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_config_int(cfg, NULL, 0, &i, why, sizeof why),
                     MCL_ERROR_INVALID_ARGUMENT);
    mcl_json_free(doc);
}

static void config_rope_scaling_forms(void **state)
{
    (void)state;
    char why[256];
    mcl_rope_scaling rs;
    /* Absent and null: no scaling, defaults kept. */
    mcl_json *doc = parse_ok("{\"rope_scaling\":null}");
    assert_mcl_ok(mcl_config_rope_scaling(mcl_json_root(doc), &rs, why, sizeof why));
    assert_null(rs.type);
    assert_true(rs.factor == 1.0);
    mcl_json_free(doc);
    doc = parse_ok("{}");
    assert_mcl_ok(mcl_config_rope_scaling(mcl_json_root(doc), &rs, why, sizeof why));
    assert_null(rs.type);
    mcl_json_free(doc);
    /* The older "type" key, alone and agreeing with "rope_type". */
    doc = parse_ok("{\"rope_scaling\":{\"type\":\"linear\",\"factor\":2}}");
    assert_mcl_ok(mcl_config_rope_scaling(mcl_json_root(doc), &rs, why, sizeof why));
    assert_string_equal(rs.type, "linear");
    assert_true(rs.factor == 2.0);
    assert_int_equal(rs.original_max_position_embeddings, 8192);
    mcl_json_free(doc);
    doc = parse_ok("{\"rope_scaling\":{\"type\":\"llama3\",\"rope_type\":\"llama3\"}}");
    assert_mcl_ok(mcl_config_rope_scaling(mcl_json_root(doc), &rs, why, sizeof why));
    assert_string_equal(rs.type, "llama3");
    mcl_json_free(doc);
    /* Refused: disagreeing kinds, no kind, not an object, a mistyped number. */
    static const char *const bad[] = {
        "{\"rope_scaling\":{\"type\":\"linear\",\"rope_type\":\"llama3\"}}",
        "{\"rope_scaling\":{\"factor\":8}}",
        "{\"rope_scaling\":\"llama3\"}",
        "{\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":\"8\"}}",
        "{\"rope_scaling\":{\"rope_type\":\"llama3\",\"original_max_position_embeddings\":1.5}}",
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        doc = parse_ok(bad[k]);
        why[0] = '\0';
        assert_int_equal(mcl_config_rope_scaling(mcl_json_root(doc), &rs, why, sizeof why),
                         MCL_ERROR_INVALID_ARGUMENT);
        assert_true(strlen(why) > 0);
        mcl_json_free(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conformance_valid),
        cmocka_unit_test(conformance_invalid),
        cmocka_unit_test(conformance_check_can_fail),
        cmocka_unit_test(error_messages_name_the_offset),
        cmocka_unit_test(depth_limit),
        cmocka_unit_test(numbers_exact_and_double),
        cmocka_unit_test(numbers_ignore_the_locale),
        cmocka_unit_test(strings_are_unescaped),
        cmocka_unit_test(access_and_null_chaining),
        cmocka_unit_test(large_object_lookup),
        cmocka_unit_test(every_truncation_fails),
        cmocka_unit_test(mutations_fail_cleanly),
        cmocka_unit_test(config_reads_a_llama_config),
        cmocka_unit_test(config_refuses_wrong_types),
        cmocka_unit_test(config_rope_scaling_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
