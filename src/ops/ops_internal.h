/* Operations the library uses itself and the test suites reach through the static library,
 * but which are not part of the public API. */
#ifndef MCL_OPS_INTERNAL_H
#define MCL_OPS_INTERNAL_H

#include "motifcl.h"
#include "quant_plan.h"

/* A GEMM tile shape (gemm_f32.comp's specialization): BM x BN per workgroup, TM x TN per
 * invocation (4 or 8 each), BK along K per shared-memory step. */
typedef struct mcl_gemm_config {
    uint32_t bm, bn, bk, tm, tn;
    uint32_t db; /* double-buffered shared tiles (twice the shared memory) */
} mcl_gemm_config;

/* The tile shape mcl_matmul gives gemm_f32 for c [batch][m][n] with K = k, B transposed
 * where tb (docs/tuning.md, "FP32 GEMM"; MOTIFCL_GEMM_TILE where set). */
void mcl_gemm_tiles(const mcl_context *ctx, uint64_t m, uint64_t n, uint32_t k, uint64_t batch,
                    int tb, mcl_gemm_config *cfg);

/* The f32 GEMV's shape for `rows` (1..8) rows of x and n rows of w, MOTIFCL_GEMV_PLAN's
 * where set and fitting: invocations a workgroup, row groups, rows of w a row group, vec4s of
 * K an invocation takes per staged chunk (0: x read from memory). */
mcl_status mcl_gemv_f32_plan(mcl_context *ctx, uint32_t rows, uint32_t n, uint32_t plan[4]);

/* Shared memory of gemm_f32 with tile shape cfg, single- or double-buffered. */
uint32_t mcl_gemm_shared_bytes(const mcl_gemm_config *cfg, uint32_t db);

/* Values of K gemm_f32's loop over a step unrolls at a time (its KU) for tile shape cfg:
 * compile time against speed (docs/tuning.md, "The K step's unroll"). */
uint32_t mcl_gemm_unroll(const mcl_context *ctx, const mcl_gemm_config *cfg);

/* Record a GEMM with an explicit tile shape (the benchmark sweeps them). Shapes are those of
 * mcl_matmul after validation: c[batch][m][n]; strides in elements, 0 for a shared operand. */
mcl_status mcl_gemm_dispatch(mcl_context *ctx, const mcl_gemm_config *cfg, mcl_tensor *a,
                             int ta, mcl_tensor *b, int tb, mcl_tensor *bias, mcl_tensor *c,
                             uint32_t m, uint32_t n, uint32_t k, uint32_t batch,
                             uint32_t stride_a, uint32_t stride_b);

/* A counter-state layer's product (gemm_f32.comp's COUNTER_B): c [rows, cols] = a [rows, k]
 * times W^T (transposed 0: k = in, cols = out) or W (transposed 1: k = out, cols = in), W
 * decoded from `state` (packed codes, [out, in]) and `scale` (s, [out]) as its tiles load.
 * Split-K partials in `split` (f32, not an operand) where not NULL, as far as it holds them;
 * NULL: a scratch tensor made per call. */
mcl_status mcl_gemm_counter(mcl_context *ctx, mcl_tensor *a, int transposed, mcl_tensor *state,
                            mcl_tensor *scale, uint32_t counter_c, mcl_tensor *c,
                            uint32_t rows, uint32_t k, uint32_t cols, mcl_tensor *split);

/* mcl_rmsnorm_backward (and mcl_attention_backward_stats below) with the caller's scratch
 * instead of a scratch tensor made per call (bump-allocated scratch is reclaimed only when all
 * of it is released, so a pass that calls them once per layer would grow with depth): dweight's
 * per-row products (f32, at least rows x d floats; used only when dweight is not NULL) and
 * their column sums' partials (f32, ceil(rows / 64) x d floats; NULL or smaller: made per
 * call), and the attention's row statistics (f32, at least B x Hq x T x 4 floats). No
 * scratch may be an argument; NULL makes them per call, as the public functions do. */
mcl_status mcl_rmsnorm_backward_scratch(mcl_context *ctx, const mcl_tensor *x,
                                        const mcl_tensor *weight, const mcl_tensor *dy,
                                        float eps, mcl_tensor *dx, mcl_tensor *dweight,
                                        mcl_tensor *scratch, mcl_tensor *partial);

/* mcl_attention_backward with the caller's statistics scratch (as above; NULL: made per call).
 * With stats_given set, `scratch` holds the rows' softmax statistics as mcl_attention_stats
 * wrote them for the same q, k and desc, and the backward does not find them again (it still
 * writes Di = dout . out into them); otherwise it finds and writes them. */
mcl_status mcl_attention_backward_stats(mcl_context *ctx, const mcl_tensor *q,
                                        const mcl_tensor *k, const mcl_tensor *v,
                                        const mcl_tensor *out, const mcl_tensor *dout,
                                        const mcl_attention_desc *desc, mcl_tensor *dq,
                                        mcl_tensor *dk, mcl_tensor *dv, mcl_tensor *scratch,
                                        int stats_given);

/* mcl_attention (never split; f32 k and v) that also writes the rows' softmax statistics into
 * stats (f32, at least B x Hq x T x 4 floats; attention_stats_f32.comp), for
 * mcl_attention_backward_stats. */
mcl_status mcl_attention_stats(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                               const mcl_tensor *v, const mcl_attention_desc *desc,
                               mcl_tensor *out, mcl_tensor *stats);

/* The (query row, key) pairs that attention over [B, T, Hq] queries and kv_len keys scores,
 * with or without the causal mask: what its FLOPs are counted from for the profiler. */
double mcl_attention_pairs(int64_t batch, int64_t seq_q, int64_t kv_len, int64_t heads_q,
                           int causal);

/* Whether the row kernels (softmax, reductions, norms) reduce with subgroup arithmetic (1)
 * or with the portable shared-memory tree (0) on this context. */
int mcl_rows_use_subgroup(const mcl_context *ctx);

/* mcl_attention with the key split forced (0: the library chooses, 1: never split) and the
 * split count that ran reported: the test suite covers both paths on every shape. */
mcl_status mcl_attention_ex(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                            const mcl_tensor *v, const mcl_attention_desc *desc,
                            uint32_t force_splits, uint32_t *splits_used, mcl_tensor *out);

/* mcl_attention for a prompt's pass: where the device has cooperative matrices and the head
 * dimension is a multiple of 16 up to 128 (f32 k and v, 64 query rows or more), on them
 * (attention_mma.comp: q, k, v and the weights rounded to f16, about 1e-3 relative); else
 * mcl_attention's kernels. */
mcl_status mcl_attention_prompt(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                                const mcl_tensor *v, const mcl_attention_desc *desc,
                                mcl_tensor *out);

/* A decoder's row step between its products (norm_q8_f32.comp): x += h where h is not NULL,
 * y = RMSNorm(x) * weight, and where act (i32) is not NULL, y quantized into it for the
 * integer-dot path as mcl_quantize_activations would (rows * d / 32 blocks). x, y and h are
 * f32 [rows, d], d a multiple of 32, all distinct. */
mcl_status mcl_norm_q8(mcl_context *ctx, mcl_tensor *h, mcl_tensor *weight, float eps,
                       mcl_tensor *x, mcl_tensor *y, mcl_tensor *act);

/* A decoder's row step folded into the products around it (gemv_q_dot.glsl), on the
 * integer-dot GEMV: with norm, the product's input a is x, the residual stream (f32 [rows,
 * k]), and each workgroup makes RMSNorm(x) * norm (eps) and its quantization itself
 * (gemv_q_dot_rms.comp); with accumulate, the product adds its result into c, c + (a W^T), as
 * the residual add would. */
typedef struct mcl_gemv_fold {
    mcl_tensor *norm;
    float eps;
    int accumulate;
} mcl_gemv_fold;

/* SwiGLU's silu(gate) * up quantized into act (i32) for the integer-dot path as
 * mcl_quantize_activations would quantize it (swiglu_q8_f32.comp); gate and up f32 of one
 * shape, rows a multiple of 32 long. */
mcl_status mcl_swiglu_q8(mcl_context *ctx, mcl_tensor *gate, mcl_tensor *up, mcl_tensor *act);

/* The feed-forward's gate and up products of a's rows (quantized in act), SwiGLU and its
 * quantization for the down product into act_out, as the products, mcl_swiglu_q8 and nothing
 * between would give them, in one dispatch (gemv_q_dot_glu.comp). c (f32 [..., N], never
 * written) gives the products' shape as mcl_matmul's c does. Where the fusion does not apply,
 * nothing is recorded and *fused is 0: the caller runs the products and mcl_swiglu_q8. It
 * applies to w_gate and w_up of one dtype, Q8_0 or Q4_0, and shape [N, K], N a multiple of
 * 32, each in one binding, at 1 to 8 rows of a on the integer-dot path, with a plan whose
 * workgroup the device takes. */
mcl_status mcl_matmul_glu_q8(mcl_context *ctx, mcl_tensor *a, mcl_tensor *act,
                             mcl_tensor *w_gate, mcl_tensor *w_up, mcl_tensor *c,
                             mcl_tensor *act_out, const mcl_gemv_fold *fold, int *fused);

/* A decoder's row step folded into its products (mcl_gemv_fold, above): whether the
 * product c = a W^T takes the integer-dot GEMV in one part, and with norm whether its
 * workgroups can make a's normed quantization themselves; the same for the fused gate and up
 * product (mcl_matmul_glu_q8 with a fold's norm). */
int mcl_matmul_folds(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                     const mcl_tensor *c, int norm);
int mcl_matmul_glu_folds(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w_gate,
                         const mcl_tensor *w_up, const mcl_tensor *c);

/* mcl_matmul_multi_given with a fold (each product mcl_matmul_folds accepts): with its norm,
 * a is the residual stream and act is unused (NULL). */
mcl_status mcl_matmul_multi_fold(mcl_context *ctx, const mcl_tensor *a, mcl_tensor *act,
                                 uint32_t count, const mcl_tensor *const *w,
                                 const mcl_tensor *const *bias, mcl_tensor *const *c,
                                 const mcl_gemv_fold *fold);

/* Reads bytes [offset, offset + bytes) of t (clamped to t, in 16-byte words, and to what one
 * dispatch of 65535 workgroups reads; nothing for a t beyond one binding) so that a later
 * dispatch finds them in the device's last-level cache (cache_warm_u32.comp); sink, 4 words
 * at least, is the kernel's only output and is never meaningfully written. Recorded beside a
 * dispatch that reads and writes neither, it runs alongside it. */
mcl_status mcl_cache_warm(mcl_context *ctx, mcl_tensor *t, uint64_t offset, uint64_t bytes,
                          mcl_tensor *sink);

/* Words of a sampled row's parameters before its penalized tokens (sample_f32.comp): the
 * row of logits, top_k, then as float bits temperature, top_p, min_p, repeat_penalty,
 * frequency_penalty, presence_penalty; the draw's key; the count n of penalized tokens; at
 * word MCL_SAMPLE_HEADER, n pairs (token, times seen). */
#define MCL_SAMPLE_HEADER 16u
/* A token for each of `count` rows of parameters (params i32, `stride` words a row, at most
 * 256 penalized tokens a row) from the rows of logits f32 [rows, vocab] they name, as
 * mcl_sample_logits chooses on the host (sample_f32.comp), into tokens (i32, count). */
mcl_status mcl_sample_rows(mcl_context *ctx, mcl_tensor *logits, mcl_tensor *params,
                           uint32_t stride, uint32_t count, mcl_tensor *tokens);
/* dst row idx[offset + r] = src row r for every row r of src [rows, width] (dst [*, width],
 * one 4-byte dtype, idx i32 read when the work runs): scatter_rows_u32.comp. */
mcl_status mcl_scatter_rows(mcl_context *ctx, mcl_tensor *src, mcl_tensor *idx,
                            uint32_t offset, mcl_tensor *dst);

/* The most key slices mcl_attention_decode cuts a cache into. */
#define MCL_ATTENTION_DECODE_MAX_SPLITS 64u
/* Attention of B tokens' queries q [B, 1, Hq, D], token b over the cache k, v [sequences, S,
 * Hkv, D] of sequence lens[seq_slot + b] (b where seq_slot is MCL_SLOT_NONE), whose keys in
 * use are lens[len_slot + b] (at most S), both read from the i32 tensor lens when the work
 * runs: a recorded decode step replays it at every length (the slices are planned for all
 * S). Scale 1 / sqrt(D). k and v are f32, or f16 where the device stores 16-bit values.
 * part_o and part_ml are f32 scratch of at least B x
 * MCL_ATTENTION_DECODE_MAX_SPLITS x Hq x D and x Hq x 2 elements. One dispatch: the slice
 * that finishes last merges the slices, counting them in `counters` (i32, at least B x Hq
 * elements, zero before the first call; each dispatch leaves them zero again). Where act is
 * not NULL, out is also quantized into it for the integer-dot path, as
 * mcl_quantize_activations would quantize it: act holds act_blocks blocks (10 x act_blocks
 * i32), out's from block act_first on (D a multiple of 32). */
mcl_status mcl_attention_decode(mcl_context *ctx, mcl_tensor *q, mcl_tensor *k, mcl_tensor *v,
                                mcl_tensor *lens, uint32_t len_slot, uint32_t seq_slot,
                                mcl_tensor *part_o, mcl_tensor *part_ml, mcl_tensor *counters,
                                mcl_tensor *act, uint32_t act_first, uint32_t act_blocks,
                                mcl_tensor *out);

/* The RoPE and cache write that mcl_attention_decode_rope does with the attention: the new
 * token's k and v [B, Hkv, D] (f32, as the products wrote them), the table of mcl_rope_kv and
 * its pair layout, and the slot of each batch's position in lens. */
typedef struct mcl_decode_rope {
    mcl_tensor *k_new, *v_new, *table;
    uint32_t pos_slot;
    mcl_rope_layout layout;
} mcl_decode_rope;
/* mcl_rope_kv of the B tokens into the caches k and v, then mcl_attention_decode, as one
 * dispatch: q is read unrotated (and left so); batch b's position lens[rope->pos_slot + b]
 * must be its length lens[len_slot + b] less one, and the new key, which the slice holding
 * it reads from k_new and v_new (rotated, and rounded as the cache stores it), is written
 * into the cache of its sequence as mcl_rope_kv writes it. D a multiple of 8. */
mcl_status mcl_attention_decode_rope(mcl_context *ctx, mcl_tensor *q, mcl_tensor *k,
                                     mcl_tensor *v, mcl_tensor *lens, uint32_t len_slot,
                                     uint32_t seq_slot, const mcl_decode_rope *rope,
                                     mcl_tensor *part_o, mcl_tensor *part_ml,
                                     mcl_tensor *counters, mcl_tensor *act, uint32_t act_first,
                                     uint32_t act_blocks, mcl_tensor *out);

/* mcl_matmul with an f32 b (matmul.c). */
mcl_status mcl_matmul_f32(mcl_context *ctx, const mcl_tensor *a, mcl_transpose ta,
                          const mcl_tensor *b, mcl_transpose tb, const mcl_tensor *bias,
                          mcl_tensor *c);

/* mcl_matmul_f32 whose split-K partials go to the caller's scratch (f32, not an operand)
 * instead of a scratch tensor made per call, the split reduced to the slices it holds (none
 * below two): a pass that multiplies once per layer keeps its memory flat. NULL: as
 * mcl_matmul_f32. The split changes the order of the sums, so the bits may differ from
 * mcl_matmul's. */
mcl_status mcl_matmul_f32_scratch(mcl_context *ctx, const mcl_tensor *a, mcl_transpose ta,
                                  const mcl_tensor *b, mcl_transpose tb, const mcl_tensor *bias,
                                  mcl_tensor *c, mcl_tensor *scratch);

/* mcl_matmul with a block-quantised b (matmul_quant.c). */
mcl_status mcl_matmul_quant(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                            mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c);

/* mcl_matmul with a block-quantised b along `path` (AUTO: mcl_quant_path_select for the GEMV,
 * mcl_quant_gemm_path_select for the GEMM). `ran`, if not NULL, receives the path recorded.
 * A path where it cannot run is MCL_ERROR_UNSUPPORTED: DOT without integer dot product or for a
 * K type's GEMM, MATRIX without cooperative matrices or for the GEMV's rows. */
mcl_status mcl_matmul_quant_ex(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                               mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c,
                               mcl_quant_path path, mcl_quant_path *ran);

/* mcl_matmul_multi along `path` (AUTO: each weight's mcl_quant_path_select), for the tests. */
mcl_status mcl_matmul_multi_ex(mcl_context *ctx, const mcl_tensor *a, uint32_t count,
                               const mcl_tensor *const *w, const mcl_tensor *const *bias,
                               mcl_tensor *const *c, mcl_quant_path path);

/* mcl_matmul_multi where the integer-dot path's quantization of a is `act` (not NULL: made by
 * the caller, mcl_norm_q8 or mcl_quantize_activations). */
mcl_status mcl_matmul_multi_given(mcl_context *ctx, const mcl_tensor *a, mcl_tensor *act,
                                  uint32_t count, const mcl_tensor *const *w,
                                  const mcl_tensor *const *bias, mcl_tensor *const *c);
/* Whether mcl_matmul(a, W^T) into c takes the integer-dot path, which quantizes a (0 for an
 * f32 W, and for arguments it would refuse). */
int mcl_matmul_quantizes(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                         const mcl_tensor *c);

/* mcl_dequantize_tensor with quant.glsl's piece decoder (pb: bytes of codes per piece, 8, 16
 * or 32 as the format takes, any non-zero value for Q6_K; mcl_dequantize_tensor decodes
 * pieces of 16) or, with pb = 0, the GEMM's 4-weight decoder, so that a test can hold each to
 * the CPU reference. MCL_ERROR_INVALID_ARGUMENT for a piece size the format has not. */
mcl_status mcl_dequantize_tensor_ex(mcl_context *ctx, const mcl_tensor *q, mcl_tensor *out,
                                    uint32_t pb);

/* mcl_embedding with a block-quantised table (embedding_quant.c), once mcl_embedding has
 * checked the dtypes, shapes and element counts: the table bound in row ranges where it is
 * larger than one binding, one dispatch per range. */
/* RoPE with each pair's frequency from `table`, f32 [Dh / 2, 2]: pair i's turns per position
 * as hi + lo (mcl_rope_table_values), read by rope_table_f32.comp; otherwise mcl_rope's
 * arguments, checks and angle reduction (layout.c). */
mcl_status mcl_rope_table(mcl_context *ctx, const mcl_tensor *x, mcl_rope_layout layout,
                          const mcl_tensor *table, int64_t position_offset, mcl_tensor *out);
/* The table of theta_base's frequencies for head_dim, each divided by factors[i] where
 * factors is not NULL (llama 3.1's rope_freqs): head_dim floats, computed in double. */
void mcl_rope_table_values(double theta_base, uint32_t head_dim, const float *factors,
                           float *table);
/* A slot argument that names no slot (mcl_rope_kv, mcl_attention_decode). */
#define MCL_SLOT_NONE 0xFFFFFFFFu
/* Rows row0 .. row0 + count - 1 of q [rows, Hq, Dh], k and v [rows, Hkv, Dh], one token each:
 * q rotated in place, k rotated into the caches kc [sequences, S, Hkv, Dh] and v copied into
 * vc, row row0 + r at position ids[pos_slot + r] of sequence ids[seq_slot + r] (sequence 0
 * where seq_slot is MCL_SLOT_NONE), read from the i32 tensor ids when the work runs (a
 * position at or past S, or a sequence past the caches, writes nothing). Frequencies from
 * `table` as mcl_rope_table's (rope_kv_f32.comp). The caches are f32, or f16 (rounded to
 * nearest) where the device stores 16-bit values. */
mcl_status mcl_rope_kv(mcl_context *ctx, mcl_tensor *q, mcl_tensor *k, mcl_tensor *v,
                       mcl_rope_layout layout, mcl_tensor *table, mcl_tensor *ids,
                       uint32_t pos_slot, uint32_t seq_slot, uint32_t row0, uint32_t count,
                       mcl_tensor *kc, mcl_tensor *vc);

mcl_status mcl_embedding_quant(mcl_context *ctx, mcl_tensor *table, mcl_tensor *ids,
                               mcl_tensor *out);

/* How many slices of K a GEMM of `tiles` output tiles (workgroups) gets: split until the grid
 * holds about 512 workgroups, no slice under 256 values of K, at most 16 slices (matmul.c). */
uint32_t mcl_gemm_slices(uint64_t tiles, uint32_t k);

/* The second step of a split-K GEMM (gemm_reduce_f32.comp): c[i] = sum over the slices s of
 * partial[s * total + i] (+ bias[i % n]), i < total. */
mcl_status mcl_gemm_reduce(mcl_context *ctx, mcl_tensor *partial, mcl_tensor *bias,
                           mcl_tensor *c, uint32_t total, uint32_t n, uint32_t slices);

/* c = a W^T on the integer-dot path with a already quantized into act (mcl_quantize_activations
 * of a's rows and K): the products alone, for motifcl-bench to time the GEMV kernels without
 * the quantization and its wait. Checked as mcl_matmul_quant_ex checks (a gives the shapes). */
mcl_status mcl_matmul_quantized_input(mcl_context *ctx, mcl_tensor *a, mcl_tensor *act,
                                      mcl_tensor *w, mcl_tensor *c);

/* The integer-dot path's first step: the first `rows` rows of K values of a (f32, K a multiple
 * of 32) quantized per 32 values into act (4-byte elements, at least rows * K / 32 * 10 of
 * them): all codes (8 words of 4 signed bytes per block), then the f32 scales, then the i32
 * code sums (shaders/qdot.glsl). */
mcl_status mcl_quantize_activations(mcl_context *ctx, mcl_tensor *a, uint32_t rows, uint32_t k,
                                    mcl_tensor *act);

/* The checks most operations start with: every tensor present, of ctx, f32. */
mcl_status mcl_ops_check_f32(mcl_context *ctx, const char *op, const mcl_tensor *const *t,
                             uint32_t count);

/* Workgroup size for a row kernel whose rows take `units` loads: a power of two (the
 * reduction tree halves it), enough to give each invocation work, within the device's limit
 * and reduce.glsl's scratch. */
uint32_t mcl_row_local_size(const mcl_context *ctx, uint64_t units);

/* The fused optimizer step of the model (adamw_fused_f32.comp): AdamW over one flat
 * parameter buffer with hyper-parameters read from the device tensor `hyper` (filled by
 * mcl_adamw_hyper), gradients scaled by min(1, max_norm / norm[0]) on the fly, weight decay
 * on elements [0, decay_end) only. */
#define MCL_ADAMW_HYPER_COUNT 8
mcl_status mcl_adamw_fused(mcl_context *ctx, mcl_tensor *params, mcl_tensor *grads,
                           mcl_tensor *m, mcl_tensor *v, mcl_tensor *hyper, mcl_tensor *norm,
                           uint64_t decay_end);
/* Check desc as mcl_adamw_step() does (messages name `op`) and fill the hyper tensor's
 * values: lr, betas and eps with defaults filled, weight decay, bias corrections for
 * desc->step, and a clipping norm (0 when max_grad_norm is 0, negative or not finite: no
 * clipping). */
mcl_status mcl_adamw_hyper(mcl_context *ctx, const char *op, const mcl_adamw_desc *desc,
                           float max_grad_norm, float hyper[MCL_ADAMW_HYPER_COUNT]);

/* ---- Mixtures of experts (moe.c) --------------------------------------------------------- */

/* The most experts a router chooses among, and the most it chooses per row. */
#define MCL_MOE_MAX_EXPERTS 256u
#define MCL_MOE_MAX_USED 16u

/* out = 1 / (1 + e^-x), element-wise (unary_f32.comp); out may alias x. A mixture's shared
 * expert's gate. */
mcl_status mcl_sigmoid(mcl_context *ctx, const mcl_tensor *x, mcl_tensor *out);

/* A mixture's routing of each row of logits f32 [rows, E] (E <= 256; any rank, rows the
 * product of all but the last dimension): the k (1..min(16, E)) experts of the largest
 * logits, an exact tie to the lower index, into ids (i32, rows x k elements at least), and
 * their weights into weights (f32, as many): the softmax's probabilities where norm is 0
 * (qwen2moe), renormalised to sum to 1 over the chosen k where norm is not (Mixtral).
 * moe_route_f32.comp, one workgroup per row, in f32 with a fixed order of summation. */
mcl_status mcl_moe_route(mcl_context *ctx, mcl_tensor *logits, uint32_t k, int norm,
                         mcl_tensor *ids, mcl_tensor *weights);

/* moe_router_f32's most slices of K a row (its part tensor holds rows x this x E floats). */
#define MCL_MOE_ROUTER_SLICES 16u

/* mcl_moe_router's tensors: x f32 [rows, K] (any rank), the router w f32 [E, K], scratch part
 * f32 (rows x MCL_MOE_ROUTER_SLICES x E elements at least) and counts i32 (rows at least, zero
 * before the first call: each call returns them to zero), and its outputs, logits f32 [rows,
 * E] and ids and weights as mcl_moe_route writes them. */
typedef struct mcl_moe_router_args {
    mcl_tensor *x, *w, *part, *counts, *logits, *ids, *weights;
    uint32_t k; /* experts a row chooses */
    int norm;   /* as mcl_moe_route's */
} mcl_moe_router_args;

/* The router's logits x w^T and mcl_moe_route's routing of them in one dispatch
 * (moe_router_f32.comp: the product spread over up to 16 workgroups a row, the row routed by
 * its last): *done 1. Where the kernel does not take the operands (w or x not f32, K not a
 * multiple of 4, E over 256, more than 65535 rows, a device with less than 19 KiB of shared
 * memory or 256 invocations a workgroup) nothing is recorded, *done is 0 and the caller runs
 * the product and mcl_moe_route itself. */
mcl_status mcl_moe_router(mcl_context *ctx, const mcl_moe_router_args *a, int *done);

/* How mcl_matmul_experts reads its batch. A routed batch of `rows` rows has rows x slots pairs
 * (row r, slot j), pair r slots + j naming its expert in ids[ids_first + r slots + j]. */
typedef struct mcl_experts_desc {
    uint32_t experts;   /* E: W holds E experts of N rows, expert e's rows from e N */
    uint32_t slots;     /* k: experts per row */
    int per_slot;       /* x has a row per pair ([rows x slots, K]: the down projection's
                         * input); 0: a row per row of the batch, shared by its experts
                         * ([rows, K]: gate and up) */
    uint32_t ids_first; /* ids' element of pair 0 */
    mcl_quant_path path;/* a block-quantised W: AUTO (the dense GEMV's choice, the traits'
                         * quant_dot), FLOAT or DOT; ignored for an f32 W */
    mcl_tensor *act;    /* DOT: x already quantized for the integer-dot path (i32; from
                         * mcl_quantize_activations or mcl_swiglu_q8, every row of x), or NULL
                         * to quantize it here */
    uint32_t id_base;   /* the id of W's expert 0: W's experts are ids [id_base, id_base + E)
                         * (an expert cache's slots and its pool, one ids tensor for both);
                         * 0 usually */
} mcl_experts_desc;

/* The expert GEMVs of a routed batch: y[p, :] = W_e x_p^T for every pair p, e = ids[ids_first
 * + p] read from the device when the work runs (a recorded step replays for any routing) and
 * x_p x's row p (per_slot) or p / slots. W [E N, K] is f32 or block-quantised (the stack a
 * model file's [E, N, K] expert tensor loads as); x f32 [.., K]; y f32 [.., N] with rows x
 * slots rows (at most 65535 pairs); ids i32. Only the chosen experts' rows are read: once per
 * pair for a batch of fewer than 4 rows (decode), once per chunk of up to 8 of its pairs for
 * more (a block-quantised W; the grouped mode, moe.c). A W larger than one binding is bound in
 * parts of whole experts, each part one dispatch over every pair. A pair
 * whose id is outside [0, E) gets nothing written. `ran`, if not NULL, receives the path
 * recorded (FLOAT for an f32 W). */
mcl_status mcl_matmul_experts(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *ids,
                              const mcl_experts_desc *desc, mcl_tensor *y,
                              mcl_quant_path *ran);

/* The chosen experts' gate and up products and SwiGLU in one dispatch (gemv_q_dot_glu in its
 * per-pair mode), quantized for the down product into act_out ([rows x slots] rows of N / 32
 * blocks), as mcl_matmul_experts over each stack, mcl_swiglu_q8 and nothing between would give
 * them. x [rows, K] (shared by a row's slots) with its quantization desc->act; gate (f32
 * [rows x slots, N], never written) gives the shape. Where the fusion does not apply (a batch
 * the grouped mode takes, a stack bound in parts, a format or path without the kernel)
 * nothing is recorded and *fused is 0. With act_out NULL nothing is recorded either: *fused
 * says whether the fusion applies. */
mcl_status mcl_matmul_experts_glu_q8(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w_gate,
                                     mcl_tensor *w_up, mcl_tensor *ids,
                                     const mcl_experts_desc *desc, mcl_tensor *gate,
                                     mcl_tensor *act_out, int *fused);

/* mcl_matmul_experts_sum's weighted sum: weights f32 [rows, slots] (mcl_moe_route's), counts
 * i32 of rows x (the product's workgroups) elements at least (zero before the first call: each
 * call returns them to zero; the model's width serves every plan), out f32 [rows, N]. */
typedef struct mcl_experts_sum_args {
    mcl_tensor *weights, *counts, *out;
    int accumulate; /* out += the sum; 0: out = it */
} mcl_experts_sum_args;

/* A decode step's down products and their weighted sum in one dispatch (gemv_q_dot_sum):
 * mcl_matmul_experts into y (per_slot, desc->act given, on the integer-dot path, the per-pair
 * mode) followed by mcl_moe_combine of y into out, bit for bit, with no dispatch between. Where
 * that does not apply (another path or mode, a stack bound in parts) nothing is recorded and
 * *done is 0. */
mcl_status mcl_matmul_experts_sum(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w,
                                  mcl_tensor *ids, const mcl_experts_desc *desc, mcl_tensor *y,
                                  const mcl_experts_sum_args *a, int *done);

/* Whether mcl_matmul_experts over the stack w takes the integer-dot path with desc.path AUTO
 * (and so reads a quantization of x: desc.act, or its own); 0 for an f32 stack. */
int mcl_matmul_experts_quantizes(mcl_context *ctx, const mcl_tensor *w);

/* ---- Expert cache (expert_cache.c) ------------------------------------------------------ */

/* The state of one layer's expert cache (i32 words, expert_residency.comp): clock, hits,
 * misses, pool reads (experts a batch read from the pool in place), the count of the latest
 * plan's copies, its copies (slots of them), slot_of (experts), owners (slots), last uses
 * (slots). */
#define MCL_EXPERT_STATE_CLOCK 0u
#define MCL_EXPERT_STATE_HITS 1u
#define MCL_EXPERT_STATE_MISSES 2u
#define MCL_EXPERT_STATE_POOL_READS 3u
#define MCL_EXPERT_STATE_COPIES 4u
#define MCL_EXPERT_STATE_HEADER 5u
/* Words of a state of `experts` experts and `slots` slots. */
uint64_t mcl_expert_state_words(uint32_t experts, uint32_t slots);
/* The state of an empty cache (nothing resident, every count 0) into words. */
void mcl_expert_state_init(uint32_t experts, uint32_t slots, int32_t *words);
/* Where the slot-sized ranges of one expert lie in a stack: a pool of `experts` experts and a
 * cache of `slots` slots of them (f32 and K-quants: one segment; a split block type: block
 * bodies, then d values). Expert e's bytes of segment i are [pool_at + e bytes, + bytes). */
typedef struct mcl_expert_segment {
    uint64_t pool_at, cache_at, bytes;
} mcl_expert_segment;
mcl_status mcl_expert_segments(const mcl_tensor *stack, uint32_t experts, uint32_t slots,
                               mcl_expert_segment seg[2], uint32_t *count);
/* The plan of a batch for one layer (expert_residency.comp, one invocation): hits refresh
 * their slots, misses take the least recently used slot the batch does not use and are listed
 * for mcl_expert_copy, and where every slot is the batch's the expert is read from the pool
 * in place. vids[p] (i32, pairs) becomes the slot of ids[p]'s expert, or slots + the expert
 * for one read from the pool, or -1 for an id outside [0, experts). state (i32,
 * mcl_expert_state_words) is read and written on the device. */
mcl_status mcl_expert_residency(mcl_context *ctx, mcl_tensor *ids, uint32_t pairs,
                                uint32_t experts, uint32_t slots, mcl_tensor *state,
                                mcl_tensor *vids);
/* The copies of the latest plan in state: each listed expert's rows from pool [experts x N,
 * K] into its slot of cache [slots x N, K] (one dtype, f32 or block-quantised, each within
 * one binding and 4 GiB): expert_copy.comp, a dispatch of fixed size per segment. */
mcl_status mcl_expert_copy(mcl_context *ctx, mcl_tensor *state, uint32_t experts,
                           uint32_t slots, mcl_tensor *pool, mcl_tensor *cache);

/* A mixture's weighted sum: out[r, :] = sum_j weights[r, j] y[r k + j, :] (in slot order), or
 * out += it where accumulate is not 0; y f32 [rows k, D], weights f32 [rows, k] (as
 * mcl_moe_route writes them), out f32 [rows, D], rows <= 65535. moe_combine_f32.comp. */
mcl_status mcl_moe_combine(mcl_context *ctx, mcl_tensor *y, mcl_tensor *weights, uint32_t k,
                           int accumulate, mcl_tensor *out);

#endif
