#version 450
// sample_f32: one token chosen from a row of logits per workgroup, as src/engine/sampler.c
// chooses it on the host (motifcl.h, mcl_sampler_desc):
//
//   1. the penalized tokens into a hash table in shared memory, whose entries each read of a
//      logit applies (the row itself is only read);
//   2. greedy (temperature <= 0): the largest logit, the lowest id of equals;
//   3. a threshold on the logit that only the kept tokens reach: top-k's k-th largest logit
//      (a radix select over order-preserving keys, 8 bits a round), min-p's
//      max + T ln(min_p), and top-p's largest cut whose kept probability mass (over the top-k
//      tokens) reaches top_p (a search over the keys, seven cuts weighed a pass). Tokens equal
//      to a cut are kept;
//   4. the draw: the largest (l - max) / T + G among the kept tokens, with G a Gumbel variate
//      of the row's key and the token id (sampler.c's gumbel), the lowest id of equals.
//
// The top-p search runs over the candidates copied into shared memory where they fit,
// else over the whole row. Every sum is folded in a fixed order: the same row, parameters
// and key give the same token.
//
//   constant 0     : workgroup size, at most MCL_REDUCE_MAX_WG
//   constant 1     : MCL_USE_SUBGROUP (reduce.glsl)
//   set 0 binding 0: logits (readonly float[]) [rows, vocab]
//   set 0 binding 1: params (readonly uint[]) [workgroups, stride]: per workgroup, the row
//                    of logits, top_k, then as float bits temperature, top_p, min_p,
//                    repeat_penalty, frequency_penalty, presence_penalty; the key; the count
//                    n of penalized tokens; at word 16, n pairs (token, times seen)
//   set 0 binding 2: tokens (writeonly int[]) [workgroups]
//   push constants : { uint vocab; uint stride; }
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer BufLogits { float logits[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufParams { uint params[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufTokens { int tokens[]; };

layout(push_constant) uniform Push {
    uint vocab;
    uint stride;
} pc;

#include "reduce.glsl"
#include "hash.glsl"

// Candidates held in shared memory for the top-p search and the draw. The kernel's shared
// memory stays under the 16 KiB every device has.
#define CAND (2 * MCL_REDUCE_MAX_WG)

shared uint s_u[MCL_REDUCE_MAX_WG];
shared uint hist[256];
shared uint pick[2];
shared uint c_key[CAND];
shared float c_w[CAND];
shared uint c_id[CAND];
// The penalized tokens: open addressing, token + 1 as the key (0: empty), with its count.
#define PEN_SLOTS 512u
shared uint pen_key[PEN_SLOTS];
shared uint pen_count[PEN_SLOTS];

uint pen_slot(uint t) {
    return (t * 0x9E3779B1u) >> 23;
}

// Order-preserving key of a float: a larger value, a larger key.
uint okey(float f) {
    const uint u = floatBitsToUint(f);
    return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

uint wg_max_u(uint v) {
    uint r = 0u;
    if (MCL_USE_SUBGROUP) {
        const uint part = subgroupMax(v);
        if (subgroupElect()) {
            s_u[gl_SubgroupID] = part;
        }
        barrier();
        for (uint k = 0u; k < gl_NumSubgroups; k++) {
            r = max(r, s_u[k]);
        }
    } else {
        const uint i = gl_LocalInvocationID.x;
        s_u[i] = v;
        barrier();
        for (uint s = mcl_tree_start(); s > 0u; s >>= 1) {
            if (i < s && i + s < gl_WorkGroupSize.x) {
                s_u[i] = max(s_u[i], s_u[i + s]);
            }
            barrier();
        }
        r = s_u[0];
    }
    barrier();
    return r;
}

uint wg_min_u(uint v) {
    return 0xffffffffu - wg_max_u(0xffffffffu - v);
}

// Seven sums over the workgroup at once, in every invocation (mcl_wg_sum's order), through
// each subgroup's partial (subgroups of 4 invocations or more).
#define RED7_SUBGROUPS (MCL_REDUCE_MAX_WG / 4)
shared float red7[7u * RED7_SUBGROUPS];
void wg_sum7(inout float v[7]) {
    if (MCL_USE_SUBGROUP && gl_NumSubgroups <= RED7_SUBGROUPS) {
        [[unroll]] for (uint c = 0u; c < 7u; c++) {
            v[c] = subgroupAdd(v[c]);
        }
        if (subgroupElect()) {
            [[unroll]] for (uint c = 0u; c < 7u; c++) {
                red7[c * RED7_SUBGROUPS + gl_SubgroupID] = v[c];
            }
        }
        barrier();
        [[unroll]] for (uint c = 0u; c < 7u; c++) {
            float total = 0.0;
            for (uint k = 0u; k < gl_NumSubgroups; k++) {
                total += red7[c * RED7_SUBGROUPS + k];
            }
            v[c] = total;
        }
        barrier();
    } else {
        [[unroll]] for (uint c = 0u; c < 7u; c++) {
            v[c] = mcl_wg_sum(v[c]);
        }
    }
}

// The exclusive prefix sum of v over the invocations in order, and the total.
uint wg_scan(uint v, out uint total) {
    const uint i = gl_LocalInvocationID.x;
    s_u[i] = v;
    barrier();
    if (i == 0u) {
        uint acc = 0u;
        for (uint k = 0u; k < gl_WorkGroupSize.x; k++) {
            const uint c = s_u[k];
            s_u[k] = acc;
            acc += c;
        }
        pick[0] = acc;
    }
    barrier();
    const uint r = s_u[i];
    total = pick[0];
    barrier();
    return r;
}

// The Gumbel variate of token t under key: -ln E, with E = -ln u the exponential variate of
// u = (23 bits of the hash + 0.5) / 2^23, through a series where u is near 1 (sampler.c).
float gumbel(uint key, uint t) {
    const uint h = mcl_hash(mcl_hash(t) ^ key);
    const float u = (float(h >> 9) + 0.5) * (1.0 / 8388608.0);
    const float e = 1.0 - u;
    float x;
    if (e < 0.125) {
        x = e * (1.0 + e * (1.0 / 2.0 + e * (1.0 / 3.0 + e * (1.0 / 4.0 + e * (1.0 / 5.0 +
            e * (1.0 / 6.0 + e * (1.0 / 7.0 + e * (1.0 / 8.0))))))));
    } else {
        x = -log(u);
    }
    return -log(x);
}

// Token t's logit of the row at `src`, penalized where the table holds it.
float logit(uint src, uint t, uint penalized, float repeat, float frequency, float presence) {
    float l = logits[src + t];
    if (penalized != 0u) {
        for (uint h = pen_slot(t);; h = (h + 1u) & (PEN_SLOTS - 1u)) {
            const uint k = pen_key[h];
            if (k == 0u) {
                break;
            }
            if (k == t + 1u) {
                if (repeat != 1.0) {
                    l = l > 0.0 ? l / repeat : l * repeat;
                }
                l -= float(pen_count[h]) * frequency + presence;
                break;
            }
        }
    }
    return l;
}

void main() {
    const uint lid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x, V = pc.vocab;
    const uint row = gl_WorkGroupID.x, P = row * pc.stride;
    const uint src = params[P] * V;
    const uint top_k = params[P + 1u];
    const float temp = uintBitsToFloat(params[P + 2u]);
    const float top_p = uintBitsToFloat(params[P + 3u]);
    const float min_p = uintBitsToFloat(params[P + 4u]);
    const float repeat = uintBitsToFloat(params[P + 5u]);
    const float frequency = uintBitsToFloat(params[P + 6u]);
    const float presence = uintBitsToFloat(params[P + 7u]);
    const uint key = params[P + 8u], penalized = params[P + 9u];
#define LOGIT(t) logit(src, t, penalized, repeat, frequency, presence)

    for (uint i = lid; i < PEN_SLOTS; i += WG) {
        pen_key[i] = 0u;
    }
    barrier();
    for (uint i = lid; i < penalized; i += WG) {
        const uint t = params[P + 16u + 2u * i];
        for (uint h = pen_slot(t);; h = (h + 1u) & (PEN_SLOTS - 1u)) {
            if (atomicCompSwap(pen_key[h], 0u, t + 1u) == 0u) {
                pen_count[h] = params[P + 17u + 2u * i];
                break;
            }
        }
    }
    barrier();
    // The largest logit, the lowest id of equals (each invocation's ids rise).
    uint bk = 0u, bi = 0xffffffffu;
    for (uint t = lid; t < V; t += WG) {
        const uint k = okey(LOGIT(t));
        if (k > bk || bi == 0xffffffffu) {
            bk = k;
            bi = t;
        }
    }
    const uint maxk = wg_max_u(bk);
    const uint best = wg_min_u(bk == maxk ? bi : 0xffffffffu);
    if (!(temp > 0.0)) {
        if (lid == 0u) {
            tokens[row] = int(best);
        }
        return;
    }
    const float m = LOGIT(best);
    const float inv_t = 1.0 / temp;

    // top-k: the k-th largest key, 8 bits a round from the top.
    uint thr_k = 0u;
    if (top_k > 0u && top_k < V) {
        uint prefix = 0u, mask = 0u, remaining = top_k;
        for (int d = 3; d >= 0; d--) {
            const uint shift = uint(d) * 8u;
            for (uint i = lid; i < 256u; i += WG) {
                hist[i] = 0u;
            }
            barrier();
            for (uint t = lid; t < V; t += WG) {
                const uint k = okey(LOGIT(t));
                if ((k & mask) == prefix) {
                    atomicAdd(hist[(k >> shift) & 255u], 1u);
                }
            }
            barrier();
            if (lid == 0u) {
                uint b = 255u;
                for (;;) {
                    const uint c = hist[b];
                    if (remaining <= c || b == 0u) {
                        break;
                    }
                    remaining -= c;
                    b--;
                }
                pick[0] = b;
                pick[1] = remaining;
            }
            barrier();
            prefix |= pick[0] << shift;
            mask |= 255u << shift;
            remaining = pick[1];
            barrier();
        }
        thr_k = prefix;
    }
    uint thr = thr_k;
    if (min_p > 0.0) {
        thr = max(thr, min(okey(m + temp * log(min_p)), maxk));
    }

    // The candidates (keys at or above thr) into shared memory where they fit, in the order
    // of the invocations and their ids.
    uint own = 0u;
    for (uint t = lid; t < V; t += WG) {
        own += okey(LOGIT(t)) >= thr ? 1u : 0u;
    }
    uint count;
    uint at = wg_scan(own, count);
    const bool held = count <= CAND;
    if (held) {
        for (uint t = lid; t < V; t += WG) {
            const float l = LOGIT(t);
            const uint k = okey(l);
            if (k >= thr) {
                c_key[at] = k;
                c_w[at] = exp((l - m) * inv_t);
                c_id[at] = t;
                at++;
            }
        }
        barrier();
    }

    if (top_p > 0.0 && top_p < 1.0) {
        // The mass of the top-k tokens, then the largest cut whose mass reaches top_p of it.
        float z = 0.0;
        for (uint t = lid; t < V; t += WG) {
            const float l = LOGIT(t);
            z += okey(l) >= thr_k ? exp((l - m) * inv_t) : 0.0;
        }
        const float target = top_p * mcl_wg_sum(z);
        // Invariant: the mass at or above lo reaches target, above hi it does not. Each round
        // weighs seven cuts between them in one pass and keeps the eighth of the range where
        // the mass crosses target: eleven passes for 32-bit keys.
        uint lo = thr, hi = maxk;
        bool reach = false;
        {
            float s = 0.0;
            if (held) {
                for (uint j = lid; j < count; j += WG) {
                    s += c_w[j];
                }
            } else {
                for (uint t = lid; t < V; t += WG) {
                    const float l = LOGIT(t);
                    s += okey(l) >= lo ? exp((l - m) * inv_t) : 0.0;
                }
            }
            // Below target even at thr: the cut lies under thr, which then decides.
            reach = mcl_wg_sum(s) >= target;
        }
        while (reach && lo < hi) {
            const uint span = hi - lo, step = span / 8u + 1u;
            float part[7];
            [[unroll]] for (uint c = 0u; c < 7u; c++) {
                part[c] = 0.0;
            }
            if (held) {
                for (uint j = lid; j < count; j += WG) {
                    if (c_key[j] >= lo) {
                        const uint above = c_key[j] - lo;
                        [[unroll]] for (uint c = 0u; c < 7u; c++) {
                            part[c] += above >= (c + 1u) * step ? c_w[j] : 0.0;
                        }
                    }
                }
            } else {
                for (uint t = lid; t < V; t += WG) {
                    const float l = LOGIT(t);
                    const uint k = okey(l);
                    if (k >= lo) {
                        const float w = exp((l - m) * inv_t);
                        [[unroll]] for (uint c = 0u; c < 7u; c++) {
                            part[c] += k - lo >= (c + 1u) * step ? w : 0.0;
                        }
                    }
                }
            }
            wg_sum7(part);
            uint next_lo = lo, next_hi = hi;
            for (uint c = 0u; c < 7u; c++) {
                const uint off = (c + 1u) * step;
                if (off > span) {
                    break;
                }
                if (part[c] >= target) {
                    next_lo = lo + off;
                } else {
                    next_hi = lo + off - 1u;
                    break;
                }
            }
            lo = next_lo;
            hi = next_hi;
        }
        thr = lo;
    }

    // The draw: the best of (l - max) / T + G over the kept tokens.
    uint sk = 0u, si = 0xffffffffu;
    if (held) {
        for (uint j = lid; j < count; j += WG) {
            if (c_key[j] >= thr) {
                const uint t = c_id[j];
                const uint k = okey((LOGIT(t) - m) * inv_t + gumbel(key, t));
                if (k > sk || (k == sk && t < si)) {
                    sk = k;
                    si = t;
                }
            }
        }
    } else {
        for (uint t = lid; t < V; t += WG) {
            const float l = LOGIT(t);
            if (okey(l) >= thr) {
                const uint k = okey((l - m) * inv_t + gumbel(key, t));
                if (k > sk || si == 0xffffffffu) {
                    sk = k;
                    si = t;
                }
            }
        }
    }
    const uint top = wg_max_u(sk);
    const uint chosen = wg_min_u(sk == top ? si : 0xffffffffu);
    if (lid == 0u) {
        tokens[row] = int(chosen);
    }
}
