#version 450
// adamw_fused_f32: one AdamW step over a flat parameter buffer whose hyper-parameters are read
// from a device tensor (so that a captured training step follows a learning-rate schedule),
// with gradient clipping folded in: the gradient is scaled by min(1, max_norm / norm) on the
// way in (the gradient buffer itself is left as it is). Elements before `decay_end` get the
// decoupled weight decay, the others none (norm weights). Per element, as adamw_f32:
//   g  = g * clip
//   p -= lr * wd * p
//   m  = b1 * m + (1 - b1) * g
//   v  = b2 * v + (1 - b2) * g * g
//   p -= lr * (m / bc1) / (sqrt(v / bc2) + eps)
// Each element is read and written by its own invocation only.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: g (readonly float[]); 1: hyper (readonly float[]: lr, beta1, beta2, eps,
//     weight_decay, bc1, bc2, max_norm; max_norm <= 0 or inf: no clipping); 2: norm
//     (readonly float[], element 0: the gradients' L2 norm); bindings 3..5: p, m, v
//   push constants : n, decay_end
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufG { float g[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufH { float hyper[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufN { float norm[]; };
layout(std430, set = 0, binding = 3) buffer BufP { float p[]; };
layout(std430, set = 0, binding = 4) buffer BufM { float m[]; };
layout(std430, set = 0, binding = 5) buffer BufV { float v[]; };

layout(push_constant) uniform Push {
    uint n;
    uint decay_end;
} pc;

void main() {
    const float lr = hyper[0], beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3];
    const float wd = hyper[4], bc1 = hyper[5], bc2 = hyper[6], max_norm = hyper[7];
    const float total = norm[0];
    // As clip_scale_f32: a NaN norm compares false and leaves the gradient unscaled.
    const float clip = (max_norm > 0.0 && total > max_norm) ? max_norm / total : 1.0;
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < pc.n;) {
        const float gi = g[i] * clip;
        float pi = p[i];
        if (i < pc.decay_end) {
            pi -= lr * wd * pi;
        }
        const float mi = beta1 * m[i] + (1.0 - beta1) * gi;
        const float vi = beta2 * v[i] + (1.0 - beta2) * gi * gi;
        pi -= lr * (mi / bc1) / (sqrt(vi / bc2) + eps);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
        if (!grid_next(i, pc.n, stride)) {
            break;
        }
    }
}
