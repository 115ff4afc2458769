// Provided by the kit: do not edit. The interface of the compact lab.
//
// compact keeps the elements of an array that satisfy a predicate, in their original
// order; expand (lecture 7's "generalised compact") writes each element a given number
// of times. Both are a map, an exclusive scan and a scatter. The functions take device
// pointers and return their count on the host. Handout: handouts/compact.md.
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
