#version 450
// rope_f32: rotary position embedding over x [B, T, H, Dh], one invocation per pair.
//
// The angle of pair i at position pos is pos * theta^(-2i/Dh) radians, reduced to [-pi, pi]
// in turns. It is carried in double-float: an unevaluated sum hi + lo of two floats, about
// 48 bits, so that a float angle within a few ulp of the exact one remains after the
// reduction at any position below 2^24 (pos times a float frequency, rounded to float, is
// off by up to about 0.01 rad near pos = 2^17):
//   f_i   = c0 * prod(r[b] for each set bit b of i)  turns per position, double-float
//   turns = pos * f_i                     double-float; pos < 2^24 is an exact float
//   u     = (turns.hi - roundEven(turns.hi)) + turns.lo
//                                         the difference is exact; |u| < 1 (turns.lo is up
//                                         to ~ulp(turns.hi), which reaches 1/4 near 2^24)
//   u     = u - roundEven(u)              exact for |u| < 1, in [-1/2, 1/2]
//   a     = u * 2pi                       float, in [-pi, pi]
// with c0 = 1 / (2 pi) and r[b] = theta^(-2 * 2^b / Dh) computed in double on the host and
// passed as float pairs (hi = float(v), lo = float(v - hi)). A double-float product is
// Dekker's: Veltkamp's split of each factor into 12-bit halves, whose products are exact, so
// hi * hi = p + e exactly, plus the cross terms hi * lo (lo * lo, 2^-48 of the product, is
// left out), renormalised. The frequency takes up to 8 such products and turns one more.
//
// Only float add, subtract and multiply are used, which Vulkan rounds correctly, so the angle
// has the same bits on every conformant driver (the host-side reference mirrors the steps,
// see tests/ref/ref_layout.c); pow/exp2 are not correctly rounded (up to 3 + 2|x| ulp), nor
// is sin/cos of a large argument (Vulkan bounds sin/cos only on [-pi, pi]), hence the
// reduction in turns. `precise` keeps a driver from fusing products into fma or simplifying
// the split's (s - (s - a)) to a, either of which would change the bits. The bits hold while
// no intermediate is subnormal (Vulkan lets a driver flush those): nonzero intermediates stay
// above ~2^-78 f_i, so f_i >= 2^-48, any theta up to 1e13 at any Dh, is safe; past that a
// flush moves the angle by far less than its rounding, but the bits may differ.
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
    float c0_hi;      // 1 / (2 pi) as hi + lo
    float c0_lo;
    float r_hi[ROPE_FREQ_BITS];  // theta^(-2 * 2^b / Dh) as hi + lo
    float r_lo[ROPE_FREQ_BITS];
} pc;

#include "rope.glsl"

void main() {
    const uint stride = grid_stride();
    for (uint p = gl_GlobalInvocationID.x; p < pc.npairs;) {
        const uint i = p % pc.half_dim;
        const uint row = p / pc.half_dim;           // (b, t, h) flattened
        const uint t = (row / pc.heads) % pc.seq;

        vec2 f = vec2(pc.c0_hi, pc.c0_lo);
        for (uint bit = 0u; bit < ROPE_FREQ_BITS; bit++) {
            if ((i & (1u << bit)) != 0u) {
                f = df_mul(f, vec2(pc.r_hi[bit], pc.r_lo[bit]));
            }
        }
        rope_rotate(i, row, t, f);
        if (!grid_next(p, pc.npairs, stride)) {
            break;
        }
    }
}
