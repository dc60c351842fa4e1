/* From what a device offers to what the runtime uses: the device profile, the quirk table of
 * known-broken driver paths, and the MOTIFCL_DISABLE / MOTIFCL_FORCE overrides. */
#include <string.h>

#include "context.h"
#include "../core/env.h"

#define MCL_VENDOR_AMD 0x1002u
#define MCL_VENDOR_NVIDIA 0x10deu
#define MCL_VENDOR_INTEL 0x8086u

static const struct {
    uint64_t bit;
    const char *name;
} feature_names[] = {
    {MCL_FEATURE_SUBGROUP_BASIC, "subgroup-basic"},
    {MCL_FEATURE_SUBGROUP_ARITHMETIC, "subgroup-arithmetic"},
    {MCL_FEATURE_SUBGROUP_SIZE_CONTROL, "subgroup-size-control"},
    {MCL_FEATURE_STORAGE_8BIT, "storage-8bit"},
    {MCL_FEATURE_STORAGE_16BIT, "storage-16bit"},
    {MCL_FEATURE_SHADER_FLOAT16, "float16"},
    {MCL_FEATURE_SHADER_INT8, "int8"},
    {MCL_FEATURE_INTEGER_DOT_PRODUCT, "integer-dot"},
    {MCL_FEATURE_INTEGER_DOT_ACCELERATED, "integer-dot-accelerated"},
    {MCL_FEATURE_MEMORY_BUDGET, "memory-budget"},
    {MCL_FEATURE_MEMORY_PRIORITY, "memory-priority"},
    {MCL_FEATURE_BUFFER_DEVICE_ADDRESS, "buffer-device-address"},
    {MCL_FEATURE_SHADER_INT64, "int64"},
    {MCL_FEATURE_TIMESTAMPS, "timestamps"},
    {MCL_FEATURE_EXTERNAL_HOST_MEMORY, "external-host-memory"},
    {MCL_FEATURE_COOPERATIVE_MATRIX, "cooperative-matrix"},
};

static const struct {
    uint64_t bit;
    const char *name;
    uint64_t features;  /* the features a quirk switches off */
} quirk_names[] = {
    {MCL_QUIRK_NO_INTEGER_DOT, "no-integer-dot",
     MCL_FEATURE_INTEGER_DOT_PRODUCT | MCL_FEATURE_INTEGER_DOT_ACCELERATED},
    {MCL_QUIRK_NO_SUBGROUP_ARITHMETIC, "no-subgroup-arithmetic", MCL_FEATURE_SUBGROUP_ARITHMETIC},
    {MCL_QUIRK_NO_FLOAT16, "no-float16", MCL_FEATURE_SHADER_FLOAT16},
    {MCL_QUIRK_NO_SUBGROUP_SIZE_CONTROL, "no-subgroup-size-control",
     MCL_FEATURE_SUBGROUP_SIZE_CONTROL},
};

/* Known-broken paths, keyed by vendor, driver and driver version range (raw driverVersion,
 * inclusive; 0..UINT32_MAX means every version). A line needs a reason a maintainer can check. */
static const struct {
    uint32_t vendor_id;
    VkDriverId driver_id;
    uint32_t min_version, max_version;
    uint64_t quirks;
    const char *reason;
} quirk_table[] = {
    /* AMD's own drivers (the Windows driver and AMDVLK) have been reported to crash while
     * compiling integer dot product shaders; GCN has no packed dot instruction to gain from,
     * and the float path is the one Polaris runs anyway. Narrow the version range once a
     * fixed driver is confirmed. */
    {MCL_VENDOR_AMD, VK_DRIVER_ID_AMD_PROPRIETARY, 0, UINT32_MAX, MCL_QUIRK_NO_INTEGER_DOT,
     "AMD proprietary driver: integer dot product path disabled (reported compiler crashes)"},
    {MCL_VENDOR_AMD, VK_DRIVER_ID_AMD_OPEN_SOURCE, 0, UINT32_MAX, MCL_QUIRK_NO_INTEGER_DOT,
     "AMDVLK: integer dot product path disabled (reported compiler crashes)"},
};

/* What a device profile takes away. Polaris (GCN4): no fast FP16 (it emulates it at full
 * precision rate at best) and no packed 8-bit dot product instruction. */
static const struct {
    const char *name;
    uint64_t quirks;
} profiles[] = {
    {"none", 0},
    {"polaris", MCL_QUIRK_NO_FLOAT16 | MCL_QUIRK_NO_INTEGER_DOT},
};

const char *mcl_feature_name(uint64_t feature_bit)
{
    for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++) {
        if (feature_names[i].bit == feature_bit)
            return feature_names[i].name;
    }
    return NULL;
}

const char *mcl_quirk_name(uint64_t quirk_bit)
{
    for (size_t i = 0; i < sizeof quirk_names / sizeof quirk_names[0]; i++) {
        if (quirk_names[i].bit == quirk_bit)
            return quirk_names[i].name;
    }
    return NULL;
}

mcl_status mcl_profile_validate(const char *profile)
{
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        if (strcmp(profiles[i].name, profile) == 0)
            return MCL_SUCCESS;
    }
    return MCL_ERROR_INVALID_ARGUMENT;
}

static uint64_t features_of_quirks(uint64_t quirks)
{
    uint64_t features = 0;
    for (size_t i = 0; i < sizeof quirk_names / sizeof quirk_names[0]; i++) {
        if (quirks & quirk_names[i].bit)
            features |= quirk_names[i].features;
    }
    return features;
}

/* Features named in a comma-separated list such as MOTIFCL_DISABLE. */
static uint64_t features_in_list(mcl_context *ctx, const char *variable)
{
    const char *list = mcl_env(variable);
    uint64_t features = 0;
    if (!list)
        return 0;
    for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++) {
        if (mcl_list_contains(list, feature_names[i].name))
            features |= feature_names[i].bit;
    }
    if (!features)
        mcl_log(&ctx->log, MCL_LOG_WARNING, "%s=\"%s\" names no known feature", variable, list);
    return features;
}

void mcl_quirks_apply(mcl_context *ctx, const char *profile)
{
    mcl_device_info *info = &ctx->info;
    uint64_t quirks = 0;
    for (size_t i = 0; i < sizeof quirk_table / sizeof quirk_table[0]; i++) {
        if (quirk_table[i].vendor_id == info->vendor_id &&
            quirk_table[i].driver_id == (VkDriverId)info->driver_id &&
            info->driver_version >= quirk_table[i].min_version &&
            info->driver_version <= quirk_table[i].max_version) {
            quirks |= quirk_table[i].quirks;
            mcl_log(&ctx->log, MCL_LOG_INFO, "quirk: %s", quirk_table[i].reason);
        }
    }
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        if (strcmp(profiles[i].name, profile) == 0)
            quirks |= profiles[i].quirks;
    }

    uint64_t enabled = info->features_available & ~features_of_quirks(quirks);
    /* MOTIFCL_FORCE overrides the quirk table but not the profile: a profile stands for
     * hardware that lacks the feature. */
    uint64_t forced = features_in_list(ctx, "MOTIFCL_FORCE") & info->features_available;
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        if (strcmp(profiles[i].name, profile) == 0)
            forced &= ~features_of_quirks(profiles[i].quirks);
    }
    enabled |= forced;
    enabled &= ~features_in_list(ctx, "MOTIFCL_DISABLE");
    /* Accelerated integer dot is meaningless without integer dot itself. */
    if (!(enabled & MCL_FEATURE_INTEGER_DOT_PRODUCT))
        enabled &= ~MCL_FEATURE_INTEGER_DOT_ACCELERATED;
    /* The cooperative-matrix kernels hold f16 values. */
    if (!(enabled & MCL_FEATURE_SHADER_FLOAT16))
        enabled &= ~MCL_FEATURE_COOPERATIVE_MATRIX;

    /* Record as quirks every path that ends up off although the device offers it. */
    for (size_t i = 0; i < sizeof quirk_names / sizeof quirk_names[0]; i++) {
        uint64_t f = quirk_names[i].features & info->features_available;
        if (f && (f & ~enabled))
            quirks |= quirk_names[i].bit;
        else
            quirks &= ~quirk_names[i].bit;
    }
    info->features_enabled = enabled;
    info->quirks = quirks;
}
