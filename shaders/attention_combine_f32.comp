#version 450
// attention_combine_f32: merge the key slices of attention_split_f32.comp. For each output
// element: m = max over slices of their max, then
//   out = sum(exp2(m_s - m) * o_s) / sum(exp2(m_s - m) * l_s)
// skipping slices that saw no visible key (l_s = 0); a row no slice saw gets zeros.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: part_o  [B, splits, Hkv, T * G, D] (readonly float[])
//   set 0 binding 1: part_ml [B, splits, Hkv, T * G, 2] (readonly float[])
//   set 0 binding 2: out [B, T, Hq, D] (writeonly float[])
//   push constants : see Push
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufPartO { float part_o[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufPartML { float part_ml[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufOut { float dst[]; };

layout(push_constant) uniform Push {
    uint n;         // B * T * Hq * D
    uint dim;       // D
    uint seq_q;     // T
    uint heads_q;   // Hq
    uint heads_kv;  // Hkv
    uint group;     // G
    uint splits;
} pc;

void main() {
    const uint stride = grid_stride();
    const uint rows = pc.seq_q * pc.group;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const uint d = i % pc.dim;
        uint rest = i / pc.dim;
        const uint hq = rest % pc.heads_q;
        rest /= pc.heads_q;
        const uint t = rest % pc.seq_q;
        const uint b = rest / pc.seq_q;
        const uint hkv = hq / pc.group;
        const uint rho = t * pc.group + (hq - hkv * pc.group);

        float m = -3.0e38;
        for (uint s = 0u; s < pc.splits; s++) {
            const uint at = ((b * pc.splits + s) * pc.heads_kv + hkv) * rows + rho;
            if (part_ml[at * 2u + 1u] > 0.0) {
                m = max(m, part_ml[at * 2u]);
            }
        }
        float o = 0.0;
        float l = 0.0;
        for (uint s = 0u; s < pc.splits; s++) {
            const uint at = ((b * pc.splits + s) * pc.heads_kv + hkv) * rows + rho;
            const float ls = part_ml[at * 2u + 1u];
            if (ls > 0.0) {
                const float w = exp2(part_ml[at * 2u] - m);
                l += w * ls;
                o += w * part_o[at * pc.dim + d];
            }
        }
        dst[i] = l > 0.0 ? o / l : 0.0;
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
