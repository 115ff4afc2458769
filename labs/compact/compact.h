// Provided by the kit: do not edit. The interface of the compact lab.
//
// compact keeps the elements of an array that satisfy a predicate, in their original
// order; expand (lecture 7's "generalised compact") writes each element a given number
// of times. Both are a map, an exclusive scan and a scatter. The functions take device
// pointers and return their count on the host. The further part, worklist_push and
// worklist_take, builds and drains worklists with atomicInc and atomicDec.
// Handout: handouts/compact.md.
#pragma once

#include <cuda_runtime.h>  // defines __host__ and __device__ for the host compiler too

/// The predicate of compact: true for the elements compact keeps, those greater than
/// zero (0 and negative values are dropped). Callable from host and device code, so the
/// CPU version, your kernels and the bench's library call all use the same rule.
__host__ __device__ inline bool compact_keep(int x) { return x > 0; }

/// Copies the elements of in[0, n) for which compact_keep() is true to out[0, count),
/// keeping their order (stable), and returns count on the host. in and out are device
/// pointers that do not overlap; the caller guarantees that out has room for n ints
/// (count <= n). out[count, n) is left untouched. 0 <= n < 2^31; n = 0 returns 0 and
/// writes nothing. The work runs on the default stream, so out is complete for anything
/// the caller does next on that stream; the count has to come back to the host, so the
/// function waits for the GPU at least until the count is known.
int compact(const int* in, int* out, int n);

/// Generalised compact: writes in[i] counts[i] times, for i = 0 .. n-1 in order, to
/// out[0, total) and returns total = counts[0] + … + counts[n-1] on the host. in,
/// counts and out are device pointers; out does not overlap in or counts. The caller
/// guarantees counts[i] >= 0, total < 2^31 and room for total ints in out; nothing past
/// out[total - 1] is written. n = 0 (or total = 0) returns 0 and writes nothing. As for
/// compact: default stream, and the function waits for the GPU until total is known.
int expand(const int* in, const int* counts, int* out, int n);

/// The sequential compact on the CPU (host pointers): map, exclusive scan and scatter
/// done one after the other, as in the lecture. Returns the count. The golden result.
int compact_cpu(const int* in, int* out, int n);

/// The sequential generalised compact on the CPU (host pointers). Returns the total.
int expand_cpu(const int* in, const int* counts, int* out, int n);

/// The map step of compact on the CPU: flags[i] = 1 where compact_keep(in[i]), else 0.
void compact_flags_cpu(const int* in, int* flags, int n);

/// Exclusive sum scan on the CPU: out[i] = in[0] + … + in[i-1] (out[0] = 0); returns the
/// sum of all n inputs. With the flags of compact, out[i] is the address of a kept in[i].
int exclusive_sum_cpu(const int* in, int* out, int n);

// ---- Further part: worklists (handout: "Further part: worklists, atomicInc and atomicDec")
//
// The hardware's wrap-around counters, as CUDA defines them (old: the value *address held):
//   atomicInc(address, limit) stores (old >= limit) ? 0 : old + 1 and returns old;
//   atomicDec(address, limit) stores (old == 0 || old > limit) ? limit : old - 1 and returns old.

/// Further part: an unordered compact into a ring buffer, the way a graph algorithm pushes
/// the nodes that need work onto a worklist. Every in[i] (0 <= i < n) with compact_keep(in[i])
/// is pushed into ring[0, capacity): its thread takes a slot s = atomicInc(tail, capacity - 1)
/// (the value *tail held; *tail moves on by one and wraps from capacity - 1 back to 0) and
/// writes ring[s] = in[i]. So the k kept elements land, in some order, in the k slots
/// *tail, *tail + 1, … counted modulo capacity from the value *tail held on entry, and on
/// return *tail holds (that value + k) % capacity; no other slot is written, and which kept
/// element gets which of those slots is up to the hardware. `in`, `ring` and `tail` are
/// device pointers: in holds n ints, ring capacity ints, tail one unsigned; none overlaps
/// another. The caller guarantees 1 <= capacity, 0 <= *tail < capacity on entry and
/// k <= capacity (no slot is taken twice in one call). n = 0 does nothing; in is left
/// unchanged. On the default stream; nothing comes back to the host.
void worklist_push(const int* in, int n, int* ring, int capacity, unsigned* tail);

/// Further part: the notes' donation box, a stack of work items that idle threads take
/// from. box[0, *top) holds the items (node numbers: never negative). Each of `takers`
/// threads t tries once to take one: old = atomicDec(top, limit). A taker with
/// 1 <= old <= capacity takes box[old - 1]: taken[t] = box[old - 1]. A taker with old == 0
/// found the box empty (its atomicDec wrapped *top to limit), and one with old > capacity
/// found a top that an earlier such taker wrapped: both take nothing, taken[t] = -1. So the
/// box's top min(*top, takers) items are taken, each by exactly one taker, and *top ends
/// at *top - takers, or wrapped: limit - (takers - *top - 1) (values on entry).
/// `box`, `top` and `taken` are device pointers: box holds capacity ints, top one
/// unsigned, taken `takers` ints; none overlaps another. The caller guarantees
/// 0 <= capacity, capacity + takers <= limit (so a wrapped top stays above capacity for
/// every taker of the call), and on entry either *top <= capacity or
/// capacity + takers <= *top <= limit (a box an earlier call emptied: nobody takes
/// anything). takers = 0 does nothing; box is left unchanged. On the default stream.
void worklist_take(const int* box, int capacity, unsigned* top, unsigned limit, int* taken, int takers);

/// atomicInc's rule on the CPU: returns *address and stores (old >= limit) ? 0 : old + 1.
unsigned atomic_inc_cpu(unsigned* address, unsigned limit);

/// atomicDec's rule on the CPU: returns *address and stores (old == 0 || old > limit) ? limit : old - 1.
unsigned atomic_dec_cpu(unsigned* address, unsigned limit);

/// The sequential worklist_push (host pointers, same contract): the kept elements in index
/// order, each taking its slot with atomic_inc_cpu. Returns how many it pushed.
int worklist_push_cpu(const int* in, int n, int* ring, int capacity, unsigned* tail);

/// The sequential worklist_take (host pointers, same contract): takers 0, 1, … in order,
/// each with atomic_dec_cpu. Returns how many took an item.
int worklist_take_cpu(const int* box, int capacity, unsigned* top, unsigned limit, int* taken, int takers);
