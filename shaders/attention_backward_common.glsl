// attention_backward_common.glsl: what attention_backward_dq_f32.comp and
// attention_backward_dkdv_f32.comp share: the push constants, q / k / v, the index arithmetic
// of attention_tile.glsl and the causal limit.
//
// Rows are numbered as in the forward: for one (batch, kv head), rho = t * G + g over the T
// query positions and the G query heads that share the kv head. The statistics scratch holds
// four floats per row at ((b * Hkv + hkv) * T * G + rho) * 4: the row's score max (log2
// domain; NEG when it sees no key), 1 / its sum of exp2(score - max) (0 when it sees no key),
// Di = dout . out, and a zero.
//
// Head vectors sit in shared memory as vec4s (D4 = ceil(D / 4), zero-padded), each row padded
// by one more vec4 (STRIDE) so that a loop reading one column across rows does not keep
// hitting the same banks.
//
// Specialization constants (constant 0 is the workgroup size WG):
//   1: D   head dimension (exact)     2: BQ  query rows per tile     3: BK  keys per tile
// Nothing here uses subgroup operations: every reduction is a shared-memory tree, correct for
// any subgroup size.
#ifndef ATTENTION_BACKWARD_COMMON_GLSL
#define ATTENTION_BACKWARD_COMMON_GLSL

#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint D = 64;
layout(constant_id = 2) const uint BQ = 16;
layout(constant_id = 3) const uint BK = 16;

const uint WG = gl_WorkGroupSize.x;
const uint D4 = (D + 3u) / 4u;
const uint STRIDE = D4 + 1u;

// A masked score, and the max of a row that has seen no key yet. Finite, so that no step
// depends on how a driver treats infinities.
const float NEG = -3.0e38;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { float v[]; };

layout(push_constant) uniform Push {
    uint seq_q;        // T
    uint seq_kv;       // S: the k/v tensors' sequence dimension (their stride)
    uint kv_len;       // keys in use, <= S
    uint heads_q;      // Hq
    uint heads_kv;     // Hkv
    uint group;        // G = Hq / Hkv
    uint rows;         // T * G: query rows per (batch, kv head)
    uint causal;       // row t sees keys < t + kv_len - T + 1
    float scale_log2;  // scale * log2(e): scores in the log2 domain, so exp2 replaces exp
    float scale;
} pc;

#include "attention_index.glsl"

// Index of row rho's statistics in the scratch.
uint stats_at(uint b, uint hkv, uint rho) {
    return ((b * pc.heads_kv + hkv) * pc.rows + rho) * 4u;
}

#endif
