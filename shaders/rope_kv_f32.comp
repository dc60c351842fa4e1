#version 450
// rope_kv_f32: the position-dependent half of a recorded decode step, for rows of one token
// each: RoPE on a row's q heads in place, RoPE on its k heads written into the key cache of
// its sequence at its position, and its v heads copied into the value cache there. Positions
// and sequences are read from a buffer the host writes before each replay (ids[pos_slot + r],
// ids[seq_slot + r]), so the recorded step serves every position. Each pair's frequency
// comes from a table (mcl_rope_table_values), and the angle is reduced as rope_table_f32's
// (rope.glsl). One invocation per rotated pair or per two copied values; pairs are
// (i, i + Dh / 2) when split_half, else (2i, 2i + 1).
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: k    [rows, Hkv, Dh] (readonly float[])
//   set 0 binding 1: v    [rows, Hkv, Dh] (readonly float[])
//   set 0 binding 2: freq (readonly vec2[Dh / 2]): pair i's turns per position, hi + lo
//   set 0 binding 3: ids  (readonly uint[]): row r's position at ids[pos_slot + r], its
//                    sequence at ids[seq_slot + r] (sequence 0 for all when seq_slot is ~0)
//   set 0 binding 4: q    [rows, Hq, Dh] (float[]): rotated in place
//   set 0 binding 5: kc   [sequences, S, Hkv, Dh] (writeonly float[]): the key caches
//   set 0 binding 6: vc   [sequences, S, Hkv, Dh] (writeonly float[]): the value caches
//   push constants : see Push; rows row0 .. row0 + count - 1 are done, one invocation per
//                    pair or value pair of a row, rows along y
#extension GL_GOOGLE_include_directive : require
#include "rope_kv.glsl"
