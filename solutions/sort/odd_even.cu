// Reference solution of the sort lab: odd-even transposition sort (lecture 8).
//
// Phase p compares every pair (i, i+1) with i of p's parity and swaps the pairs out of
// order; n phases sort any n keys. The pairs of one phase are disjoint, so one thread
// per pair runs without races, but phases must follow each other: inside one block a
// __syncthreads() separates them (n <= 2048, data in shared memory); beyond that every
// phase is its own kernel launch, the only grid-wide barrier there is. O(n) steps and
// O(n^2) work: the slow baseline of the progression, timed only at small n.
// Swapping only strictly greater neighbours keeps equal keys in order: it is stable.
//
//   ./build/dev/bin/sort_solution_test --gtest_filter='SortVariants*'
#include "lab/cuda_check.h"
#include "sort.h"
#include "sort_variants.cuh"

namespace {

constexpr int kBlockThreads = 1024;
constexpr int kBlockCapacity = 2 * kBlockThreads;  // one pair per thread
constexpr int kPhaseThreads = 256;

// Sorts keys[0..n) (and values) with n <= kBlockCapacity in one block.
template <bool kPairs>
__global__ void odd_even_block_kernel(unsigned* keys, unsigned* values, int n) {
  __shared__ unsigned s_keys[kBlockCapacity];
  __shared__ unsigned s_values[kPairs ? kBlockCapacity : 1];
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    s_keys[i] = keys[i];
    if constexpr (kPairs) s_values[i] = values[i];
  }
  __syncthreads();
  for (int phase = 0; phase < n; ++phase) {  // n is the same for every thread: barriers are safe
    const int i = 2 * static_cast<int>(threadIdx.x) + (phase & 1);
    if (i + 1 < n && s_keys[i] > s_keys[i + 1]) {
      const unsigned k = s_keys[i];
      s_keys[i] = s_keys[i + 1];
      s_keys[i + 1] = k;
      if constexpr (kPairs) {
        const unsigned v = s_values[i];
        s_values[i] = s_values[i + 1];
        s_values[i + 1] = v;
      }
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    keys[i] = s_keys[i];
    if constexpr (kPairs) values[i] = s_values[i];
  }
}

// One phase over global memory: thread t compares (2t + parity, 2t + parity + 1).
template <bool kPairs>
__global__ void odd_even_phase_kernel(unsigned* keys, unsigned* values, int n, int parity) {
  const long long i = 2LL * (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) + parity;
  if (i + 1 >= n) return;
  const unsigned a = keys[i], b = keys[i + 1];
  if (a > b) {
    keys[i] = b;
    keys[i + 1] = a;
    if constexpr (kPairs) {
      const unsigned v = values[i];
      values[i] = values[i + 1];
      values[i + 1] = v;
    }
  }
}

template <bool kPairs>
void odd_even_sort(unsigned* keys, unsigned* values, int n) {
  if (n <= 1) return;
  if (n <= kBlockCapacity) {
    odd_even_block_kernel<kPairs><<<1, kBlockThreads>>>(keys, values, n);
    LAB_CHECK_LAUNCH();
    return;
  }
  const int blocks = sort_blocks_for(n / 2 + 1, kPhaseThreads);
  for (int phase = 0; phase < n; ++phase) {
    odd_even_phase_kernel<kPairs><<<blocks, kPhaseThreads>>>(keys, values, n, phase & 1);
    LAB_CHECK_LAUNCH();
  }
}

}  // namespace

void sort_keys_odd_even(unsigned* keys, int n) { odd_even_sort<false>(keys, nullptr, n); }

void sort_pairs_odd_even(unsigned* keys, unsigned* values, int n) { odd_even_sort<true>(keys, values, n); }
