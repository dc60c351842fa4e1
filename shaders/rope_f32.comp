#version 450
// rope_f32: rotary position embedding over x [B, T, H, Dh], one invocation per pair.
//
// The angle is computed so that every conformant driver gets the same bits up to the final
// sin/cos (which the host-side reference mirrors, see tests/ref/ref_layout.c):
//   f_i = c0 * prod(r[b] for each set bit b of i)     turns per position, float products only
//   t   = float(pos) * f_i                             pos < 2^24, exact as a float
//   u   = t - roundEven(t)                             exact, in [-0.5, 0.5]
//   a   = u * 2pi                                      in [-pi, pi]
// with c0 = 1 / (2 pi) and r[b] = theta_base^(-2 * 2^b / Dh), rounded to float on the host.
// Float add, subtract and multiply are correctly rounded in Vulkan, so f_i and u are the same
// on every device; pow/exp2 are not (up to 3 + 2|x| ulp), nor is sin/cos of a large argument
// (Vulkan bounds sin/cos only on [-pi, pi]), hence the reduction in turns. `precise` keeps a
// driver from fusing the products into fma, which would change the bits.
//
//   workgroup size : specialization constant 0
//   constant 1     : IN_PLACE; when true, x is read through binding 1 and binding 0 is unused
//   constant 2     : BACKWARD; when true, rotate by the opposite angle (mcl_rope_backward):
//                    the same c and s with s negated, so the backward is the exact transpose
//                    of the forward's rotation; false (the forward) leaves the code unchanged
//   set 0 binding 0: x   (readonly float[])
//   set 0 binding 1: out (float[]): an invocation reads its pair before writing it, and no
//                    other invocation touches that pair
//   push constants : see Push
//
// In place, the op binds one buffer at both bindings. Reading it through a readonly
// (NonWritable) binding while the shader writes it through another breaks what that
// decoration promises the compiler, which may then cache or reload the data at will; so the
// in-place variant reads and writes through binding 1 alone.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) buffer BufOut { float dst[]; };

layout(constant_id = 1) const bool IN_PLACE = false;
layout(constant_id = 2) const bool BACKWARD = false;

// Bits of the pair index a frequency is built from: Dh up to 512.
#define ROPE_FREQ_BITS 8

layout(push_constant) uniform Push {
    uint npairs;      // B * T * H * Dh / 2
    uint half_dim;    // Dh / 2
    uint heads;       // H
    uint seq;         // T
    uint pos0;        // position of token 0 (position_offset)
    uint split_half;  // 0: pairs (2i, 2i + 1); 1: pairs (i, i + Dh / 2)
    float c0;         // 1 / (2 pi)
    float r[ROPE_FREQ_BITS];
} pc;

const float TWO_PI = 6.28318530717958647692;

void main() {
    const uint stride = grid_stride();
    for (uint p = gl_GlobalInvocationID.x; p < pc.npairs;) {
        const uint i = p % pc.half_dim;
        const uint row = p / pc.half_dim;           // (b, t, h) flattened
        const uint t = (row / pc.heads) % pc.seq;

        precise float f = pc.c0;
        for (uint bit = 0u; bit < ROPE_FREQ_BITS; bit++) {
            if ((i & (1u << bit)) != 0u) {
                f = f * pc.r[bit];
            }
        }
        precise float turns = float(pc.pos0 + t) * f;
        precise float frac_turns = turns - roundEven(turns);
        precise float angle = frac_turns * TWO_PI;
        const float c = cos(angle);
        // Negation is exact: R(-a) = R(a)^T with the forward's very c and s.
        const float s = BACKWARD ? -sin(angle) : sin(angle);

        const uint base = row * 2u * pc.half_dim;
        const uint i0 = pc.split_half != 0u ? base + i : base + 2u * i;
        const uint i1 = pc.split_half != 0u ? i0 + pc.half_dim : i0 + 1u;
        const float x0 = IN_PLACE ? dst[i0] : x[i0];
        const float x1 = IN_PLACE ? dst[i1] : x[i1];
        dst[i0] = x0 * c - x1 * s;
        dst[i1] = x0 * s + x1 * c;
        if (!grid_next(p, pc.npairs, stride)) {
            break;
        }
    }
}
