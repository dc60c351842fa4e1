/* motifcl-bench internals: the shared harness of every benchmark. Figures are measured in
 * the run that prints them; GPU times come from timestamps, converted with the device's
 * timestampPeriod and masked to timestampValidBits. */
#ifndef MCL_BENCH_H
#define MCL_BENCH_H

#include <stdint.h>

#include "motifcl.h"
#include "ops/ops_internal.h"
#include "vk/measure.h"
#include "witness.h"

#define MIB (UINT64_C(1) << 20)

typedef struct bench {
    mcl_context *ctx;
    mcl_witness *witness;
    int json, first_figure, repeat, hot;
    double peak_tflops;        /* FP32 peak for compute-bound ops; 0: unknown */
    double warmup_s;           /* seconds each measured operation runs before timing */
    double stream_read_gbs;    /* measured by bench_stream in this run; 0 before */
    double stream_copy_gbs;
    double fma_tflops;         /* measured by bench_peak in this run; 0 before, < 0 failed */
    double dot_tops;           /* 8-bit dot products x 4 multiply-adds x 2, per second; 0
                                * before or without the integer-dot feature, < 0 failed */
    mcl_timer *timer;
    uint32_t timer_count;
    const char *args[16];      /* key=value options after the benchmark's name */
    int arg_count;
    int quant_filters;         /* `quant` alone: its fmt= rows= gemm= filters apply */
    int profile;               /* --profile: the benchmarks that can, profile one more run */
    const char *figure_tag;    /* while set, appended to every figure's name as " [tag]" */
} bench;

/* After mcl_profiler_stop: the profile's lines per `per` (steps, tokens) as a table (with
 * each line's fraction of the streaming rate and FP32 peak where known) and into the witness
 * (note "profile": the JSON). `overhead_s`: the profiled run's time per `per` against
 * `plain_s`, the same unprofiled, so that the profiler's own cost is stated. */
void bench_profile_report(bench *b, const char *what, double per, double plain_s,
                          double profiled_s);

/* Record in the witness the device, its traits and its validation errors. */
void bench_witness_device(bench *b);

/* Print and record a measured figure. */
void bench_figure(bench *b, const char *name, double value, const char *unit);
/* Print and record a figure derived from a table or datasheet, not measured here. */
void bench_modeled(bench *b, const char *name, double value, const char *unit);
/* A numeric option "key=value" from the command line, or `fallback`. */
double bench_arg(const bench *b, const char *key, double fallback);
/* The text of option "key=value" (what follows "key="), or NULL. */
const char *bench_arg_text(const bench *b, const char *key);

/* `plans=P/P/...`: each item set in turn as the environment variable `variable` (`rule`:
 * unset) and read again by the context, then fn(b, user) run; the variable's own value is
 * put back after. Without plans= fn runs once as things are. Returns fn's results or-ed, or
 * 1 with a message and nothing run where the list is malformed. The benchmark tags its
 * figures with the plan its kernel took (b->figure_tag), which a plan that does not fit
 * leaves as the rule's. */
int bench_each_plan(bench *b, const char *variable, int (*fn)(bench *, void *), void *user);

double bench_now(void);
double bench_median(double *values, int n);

/* GPU timing: record `fn(user)` `reps` times, each between two timestamps and after a full
 * barrier, submit, and return the median GPU time of one run in seconds (negative on
 * failure). */
double bench_gpu_time(bench *b, int reps, mcl_status (*fn)(bench *, void *, int), void *user);

/* What the kernel benchmarks share (bench_ops.c). */

/* Copies of an operand of `bytes` to rotate through so that a figure is a memory figure (1
 * with --hot). */
int bench_copies_for(const bench *b, uint64_t bytes);
/* An f32 tensor filled on the GPU (any bits: for streaming), or NULL. */
mcl_tensor *bench_tensor_f32(bench *b, uint32_t ndim, const int64_t *shape, float value);
/* Finite values in [-1, 1) from `seed`; 0 on success. */
int bench_upload_random(mcl_tensor *t, uint32_t seed);

/* The streaming kernel over n4 vec4s of x (into y when copying). */
typedef struct stream_run {
    const mcl_kernel *kernel;
    mcl_tensor *x, *y;
    uint32_t n4, groups;
} stream_run;
/* Its pipeline (spec 0: read, 1: copy) and grid. */
mcl_status bench_stream_prepare(bench *b, stream_run *s, uint32_t spec);
mcl_status bench_stream_once(bench *b, void *user, int rep);

/* The read kernel over the next of `copies` inputs in each run. */
typedef struct stream_copies_run {
    stream_run s;
    mcl_tensor **x;
    mcl_tensor **y; /* batched: an output per read, so that nothing orders them; else NULL */
    int copies, count;
    int chain; /* batched reads each waiting for the one before (a barrier between) */
} stream_copies_run;
/* One read, or with y a batch of `count` reads of distinct copies (a rotating start). */
mcl_status bench_stream_copies_once(bench *b, void *user, int rep);

/* A matrix product over rotating copies of its operands. */
typedef struct mm_run {
    mcl_tensor *a[16], *b[16], *c;
    int copies;
    mcl_transpose ta, tb;
} mm_run;
mcl_status bench_matmul_once(bench *b, void *user, int rep);
void bench_mm_free(mm_run *r);

/* Models (bench_model.c, bench_synth.c): llama-shaped, random weights of one block type, in a
 * GGUF file or made on the device. */
typedef struct bench_llama_shape {
    uint32_t dim, layers, heads, kv_heads, hidden, vocab;
    uint32_t type; /* MCL_GGML_* block type of the matrices */
    uint32_t experts, experts_used; /* 0: dense; else a Mixtral-style mixture (hidden is each
                                       expert's width; the router f32) */
} bench_llama_shape;
uint64_t bench_llama_matrix_bytes(const bench_llama_shape *s, uint64_t n, uint64_t k);
/* Bytes of one layer's tensors in the file. */
uint64_t bench_llama_layer_bytes(const bench_llama_shape *s);
/* Bytes of one layer a decode step reads: a mixture's router and its chosen experts only. */
uint64_t bench_llama_layer_read_bytes(const bench_llama_shape *s);
/* Write the file (in a child process); 0 on success, else nothing is left at path. */
int bench_write_llama(const char *path, const bench_llama_shape *s);
/* The model's tensors in the file's order: a matrix [rows, k] of the shape's block type, an
 * expert stack (each of `experts` experts a matrix [rows, k]), a norm [rows] of ones, a
 * router [rows = experts, k] of f32 bench_llama_router(seed, i) for element i. A matrix's
 * seed (a stack's first, one an expert) picks its pseudo-random codes. fn's nonzero return
 * stops the walk and is returned as 1. */
enum { BENCH_MATRIX, BENCH_STACK, BENCH_NORM, BENCH_ROUTER };
/* f32 matrices: values uniform in [-BENCH_F32_SCALE, BENCH_F32_SCALE) (a power of two: the
 * CPU's pattern is the GPU's bit for bit). */
#define BENCH_F32_SCALE 0.015625f
typedef struct bench_tensor {
    char name[64];
    uint32_t kind, type;
    uint64_t rows, k;
    uint64_t seed;
    uint16_t scale; /* a block matrix's scales, fp16 (their signs pseudo-random) */
} bench_tensor;
/* The matrices' scales, fp16 2^-7, and the token embedding's, 2^-2: an embedding as small as
 * the other matrices leaves the residual stream to the attention's mean over the context,
 * nearly one vector for every token, and a mixture would route every token alike. */
#define BENCH_SCALE 0x2000u
#define BENCH_EMBED_SCALE 0x3400u
typedef int (*bench_tensor_fn)(void *user, const bench_tensor *t);
int bench_llama_tensors(const bench_llama_shape *s, bench_tensor_fn fn, void *user);
/* Element i of the router of seed `seed`: uniform in [-0.5, 0.5), pseudo-random (each layer's
 * router its own, so that a layer's experts do not foretell the next's). */
float bench_llama_router(uint64_t seed, uint64_t i);
/* The same model made on the device, without a file (bench_synth.c): the matrices' codes
 * pseudo-random words written by the GPU (tools/support/pattern.h), every block's scales the
 * file's (BENCH_SCALE, the embedding's BENCH_EMBED_SCALE; pseudo-random signs), norms of
 * ones, the file's routers; expert stacks in host memory with host_experts (as
 * MCL_MODEL_EXPERTS_IN_HOST_MEMORY). Closed by mcl_model_close. */
mcl_status bench_synth_llama(mcl_context *ctx, const bench_llama_shape *s, int host_experts,
                             mcl_model **out);

/* motifcl-bench decode products=1 (bench_products.c): layer 0's gate and up products of the
 * session's dense model timed alone, 200 calls after 20 under one wait, their quantization
 * made by the step's norm or by mcl_quantize_activations, in the session's buffer or one of
 * their own, given as it is; and every layer's in turn. Figures as "<label>: products
 * alone, ..."; 0 on success. */
int bench_products(bench *b, mcl_session *s, const char *label);

/* The RX 580 the modeled figures scale to (datasheet, no RX 580 ran): its memory's 256 GB/s,
 * its FP32 peak of 6.17 TFLOP/s, and about 12 GB/s for a GPU's reads of host memory over its
 * PCIe 3.0 x16 (15.75 GB/s a direction before the protocol's own bytes). */
#define BENCH_RX580_GBS 256.0
#define BENCH_RX580_TFLOPS 6.17
#define BENCH_RX580_BUS_GBS 12.0

/* motifcl-bench decode expert_mib=M (bench_experts.c): on a session with an expert cache, a
 * decode run of `steps` sampled tokens and one of the prompt's tokens fed in turn (each
 * after the prompt's pass): tokens/s, hit rate, bytes moved and read in place per token; the
 * device's read of host memory and the staging upload rates; then, labelled modeled, the
 * bus's part of a token, a perfect prefetch's ceiling and an RX 580 under the same budget and
 * routing. 0 on success. */
int bench_expert_run(bench *b, mcl_session *s, const int32_t *tokens, uint32_t prompt,
                     uint32_t steps, const char *label);

/* Benchmarks. Each returns 0 on success. */
int bench_stream(bench *b);
int bench_peak(bench *b);
int bench_gemv(bench *b);
int bench_gemm(bench *b);
int bench_qgemv(bench *b);
int bench_rows(bench *b);
int bench_replay(bench *b);
int bench_memory(bench *b);
int bench_transfer(bench *b);
int bench_train(bench *b);
int bench_load(bench *b);
int bench_decode(bench *b, int prefill_only);

#endif
