// Reference solution of the sort lab: the bitonic sorting network (lecture 8).
//
// The network works on a power of two of elements, so the keys are copied into a
// workspace array padded with the largest value (UINT_MAX sorts last). Stage `size`
// (2, 4, …, N) turns bitonic runs of length `size` into sorted runs, ascending where
// bit `size` of the index is 0 and descending elsewhere, by splits at distances size/2,
// size/4, …, 1. Every split is a column of independent comparators: one thread each.
//  - Distances below 2048 stay inside an aligned tile of 2048 elements, so one block
//    runs all of them in shared memory with __syncthreads() between columns: the first
//    stages (size <= 2048) in one kernel, and the tail of every later stage in another.
//  - Distances of 2048 and more are one kernel launch each, over global memory.
// Work O(n log^2 n), O(log^2 n) steps.
//
// A network is not stable: it swaps across equal keys. sort_pairs therefore sorts
// 64-bit composites (key << 32 | original index): all distinct, ordered by key, then
// by index, which is exactly the stable order. The values are gathered afterwards
// through the index. The padding composite (all ones) sorts after every real element.
//
//   ./build/dev/bin/sort_solution_bench --filter bitonic
#include <climits>
#include <cstdint>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "sort.h"
#include "sort_variants.cuh"

namespace {

constexpr unsigned kTile = 2048;  // elements sorted in shared memory by one block
constexpr int kStepThreads = 256;

using u64 = unsigned long long;

template <class T>
__device__ __forceinline__ void compare_swap(T& a, T& b, bool ascending) {
  if (ascending ? (b < a) : (a < b)) {
    const T t = a;
    a = b;
    b = t;
  }
}

// Lower element of comparator c for distance `stride` (a power of two): c with a zero
// bit inserted at stride's position; its partner is that plus stride.
__device__ __forceinline__ unsigned lower_index(unsigned c, unsigned stride) { return 2 * c - (c & (stride - 1)); }

// Each block sorts its tile of len = 2 * blockDim.x elements through stages 2 … len,
// with directions taken from the global index, so consecutive tiles come out
// alternately ascending and descending (a bitonic sequence for the next stage).
template <class T>
__global__ void bitonic_tile_sort_kernel(T* data) {
  __shared__ T s[kTile];
  const unsigned len = 2 * blockDim.x;
  const unsigned base = blockIdx.x * len;
  for (unsigned i = threadIdx.x; i < len; i += blockDim.x) s[i] = data[base + i];
  __syncthreads();
  for (unsigned size = 2; size <= len; size <<= 1) {
    for (unsigned stride = size >> 1; stride > 0; stride >>= 1) {
      const unsigned i = lower_index(threadIdx.x, stride);
      compare_swap(s[i], s[i + stride], ((base + i) & size) == 0);
      __syncthreads();
    }
  }
  for (unsigned i = threadIdx.x; i < len; i += blockDim.x) data[base + i] = s[i];
}

// The distances len/2 … 1 of stage `size` (> len), inside each tile.
template <class T>
__global__ void bitonic_tile_merge_kernel(T* data, unsigned size) {
  __shared__ T s[kTile];
  const unsigned len = 2 * blockDim.x;
  const unsigned base = blockIdx.x * len;
  for (unsigned i = threadIdx.x; i < len; i += blockDim.x) s[i] = data[base + i];
  __syncthreads();
  const bool ascending = (base & size) == 0;  // the same for the whole tile, since size > len
  for (unsigned stride = len >> 1; stride > 0; stride >>= 1) {
    const unsigned i = lower_index(threadIdx.x, stride);
    compare_swap(s[i], s[i + stride], ascending);
    __syncthreads();
  }
  for (unsigned i = threadIdx.x; i < len; i += blockDim.x) data[base + i] = s[i];
}

// One column of comparators at distance `stride` of stage `size`, over global memory.
template <class T>
__global__ void bitonic_global_step_kernel(T* data, unsigned padded, unsigned size, unsigned stride) {
  const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= padded / 2) return;
  const unsigned i = lower_index(c, stride);
  T a = data[i], b = data[i + stride];
  const bool ascending = (i & size) == 0;
  if (ascending ? (b < a) : (a < b)) {
    data[i] = b;
    data[i + stride] = a;
  }
}

__global__ void pad_keys_kernel(const unsigned* keys, unsigned* buf, int n, unsigned padded) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < padded) buf[i] = i < static_cast<unsigned>(n) ? keys[i] : UINT_MAX;
}

__global__ void pad_pairs_kernel(const unsigned* keys, const unsigned* values, u64* buf, unsigned* values_copy, int n,
                                 unsigned padded) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= padded) return;
  if (i < static_cast<unsigned>(n)) {
    buf[i] = (static_cast<u64>(keys[i]) << 32) | i;
    values_copy[i] = values[i];
  } else {
    buf[i] = ~0ull;
  }
}

__global__ void unpack_pairs_kernel(const u64* buf, const unsigned* values_copy, unsigned* keys, unsigned* values,
                                    int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const u64 x = buf[i];
  keys[i] = static_cast<unsigned>(x >> 32);
  values[i] = values_copy[static_cast<unsigned>(x & 0xFFFFFFFFu)];
}

unsigned next_power_of_two(int n) {
  unsigned p = 2;
  while (p < static_cast<unsigned>(n)) p <<= 1;
  return p;
}

// Sorts buf[0..padded) ascending; padded is a power of two >= 2.
template <class T>
void bitonic_network(T* buf, unsigned padded) {
  const unsigned len = padded < kTile ? padded : kTile;
  bitonic_tile_sort_kernel<T><<<padded / len, len / 2>>>(buf);
  LAB_CHECK_LAUNCH();
  const int step_blocks = sort_blocks_for(padded / 2, kStepThreads);
  for (unsigned size = 2 * len; size <= padded; size <<= 1) {
    for (unsigned stride = size >> 1; stride >= len; stride >>= 1) {
      bitonic_global_step_kernel<T><<<step_blocks, kStepThreads>>>(buf, padded, size, stride);
      LAB_CHECK_LAUNCH();
    }
    bitonic_tile_merge_kernel<T><<<padded / len, len / 2>>>(buf, size);
    LAB_CHECK_LAUNCH();
  }
}

}  // namespace

void sort_keys_bitonic(unsigned* keys, int n) {
  if (n <= 1) return;
  const unsigned padded = next_power_of_two(n);
  unsigned* buf = lab::workspace<unsigned>(padded, 0);
  pad_keys_kernel<<<sort_blocks_for(padded, kStepThreads), kStepThreads>>>(keys, buf, n, padded);
  LAB_CHECK_LAUNCH();
  bitonic_network(buf, padded);
  LAB_CUDA_CHECK(
      cudaMemcpyAsync(keys, buf, sizeof(unsigned) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, 0));
}

void sort_pairs_bitonic(unsigned* keys, unsigned* values, int n) {
  if (n <= 1) return;
  const unsigned padded = next_power_of_two(n);
  u64* buf = lab::workspace<u64>(padded, 0);
  unsigned* values_copy = lab::workspace<unsigned>(static_cast<std::size_t>(n), 1);
  pad_pairs_kernel<<<sort_blocks_for(padded, kStepThreads), kStepThreads>>>(keys, values, buf, values_copy, n, padded);
  LAB_CHECK_LAUNCH();
  bitonic_network(buf, padded);
  unpack_pairs_kernel<<<sort_blocks_for(n, kStepThreads), kStepThreads>>>(buf, values_copy, keys, values, n);
  LAB_CHECK_LAUNCH();
}
