/* Environment switches. Every variable the library reads is read here, so that the list in
 * the README stays complete:
 *   MOTIFCL_LOG                 error|warning|info|debug: print the log to stderr
 *   MOTIFCL_DEVICE              device index or name substring
 *   MOTIFCL_DEVICE_PROFILE      none|polaris
 *   MOTIFCL_VALIDATION          0|1|sync|gpu
 *   MOTIFCL_DISABLE             comma-separated feature names to switch off
 *   MOTIFCL_FORCE               comma-separated feature names to keep on despite quirks
 *   MOTIFCL_TRANSFER            auto|staging|import: how uploads and downloads move bytes
 *   MOTIFCL_QUANT_PATH          float|dot: force a path of the quantized matmul
 *   MOTIFCL_QUANT_GEMV_PLAN     t=,g=,nr=,u=,pb=,st=: override the quantized GEMV's plan
 *                               (tuning)
 *   MOTIFCL_QUANT_GEMM_SLICES   1..16: slices of K of the float-path quantized GEMM (tuning)
 *   MOTIFCL_QUANT_GEMM_UNROLL   1|2|4|8|16: its inner loop's unroll (tuning)
 *   MOTIFCL_QUANT_GEMM_FLOAT_TILE  <BM>x<BN>: its tile (tuning)
 *   MOTIFCL_PIPELINE_STATS      1: log the driver's statistics of each compiled kernel (info)
 *   MOTIFCL_MAX_BINDING         bytes: split quantized weights as if one binding held no more
 *   MOTIFCL_REQUIRE_VULKAN_COMPUTE  1: tests fail instead of skipping without a device
 */
#ifndef MCL_CORE_ENV_H
#define MCL_CORE_ENV_H

#include <stdint.h>

/* The value of an environment variable, or NULL when unset or empty. */
const char *mcl_env(const char *name);

/* MOTIFCL_LOG as a level (0..3), or -1 when unset. An unknown value counts as "warning". */
int mcl_env_log_level(void);

/* 1 when the variable is set to something other than "0", "false", "off" or "no". */
int mcl_env_truthy(const char *name);

/* Whether `list` (comma-separated, case-insensitive) contains `word`. */
int mcl_list_contains(const char *list, const char *word);

/* Case-insensitive substring test. */
int mcl_contains_nocase(const char *haystack, const char *needle);

#endif
