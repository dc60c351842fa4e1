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

const float TWO_PI = 6.28318530717958647692;

// Veltkamp's split: a = hi + lo exactly, each with at most 12 significant bits (24 = 12 + 12),
// so that the product of two halves is exact in a float. 4097 = 2^12 + 1.
vec2 split(float a) {
    precise float scaled = 4097.0 * a;
    precise float hi = scaled - (scaled - a);
    precise float lo = a - hi;
    return vec2(hi, lo);
}

// Dekker's product: a * b = p + e exactly (returned as (p, e)), with no fma.
vec2 two_product(float a, float b) {
    const vec2 sa = split(a);
    const vec2 sb = split(b);
    precise float p = a * b;
    precise float e = (((sa.x * sb.x - p) + sa.x * sb.y) + sa.y * sb.x) + sa.y * sb.y;
    return vec2(p, e);
}

// (a.x + a.y) * (b.x + b.y) in double-float, renormalised so that |lo| <= ulp(hi) / 2.
vec2 df_mul(vec2 a, vec2 b) {
    const vec2 pe = two_product(a.x, b.x);
    precise float e = pe.y + (a.x * b.y + a.y * b.x);
    precise float hi = pe.x + e;
    precise float lo = e - (hi - pe.x);
    return vec2(hi, lo);
}

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
        // turns = pos * f = pe.x + turns_lo: pos is exact, so its low part is zero and only
        // pos * f.lo joins Dekker's p + e.
        const float pos = float(pc.pos0 + t);
        const vec2 pe = two_product(pos, f.x);
        precise float turns_lo = pe.y + pos * f.y;
        // pe.x - roundEven(pe.x) is exact: a multiple of ulp(pe.x) of at most 1/2.
        precise float u = (pe.x - roundEven(pe.x)) + turns_lo;
        precise float frac_turns = u - roundEven(u);
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
