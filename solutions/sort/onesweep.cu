// Reference solution of the sort lab: LSD radix sort with 8-bit digits in "one sweep"
// per pass (the scheme of CUB's DeviceRadixSort on recent GPUs).
//
// radix_4bit reads the keys twice per pass (count, then scatter) and needs 8 passes.
// With 8-bit digits there are 4 passes, and the counting pass goes away:
//  1. histogram: one kernel reads the keys once and counts all four digits of every
//     key, giving the number of keys of each digit value for every pass. An exclusive
//     scan of one pass's 256 counts is where each digit's keys start in that pass's
//     output.
//  2. one kernel per pass. A block takes a tile of 4096 keys and counts its digits (per
//     warp, shared-memory atomics). It needs, per digit, how many keys of that digit the
//     tiles before it hold, and learns it by decoupled look-back, the single-pass scan of
//     the compact lab with 256 counters per tile instead of one: each tile publishes its
//     256 digit counts as soon as it has them, then thread d walks back over the earlier
//     tiles adding their digit-d counts until it meets a tile that has published its
//     inclusive prefix. Tile 0 starts every prefix at the digit's start from step 1, so
//     the sums are output positions. Between publishing and looking back (which gives
//     the tiles before it time to publish their prefixes) the block ranks its keys
//     (stably) and groups them by digit in shared memory; last, it writes each digit's
//     run to its place: nearly coalesced writes.
// Per pass that is one read and one write of the keys (and values): 4 passes plus the
// histogram read instead of radix_4bit's 8 x (2 reads + 1 write).
//
// Ranking in a warp: the warp holds 512 consecutive keys, 32 per round. From the counts,
// every (warp, digit) knows where its first key goes in the tile. Eight ballots (one per
// digit bit) tell each lane which lanes of the round share its digit (its "peers"); the
// highest peer is the leader, which takes as many places as there are peers from the
// warp's next free place for that digit (in shared memory). A key's place is the
// leader's old value plus its peers in lower lanes, so equal digits keep their input
// order: the pass is stable, as LSD radix sort needs, and sort_pairs is stable for free.
//
//   ./build/dev/bin/sort_solution_bench --filter onesweep
#include <algorithm>
#include <utility>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/launch_bounds.h"
#include "sort.h"
#include "sort_variants.cuh"

namespace {

constexpr int kBits = 8;
constexpr int kDigits = 1 << kBits;  // 256 digit values
constexpr int kPasses = 32 / kBits;  // 4, even: the keys end where they started
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 16;                // keys per thread
constexpr int kWarpKeys = 32 * kItems;    // 512 consecutive keys per warp
constexpr int kTile = kThreads * kItems;  // 4096 keys per tile
constexpr unsigned kFullMask = 0xFFFFFFFFu;
static_assert(kDigits == kThreads, "in the per-digit phases thread d looks after digit d");
static_assert(kPasses % 2 == 0, "an even number of passes ends in the input array");

constexpr int kHistThreads = 256;
constexpr int kHistItems = 8;         // keys per thread per round, loaded before they are counted
constexpr int kHistMaxBlocks = 1024;  // enough to fill the GPU; fewer blocks, fewer global atomics

// A look-back status word: flag in the top 2 bits, count in the low 30. Counts of a tile
// are <= 4096 and prefixes <= n <= 2^26, so they fit; flag and count travel in one
// 32-bit store, so a reader that sees a flag sees the count that goes with it.
constexpr unsigned kStatusAggregate = 1u << 30;  // count = this tile's keys of the digit
constexpr unsigned kStatusPrefix = 2u << 30;     // count = output position after this tile's keys of the digit
constexpr unsigned kStatusCount = (1u << 30) - 1u;
static_assert(kSortMaxN < (1 << 30), "prefixes must fit in 30 bits");

// Relaxed device-scope accesses to the status words: they go to L2 (never a stale L1
// copy) and the compiler cannot hoist them out of the spin loop. Nothing stronger is
// needed: the status word is the only thing one block reads from another in a pass.
__device__ __forceinline__ unsigned load_status(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_status(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned digit_of(unsigned key, int shift) { return (key >> shift) & (kDigits - 1); }

// Exclusive sum of v over the block's threads in thread order. Uses s_warp (kWarps
// words) and one barrier: give each call its own s_warp, or separate two calls by a
// barrier. Called by every thread of the block.
__device__ __forceinline__ unsigned block_exclusive_sum(unsigned v, unsigned* s_warp) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned inclusive = v;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const unsigned up = __shfl_up_sync(kFullMask, inclusive, offset);
    if (lane >= offset) inclusive += up;
  }
  if (lane == 31) s_warp[warp] = inclusive;
  __syncthreads();
  unsigned before = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) before += w < warp ? s_warp[w] : 0u;
  return before + inclusive - v;
}

// Step 1: hist[p * 256 + d] += number of keys whose digit p (bits 8p .. 8p+7) is d.
// hist must be zeroed before. Each block counts in shared memory and adds its counts to
// the global ones at the end. A warp whose 32 keys share a digit (sorted input, few
// distinct keys, high bytes all zero) adds 32 once instead of 32 atomics on one address.
__global__ void __launch_bounds__(kHistThreads) onesweep_histogram_kernel(const unsigned* keys, int n, unsigned* hist) {
  __shared__ unsigned s_hist[kPasses * kDigits];
  for (int i = threadIdx.x; i < kPasses * kDigits; i += kHistThreads) s_hist[i] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const long long step = static_cast<long long>(gridDim.x) * kHistThreads * kHistItems;
  for (long long first = static_cast<long long>(blockIdx.x) * kHistThreads * kHistItems; first < n; first += step) {
    unsigned key[kHistItems];
#pragma unroll
    for (int j = 0; j < kHistItems; ++j) {  // all loads first: kHistItems requests in flight
      const long long i = first + j * kHistThreads + threadIdx.x;
      key[j] = i < n ? keys[i] : 0u;
    }
#pragma unroll
    for (int j = 0; j < kHistItems; ++j) {
      // Every lane takes part in the warp votes; the lanes past n only vote.
      const bool valid = first + j * kHistThreads + threadIdx.x < n;
      const unsigned valid_lanes = __ballot_sync(kFullMask, valid);  // a prefix of the lanes
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        const unsigned d = digit_of(key[j], kBits * p);
        const unsigned d0 = __shfl_sync(kFullMask, d, 0);
        if (__all_sync(kFullMask, !valid || d == d0)) {
          if (lane == 0 && valid_lanes != 0) atomicAdd(&s_hist[p * kDigits + d0], static_cast<unsigned>(__popc(valid_lanes)));
        } else if (valid) {
          atomicAdd(&s_hist[p * kDigits + d], 1u);
        }
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kPasses * kDigits; i += kHistThreads) {
    const unsigned c = s_hist[i];
    if (c != 0) atomicAdd(&hist[i], c);
  }
}

// Step 2, one pass: moves every key (and value) to its place for the digit at `shift`.
// pass_hist: the 256 digit counts of this pass (from step 1). tile_counter and status
// (num_tiles * 256 words) must be zero at launch: a fresh ticket counter, every status
// "not yet known".
// Registers are capped for five blocks per SM with keys (48 registers, 40 warps to hide
// the memory and look-back latency) and four with pairs (64), whose 16 values stay live
// until they are placed; ptxas spills nothing at either cap on sm_90.
template <bool kPairs>
__global__ void __launch_bounds__(kThreads, lab::min_blocks_per_sm(kThreads, kPairs ? 4 : 5))
    onesweep_pass_kernel(const unsigned* keys_in, unsigned* keys_out, const unsigned* values_in,
                         unsigned* values_out, int n, int shift, const unsigned* pass_hist, unsigned* tile_counter,
                         unsigned* status) {
  __shared__ unsigned s_keys[kTile];                 // the tile grouped by digit
  __shared__ unsigned s_values[kPairs ? kTile : 1];  // their values, in the same places
  __shared__ unsigned s_warp_hist[kWarps][kDigits];  // per warp: running digit counts, then tile positions
  __shared__ unsigned s_to_global[kDigits];          // output position minus tile position, per digit
  __shared__ unsigned s_scan_local[kWarps], s_scan_global[kWarps];
  __shared__ int s_tile;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned my_digit = threadIdx.x;  // the digit this thread looks after in the per-digit phases

  // Tiles are numbered in the order blocks start, not by blockIdx: a tile then only ever
  // waits for tiles whose blocks are already running, whatever order the hardware starts
  // blocks in, so the look-back cannot deadlock.
  if (threadIdx.x == 0) s_tile = static_cast<int>(atomicAdd(tile_counter, 1u));
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s_warp_hist[w][my_digit] = 0;
  __syncthreads();
  const int tile = s_tile;

  // Load: warp w owns keys [tile * 4096 + 512 w, + 512) and reads them 32 at a time
  // (coalesced); key r of a lane is warp_first + 32 r + lane, so (r, lane) is key order.
  const long long warp_first = static_cast<long long>(tile) * kTile + warp * kWarpKeys;
  const long long left = n - warp_first;
  const int count_in_warp = left <= 0 ? 0 : (left < kWarpKeys ? static_cast<int>(left) : kWarpKeys);
  unsigned key[kItems];
#pragma unroll
  for (int r = 0; r < kItems; ++r) key[r] = 32 * r + lane < count_in_warp ? keys_in[warp_first + 32 * r + lane] : 0u;

  unsigned value[kPairs ? kItems : 1];
  if constexpr (kPairs) {
#pragma unroll
    for (int r = 0; r < kItems; ++r) value[r] = 32 * r + lane < count_in_warp ? values_in[warp_first + 32 * r + lane] : 0u;
  }

  // Count the digits first, per warp ("early counts"): the tile's counts can then be
  // published before the slower ranking, so the tiles after this one wait less.
  unsigned* warp_hist = s_warp_hist[warp];
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    if (32 * r + lane < count_in_warp) atomicAdd(&warp_hist[digit_of(key[r], shift)], 1u);
  }
  __syncthreads();

  // Thread d: the tile's count of digit d, and the warps' exclusive prefixes of it.
  unsigned digit_count = 0;
  unsigned warp_prefix[kWarps];
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    warp_prefix[w] = digit_count;
    digit_count += s_warp_hist[w][my_digit];
  }
  // Publish the count at once: later tiles may already be waiting for it. Tile 0 has no
  // tiles before it, so it publishes a prefix instead (below).
  unsigned* my_status = status + static_cast<long long>(tile) * kDigits + my_digit;
  if (tile != 0) store_status(my_status, kStatusAggregate | digit_count);
  // Keys of smaller digits in the tile: where digit d's run starts in the tile.
  const unsigned local_start = block_exclusive_sum(digit_count, s_scan_local);
  unsigned global_start = 0;  // where the tile's first key of digit d goes in the output
  if (tile == 0) {            // the same branch for the whole block (block_exclusive_sum has a barrier)
    global_start = block_exclusive_sum(pass_hist[my_digit], s_scan_global);
    store_status(my_status, kStatusPrefix | (global_start + digit_count));
  }
  // s_warp_hist[w][d] becomes the tile position of warp w's first key of digit d (only
  // thread d touches column d here; the barrier below publishes it to the warps).
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s_warp_hist[w][my_digit] = local_start + warp_prefix[w];
  __syncthreads();

  // Rank and place, 32 keys a round, in key order (see the top): the leader of a digit's
  // peers takes that many places from the warp's next free place for the digit, and a
  // key's place is the leader's old value plus its peers in lower lanes. The tile ends
  // up grouped by digit in shared memory, equal digits in input order.
  const unsigned lanes_below = (1u << lane) - 1u;
#pragma unroll
  for (int r = 0; r < kItems; ++r) {
    const int left_in_round = count_in_warp - 32 * r;
    const unsigned valid = left_in_round >= 32 ? kFullMask : (left_in_round <= 0 ? 0u : (1u << left_in_round) - 1u);
    const unsigned digit = digit_of(key[r], shift);
    unsigned peers = valid;  // every lane votes, the lanes past n included; `valid` drops those
#pragma unroll
    for (int b = 0; b < kBits; ++b) {
      const unsigned ballot = __ballot_sync(kFullMask, (digit >> b) & 1u);
      peers &= ((digit >> b) & 1u) ? ballot : ~ballot;
    }
    const bool mine = (valid >> lane) & 1u;
    const int leader = mine ? 31 - __clz(peers) : lane;
    unsigned before = 0;
    if (mine && lane == leader) {  // one leader per digit in the round: no two lanes share an address
      before = warp_hist[digit];
      warp_hist[digit] = before + __popc(peers);
    }
    const unsigned pos = __shfl_sync(kFullMask, before, leader) + __popc(peers & lanes_below);
    if (mine) {
      s_keys[pos] = key[r];
      if constexpr (kPairs) s_values[pos] = value[r];
    }
    __syncwarp();  // the next round's leader of this digit may be another lane: order its read after this write
  }

  // Decoupled look-back, thread d for digit d: add the digit-d counts of the tiles
  // before this one, nearest first, until one of them has published an inclusive prefix
  // (tile 0 always does). A tile that has published nothing yet is waited for; it took
  // its ticket before this tile, so it is running and will publish.
  if (tile != 0) {
    unsigned exclusive = 0;
    for (int pred = tile - 1;; --pred) {
      const unsigned* p = status + static_cast<long long>(pred) * kDigits + my_digit;
      unsigned s;
      do {
        s = load_status(p);
      } while ((s & ~kStatusCount) == 0);
      exclusive += s & kStatusCount;
      if (s & kStatusPrefix) break;
    }
    store_status(my_status, kStatusPrefix | (exclusive + digit_count));  // unblocks the tiles after this one
    global_start = exclusive;
  }
  // global_start >= local_start is not needed: unsigned arithmetic wraps, and adding a
  // tile position i >= local_start below gives global_start + (i - local_start).
  s_to_global[my_digit] = global_start - local_start;
  __syncthreads();

  // Write the tile out in tile order: consecutive threads write consecutive addresses
  // within each digit's run.
  const long long tile_first = static_cast<long long>(tile) * kTile;
  const int tile_count = static_cast<int>(n - tile_first < kTile ? n - tile_first : kTile);
  for (int i = threadIdx.x; i < tile_count; i += kThreads) {
    const unsigned k = s_keys[i];
    const unsigned out = s_to_global[digit_of(k, shift)] + static_cast<unsigned>(i);
    keys_out[out] = k;
    if constexpr (kPairs) values_out[out] = s_values[i];
  }
}

template <bool kPairs>
void onesweep_sort(unsigned* keys, unsigned* values, int n) {
  if (n <= 1) return;
  const int num_tiles = sort_blocks_for(n, kTile);
  // Slot 2 holds the histograms, then the pass's ticket counter (padded to 128 bytes) and
  // the look-back status words: counter and status are re-zeroed before every pass, in
  // one memset; one pass's status (16 MB at 2^26 keys) stays in L2 while it is used.
  const std::size_t hist_words = static_cast<std::size_t>(kPasses) * kDigits;
  const std::size_t pass_words = 32 + static_cast<std::size_t>(num_tiles) * kDigits;
  unsigned* keys_alt = lab::workspace<unsigned>(static_cast<std::size_t>(n), 0);
  unsigned* values_alt = kPairs ? lab::workspace<unsigned>(static_cast<std::size_t>(n), 1) : nullptr;
  unsigned* hist = lab::workspace<unsigned>(hist_words + pass_words, 2);
  unsigned* tile_counter = hist + hist_words;
  unsigned* status = tile_counter + 32;

  LAB_CUDA_CHECK(cudaMemsetAsync(hist, 0, (hist_words + pass_words) * sizeof(unsigned)));
  const int hist_blocks = std::min(sort_blocks_for(n, kHistThreads * kHistItems), kHistMaxBlocks);
  onesweep_histogram_kernel<<<hist_blocks, kHistThreads>>>(keys, n, hist);
  LAB_CHECK_LAUNCH();

  unsigned *src_keys = keys, *dst_keys = keys_alt, *src_values = values, *dst_values = values_alt;
  for (int pass = 0; pass < kPasses; ++pass) {
    if (pass > 0) LAB_CUDA_CHECK(cudaMemsetAsync(tile_counter, 0, pass_words * sizeof(unsigned)));
    onesweep_pass_kernel<kPairs><<<num_tiles, kThreads>>>(src_keys, dst_keys, src_values, dst_values, n, kBits * pass,
                                                          hist + pass * kDigits, tile_counter, status);
    LAB_CHECK_LAUNCH();
    std::swap(src_keys, dst_keys);
    std::swap(src_values, dst_values);
  }
}

}  // namespace

void sort_keys_radix_8bit_onesweep(unsigned* keys, int n) { onesweep_sort<false>(keys, nullptr, n); }
void sort_pairs_radix_8bit_onesweep(unsigned* keys, unsigned* values, int n) { onesweep_sort<true>(keys, values, n); }
