// counter.glsl: the counter-state synapse's packed codes (MEMORY_NATIVE.md section 1).
//
// A weight's state is a 6-bit code, code = (t + 1) * (2C - 1) + (c + C - 1), t in {-1, 0, 1},
// c in [-(C - 1), C - 1]. Four codes fill three bytes (byte0 = k0 | (k1 & 3) << 6, byte1 =
// (k1 >> 2) & 15 | (k2 & 15) << 4, byte2 = (k2 >> 4) & 3 | k3 << 2): read as one little-endian
// bit stream that is code e at bits [6e, 6e + 6). Sixteen codes are 96 bits, three 32-bit
// words exactly, so a row of `in` weights (in a multiple of 16) starts on a word and an
// invocation that owns 16 codes owns three whole words: the update writes words, never a word
// that another invocation writes (no 8-bit storage needed).
//
// The includer declares, before including this file, the packed state as
//   buffer ... { uint packed_words[]; };
#ifndef COUNTER_GLSL
#define COUNTER_GLSL

// Code e of the stream (e < 2^32): group e / 16 of three words, code e % 16 within it.
uint counter_code(uint e) {
    const uint bit = 6u * (e & 15u);
    const uint word = (e >> 4) * 3u + (bit >> 5);
    const uint shift = bit & 31u;
    uint bits = packed_words[word] >> shift;
    if (shift > 26u) {
        bits |= packed_words[word + 1u] << (32u - shift);
    }
    return bits & 63u;
}

// The ternary value of a code under counter range C.
int counter_t(uint code, uint C) {
    return int(code / (2u * C - 1u)) - 1;
}

// The residual counter of a code.
int counter_c(uint code, uint C) {
    return int(code % (2u * C - 1u)) - int(C - 1u);
}

uint counter_encode(int t, int c, uint C) {
    return uint(t + 1) * (2u * C - 1u) + uint(c + int(C) - 1);
}

// Code j (0..15) of a group of 16 held in three words.
uint counter_code16(uvec3 w, uint j) {
    const uint bit = 6u * j;
    const uint word = bit >> 5;
    const uint shift = bit & 31u;
    uint bits = w[word] >> shift;
    if (shift > 26u) {
        bits |= w[word + 1u] << (32u - shift);
    }
    return bits & 63u;
}

// Three words holding 16 codes, code j at bits [6j, 6j + 6).
uvec3 counter_pack16(uint codes[16]) {
    uvec3 w = uvec3(0u);
    for (uint j = 0u; j < 16u; j++) {
        const uint bit = 6u * j;
        const uint word = bit >> 5;
        const uint shift = bit & 31u;
        w[word] |= codes[j] << shift;
        if (shift > 26u) {
            w[word + 1u] |= codes[j] >> (32u - shift);
        }
    }
    return w;
}

#endif
