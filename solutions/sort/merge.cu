// Reference solution of the sort lab: merge sort with merge-path splitters (lecture 8).
//
// The lecture's three stages of a GPU merge sort:
//  1. Many small sequences: each block sorts a tile of 2048 keys in shared memory. Each
//     thread sorts its 8 keys in registers (odd-even transposition, unrolled), then the
//     block merges runs of 8, 16, …, 1024 into runs of 2048, every thread producing 8
//     outputs.
//  2./3. Medium and large sequences: one kernel per merge pass (runs of 2048, 4096, …).
//     The lecture's splitters become merge path: output position d of merging A and B
//     is reached after taking i keys from A and d - i from B, and i is found by a binary
//     search along that "diagonal". A partition kernel finds i at the start of every
//     2048-output tile (one thread per tile, all searches at once); each block then
//     loads exactly the slices of A and B that make its 2048 outputs and merges them in
//     shared memory, splitting again by merge path among its threads.
// On equal keys A (the earlier run) goes first, so the sort is stable and serves
// sort_pairs as it is. Work O(n log n); passes log2(n / 2048), each reading and
// writing every key once.
//
//   ./build/dev/bin/sort_solution_bench --filter merge_path
#include <climits>
#include <utility>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "sort.h"
#include "sort_variants.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kItems = 8;                 // outputs per thread
constexpr int kTile = kThreads * kItems;  // 2048 outputs per block

// Keys taken from a among the first `diag` outputs of the stable merge of the sorted
// a[0..len_a) and b[0..len_b) (0 <= diag <= len_a + len_b). a[m] precedes b[diag-1-m]
// exactly when m is below the answer, so the answer is found by bisection.
__device__ int merge_path(const unsigned* a, int len_a, const unsigned* b, int len_b, int diag) {
  int lo = diag > len_b ? diag - len_b : 0;
  int hi = diag < len_a ? diag : len_a;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (a[mid] <= b[diag - 1 - mid]) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Where the pair of runs of width `width` containing output position `out_first` starts,
// and how long its two runs are (the last pair may be short or lack its second run).
struct RunPair {
  long long base;
  int len_a, len_b;
};

__device__ RunPair run_pair(long long out_first, int width, int n) {
  RunPair p;
  const long long pair_width = 2LL * width;
  p.base = out_first / pair_width * pair_width;
  const long long rest = n - p.base;
  p.len_a = static_cast<int>(rest < width ? rest : width);
  const long long rest_b = rest - p.len_a;
  p.len_b = static_cast<int>(rest_b < width ? rest_b : width);
  return p;
}

// Stage 1: sorts each tile of 2048 keys (and values) from *_in into *_out (may alias).
template <bool kPairs>
__global__ void __launch_bounds__(kThreads) merge_block_sort_kernel(const unsigned* keys_in, const unsigned* values_in,
                                                                    unsigned* keys_out, unsigned* values_out, int n) {
  __shared__ unsigned s_keys[2][kTile];
  __shared__ unsigned s_values[kPairs ? 2 : 1][kPairs ? kTile : 1];
  const long long base = static_cast<long long>(blockIdx.x) * kTile;
  const int count = static_cast<int>(n - base < kTile ? n - base : kTile);

  // Padding with UINT_MAX after the last key: being last and largest, the pads stay at
  // the end of a stable sort, after any real UINT_MAX key.
  for (int i = threadIdx.x; i < kTile; i += kThreads) {
    s_keys[0][i] = i < count ? keys_in[base + i] : UINT_MAX;
    if constexpr (kPairs) s_values[0][i] = i < count ? values_in[base + i] : 0u;
  }
  __syncthreads();

  // Each thread sorts its 8 consecutive keys in registers: odd-even transposition with
  // fixed indices, so the arrays stay in registers.
  const int first = threadIdx.x * kItems;
  unsigned k[kItems], v[kItems];
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    k[r] = s_keys[0][first + r];
    if constexpr (kPairs) v[r] = s_values[0][first + r];
  }
#pragma unroll
  for (int phase = 0; phase < kItems; ++phase) {
#pragma unroll
    for (int r = phase & 1; r + 1 < kItems; r += 2) {
      if (k[r] > k[r + 1]) {
        const unsigned t = k[r];
        k[r] = k[r + 1];
        k[r + 1] = t;
        if constexpr (kPairs) {
          const unsigned u = v[r];
          v[r] = v[r + 1];
          v[r + 1] = u;
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    s_keys[0][first + r] = k[r];
    if constexpr (kPairs) s_values[0][first + r] = v[r];
  }
  __syncthreads();

  // Merge runs of `width` pairwise; thread t writes outputs [8t, 8t + 8) of the tile.
  int cur = 0;
  for (int width = kItems; width < kTile; width *= 2) {
    const int pair_base = first & ~(2 * width - 1);
    const int diag = first - pair_base;
    const unsigned* a = &s_keys[cur][pair_base];
    const unsigned* b = a + width;
    int i = merge_path(a, width, b, width, diag);
    int j = diag - i;
#pragma unroll
    for (int r = 0; r < kItems; ++r) {
      const bool take_a = j >= width || (i < width && a[i] <= b[j]);
      if (take_a) {
        s_keys[cur ^ 1][first + r] = a[i];
        if constexpr (kPairs) s_values[cur ^ 1][first + r] = s_values[cur][pair_base + i];
        ++i;
      } else {
        s_keys[cur ^ 1][first + r] = b[j];
        if constexpr (kPairs) s_values[cur ^ 1][first + r] = s_values[cur][pair_base + width + j];
        ++j;
      }
    }
    __syncthreads();
    cur ^= 1;
  }

  for (int i = threadIdx.x; i < count; i += kThreads) {
    keys_out[base + i] = s_keys[cur][i];
    if constexpr (kPairs) values_out[base + i] = s_values[cur][i];
  }
}

// For every output tile t of a pass with run width `width`: the number of keys of the
// tile's run A that come before the tile's first output.
__global__ void merge_partition_kernel(const unsigned* keys, int n, int width, int* splits, int num_tiles) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= num_tiles) return;
  const long long out_first = static_cast<long long>(t) * kTile;
  const RunPair p = run_pair(out_first, width, n);
  const unsigned* a = keys + p.base;
  splits[t] = merge_path(a, p.len_a, a + p.len_a, p.len_b, static_cast<int>(out_first - p.base));
}

// One merge pass: block t makes outputs [2048 t, 2048 t + 2048) of the merged runs.
template <bool kPairs>
__global__ void __launch_bounds__(kThreads)
    merge_pass_kernel(const unsigned* keys_in, const unsigned* values_in, unsigned* keys_out, unsigned* values_out,
                      int n, int width, const int* splits) {
  __shared__ unsigned s_in[kTile], s_out[kTile];
  __shared__ unsigned s_values_in[kPairs ? kTile : 1], s_values_out[kPairs ? kTile : 1];
  const int t = blockIdx.x;
  const long long out_first = static_cast<long long>(t) * kTile;
  const RunPair p = run_pair(out_first, width, n);
  const int diag = static_cast<int>(out_first - p.base);
  const int count = static_cast<int>(n - out_first < kTile ? n - out_first : kTile);
  const int diag_end = diag + count;
  // The tile's slices of A and B: from this tile's split to the next tile's (or to the
  // end of both runs when this tile ends the pair).
  const int a_begin = splits[t];
  const int a_end = diag_end == p.len_a + p.len_b ? p.len_a : splits[t + 1];
  const int b_begin = diag - a_begin;
  const int na = a_end - a_begin;  // na + (b slice length) == count
  const unsigned* a = keys_in + p.base + a_begin;
  const unsigned* b = keys_in + p.base + p.len_a + b_begin;

  for (int i = threadIdx.x; i < count; i += kThreads) {
    s_in[i] = i < na ? a[i] : b[i - na];
    if constexpr (kPairs) {
      s_values_in[i] = i < na ? values_in[p.base + a_begin + i] : values_in[p.base + p.len_a + b_begin + (i - na)];
    }
  }
  __syncthreads();

  const int first = threadIdx.x * kItems;
  if (first < count) {
    const int nb = count - na;
    const unsigned* sa = s_in;
    const unsigned* sb = s_in + na;
    int i = merge_path(sa, na, sb, nb, first);
    int j = first - i;
    const int mine = count - first < kItems ? count - first : kItems;
    for (int r = 0; r < mine; ++r) {
      const bool take_a = j >= nb || (i < na && sa[i] <= sb[j]);
      if (take_a) {
        s_out[first + r] = sa[i];
        if constexpr (kPairs) s_values_out[first + r] = s_values_in[i];
        ++i;
      } else {
        s_out[first + r] = sb[j];
        if constexpr (kPairs) s_values_out[first + r] = s_values_in[na + j];
        ++j;
      }
    }
  }
  __syncthreads();

  for (int i = threadIdx.x; i < count; i += kThreads) {
    keys_out[out_first + i] = s_out[i];
    if constexpr (kPairs) values_out[out_first + i] = s_values_out[i];
  }
}

template <bool kPairs>
void merge_sort(unsigned* keys, unsigned* values, int n) {
  if (n <= 1) return;
  const int num_tiles = sort_blocks_for(n, kTile);
  int passes = 0;
  for (long long width = kTile; width < n; width *= 2) ++passes;
  unsigned* keys_alt = lab::workspace<unsigned>(static_cast<std::size_t>(n), 0);
  unsigned* values_alt = kPairs ? lab::workspace<unsigned>(static_cast<std::size_t>(n), 1) : nullptr;
  int* splits = lab::workspace<int>(static_cast<std::size_t>(num_tiles), 2);

  // The block sort writes where the passes must start for the last pass to end in keys.
  unsigned* src_keys = passes % 2 == 1 ? keys_alt : keys;
  unsigned* src_values = passes % 2 == 1 ? values_alt : values;
  unsigned* dst_keys = passes % 2 == 1 ? keys : keys_alt;
  unsigned* dst_values = passes % 2 == 1 ? values : values_alt;
  merge_block_sort_kernel<kPairs><<<num_tiles, kThreads>>>(keys, values, src_keys, src_values, n);
  LAB_CHECK_LAUNCH();
  for (long long width = kTile; width < n; width *= 2) {
    merge_partition_kernel<<<sort_blocks_for(num_tiles, kThreads), kThreads>>>(src_keys, n, static_cast<int>(width),
                                                                               splits, num_tiles);
    LAB_CHECK_LAUNCH();
    merge_pass_kernel<kPairs>
        <<<num_tiles, kThreads>>>(src_keys, src_values, dst_keys, dst_values, n, static_cast<int>(width), splits);
    LAB_CHECK_LAUNCH();
    std::swap(src_keys, dst_keys);
    std::swap(src_values, dst_values);
  }
}

}  // namespace

void sort_keys_merge_path(unsigned* keys, int n) { merge_sort<false>(keys, nullptr, n); }

void sort_pairs_merge_path(unsigned* keys, unsigned* values, int n) { merge_sort<true>(keys, values, n); }
