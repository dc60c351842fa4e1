/* Host-only checks of the parts of the API that need no device: version, status names,
 * dtypes, feature names, environment parsing, the witness writer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "env.h"
#include "witness.h"

static void version_matches_header(void **state)
{
    (void)state;
    assert_int_equal(mcl_version(), MOTIFCL_VERSION_NUMBER);
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", MOTIFCL_VERSION_MAJOR, MOTIFCL_VERSION_MINOR,
             MOTIFCL_VERSION_PATCH);
    assert_string_equal(mcl_version_string(), expected);
    const char *commit = mcl_git_commit();
    assert_non_null(commit);
    assert_true(strcmp(commit, "unknown") == 0 || strlen(commit) >= 40);
}

/* Pinned values: a renumbering is an ABI break that this catches. */
static void status_values_are_pinned(void **state)
{
    (void)state;
    assert_int_equal(MCL_SUCCESS, 0);
    assert_int_equal(MCL_ERROR_INVALID_ARGUMENT, 1);
    assert_int_equal(MCL_ERROR_OUT_OF_DEVICE_MEMORY, 3);
    assert_int_equal(MCL_ERROR_VULKAN_UNAVAILABLE, 4);
    assert_int_equal(MCL_ERROR_NO_DEVICE, 5);
    assert_int_equal(MCL_ERROR_LAYER_UNAVAILABLE, 13);
    assert_int_equal(MCL_ERROR_IO, 14);
    assert_int_equal(MCL_ERROR_BAD_FILE, 15);
    assert_int_equal(MCL_DTYPE_Q8_0, 16);
    assert_int_equal(MCL_DTYPE_Q6_K, 20);
}

static void every_status_has_a_distinct_name(void **state)
{
    (void)state;
    const char *names[MCL_ERROR_BAD_FILE + 1];
    for (int s = 0; s <= MCL_ERROR_BAD_FILE; s++) {
        names[s] = mcl_status_string((mcl_status)s);
        assert_non_null(names[s]);
        assert_string_not_equal(names[s], "unknown status");
        for (int t = 0; t < s; t++)
            assert_string_not_equal(names[s], names[t]);
    }
    /* Negative control: an unknown value is named as such. */
    assert_string_equal(mcl_status_string((mcl_status)9999), "unknown status");
}

static void dtypes(void **state)
{
    (void)state;
    assert_int_equal(mcl_dtype_size(MCL_DTYPE_F32), 4);
    assert_int_equal(mcl_dtype_size(MCL_DTYPE_F16), 2);
    assert_int_equal(mcl_dtype_size(MCL_DTYPE_I32), 4);
    assert_int_equal(mcl_dtype_size(MCL_DTYPE_U8), 1);
    assert_int_equal(mcl_dtype_size(MCL_DTYPE_Q4_K), 0);
    assert_string_equal(mcl_dtype_name(MCL_DTYPE_Q4_0), "q4_0");
    assert_int_equal(mcl_dtype_block_weights(MCL_DTYPE_Q8_0), 32);
    assert_int_equal(mcl_dtype_block_weights(MCL_DTYPE_Q5_K), 256);
    assert_int_equal(mcl_dtype_block_weights(MCL_DTYPE_F32), 1);
    assert_int_equal(mcl_dtype_block_weights((mcl_dtype)77), 0);
    assert_int_equal(mcl_dtype_block_bytes(MCL_DTYPE_Q4_K), 144);
    assert_int_equal(mcl_dtype_block_bytes(MCL_DTYPE_Q6_K), 210);
    assert_int_equal(mcl_dtype_block_bytes(MCL_DTYPE_U8), 1);
    /* The public host quantizer round-trips and refuses a partial block. */
    float x[32], y[32];
    unsigned char q[34];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) / 8.0f;
    assert_int_equal(mcl_quantize(MCL_DTYPE_Q8_0, x, q, 32), MCL_SUCCESS);
    assert_int_equal(mcl_dequantize(MCL_DTYPE_Q8_0, q, y, 32), MCL_SUCCESS);
    for (int i = 0; i < 32; i++)
        assert_true(y[i] - x[i] < 0.02f && x[i] - y[i] < 0.02f);
    assert_int_equal(mcl_quantize(MCL_DTYPE_Q8_0, x, q, 31), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_quantize(MCL_DTYPE_F32, x, q, 32), MCL_ERROR_UNSUPPORTED);
    assert_null(mcl_dtype_name((mcl_dtype)77));
}

static void feature_and_quirk_names(void **state)
{
    (void)state;
    for (int bit = 0; bit <= 14; bit++)
        assert_non_null(mcl_feature_name(UINT64_C(1) << bit));
    assert_null(mcl_feature_name(UINT64_C(1) << 40));
    assert_null(mcl_feature_name(MCL_FEATURE_STORAGE_8BIT | MCL_FEATURE_STORAGE_16BIT));
    assert_string_equal(mcl_feature_name(MCL_FEATURE_INTEGER_DOT_PRODUCT), "integer-dot");
    assert_string_equal(mcl_quirk_name(MCL_QUIRK_NO_INTEGER_DOT), "no-integer-dot");
    assert_string_equal(mcl_device_type_name(MCL_DEVICE_TYPE_DISCRETE), "discrete");
}

static void list_parsing(void **state)
{
    (void)state;
    assert_true(mcl_list_contains("float16,integer-dot", "integer-dot"));
    assert_true(mcl_list_contains(" Float16 , int8", "float16"));
    assert_false(mcl_list_contains("integer-dot-accelerated", "integer-dot"));
    assert_false(mcl_list_contains("", "int8"));
    assert_true(mcl_contains_nocase("NVIDIA H200", "h200"));
    assert_false(mcl_contains_nocase("llvmpipe", "radeon"));
}

static void env_switches(void **state)
{
    (void)state;
    setenv("MOTIFCL_TEST_SWITCH", "0", 1);
    assert_false(mcl_env_truthy("MOTIFCL_TEST_SWITCH"));
    setenv("MOTIFCL_TEST_SWITCH", "1", 1);
    assert_true(mcl_env_truthy("MOTIFCL_TEST_SWITCH"));
    setenv("MOTIFCL_TEST_SWITCH", "", 1);
    assert_false(mcl_env_truthy("MOTIFCL_TEST_SWITCH"));
    unsetenv("MOTIFCL_TEST_SWITCH");
    assert_null(mcl_env("MOTIFCL_TEST_SWITCH"));
}

static char *saved_variable(const char *name)
{
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

static void restore_variable(const char *name, char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    free(value);
}

/* MOTIFCL_PIPELINE_CACHE: the switch words, an absolute folder, and what is refused with a
 * problem (set but empty, relative, too long) leaving the default. */
static void pipeline_cache_variable(void **state)
{
    (void)state;
    char *saved = saved_variable("MOTIFCL_PIPELINE_CACHE");
    mcl_env_settings s;
    unsetenv("MOTIFCL_PIPELINE_CACHE");
    mcl_env_read(&s);
    assert_int_equal(s.pipeline_cache, MCL_ENV_PIPELINE_CACHE_DEFAULT);
    static const char *const off[] = {"0", "off", "FALSE", "no"};
    for (int i = 0; i < 4; i++) {
        setenv("MOTIFCL_PIPELINE_CACHE", off[i], 1);
        mcl_env_read(&s);
        assert_int_equal(s.pipeline_cache, MCL_ENV_PIPELINE_CACHE_OFF);
        assert_string_equal(s.problems, "");
    }
    setenv("MOTIFCL_PIPELINE_CACHE", "on", 1);
    mcl_env_read(&s);
    assert_int_equal(s.pipeline_cache, MCL_ENV_PIPELINE_CACHE_DEFAULT);
    assert_string_equal(s.problems, "");
    setenv("MOTIFCL_PIPELINE_CACHE", "/var/cache/some app", 1);
    mcl_env_read(&s);
    assert_int_equal(s.pipeline_cache, MCL_ENV_PIPELINE_CACHE_DIR);
    assert_string_equal(s.pipeline_cache_dir, "/var/cache/some app");
    assert_string_equal(s.problems, "");
    char longer[MCL_ENV_PATH + 8];
    memset(longer, 'a', sizeof longer - 1);
    longer[0] = '/';
    longer[sizeof longer - 1] = '\0';
    static const char *const bad[] = {"", "relative/folder", "offf"};
    for (int i = 0; i < 4; i++) {
        setenv("MOTIFCL_PIPELINE_CACHE", i < 3 ? bad[i] : longer, 1);
        mcl_env_read(&s);
        assert_int_equal(s.pipeline_cache, MCL_ENV_PIPELINE_CACHE_DEFAULT);
        assert_non_null(strstr(s.problems, "MOTIFCL_PIPELINE_CACHE"));
    }
    restore_variable("MOTIFCL_PIPELINE_CACHE", saved);
}

/* The user's cache folder: an absolute XDG_CACHE_HOME, else HOME's .cache (a relative
 * XDG_CACHE_HOME is invalid by the XDG specification), else none; a path that does not fit
 * is none rather than cut. */
static void user_cache_folder(void **state)
{
    (void)state;
    char *xdg = saved_variable("XDG_CACHE_HOME"), *home = saved_variable("HOME");
    char dir[64];
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    setenv("HOME", "/home/u", 1);
    assert_true(mcl_env_user_cache_dir(dir, sizeof dir));
    assert_string_equal(dir, "/x/cache/motifcl");
    setenv("XDG_CACHE_HOME", "relative", 1);
    assert_true(mcl_env_user_cache_dir(dir, sizeof dir));
    assert_string_equal(dir, "/home/u/.cache/motifcl");
    unsetenv("XDG_CACHE_HOME");
    assert_true(mcl_env_user_cache_dir(dir, sizeof dir));
    assert_string_equal(dir, "/home/u/.cache/motifcl");
    assert_false(mcl_env_user_cache_dir(dir, 10));
    assert_string_equal(dir, "");
    setenv("HOME", "", 1);
    assert_false(mcl_env_user_cache_dir(dir, sizeof dir));
    unsetenv("HOME");
    assert_false(mcl_env_user_cache_dir(dir, sizeof dir));
    restore_variable("XDG_CACHE_HOME", xdg);
    restore_variable("HOME", home);
}

static void context_rejects_bad_descriptors(void **state)
{
    (void)state;
    mcl_context *ctx = (mcl_context *)1;
    mcl_context_desc desc = {.size = 4, .device_index = -1};
    assert_int_equal(mcl_context_create(&desc, &ctx), MCL_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_int_equal(mcl_context_create(NULL, NULL), MCL_ERROR_INVALID_ARGUMENT);
    desc.size = sizeof desc;
    desc.device_profile = "no-such-gpu";
    assert_int_equal(mcl_context_create(&desc, &ctx), MCL_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    /* NULL handles are accepted by destroy and rejected by the rest. */
    mcl_context_destroy(NULL);
    mcl_tensor_destroy(NULL);
    assert_int_equal(mcl_finish(NULL), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_upload(NULL, 0, "x", 1), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_tensor_numel(NULL), 0);
}

static void nmse_can_fail(void **state)
{
    (void)state;
    float want[4] = {1, 2, 3, 4}, got[4] = {1, 2, 3, 4};
    assert_true(mcl_nmse(got, want, 4) == 0.0);
    got[2] = 3.5f;
    assert_true(mcl_nmse(got, want, 4) > 1e-3);
}

static void witness_is_written(void **state)
{
    (void)state;
    char dir[] = "/tmp/mcl-witness-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *argv[] = {"/some/where/test_witness_probe", "--flag"};
    /* The MOTIFCL_* environment as the run began: this one recorded, a later change not. */
    setenv("MOTIFCL_WITNESS_PROBE", "a \"value\"", 1);
    setenv("OTHER_WITNESS_PROBE", "unrelated", 1);
    mcl_witness *w = mcl_witness_create("test", argv[0], 2, argv);
    setenv("MOTIFCL_WITNESS_PROBE", "changed", 1);
    mcl_witness_add_check(w, "a \"quoted\" check", "nmse", 1e-9, 1e-6, 1);
    mcl_witness_add_figure(w, "speed", 12.5, "GB/s", "measured");
    mcl_witness_set_note(w, "strict", "1");
    assert_int_equal(mcl_witness_write(w, dir, "passed"), 0);
    mcl_witness_destroy(w);

    char path[512], text[8192];
    snprintf(path, sizeof path, "%s/test_witness_probe.json", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_non_null(strstr(text, "\"result\": \"passed\""));
    assert_non_null(strstr(text, "a \\\"quoted\\\" check"));
    assert_non_null(strstr(text, "\"label\": \"measured\""));
    assert_non_null(strstr(text, "\"git_commit\""));
    assert_non_null(strstr(text, "--flag"));
    assert_non_null(strstr(text, "\"MOTIFCL_WITNESS_PROBE\": \"a \\\"value\\\"\""));
    assert_null(strstr(text, "changed"));
    assert_null(strstr(text, "OTHER_WITNESS_PROBE"));
    unsetenv("MOTIFCL_WITNESS_PROBE");
    unsetenv("OTHER_WITNESS_PROBE");
    /* Nothing left beside it: written under another name, then renamed. */
    char part[600];
    snprintf(part, sizeof part, "%s.part", path);
    assert_null(fopen(part, "r"));
    /* Missing folders are made; a second write replaces the first whole. */
    char nested[512], nested_file[600];
    snprintf(nested, sizeof nested, "%s/a/b", dir);
    snprintf(nested_file, sizeof nested_file, "%s/x.json", nested);
    w = mcl_witness_create("test", "x", 0, NULL);
    assert_int_equal(mcl_witness_write(w, nested, "passed"), 0);
    assert_int_equal(mcl_witness_write(w, nested, "failed"), 0);
    mcl_witness_destroy(w);
    f = fopen(nested_file, "r");
    assert_non_null(f);
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_non_null(strstr(text, "\"result\": \"failed\""));
    assert_null(strstr(text, "\"result\": \"passed\""));
    /* Negative control: a folder that cannot be made (under a file) is reported, not
     * ignored. */
    char under_file[600];
    snprintf(under_file, sizeof under_file, "%s/sub", path);
    w = mcl_witness_create("test", "x", 0, NULL);
    assert_int_equal(mcl_witness_write(w, under_file, "passed"), -1);
    mcl_witness_destroy(w);
    remove(nested_file);
    snprintf(nested_file, sizeof nested_file, "%s/a/b", dir);
    remove(nested_file);
    snprintf(nested_file, sizeof nested_file, "%s/a", dir);
    remove(nested_file);
    remove(path);
    remove(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_matches_header),
        cmocka_unit_test(status_values_are_pinned),
        cmocka_unit_test(every_status_has_a_distinct_name),
        cmocka_unit_test(dtypes),
        cmocka_unit_test(feature_and_quirk_names),
        cmocka_unit_test(list_parsing),
        cmocka_unit_test(env_switches),
        cmocka_unit_test(pipeline_cache_variable),
        cmocka_unit_test(user_cache_folder),
        cmocka_unit_test(context_rejects_bad_descriptors),
        cmocka_unit_test(nmse_can_fail),
        cmocka_unit_test(witness_is_written),
    };
    mcl_test_begin(argc, argv);
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
