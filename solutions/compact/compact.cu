// Reference solution of the compact lab: compact() (instructors only; not in student
// repositories). expand() is in expand.cu, the shared scan in scan_int.cu.
//
// The progression, each registered with the bench:
//   three_pass   the lecture's compact: a map kernel writes flags, the hierarchical
//                scan turns them into addresses, a scatter kernel moves the kept
//                elements. Simple, but the flags and addresses make ~7 passes over
//                n ints in DRAM.
//   two_pass     tiles of 4096 ints: a counting pass writes one count per tile, a
//                small scan turns the counts into tile offsets, and a second pass
//                re-reads the input, ranks the kept elements inside the tile with warp
//                ballots and __popc, and scatters. Reads the input twice.
//   single_pass  one pass: the tiles take tickets in launch order, publish their counts
//                and find their offsets by "decoupled look-back" on the counts of the
//                tiles before them (each tile waits only for tiles already running, so
//                it cannot deadlock). Reads the input once: the DRAM bound of compact.
//   single_pass_vec  (compact_vec.cu) single_pass with int4 loads, kept values packed
//                through shared memory right away and coalesced stores: fewer registers,
//                more blocks per SM, so more of the input is in flight.
// compact() (what the tests and the grader call) uses single_pass_vec.
//
//   ./build/dev/bin/compact_solution_test    the lab's tests against this reference
//   ./build/dev/bin/compact_solution_bench   every variant timed, with CUB and the CPU
#include <cstddef>

#include "compact.h"
#include "compact_vec.cuh"
#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "look_back.cuh"
#include "scan_int.cuh"

namespace compact_solution {
namespace {

// ---------------------------------------------------------------------------------
// three_pass: the lecture's map -> exclusive scan -> scatter.

constexpr int kSimpleThreads = 256;

unsigned blocks_for(long long items, int threads) { return static_cast<unsigned>((items + threads - 1) / threads); }

__global__ void keep_flags_kernel(const int* in, int* flags, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = compact_keep(in[i]) ? 1 : 0;
}

// Scatter with a filter (lecture 7): only flagged elements move, to their scanned address.
__global__ void scatter_flagged_kernel(const int* in, const int* flags, const int* addresses, int* out, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && flags[i] != 0) out[addresses[i]] = in[i];
}

int compact_three_pass(const int* in, int* out, int n) {
  if (n <= 0) return 0;
  int* flags = lab::workspace<int>(static_cast<std::size_t>(n), kSlotPerElement);
  int* addresses = lab::workspace<int>(static_cast<std::size_t>(n), kSlotAddresses);
  int* total = device_total();
  keep_flags_kernel<<<blocks_for(n, kSimpleThreads), kSimpleThreads>>>(in, flags, n);
  LAB_CHECK_LAUNCH();
  exclusive_scan_int(flags, addresses, n, total);
  scatter_flagged_kernel<<<blocks_for(n, kSimpleThreads), kSimpleThreads>>>(in, flags, addresses, out, n);
  LAB_CHECK_LAUNCH();
  return copy_total_to_host(total);
}

// ---------------------------------------------------------------------------------
// Tiles for two_pass and single_pass.
//
// A tile is kItems "chunks" of kThreads consecutive ints; thread t holds element
// t of every chunk (warp-striped), so each load instruction of a warp reads 128
// contiguous bytes. The tile's order is (chunk k, warp w, lane), i.e. exactly the
// element order, so ranking by (k, w) and then by lane keeps compact stable.

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 16;
constexpr int kTile = kThreads * kItems;  // 4096 ints = 16 KB of input per tile
constexpr int kChunks = kItems * kWarps;  // (chunk, warp) pairs per tile
static_assert(kChunks % 32 == 0, "warp 0 scans the (chunk, warp) counts, kChunks / 32 per lane");

long long tiles_for(int n) { return (static_cast<long long>(n) + kTile - 1) / kTile; }

// Loads this thread's kItems values of the tile starting at `start` and, per chunk, the
// warp's ballot of the predicate (bit l set: lane l keeps its value). Out-of-range
// elements are not kept. Every lane runs every ballot (no divergence around them).
__device__ __forceinline__ void load_tile(const int* in, int n, long long start, int (&value)[kItems],
                                          unsigned (&keep)[kItems]) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {  // all loads first: kItems independent requests in flight
    const long long i = start + static_cast<long long>(k) * kThreads + threadIdx.x;
    value[k] = i < n ? in[i] : 0;
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long i = start + static_cast<long long>(k) * kThreads + threadIdx.x;
    keep[k] = __ballot_sync(kFullMask, i < n && compact_keep(value[k]));
  }
}

// Fills s_offset[k * kWarps + w] with the number of kept elements of the tile before
// chunk k of warp w (a block-local exclusive scan of the per-warp ballot counts) and
// returns the tile's count in warp 0 (other warps get 0). Must be called by every
// thread of the block; it synchronises once, and warp 0 writes s_offset afterwards,
// so the caller synchronises again before other warps read s_offset.
__device__ __forceinline__ int rank_tile(const unsigned (&keep)[kItems], int* s_offset) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) s_offset[k * kWarps + warp] = __popc(keep[k]);
  }
  __syncthreads();
  int tile_count = 0;
  if (warp == 0) {
    constexpr int kPerLane = kChunks / 32;  // lane l owns entries [l * kPerLane, (l + 1) * kPerLane)
    int local[kPerLane];
    int sum = 0;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      local[j] = s_offset[lane * kPerLane + j];
      sum += local[j];
    }
    const int inclusive = warp_inclusive_sum(sum);  // over the lanes' sums
    int running = inclusive - sum;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      s_offset[lane * kPerLane + j] = running;
      running += local[j];
    }
    tile_count = __shfl_sync(kFullMask, inclusive, 31);
  }
  return tile_count;
}

// Writes the kept values: chunk k of warp w starts at base + s_offset[k * kWarps + w],
// and a lane's place inside it is the number of kept lanes below it (popc of the
// ballot masked to the lower lanes). Consecutive kept lanes write consecutive ints.
__device__ __forceinline__ void scatter_tile(const int (&value)[kItems], const unsigned (&keep)[kItems],
                                             const int* s_offset, int base, int* out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned lower_lanes = (1u << lane) - 1u;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if ((keep[k] >> lane) & 1u) out[base + s_offset[k * kWarps + warp] + __popc(keep[k] & lower_lanes)] = value[k];
  }
}

// ---------------------------------------------------------------------------------
// two_pass: count per tile, scan the counts, rank and scatter per tile.

__global__ void __launch_bounds__(kThreads) count_tiles_kernel(const int* in, int n, int* tile_counts) {
  __shared__ int s_offset[kChunks];
  int value[kItems];
  unsigned keep[kItems];
  load_tile(in, n, static_cast<long long>(blockIdx.x) * kTile, value, keep);
  const int count = rank_tile(keep, s_offset);
  if (threadIdx.x == 0) tile_counts[blockIdx.x] = count;
}

__global__ void __launch_bounds__(kThreads)
    scatter_tiles_kernel(const int* in, int* out, int n, const int* tile_offsets) {
  __shared__ int s_offset[kChunks];
  int value[kItems];
  unsigned keep[kItems];
  load_tile(in, n, static_cast<long long>(blockIdx.x) * kTile, value, keep);
  rank_tile(keep, s_offset);
  __syncthreads();  // warp 0's offsets are visible to every warp
  scatter_tile(value, keep, s_offset, tile_offsets[blockIdx.x], out);
}

int compact_two_pass(const int* in, int* out, int n) {
  if (n <= 0) return 0;
  const long long tiles = tiles_for(n);
  int* tile_offsets = lab::workspace<int>(static_cast<std::size_t>(tiles), kSlotAddresses);
  int* total = device_total();
  count_tiles_kernel<<<static_cast<unsigned>(tiles), kThreads>>>(in, n, tile_offsets);
  LAB_CHECK_LAUNCH();
  exclusive_scan_int(tile_offsets, tile_offsets, static_cast<int>(tiles), total);  // counts -> offsets, in place
  scatter_tiles_kernel<<<static_cast<unsigned>(tiles), kThreads>>>(in, out, n, tile_offsets);
  LAB_CHECK_LAUNCH();
  return copy_total_to_host(total);
}

// ---------------------------------------------------------------------------------
// single_pass: decoupled look-back (look_back.cuh). state[0] is the ticket counter,
// state[1 + t] the status word of tile t; all of it is zeroed before the launch.

__global__ void __launch_bounds__(kThreads)
    single_pass_kernel(const int* in, int* out, int n, unsigned long long* state, int* total) {
  __shared__ int s_offset[kChunks];
  __shared__ int s_tile, s_base;
  // Tiles are numbered in the order blocks start, not by blockIdx: a tile then only
  // ever waits for tiles whose blocks are already running, whatever the scheduler does.
  if (threadIdx.x == 0) s_tile = static_cast<int>(atomicAdd(state, 1ull));
  __syncthreads();
  const int tile = s_tile;
  int value[kItems];
  unsigned keep[kItems];
  load_tile(in, n, static_cast<long long>(tile) * kTile, value, keep);
  const int count = rank_tile(keep, s_offset);
  if (threadIdx.x < 32) {
    const int base = look_back(state + 1, tile, count);
    if (threadIdx.x == 0) {
      s_base = base;
      if (tile == static_cast<int>(gridDim.x) - 1) *total = base + count;  // the last tile knows the count
    }
  }
  __syncthreads();
  scatter_tile(value, keep, s_offset, s_base, out);
}

int compact_single_pass(const int* in, int* out, int n) {
  if (n <= 0) return 0;
  const long long tiles = tiles_for(n);
  const std::size_t state_bytes = static_cast<std::size_t>(tiles + 1) * sizeof(unsigned long long);
  auto* state = static_cast<unsigned long long*>(lab::workspace_bytes(state_bytes, kSlotTiles));
  int* total = device_total();
  LAB_CUDA_CHECK(cudaMemsetAsync(state, 0, state_bytes));  // ticket 0, every status "not yet known"
  single_pass_kernel<<<static_cast<unsigned>(tiles), kThreads>>>(in, out, n, state, total);
  LAB_CHECK_LAUNCH();
  return copy_total_to_host(total);
}

}  // namespace
}  // namespace compact_solution

int compact(const int* in, int* out, int n) { return compact_solution::compact_single_pass_vec(in, out, n); }

LAB_REGISTER_VARIANT(compact, "three_pass", compact_solution::compact_three_pass,
                     "the lecture's map -> hierarchical exclusive scan -> scatter");
LAB_REGISTER_VARIANT(compact, "two_pass", compact_solution::compact_two_pass,
                     "count per tile, scan the counts, re-read and scatter with ballot ranks");
LAB_REGISTER_VARIANT(compact, "single_pass", compact_solution::compact_single_pass,
                     "one pass: ballot ranks + decoupled look-back over tile counts");
