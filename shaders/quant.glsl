// quant.glsl: reading the GGUF block formats as MotifCL stores them on the device
// (docs/quant-formats.md, "On the device").
//
// Q8_0, Q4_0 and Q6_K blocks (34, 18, 210 bytes) keep their fp16 d apart on the device: a
// tensor of B blocks holds the B block bodies (the block less its d: 32, 16, 208 bytes) from
// byte 0, then the B d values, two bytes each. Every body starts at a multiple of 16 bytes,
// so a kernel reads whole words, uvec2s and uvec4s, none straddling a field, and the lanes of
// a subgroup read neighbouring 16-byte pieces. Q4_K and Q5_K blocks (144, 176 bytes) are
// 16-byte multiples and are stored as GGUF lays them out. Kernels bind the bodies (`wq`) and
// the d values (`wd`, two halves a word) separately; the host converts on upload and
// download (src/quant/device_layout.c), so that users see GGUF's bytes.
//
// Decoders, all exact (docs/quant-formats.md, "Arithmetic"):
//   quant_decode4     4 consecutive weights, fully dequantized (the GEMM's tiles and one
//                     variant of the dequantize kernel)
//   piece_load        one piece of a block: the words a lane of a GEMV (gemv_q.glsl) reads
//                     per block, decoded by the kernel that loaded them; piece_values
//                     dequantizes one (the other variant of the dequantize kernel, which holds
//                     the pieces' positions and fields to the CPU reference)
//
// The including shader declares, before including this file:
//   layout(constant_id = ...) const uint FORMAT;   one of the FMT_* values below
//   layout(constant_id = ...) const uint PB;        bytes of codes per piece (Q8_0: 16, 32;
//                                                   Q4_0: 8, 16; ignored for the K types)
//   buffers `uint wq[]`, `uvec2 wq2[]`, `uvec4 wq4[]` aliasing the body binding, and
//   `uint wd[]` (the d binding; any buffer for Q4_K and Q5_K)
#ifndef QUANT_GLSL
#define QUANT_GLSL

// The formats, in the order of matmul_quant.c's table.
const uint FMT_Q8_0 = 0u;
const uint FMT_Q4_0 = 1u;
const uint FMT_Q4_K = 2u;
const uint FMT_Q5_K = 3u;
const uint FMT_Q6_K = 4u;

// Weights per block (ggml-common.h: QK8_0, QK4_0, QK_K).
const uint QK = FORMAT <= FMT_Q4_0 ? 32u : 256u;
// Words of a block's body on the device: the block less its d where d is kept apart.
const uint BODY_WORDS = FORMAT == FMT_Q8_0 ? 8u
                      : FORMAT == FMT_Q4_0 ? 4u
                      : FORMAT == FMT_Q4_K ? 36u
                      : FORMAT == FMT_Q5_K ? 44u
                      : 52u;
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

// IEEE binary16 bits -> float, exactly, subnormals, infinities and NaN payloads included,
// with integer operations and selects (no branches): a device that flushes denormals must
// not flush fp16 subnormal scales (common in real files), and nothing computed here is a
// denormal float. A subnormal half m * 2^-24 is (1 + m / 1024) * 2^-14 - 2^-14, both terms
// normal floats and the difference exact.
float quant_half(uint h) {
    const uint em = h & 0x7FFFu;
    const uint normal = (em << 13) + 0x38000000u;  // rebias the exponent: 127 - 15 = 112
    const float sub = uintBitsToFloat((em << 13) + 0x38800000u) - 6.103515625e-05;
    const uint mag = em < 0x0400u ? floatBitsToUint(sub)
                   : em >= 0x7C00u ? (em << 13) | 0x7F800000u  // inf, NaN with its payload
                   : normal;
    return uintBitsToFloat(mag | ((h & 0x8000u) << 16));
}

// d of block i, i counted from the first half of the d binding (Q8_0, Q4_0, Q6_K).
float quant_d(uint i) {
    const uint w = wd[i >> 1];
    return quant_half((i & 1u) != 0u ? w >> 16 : w & 0xFFFFu);
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
// quant_decode4: weights e4 .. e4 + 3 (e4 a multiple of 4) of block `blk` (its d the `di`th
// of the d binding), dequantized. Reads each field where it lies, so it suits scattered
// access (a GEMM tile).
// ------------------------------------------------------------------------------------------
vec4 quant_decode4(uint blk, uint di, uint e4) {
    const uint s = blk * BODY_WORDS;  // the body's first word
    if (FORMAT == FMT_Q8_0) {
        return quant_d(di) * quant_bytes(wq[s + e4 / 4u] ^ 0x80808080u, 0xFFu, 128.0);
    }
    if (FORMAT == FMT_Q4_0) {
        const uint w = wq[s + (e4 & 15u) / 4u] >> (e4 >= 16u ? 4u : 0u);
        return quant_d(di) * quant_bytes(w, 0x0Fu, 8.0);
    }
    if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        uint sb = e4 / 32u, l = e4 % 32u;
        uint w0 = wq[s];
        uvec2 scm = kscale_min(uvec3(wq[s + 1u], wq[s + 2u], wq[s + 3u]), sb);
        float step = quant_half(w0 & 0xFFFFu) * float(scm.x);
        float offset = quant_half(w0 >> 16) * float(scm.y);
        uint qs_at = FORMAT == FMT_Q4_K ? 4u : 12u;  // words
        uint q = (wq[s + qs_at + 8u * (sb / 2u) + l / 4u] >> (4u * (sb & 1u))) & 0x0F0F0F0Fu;
        if (FORMAT == FMT_Q5_K) {
            q |= ((wq[s + 4u + l / 4u] >> sb) & 0x01010101u) << 4;
        }
        return step * quant_bytes(q, 0xFFu, 0.0) - offset;
    }
    // Q6_K: half h, quarter k, position l (docs/quant-formats.md's table); the body is
    // ql (words 0..31), qh (32..47), scales (48..51).
    uint h = e4 / 128u, k = (e4 % 128u) / 32u, l = e4 % 32u;
    uint ql = wq[s + 16u * h + 8u * (k & 1u) + l / 4u] >> (4u * (k >> 1));
    uint qh = wq[s + 32u + 8u * h + l / 4u] >> (2u * k);
    uint code = (ql & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4);
    uint si = e4 / 16u;
    int sc = bitfieldExtract(int(wq[s + 48u + si / 4u]), int(8u * (si & 3u)), 8);
    return (quant_d(di) * float(sc)) * quant_bytes(code, 0xFFu, 32.0);
}

// ------------------------------------------------------------------------------------------
// Pieces: what one lane of a GEMV reads of a block per step. A block is PPB pieces; a piece
// is 4 CW bytes of codes per field, plus the block's scales:
//   Q8_0 (PB 16, 32)  codes words CW p .. of the body: elements PB p + 4k .. + 3 in word k;
//                     d (as float bits) after them
//   Q4_0 (PB 8, 16)   codes words CW p ..: the low nibbles of word k are elements PB p + 4k
//                     .. + 3, the high ones 16 + PB p + 4k ..; d after them
//   Q4_K (PB 16, 32)  piece j (PPB 128 / PB): qs[PB j .. PB j + PB - 1] (words 0 .. CW - 1):
//                     positions l0 = 16 j0 .. l0 + PB - 1 of sub-block 2c (low nibbles) and
//                     2c + 1 (high), where c = PB j / 32 and j0 = (PB j / 16) & 1 (PB 32: c =
//                     j, l0 = 0); the block's first uvec4 (d, dmin, scales) at words CW ..
//                     CW + 3
//   Q5_K (PB 16, 32)  as Q4_K, and qh[l0 .. l0 + PB - 1] (the fifth bits) at words CW + 4 ..
//   Q6_K (64 weights) piece p (PPB 4): half h = p / 2, positions l0 = 16 (p & 1) .. l0 + 15
//                     of its four quarters: ql[64h + l0 ..] (words 0..3: quarters 0 and 2),
//                     ql[64h + 32 + l0 ..] (4..7: quarters 1 and 3), qh[32h + l0 ..] (8..11),
//                     the half's scales[8h .. 8h + 7] (12, 13), d as float bits (14)
// ------------------------------------------------------------------------------------------
// Q4_K / Q5_K: halves of a sub-block's 32 positions per piece (PB 16: 1, PB 32: 2).
const uint KHP = FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K ? (PB >= 32u ? 2u : 1u) : 1u;
const uint PPB = FORMAT == FMT_Q8_0 ? 32u / PB
               : FORMAT == FMT_Q4_0 ? 16u / PB
               : FORMAT == FMT_Q6_K ? 4u : 8u / KHP;
// Words of codes per field of a piece.
const uint CW = FORMAT <= FMT_Q4_0 ? PB / 4u : 4u * KHP;
// Words a piece holds, at most (Q5_K in pieces of 32 bytes: 20).
const uint RP = 20u;

// Q4_K / Q5_K: the sub-block pair c of piece p (sub-blocks 2c and 2c + 1) and its first half.
uint kpiece_pair(uint p) {
    return (p * KHP) >> 1;
}
uint kpiece_half(uint p) {
    return (p * KHP) & 1u;
}

// Piece p of block `blk` (its d the `di`th of the d binding) into r.
// A Q8_0 / Q4_0 piece's CW code words from word `first` of the bodies that the buffers'
// arrays B2 (uvec2) and B4 (uvec4) alias, into r[0 .. CW): piece_load's, and the second
// weight's of gemv_q_dot.glsl's GEMV_Q_DOT_GLU.
#define QUANT_CODE_WORDS(B2, B4, first, r)                    \
    {                                                         \
        const uint w0 = (first);                              \
        if (CW == 2u) {                                       \
            const uvec2 v = B2[w0 >> 1];                      \
            r[0] = v.x;                                       \
            r[1] = v.y;                                       \
        } else {                                              \
            [[unroll]] for (uint k = 0u; k < CW / 4u; k++) {  \
                const uvec4 v = B4[(w0 >> 2) + k];            \
                r[4u * k] = v.x;                              \
                r[4u * k + 1u] = v.y;                         \
                r[4u * k + 2u] = v.z;                         \
                r[4u * k + 3u] = v.w;                         \
            }                                                 \
        }                                                     \
    }

void piece_load(uint blk, uint di, uint p, out uint r[RP]) {
    [[unroll]] for (uint i = 0u; i < RP; i++) {
        r[i] = 0u;
    }
    if (FORMAT == FMT_Q8_0 || FORMAT == FMT_Q4_0) {
        QUANT_CODE_WORDS(wq2, wq4, blk * BODY_WORDS + CW * p, r)
        r[CW] = floatBitsToUint(quant_d(di));
    } else if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        const uint v0 = blk * (BODY_WORDS / 4u);  // the block's first uvec4
        [[unroll]] for (uint h = 0u; h < KHP; h++) {
            const uvec4 q = wq4[v0 + (FORMAT == FMT_Q4_K ? 1u : 3u) + KHP * p + h];
            r[4u * h] = q.x; r[4u * h + 1u] = q.y; r[4u * h + 2u] = q.z; r[4u * h + 3u] = q.w;
        }
        const uvec4 hd = wq4[v0];
        r[CW] = hd.x; r[CW + 1u] = hd.y; r[CW + 2u] = hd.z; r[CW + 3u] = hd.w;
        if (FORMAT == FMT_Q5_K) {
            [[unroll]] for (uint h = 0u; h < KHP; h++) {
                const uvec4 qh = wq4[v0 + 1u + kpiece_half(p) + h];
                const uint o = CW + 4u + 4u * h;
                r[o] = qh.x; r[o + 1u] = qh.y; r[o + 2u] = qh.z; r[o + 3u] = qh.w;
            }
        }
    } else {
        const uint v0 = blk * (BODY_WORDS / 4u), h = p >> 1, j = p & 1u;
        const uvec4 a = wq4[v0 + 4u * h + j];
        const uvec4 b = wq4[v0 + 4u * h + 2u + j];
        const uvec4 q = wq4[v0 + 8u + 2u * h + j];
        const uvec2 sc = wq2[blk * (BODY_WORDS / 2u) + 24u + h];
        r[0] = a.x; r[1] = a.y; r[2] = a.z; r[3] = a.w;
        r[4] = b.x; r[5] = b.y; r[6] = b.z; r[7] = b.w;
        r[8] = q.x; r[9] = q.y; r[10] = q.z; r[11] = q.w;
        r[12] = sc.x;
        r[13] = sc.y;
        r[14] = floatBitsToUint(quant_d(di));
    }
}

// Groups of 4 weights in a piece, and their element offsets inside the block.
const uint PIECE_GROUPS = FORMAT == FMT_Q8_0 ? CW : FORMAT == FMT_Q4_0 ? 2u * CW
                        : FORMAT == FMT_Q6_K ? 16u : 2u * CW;

// Element offset (inside its block) of group g of piece p: Q8_0 / Q4_0 groups k < CW are
// code word k (Q4_0: its low nibbles), Q4_0's CW + k its high nibbles; Q4_K / Q5_K groups
// 0 .. CW - 1 sub-block 2c, CW .. 2 CW - 1 sub-block 2c + 1 (word g % CW); Q6_K group 4k + w
// is quarter k, word w.
uint piece_pos(uint p, uint g) {
    if (FORMAT == FMT_Q8_0) {
        return PB * p + 4u * g;
    }
    if (FORMAT == FMT_Q4_0) {
        return g < CW ? PB * p + 4u * g : 16u + PB * p + 4u * (g - CW);
    }
    if (FORMAT == FMT_Q6_K) {
        return 128u * (p >> 1) + 32u * (g >> 2) + 16u * (p & 1u) + 4u * (g & 3u);
    }
    return 64u * kpiece_pair(p) + 32u * (g / CW) + 16u * kpiece_half(p) + 4u * (g % CW);
}

// Q6_K: the four 6-bit codes of quarter k, word w of a piece (bytes 0..63).
uint q6k_codes(uint r[RP], uint k, uint w) {
    const uint l = r[4u * (k & 1u) + w] >> (4u * (k >> 1));
    return (l & 0x0F0F0F0Fu) | (((r[8u + w] >> (2u * k)) & 0x03030303u) << 4);
}

// Q5_K: the four 5-bit codes of word w of a piece, sub-block 2c + hi.
uint q5k_codes(uint r[RP], uint c, uint hi, uint w) {
    return ((r[w] >> (4u * hi)) & 0x0F0F0F0Fu) |
           (((r[CW + 4u + w] >> (2u * c + hi)) & 0x01010101u) << 4);
}

// Group g of piece p, dequantized (the GEMVs' fields and positions; the dequantize kernel
// holds them to the CPU reference).
vec4 piece_values(uint r[RP], uint p, uint g) {
    if (FORMAT == FMT_Q8_0) {
        return uintBitsToFloat(r[CW]) * gemv_bytes(r[g] ^ 0x80808080u, 128.0);
    }
    if (FORMAT == FMT_Q4_0) {
        vec4 lo, hi;
        gemv_nibbles(r[g % CW], 8.0, lo, hi);
        return uintBitsToFloat(r[CW]) * (g < CW ? lo : hi);
    }
    if (FORMAT == FMT_Q4_K || FORMAT == FMT_Q5_K) {
        const uint c = kpiece_pair(p), hi = g / CW, w = g % CW;
        const vec4 sm = vec4(kscale_pair(uvec3(r[CW + 1u], r[CW + 2u], r[CW + 3u]), c));
        const float step = quant_half(r[CW] & 0xFFFFu) * sm[hi];
        const float offset = quant_half(r[CW] >> 16) * sm[2u + hi];
        const uint q = FORMAT == FMT_Q4_K ? (r[w] >> (4u * hi)) & 0x0F0F0F0Fu
                                          : q5k_codes(r, c, hi, w);
        return step * gemv_bytes(q, 0.0) - offset;
    }
    const uint k = g >> 2;
    const uint si = 2u * k + (p & 1u);  // scale index inside the half
    const float sc = float(bitfieldExtract(int(r[12u + si / 4u]), int(8u * (si & 3u)), 8));
    return (uintBitsToFloat(r[14]) * sc) * gemv_bytes(q6k_codes(r, k, g & 3u), 32.0);
}

#endif
