#version 450
// expert_residency: the expert cache's plan for one mixture layer and one batch, after the
// routing has written the batch's expert ids. The cache holds S slots of one layer's experts
// in device-local memory; the layer's whole stack of E experts stays in the pool. One
// invocation plans (the work is a few passes over E <= 256 experts and the batch's pairs), so
// the choices are the same on every device.
//
// For each expert the batch names: resident, a hit (its slot's last use becomes this batch's
// clock); not resident, a miss, which takes the slot used least recently that this batch does
// not use (empty slots first), is listed for the copy (expert_copy.comp) and counted; where
// every slot is this batch's, the expert is read from the pool in place. Each pair's id is then
// rewritten as a virtual id: the slot (0..S-1) of a resident expert, S + e for expert e read
// from the pool, -1 for an id outside [0, E) (which the expert GEMVs leave alone).
//
// State (i32, one layer's): [0] clock, [1] hits, [2] misses, [3] pool reads (experts a batch
// read in place), [4] the copies this batch listed, [5, 5 + S) those copies (entry i: expert
// << 16 | slot), then E slot_of (slot or -1), S owners (expert or -1) and S last uses (the clock
// of the slot's last batch; 0: never). All zero but slot_of and owners (-1) at the start.
//
//   specialization constants: 0 workgroup size (1: one invocation plans)
//   set 0: 0 ids [pairs] i32, 1 state i32 (read and written), 2 virtual ids [pairs] i32
//     (written)
//   push constants: pairs, E (1..256), S (1..E)

layout(local_size_x_id = 0, local_size_x = 1) in;

layout(std430, set = 0, binding = 0) restrict readonly buffer BufI { int ids[]; };
layout(std430, set = 0, binding = 1) restrict buffer BufS { int state[]; };
layout(std430, set = 0, binding = 2) restrict writeonly buffer BufV { int vids[]; };

layout(push_constant) uniform Push {
    uint pairs, E, S;
} pc;

const uint MAX_E = 256u;
const uint CLOCK = 0u, HITS = 1u, MISSES = 2u, POOL_READS = 3u, COPIES = 4u;

// Per expert: whether the batch names it, then its virtual id.
shared int vmap[MAX_E];

void main() {
    const uint copies = COPIES + 1u, slot_of = copies + pc.S, owner = slot_of + pc.E,
               last = owner + pc.S;
    for (uint e = 0u; e < pc.E; e++) {
        vmap[e] = 0;
    }
    for (uint p = 0u; p < pc.pairs; p++) {
        const uint e = uint(ids[p]);  // a negative id wraps past E
        if (e < pc.E) {
            vmap[e] = 1;
        }
    }
    const int now = state[CLOCK] + 1;
    state[CLOCK] = now;
    int hits = 0, misses = 0, pool = 0;
    // Hits first: their slots are this batch's before any victim is chosen.
    for (uint e = 0u; e < pc.E; e++) {
        const int s = state[slot_of + e];
        if (vmap[e] != 0 && s >= 0) {
            state[last + uint(s)] = now;
            vmap[e] = s + 1;
            hits++;
        }
    }
    for (uint e = 0u; e < pc.E; e++) {
        if (vmap[e] != 1 || state[slot_of + e] >= 0) {
            continue;  // not named, or a hit (a hit in slot 0 is also 1: resident)
        }
        int victim = -1, oldest = now;
        for (uint s = 0u; s < pc.S; s++) {
            const int used = state[last + s];
            if (used < oldest) {
                oldest = used;
                victim = int(s);
            }
        }
        if (victim < 0) {
            vmap[e] = int(pc.S + e) + 1;
            pool++;
            continue;
        }
        const int previous = state[owner + uint(victim)];
        if (previous >= 0) {
            state[slot_of + uint(previous)] = -1;
        }
        state[owner + uint(victim)] = int(e);
        state[slot_of + e] = victim;
        state[last + uint(victim)] = now;
        state[copies + uint(misses)] = int(e << 16u) | victim;
        vmap[e] = victim + 1;
        misses++;
    }
    state[HITS] += hits;
    state[MISSES] += misses;
    state[POOL_READS] += pool;
    state[COPIES] = misses;
    for (uint p = 0u; p < pc.pairs; p++) {
        const uint e = uint(ids[p]);
        vids[p] = e < pc.E ? vmap[e] - 1 : -1;
    }
}
