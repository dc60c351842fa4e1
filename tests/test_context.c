/* The context on a real device: what it reports, how it chooses, how the profile and the
 * environment switches mask features, and that validation errors are counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "env.h"
#include "vk/inspect.h"

static mcl_context *ctx;

static mcl_context *create_with(const mcl_context_desc *desc, mcl_status expect)
{
    mcl_context *c = NULL;
    mcl_status s = mcl_context_create(desc, &c);
    assert_int_equal(s, expect);
    return c;
}

static void device_info_is_populated(void **state)
{
    (void)state;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    assert_true(strlen(info.name) > 0);
    assert_true(strlen(info.driver_name) > 0);
    /* Vulkan 1.2 at least: major 1, minor 2 in VK_MAKE_API_VERSION's bits. */
    assert_true(info.api_version >= ((1u << 22) | (2u << 12)));
    assert_true(info.subgroup_size >= 1);
    assert_true(info.min_subgroup_size <= info.subgroup_size);
    assert_true(info.subgroup_size <= info.max_subgroup_size);
    assert_true(info.max_storage_buffer_range >= 128u * 1024 * 1024 - 1);
    assert_true(info.max_memory_allocation_size > 0);
    assert_true(info.memory_heap_count >= 1);
    assert_true(info.max_compute_workgroup_invocations >= 128);
    /* What is enabled is a subset of what is available. */
    assert_int_equal(info.features_enabled & ~info.features_available, 0);
    printf("features available 0x%llx enabled 0x%llx quirks 0x%llx\n",
           (unsigned long long)info.features_available,
           (unsigned long long)info.features_enabled, (unsigned long long)info.quirks);
    char text[64];
    snprintf(text, sizeof text, "%u", info.subgroup_size);
    mcl_test_note("subgroup_size", text);
}

static void short_info_struct_is_respected(void **state)
{
    (void)state;
    /* An older caller's struct: the library must not write past its size. */
    unsigned char buffer[sizeof(mcl_device_info) + 64];
    memset(buffer, 0xab, sizeof buffer);
    mcl_device_info *info = (mcl_device_info *)buffer;
    info->size = sizeof(mcl_device_info);
    assert_mcl_ok(mcl_context_device_info(ctx, info));
    for (size_t i = sizeof(mcl_device_info); i < sizeof buffer; i++)
        assert_int_equal(buffer[i], 0xab);
    info->size = 8;
    assert_int_equal(mcl_context_device_info(ctx, info), MCL_ERROR_INVALID_ARGUMENT);
}

static void polaris_profile_masks_features(void **state)
{
    (void)state;
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1,
                             .device_profile = "polaris"};
    mcl_context *c = create_with(&desc, MCL_SUCCESS);
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(c, &info));
    assert_string_equal(info.profile, "polaris");
    assert_int_equal(info.features_enabled & MCL_FEATURE_SHADER_FLOAT16, 0);
    assert_int_equal(info.features_enabled & MCL_FEATURE_INTEGER_DOT_PRODUCT, 0);
    assert_int_equal(info.features_enabled & MCL_FEATURE_INTEGER_DOT_ACCELERATED, 0);
    if (info.features_available & MCL_FEATURE_SHADER_FLOAT16)
        assert_true(info.quirks & MCL_QUIRK_NO_FLOAT16);
    mcl_context_destroy(c);

    /* Negative control: with no profile the device's float16 (where it has it) stays on. */
    desc.device_profile = "none";
    c = create_with(&desc, MCL_SUCCESS);
    assert_mcl_ok(mcl_context_device_info(c, &info));
    assert_string_equal(info.profile, "none");
    if ((info.features_available & MCL_FEATURE_SHADER_FLOAT16) &&
        !getenv("MOTIFCL_DISABLE"))
        assert_true(info.features_enabled & MCL_FEATURE_SHADER_FLOAT16);
    mcl_context_destroy(c);
}

static void environment_disables_and_forces(void **state)
{
    (void)state;
    char *saved = getenv("MOTIFCL_DISABLE") ? strdup(getenv("MOTIFCL_DISABLE")) : NULL;
    setenv("MOTIFCL_DISABLE", "subgroup-arithmetic,storage-8bit", 1);
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1, .device_profile = "none"};
    mcl_context *c = create_with(&desc, MCL_SUCCESS);
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(c, &info));
    assert_int_equal(info.features_enabled & MCL_FEATURE_SUBGROUP_ARITHMETIC, 0);
    assert_int_equal(info.features_enabled & MCL_FEATURE_STORAGE_8BIT, 0);
    if (info.features_available & MCL_FEATURE_SUBGROUP_ARITHMETIC)
        assert_true(info.quirks & MCL_QUIRK_NO_SUBGROUP_ARITHMETIC);
    mcl_context_destroy(c);

    /* The profile wins over MOTIFCL_FORCE: an RX 580 has no float16 to force. */
    unsetenv("MOTIFCL_DISABLE");
    setenv("MOTIFCL_FORCE", "float16", 1);
    desc.device_profile = "polaris";
    c = create_with(&desc, MCL_SUCCESS);
    assert_mcl_ok(mcl_context_device_info(c, &info));
    assert_int_equal(info.features_enabled & MCL_FEATURE_SHADER_FLOAT16, 0);
    mcl_context_destroy(c);
    unsetenv("MOTIFCL_FORCE");
    if (saved) {
        setenv("MOTIFCL_DISABLE", saved, 1);
        free(saved);
    }
}

/* Every documented variable, set to a value that would change what a context does. */
static const struct {
    const char *name, *value;
} every_variable[] = {
    {"MOTIFCL_LOG", "debug"},
    {"MOTIFCL_DEVICE", "no such device anywhere"},
    {"MOTIFCL_DEVICE_PROFILE", "polaris"},
    {"MOTIFCL_VALIDATION", "1"},
    {"MOTIFCL_DISABLE", "subgroup-arithmetic"},
    {"MOTIFCL_FORCE", "integer-dot"},
    {"MOTIFCL_TRANSFER", "staging"},
    {"MOTIFCL_QUANT_PATH", "dot"},
    {"MOTIFCL_QUANT_GEMV_PLAN", "t=64"},
    {"MOTIFCL_GEMV_PLAN", "nr=8"},
    {"MOTIFCL_QUANT_GEMM_SLICES", "3"},
    {"MOTIFCL_ATTENTION_SPLITS", "8"},
    {"MOTIFCL_ATTENTION_WG", "128"},
    {"MOTIFCL_QUANT_GEMM_UNROLL", "2"},
    {"MOTIFCL_QUANT_GEMM_FLOAT_TILE", "64x128"},
    {"MOTIFCL_GEMM_TILE", "128x64"},
    {"MOTIFCL_QUANT_GEMM_TILE", "64x64"},
    {"MOTIFCL_PIPELINE_STATS", "1"},
    {"MOTIFCL_MAX_BINDING", "65536"},
};
#define VARIABLE_COUNT (sizeof every_variable / sizeof every_variable[0])

/* What a context decided: its traits as JSON, its profile, features and validation. */
typedef struct decided {
    mcl_status status;
    char traits[2048];
    mcl_device_info info;
} decided;

static decided create_and_describe(uint32_t flags)
{
    decided d;
    memset(&d, 0, sizeof d);
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1, .flags = flags};
    mcl_context *c = NULL;
    d.status = mcl_context_create(&desc, &c);
    if (d.status == MCL_SUCCESS) {
        d.info.size = sizeof d.info;
        assert_mcl_ok(mcl_context_device_info(c, &d.info));
        assert_mcl_ok(mcl_context_traits_json(c, d.traits, sizeof d.traits, NULL));
        mcl_context_destroy(c);
    }
    return d;
}

static int same_decision(const decided *a, const decided *b)
{
    return a->status == b->status && strcmp(a->traits, b->traits) == 0 &&
           strcmp(a->info.profile, b->info.profile) == 0 &&
           a->info.features_enabled == b->info.features_enabled &&
           a->info.quirks == b->info.quirks && a->info.validation == b->info.validation &&
           a->info.device_index == b->info.device_index;
}

/* A context created with MCL_CONTEXT_IGNORE_ENVIRONMENT takes the defaults whatever the
 * environment says: with every documented variable set, it decides what a context decides
 * with none set. Control: each variable alone, not ignored, changes the decision (or, for
 * MOTIFCL_DEVICE, the creation), so the comparison would see it. */
static void ignoring_the_environment_takes_the_defaults(void **state)
{
    (void)state;
    char *saved[VARIABLE_COUNT];
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        const char *v = getenv(every_variable[i].name);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(every_variable[i].name);
    }
    decided plain = create_and_describe(0);
    assert_mcl_ok(plain.status);
    int changed = 0;
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        setenv(every_variable[i].name, every_variable[i].value, 1);
        decided alone = create_and_describe(0);
        decided ignored = create_and_describe(MCL_CONTEXT_IGNORE_ENVIRONMENT);
        unsetenv(every_variable[i].name);
        assert_true(same_decision(&ignored, &plain));
        int differs = !same_decision(&alone, &plain);
        /* MOTIFCL_LOG changes only what reaches stderr. MOTIFCL_FORCE=integer-dot and
         * MOTIFCL_QUANT_PATH=dot change something only where the device has integer dot
         * product and does not take that path by itself (Lavapipe), or has cooperative
         * matrices for the GEMM (the H200). */
        if (strcmp(every_variable[i].name, "MOTIFCL_LOG") == 0)
            continue;
        if (!differs && (strcmp(every_variable[i].name, "MOTIFCL_FORCE") == 0 ||
                         strcmp(every_variable[i].name, "MOTIFCL_QUANT_PATH") == 0)) {
            mcl_test_note(every_variable[i].name, "changes nothing on this device");
            continue;
        }
        if (!differs)
            fprintf(stderr, "FAIL: %s=%s did not change the context\n", every_variable[i].name,
                    every_variable[i].value);
        assert_true(differs);
        changed++;
    }
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        setenv(every_variable[i].name, every_variable[i].value, 1);
    decided all_ignored = create_and_describe(MCL_CONTEXT_IGNORE_ENVIRONMENT);
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        if (saved[i])
            setenv(every_variable[i].name, saved[i], 1);
        else
            unsetenv(every_variable[i].name);
        free(saved[i]);
    }
    assert_true(same_decision(&all_ignored, &plain));
    assert_string_equal(all_ignored.info.profile, "none");
    char name[96];
    snprintf(name, sizeof name, "environment ignored: defaults taken (%d of %zu variables "
             "seen to change a context)", changed, VARIABLE_COUNT);
    mcl_test_record_bool(name, 1);
}

static void device_choice(void **state)
{
    (void)state;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));

    /* By index and by name substring, the same device comes back. */
    mcl_context_desc desc = {.size = sizeof desc, .device_index = (int32_t)info.device_index};
    mcl_context *c = create_with(&desc, MCL_SUCCESS);
    mcl_device_info other = {.size = sizeof other};
    assert_mcl_ok(mcl_context_device_info(c, &other));
    assert_string_equal(other.name, info.name);
    mcl_context_destroy(c);

    char fragment[8] = {0};
    memcpy(fragment, info.name, strlen(info.name) < 4 ? strlen(info.name) : 4);
    desc.device_index = -1;
    desc.device_name = fragment;
    c = create_with(&desc, MCL_SUCCESS);
    mcl_context_destroy(c);

    /* Clear errors for devices that do not exist. */
    desc.device_name = "no-such-device-anywhere";
    assert_null(create_with(&desc, MCL_ERROR_NO_DEVICE));
    desc.device_name = NULL;
    desc.device_index = 4096;
    assert_null(create_with(&desc, MCL_ERROR_NO_DEVICE));
}

/* Messages a context creation logs, captured through the public log callback. */
static char captured[4096];
static void capture_log(void *user, mcl_log_level level, const char *message)
{
    (void)user;
    size_t used = strlen(captured);
    snprintf(captured + used, sizeof captured - used, "%s: %s\n",
             level == MCL_LOG_ERROR ? "error" : "warning", message);
}

static mcl_status create_capturing(mcl_context **out)
{
    captured[0] = '\0';
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1, .log_fn = capture_log,
                             .log_level = MCL_LOG_WARNING};
    *out = NULL;
    return mcl_context_create(&desc, out);
}

static int captured_has(const char *what)
{
    if (strstr(captured, what))
        return 1;
    print_error("the log does not say \"%s\":\n%s", what, captured);
    return 0;
}

/* MOTIFCL_DEVICE read whole: an index past 32 bits is refused, not truncated to device 0 (it
 * was, and indexed past the device array); a device that matches nothing is refused with the
 * devices that exist and the log switch named; a malformed value warns and keeps the
 * default. The other variables warn by name through the log callback and keep their
 * defaults: validation stays off for "off". */
static void environment_is_read_strictly(void **state)
{
    (void)state;
    static const char *const names[] = {"MOTIFCL_DEVICE", "MOTIFCL_VALIDATION",
                                        "MOTIFCL_QUANT_PATH", "MOTIFCL_MAX_BINDING",
                                        "MOTIFCL_QUANT_GEMM_TILE"};
    char *saved[5];
    for (size_t i = 0; i < 5; i++) {
        const char *v = getenv(names[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(names[i]);
    }
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    mcl_context *c = NULL;
    int ok = 1;

    setenv("MOTIFCL_DEVICE", "4294967296", 1);
    ok &= create_capturing(&c) == MCL_ERROR_NO_DEVICE && c == NULL;
    ok &= captured_has("4294967296") && captured_has(info.name);

    setenv("MOTIFCL_DEVICE", "no such device anywhere", 1);
    ok &= create_capturing(&c) == MCL_ERROR_NO_DEVICE && c == NULL;
    ok &= captured_has(info.name) && captured_has("MOTIFCL_LOG");

    setenv("MOTIFCL_DEVICE", "-1", 1);
    setenv("MOTIFCL_VALIDATION", "off", 1);
    setenv("MOTIFCL_QUANT_PATH", "bogus", 1);
    setenv("MOTIFCL_MAX_BINDING", "-5", 1);
    setenv("MOTIFCL_QUANT_GEMM_TILE", "bogus", 1);
    mcl_status s = create_capturing(&c);
    ok &= s == MCL_SUCCESS;
    if (s == MCL_SUCCESS) {
        mcl_device_info got = {.size = sizeof got};
        assert_mcl_ok(mcl_context_device_info(c, &got));
        ok &= got.validation == 0;
        ok &= captured_has("warning: ") && captured_has("MOTIFCL_DEVICE=-1") &&
              captured_has("MOTIFCL_QUANT_PATH=bogus") && captured_has("MOTIFCL_MAX_BINDING=-5") &&
              captured_has("MOTIFCL_QUANT_GEMM_TILE=bogus");
        ok &= !strstr(captured, "MOTIFCL_VALIDATION");
        mcl_context_destroy(c);
    }
    for (size_t i = 0; i < 5; i++) {
        if (saved[i])
            setenv(names[i], saved[i], 1);
        else
            unsetenv(names[i]);
        free(saved[i]);
    }
    mcl_test_record_bool("environment: MOTIFCL_DEVICE read whole, bad values warned by name, "
                         "defaults kept", ok);
    assert_true(ok);
}

static int count_messages;
static void count_log(void *user, mcl_log_level level, const char *message)
{
    (void)user;
    (void)message;
    if (level == MCL_LOG_ERROR)
        count_messages++;
}

/* Negative control for the validation accounting: a deliberately invalid call must be
 * counted, or a clean count would prove nothing. */
static void validation_errors_are_counted(void **state)
{
    (void)state;
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1,
                             .flags = MCL_CONTEXT_VALIDATION, .log_fn = count_log};
    mcl_context *c = NULL;
    mcl_status s = mcl_context_create(&desc, &c);
    if (s == MCL_ERROR_LAYER_UNAVAILABLE) {
        mcl_test_note("validation_negative_control", "layer not installed");
        if (mcl_env_truthy("MOTIFCL_VALIDATION"))
            fail_msg("MOTIFCL_VALIDATION is set but the validation layer is not installed");
        skip();
    }
    assert_int_equal(s, MCL_SUCCESS);
    assert_int_equal(mcl_context_validation_errors(c), 0);
    mcl_inspect_invalid_call(c);
    uint64_t errors = mcl_context_validation_errors(c);
    mcl_context_destroy(c);
    mcl_test_record_bool("validation negative control: invalid call counted", errors > 0);
    assert_true(errors > 0);
    assert_true(count_messages > 0);
}

/* What GPU-assisted validation said: errors, those about an access out of bounds, and
 * warnings that it turned itself off (a run that only looks clean). */
typedef struct gpu_av_log {
    int errors, out_of_bounds, setup_problems;
    char first[768];
} gpu_av_log;

static int contains_nocase(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (; *text; text++) {
        size_t i = 0;
        while (i < n && text[i] && (text[i] | 0x20) == (word[i] | 0x20))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

static void gpu_av_collect(void *user, mcl_log_level level, const char *message)
{
    gpu_av_log *log = user;
    if (!contains_nocase(message, "validation:"))
        return;
    if (contains_nocase(message, "GPU-Assisted") &&
        (contains_nocase(message, "disabled") || contains_nocase(message, "Setup Error")))
        log->setup_problems++;
    if (level != MCL_LOG_ERROR)
        return;
    log->errors++;
    if (contains_nocase(message, "out of bounds") && !log->out_of_bounds++)
        snprintf(log->first, sizeof log->first, "%s", message);
}

/* fill_pattern_u32 (a tool kernel, not shipped) over `t`, told to write `words` words. */
static void fill_words(mcl_context *c, mcl_tensor *t, uint32_t words)
{
    const mcl_kernel_desc desc = {
        .id = MCL_KERNEL_FILL_PATTERN_U32,
        .module = &mcl_spirv_tool_modules[MCL_KERNEL_FILL_PATTERN_U32],
        .binding_count = 1,
        .push_size = 7 * sizeof(uint32_t),
    };
    const mcl_kernel *kernel;
    assert_mcl_ok(mcl_kernel_get(c, &desc, &kernel));
    uint32_t push[7] = {words, 5}; /* n, seed; no stride, value, floats or signs */
    uint32_t local = mcl_kernel_local_size(kernel);
    uint32_t groups = (words + local - 1) / local;
    /* The shader strides over the rest; 65535 is Vulkan's minimum maxComputeWorkGroupCount. */
    groups = groups < 65535u ? groups : 65535u;
    assert_mcl_ok(mcl_dispatch(c, kernel, NULL, 0, &t, 1, push, groups, 1, 1));
    assert_mcl_ok(mcl_finish(c));
}

/* Negative control for GPU-assisted validation (MOTIFCL_VALIDATION=gpu): a kernel writing
 * past the end of its buffer must be reported, and the same kernel within bounds must not,
 * or a clean GPU-assisted run would prove nothing. The tensor is one above a quarter block,
 * so it has a VkBuffer of its own: the validation layer of Debian 12 (1.3.239) checks an
 * access against the whole VkBuffer, not the descriptor's range, so an overrun inside a
 * pooled block goes unseen (recorded below, not asserted: a newer layer may see it). The
 * overrun is 64 bytes: the instrumented shader skips it; an uninstrumented one would write
 * into the allocation's rounding, not into another allocation. */
static void gpu_assisted_validation_reports_out_of_bounds(void **state)
{
    (void)state;
    gpu_av_log log = {0};
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1,
                             .flags = MCL_CONTEXT_VALIDATION | MCL_CONTEXT_VALIDATION_GPU_ASSISTED,
                             .log_fn = gpu_av_collect, .log_user_data = &log,
                             .log_level = MCL_LOG_WARNING};
    mcl_context *c = NULL;
    mcl_status s = mcl_context_create(&desc, &c);
    if (s == MCL_ERROR_LAYER_UNAVAILABLE) {
        mcl_test_note("gpu_av_negative_control", "layer not installed");
        if (mcl_env_truthy("MOTIFCL_VALIDATION"))
            fail_msg("MOTIFCL_VALIDATION is set but the validation layer is not installed");
        skip();
    }
    assert_int_equal(s, MCL_SUCCESS);
    mcl_memory_stats stats = {.size = sizeof stats};
    assert_mcl_ok(mcl_context_memory_stats(c, &stats));
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(c, &info));
    uint64_t bytes = (stats.block_size / 4 + (UINT64_C(4) << 20)) / 4 * 4;
    if (bytes > info.max_storage_buffer_range || bytes / 4 + 16 > UINT32_MAX) {
        mcl_context_destroy(c);
        mcl_test_note("gpu_av_negative_control", "a dedicated tensor exceeds one binding here");
        skip();
    }

    /* Within a pooled block: clean, and an overrun inside the block (not asserted). */
    int64_t n = 1000;
    mcl_tensor *pooled;
    assert_mcl_ok(mcl_tensor_create(c, MCL_DTYPE_I32, 1, &n, &pooled));
    fill_words(c, pooled, (uint32_t)n);
    int clean_total = log.errors;
    fill_words(c, pooled, 2 * (uint32_t)n);
    int inside_block = log.out_of_bounds, after_inside = log.errors;
    mcl_tensor_destroy(pooled);

    /* A tensor with a buffer of its own: clean within bounds, reported past the end. */
    int64_t words = (int64_t)(bytes / 4);
    mcl_tensor *own;
    assert_mcl_ok(mcl_tensor_create(c, MCL_DTYPE_I32, 1, &words, &own));
    assert_int_equal(mcl_context_memory_stats(c, &stats), MCL_SUCCESS);
    assert_true(stats.dedicated_count >= 1);
    fill_words(c, own, (uint32_t)words);
    clean_total += log.errors - after_inside;
    int before_overrun = log.errors;
    fill_words(c, own, (uint32_t)words + 16);
    int reported = log.out_of_bounds - inside_block;
    mcl_tensor_destroy(own);
    mcl_context_destroy(c);

    printf("GPU-assisted validation: %d errors within bounds; overrun inside a pooled block: "
           "%d reports; overrun past a buffer: %d reports (%d errors); %d setup problems\n"
           "first report: %s\n", clean_total, inside_block, reported,
           log.errors - before_overrun, log.setup_problems, log.first);
    mcl_test_record_bool("GPU-assisted validation active (no setup problem reported)",
                         log.setup_problems == 0);
    mcl_test_record_bool("GPU-assisted validation: kernels within bounds clean",
                         clean_total == 0);
    mcl_test_record_bool("GPU-assisted validation negative control: a write past the end of "
                         "a buffer reported", reported > 0);
    mcl_test_record_figure("GPU-assisted validation: reports of an overrun inside a pooled "
                           "block (0: the layer checks the whole buffer)", inside_block, "reports");
    assert_int_equal(log.setup_problems, 0);
    assert_int_equal(clean_total, 0);
    assert_true(reported > 0);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_info_is_populated),
        cmocka_unit_test(short_info_struct_is_respected),
        cmocka_unit_test(polaris_profile_masks_features),
        cmocka_unit_test(environment_disables_and_forces),
        cmocka_unit_test(ignoring_the_environment_takes_the_defaults),
        cmocka_unit_test(device_choice),
        cmocka_unit_test(environment_is_read_strictly),
        cmocka_unit_test(validation_errors_are_counted),
        cmocka_unit_test(gpu_assisted_validation_reports_out_of_bounds),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
