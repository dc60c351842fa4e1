#version 450
// softmax_f32: y = softmax(scale * x) over each row of D elements, optionally with a causal
// mask (src/ops/rows.c, mcl_softmax).
//
// Interface
//   constant 0     : workgroup size (local_size_x_id = 0), at most 256
//   constant 1     : MCL_USE_SUBGROUP, the reduction path (reduce.glsl)
//   constant 2     : VEC4: D % 4 == 0, so every row starts on a 16-byte boundary
//   set 0 binding 0: x (readonly float[] / vec4[])
//   set 0 binding 1: y (writeonly float[] / vec4[]); may be the same buffer as x
//   push constants : { uint d; uint rows; uint tq; uint causal; float sign; float c; }
//                    sign * c = scale * log2(e), sign = +-1, c >= 0
//
// One workgroup per row, rows grid-strided over the dispatch. Row r is query r % tq; with
// causal, its first len = clamp(r % tq + 1 + d - tq, 0, d) keys are visible and the rest
// are written as 0. A row with no visible key (only when tq > d), or whose visible values are
// all -inf, is all zeros, never NaN.
//
// x is read twice: one pass keeps a running max and a running sum rescaled to it (online
// softmax), the second writes. The row is 16 KiB at d = 4096, so the second read mostly hits
// the cache. The max is taken over v = sign * x (exact), and exponents are (v - max) * c:
// the difference is exact or nearly so for the values near the max that dominate the sum,
// where x * c - max would round x * c at the magnitude of x (a relative error of 1e-5 in the
// result for |x| ~ 200).

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "reduce.glsl"

layout(constant_id = 2) const bool VEC4 = false;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY4 { vec4 y4[]; };

layout(push_constant) uniform Push {
    uint d;
    uint rows;
    uint tq;
    uint causal;
    float sign;
    float c;
} pc;

const float NEG_INF = -1.0 / 0.0;

// Keys visible to row `row`, written without intermediate sums that could wrap in uint.
uint visible(uint row) {
    if (pc.causal == 0u) {
        return pc.d;
    }
    const uint q = row % pc.tq + 1u;
    if (q >= pc.tq) {
        return pc.d;
    }
    const uint hidden = pc.tq - q;
    return hidden >= pc.d ? 0u : pc.d - hidden;
}

// Online softmax state of one invocation: the largest v seen and the sum of exp2((v - m) c).
float m_run;
float s_run;

void accumulate(float v) {
    if (v > m_run) {
        s_run = m_run > NEG_INF ? s_run * exp2((m_run - v) * pc.c) : 0.0;
        m_run = v;
    }
    // m_run is -inf only while every value so far was -inf (contributing nothing), and
    // exp2(-inf - -inf) would be NaN.
    if (m_run > NEG_INF) {
        s_run += exp2((v - m_run) * pc.c);
    }
}

void accumulate4(vec4 v) {
    const float mv = max(max(v.x, v.y), max(v.z, v.w));
    if (mv > m_run) {
        s_run = m_run > NEG_INF ? s_run * exp2((m_run - mv) * pc.c) : 0.0;
        m_run = mv;
    }
    if (m_run > NEG_INF) {
        const vec4 e = exp2((v - m_run) * pc.c);
        s_run += (e.x + e.y) + (e.z + e.w);
    }
}

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    const float sg = pc.sign;
    const float c = pc.c;

    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        uint len = visible(row);
        const uint base = row * pc.d;

        m_run = NEG_INF;
        s_run = 0.0;
        if (VEC4) {
            const uint base4 = base / 4u;
            const uint full4 = len / 4u;
            for (uint k = lid; k < full4; k += wg) {
                accumulate4(x4[base4 + k] * sg);
            }
            // A causal boundary inside a vec4: its visible leftovers, at most 3.
            for (uint j = full4 * 4u + lid; j < len; j += wg) {
                accumulate(x[base + j] * sg);
            }
        } else {
            for (uint j = lid; j < len; j += wg) {
                accumulate(x[base + j] * sg);
            }
        }

        const float m = mcl_wg_max(m_run);
        const float s = mcl_wg_sum(m_run > NEG_INF ? s_run * exp2((m_run - m) * c) : 0.0);
        const float inv = s > 0.0 ? 1.0 / s : 0.0;
        // Every visible value was -inf (an additive mask): no max to subtract, exp2(-inf + inf)
        // would be NaN, and the row is written as zeros like one with nothing visible.
        if (m == NEG_INF) {
            len = 0u;
        }

        if (VEC4) {
            const uint base4 = base / 4u;
            const uint d4 = pc.d / 4u;
            for (uint k = lid; k < d4; k += wg) {
                const uint j0 = 4u * k;
                vec4 o = vec4(0.0);
                if (j0 + 4u <= len) {
                    o = exp2((x4[base4 + k] * sg - m) * c) * inv;
                } else if (j0 < len) {
                    const vec4 e = exp2((x4[base4 + k] * sg - m) * c) * inv;
                    o = mix(vec4(0.0), e, lessThan(uvec4(j0) + uvec4(0u, 1u, 2u, 3u), uvec4(len)));
                }
                y4[base4 + k] = o;
            }
        } else {
            for (uint j = lid; j < pc.d; j += wg) {
                y[base + j] = j < len ? exp2((x[base + j] * sg - m) * c) * inv : 0.0;
            }
        }
    }
}
