// Provided by the kit: do not edit. The interface of the vectorAdd lab.
//
// vector_add is what the tests and the grader call. It takes device pointers, so the
// timed work is the GPU's and not the copies over PCIe (the bench times those too,
// separately). Part A, the host program, is the rest of the job: vector_add_host and
// vector_add_host_pinned take HOST pointers and do the allocations and copies themselves.
// Handout: handouts/vectorAdd.md.
#pragma once

#include <cuda_runtime.h>

/// c[i] = a[i] + b[i] for 0 <= i < n, on the default stream. a, b and c are device
/// pointers to n floats each (any float alignment); c does not overlap a or b.
/// n = 0 does nothing. The result is exact: one IEEE addition per element.
void vector_add(const float* a, const float* b, float* c, int n);

/// The sequential version on the CPU (host pointers): the golden result and the CPU baseline.
void vector_add_cpu(const float* a, const float* b, float* c, int n);

/// What a host program reports: the first CUDA call that failed, and the kernel's time.
struct HostRunResult {
  cudaError_t status;  ///< the error of the first CUDA call that failed, or cudaSuccess
  float kernel_ms;     ///< the kernel alone, timed with CUDA events; 0 when n == 0 or status is an error
};

/// Part A, the host program: c = a + b for n floats in HOST memory (h_c does not overlap
/// h_a or h_b). Allocates device memory for a, b and c, copies h_a and h_b to the device,
/// launches your kernel, copies the result to h_c and frees the device memory. Every CUDA
/// call is checked: at the first failure it frees whatever it allocated and returns that
/// call's error (h_c is written only by the copy back). Nothing leaks on any path.
/// n = 0 does nothing and returns {cudaSuccess, 0}.
HostRunResult vector_add_host(const float* h_a, const float* h_b, float* h_c, int n);

/// Part A with pinned memory: the same job, staged through page-locked host buffers
/// (cudaMallocHost): h_a and h_b are copied into them, the copies to and from the device
/// are cudaMemcpyAsync on the default stream, and h_c is filled from the pinned result.
/// Checks, errors, freeing (cudaFreeHost too) and n = 0 as vector_add_host.
HostRunResult vector_add_host_pinned(const float* h_a, const float* h_b, float* h_c, int n);

// ---- Further part: launch overhead and kernel fusion (handout: "Further part: launch
// overhead and kernel fusion") ---------------------------------------------------------

/// K3 reverses tiles of this many consecutive elements; K2 counts into this many bins.
constexpr int kFuseTile = 256;
constexpr int kFuseBins = 64;

/// The lecture's profiled program: three small steps, repeated `iterations` times on x, an
/// array of n unsigned ints, and hist, kFuseBins counters (device pointers, on the default
/// stream). Iteration t = 0, 1, …, iterations − 1 does, in this order:
///   K1 (simple memory accesses)  x[i] = 3 · x[i] + i for every 0 ≤ i < n (modulo 2^32);
///   K2 (atomics)                 hist[x[i] % kFuseBins] += 1 for every i, with K1's x;
///   K3 (shared memory)           reverses every tile of kFuseTile consecutive elements in
///                                place: x[0..255], x[256..511], …; the last tile, of
///                                n % 256 elements when that is not 0, is reversed within itself.
/// hist is added to, not cleared. Nothing else is written. n = 0 or iterations = 0 does
/// nothing; 0 ≤ n ≤ 2^31 − 1. The result is exact (integers), whatever the order of the
/// atomics. three_kernels launches K1, K2 and K3 once per iteration (3 · iterations
/// launches); fused_kernel does the same work in ONE launch (all three steps in one kernel,
/// the loop over the iterations inside it).
void three_kernels(unsigned int* x, unsigned int* hist, int n, int iterations);
void fused_kernel(unsigned int* x, unsigned int* hist, int n, int iterations);

/// The same on the CPU (host pointers), step by step as above: the golden result.
void fusion_steps_cpu(unsigned int* x, unsigned int* hist, int n, int iterations);

// ---- Further part: streams (handout: "Further part: streams") ------------------------------

/// Rounds of chain_step: a few tens of microseconds of work per kernel on a thousand elements.
constexpr int kChainRounds = 2048;
/// The most streams independent_chains is asked to spread its chains over.
constexpr int kMaxChainStreams = 16;

/// One step of a chain on one element: kChainRounds times v = (v ^ (v >> 16)) · 0x45d9f3b + 1
/// (modulo 2^32). Each round needs the one before: a thread's work cannot be split.
__host__ __device__ inline unsigned int chain_step(unsigned int v) {
  for (int r = 0; r < kChainRounds; ++r) v = (v ^ (v >> 16)) * 0x45d9f3bu + 1u;
  return v;
}

/// Independent chains: x holds `chains` arrays of n unsigned ints, one after the other
/// (chain c is x[c · n], …, x[c · n + n − 1]; x is a device pointer to chains · n of them).
/// Each chain takes `steps` steps, one after the other, and a step replaces every element v
/// of its chain by chain_step(v): one kernel launch per step and chain (chains · steps
/// launches), each on n elements. The chains do not depend on each other.
///   streams = 1: every launch on the default stream, in order (the one-stream version);
///   2 ≤ streams ≤ kMaxChainStreams: chain c on stream c % streams of `streams` streams of
///   your own, so that kernels of different chains may run at the same time.
/// When it returns, later work on the default stream sees the result (whichever streams
/// you used). Nothing but x[0 .. chains · n − 1] is written. n ≤ 0, chains ≤ 0 or
/// steps ≤ 0 does nothing; chains · n ≤ 2^31 − 1. The result is exact (integers).
void independent_chains(unsigned int* x, int n, int chains, int steps, int streams);

/// The same on the CPU (host pointer), chain after chain: the golden result.
void independent_chains_cpu(unsigned int* x, int n, int chains, int steps);
