#version 450
// counter_rows_f32: pass 2 of the counter layer's update (MEMORY_NATIVE.md section 1), one
// invocation per row o: the row's sums from the partials of counter_stats_f32 (+0.0 plus tile
// 0, 1, ... in order), then
//   gsq = sum G^2 / in;  v = beta * v + (1 - beta) * gsq;  D = max(sqrt(v), eps)
//   gs  = sum G t / sqrt(in);  s' = clamp(s - lr_scale * gs, 1e-5, 10)
// and the two factors the per-weight step multiplies by:
//   ratio = s / s'   and   k = (-lr / D) * (C / s')      (val = c * ratio + G * k)
// s and v are written in place (s = s'); the factors go to rowfac. Every operation is rounded
// on its own (precise). tests/ref/ref_counter.c repeats this sequence.
//
//   workgroup size : specialization constant 0
//   HYPER_BUF      : specialization constant 1: 0, lr, lr_scale, beta and eps from the push
//                    constants; 1, from the hyper buffer (a recorded step that replays reads
//                    what the host wrote there before each replay)
//   set 0 binding 0: partials (readonly float[], [out, tiles, 2]); binding 1: hyper (readonly
//   float[]: lr, lr_scale, beta, eps; bound but unread with HYPER_BUF 0); bindings 2, 3: s, v
//   (float[out], read and written); binding 4: rowfac (float[], [out, 2])
//   push constants : see Push
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 64) in;
layout(constant_id = 1) const uint HYPER_BUF = 0u;

#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufPartial { float partial[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufHyper { float hyper[]; };
layout(std430, set = 0, binding = 2) buffer BufS { float s[]; };
layout(std430, set = 0, binding = 3) buffer BufV { float v[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufRowfac { float rowfac[]; };

layout(push_constant) uniform Push {
    uint out_dim, in_dim, tiles, C;
    float lr, lr_scale, beta, eps;
} pc;

void main() {
    const uint stride = grid_stride();
    const float lr = HYPER_BUF != 0u ? hyper[0] : pc.lr;
    const float lr_scale = HYPER_BUF != 0u ? hyper[1] : pc.lr_scale;
    const float beta = HYPER_BUF != 0u ? hyper[2] : pc.beta;
    const float eps = HYPER_BUF != 0u ? hyper[3] : pc.eps;
    for (uint o = gl_GlobalInvocationID.x; o < pc.out_dim;) {
        precise float sq = 0.0;
        precise float gt = 0.0;
        for (uint b = 0u; b < pc.tiles; b++) {
            sq = sq + partial[(o * pc.tiles + b) * 2u];
            gt = gt + partial[(o * pc.tiles + b) * 2u + 1u];
        }
        const float n_in = float(pc.in_dim);
        precise float gsq = sq / n_in;
        precise float vo = beta * v[o] + (1.0 - beta) * gsq;
        precise float d = max(sqrt(vo), eps);
        precise float gs = gt / sqrt(n_in);
        const float so = s[o];
        precise float sn = min(max(so - lr_scale * gs, 1e-5), 10.0);
        precise float ratio = so / sn;
        precise float k = (-lr / d) * (float(pc.C) / sn);
        v[o] = vo;
        s[o] = sn;
        rowfac[2u * o] = ratio;
        rowfac[2u * o + 1u] = k;
        if (!grid_next(o, pc.out_dim, stride)) {
            break;
        }
    }
}
