/* Device traits and the environment, with no device: mcl_env_read parses every documented
 * variable (and refuses what it cannot take), and mcl_traits_decide turns made-up devices
 * (an RX 580, AMDVLK, an H200, Lavapipe) with a profile and settings into the traits the ops
 * read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "env.h"
#include "vk/traits.h"

/* Vulkan's driver ids (VkDriverId) the quirk table keys on. */
#define DRIVER_AMD_PROPRIETARY 1u
#define DRIVER_AMD_OPEN_SOURCE 2u
#define DRIVER_MESA_RADV 3u
#define DRIVER_NVIDIA_PROPRIETARY 4u
#define DRIVER_MESA_LLVMPIPE 13u

static const char *const variables[] = {
    "MOTIFCL_LOG",           "MOTIFCL_DEVICE",          "MOTIFCL_DEVICE_PROFILE",
    "MOTIFCL_VALIDATION",    "MOTIFCL_DISABLE",         "MOTIFCL_FORCE",
    "MOTIFCL_TRANSFER",      "MOTIFCL_QUANT_PATH",      "MOTIFCL_QUANT_GEMV_PLAN",
    "MOTIFCL_QUANT_GEMM_SLICES", "MOTIFCL_QUANT_GEMM_UNROLL", "MOTIFCL_QUANT_GEMM_FLOAT_TILE",
    "MOTIFCL_QUANT_GEMM_TILE", "MOTIFCL_PIPELINE_STATS", "MOTIFCL_MAX_BINDING",
    "MOTIFCL_ENGINE_EAGER",  "MOTIFCL_ATTENTION_SPLITS", "MOTIFCL_ATTENTION_WG",
    "MOTIFCL_GEMM_UNROLL",   "MOTIFCL_GEMM_TILE",       "MOTIFCL_GEMV_PLAN",
    "MOTIFCL_ATTENTION_F32", "MOTIFCL_ENGINE_SPLIT_GLU", "MOTIFCL_ENGINE_SPLIT_MOE",
    "MOTIFCL_ENGINE_WARM",   "MOTIFCL_COUNTER_ROWS",    "MOTIFCL_ENGINE_NORM_FOLD",
};
#define VARIABLE_COUNT (sizeof variables / sizeof variables[0])

static void clear_environment(void)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        unsetenv(variables[i]);
}

static const uint64_t gpu_features =
    MCL_FEATURE_SUBGROUP_BASIC | MCL_FEATURE_SUBGROUP_ARITHMETIC |
    MCL_FEATURE_SUBGROUP_SIZE_CONTROL | MCL_FEATURE_STORAGE_8BIT | MCL_FEATURE_STORAGE_16BIT |
    MCL_FEATURE_SHADER_FLOAT16 | MCL_FEATURE_SHADER_INT8 | MCL_FEATURE_TIMESTAMPS;

static mcl_device_info device(uint32_t vendor, uint32_t driver, uint32_t subgroup,
                              uint64_t features, const char *profile)
{
    mcl_device_info d = {.size = sizeof d};
    d.vendor_id = vendor;
    d.driver_id = driver;
    d.subgroup_size = subgroup;
    d.features_available = features;
    d.max_compute_shared_memory_size = 49152;
    d.max_compute_workgroup_invocations = 1024;
    d.max_compute_workgroup_size[0] = d.max_compute_workgroup_size[1] = 1024;
    d.max_compute_workgroup_size[2] = 64;
    d.max_storage_buffer_range = UINT32_MAX;
    d.min_storage_buffer_offset_alignment = 64;
    strcpy(d.profile, profile);
    return d;
}

static mcl_traits decide(mcl_device_info *d, const mcl_env_settings *env)
{
    mcl_traits t;
    mcl_traits_decide(d, env, NULL, &t);
    return t;
}

static void nothing_set_reads_as_defaults(void **state)
{
    (void)state;
    clear_environment();
    mcl_env_settings read, defaults;
    mcl_env_read(&read);
    mcl_env_defaults(&defaults);
    assert_memory_equal(&read, &defaults, sizeof read);
    assert_int_equal(read.log_level, -1);
}

static void every_variable_is_parsed(void **state)
{
    (void)state;
    clear_environment();
    setenv("MOTIFCL_LOG", "info", 1);
    setenv("MOTIFCL_DEVICE", "H200", 1);
    setenv("MOTIFCL_DEVICE_PROFILE", "polaris", 1);
    setenv("MOTIFCL_VALIDATION", "sync", 1);
    setenv("MOTIFCL_DISABLE", "subgroup-arithmetic,storage-8bit", 1);
    setenv("MOTIFCL_FORCE", "integer-dot", 1);
    setenv("MOTIFCL_TRANSFER", "staging", 1);
    setenv("MOTIFCL_QUANT_PATH", "dot", 1);
    setenv("MOTIFCL_QUANT_GEMV_PLAN", "t=64,nr=4,st=1,cvt=0", 1);
    setenv("MOTIFCL_QUANT_GEMM_SLICES", "3", 1);
    setenv("MOTIFCL_QUANT_GEMM_UNROLL", "4", 1);
    setenv("MOTIFCL_GEMM_UNROLL", "16", 1);
    setenv("MOTIFCL_GEMM_TILE", "64x128", 1);
    setenv("MOTIFCL_QUANT_GEMM_FLOAT_TILE", "64x256", 1);
    setenv("MOTIFCL_QUANT_GEMM_TILE", "128x64", 1);
    setenv("MOTIFCL_PIPELINE_STATS", "1", 1);
    setenv("MOTIFCL_MAX_BINDING", "1048576", 1);
    setenv("MOTIFCL_ENGINE_EAGER", "1", 1);
    setenv("MOTIFCL_ATTENTION_SPLITS", "8", 1);
    setenv("MOTIFCL_ATTENTION_WG", "256", 1);
    setenv("MOTIFCL_GEMV_PLAN", "t=128,g=4,nr=8,u=0", 1);
    mcl_env_settings s;
    mcl_env_read(&s);
    assert_string_equal(s.problems, "");
    assert_int_equal(s.log_level, MCL_LOG_INFO);
    assert_string_equal(s.device, "H200");
    assert_string_equal(s.profile, "polaris");
    assert_int_equal(s.validation, MCL_CONTEXT_VALIDATION | MCL_CONTEXT_VALIDATION_SYNC);
    assert_int_equal(s.disable, MCL_FEATURE_SUBGROUP_ARITHMETIC | MCL_FEATURE_STORAGE_8BIT);
    assert_int_equal(s.force, MCL_FEATURE_INTEGER_DOT_PRODUCT);
    assert_int_equal(s.transfer, MCL_ENV_TRANSFER_STAGING);
    assert_int_equal(s.quant_path, MCL_ENV_QUANT_DOT);
    assert_int_equal(s.gemv.set, MCL_GEMV_SET_T | MCL_GEMV_SET_NR | MCL_GEMV_SET_ST |
                                     MCL_GEMV_SET_CVT);
    assert_int_equal(s.gemv.t, 64);
    assert_int_equal(s.gemv.nr, 4);
    assert_int_equal(s.gemv.st, 1);
    assert_int_equal(s.gemv.cvt, 0);
    assert_int_equal(s.gemv_f32.set, MCL_GEMV_SET_T | MCL_GEMV_SET_G | MCL_GEMV_SET_NR |
                                         MCL_GEMV_SET_U);
    assert_int_equal(s.gemv_f32.t, 128);
    assert_int_equal(s.gemv_f32.g, 4);
    assert_int_equal(s.gemv_f32.nr, 8);
    assert_int_equal(s.gemv_f32.u, 0);
    assert_int_equal(s.gemm_slices, 3);
    assert_int_equal(s.attention_splits, 8);
    assert_int_equal(s.attention_wg, 256);
    assert_int_equal(s.gemm_unroll, 4);
    assert_int_equal(s.gemm_f32_unroll, 16);
    assert_int_equal(s.gemm_f32_tile[0], 64);
    assert_int_equal(s.gemm_f32_tile[1], 128);
    assert_int_equal(s.gemm_float_tile[0], 64);
    assert_int_equal(s.gemm_float_tile[1], 256);
    assert_int_equal(s.gemm_matrix_tile[0], 128);
    assert_int_equal(s.gemm_matrix_tile[1], 64);
    assert_int_equal(s.pipeline_stats, 1);
    assert_int_equal(s.max_binding, 1048576);
    assert_int_equal(s.engine_eager, 1);
    clear_environment();
}

/* What cannot be taken is named and left at its default: never half-read, never a silent
 * change of behaviour. */
static void bad_values_are_refused_by_name(void **state)
{
    (void)state;
    static const struct {
        const char *name, *value;
    } bad[] = {
        {"MOTIFCL_LOG", "loud"},
        {"MOTIFCL_VALIDATION", "maybe"},
        {"MOTIFCL_DISABLE", "warp-drive"},
        {"MOTIFCL_FORCE", "warp-drive"},
        {"MOTIFCL_QUANT_PATH", "bogus"},
        {"MOTIFCL_QUANT_GEMV_PLAN", "t=64,zz=1"},
        {"MOTIFCL_GEMV_PLAN", "nr=4,pb=16"},
        {"MOTIFCL_GEMV_PLAN", "nr=4,zz=1"},
        {"MOTIFCL_QUANT_GEMM_SLICES", "3x"},
        {"MOTIFCL_QUANT_GEMM_SLICES", "17"},
        {"MOTIFCL_ATTENTION_SPLITS", "65"},
        {"MOTIFCL_ATTENTION_WG", "96"},
        {"MOTIFCL_QUANT_GEMM_UNROLL", "3"},
        {"MOTIFCL_GEMM_UNROLL", "32"},
        {"MOTIFCL_GEMM_TILE", "128x256"},
        {"MOTIFCL_QUANT_GEMM_FLOAT_TILE", "256x256"},
        {"MOTIFCL_QUANT_GEMM_TILE", "256x64"},
        {"MOTIFCL_MAX_BINDING", "-5"},
    };
    mcl_env_settings defaults;
    mcl_env_defaults(&defaults);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_environment();
        setenv(bad[i].name, bad[i].value, 1);
        mcl_env_settings s;
        mcl_env_read(&s);
        assert_non_null(strstr(s.problems, bad[i].name));
        memset(s.problems, 0, sizeof s.problems);
        if (strcmp(bad[i].name, "MOTIFCL_LOG") == 0) {
            assert_int_equal(s.log_level, MCL_LOG_WARNING);
            s.log_level = -1;
        }
        assert_memory_equal(&s, &defaults, sizeof s);
    }
    /* A transfer mode that does not exist is kept as invalid: the context refuses it. */
    clear_environment();
    setenv("MOTIFCL_TRANSFER", "teleport", 1);
    mcl_env_settings s;
    mcl_env_read(&s);
    assert_int_equal(s.transfer, MCL_ENV_TRANSFER_INVALID);
    /* Negative control: "off" is a value MOTIFCL_VALIDATION takes, and takes as off. */
    clear_environment();
    setenv("MOTIFCL_VALIDATION", "off", 1);
    mcl_env_read(&s);
    assert_string_equal(s.problems, "");
    assert_int_equal(s.validation, 0);
    clear_environment();
}

/* Every value parsed whole: a value with a sign, a space, trailing text or past its type's
 * range is named in a warning with what is accepted, and changes nothing. */
static void malformed_values_keep_the_defaults(void **state)
{
    (void)state;
    static const struct {
        const char *name, *value, *accepted;
    } bad[] = {
        {"MOTIFCL_DEVICE", "-1", "index"},
        {"MOTIFCL_DEVICE", "+0", "index"},
        {"MOTIFCL_PIPELINE_STATS", "maybe", "off"},
        {"MOTIFCL_ENGINE_EAGER", "bogus", "off"},
        {"MOTIFCL_ENGINE_NORM_FOLD", "bogus", "off"},
        {"MOTIFCL_QUANT_PATH", "bogus", "float"},
        {"MOTIFCL_QUANT_GEMM_TILE", "bogus", "64"},
        {"MOTIFCL_QUANT_GEMM_TILE", " 64x64", "64"},
        {"MOTIFCL_QUANT_GEMM_TILE", "+64x64", "64"},
        {"MOTIFCL_QUANT_GEMM_FLOAT_TILE", "64x64 ", "64"},
        {"MOTIFCL_QUANT_GEMV_PLAN", "t=-1", "nr"},
        {"MOTIFCL_QUANT_GEMV_PLAN", "t=4294967360", "nr"},
        {"MOTIFCL_QUANT_GEMV_PLAN", "t=64,", "nr"},
        {"MOTIFCL_GEMV_PLAN", "u=-1", "nr"},
        {"MOTIFCL_MAX_BINDING", "-5", "byte"},
        {"MOTIFCL_MAX_BINDING", "99999999999999999999", "byte"},
        {"MOTIFCL_QUANT_GEMM_SLICES", " 3", "16"},
        {"MOTIFCL_ATTENTION_SPLITS", "0", "64"},
        {"MOTIFCL_ATTENTION_WG", "512", "256"},
    };
    mcl_env_settings defaults;
    mcl_env_defaults(&defaults);
    int failures = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_environment();
        setenv(bad[i].name, bad[i].value, 1);
        mcl_env_settings s;
        mcl_env_read(&s);
        char named[96];
        snprintf(named, sizeof named, "%s=%s", bad[i].name, bad[i].value);
        if (!strstr(s.problems, named) || !strstr(s.problems, bad[i].accepted)) {
            print_error("%s: the warning \"%s\" does not name it and what is accepted (%s)\n",
                        named, s.problems, bad[i].accepted);
            failures++;
        }
        memset(s.problems, 0, sizeof s.problems);
        if (memcmp(&s, &defaults, sizeof s) != 0) {
            print_error("%s changed a default\n", named);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
    /* One unknown name in a list is named; the known ones are taken. */
    clear_environment();
    setenv("MOTIFCL_DISABLE", "subgroup-arithmetic,warp-drive", 1);
    mcl_env_settings s;
    mcl_env_read(&s);
    assert_non_null(strstr(s.problems, "warp-drive"));
    assert_int_equal(s.disable, MCL_FEATURE_SUBGROUP_ARITHMETIC);
    /* Controls: the off words are values, not problems; an index past 32 bits is an index
     * (the device choice refuses it), a name is a name. */
    static const char *const off[] = {"MOTIFCL_PIPELINE_STATS", "MOTIFCL_ENGINE_EAGER",
                                      "MOTIFCL_VALIDATION", "MOTIFCL_LOG"};
    static const char *const off_words[] = {"0", "off", "false", "no", "OFF"};
    for (size_t i = 0; i < 4; i++) {
        for (size_t w = 0; w < 5; w++) {
            clear_environment();
            setenv(off[i], off_words[w], 1);
            mcl_env_read(&s);
            if (s.problems[0] || s.pipeline_stats || s.engine_eager || s.validation ||
                s.log_level != -1)
                fail_msg("%s=%s is not read as off", off[i], off_words[w]);
        }
    }
    clear_environment();
    setenv("MOTIFCL_DEVICE", "4294967296", 1);
    mcl_env_read(&s);
    assert_string_equal(s.problems, "");
    assert_true(s.device_by_index);
    assert_true(s.device_index == UINT64_C(4294967296));
    setenv("MOTIFCL_DEVICE", "99999999999999999999999", 1);
    mcl_env_read(&s);
    assert_string_equal(s.problems, "");
    assert_true(s.device_by_index);
    assert_true(s.device_index == UINT64_MAX);
    setenv("MOTIFCL_DEVICE", "llvmpipe", 1);
    mcl_env_read(&s);
    assert_false(s.device_by_index);
    assert_string_equal(s.device, "llvmpipe");
    clear_environment();
}

static void rx580_gets_the_gcn_plans(void **state)
{
    (void)state;
    mcl_env_settings env;
    mcl_env_defaults(&env);
    mcl_device_info d = device(0x1002, DRIVER_MESA_RADV, 64, gpu_features, "none");
    mcl_traits t = decide(&d, &env);
    assert_int_equal(t.device_class, MCL_CLASS_AMD_WAVE64);
    assert_false(t.quant_dot);
    assert_true(t.subgroup_arithmetic);
    assert_int_equal(d.quirks, 0);
    /* An AMD device in waves of 32 is AMD, not wave64. */
    d = device(0x1002, DRIVER_MESA_RADV, 32, gpu_features, "none");
    assert_int_equal(decide(&d, &env).device_class, MCL_CLASS_AMD);
}

static void quirk_table_and_force(void **state)
{
    (void)state;
    mcl_env_settings env;
    mcl_env_defaults(&env);
    uint64_t dot = MCL_FEATURE_INTEGER_DOT_PRODUCT | MCL_FEATURE_INTEGER_DOT_ACCELERATED;
    mcl_device_info d = device(0x1002, DRIVER_AMD_OPEN_SOURCE, 64, gpu_features | dot, "none");
    mcl_traits t = decide(&d, &env);
    assert_false(t.integer_dot);
    assert_false(t.quant_dot);
    assert_true(d.quirks & MCL_QUIRK_NO_INTEGER_DOT);
    /* MOTIFCL_FORCE overrides the quirk table... */
    env.force = MCL_FEATURE_INTEGER_DOT_PRODUCT | MCL_FEATURE_INTEGER_DOT_ACCELERATED;
    d = device(0x1002, DRIVER_AMD_OPEN_SOURCE, 64, gpu_features | dot, "none");
    t = decide(&d, &env);
    assert_true(t.integer_dot);
    assert_true(t.quant_dot);
    assert_int_equal(d.quirks & MCL_QUIRK_NO_INTEGER_DOT, 0);
    /* ...but not the profile: an RX 580 has no integer dot to force. */
    d = device(0x1002, DRIVER_AMD_OPEN_SOURCE, 64, gpu_features | dot, "polaris");
    t = decide(&d, &env);
    assert_false(t.integer_dot);
    assert_false(t.float16);
}

static void h200_and_its_polaris_profile(void **state)
{
    (void)state;
    mcl_env_settings env;
    mcl_env_defaults(&env);
    uint64_t h200 = gpu_features | MCL_FEATURE_INTEGER_DOT_PRODUCT |
                    MCL_FEATURE_INTEGER_DOT_ACCELERATED | MCL_FEATURE_COOPERATIVE_MATRIX |
                    MCL_FEATURE_EXTERNAL_HOST_MEMORY;
    mcl_device_info d = device(0x10de, DRIVER_NVIDIA_PROPRIETARY, 32, h200, "none");
    mcl_traits t = decide(&d, &env);
    assert_int_equal(t.device_class, MCL_CLASS_GENERIC);
    assert_true(t.quant_dot);
    assert_true(t.quant_matrix);
    assert_int_equal(t.weight_part_bytes, UINT32_MAX);
    /* MOTIFCL_QUANT_PATH=float keeps both the GEMV and the GEMM off their faster paths. */
    env.quant_path = MCL_ENV_QUANT_FLOAT;
    t = decide(&d, &env);
    assert_false(t.quant_dot);
    assert_false(t.quant_matrix);
    /* dot keeps the GEMM off the matrix path too. */
    env.quant_path = MCL_ENV_QUANT_DOT;
    t = decide(&d, &env);
    assert_true(t.quant_dot);
    assert_false(t.quant_matrix);
    /* The polaris profile: the class of an RX 580, neither float16 nor integer dot nor
     * cooperative matrices, on the same device. */
    mcl_env_defaults(&env);
    d = device(0x10de, DRIVER_NVIDIA_PROPRIETARY, 32, h200, "polaris");
    t = decide(&d, &env);
    assert_int_equal(t.device_class, MCL_CLASS_AMD_WAVE64);
    assert_false(t.float16);
    assert_false(t.integer_dot);
    assert_false(t.cooperative_matrix);
    assert_true(d.quirks & MCL_QUIRK_NO_FLOAT16);
    assert_true(d.quirks & MCL_QUIRK_NO_INTEGER_DOT);
    /* MOTIFCL_MAX_BINDING lowers where a quantized weight splits, never raises it. */
    env.max_binding = 1 << 20;
    assert_int_equal(decide(&d, &env).weight_part_bytes, 1 << 20);
    env.max_binding = UINT64_C(1) << 40;
    assert_int_equal(decide(&d, &env).weight_part_bytes, UINT32_MAX);
}

static void lavapipe_takes_the_dot_path_only_when_asked(void **state)
{
    (void)state;
    mcl_env_settings env;
    mcl_env_defaults(&env);
    uint64_t f = gpu_features | MCL_FEATURE_INTEGER_DOT_PRODUCT;
    mcl_device_info d = device(0x10005, DRIVER_MESA_LLVMPIPE, 8, f, "none");
    assert_false(decide(&d, &env).quant_dot);
    env.force = MCL_FEATURE_INTEGER_DOT_PRODUCT;
    assert_true(decide(&d, &env).quant_dot);
    env.force = 0;
    env.quant_path = MCL_ENV_QUANT_DOT;
    assert_true(decide(&d, &env).quant_dot);
    env.disable = MCL_FEATURE_INTEGER_DOT_PRODUCT;
    assert_false(decide(&d, &env).quant_dot);
}

static void traits_print_as_json(void **state)
{
    (void)state;
    mcl_env_settings env;
    mcl_env_defaults(&env);
    env.gemv.set = MCL_GEMV_SET_T;
    env.gemv.t = 64;
    env.gemv_f32 = (mcl_gemv_override){.set = MCL_GEMV_SET_NR | MCL_GEMV_SET_U, .nr = 8, .u = 1};
    mcl_device_info d = device(0x1002, DRIVER_MESA_RADV, 64, gpu_features, "polaris");
    mcl_traits t = decide(&d, &env);
    size_t n = mcl_traits_json(&t, NULL, 0);
    char *text = malloc(n + 1);
    assert_non_null(text);
    assert_int_equal(mcl_traits_json(&t, text, n + 1), n);
    assert_int_equal(strlen(text), n);
    assert_non_null(strstr(text, "\"class\": \"amd-wave64\""));
    assert_non_null(strstr(text, "\"profile\": \"polaris\""));
    assert_non_null(strstr(text, "\"gemv_override\": {\"t\": 64}"));
    assert_non_null(strstr(text, "\"gemv_f32_override\": {\"nr\": 8, \"u\": 1}"));
    /* Truncated output stays terminated. */
    char small[16];
    assert_int_equal(mcl_traits_json(&t, small, sizeof small), n);
    assert_int_equal(strlen(small), sizeof small - 1);
    free(text);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nothing_set_reads_as_defaults),
        cmocka_unit_test(every_variable_is_parsed),
        cmocka_unit_test(bad_values_are_refused_by_name),
        cmocka_unit_test(malformed_values_keep_the_defaults),
        cmocka_unit_test(rx580_gets_the_gcn_plans),
        cmocka_unit_test(quirk_table_and_force),
        cmocka_unit_test(h200_and_its_polaris_profile),
        cmocka_unit_test(lavapipe_takes_the_dot_path_only_when_asked),
        cmocka_unit_test(traits_print_as_json),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
