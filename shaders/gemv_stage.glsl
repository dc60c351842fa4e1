// gemv_stage.glsl: the GEMV kernels' path for the formats whose blocks lie at 2-aligned
// offsets (Q8_0, Q4_0, Q6_K: QUANT_WORD_LOADS). Loaded straight from memory, an invocation's
// lane is a run of scalar words 18 to 210 bytes away from its neighbour's, so one load
// instruction of a subgroup touches as many cache lines as it has invocations. Instead, a row
// group copies the bytes of the next STAGE_BLOCKS blocks of each of its rows into shared
// memory, consecutive invocations reading consecutive words (one cache line per 32 of them),
// and each invocation then picks its lane's words out of shared memory.
//
// The including shader declares, before including this file and after quant.glsl:
//   T (invocations per row group), NR (rows per row group), `shared uint smem[]` with at
//   least GROUPS * NR * STAGE_WORDS words, and STAGE_BLOCKS / STAGE_WORDS (stage_words()).
#ifndef GEMV_STAGE_GLSL
#define GEMV_STAGE_GLSL

// Copy `bytes` bytes from byte `first` of the weights into slot `slot` of smem: the words
// that hold them, invocation t taking words t, t + T, ...
void stage_copy(uint slot, uint first, uint bytes, uint t) {
    const uint w0 = first >> 2;
    const uint count = ((first + bytes + 3u) >> 2) - w0;
    for (uint i = t; i < count; i += T) {
        smem[slot * STAGE_WORDS + i] = quant_word(w0 + i);
    }
}

// quant_load(s, j) for a block that slot `slot` holds, the slot's copy starting at byte
// `first`.
QuantRaw quant_load_staged(uint slot, uint first, uint s, uint j) {
    QuantRaw r;
    r.v[0] = uvec4(0u); r.v[1] = uvec4(0u); r.v[2] = uvec4(0u); r.v[3] = uvec4(0u);
    const uint rel = s - (first & ~3u);  // keeps s's alignment: (rel & 3) == (s & 3)
    [[unroll]] for (uint i = 0u; i < RAW_WORDS; i++) {
        r.v[i >> 2][i & 3u] = smem[slot * STAGE_WORDS + ((rel + quant_raw_rel(j, i)) >> 2)];
    }
    return r;
}

#endif
