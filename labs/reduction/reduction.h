// Provided by the kit: do not edit. The interface of the reduction lab.
//
// reduce_sum and reduce_max are what the tests and the grader call. They take device
// pointers, so the timed work is the GPU's and not the copies over PCIe. The CPU
// versions below are the lectures' sequential loops: the golden results of the tests and
// the CPU baseline of the bench. Handout: handouts/reduction.md.
#pragma once

#include <climits>

/// out[0] = in[0] + in[1] + ... + in[n - 1], on the default stream. `in` is a device
/// pointer to n floats (4-byte aligned as every float is; it need not be 16-byte
/// aligned), `out` a device pointer to one float that does not overlap `in`. out[0] is
/// overwritten, never added to, and nothing after it is written. n = 0 writes 0.0f;
/// 0 <= n <= INT_MAX. Any order of the additions is allowed, so the last bits may differ
/// from the CPU's: the tests are exact where every order gives the same float
/// (integer-valued data) and allow reduce_sum_error_bound() elsewhere.
void reduce_sum(const float* in, float* out, int n);

/// out[0] = the largest of in[0], ..., in[n - 1], on the default stream. `in` is a device
/// pointer to n ints (any 4-byte alignment), `out` a device pointer to one int that does
/// not overlap `in`; out[0] is overwritten. n = 0 writes INT_MIN, the identity of max
/// (max(INT_MIN, x) = x for every int x). The result is exact. 0 <= n <= INT_MAX.
void reduce_max(const int* in, int* out, int n);

/// Find the bug (lecture 3's "alternative" tree, as the slides print it): the sum of
/// in[0 .. n-1], 1 <= n <= kFixBlockThreads, by one block of kFixBlockThreads threads,
/// written to *out. Your file starts with the lecture's code, bug included: its tests
/// (Registered/FixBlockSumGpu.*) fail until you fix it there. Handout: "Find the bug".
void fix_block_sum(const float* in, float* out, int n);

/// The block size of fix_block_sum (the lecture assumes 1024 threads).
constexpr int kFixBlockThreads = 1024;

/// Further part (atomics and atomicCAS, handout "Atomics beyond atomicAdd"): the largest of
/// in[0 .. n-1], written to *out, by blocks that each find their own maximum and then merge it
/// into *out with an atomic operation. CUDA has atomicMax for ints but none for floats, so
/// write it with atomicCAS on the float's bits. `in` is a device pointer to n floats, none of
/// them NaN; `out` a device pointer to one float that does not overlap `in`. *out is
/// overwritten (never merged with what it held before the call); n = 0 writes -infinity, the
/// identity of max. 0 <= n <= INT_MAX. Tests: Registered/PartAtomicMaxGpu.*.
void atomic_max_float(const float* in, float* out, int n);

/// Further part (memory fences, handout "The last block finishes"): the sum of in[0 .. n-1]
/// in ONE kernel launch. Each block writes its partial sum to scratch memory, makes it
/// visible to the whole GPU with __threadfence(), and takes a ticket from an atomic counter;
/// the block that draws the last ticket adds the partial sums and writes *out, then resets
/// the counter for the next call. Same contract as reduce_sum (n = 0 writes 0.0f; in
/// unchanged; nothing after *out written). Tests: Registered/PartLastBlockSumGpu.*.
void last_block_sum(const float* in, float* out, int n);

/// The identity of reduce_max: what it writes for n = 0.
constexpr int kReduceMaxIdentity = INT_MIN;

/// The sequential sum of lecture 9 (host pointer): one float accumulator, the additions
/// from left to right. The CPU baseline of the bench. 0 for n = 0.
float reduce_sum_cpu(const float* in, int n);

/// Kahan's compensated sum (lecture 9), in float: the rounding error of each addition is
/// kept in a correction term and fed back into the next one, so the error stays about
/// 2u·Σ|x| (u = 2^-24) however large n is. 0 for n = 0.
float reduce_sum_kahan_cpu(const float* in, int n);

/// The sum accumulated in double: the reference value the tests compare with. It is exact
/// for integer-valued floats whose partial sums stay below 2^53.
double reduce_sum_double_cpu(const float* in, int n);

/// Σ|in[i]| accumulated in double: the magnitude the error bound scales with.
double reduce_abs_sum_cpu(const float* in, int n);

/// The sequential maximum (host pointer): kReduceMaxIdentity for n = 0.
int reduce_max_cpu(const int* in, int n);

/// The largest error of a float sum of n terms whose magnitudes add up to abs_sum,
/// whatever the order of the additions (a sequential loop, any tree, atomics), measured
/// against reduce_sum_double_cpu(): ((1 + u)^(n-1) - 1)·Σ|x| with u = 2^-24, which is at
/// most γ_(n-1)·Σ|x|, γ_k = k·u / (1 - k·u), plus the (tiny) error of the double
/// reference. Each term passes through at most n - 1 roundings, each off by a factor
/// (1 + δ), |δ| <= u. Valid while no partial sum overflows. It grows with n: about
/// n·u·Σ|x|, i.e. Σ|x| / 16 at n = 2^20, and it says nothing useful beyond n = 2^24.
double reduce_sum_error_bound(long long n, double abs_sum);
