/* Environment switches. The library reads the environment in one place: mcl_env_read(),
 * called once when a context is created (and not at all for a context created with
 * MCL_CONTEXT_IGNORE_ENVIRONMENT). What it read becomes the context's device traits
 * (src/vk/traits.c); nothing else in the library calls getenv. The variables:
 *   MOTIFCL_LOG                 error|warning|info|debug|0: print the log to stderr
 *   MOTIFCL_DEVICE              device index (digits only) or name substring
 *   MOTIFCL_DEVICE_PROFILE      none|polaris
 *   MOTIFCL_VALIDATION          0|1|sync|gpu
 *   MOTIFCL_DISABLE             comma-separated feature names to switch off
 *   MOTIFCL_FORCE               comma-separated feature names to keep on despite quirks
 *   MOTIFCL_TRANSFER            auto|staging|import: how uploads and downloads move bytes
 *   MOTIFCL_GEMM_UNROLL         1|2|4|8|16: the f32 GEMM's K step unroll, 8 x 8 tiles (tuning)
 *   MOTIFCL_GEMM_TILE           <BM>x<BN>, sides 64 or 128: the f32 GEMM's tile (tuning)
 *   MOTIFCL_QUANT_PATH          auto|float|dot: the path of the quantized matmul
 *   MOTIFCL_QUANT_GEMV_PLAN     t=,g=,nr=,u=,pb=,st=,cvt=: the quantized GEMV's plan (tuning)
 *   MOTIFCL_QUANT_GEMM_SLICES   1..16: slices of K of the float-path quantized GEMM (tuning)
 *   MOTIFCL_QUANT_GEMM_UNROLL   1|2|4|8|16: its inner loop's unroll (tuning)
 *   MOTIFCL_QUANT_GEMM_FLOAT_TILE  <BM>x<BN>: its tile (tuning)
 *   MOTIFCL_QUANT_GEMM_TILE     <BM>x<BN>: the matrix-path quantized GEMM's tile (tuning)
 *   MOTIFCL_ATTENTION_SPLITS    1..64: slices of the keys of a recorded decode step's
 *                               attention (tuning)
 *   MOTIFCL_ATTENTION_WG        64|128|256: the invocations of its workgroups (tuning)
 *   MOTIFCL_PIPELINE_STATS      1: log the driver's statistics of each compiled kernel (info)
 *   MOTIFCL_MAX_BINDING         bytes: split quantized weights as if one binding held no more
 *   MOTIFCL_ENGINE_EAGER        1: sessions record each decode step op by op (no replay)
 *   MOTIFCL_ENGINE_SPLIT_GLU    1: a decode step's gate and up products and SwiGLU as
 *                               separate dispatches, not fused (for comparison)
 *   MOTIFCL_ENGINE_SPLIT_MOE    0..3: a mixture's decode step with its router and its
 *                               routing apart (1), its experts' down products and their
 *                               weighted sum apart (2), both (3); for comparison
 *   MOTIFCL_ENGINE_NORM_FOLD    1 or 0: a decode step's norms made by the products that read
 *                               them, or dispatches of their own (unset: by the model's
 *                               width, src/engine/step.c)
 *   MOTIFCL_ENGINE_WARM         0..7: the weights a decode step reads into the device's cache
 *                               beside the dispatches that leave memory idle (tuning)
 *   MOTIFCL_ATTENTION_F32       1: a prompt pass's attention on the f32 kernels, not on
 *                               cooperative matrices (for comparison)
 *   MOTIFCL_COUNTER_ROWS        16, 32 or 64: rows of W a tile of the counter-state update's
 *                               passes (tuning; fewer where the workgroup is narrower)
 *   MOTIFCL_PROFILE             1|true|on|yes: profile every dispatch, the table to stderr
 *                               when the context is destroyed; an absolute file path: the
 *                               profile as JSON into that file instead; 0|false|off|no: none
 *   MOTIFCL_PIPELINE_CACHE      an absolute folder path: keep the pipeline cache files there;
 *                               0|false|off|no: no persistent pipeline cache; 1|true|on|yes:
 *                               the default folder (mcl_env_user_cache_dir)
 *   MOTIFCL_FENCE_TIMEOUT_MS    1..10^12: how long a wait for the GPU may take before the
 *                               context counts its device as lost (default 60000)
 *   MOTIFCL_FAULT               device_lost@N|timeout@N: testing, the context's N-th fence wait
 *                               (N >= 1) waits, then reports that instead of its result
 * Every value is read whole (no sign, space or trailing text unless the syntax has one).
 * Switches take 1, true, on, yes and 0, false, off, no, in any case. A value that cannot be
 * taken leaves its setting at the default and is named, with what is accepted, in one
 * warning when the context is created; MOTIFCL_TRANSFER and MOTIFCL_DEVICE_PROFILE are the
 * exceptions: the context refuses an unknown one. An unknown MOTIFCL_LOG takes warning, so
 * that its warning is seen.
 * One exception to "read once, and not at all when ignored": the user's cache folder
 * (XDG_CACHE_HOME, HOME) is where the platform keeps a user's caches, not a MotifCL switch, so
 * mcl_env_user_cache_dir reads it for every context that keeps a pipeline cache there.
 * The test harness and the tools read their own (MOTIFCL_REQUIRE_VULKAN_COMPUTE,
 * MOTIFCL_WITNESS_DIR, MOTIFCL_TEST_FILTER) with the helpers at the end. */
#ifndef MCL_CORE_ENV_H
#define MCL_CORE_ENV_H

#include <stddef.h>
#include <stdint.h>

/* MOTIFCL_QUANT_GEMV_PLAN's keys, as bits of mcl_gemv_override.set. */
enum {
    MCL_GEMV_SET_T = 1u << 0,
    MCL_GEMV_SET_G = 1u << 1,
    MCL_GEMV_SET_NR = 1u << 2,
    MCL_GEMV_SET_U = 1u << 3,
    MCL_GEMV_SET_PB = 1u << 4,
    MCL_GEMV_SET_ST = 1u << 5,
    MCL_GEMV_SET_CVT = 1u << 6,
};

/* A quantized GEMV plan override: the keys given and their values (checked against each
 * product when it is planned). */
typedef struct mcl_gemv_override {
    uint32_t set;
    uint32_t t, g, nr, u, pb, st, cvt;
} mcl_gemv_override;

typedef enum mcl_env_quant_path {
    MCL_ENV_QUANT_AUTO = 0,
    MCL_ENV_QUANT_FLOAT,
    MCL_ENV_QUANT_DOT,
} mcl_env_quant_path;

/* MOTIFCL_FAULT's faults. */
typedef enum mcl_env_fault {
    MCL_ENV_FAULT_NONE = 0,
    MCL_ENV_FAULT_DEVICE_LOST,
    MCL_ENV_FAULT_TIMEOUT,
} mcl_env_fault;

/* How long a fence wait may take unless MOTIFCL_FENCE_TIMEOUT_MS says otherwise: far longer
 * than any batch the library submits should run (a decode step, a training step), short
 * enough that a hang becomes a status within a minute. */
#define MCL_FENCE_TIMEOUT_MS_DEFAULT 60000

typedef enum mcl_env_transfer {
    MCL_ENV_TRANSFER_AUTO = 0,
    MCL_ENV_TRANSFER_STAGING,
    MCL_ENV_TRANSFER_IMPORT,
    MCL_ENV_TRANSFER_INVALID,
} mcl_env_transfer;

typedef enum mcl_env_pipeline_cache {
    MCL_ENV_PIPELINE_CACHE_DEFAULT = 0, /* the user's cache folder */
    MCL_ENV_PIPELINE_CACHE_OFF,
    MCL_ENV_PIPELINE_CACHE_DIR,         /* the folder in pipeline_cache_dir */
} mcl_env_pipeline_cache;

#define MCL_ENV_TEXT 256
/* Folder paths: longer ones are refused with a warning rather than cut. */
#define MCL_ENV_PATH 1024

/* What the environment asks for. All zero (and empty strings) is "nothing asked": the
 * defaults, and what a context that ignores the environment gets. */
typedef struct mcl_env_settings {
    int log_level;                 /* MOTIFCL_LOG: 0..3 (error..debug), -1 none */
    char device[MCL_ENV_TEXT];     /* MOTIFCL_DEVICE, "" unset */
    int device_by_index;           /* 1: MOTIFCL_DEVICE is an index (digits only) */
    uint64_t device_index;         /* that index, UINT64_MAX past 64 bits */
    char profile[MCL_ENV_TEXT];    /* MOTIFCL_DEVICE_PROFILE, "" unset */
    uint32_t validation;           /* MOTIFCL_VALIDATION: MCL_CONTEXT_VALIDATION* flags */
    uint64_t disable, force;       /* MOTIFCL_DISABLE, MOTIFCL_FORCE: feature bits */
    mcl_env_transfer transfer;     /* MOTIFCL_TRANSFER */
    char transfer_text[MCL_ENV_TEXT];
    mcl_env_quant_path quant_path; /* MOTIFCL_QUANT_PATH */
    mcl_gemv_override gemv;        /* MOTIFCL_QUANT_GEMV_PLAN */
    mcl_gemv_override gemv_f32;    /* MOTIFCL_GEMV_PLAN: t, g, nr, u only */
    uint32_t gemm_slices;          /* MOTIFCL_QUANT_GEMM_SLICES, 0 unset */
    uint32_t gemm_unroll;          /* MOTIFCL_QUANT_GEMM_UNROLL, 0 unset */
    uint32_t gemm_f32_unroll;      /* MOTIFCL_GEMM_UNROLL, 0 unset */
    uint32_t gemm_f32_tile[2];     /* MOTIFCL_GEMM_TILE: BM, BN; 0 unset */
    uint32_t gemm_float_tile[2];   /* MOTIFCL_QUANT_GEMM_FLOAT_TILE: BM, BN; 0 unset */
    uint32_t gemm_matrix_tile[2];  /* MOTIFCL_QUANT_GEMM_TILE: BM, BN; 0 unset */
    uint32_t attention_splits;     /* MOTIFCL_ATTENTION_SPLITS, 0 unset */
    uint32_t attention_wg;         /* MOTIFCL_ATTENTION_WG, 0 unset */
    int pipeline_stats;            /* MOTIFCL_PIPELINE_STATS */
    int engine_eager;              /* MOTIFCL_ENGINE_EAGER */
    int engine_split_glu;          /* MOTIFCL_ENGINE_SPLIT_GLU */
    uint32_t engine_split_moe;     /* MOTIFCL_ENGINE_SPLIT_MOE */
    int engine_norm_fold;          /* MOTIFCL_ENGINE_NORM_FOLD, -1 unset */
    uint32_t engine_warm;          /* MOTIFCL_ENGINE_WARM */
    int attention_f32;             /* MOTIFCL_ATTENTION_F32 */
    uint32_t counter_rows;         /* MOTIFCL_COUNTER_ROWS, 0 unset */
    int gpu_profile;               /* MOTIFCL_PROFILE: 1 to stderr, 2 to profile_path */
    char profile_path[MCL_ENV_PATH];
    uint64_t max_binding;          /* MOTIFCL_MAX_BINDING, 0 unset */
    mcl_env_pipeline_cache pipeline_cache;   /* MOTIFCL_PIPELINE_CACHE */
    char pipeline_cache_dir[MCL_ENV_PATH];   /* its folder, for MCL_ENV_PIPELINE_CACHE_DIR */
    uint64_t fence_timeout_ms;     /* MOTIFCL_FENCE_TIMEOUT_MS, 0 unset (the default) */
    mcl_env_fault fault;           /* MOTIFCL_FAULT */
    uint64_t fault_at;             /* its N: the fence wait it replaces, counted from 1 */
    /* What could not be taken, "; "-separated, for one warning (empty when all was taken). */
    char problems[1024];
} mcl_env_settings;

/* The settings of nothing asked: log_level -1, everything else zero. */
void mcl_env_defaults(mcl_env_settings *s);

/* Read every variable above into s. A value that cannot be taken is left at its default and
 * named in s->problems with the values accepted (MOTIFCL_TRANSFER's is kept as
 * MCL_ENV_TRANSFER_INVALID: a context refuses it). */
void mcl_env_read(mcl_env_settings *s);

/* The folder for MotifCL's caches in the user's cache folder: $XDG_CACHE_HOME/motifcl
 * (XDG_CACHE_HOME taken only when absolute, as the XDG base directory specification says),
 * else $HOME/.cache/motifcl. Returns 0 (out "") when neither is set or the path does not fit
 * `size`. Reads the environment whether or not the context ignores it (see above). */
int mcl_env_user_cache_dir(char *out, size_t size);

/* The value of an environment variable, or NULL when unset or empty. */
const char *mcl_env(const char *name);

/* 1 when the variable is set to something other than "0", "false", "off" or "no". */
int mcl_env_truthy(const char *name);

/* Whether `list` (comma-separated, case-insensitive) contains `word`. */
int mcl_list_contains(const char *list, const char *word);

/* Case-insensitive substring test. */
int mcl_contains_nocase(const char *haystack, const char *needle);

#endif
