#version 450
// embedding_backward_f32: dtable[v, :] = sum of dout[r, :] over the rows r with ids[r] == v, in
// increasing r, without atomics. Workgroup w owns table rows [w * block, (w + 1) * block)
// (grid-stride over blocks past the dispatch): it zeroes them, then scans every id in order,
// a chunk of WG ids at a time through shared memory, and adds the dout row of each id in its
// block. Invocation tid owns columns tid, tid + WG, ...: every element of dtable has one
// owner that adds its terms in increasing r, so repeated ids give the same bits every run.
// An id outside [0, V) lies in no block and contributes nothing.
//
// Work: zeroing V * D, adding R * D, and each workgroup reads all R ids once (nblocks * R id
// reads in all) and compacts each chunk's matches with a log2(WG)-step prefix sum, so the
// host keeps nblocks modest.
//
//   workgroup size : specialization constant 0 (at most 256)
//   set 0 binding 0: ids    (readonly int[],   [R])
//   set 0 binding 1: dout   (readonly float[], [R, D])
//   set 0 binding 2: dtable (float[], [V, D]); each element read and written by its owner only
//   push constants : { uint rows; uint dim; uint vocab; uint block; uint nblocks; }
layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer BufIds { int ids[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufDout { float dout[]; };
layout(std430, set = 0, binding = 2) buffer BufTable { float dtable[]; };

layout(push_constant) uniform Push {
    uint rows, dim, vocab;
    uint block;    // table rows per workgroup
    uint nblocks;  // ceil(vocab / block)
} pc;

const uint WG = gl_WorkGroupSize.x;
shared int chunk_ids[WG];
shared uint slot[WG];   // match flags, then their inclusive prefix sum
shared uint list[WG];   // the chunk's matching positions, in increasing order

void main() {
    const uint tid = gl_LocalInvocationID.x;
    // Uniform in the workgroup: blk depends on the workgroup id only.
    for (uint blk = gl_WorkGroupID.x; blk < pc.nblocks; blk += gl_NumWorkGroups.x) {
        const uint v0 = blk * pc.block;
        const uint v1 = min(v0 + pc.block, pc.vocab);
        for (uint v = v0; v < v1; v++) {
            for (uint d = tid; d < pc.dim; d += WG) {
                dtable[v * pc.dim + d] = 0.0;
            }
        }
        for (uint r0 = 0u; r0 < pc.rows; r0 += WG) {
            // The previous chunk (or block) must be read by all before it is overwritten.
            barrier();
            const int id = r0 + tid < pc.rows ? ids[r0 + tid] : -1;
            // As int first: a negative id must not become a large uint in range.
            const bool match = id >= 0 && uint(id) >= v0 && uint(id) < v1;
            chunk_ids[tid] = id;
            slot[tid] = match ? 1u : 0u;
            barrier();
            // Inclusive prefix sum of the match flags (Hillis-Steele): the matches of this
            // chunk compacted in increasing row order, so the loop below visits only them and
            // in a fixed order. log2(WG) steps instead of WG iterations per invocation.
            for (uint off = 1u; off < WG; off *= 2u) {
                const uint add = tid >= off ? slot[tid - off] : 0u;
                barrier();
                slot[tid] += add;
                barrier();
            }
            const uint matches = slot[WG - 1u];
            if (match) {
                list[slot[tid] - 1u] = tid;
            }
            barrier();
            for (uint k = 0u; k < matches; k++) {
                const uint j = list[k];
                const uint dst = uint(chunk_ids[j]) * pc.dim;
                const uint src = (r0 + j) * pc.dim;
                for (uint d = tid; d < pc.dim; d += WG) {
                    dtable[dst + d] += dout[src + d];
                }
            }
            if (pc.rows - r0 <= WG) {
                break;
            }
        }
    }
}
