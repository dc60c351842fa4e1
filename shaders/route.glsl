// route.glsl: a mixture of experts' choice of experts, shared by moe_route_f32.comp and
// norm_q8_f32.comp's ROUTE. The k experts of the largest logits are chosen (an exact tie goes
// to the lower index); choosing by the logits is choosing by the softmax's probabilities
// exactly (exp is increasing), with no tie that rounding the probabilities could make. Logits
// are compared as ordered integers: -0 as +0, NaN below every number (a row of NaN still names
// k distinct experts in range).
#ifndef ROUTE_GLSL
#define ROUTE_GLSL

const uint ROUTE_MAX_E = 256u;
const uint ROUTE_MAX_K = 16u;

// 0: no candidate; 1: NaN; numbers in their order from 2 up (-0 and +0 alike).
uint route_key(float v) {
    if (isnan(v)) {
        return 1u;
    }
    const uint b = v == 0.0 ? 0x80000000u : floatBitsToUint(v);
    const uint k = (b & 0x80000000u) != 0u ? ~b : b | 0x80000000u;
    return max(k, 2u);
}

// Whether candidate (ka, ia) beats (kb, ib): a larger key, or the same key at a lower index.
bool route_beats(uint ka, uint ia, uint kb, uint ib) {
    return ka > kb || (ka == kb && ia < ib);
}

#ifdef ROUTE_SERIAL
// The logits of route_serial's row, written by the includer.
shared float route_l[ROUTE_SERIAL];

// One invocation's choice among the E logits route_l[0..E) (E <= ROUTE_SERIAL, k <=
// ROUTE_MAX_K): route_ids[o + j] and route_weights[o + j] for j < k (the includer's buffers),
// in the order chosen, the weights the softmax's probabilities (exp(l - max) / the sum over all
// E, in index order) or, with norm, those renormalised over the chosen k (in the order chosen).
void route_serial(uint E, uint k, bool norm, uint o) {
    uint taken[(ROUTE_SERIAL + 31u) / 32u];
    [[unroll]] for (uint i = 0u; i < (ROUTE_SERIAL + 31u) / 32u; i++) {
        taken[i] = 0u;
    }
    uint sel[ROUTE_MAX_K];
    for (uint j = 0u; j < k; j++) {
        uint bk = 0u, bi = 0xFFFFFFFFu;
        for (uint e = 0u; e < E; e++) {
            const bool gone = (taken[e / 32u] >> (e % 32u) & 1u) != 0u;
            const uint key = gone ? 0u : route_key(route_l[e]);
            if (route_beats(key, e, bk, bi)) {
                bk = key;
                bi = e;
            }
        }
        sel[j] = bi;
        taken[bi / 32u] |= 1u << (bi % 32u);
    }
    const float lmax = route_l[sel[0]];
    float total = 0.0;
    if (norm) {
        for (uint j = 0u; j < k; j++) {
            total += exp(route_l[sel[j]] - lmax);
        }
    } else {
        for (uint e = 0u; e < E; e++) {
            total += exp(route_l[e] - lmax);
        }
    }
    for (uint j = 0u; j < k; j++) {
        route_ids[o + j] = int(sel[j]);
        route_weights[o + j] = exp(route_l[sel[j]] - lmax) / total;
    }
}
#endif

#endif
