/* The inference engine's internals (src/engine): a session's device state, the forward pass
 * of a llama-family decoder over it, and the sampler. */
#ifndef MCL_ENGINE_INTERNAL_H
#define MCL_ENGINE_INTERNAL_H

#include "motifcl.h"
#include "../ops/ops_internal.h"
#include "../vk/runtime.h"

/* A layer's weights, as the model holds them (NULL where the model has none). */
typedef struct engine_layer {
    mcl_tensor *attn_norm, *wq, *wk, *wv, *bq, *bk, *bv, *wo;
    mcl_tensor *ffn_norm, *w_gate, *w_up, *w_down;
    /* A mixture's (info.experts > 0; w_gate, w_up and w_down are then NULL): the router, the
     * expert stacks [experts x rows, K], and the shared expert with its gate row [dim]. */
    mcl_tensor *w_router, *w_gate_exps, *w_up_exps, *w_down_exps;
    mcl_tensor *w_shared_gate_inp, *w_gate_sh, *w_up_sh, *w_down_sh;
    /* The session's expert cache of the layer (experts.c; NULL without one): the slots' rows
     * of each stack [slots x rows, K] and the state the device plans with (i32). */
    mcl_tensor *gate_cache, *up_cache, *down_cache, *expert_state;
    /* The caches: one tensor of all sequences, [sequences, context, kv_heads, head_dim],
     * where one binding holds it; else one per sequence, [1, context, kv_heads, head_dim]. */
    mcl_tensor *k_all, *v_all;
    mcl_tensor **k_cache, **v_cache;
} engine_layer;

/* One sequence: its tokens so far (the penalties' history), whether its row of
 * s->seq_logits holds the logits of its last token, and how many tokens have been drawn for
 * it since it was emptied. */
typedef struct engine_seq {
    int32_t *tokens;
    uint32_t length;
    int has_logits;
    uint64_t draws;
} engine_seq;

/* The device sampler's penalized tokens at most (more in a window: the host samples), and
 * its parameters' words per row. */
#define ENGINE_DRAW_PENALTIES 256u
#define ENGINE_DRAW_STRIDE (MCL_SAMPLE_HEADER + 2u * ENGINE_DRAW_PENALTIES)

/* i32 counters of the decode attention per sequence (mcl_attention_decode: at least one a
 * query head), rounded up to 64 (256 bytes, a view's offset alignment on any device). */
#define ENGINE_COUNTER_STRIDE(s) (((s)->info.heads + 63u) / 64u * 64u)

/* The decode steps kept recorded: one per set of sequences decoded together. */
#define ENGINE_STEPS 8u
/* The most rows of a pass whose router runs with its routing (a decode step's, a short
 * prompt's; a longer prompt's router is a GEMM). */
#define ENGINE_ROUTER_ROWS 64u

/* A recorded decode step: `count` rows, row i one token of sequence seqs[i]. */
typedef struct engine_step {
    mcl_graph *graph;
    uint32_t count;
    uint32_t *seqs;              /* [sequences] */
    uint64_t used;               /* the clock at its last replay: the oldest goes first */
} engine_step;

/* MCL_SUCCESS while the model's context lives (model.c). */
mcl_status mcl_model_context_check(const mcl_model *model);

struct mcl_session {
    mcl_context *ctx;
    mcl_child child;               /* on the context's list: released with it */
    mcl_model *model;
    mcl_model_info info;
    uint32_t context_length, sequences, batch_tokens;
    uint32_t q_dim, kv_dim;      /* heads * head_dim, kv_heads * head_dim */
    mcl_dtype kv_type;           /* the cache's: f32, or f16 */
    mcl_tensor *embedding, *output_norm, *output;
    mcl_tensor *rope_table;      /* f32 [head_dim / 2, 2]: each pair's frequency (llama 3.1's
                                  * scaling applied where the model has it) */
    engine_layer *layers;
    /* Activations of up to rows = max(batch_tokens, sequences) rows. */
    uint32_t rows;
    mcl_tensor *ids;             /* i32 [rows + 4 x sequences]: a pass's tokens; a decode
                                  * step's count tokens, then their positions, the lengths
                                  * of their sequences, and the sequences; from rows +
                                  * 3 x sequences, the sequence of each row of a recorded
                                  * pass's logits */
    mcl_tensor *pos;             /* i32 [2 x rows]: a pass's positions, then its sequences */
    mcl_tensor *x, *h, *q, *k, *v, *att, *gate, *up;
    /* A mixture's, over the rows: router logits [rows, experts], the chosen experts and their
     * weights [rows, experts_used], the experts' gate, up [rows x used, expert_hidden] and down
     * [rows x used, dim]; the shared expert's gate logit [rows, 1] and its gate, up [rows,
     * shared_hidden]. NULL for a dense model. */
    mcl_tensor *moe_logits, *moe_ids, *moe_weights, *moe_gate, *moe_up, *moe_down;
    mcl_tensor *sh_z, *sh_gate, *sh_up;
    /* For passes of at most ENGINE_ROUTER_ROWS rows: the router's partial logits (with its
     * routing, mcl_moe_router) and the counts of the router and of the down products with
     * their weighted sum (mcl_matmul_experts_sum): rows x dim, zero between dispatches. */
    mcl_tensor *moe_part, *moe_counts;
    /* The expert cache's: slots per layer (0: none), device bytes of all layers' slots, and the
     * chosen experts' virtual ids [rows x used] (mcl_expert_residency). */
    uint32_t expert_slots;
    uint64_t expert_cache_bytes;
    mcl_tensor *moe_vids;
    mcl_tensor *last, *logits;   /* [sequences, dim], [sequences, vocab]: a pass's rows */
    mcl_tensor *seq_logits;      /* f32 [sequences, vocab]: each sequence's last logits */
    /* The device sampler's: parameters (ENGINE_DRAW_STRIDE words a row), the tokens
     * drawn. */
    mcl_tensor *draw_params, *draw_tokens;
    mcl_tensor *part_o, *part_ml; /* per sequence, the decode attention's slices */
    mcl_tensor *att_counters;    /* i32 [sequences x ENGINE_COUNTER_STRIDE]: their counts */
    mcl_tensor *normed;          /* f32 [sequences, dim]: a decode step's normed rows */
    mcl_tensor *act;             /* i32: their quantization for the integer-dot path */
    mcl_tensor *act2;            /* i32, as act: the fused gate, up and SwiGLU's output */
    mcl_tensor *warm_sink[3];    /* i32 [4] each: the cache warms' outputs (never read) */
    engine_step steps[ENGINE_STEPS];
    uint64_t clock;
    int eager;                   /* MOTIFCL_ENGINE_EAGER: decode steps recorded op by op */
    int split_glu;               /* MOTIFCL_ENGINE_SPLIT_GLU: gate, up and SwiGLU unfused */
    uint32_t split_moe;          /* MOTIFCL_ENGINE_SPLIT_MOE: 1 router and routing apart, 2
                                  * down products and weighted sum apart */
    int norm_fold;               /* MOTIFCL_ENGINE_NORM_FOLD: norms in their products (-1:
                                  * where the model's width is at most ENGINE_FOLD_MAX_DIM) */
    uint32_t warm;               /* MOTIFCL_ENGINE_WARM: which weights a step warms (step.c) */
    /* Called after each op a pass records, with the op's name (the benchmarks' per-op GPU
     * times: a timestamp each); NULL in use. */
    mcl_status (*mark)(void *user, const char *op);
    void *mark_user;
    engine_seq *seqs;
    float *sample_work;          /* 2 x vocab floats, and max(vocab, context) ids: the host
                                  * sampler's, and the penalties' window */
    int32_t *sample_ids;
    uint32_t *draw_rows;         /* [sequences x ENGINE_DRAW_STRIDE]: parameters staged */
    uint32_t draw_cap;           /* penalized tokens the device takes: ENGINE_DRAW_PENALTIES
                                  * (the tests lower it to reach the host's path) */
};

/* --- forward.c ----------------------------------------------------------------------------- */

/* One pass: `count` new tokens, token i of sequence seqs[i] at position pos[i] (a prompt: one
 * sequence, consecutive positions; a batch: distinct sequences, one token each). Records the
 * model over them; the logits of the rows `logit_rows` (count_logits of them, of distinct
 * sequences) land in their sequences' rows of s->seq_logits, and in out (count_logits x
 * vocab) where out is not NULL. Without out the work is left running (a download or the
 * sampler waits for it). */
mcl_status mcl_engine_forward(mcl_session *s, const uint32_t *seqs, const uint32_t *pos,
                              const int32_t *tokens, uint32_t count, const uint32_t *logit_rows,
                              uint32_t count_logits, float *out);

/* --- step.c -------------------------------------------------------------------------------- */

/* Destroy the recorded decode steps (before the tensors they use). */
void mcl_engine_steps_destroy(mcl_session *s);

/* Dispatches in the latest recorded decode step of `count` rows; 0 where none is kept (the
 * benchmarks' dispatches per token). */
uint32_t mcl_engine_step_dispatches(const mcl_session *s, uint32_t count);
/* That step's recording itself (NULL where none is kept): the benchmarks replay it alone. */
mcl_graph *mcl_engine_step_graph(const mcl_session *s, uint32_t count);

/* --- experts.c ----------------------------------------------------------------------------- */

/* The expert cache under `budget` bytes (0: none), once the model's weights are found: none
 * where the budget holds every expert, MCL_ERROR_INVALID_ARGUMENT where a layer's slots would
 * be fewer than the experts a token uses. */
mcl_status mcl_engine_experts_create(mcl_session *s, uint64_t budget);
/* Bytes of one slot in every layer: an expert's rows of the three stacks, all layers. */
uint64_t mcl_engine_expert_slot_bytes(const mcl_session *s);
/* Its tensors destroyed (pointers cleared). */
void mcl_engine_experts_release(mcl_session *s);
/* After the routing of a batch (ids, pairs of them): layer L's plan, vids, and its copies. */
mcl_status mcl_engine_experts_plan(mcl_session *s, const engine_layer *L, mcl_tensor *ids,
                                   uint32_t pairs, mcl_tensor *vids);
/* mcl_matmul_experts of the gate and up stacks, and of the down stack, over the cache and the
 * pool by the virtual ids. */
mcl_status mcl_engine_experts_gate_up(mcl_session *s, const engine_layer *L, mcl_tensor *h,
                                      mcl_tensor *vids, const mcl_experts_desc *d,
                                      mcl_tensor *gate, mcl_tensor *up);
/* The gate and up products and SwiGLU fused (mcl_matmul_experts_glu_q8) over the cache and
 * the pool into act_out, *fused 1; where either would not fuse, nothing recorded, *fused 0. */
mcl_status mcl_engine_experts_glu(mcl_session *s, const engine_layer *L, mcl_tensor *h,
                                  mcl_tensor *vids, const mcl_experts_desc *d, mcl_tensor *gate,
                                  mcl_tensor *act_out, int *fused);
mcl_status mcl_engine_experts_down(mcl_session *s, const engine_layer *L, mcl_tensor *x,
                                   mcl_tensor *vids, const mcl_experts_desc *d, mcl_tensor *y);

/* --- sampler.c ----------------------------------------------------------------------------- */

/* A token from `vocab` logits under desc, with `history` (the sequence's last tokens) for the
 * penalties and `draw` (a counter) with desc->seed for the random draw: what the device's
 * sampler (sample_f32.comp) chooses, in double precision. `work` holds 2 x vocab floats and
 * vocab ints of scratch. */
int32_t mcl_sample_logits(const float *logits, uint32_t vocab, const int32_t *history,
                          uint32_t history_length, const mcl_sampler_desc *desc, uint64_t draw,
                          float *work, int32_t *work_ids);

/* The key of the Gumbel variates of draw `draw` under `seed`. */
uint32_t mcl_sample_key(uint64_t seed, uint64_t draw);
/* The Gumbel variate of `token` under `key` (sample_f32.comp's gumbel, in double). */
double mcl_sample_gumbel(uint32_t key, uint32_t token);

/* The device sampler's parameters (MCL_SAMPLE_HEADER words, then the penalized tokens:
 * MCL_SAMPLE_HEADER + 2 x cap words in all) into row, for the logits in row `logits_row`;
 * scratch holds the history's window. 0 where the window holds more than `cap` distinct
 * tokens (the host then samples). */
int mcl_sample_params(const mcl_sampler_desc *desc, const int32_t *history,
                      uint32_t history_length, uint64_t draw, uint32_t logits_row,
                      uint32_t cap, int32_t *scratch, uint32_t *row);

#endif
