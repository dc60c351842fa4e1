// route.glsl: a mixture of experts' routing of one row of router logits by a workgroup, shared
// by moe_route_f32.comp and moe_router_f32.comp: the k experts of the largest logits (an exact
// tie goes to the lower index), and their weights, the softmax's probabilities (exp(l - max) /
// sum over all E) or, with norm, those renormalised over the chosen k (exp(l - max) / sum over
// the chosen). Choosing by the logits is choosing by the probabilities exactly (exp is
// increasing), with no tie that rounding the probabilities could make.
//
// Fixed order: each lane takes entries t, t + WG, ... of the row (E <= 256), reduces them in
// that order, and the lanes' results meet in shared memory in a tree over lane indices; the
// sum of the chosen weights is taken in slot order. No subgroup size is assumed.
//
// Logits are compared as ordered integers: -0 as +0, NaN below every number (a row of NaN still
// names k distinct experts in range).
//
// The includer declares, after its `layout(local_size_x_id = 0) in;` (WG lanes, a power of
// two), a macro ROUTE_LOGIT(e) that reads the row's logit e, and the buffers `int ids[]` and
// `float weights[]` that route_row writes.
#ifndef ROUTE_GLSL
#define ROUTE_GLSL

const uint WG = gl_WorkGroupSize.x;
const uint MAX_E = 256u;
const uint MAX_K = 16u;
const uint PER = (MAX_E + WG - 1u) / WG;  // entries per lane

shared uint sh_key[WG];
shared uint sh_idx[WG];
shared float sh_sum[WG];
shared uint sh_sel[MAX_K];

// 0: no candidate; 1: NaN; numbers in their order from 2 up (-0 and +0 alike).
uint order_key(float v) {
    if (isnan(v)) {
        return 1u;
    }
    const uint b = v == 0.0 ? 0x80000000u : floatBitsToUint(v);
    const uint k = (b & 0x80000000u) != 0u ? ~b : b | 0x80000000u;
    return max(k, 2u);
}

// Whether candidate (ka, ia) beats (kb, ib): a larger key, or the same key at a lower index.
bool beats(uint ka, uint ia, uint kb, uint ib) {
    return ka > kb || (ka == kb && ia < ib);
}

// The row's choice of k of its E logits, by the whole workgroup (every lane calls it): ids[o +
// j] and weights[o + j] for the j-th chosen.
void route_row(uint E, uint k, bool norm, uint o) {
    const uint t = gl_LocalInvocationID.x;
    // The trees span the lanes that hold entries (the power of two at or above E, at most
    // WG): past them every lane holds none (key 0, sum 0), so they would change nothing.
    uint span = 1u;
    while (span < E && span < WG) {
        span <<= 1;
    }
    float l[PER];
    uint key[PER];
    [[unroll]] for (uint i = 0u; i < PER; i++) {
        const uint e = t + i * WG;
        l[i] = e < E ? ROUTE_LOGIT(e) : 0.0;
        key[i] = e < E ? order_key(l[i]) : 0u;
    }
    // k rounds: the best candidate left, found by a tree, then taken out.
    for (uint j = 0u; j < k; j++) {
        uint bk = 0u, bi = 0xFFFFFFFFu;
        [[unroll]] for (uint i = 0u; i < PER; i++) {
            if (beats(key[i], t + i * WG, bk, bi)) {
                bk = key[i];
                bi = t + i * WG;
            }
        }
        sh_key[t] = bk;
        sh_idx[t] = bi;
        barrier();
        for (uint s = span / 2u; s > 0u; s >>= 1) {
            if (t < s && beats(sh_key[t + s], sh_idx[t + s], sh_key[t], sh_idx[t])) {
                sh_key[t] = sh_key[t + s];
                sh_idx[t] = sh_idx[t + s];
            }
            barrier();
        }
        const uint best = sh_idx[0];
        if (t == 0u) {
            sh_sel[j] = best;
        }
        [[unroll]] for (uint i = 0u; i < PER; i++) {
            key[i] = t + i * WG == best ? 0u : key[i];
        }
        barrier();  // sh_idx[0] read by every lane before the next round writes it
    }
    // The softmax's denominator: exp(l - max) over the row, max being the first choice.
    const float lmax = ROUTE_LOGIT(sh_sel[0]);
    float part = 0.0;
    [[unroll]] for (uint i = 0u; i < PER; i++) {
        part += t + i * WG < E ? exp(l[i] - lmax) : 0.0;
    }
    sh_sum[t] = part;
    barrier();
    for (uint s = span / 2u; s > 0u; s >>= 1) {
        if (t < s) {
            sh_sum[t] += sh_sum[t + s];
        }
        barrier();
    }
    if (t < k) {
        float total = sh_sum[0];
        if (norm) {
            total = 0.0;
            for (uint j = 0u; j < k; j++) {
                total += exp(ROUTE_LOGIT(sh_sel[j]) - lmax);
            }
        }
        const uint e = sh_sel[t];
        ids[o + t] = int(e);
        weights[o + t] = exp(ROUTE_LOGIT(e) - lmax) / total;
    }
}

#endif
