#version 450
// gemm_q_dot: C = A W^T (+ bias) with A [M, K] already quantized to 8 bits per block of 32
// (quantize_q8_1.comp) and W Q8_0 or Q4_0 [N, K]: the integer-dot path for more rows than
// the GEMV takes.
//
// A workgroup of 256 invocations computes a 128 x 64 tile of C (BM rows of A, BN rows of W),
// each invocation 8 x 4 outputs: rows ty + 16i, columns tx + 16j (tx = id % 16, ty = id / 16),
// so that neighbouring invocations write neighbouring columns. K advances KB blocks (32 values
// each) a stage. A stage's codes of BM rows of A and BN rows of W go to shared memory as
// packed words, 8 a block, read back as uvec4s: an invocation's A rows are the same for the 16
// invocations of a half-subgroup (one address, broadcast), and its W rows are padded to 12
// words, so that the 8 invocations of a quarter-subgroup reading 8 neighbouring rows hit 8
// distinct 16-byte bank groups. Each output then takes 8 packed dot products per block and
// one scaled float update (d_a d_w times the integer sum, Q4_0's 8 * sum(a codes) subtracted
// first). The next stage's loads are issued into registers before the current stage is
// computed, so that they are in flight during the dot products.
//
// Loading a stage: invocation id takes the 2 uvec4s of codes, the scale and the code sum of
// block id % 2 of row id / 2 of A, and half id % 2 of block (id / 2) % 2 of row id / 4 of W
// (Q8_0: code words 4h .. 4h + 3 of the block body; Q4_0: body words 2h, 2h + 1, whose low
// nibbles are code words 2h, 2h + 1 and high ones 4 + 2h, 5 + 2h), with its scale where h = 0.
// Rows past M and blocks past K are zero; rows past N repeat row N - 1 and are not written.
//
//   specialization constants: 0 workgroup size (256), 1 FORMAT (FMT_Q8_0 or FMT_Q4_0)
//   set 0: 0 quantized A (qdot.glsl's layout), 1 W bodies (quant.glsl's device layout), 2 W's
//     d values, 3 bias [N] (any buffer when unused), 4 C [M, N]
//   push constants: M, N, K, has_bias, ldc, c0, dlo: c[m, c0 + n] at c[m * ldc + c0 + n],
//     bias[c0 + n]; block b's d is the (dlo + b)th half of binding 2
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
const uint PB = 16u;  // quant.glsl's pieces are not used here

layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 0) restrict readonly buffer BufAct4 { uvec4 act4[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) restrict readonly buffer BufD { uint wd[]; };
layout(std430, set = 0, binding = 3) restrict readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 4) restrict writeonly buffer BufC { float c[]; };

layout(push_constant) uniform Push {
    uint M, N, K;
    uint has_bias;
    uint ldc, c0;  // c's row stride and the column of W's row 0 (a W split in row ranges)
    uint dlo;      // the half of binding 2 that is block 0's d
} pc;

#include "quant.glsl"
#include "qdot.glsl"

const uint BM = 128u, BN = 64u;  // rows of A, rows of W per tile
const uint TM = 8u, TN = 4u;     // outputs per invocation: rows, columns
const uint KB = 2u;              // blocks of 32 per stage
const uint WS = 3u;              // uvec4s per row of the W tile: 2, padded
shared uvec4 a_codes[KB * BM * 2u];
shared float a_scale[KB * BM];
shared int a_sum[KB * BM];
shared uvec4 w_codes[KB * BN * WS];
shared float w_scale[KB * BN];

// What one invocation loads of a stage (see the header).
struct Stage {
    uvec4 a0, a1;
    float as;
    int asum;
    uint w[4];
    float ws;
};

Stage load_stage(uint b0, uint m0, uint wrow, uint nb) {
    const uint tid = gl_LocalInvocationID.x;
    Stage s;
    // A: block b0 + tid % 2 of row m0 + tid / 2.
    const uint ab = b0 + tid % 2u;
    const bool a_in = m0 + tid / 2u < pc.M && ab < nb;
    const uint act_blocks = pc.M * nb;
    const uint g = a_in ? (m0 + tid / 2u) * nb + ab : 0u;
    s.a0 = a_in ? act4[2u * g] : uvec4(0u);
    s.a1 = a_in ? act4[2u * g + 1u] : uvec4(0u);
    s.as = a_in ? uintBitsToFloat(act[8u * act_blocks + g]) : 0.0;
    s.asum = a_in ? int(act[9u * act_blocks + g]) : 0;
    // W: half h = tid % 2 of block b0 + (tid / 2) % 2 of row wrow (already clamped to N - 1).
    const uint wb = b0 + (tid / 2u) % 2u;
    const uint h = tid % 2u;
    const bool w_in = wb < nb;
    const uint blk = wrow * nb + (w_in ? wb : 0u);
    if (FORMAT == FMT_Q8_0) {
        const uvec4 v = wq4[2u * blk + h];
        s.w = uint[4](v.x, v.y, v.z, v.w);
    } else {
        const uvec2 v = wq2[2u * blk + h];
        s.w = uint[4](v.x, v.y, 0u, 0u);
    }
    if (!w_in) {
        s.w = uint[4](0u, 0u, 0u, 0u);
    }
    s.ws = h == 0u && w_in ? quant_d(pc.dlo + blk) : 0.0;
    return s;
}

void store_stage(Stage s) {
    const uint tid = gl_LocalInvocationID.x;
    const uint ai = (tid % 2u) * BM + tid / 2u;
    a_codes[2u * ai] = s.a0;
    a_codes[2u * ai + 1u] = s.a1;
    a_scale[ai] = s.as;
    a_sum[ai] = s.asum;
    const uint wi = ((tid / 2u) % 2u) * BN + tid / 4u;
    const uint h = tid % 2u;
    if (FORMAT == FMT_Q8_0) {
        w_codes[WS * wi + h] = uvec4(s.w[0], s.w[1], s.w[2], s.w[3]);
    } else {
        const uvec2 lo = uvec2(s.w[0], s.w[1]) & 0x0F0F0F0Fu;
        const uvec2 hi = (uvec2(s.w[0], s.w[1]) >> 4) & 0x0F0F0F0Fu;
        if (h == 0u) {
            w_codes[WS * wi].xy = lo;
            w_codes[WS * wi + 1u].xy = hi;
        } else {
            w_codes[WS * wi].zw = lo;
            w_codes[WS * wi + 1u].zw = hi;
        }
    }
    if (h == 0u) {
        w_scale[wi] = s.ws;
    }
}

int dot8(uvec4 a0, uvec4 a1, uvec4 w0, uvec4 w1, int acc) {
    acc += sdot4x8(a0.x, w0.x);
    acc += sdot4x8(a0.y, w0.y);
    acc += sdot4x8(a0.z, w0.z);
    acc += sdot4x8(a0.w, w0.w);
    acc += sdot4x8(a1.x, w1.x);
    acc += sdot4x8(a1.y, w1.y);
    acc += sdot4x8(a1.z, w1.z);
    acc += sdot4x8(a1.w, w1.w);
    return acc;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % 16u, ty = tid / 16u;
    const uint m0 = gl_WorkGroupID.y * BM;
    const uint n0 = gl_WorkGroupID.x * BN;
    const uint nb = pc.K / 32u;
    const uint wrow = min(n0 + tid / 4u, pc.N - 1u);

    float acc[TM][TN];
    [[unroll]] for (uint i = 0u; i < TM; i++) {
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            acc[i][j] = 0.0;
        }
    }

    Stage next = load_stage(0u, m0, wrow, nb);
    for (uint b0 = 0u; b0 < nb; b0 += KB) {
        store_stage(next);
        barrier();
        if (b0 + KB < nb) {
            next = load_stage(b0 + KB, m0, wrow, nb);
        }
        [[unroll]] for (uint kb = 0u; kb < KB; kb++) {
            uvec4 w0[TN], w1[TN];
            float dw[TN];
            [[unroll]] for (uint j = 0u; j < TN; j++) {
                const uint wi = kb * BN + tx + 16u * j;
                w0[j] = w_codes[WS * wi];
                w1[j] = w_codes[WS * wi + 1u];
                dw[j] = w_scale[wi];
            }
            [[unroll]] for (uint i = 0u; i < TM; i++) {
                const uint ai = kb * BM + ty + 16u * i;
                const uvec4 a0 = a_codes[2u * ai], a1 = a_codes[2u * ai + 1u];
                const float da = a_scale[ai];
                const int off = FORMAT == FMT_Q4_0 ? -8 * a_sum[ai] : 0;
                [[unroll]] for (uint j = 0u; j < TN; j++) {
                    const int isum = dot8(a0, a1, w0[j], w1[j], off);
                    acc[i][j] = fma(da * dw[j], float(isum), acc[i][j]);
                }
            }
        }
        barrier();
    }

    [[unroll]] for (uint i = 0u; i < TM; i++) {
        const uint m = m0 + ty + 16u * i;
        [[unroll]] for (uint j = 0u; j < TN; j++) {
            const uint n = n0 + tx + 16u * j;
            if (m < pc.M && n < pc.N) {
                c[m * pc.ldc + pc.c0 + n] =
                    acc[i][j] + (pc.has_bias != 0u ? bias[pc.c0 + n] : 0.0);
            }
        }
    }
}
