// quant.glsl: reading GGUF block formats (docs/quant-formats.md) through 32-bit words.
//
// Weights are read without 8- or 16-bit storage: the weight binding is a uint[] (and, for the
// 16-byte blocks of Q4_K and Q5_K, a uvec4[] alias), and bytes, nibbles and fp16 halves are cut
// out of words with shifts. Q8_0, Q4_0 and Q6_K blocks (34, 18, 210 bytes) start at byte
// offsets that are 0 or 2 mod 4, so their fields are assembled from two neighbouring words
// (funnel16). Every word a decoder reads holds at least one byte of the block it decodes.
//
// A tensor of 2 mod 4 bytes ends in half a word that a uint[] binding of its exact size cannot
// reach (the runtime array's length is floor(size / 4)). With TAIL the host copies those two
// bytes into a one-word buffer, and quant_word() reads that word in place of the missing one.
//
// Two decoders, both exact (docs/quant-formats.md, "Arithmetic"):
//   quant_decode4   4 consecutive weights, fully dequantized (the GEMM's tiles, and one variant
//                   of the dequantize kernel)
//   quant_load, quant_scales, quant_group   one "lane" of a block: 32 weights as 8 groups of
//                   4 consecutive elements, with codes, scales and mins kept apart so that a
//                   kernel can apply a scale once per segment (the other variant of the
//                   dequantize kernel). quant_load only issues the loads, so that a kernel can
//                   start the loads of several blocks before it decodes any of them;
//                   quant_group decodes one group at a time, which keeps few decoded values
//                   live.
// The GEMV kernels decode pieces of blocks instead (gemv_span.glsl), with the helpers here
// for words, halves, code-to-float conversion and K-quant scales.
//
// The including shader declares, before including this file:
//   layout(constant_id = ...) const uint FORMAT;   one of the FMT_* values below
//   layout(constant_id = ...) const bool TAIL;
//   buffers `uint wq[]` and `uvec4 wq4[]` aliasing the weight binding, and `uint wtail[]`.
#ifndef QUANT_GLSL
#define QUANT_GLSL

// The formats, in the order of matmul_quant.c's table.
const uint FMT_Q8_0 = 0u;
const uint FMT_Q4_0 = 1u;
const uint FMT_Q4_K = 2u;
const uint FMT_Q5_K = 3u;
const uint FMT_Q6_K = 4u;

// Weights per block and bytes per block (ggml-common.h: QK8_0, QK4_0, QK_K and the structs).
const uint QK = FORMAT <= FMT_Q4_0 ? 32u : 256u;
const uint BLOCK_BYTES = FORMAT == FMT_Q8_0 ? 34u
                       : FORMAT == FMT_Q4_0 ? 18u
                       : FORMAT == FMT_Q4_K ? 144u
                       : FORMAT == FMT_Q5_K ? 176u
                       : 210u;
// Lanes per block: each lane decodes 32 weights.
const uint LANES = QK / 32u;
// Scale segments per lane: the 8 groups of a lane share 1 scale (Q8_0, Q4_0), 2 (Q4_K, Q5_K:
// its 16 low-nibble and 16 high-nibble weights lie in two sub-blocks) or 4 (Q6_K: 8 weights
// in each quarter of a half, each quarter with its own scale).
const uint SEGS = FORMAT <= FMT_Q4_0 ? 1u : FORMAT == FMT_Q6_K ? 4u : 2u;
const uint GROUPS_PER_SEG = 8u / SEGS;
// Q4_K and Q5_K subtract a min per sub-block (y = d*sc*q - dmin*m).
const bool HAS_MIN = FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K;

// 2^23 as a float: or-ing a small integer q into its mantissa gives exactly 2^23 + q, so that
// a subtraction turns a byte into a float in two full-rate operations (an integer-to-float
// conversion runs at a quarter of the rate on some GPUs).
const float MAGIC = 8388608.0;
const uint MAGIC_BITS = 0x4B000000u;

// The four bytes of w, each and-ed with `mask`, as floats minus `offset` (exact: every value
// is an integer < 2^24). The mask lets nibble codes skip a separate masking step.
vec4 quant_bytes(uint w, uint mask, float offset) {
    uvec4 b = (uvec4(w) >> uvec4(0u, 8u, 16u, 24u)) & mask;
    return uintBitsToFloat(b | MAGIC_BITS) - (MAGIC + offset);
}

// Exponent fields of 2^e for the byte-to-float conversions below: a code c placed in the
// mantissa at bit p of the float 2^(23 - p) reads 2^(23 - p) + c, exactly.
const uint EXP23 = 0x4B000000u;  // 2^23: code at bit 0
const uint EXP19 = 0x49000000u;  // 2^19: code at bit 4
const uint EXP15 = 0x47000000u;  // 2^15: code at bit 8
const uint EXP11 = 0x45000000u;  // 2^11: code at bit 12
const uint EXP7 = 0x43000000u;   // 2^7: code at bit 16

// The four bytes of q as floats minus off, exactly (each and + or, then one subtraction).
vec4 gemv_bytes(uint q, float off) {
    const uint q2 = q >> 16;
    return vec4(uintBitsToFloat((q & 0xFFu) | EXP23) - (8388608.0 + off),
                uintBitsToFloat((q & 0xFF00u) | EXP15) - (32768.0 + off),
                uintBitsToFloat((q2 & 0xFFu) | EXP23) - (8388608.0 + off),
                uintBitsToFloat((q2 & 0xFF00u) | EXP15) - (32768.0 + off));
}

// The eight nibbles of q minus off, exactly: lo = the low nibbles of its four bytes, hi = the
// high ones. Five of the eight positions fit a mantissa as they stand; one shift serves the
// other three.
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

// IEEE binary16 bits -> float, exactly, subnormals included, with integer operations: a
// device that flushes denormals must not flush fp16 subnormal scales (common in real files).
// The float of a subnormal half is a normal float (>= 2^-24), so nothing here is denormal.
float quant_half(uint h) {
    uint em = h & 0x7FFFu;
    float n = uintBitsToFloat((em << 13) + 0x38000000u);
    float s = uintBitsToFloat((em << 13) + 0x38800000u) - 6.103515625e-05;
    return uintBitsToFloat(floatBitsToUint(em < 0x400u ? s : n) | ((h & 0x8000u) << 16));
}

// Word i of the weight tensor; the half word past the last whole one comes from wtail.
uint quant_word(uint i) {
    if (TAIL && i >= uint(wq.length())) {
        return wtail[0];
    }
    return wq[i];
}

// Bytes 2..5 of the 8 bytes lo:hi (lo first): 4 bytes that start 2 bytes into a word.
uint funnel16(uint lo, uint hi) {
    return (lo >> 16) | (hi << 16);
}

// 4 bytes at a 2-aligned byte offset.
uint quant_read32(uint o) {
    uint lo = quant_word(o >> 2);
    if ((o & 2u) == 0u) {
        return lo;
    }
    return funnel16(lo, quant_word((o >> 2) + 1u));
}

// The 2 bytes at a 2-aligned offset, and the byte at any offset.
uint quant_read16(uint o) {
    return (quant_word(o >> 2) >> ((o & 2u) * 8u)) & 0xFFFFu;
}
uint quant_read8(uint o) {
    return (quant_word(o >> 2) >> ((o & 3u) * 8u)) & 0xFFu;
}

// Byte i (0..11) of a K-quant scale array held in three words.
uint kscale_byte(uvec3 s, uint i) {
    return (s[i >> 2] >> ((i & 3u) * 8u)) & 0xFFu;
}

// Sub-block j's (0..7) 6-bit scale and min (ggml's get_scale_min_k4).
uvec2 kscale_min(uvec3 s, uint j) {
    if (j < 4u) {
        return uvec2(kscale_byte(s, j) & 63u, kscale_byte(s, j + 4u) & 63u);
    }
    uint lo = kscale_byte(s, j + 4u);
    return uvec2((lo & 15u) | ((kscale_byte(s, j - 4u) >> 6) << 4),
                 (lo >> 4) | ((kscale_byte(s, j) >> 6) << 4));
}

// The scales and mins of sub-blocks 2c and 2c + 1 as (sc[2c], sc[2c+1], m[2c], m[2c+1]):
// kscale_min for a pair at once. The pair's bytes sit at the same position p = 16 (c & 1) of
// each of the three words, so both come out of one shift per word.
uvec4 kscale_pair(uvec3 s, uint c) {
    uint p = 16u * (c & 1u);
    uint a = s.x >> p, b = s.y >> p, w = s.z >> p;
    uint sc, m;
    if (c < 2u) {
        sc = a & 0x3F3Fu;
        m = b & 0x3F3Fu;
    } else {
        // Low 4 bits from bytes 8..11, top 2 bits from bits 6-7 of bytes 0..3 / 4..7.
        sc = (w & 0x0F0Fu) | ((a >> 2) & 0x3030u);
        m = ((w >> 4) & 0x0F0Fu) | ((b >> 2) & 0x3030u);
    }
    return uvec4(sc & 0xFFu, (sc >> 8) & 0xFFu, m & 0xFFu, (m >> 8) & 0xFFu);
}

// ------------------------------------------------------------------------------------------
// quant_decode4: weights e4 .. e4 + 3 (e4 a multiple of 4) of the block at byte offset s,
// dequantized. Reads each field where it lies, so it suits scattered access (a GEMM tile).
// ------------------------------------------------------------------------------------------
vec4 quant_decode4(uint s, uint e4) {
    if (FORMAT == FMT_Q8_0) {
        float d = quant_half(quant_read16(s));
        return d * quant_bytes(quant_read32(s + 2u + e4) ^ 0x80808080u, 0xFFu, 128.0);
    }
    if (FORMAT == FMT_Q4_0) {
        float d = quant_half(quant_read16(s));
        uint w = quant_read32(s + 2u + (e4 & 15u)) >> (e4 >= 16u ? 4u : 0u);
        return d * quant_bytes(w, 0x0Fu, 8.0);
    }
    if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        // Q4_K and Q5_K blocks are 16-byte multiples: every field below is word-aligned.
        uint sb = e4 / 32u, l = e4 % 32u;
        uint w0 = wq[s >> 2];
        uvec3 sc = uvec3(wq[(s >> 2) + 1u], wq[(s >> 2) + 2u], wq[(s >> 2) + 3u]);
        uvec2 scm = kscale_min(sc, sb);
        float step = quant_half(w0 & 0xFFFFu) * float(scm.x);
        float offset = quant_half(w0 >> 16) * float(scm.y);
        uint qs_at = FORMAT == FMT_Q4_K ? 16u : 48u;
        uint q = (wq[(s + qs_at + 32u * (sb / 2u) + l) >> 2] >> (4u * (sb & 1u))) & 0x0F0F0F0Fu;
        if (FORMAT == FMT_Q5_K) {
            q |= ((wq[(s + 16u + l) >> 2] >> sb) & 0x01010101u) << 4;
        }
        return step * quant_bytes(q, 0xFFu, 0.0) - offset;
    }
    // Q6_K: half h, quarter k, position l (docs/quant-formats.md's table).
    uint h = e4 / 128u, k = (e4 % 128u) / 32u, l = e4 % 32u;
    uint ql = quant_read32(s + 64u * h + 32u * (k & 1u) + l) >> (4u * (k >> 1));
    uint qh = quant_read32(s + 128u + 32u * h + l) >> (2u * k);
    uint code = (ql & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4);
    int sc = bitfieldExtract(int(quant_read8(s + 192u + e4 / 16u)), 0, 8);
    float d = quant_half(quant_read16(s + 208u));
    return (d * float(sc)) * quant_bytes(code, 0xFFu, 32.0);
}

// ------------------------------------------------------------------------------------------
// Lanes: lane j of a block decodes 32 weights, as 8 groups of 4 consecutive elements.
// ------------------------------------------------------------------------------------------

// The words a lane needs, loaded but not yet decoded (at most 13).
struct QuantRaw {
    uvec4 v[4];
};

uint raw_word(QuantRaw r, uint i) {
    return r.v[i >> 2][i & 3u];
}

// The 2-aligned formats (Q8_0, Q4_0, Q6_K) load scalar words: raw word i of lane j is the word
// that holds block byte quant_raw_rel(j, i). Q8_0 and Q4_0 take the 9 / 5 words that hold the
// whole block, whichever its alignment; Q6_K lane j (half h = j / 4, positions l0 .. l0 + 7
// of each quarter) takes the 3 words that cover each of its four 8-byte fields (ql, ql + 32,
// qh, scales) and the word of d. Q4_K and Q5_K (16-byte blocks) load uvec4s instead.
const bool QUANT_WORD_LOADS = FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0 || FORMAT == FMT_Q6_K;
const uint RAW_WORDS = FORMAT == FMT_Q8_0 ? 9u : FORMAT == FMT_Q4_0 ? 5u : 13u;

uint quant_raw_rel(uint j, uint i) {
    if (FORMAT != FMT_Q6_K) {
        return 4u * i;
    }
    if (i == 12u) {
        return 208u;  // d
    }
    uint h = j >> 2, l0 = 8u * (j & 3u), f = i / 3u;
    uint at = f == 0u ? 64u * h + l0
            : f == 1u ? 64u * h + 32u + l0
            : f == 2u ? 128u + 32u * h + l0
            : 192u + 8u * h;
    return at + 4u * (i % 3u);
}

// Issue the loads of lane j of the block at byte offset s.
QuantRaw quant_load(uint s, uint j) {
    QuantRaw r;
    r.v[0] = uvec4(0u); r.v[1] = uvec4(0u); r.v[2] = uvec4(0u); r.v[3] = uvec4(0u);
    if (QUANT_WORD_LOADS) {
        [[unroll]] for (uint i = 0u; i < RAW_WORDS; i++) {
            r.v[i >> 2][i & 3u] = quant_word((s + quant_raw_rel(j, i)) >> 2);
        }
    } else if (FORMAT == FMT_Q4_K) {
        r.v[0] = wq4[s >> 4];                // d, dmin, scales
        r.v[1] = wq4[(s >> 4) + 1u + j];     // qs[16j .. 16j + 15]
    } else {
        r.v[0] = wq4[s >> 4];                    // Q5_K: d, dmin, scales
        r.v[1] = wq4[(s >> 4) + 1u + (j & 1u)];  // qh[16(j&1) .. +15]
        r.v[2] = wq4[(s >> 4) + 3u + j];         // qs[16j .. 16j + 15]
    }
    return r;
}

// Element offset, inside its block, of group g of lane j.
uint quant_group_pos(uint j, uint g) {
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        return 4u * g;  // Q4_0: groups 0-3 low nibbles (0..15), 4-7 high (16..31)
    }
    if (FORMAT == FMT_Q6_K) {
        uint h = j >> 2, l0 = 8u * (j & 3u);
        return 128u * h + 32u * (g >> 1) + l0 + 4u * (g & 1u);
    }
    // Q4_K, Q5_K: lane j holds qs[16j .. 16j + 15]: low nibbles are elements
    // 64c + l0 .. + 15 (sub-block 2c), high nibbles 64c + 32 + l0 .. + 15 (sub-block 2c + 1).
    uint c = j >> 1, l0 = 16u * (j & 1u);
    return 64u * c + 32u * (g >> 2) + l0 + 4u * (g & 3u);
}

// The scales and mins of the segments of lane j (loaded by quant_load(s, j)): weight =
// scale[seg] * code - minv[seg], with seg = g / GROUPS_PER_SEG for group g.
void quant_scales(QuantRaw r, uint s, uint j, out vec4 scale, out vec4 minv) {
    scale = vec4(0.0);
    minv = vec4(0.0);
    const bool shifted = (s & 2u) != 0u;  // the block starts 2 bytes into its first word
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        uint w0 = raw_word(r, 0u);
        scale.x = quant_half(shifted ? w0 >> 16 : w0 & 0xFFFFu);
    } else if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        uvec4 hd = r.v[0];
        uint c = j >> 1;
        float d = quant_half(hd.x & 0xFFFFu), dmin = quant_half(hd.x >> 16);
        vec4 scm = vec4(kscale_pair(hd.yzw, c));
        scale.xy = d * scm.xy;
        minv.xy = dmin * scm.zw;
    } else {
        // Q6_K: quarter k's scale is scales[8h + (l0 >= 16) + 2k], a signed byte; the two
        // words of scales[8h .. 8h + 7] are raw words 9..11.
        uint w = raw_word(r, 12u);
        float d = quant_half(shifted ? w >> 16 : w & 0xFFFFu);
        uint s0 = shifted ? funnel16(raw_word(r, 9u), raw_word(r, 10u)) : raw_word(r, 9u);
        uint s1 = shifted ? funnel16(raw_word(r, 10u), raw_word(r, 11u)) : raw_word(r, 10u);
        uint first = (j & 3u) >= 2u ? 1u : 0u;
        [[unroll]] for (uint k = 0u; k < 4u; k++) {
            uint b = first + 2u * k;
            int sc = bitfieldExtract(int(b < 4u ? s0 : s1), int(8u * (b & 3u)), 8);
            scale[k] = d * float(sc);
        }
    }
}

// The codes of group g (0..7) of lane j as floats, offsets such as Q4_0's -8 applied.
vec4 quant_group(QuantRaw r, uint s, uint j, uint g) {
    const bool shifted = (s & 2u) != 0u;
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        // Data word k holds block bytes 2 + 4k .. 5 + 4k.
        uint k = FORMAT == FMT_Q8_0 ? g : g & 3u;
        uint w = shifted ? raw_word(r, k + 1u) : funnel16(raw_word(r, k), raw_word(r, k + 1u));
        if (FORMAT == FMT_Q8_0) {
            return quant_bytes(w ^ 0x80808080u, 0xFFu, 128.0);  // signed bytes, + 128
        }
        return quant_bytes(w >> (g >= 4u ? 4u : 0u), 0x0Fu, 8.0);
    }
    if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        uint k = g & 3u, high = g >> 2;  // high: the odd sub-block, in the high nibbles
        if (FORMAT == FMT_Q4_K) {
            return quant_bytes(r.v[1][k] >> (4u * high), 0x0Fu, 0.0);
        }
        // Q5_K: the fifth bit of element l of sub-block sb is bit sb of qh[l].
        uint q = ((r.v[2][k] >> (4u * high)) & 0x0F0F0F0Fu) |
                 (((r.v[1][k] >> (2u * (j >> 1) + high)) & 0x01010101u) << 4);
        return quant_bytes(q, 0xFFu, 0.0);
    }
    // Q6_K: quarter k = g / 2, word i = g % 2 of each 8-byte field (raw words 3f .. 3f + 2).
    uint k = g >> 1, i = g & 1u;
    uint f = k & 1u;  // ql or ql + 32
    uint a = shifted ? funnel16(raw_word(r, 3u * f + i), raw_word(r, 3u * f + i + 1u))
                     : raw_word(r, 3u * f + i);
    uint h = shifted ? funnel16(raw_word(r, 6u + i), raw_word(r, 7u + i)) : raw_word(r, 6u + i);
    uint code = ((a >> (4u * (k >> 1))) & 0x0F0F0F0Fu) | (((h >> (2u * k)) & 0x03030303u) << 4);
    return quant_bytes(code, 0xFFu, 32.0);
}

#endif
