// lab helpers (not part of the library)
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019],
                  id = 4450)
int spirv_sdot4x8(uint a, uint b, spirv_literal int packed_vector_format);
int sdot(uint a, uint b) { return spirv_sdot4x8(a, b, 0); }

float quant_half(uint h) {
    uint sign = (h & 0x8000u) << 16;
    uint em = h & 0x7FFFu;
    uint mag;
    if (em < 0x0400u) {
        mag = floatBitsToUint(float(em) * (1.0 / 16777216.0));
    } else if (em >= 0x7C00u) {
        mag = 0x7F800000u | ((em & 0x03FFu) << 13);
    } else {
        mag = (em << 13) + 0x38000000u;
    }
    return uintBitsToFloat(sign | mag);
}
// branch-free exact (no inf/nan): normals rebias; subnormals via 2^-14 subtraction
float half_fast(uint h) {
    uint em = h & 0x7FFFu;
    float n = uintBitsToFloat((em << 13) + 0x38000000u);
    float s = uintBitsToFloat((em << 13) + 0x38800000u) - 6.103515625e-05;
    return uintBitsToFloat(floatBitsToUint(em < 0x400u ? s : n) | ((h & 0x8000u) << 16));
}
float int_to_float(int v) {
    return uintBitsToFloat(uint(v) + 0x4B400000u) - 12582912.0;
}
const uint EXP23 = 0x4B000000u, EXP19 = 0x49000000u, EXP15 = 0x47000000u, EXP11 = 0x45000000u,
           EXP7 = 0x43000000u;
vec4 gemv_bytes(uint q, float off) {
    const uint q2 = q >> 16;
    return vec4(uintBitsToFloat((q & 0xFFu) | EXP23) - (8388608.0 + off),
                uintBitsToFloat((q & 0xFF00u) | EXP15) - (32768.0 + off),
                uintBitsToFloat((q2 & 0xFFu) | EXP23) - (8388608.0 + off),
                uintBitsToFloat((q2 & 0xFF00u) | EXP15) - (32768.0 + off));
}
void gemv_nibbles(uint q, float off, out vec4 lo, out vec4 hi) {
    const uint q2 = q >> 12;
    lo = vec4(uintBitsToFloat((q & 0xFu) | EXP23) - (8388608.0 + off),
              uintBitsToFloat((q & 0xF00u) | EXP15) - (32768.0 + off),
              uintBitsToFloat((q & 0xF0000u) | EXP7) - (128.0 + off),
              uintBitsToFloat((q2 & 0xF000u) | EXP11) - (2048.0 + off));
    hi = vec4(uintBitsToFloat((q & 0xF0u) | EXP19) - (524288.0 + off),
              uintBitsToFloat((q & 0xF000u) | EXP11) - (2048.0 + off),
              uintBitsToFloat((q2 & 0xF00u) | EXP15) - (32768.0 + off),
              uintBitsToFloat((q2 & 0xF0000u) | EXP7) - (128.0 + off));
}
float fdot(vec4 a, vec4 b, float c) {
    return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, c))));
}

// Partial sums acc of the T lanes of row group g meet in shared memory (NR*M series per group)
shared float red[G * NR * M * T];
void finish(float acc[NR][M], uint wg, uint ldy) {
    const uint t = gl_LocalInvocationID.x, g = gl_LocalInvocationID.y;
    [[unroll]] for (uint i = 0u; i < NR; i++)
        [[unroll]] for (uint m = 0u; m < M; m++)
            red[((i * M + m) * G + g) * T + t] = acc[i][m];
    barrier();
    const uint F = T >= 8u ? 8u : 1u;
    if (F > 1u && t < T / F) {
        [[unroll]] for (uint i = 0u; i < NR; i++)
            [[unroll]] for (uint m = 0u; m < M; m++) {
                const uint at = ((i * M + m) * G + g) * T + t * F;
                float s = 0.0;
                [[unroll]] for (uint k = 0u; k < F; k++) s += red[at + k];
                red[at] = s;
            }
    }
    barrier();
    for (uint o = g * T + t; o < NR * M * G; o += T * G) {
        const uint i = o / (M * G), m = (o / G) % M, og = o % G;
        const uint n = (wg * G + og) * NR + i;
        float s = 0.0;
        for (uint k = 0u; k < T; k += F) s += red[o * T + k];
        if (n < pc.N) y[m * ldy + n] = s;
    }
}
