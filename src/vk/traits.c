/* Device traits, decided once per context: from what a device offers (its features and
 * limits), the quirk table of known-broken driver paths, the device profile and the
 * environment (MOTIFCL_DISABLE / MOTIFCL_FORCE and the tuning switches) to what the runtime
 * and the ops use. Pure: it reads no device and no environment itself. */
#include "traits.h"

#include <stdio.h>
#include <string.h>

#include <vulkan/vulkan_core.h>

#include "../core/names.h"
#include "../core/text.h"

/* PCI vendor ids (the PCI-SIG registry). */
#define MCL_VENDOR_AMD 0x1002u
#define MCL_VENDOR_NVIDIA 0x10deu
#define MCL_VENDOR_INTEL 0x8086u

/* The waves of GCN: the subgroup size at or above which an AMD device runs in waves of 64. */
#define MCL_WAVE64 64u

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

/* What a device profile takes away, and the class of device it stands for. Polaris (GCN4):
 * no fast FP16 (it emulates it at full precision rate at best), no packed 8-bit dot product
 * instruction, waves of 64. */
static const struct {
    const char *name;
    uint64_t quirks;
    int amd_wave64;
} profiles[] = {
    {"none", 0, 0},
    {"polaris", MCL_QUIRK_NO_FLOAT16 | MCL_QUIRK_NO_INTEGER_DOT, 1},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int profile_index(const char *profile)
{
    for (size_t i = 0; i < COUNT(profiles); i++) {
        if (strcmp(profiles[i].name, profile) == 0)
            return (int)i;
    }
    return -1;
}

int mcl_profile_known(const char *profile)
{
    return profile && profile_index(profile) >= 0;
}

static uint64_t features_of_quirks(uint64_t quirks)
{
    uint64_t features = 0;
    for (uint32_t bit = 0; bit < 64; bit++) {
        if (quirks & (UINT64_C(1) << bit))
            features |= mcl_quirk_features(UINT64_C(1) << bit);
    }
    return features;
}

/* Features enabled, and the quirks that explain every path left off although offered. */
static void decide_features(mcl_device_info *info, const mcl_env_settings *env,
                            const mcl_logger *log, int profile)
{
    uint64_t quirks = 0;
    for (size_t i = 0; i < COUNT(quirk_table); i++) {
        if (quirk_table[i].vendor_id == info->vendor_id &&
            quirk_table[i].driver_id == (VkDriverId)info->driver_id &&
            info->driver_version >= quirk_table[i].min_version &&
            info->driver_version <= quirk_table[i].max_version) {
            quirks |= quirk_table[i].quirks;
            mcl_log(log, MCL_LOG_INFO, "quirk: %s", quirk_table[i].reason);
        }
    }
    uint64_t profile_off = profile >= 0 ? features_of_quirks(profiles[profile].quirks) : 0;
    if (profile >= 0)
        quirks |= profiles[profile].quirks;

    uint64_t enabled = info->features_available & ~features_of_quirks(quirks);
    /* MOTIFCL_FORCE overrides the quirk table but not the profile: a profile stands for
     * hardware that lacks the feature. */
    enabled |= env->force & info->features_available & ~profile_off;
    enabled &= ~env->disable;
    /* Accelerated integer dot is meaningless without integer dot itself. */
    if (!(enabled & MCL_FEATURE_INTEGER_DOT_PRODUCT))
        enabled &= ~MCL_FEATURE_INTEGER_DOT_ACCELERATED;
    /* The cooperative-matrix kernels hold f16 values. */
    if (!(enabled & MCL_FEATURE_SHADER_FLOAT16))
        enabled &= ~MCL_FEATURE_COOPERATIVE_MATRIX;

    /* Record as quirks every path that ends up off although the device offers it. */
    for (uint32_t bit = 0; bit < 64; bit++) {
        uint64_t q = UINT64_C(1) << bit;
        uint64_t f = mcl_quirk_features(q) & info->features_available;
        if (f && (f & ~enabled))
            quirks |= q;
        else
            quirks &= ~q;
    }
    info->features_enabled = enabled;
    info->quirks = quirks;
}

void mcl_traits_decide(mcl_device_info *info, const mcl_env_settings *env,
                       const mcl_logger *log, mcl_traits *out)
{
    mcl_traits t;
    memset(&t, 0, sizeof t);
    int profile = profile_index(info->profile);
    decide_features(info, env, log, profile);
    uint64_t f = info->features_enabled;

    snprintf(t.profile, sizeof t.profile, "%s", info->profile);
    t.subgroup_size = info->subgroup_size;
    int amd = info->vendor_id == MCL_VENDOR_AMD;
    if ((profile >= 0 && profiles[profile].amd_wave64) ||
        (amd && info->subgroup_size >= MCL_WAVE64))
        t.device_class = MCL_CLASS_AMD_WAVE64;
    else if (amd)
        t.device_class = MCL_CLASS_AMD;

    t.features = f;
    t.subgroup_arithmetic = (f & MCL_FEATURE_SUBGROUP_ARITHMETIC) != 0;
    t.subgroup_size_control = (f & MCL_FEATURE_SUBGROUP_SIZE_CONTROL) != 0;
    t.integer_dot = (f & MCL_FEATURE_INTEGER_DOT_PRODUCT) != 0;
    t.float16 = (f & MCL_FEATURE_SHADER_FLOAT16) != 0;
    t.cooperative_matrix = (f & MCL_FEATURE_COOPERATIVE_MATRIX) != 0;
    t.external_host_memory = (f & MCL_FEATURE_EXTERNAL_HOST_MEMORY) != 0;
    /* MOTIFCL_FORCE=integer-dot keeps the feature on despite the quirk table, and on a device
     * that has it unaccelerated (Lavapipe) it means "use the integer-dot path". */
    t.quant_dot = t.integer_dot && env->quant_path != MCL_ENV_QUANT_FLOAT &&
                  (env->quant_path == MCL_ENV_QUANT_DOT ||
                   (f & MCL_FEATURE_INTEGER_DOT_ACCELERATED) ||
                   (env->force & MCL_FEATURE_INTEGER_DOT_PRODUCT));
    t.quant_matrix = t.cooperative_matrix && env->quant_path == MCL_ENV_QUANT_AUTO;

    t.max_shared_bytes = info->max_compute_shared_memory_size;
    t.max_invocations = info->max_compute_workgroup_invocations;
    for (int i = 0; i < 3; i++)
        t.max_workgroup_size[i] = info->max_compute_workgroup_size[i];
    t.max_binding_bytes = info->max_storage_buffer_range;
    t.weight_part_bytes = t.max_binding_bytes;
    if (env->max_binding && env->max_binding < t.max_binding_bytes)
        t.weight_part_bytes = env->max_binding;
    t.binding_alignment = info->min_storage_buffer_offset_alignment;

    t.gemv = env->gemv;
    t.gemv_f32 = env->gemv_f32;
    t.gemm_slices = env->gemm_slices;
    t.gemm_unroll = env->gemm_unroll;
    t.gemm_f32_unroll = env->gemm_f32_unroll;
    memcpy(t.gemm_f32_tile, env->gemm_f32_tile, sizeof t.gemm_f32_tile);
    memcpy(t.gemm_float_tile, env->gemm_float_tile, sizeof t.gemm_float_tile);
    memcpy(t.gemm_matrix_tile, env->gemm_matrix_tile, sizeof t.gemm_matrix_tile);
    t.attention_splits = env->attention_splits;
    t.attention_wg = env->attention_wg;

    t.transfer = env->transfer == MCL_ENV_TRANSFER_STAGING  ? MCL_TRANSFER_STAGING
                 : env->transfer == MCL_ENV_TRANSFER_IMPORT ? MCL_TRANSFER_IMPORT
                                                            : MCL_TRANSFER_AUTO;
    t.pipeline_stats = env->pipeline_stats;
    t.engine_eager = env->engine_eager;
    t.engine_split_glu = env->engine_split_glu;
    t.engine_split_moe = env->engine_split_moe;
    /* A decode step's norms folded into the products that read them (step.c): -1 where
     * the model's shape decides. */
    t.engine_norm_fold = env->engine_norm_fold;
    t.engine_warm = env->engine_warm;
    t.attention_f32 = env->attention_f32;
    t.counter_rows = env->counter_rows;
    *out = t;
}

static const char *class_name(mcl_device_class c)
{
    switch (c) {
    case MCL_CLASS_AMD: return "amd";
    case MCL_CLASS_AMD_WAVE64: return "amd-wave64";
    default: return "generic";
    }
}

/* "name": {"key": value, ...} of the keys an override sets. */
static void put_override(mcl_text *o, const char *name, const mcl_gemv_override *g)
{
    static const char *const keys[] = {"t", "g", "nr", "u", "pb", "st", "cvt"};
    const uint32_t values[] = {g->t, g->g, g->nr, g->u, g->pb, g->st, g->cvt};
    mcl_text_put(o, "\"%s\": {", name);
    int first = 1;
    for (int i = 0; i < 7; i++) {
        if (g->set & (1u << i)) {
            mcl_text_put(o, "%s\"%s\": %u", first ? "" : ", ", keys[i], values[i]);
            first = 0;
        }
    }
    mcl_text_put(o, "}");
}

size_t mcl_traits_json(const mcl_traits *t, char *buffer, size_t capacity)
{
    static const char *const transfers[] = {"auto", "staging", "import"};
    mcl_text o = {.buf = buffer, .cap = capacity};
    if (capacity)
        buffer[0] = '\0';
    mcl_text_put(&o, "{\"profile\": \"%s\", \"class\": \"%s\", \"subgroup_size\": %u, \"features\": [",
        t->profile, class_name(t->device_class), t->subgroup_size);
    int first = 1;
    for (uint32_t bit = 0; bit < 64; bit++) {
        const char *name = mcl_feature_name(UINT64_C(1) << bit);
        if (name && (t->features & (UINT64_C(1) << bit))) {
            mcl_text_put(&o, "%s\"%s\"", first ? "" : ", ", name);
            first = 0;
        }
    }
    mcl_text_put(&o, "], \"quant_dot\": %d, \"quant_matrix\": %d, \"max_shared_bytes\": %u, "
        "\"max_invocations\": %u, \"max_workgroup_size\": [%u, %u, %u], "
        "\"max_binding_bytes\": %llu, \"weight_part_bytes\": %llu, \"binding_alignment\": %llu, ",
        t->quant_dot, t->quant_matrix, t->max_shared_bytes, t->max_invocations,
        t->max_workgroup_size[0], t->max_workgroup_size[1], t->max_workgroup_size[2],
        (unsigned long long)t->max_binding_bytes, (unsigned long long)t->weight_part_bytes,
        (unsigned long long)t->binding_alignment);
    put_override(&o, "gemv_override", &t->gemv);
    mcl_text_put(&o, ", ");
    put_override(&o, "gemv_f32_override", &t->gemv_f32);
    mcl_text_put(&o, ", \"gemm_slices\": %u, \"gemm_unroll\": %u, \"gemm_f32_unroll\": %u, "
        "\"gemm_f32_tile\": [%u, %u], \"gemm_float_tile\": [%u, %u], "
        "\"gemm_matrix_tile\": [%u, %u], \"attention_splits\": %u, \"attention_wg\": %u, "
        "\"transfer\": \"%s\", \"pipeline_stats\": %d, \"engine_eager\": %d, "
        "\"engine_split_glu\": %d, \"engine_split_moe\": %u, \"engine_norm_fold\": %d, "
        "\"engine_warm\": %u, \"attention_f32\": %d, \"counter_rows\": %u}",
        t->gemm_slices, t->gemm_unroll, t->gemm_f32_unroll, t->gemm_f32_tile[0],
        t->gemm_f32_tile[1], t->gemm_float_tile[0], t->gemm_float_tile[1],
        t->gemm_matrix_tile[0], t->gemm_matrix_tile[1], t->attention_splits, t->attention_wg,
        transfers[t->transfer], t->pipeline_stats, t->engine_eager, t->engine_split_glu,
        t->engine_split_moe, t->engine_norm_fold, t->engine_warm, t->attention_f32,
        t->counter_rows);
    return o.len;
}
