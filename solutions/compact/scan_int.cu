// Reference solution of the compact lab (instructors only): the hierarchical exclusive
// scan of ints that the lecture's compact (map -> scan -> scatter) and expand use.
//
// Level 0 scans tiles of 2048 ints, one per block of 1024 threads (Blelloch: an
// up-sweep that builds partial sums in a tree, then a down-sweep that turns the tree
// into exclusive prefixes), and writes each tile's sum. The tile sums are scanned the
// same way (recursively: at most three levels for n < 2^31) and added back to every
// element of their tile. Written for clarity: the fast compact does not use it on the
// input, only on its small array of per-tile counts.
#include <stdexcept>
#include <string>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "scan_int.cuh"

namespace compact_solution {
namespace {

constexpr int kScanThreads = 1024;
constexpr int kScanTile = 2 * kScanThreads;  // two elements per thread, as the lecture recommends
constexpr int kMaxLevels = 3;                // 2048^3 > 2^31: three levels cover every int n

// Exclusive scan of one tile of 2048 ints in shared memory; block_sums[blockIdx.x] gets
// the tile's sum. Every thread runs every iteration (the barriers are never divergent)
// and within one iteration each thread touches its own pair of slots, so there is no
// read/write race and no double buffering is needed. in may equal out: a block reads its
// whole tile before writing any of it, and no other block touches that tile.
__global__ void __launch_bounds__(kScanThreads)
    blelloch_tile_scan_kernel(const int* in, int* out, int n, int* block_sums) {
  __shared__ int s[kScanTile];
  const int t = threadIdx.x;
  const long long base = static_cast<long long>(blockIdx.x) * kScanTile;
  const long long i0 = base + t, i1 = base + t + kScanThreads;
  s[t] = i0 < n ? in[i0] : 0;  // elements past n count as 0, the identity of +
  s[t + kScanThreads] = i1 < n ? in[i1] : 0;

  // Up-sweep (reduction): after the step with `stride`, s[j] for j = 2*stride*m - 1
  // holds the sum of the 2*stride elements ending at j. The active threads are the
  // first ones (index from the thread number), so whole warps stay idle, not diverge.
  for (int stride = 1; stride < kScanTile; stride *= 2) {
    __syncthreads();
    const int j = (t + 1) * stride * 2 - 1;
    if (j < kScanTile) s[j] += s[j - stride];
  }
  __syncthreads();
  if (t == 0) {
    block_sums[blockIdx.x] = s[kScanTile - 1];
    s[kScanTile - 1] = 0;  // the identity at the root makes the down-sweep exclusive
  }
  // Down-sweep: each node passes its value to its left child and the old left value
  // plus its own to its right child.
  for (int stride = kScanTile / 2; stride >= 1; stride /= 2) {
    __syncthreads();
    const int j = (t + 1) * stride * 2 - 1;
    if (j < kScanTile) {
      const int left = s[j - stride];
      s[j - stride] = s[j];
      s[j] += left;
    }
  }
  __syncthreads();
  if (i0 < n) out[i0] = s[t];
  if (i1 < n) out[i1] = s[t + kScanThreads];
}

// Adds the scanned sum of the tiles before tile b to every element of tile b.
__global__ void __launch_bounds__(kScanThreads) add_tile_offsets_kernel(int* out, int n, const int* tile_offsets) {
  const int add = tile_offsets[blockIdx.x];
  const long long i0 = static_cast<long long>(blockIdx.x) * kScanTile + threadIdx.x;
  const long long i1 = i0 + kScanThreads;
  if (i0 < n) out[i0] += add;
  if (i1 < n) out[i1] += add;
}

void scan_level(const int* in, int* out, int n, int* total, int level) {
  const long long tiles = (static_cast<long long>(n) + kScanTile - 1) / kScanTile;
  if (tiles <= 1) {  // one tile: its sum is the total
    blelloch_tile_scan_kernel<<<1, kScanThreads>>>(in, out, n, total);
    LAB_CHECK_LAUNCH();
    return;
  }
  if (level + 1 >= kMaxLevels) {
    throw std::length_error("exclusive_scan_int: n = " + std::to_string(n) + " needs more than 3 levels");
  }
  int* sums = lab::workspace<int>(static_cast<std::size_t>(tiles), kSlotScanLevel0 + level);
  blelloch_tile_scan_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(in, out, n, sums);
  LAB_CHECK_LAUNCH();
  scan_level(sums, sums, static_cast<int>(tiles), total, level + 1);  // in place
  add_tile_offsets_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(out, n, sums);
  LAB_CHECK_LAUNCH();
}

}  // namespace

void exclusive_scan_int(const int* in, int* out, int n, int* total) {
  if (n <= 0) {
    LAB_CUDA_CHECK(cudaMemsetAsync(total, 0, sizeof(int)));
    return;
  }
  scan_level(in, out, n, total, 0);
}

int* device_total() { return lab::workspace<int>(1, kSlotTotal); }

int copy_total_to_host(const int* total) {
  int host = 0;
  // A synchronous copy on the default stream: it waits for every kernel queued before
  // it, which is the price of returning a count to the host.
  LAB_CUDA_CHECK(cudaMemcpy(&host, total, sizeof(int), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace compact_solution
