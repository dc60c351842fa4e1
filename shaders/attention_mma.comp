#version 450
// attention_mma: attention_f32.comp's result on cooperative matrices (VK_NV_cooperative_matrix):
// out = softmax(scale q k^T [+ causal mask]) v for f32 q, k, v, with the products on 16 x 16
// f16 matrices accumulated in f32. The engine's prompt pass takes it where the device has
// them; mcl_attention keeps the f32 kernels.
//
// A workgroup of 4 subgroups of 32 owns BQ = 64 query rows of one (batch, kv head), 16 a
// subgroup; rows are (t, g) pairs as in attention_tile.glsl, so a key tile serves the group's
// query heads. Two passes over the key tiles of BKEY = 32 keys, so that the output never needs
// rescaling (the layout of an accumulator among the lanes is the implementation's):
//   1. S = Q K^T for each tile, each row's max m and sum l of exp2(S - m) (online);
//   2. S again, P = exp2(S - m) (f16, in [0, 1]), O += P V; at the end O / l.
// Q is scaled by scale * log2(e) before its rounding to f16 (exp2 replaces exp), K and V are
// rounded to f16 as each tile is stored. Lane r < 16 of a subgroup keeps row r's m and l.
// A row that sees no key gets zeros.
//
// Rounding: q (scaled), k, v and p are rounded to f16 (relative error 2^-11 each), sums in
// f32; the result differs from attention_f32's by about 1e-3 relative.
//
//   specialization constants: 0 workgroup size (128), 1 D (a multiple of 16, at most 128)
//   set 0 binding 0..2: q [B, T, Hq, D], k, v [B, S, Hkv, D] (f32); 3: out [B, T, Hq, D]
//   push constants: attention_tile.glsl's (seq_q .. scale_log2 used)
//   dispatch: (ceil(T * G / 64), Hkv, B)
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D = 64;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { float q[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufQ4 { vec4 q4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { float k[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK4 { vec4 k4[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { float v[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV4 { vec4 v4[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufOut { float dst[]; };

// attention_tile.glsl's push constants, field for field.
layout(push_constant) uniform Push {
    uint seq_q, seq_kv, kv_len, heads_q, heads_kv, group, rows, causal;
    float scale_log2;
    uint keys_per_split, splits, len_slot, seq_slot, act_blocks, act_first, pos_slot;
    uint split_half;
} pc;

#include "attention_index.glsl"

const uint THREADS = 128u;
const uint BQ = 64u;
const uint BKEY = 32u;
const uint DROW = (D + 8u) / 4u;     // a row of Q, K or V: D halves and 8 of padding, uvec2s
const uint PROW = (BKEY + 8u) / 4u;  // a row of P
const uint DF = D / 16u;             // 16-wide column blocks of a head vector
const float NEG = -3.0e38;

shared uvec2 Qs[BQ * DROW];
shared uvec2 Ks[BKEY * DROW];
shared uvec2 Vs[BKEY * DROW];
shared float Ss[BQ * BKEY];  // a subgroup's 16 x 32 scores at sg * 512
shared uvec2 Ps[BQ * PROW];
shared float row_l[BQ];

uvec2 pack4(vec4 x) {
    return uvec2(packFloat2x16(f16vec2(x.xy)), packFloat2x16(f16vec2(x.zw)));
}

// Key tile kt's K (and with both, V) into shared memory as f16; keys past stop are zeros.
void load_tile(uint b, uint hkv, uint kt, uint stop, bool both) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint e = tid; e < BKEY * (D / 4u); e += THREADS) {
        const uint c = e / (D / 4u), d4 = e % (D / 4u);
        const bool in_range = kt + c < stop;
        const uint at = kv_base(b, hkv, kt + c) / 4u + d4;
        Ks[c * DROW + d4] = pack4(in_range ? k4[at] : vec4(0.0));
        if (both) {
            Vs[c * DROW + d4] = pack4(in_range ? v4[at] : vec4(0.0));
        }
    }
}

// The subgroup's 16 x 32 scores of the tile in Ks into its part of Ss.
void scores(uint sg) {
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> s0 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> s1 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    [[unroll]] for (uint j = 0u; j < DF; j++) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fq, f0, f1;
        coopMatLoadNV(fq, Qs, sg * 16u * DROW + j * 4u, DROW, false);
        // K's tile is [key][d]: as the D x keys operand it is column-major.
        coopMatLoadNV(f0, Ks, j * 4u, DROW, true);
        coopMatLoadNV(f1, Ks, 16u * DROW + j * 4u, DROW, true);
        s0 = coopMatMulAddNV(fq, f0, s0);
        s1 = coopMatMulAddNV(fq, f1, s1);
    }
    coopMatStoreNV(s0, Ss, sg * 512u, BKEY, false);
    coopMatStoreNV(s1, Ss, sg * 512u + 16u, BKEY, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint sg = tid / 32u, lane = tid % 32u;
    const uint row0 = gl_WorkGroupID.x * BQ;
    const uint hkv = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;

    // Q, scaled, as f16.
    [[unroll]] for (uint e = tid; e < BQ * (D / 4u); e += THREADS) {
        const uint r = e / (D / 4u), d4 = e % (D / 4u);
        const uint rho = row0 + r;
        const vec4 x = rho < pc.rows ? q4[q_base(b, hkv, rho) / 4u + d4] * pc.scale_log2
                                     : vec4(0.0);
        Qs[r * DROW + d4] = pack4(x);
    }
    // Lane r < 16: row sg * 16 + r's visible keys, max and sum.
    const uint my_rho = row0 + sg * 16u + lane;
    const uint my_limit = lane < 16u && my_rho < pc.rows ? visible_keys(my_rho) : 0u;
    float m = NEG, l = 0.0;
    // The last row of the tile sees the most keys.
    const uint last_row = min(row0 + BQ, pc.rows) - 1u;
    const uint key_stop = min(pc.kv_len, visible_keys(last_row));

    // Pass 1: each row's max and sum.
    for (uint kt = 0u; kt < key_stop; kt += BKEY) {
        load_tile(b, hkv, kt, key_stop, false);
        barrier();
        scores(sg);
        if (lane < 16u) {
            float mx = m;
            [[unroll]] for (uint c = 0u; c < BKEY; c++) {
                if (kt + c < my_limit) {
                    mx = max(mx, Ss[sg * 512u + lane * BKEY + c]);
                }
            }
            float sum = 0.0;
            [[unroll]] for (uint c = 0u; c < BKEY; c++) {
                if (kt + c < my_limit) {
                    sum += exp2(Ss[sg * 512u + lane * BKEY + c] - mx);
                }
            }
            l = l * exp2(m - mx) + sum;
            m = mx;
        }
        barrier();
    }

    // Pass 2: O = P V, unnormalised.
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[DF];
    [[unroll]] for (uint j = 0u; j < DF; j++) {
        acc[j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }
    for (uint kt = 0u; kt < key_stop; kt += BKEY) {
        load_tile(b, hkv, kt, key_stop, true);
        barrier();
        scores(sg);
        if (lane < 16u) {
            [[unroll]] for (uint c = 0u; c < BKEY; c += 4u) {
                vec4 p;
                [[unroll]] for (uint i = 0u; i < 4u; i++) {
                    const float s = Ss[sg * 512u + lane * BKEY + c + i];
                    p[i] = kt + c + i < my_limit ? exp2(s - m) : 0.0;
                }
                Ps[(sg * 16u + lane) * PROW + c / 4u] = pack4(p);
            }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint h = 0u; h < BKEY / 16u; h++) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fp;
            coopMatLoadNV(fp, Ps, sg * 16u * PROW + h * 4u, PROW, false);
            [[unroll]] for (uint j = 0u; j < DF; j++) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fv;
                coopMatLoadNV(fv, Vs, h * 16u * DROW + j * 4u, DROW, false);
                acc[j] = coopMatMulAddNV(fp, fv, acc[j]);
            }
        }
        barrier();
    }

    // Epilogue: each 16 x 16 block through the subgroup's part of Ss; lane l writes row
    // l / 2, columns 8 (l % 2) .. + 7, divided by the row's sum.
    if (lane < 16u) {
        row_l[sg * 16u + lane] = l;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    const uint r = lane / 2u, cc = (lane % 2u) * 8u;
    const uint rho = row0 + sg * 16u + r;
    const float lr = row_l[sg * 16u + r];
    const float inv = lr > 0.0 ? 1.0 / lr : 0.0;
    [[unroll]] for (uint j = 0u; j < DF; j++) {
        coopMatStoreNV(acc[j], Ss, sg * 512u, 16u, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        if (rho < pc.rows) {
            const uint base = q_base(b, hkv, rho) + j * 16u + cc;
            [[unroll]] for (uint i = 0u; i < 8u; i++) {
                dst[base + i] = Ss[sg * 512u + r * 16u + cc + i] * inv;
            }
        }
        subgroupBarrier();
    }
}
