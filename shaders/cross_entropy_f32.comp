#version 450
// cross_entropy_f32: per row r of logits [N, V], lse[r] = logsumexp(logits[r]) and, when the
// target lies in [0, V), loss[r] = lse[r] - logits[r, target[r]] with valid[r] = 1; else 0, 0.
// mean_reduce_f32.comp then averages the valid rows, so no float atomics are needed and the
// result does not depend on workgroup timing.
//
// One workgroup per row (grid-stride over rows past 65535): each invocation keeps an online
// (max, sum of exp) over its strided columns, one pass over the row, and a shared-memory tree
// merges the pairs (no subgroup operations: correct for any subgroup size).
//
//   workgroup size : specialization constant 0, a power of 2
//   set 0 binding 0: logits  (readonly  float[], [N, V])
//   set 0 binding 1: targets (readonly  int[],   [N])
//   set 0 binding 2: rows    (writeonly float[], [2, N]: loss, then valid as 1.0 / 0.0)
//   set 0 binding 3: lse     (writeonly float[], [N]); written only when has_lse != 0 (the
//                    host binds some other tensor here when the caller wants no lse)
//   push constants : { uint rows; uint vocab; uint has_lse; }
layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer BufLogits { float logits[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufTargets { int targets[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufRows { float row_out[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufLse { float lse_out[]; };

layout(push_constant) uniform Push { uint rows; uint vocab; uint has_lse; } pc;

const uint WG = gl_WorkGroupSize.x;
// Start of a running max: finite, so that no step depends on how a driver handles -inf.
const float NEG = -3.0e38;

shared float red_m[WG];
shared float red_s[WG];

// (m1, s1) + (m2, s2) as one (max, sum of exp(x - max)). A side with s = 0 saw no element.
void merge(inout float m1, inout float s1, float m2, float s2) {
    if (s2 == 0.0) {
        return;
    }
    if (s1 == 0.0) {
        m1 = m2;
        s1 = s2;
        return;
    }
    const float m = max(m1, m2);
    s1 = s1 * exp(m1 - m) + s2 * exp(m2 - m);
    m1 = m;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    // The loop is uniform in the workgroup: row depends on the workgroup id only.
    for (uint row = gl_WorkGroupID.x; row < pc.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * pc.vocab;
        float m = NEG;
        float s = 0.0;
        for (uint c = tid; c < pc.vocab; c += WG) {
            const float x = logits[base + c];
            if (x > m) {
                s = (s == 0.0 ? 0.0 : s * exp(m - x)) + 1.0;
                m = x;
            } else {
                s += exp(x - m);
            }
        }
        red_m[tid] = m;
        red_s[tid] = s;
        barrier();
        for (uint width = WG / 2u; width > 0u; width /= 2u) {
            if (tid < width) {
                float m1 = red_m[tid];
                float s1 = red_s[tid];
                merge(m1, s1, red_m[tid + width], red_s[tid + width]);
                red_m[tid] = m1;
                red_s[tid] = s1;
            }
            barrier();
        }
        if (tid == 0u) {
            const float lse = red_m[0] + log(red_s[0]);
            const int target = targets[row];
            const bool valid = target >= 0 && uint(target) < pc.vocab;
            float loss = 0.0;
            if (valid) {
                loss = lse - logits[base + uint(target)];
            }
            row_out[row] = loss;
            row_out[pc.rows + row] = valid ? 1.0 : 0.0;
            if (pc.has_lse != 0u) {
                lse_out[row] = lse;
            }
        }
        // red_m / red_s are rewritten by the next row.
        barrier();
    }
}
