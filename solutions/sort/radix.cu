// Reference solution of the sort lab: LSD radix sort (lecture 8), the default.
//
// Radix sort is a sequence of stable splits, least significant digit first. With
// kBits-bit digits there are 2^kBits buckets and 32 / kBits passes; each pass is
//  1. upsweep: each block counts the digits of its tile of 4096 keys, writing
//     counts[digit][tile] (digit-major);
//  2. scan: an exclusive scan of that array gives, for every (digit, tile), where the
//     tile's first key of that digit goes in the output — all keys of smaller digits,
//     plus the keys of the same digit in earlier tiles. That is the lecture's "scan
//     gives the scatter addresses", and for kBits = 1 exactly its split: the zeros
//     first, the ones after the last zero. (One block scans each digit's row; the
//     scatter adds the totals of the smaller digits, a scan of 2^kBits numbers.)
//  3. scatter: each block ranks its keys by digit (stably), groups them by digit in
//     shared memory, and writes every digit's run to its place. The runs are
//     contiguous, so the writes are nearly coalesced.
// Ranking inside a warp uses ballots: one __ballot_sync per digit bit tells every lane
// which lanes share its digit, so a key's rank is the number of those lanes below it
// plus the count from the warp's earlier keys. Keys keep their order inside each
// digit, which LSD radix sort needs (a pass must not undo the order left by the
// passes on lower digits), and which makes sort_pairs stable for free.
//
// Variants: radix_1bit (the lecture's split: 32 passes) and radix_4bit (8 passes,
// the default). Both pass counts are even, so the data ends where it started.
//
//   ./build/dev/bin/sort_solution_bench --filter radix
#include <utility>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "sort.h"
#include "sort_variants.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 16;                // keys per thread
constexpr int kWarpKeys = 32 * kItems;    // each warp owns 512 consecutive keys of a tile
constexpr int kTile = kThreads * kItems;  // 4096 keys per block
constexpr int kScanThreads = 1024;
constexpr int kScanItems = 4;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

// Each warp owns 512 consecutive keys of its block's tile and reads them 32 at a time
// (coalesced): key r of a lane is warp_first + 32 r + lane. So r, then lane, follow
// the keys' order, which the ranking relies on for stability. Returns how many of the
// warp's 512 keys exist (fewer in the last tile), and sets warp_first.
__device__ __forceinline__ int warp_keys(int n, long long& warp_first) {
  warp_first = static_cast<long long>(blockIdx.x) * kTile + (threadIdx.x >> 5) * kWarpKeys;
  const long long left = n - warp_first;
  return left <= 0 ? 0 : (left < kWarpKeys ? static_cast<int>(left) : kWarpKeys);
}

// The lanes whose key exists in round r, given `count` keys for the warp.
__device__ __forceinline__ unsigned valid_lanes(int count, int r) {
  const int left = count - 32 * r;
  return left >= 32 ? kFullMask : (left <= 0 ? 0u : (1u << left) - 1u);
}

// Bit `lane` of ballot[b] says whether that lane's digit has bit b set.
template <int kBits>
__device__ __forceinline__ void digit_ballots(unsigned digit, unsigned (&ballot)[kBits]) {
#pragma unroll
  for (int b = 0; b < kBits; ++b) ballot[b] = __ballot_sync(kFullMask, (digit >> b) & 1u);
}

// The lanes among `valid` whose digit is d.
template <int kBits>
__device__ __forceinline__ unsigned lanes_with_digit(unsigned d, const unsigned (&ballot)[kBits], unsigned valid) {
  unsigned lanes = valid;
#pragma unroll
  for (int b = 0; b < kBits; ++b) lanes &= ((d >> b) & 1u) ? ballot[b] : ~ballot[b];
  return lanes;
}

// Pass step 1: counts[d * num_tiles + tile] = keys of digit d in the tile.
template <int kBits>
__global__ void __launch_bounds__(kThreads)
    radix_upsweep_kernel(const unsigned* keys, int n, int shift, unsigned* counts, int num_tiles) {
  constexpr int kDigits = 1 << kBits;
  __shared__ unsigned s_counts[kWarps][kDigits];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  long long warp_first;
  const int count_in_warp = warp_keys(n, warp_first);
  const unsigned* src = keys + warp_first + lane;
  unsigned key[kItems];
#pragma unroll
  for (int r = 0; r < kItems; ++r) key[r] = 32 * r + lane < count_in_warp ? src[32 * r] : 0u;
  // Lane d (< kDigits) counts digit d over the warp's keys; every lane takes part in
  // the ballots, including those past the end of the array (masked out by `valid`).
  const unsigned my_digit = static_cast<unsigned>(lane) & (kDigits - 1);
  unsigned count = 0;
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    const unsigned valid = valid_lanes(count_in_warp, r);
    unsigned ballot[kBits];
    digit_ballots<kBits>((key[r] >> shift) & (kDigits - 1), ballot);
    count += __popc(lanes_with_digit<kBits>(my_digit, ballot, valid));
  }
  if (lane < kDigits) s_counts[warp][lane] = count;
  __syncthreads();
  if (threadIdx.x < kDigits) {
    unsigned total = 0;
    for (int w = 0; w < kWarps; ++w) total += s_counts[w][threadIdx.x];
    counts[static_cast<long long>(threadIdx.x) * num_tiles + blockIdx.x] = total;
  }
}

// Pass step 2: block d scans row d of counts (num_tiles entries) in place, exclusive,
// and writes the row's total to digit_totals[d].
__global__ void __launch_bounds__(kScanThreads)
    radix_scan_kernel(unsigned* counts, int num_tiles, unsigned* digit_totals) {
  __shared__ unsigned s_warp[32];
  __shared__ unsigned s_chunk_total;
  unsigned* row = counts + static_cast<long long>(blockIdx.x) * num_tiles;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned carry = 0;  // sum of the earlier chunks; the same in every thread
  for (int chunk = 0; chunk < num_tiles; chunk += kScanThreads * kScanItems) {
    const int first = chunk + threadIdx.x * kScanItems;
    unsigned v[kScanItems];
    unsigned sum = 0;
#pragma unroll
    for (int r = 0; r < kScanItems; ++r) {
      v[r] = first + r < num_tiles ? row[first + r] : 0u;
      sum += v[r];
    }
    unsigned inclusive = sum;  // over the lanes of this warp
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const unsigned up = __shfl_up_sync(kFullMask, inclusive, offset);
      if (lane >= offset) inclusive += up;
    }
    if (lane == 31) s_warp[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {  // kScanThreads / 32 == 32 warp sums: one per lane
      const unsigned w = s_warp[lane];
      unsigned w_inclusive = w;
#pragma unroll
      for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned up = __shfl_up_sync(kFullMask, w_inclusive, offset);
        if (lane >= offset) w_inclusive += up;
      }
      s_warp[lane] = w_inclusive - w;
      if (lane == 31) s_chunk_total = w_inclusive;
    }
    __syncthreads();
    unsigned running = carry + s_warp[warp] + inclusive - sum;
#pragma unroll
    for (int r = 0; r < kScanItems; ++r) {
      if (first + r < num_tiles) row[first + r] = running;
      running += v[r];
    }
    carry += s_chunk_total;
    __syncthreads();  // s_warp and s_chunk_total are rewritten by the next chunk
  }
  if (threadIdx.x == 0) digit_totals[blockIdx.x] = carry;
}

// Pass step 3: moves the tile's keys (and values) to their places for this digit.
// offsets: the scanned counts; digit_totals: the number of keys of each digit.
// Three blocks per SM for keys (80 registers, no spills on sm_90), two for pairs, whose
// 16 values per thread would spill at 80.
template <int kBits, bool kPairs>
__global__ void __launch_bounds__(kThreads, kPairs ? 2 : 3)
    radix_scatter_kernel(const unsigned* keys_in, unsigned* keys_out, const unsigned* values_in, unsigned* values_out,
                         int n, int shift, const unsigned* offsets, const unsigned* digit_totals, int num_tiles) {
  constexpr int kDigits = 1 << kBits;
  __shared__ unsigned s_keys[kTile];
  __shared__ unsigned s_values[kPairs ? kTile : 1];
  __shared__ unsigned s_base[kDigits][kWarps];  // tile position of the first key of (digit, warp)
  __shared__ unsigned s_to_global[kDigits];     // output position minus tile position, per digit
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  long long warp_first;
  const int count_in_warp = warp_keys(n, warp_first);
  unsigned key[kItems], value[kItems], rank[kItems];
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    const bool exists = 32 * r + lane < count_in_warp;
    key[r] = exists ? keys_in[warp_first + 32 * r + lane] : 0u;
    if constexpr (kPairs) value[r] = exists ? values_in[warp_first + 32 * r + lane] : 0u;
  }

  // Where this tile's digits go, loaded now so the loads overlap the ranking below.
  unsigned digit_total = 0, tile_offset = 0;
  if (warp == 0 && lane < kDigits) {
    digit_total = digit_totals[lane];
    tile_offset = offsets[static_cast<long long>(lane) * num_tiles + blockIdx.x];
  }

  // Rank of each key among the warp's keys of the same digit, in key order.
  const unsigned my_digit = static_cast<unsigned>(lane) & (kDigits - 1);
  const unsigned lanes_below = (1u << lane) - 1u;
  unsigned count = 0;  // lane d (< kDigits): keys of digit d seen so far by this warp
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    const unsigned valid = valid_lanes(count_in_warp, r);
    const unsigned digit = (key[r] >> shift) & (kDigits - 1);
    unsigned ballot[kBits];
    digit_ballots<kBits>(digit, ballot);
    const unsigned peers = lanes_with_digit<kBits>(digit, ballot, valid);
    rank[r] = __shfl_sync(kFullMask, count, static_cast<int>(digit)) + __popc(peers & lanes_below);
    count += __popc(lanes_with_digit<kBits>(my_digit, ballot, valid));
  }
  if (lane < kDigits) s_base[lane][warp] = count;
  __syncthreads();

  // One warp turns the per-warp counts into tile positions and finds, per digit, the
  // offset from tile position to output position.
  if (warp == 0) {
    unsigned digit_count = 0;  // keys of digit `lane` in the tile
    if (lane < kDigits) {
      for (int w = 0; w < kWarps; ++w) {
        const unsigned c = s_base[lane][w];
        s_base[lane][w] = digit_count;
        digit_count += c;
      }
    }
    unsigned local_inclusive = digit_count, global_inclusive = digit_total;  // both 0 in lanes >= kDigits
#pragma unroll
    for (int offset = 1; offset < kDigits; offset <<= 1) {
      const unsigned up_local = __shfl_up_sync(kFullMask, local_inclusive, offset);
      const unsigned up_global = __shfl_up_sync(kFullMask, global_inclusive, offset);
      if (lane >= offset) {
        local_inclusive += up_local;
        global_inclusive += up_global;
      }
    }
    if (lane < kDigits) {
      const unsigned local_start = local_inclusive - digit_count;  // keys of smaller digits in the tile
      for (int w = 0; w < kWarps; ++w) s_base[lane][w] += local_start;
      // All keys of smaller digits, plus this digit's keys in earlier tiles; never below
      // local_start, so the difference is a valid unsigned offset.
      const unsigned global_start = (global_inclusive - digit_total) + tile_offset;
      s_to_global[lane] = global_start - local_start;
    }
  }
  __syncthreads();

  // Group the tile by digit in shared memory (stable: ranks follow key order)…
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    if (32 * r + lane < count_in_warp) {
      const unsigned digit = (key[r] >> shift) & (kDigits - 1);
      const unsigned pos = s_base[digit][warp] + rank[r];
      s_keys[pos] = key[r];
      if constexpr (kPairs) s_values[pos] = value[r];
    }
  }
  __syncthreads();

  // …then write it out in tile order: consecutive threads write consecutive addresses
  // within each digit's run.
  const long long tile_first = static_cast<long long>(blockIdx.x) * kTile;
  const int tile_count = static_cast<int>(n - tile_first < kTile ? n - tile_first : kTile);
  for (int i = threadIdx.x; i < tile_count; i += kThreads) {
    const unsigned k = s_keys[i];
    const unsigned out = s_to_global[(k >> shift) & (kDigits - 1)] + static_cast<unsigned>(i);
    keys_out[out] = k;
    if constexpr (kPairs) values_out[out] = s_values[i];
  }
}

template <int kBits, bool kPairs>
void radix_sort(unsigned* keys, unsigned* values, int n) {
  constexpr int kDigits = 1 << kBits;
  static_assert(kDigits <= 32, "the ranking keeps one digit count per lane");
  static_assert(32 % kBits == 0 && (32 / kBits) % 2 == 0, "an even number of passes ends in the input array");
  if (n <= 1) return;
  const int num_tiles = sort_blocks_for(n, kTile);
  const std::size_t count_entries = static_cast<std::size_t>(kDigits) * num_tiles;
  unsigned* keys_alt = lab::workspace<unsigned>(static_cast<std::size_t>(n), 0);
  unsigned* values_alt = kPairs ? lab::workspace<unsigned>(static_cast<std::size_t>(n), 1) : nullptr;
  unsigned* counts = lab::workspace<unsigned>(count_entries + kDigits, 2);
  unsigned* digit_totals = counts + count_entries;

  unsigned *src_keys = keys, *dst_keys = keys_alt, *src_values = values, *dst_values = values_alt;
  for (int shift = 0; shift < 32; shift += kBits) {
    radix_upsweep_kernel<kBits><<<num_tiles, kThreads>>>(src_keys, n, shift, counts, num_tiles);
    LAB_CHECK_LAUNCH();
    radix_scan_kernel<<<kDigits, kScanThreads>>>(counts, num_tiles, digit_totals);
    LAB_CHECK_LAUNCH();
    radix_scatter_kernel<kBits, kPairs><<<num_tiles, kThreads>>>(src_keys, dst_keys, src_values, dst_values, n, shift,
                                                                 counts, digit_totals, num_tiles);
    LAB_CHECK_LAUNCH();
    std::swap(src_keys, dst_keys);
    std::swap(src_values, dst_values);
  }
}

}  // namespace

void sort_keys_radix_1bit(unsigned* keys, int n) { radix_sort<1, false>(keys, nullptr, n); }
void sort_pairs_radix_1bit(unsigned* keys, unsigned* values, int n) { radix_sort<1, true>(keys, values, n); }

void sort_keys_radix_4bit(unsigned* keys, int n) { radix_sort<4, false>(keys, nullptr, n); }
void sort_pairs_radix_4bit(unsigned* keys, unsigned* values, int n) { radix_sort<4, true>(keys, values, n); }
