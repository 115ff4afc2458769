// Reference solution of the compact lab: single_pass_vec, the single-pass compact tuned
// for bandwidth (instructors only; not in student repositories). compact.cu has the
// lecture's progression; this is its last step taken further.
//
// single_pass reads the input once, but a block holds its 16 values per thread in
// registers from the load to the final scatter, across the look-back: about 5 blocks
// fit on an SM, and each spends much of its life waiting rather than loading. Here:
//  - loads are 16-byte vectors (int4): 4 per thread, all issued before the first use,
//    so a 4096-int tile needs 4 load instructions per thread instead of 16;
//  - the kept values leave registers at once: each warp packs them into its own
//    segments of a shared-memory stage, ranked with ballots (one ballot per vector
//    component, __popc of the lanes below), so no block-wide barrier is needed for that;
//  - one barrier later, warp 0 scans the 32 segment counts and does the look-back while
//    the block holds nothing in registers; few registers and 16 KB of shared memory per
//    block give 8 blocks per SM, so more tiles are loading at any time;
//  - each warp copies its packed segments to the output: contiguous, coalesced stores.
// The look-back protocol is single_pass's (compact.cu): tickets in launch order, one
// 64-bit status word (flag + value) per tile, windows of 32 predecessors per step.
//
// Alignment: vector loads need 16-byte addresses. The tiles are laid over the input as
// if it started at the 16-byte boundary at or below `in` ("virtual" index j = i + head,
// head = 0..3 ints); the slots before in[0] and after in[n-1] are not elements. Interior
// tiles (all the tiles but the first and the last, usually) read int4 vectors only; the
// boundary tiles read element by element and never touch memory outside in[0, n).
//
//   ./build/dev/bin/compact_solution_bench --filter single_pass
#include <cstddef>
#include <cstdint>

#include "compact.h"
#include "compact_vec.cuh"
#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/launch_bounds.h"
#include "lab/variants.h"
#include "look_back.cuh"
#include "scan_int.cuh"

namespace compact_solution {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kVectors = 4;                           // int4 loads per thread
constexpr int kTile = kThreads * kVectors * 4;        // 4096 ints (16 KB) per tile
constexpr int kSegments = kVectors * kWarps;          // (vector row, warp) pairs: 32
constexpr int kSegmentInts = 32 * 4;                  // a warp's row: 32 lanes x 4 ints
constexpr int kMinBlocks = lab::min_blocks_per_sm(kThreads, 8);  // 8 per SM on sm_90: caps registers at 32
static_assert(kSegments == 32, "warp 0 scans the segment counts with one lane per segment");
static_assert(4 * kVectors <= 32, "a thread's keep flags fit in one 32-bit word");

// The tile's layout: vector k of thread t is chunk k * 256 + t of the tile (a chunk is 4
// consecutive ints), so each load instruction of a warp reads 512 contiguous bytes, and
// the order (k, warp, lane, component) is the element order. Segment (k, w) of the stage
// holds the kept values of warp w's row k, packed, in that order; the segments in
// (k, w) order are the tile's output.
//
// in4: the 16-byte boundary at or below in (in4 = in - head); end = n + head, the
// virtual index one past the last element. state[0]: ticket counter; state[1 + t]: the
// status word of tile t; all zero at launch. The last tile writes the count to *total.
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    single_pass_vec_kernel(const int* in, const int4* in4, int head, long long end, int* out,
                           unsigned long long* state, int* total) {
  __shared__ int s_stage[kSegments * kSegmentInts];
  __shared__ int s_count[kSegments];   // kept values per segment
  __shared__ int s_offset[kSegments];  // segment start in the tile's output
  __shared__ int s_tile, s_base;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  // Tickets in the order blocks start: a tile waits only for tiles already running.
  if (threadIdx.x == 0) s_tile = static_cast<int>(atomicAdd(state, 1ull));
  __syncthreads();
  const int tile = s_tile;

  // Load, and flag the kept values: bit 4k + c of `keep` is component c of vector k.
  const long long first_chunk = static_cast<long long>(tile) * (kTile / 4);
  const long long tile_first = 4 * first_chunk;  // virtual index of the tile's first slot
  int4 v[kVectors];
  unsigned keep = 0;
  if (tile_first >= head && tile_first + kTile <= end) {
    // Interior tile: every slot is an element. All loads first (kVectors in flight).
#pragma unroll
    for (int k = 0; k < kVectors; ++k) v[k] = __ldg(&in4[first_chunk + k * kThreads + threadIdx.x]);
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      keep |= (compact_keep(v[k].x) ? 1u : 0u) << (4 * k);
      keep |= (compact_keep(v[k].y) ? 1u : 0u) << (4 * k + 1);
      keep |= (compact_keep(v[k].z) ? 1u : 0u) << (4 * k + 2);
      keep |= (compact_keep(v[k].w) ? 1u : 0u) << (4 * k + 3);
    }
  } else {
    // First or last tile: element by element, only the slots that are elements.
#pragma unroll
    for (int k = 0; k < kVectors; ++k) {
      const long long j = 4 * (first_chunk + k * kThreads + threadIdx.x);
      int x[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const bool exists = j + c >= head && j + c < end;
        x[c] = exists ? in[j + c - head] : 0;
        keep |= (exists && compact_keep(x[c]) ? 1u : 0u) << (4 * k + c);
      }
      v[k] = make_int4(x[0], x[1], x[2], x[3]);
    }
  }

  // Pack each row's kept values into the warp's segment. A lane's place: the kept values
  // of the lanes below it (one ballot per component, popc of the lower lanes), plus its
  // own kept components before this one. Only this warp writes and reads its segments.
  const unsigned lanes_below = (1u << lane) - 1u;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    int below = 0, row_count = 0;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const unsigned ballot = __ballot_sync(kFullMask, (keep >> (4 * k + c)) & 1u);
      below += __popc(ballot & lanes_below);
      row_count += __popc(ballot);
    }
    int* segment = s_stage + (k * kWarps + warp) * kSegmentInts;
    int pos = below;
    if ((keep >> (4 * k)) & 1u) segment[pos++] = v[k].x;
    if ((keep >> (4 * k + 1)) & 1u) segment[pos++] = v[k].y;
    if ((keep >> (4 * k + 2)) & 1u) segment[pos++] = v[k].z;
    if ((keep >> (4 * k + 3)) & 1u) segment[pos] = v[k].w;
    if (lane == 0) s_count[k * kWarps + warp] = row_count;
  }
  __syncthreads();

  // Warp 0: scan the segment counts (one per lane) into the tile's output offsets, then
  // find the tile's place in the output by look-back. The other warps wait at the
  // barrier holding nothing but their stage in shared memory.
  if (warp == 0) {
    const int count = s_count[lane];
    const int inclusive = warp_inclusive_sum(count);
    s_offset[lane] = inclusive - count;
    const int tile_count = __shfl_sync(kFullMask, inclusive, 31);
    const int base = look_back(state + 1, tile, tile_count);
    if (lane == 0) {
      s_base = base;
      if (tile == static_cast<int>(gridDim.x) - 1) *total = base + tile_count;  // the last tile knows the count
    }
  }
  __syncthreads();

  // Copy the warp's segments to the output: consecutive lanes, consecutive addresses.
  const int base = s_base;
#pragma unroll
  for (int k = 0; k < kVectors; ++k) {
    const int segment = k * kWarps + warp;
    const int count = s_count[segment];
    int* dst = out + base + s_offset[segment];
    const int* src = s_stage + segment * kSegmentInts;
    for (int i = lane; i < count; i += 32) dst[i] = src[i];
  }
}

}  // namespace

int compact_single_pass_vec(const int* in, int* out, int n) {
  if (n <= 0) return 0;
  const int head = static_cast<int>((reinterpret_cast<std::uintptr_t>(in) % 16) / sizeof(int));
  const auto* in4 = reinterpret_cast<const int4*>(reinterpret_cast<std::uintptr_t>(in) - head * sizeof(int));
  const long long end = static_cast<long long>(n) + head;
  const long long tiles = (end + kTile - 1) / kTile;
  const std::size_t state_bytes = static_cast<std::size_t>(tiles + 1) * sizeof(unsigned long long);
  auto* state = static_cast<unsigned long long*>(lab::workspace_bytes(state_bytes, kSlotTiles));
  int* total = device_total();
  LAB_CUDA_CHECK(cudaMemsetAsync(state, 0, state_bytes));  // ticket 0, every status "not yet known"
  single_pass_vec_kernel<<<static_cast<unsigned>(tiles), kThreads>>>(in, in4, head, end, out, state, total);
  LAB_CHECK_LAUNCH();
  return copy_total_to_host(total);
}

}  // namespace compact_solution

LAB_REGISTER_VARIANT(compact, "single_pass_vec", compact_solution::compact_single_pass_vec,
                     "single pass, int4 loads, warp-packed shared stage, 8 blocks/SM, coalesced stores");
