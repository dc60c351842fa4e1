// rope.glsl: what rope_f32 and rope_table_f32 share: double-float arithmetic from float add,
// subtract and multiply (Veltkamp's split, Dekker's product), and the rotation of one pair by
// pos * f turns, f a pair's frequency in turns per position as a double-float.
//
// Before including it, a kernel declares: the x (readonly) and dst bindings, the IN_PLACE and
// BACKWARD constants, and a push constant block `pc` with pos0, split_half and half_dim; or
// defines ROPE_NO_ROTATE and uses rope_cos_sin alone.

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

// (cos, sin) of pos * f turns, pos an integer below 2^24 (exact in a float).
vec2 rope_cos_sin(float pos, vec2 f) {
    // turns = pos * f = pe.x + turns_lo: pos is exact, so its low part is zero and only
    // pos * f.lo joins Dekker's p + e.
    const vec2 pe = two_product(pos, f.x);
    precise float turns_lo = pe.y + pos * f.y;
    // pe.x - roundEven(pe.x) is exact: a multiple of ulp(pe.x) of at most 1/2.
    precise float u = (pe.x - roundEven(pe.x)) + turns_lo;
    precise float frac_turns = u - roundEven(u);
    precise float angle = frac_turns * TWO_PI;
    return vec2(cos(angle), sin(angle));
}

#ifndef ROPE_NO_ROTATE
// Rotate pair i of row `row` (token t of it) by pos * f turns, pos = pc.pos0 + t.
void rope_rotate(uint i, uint row, uint t, vec2 f) {
    const vec2 cs = rope_cos_sin(float(pc.pos0 + t), f);
    const float c = cs.x;
    // Negation is exact: R(-a) = R(a)^T with the forward's very c and s.
    const float s = BACKWARD ? -cs.y : cs.y;

    const uint base = row * 2u * pc.half_dim;
    const uint i0 = pc.split_half != 0u ? base + i : base + 2u * i;
    const uint i1 = pc.split_half != 0u ? i0 + pc.half_dim : i0 + 1u;
    const float x0 = IN_PLACE ? dst[i0] : x[i0];
    const float x1 = IN_PLACE ? dst[i1] : x[i1];
    dst[i0] = x0 * c - x1 * s;
    dst[i1] = x0 * s + x1 * c;
}
#endif
