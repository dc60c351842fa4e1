// q8_codes.glsl: the arithmetic of the integer-dot path's activation codes, shared by
// q8_1.glsl (eight invocations a block) and gemv_q.glsl's norm epilogue (one invocation a
// block), so that both give the same codes for the same values: the scale d = amax * (1/127),
// its reciprocal correctly rounded in all but rare cases (Vulkan's division is only within
// 2.5 ulp, so it gets one Newton step), and codes round(x / d), ties away from zero.
#ifndef Q8_CODES_GLSL
#define Q8_CODES_GLSL

// 1/127 rounded to float (0x1.020408p-7): a product with it is correctly rounded everywhere.
const float INV127 = 7.87401572e-3;

// round(v), halves away from zero, as C's roundf. v - trunc(v) is exact.
float round_away(float v) {
    float t = trunc(v);
    return abs(v - t) >= 0.5 ? t + sign(v) : t;
}

// 1 / d after one Newton step; 0 for d = 0 (a block of zeros: every code 0).
float q8_inverse(float d) {
    float id = 0.0;
    if (d != 0.0) {
        id = 1.0 / d;
        id = fma(id, fma(-d, id, 1.0), id);
    }
    return id;
}

#endif
