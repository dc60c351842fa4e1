/* Device traits: what a context's device may run and how, decided once when the context is
 * created (mcl_traits_decide) from the device's properties, the quirk table, the device
 * profile and the environment. The layers above the runtime read these and nothing else of
 * the device: no vendor id, no profile name, no environment. */
#ifndef MCL_VK_TRAITS_H
#define MCL_VK_TRAITS_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"
#include "../core/env.h"
#include "../core/log.h"

/* How the device runs compute, as far as kernel plans care. */
typedef enum mcl_device_class {
    MCL_CLASS_GENERIC = 0, /* NVIDIA, Intel, Lavapipe, anything not listed below */
    MCL_CLASS_AMD = 1,     /* AMD in waves of 32 (RDNA under wave32) */
    MCL_CLASS_AMD_WAVE64 = 2 /* AMD in waves of 64 (GCN: the RX 580), and the polaris profile */
} mcl_device_class;

/* How uploads and downloads move bytes (MOTIFCL_TRANSFER): auto picks zero-copy where tensor
 * memory is mappable, imported caller memory for large transfers where the device can import
 * it, else the staging ring. */
typedef enum mcl_transfer_mode {
    MCL_TRANSFER_AUTO = 0,
    MCL_TRANSFER_STAGING, /* the staging ring only */
    MCL_TRANSFER_IMPORT,  /* import caller memory wherever possible, whatever the size */
} mcl_transfer_mode;

typedef struct mcl_traits {
    char profile[32];             /* the device profile ("none", "polaris") */
    mcl_device_class device_class;
    uint32_t subgroup_size;       /* the default subgroup size */

    /* Paths: the device's features after the profile, the quirk table, MOTIFCL_DISABLE and
     * MOTIFCL_FORCE. */
    uint64_t features;            /* MCL_FEATURE_* enabled */
    int subgroup_arithmetic;      /* row kernels reduce with subgroup operations */
    int subgroup_size_control;    /* a kernel may require its subgroup size */
    int integer_dot;              /* integer-dot kernels may run */
    int float16;
    int cooperative_matrix;       /* the NV cooperative-matrix kernels may run */
    int external_host_memory;     /* caller memory can be imported */
    /* The quantized matmul: the GEMV takes the integer-dot path (integer dot enabled and
     * accelerated, or asked for by MOTIFCL_QUANT_PATH=dot or MOTIFCL_FORCE=integer-dot, and not
     * MOTIFCL_QUANT_PATH=float); the GEMM may take the matrix path (cooperative matrices and
     * no MOTIFCL_QUANT_PATH). */
    int quant_dot;
    int quant_matrix;

    /* Limits. */
    uint32_t max_shared_bytes;     /* maxComputeSharedMemorySize */
    uint32_t max_invocations;      /* maxComputeWorkGroupInvocations */
    uint32_t max_workgroup_size[3];
    uint64_t max_binding_bytes;    /* maxStorageBufferRange: one binding */
    uint64_t weight_part_bytes;    /* a quantized weight binds in parts of at most this many
                                    * bytes (max_binding_bytes, or MOTIFCL_MAX_BINDING's less) */
    uint64_t binding_alignment;    /* minStorageBufferOffsetAlignment */
    uint32_t max_stage_buffers;    /* storage buffers a kernel may bind (the least of
                                    * maxPerStageDescriptorStorageBuffers and
                                    * maxDescriptorSetStorageBuffers); set by the device's
                                    * creation, 0 where no device gave it */

    /* Tuning overrides of the quantized kernels' plans; 0 (or an empty set) is the plan's own
     * choice. Each is checked against the product it would shape when it is planned. */
    mcl_gemv_override gemv;        /* MOTIFCL_QUANT_GEMV_PLAN */
    mcl_gemv_override gemv_f32;    /* MOTIFCL_GEMV_PLAN (the f32 GEMV) */
    uint32_t gemm_slices;          /* MOTIFCL_QUANT_GEMM_SLICES */
    uint32_t gemm_unroll;          /* MOTIFCL_QUANT_GEMM_UNROLL */
    uint32_t gemm_f32_unroll;      /* MOTIFCL_GEMM_UNROLL */
    uint32_t gemm_f32_tile[2];     /* MOTIFCL_GEMM_TILE */
    uint32_t gemm_float_tile[2];   /* MOTIFCL_QUANT_GEMM_FLOAT_TILE */
    uint32_t gemm_matrix_tile[2];  /* MOTIFCL_QUANT_GEMM_TILE */
    uint32_t attention_splits;     /* MOTIFCL_ATTENTION_SPLITS: the decode attention's slices */
    uint32_t attention_wg;         /* MOTIFCL_ATTENTION_WG: its workgroups' invocations */

    /* Runtime. */
    mcl_transfer_mode transfer;    /* MOTIFCL_TRANSFER */
    int pipeline_stats;            /* MOTIFCL_PIPELINE_STATS asked for */
    int engine_eager;              /* MOTIFCL_ENGINE_EAGER: decode steps op by op */
    int engine_split_glu;          /* MOTIFCL_ENGINE_SPLIT_GLU: gate, up, SwiGLU not fused */
    uint32_t engine_split_moe;     /* MOTIFCL_ENGINE_SPLIT_MOE: fusions undone (bits) */
    int engine_norm_fold;          /* MOTIFCL_ENGINE_NORM_FOLD: norms in their products; -1
                                    * the engine's choice by the model's shape */
    uint32_t engine_warm;          /* MOTIFCL_ENGINE_WARM: the weights a decode step warms */
    uint32_t counter_rows;         /* MOTIFCL_COUNTER_ROWS: rows of W a tile of the
                                    * counter-state update's passes, 0 for the library's */
    int attention_f32;             /* MOTIFCL_ATTENTION_F32: no prompt attention on matrices */
} mcl_traits;

/* Whether a device profile of that name exists. */
int mcl_profile_known(const char *profile);

/* The traits of a device described by `info` (its properties, features_available, vendor,
 * driver and profile filled) under the environment settings `env` (mcl_env_defaults for a
 * context that ignores the environment). Fills info->features_enabled and info->quirks too,
 * and logs the quirks it applies. Touches no device: the tests call it with made-up devices. */
void mcl_traits_decide(mcl_device_info *info, const mcl_env_settings *env,
                       const mcl_logger *log, mcl_traits *out);

/* The traits as one JSON object (no newline). Returns the characters the whole text needs,
 * without its terminator; at most capacity - 1 are written, always terminated when capacity
 * is not 0. */
size_t mcl_traits_json(const mcl_traits *traits, char *buffer, size_t capacity);

#endif
