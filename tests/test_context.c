/* The context on a real device: what it reports, how it chooses, how the profile and the
 * environment switches mask features, and that validation errors are counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "env.h"
#include "vk/context.h"

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
    assert_true(info.api_version >= VK_API_VERSION_1_2);
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
    /* A buffer of size 0 is invalid usage (VUID-VkBufferCreateInfo-size-00912). */
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = 0,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
    };
    VkBuffer buffer = VK_NULL_HANDLE;
    VkResult r = c->vk.vkCreateBuffer(c->device, &info, NULL, &buffer);
    if (r == VK_SUCCESS && buffer)
        c->vk.vkDestroyBuffer(c->device, buffer, NULL);
    uint64_t errors = mcl_context_validation_errors(c);
    mcl_context_destroy(c);
    mcl_test_record_bool("validation negative control: invalid call counted", errors > 0);
    assert_true(errors > 0);
    assert_true(count_messages > 0);
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
        cmocka_unit_test(device_choice),
        cmocka_unit_test(validation_errors_are_counted),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
