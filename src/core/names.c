/* Feature and quirk names: tables of the public bits and their words. */
#include "names.h"

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

#define FEATURE_COUNT (sizeof feature_names / sizeof feature_names[0])

static const struct {
    uint64_t bit;
    const char *name;
    uint64_t features; /* the features a quirk switches off */
} quirk_names[] = {
    {MCL_QUIRK_NO_INTEGER_DOT, "no-integer-dot",
     MCL_FEATURE_INTEGER_DOT_PRODUCT | MCL_FEATURE_INTEGER_DOT_ACCELERATED},
    {MCL_QUIRK_NO_SUBGROUP_ARITHMETIC, "no-subgroup-arithmetic", MCL_FEATURE_SUBGROUP_ARITHMETIC},
    {MCL_QUIRK_NO_FLOAT16, "no-float16", MCL_FEATURE_SHADER_FLOAT16},
    {MCL_QUIRK_NO_SUBGROUP_SIZE_CONTROL, "no-subgroup-size-control",
     MCL_FEATURE_SUBGROUP_SIZE_CONTROL},
};

#define QUIRK_COUNT (sizeof quirk_names / sizeof quirk_names[0])

const char *mcl_feature_name(uint64_t feature_bit)
{
    for (size_t i = 0; i < FEATURE_COUNT; i++) {
        if (feature_names[i].bit == feature_bit)
            return feature_names[i].name;
    }
    return NULL;
}

const char *mcl_quirk_name(uint64_t quirk_bit)
{
    for (size_t i = 0; i < QUIRK_COUNT; i++) {
        if (quirk_names[i].bit == quirk_bit)
            return quirk_names[i].name;
    }
    return NULL;
}

uint64_t mcl_quirk_features(uint64_t quirk_bit)
{
    for (size_t i = 0; i < QUIRK_COUNT; i++) {
        if (quirk_names[i].bit == quirk_bit)
            return quirk_names[i].features;
    }
    return 0;
}
