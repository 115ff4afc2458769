// compact lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// compact keeps the elements with compact_keep(x) (x > 0, see compact.h) in their
// order and returns how many; expand writes in[i] counts[i] times. Both are lecture 7's
// three steps: map (a flag or a count per element), exclusive scan (where each
// element's output starts), scatter (each element writes itself there). The host code
// below already chains the steps; the kernels are yours. Get it right first, then fast:
// the bench compares you with the reference and with CUB's DeviceSelect.
//
//   cmake --preset dev -DLABKIT_LABS=compact && cmake --build --preset dev   # build
//   ./build/dev/bin/compact_test                                             # correctness
//   ./build/dev/bin/compact_bench                                            # timing
//   python3 -m grader compact                                                # your score
//
// Handout: handouts/compact.md. Gaps are marked TODO(student).
#include <cstddef>
#include <stdexcept>

#include "compact.h"
#include "lab/buffer.h"  // lab::workspace: scratch memory that is not re-allocated on every call
#include "lab/cuda_check.h"

namespace {

constexpr int kThreads = 256;               // threads per block of the map and scatter kernels
constexpr int kScanThreads = 512;           // threads per block of the scan
constexpr int kScanTile = 2 * kScanThreads; // elements one scan block handles (2 per thread)
// Workspace slots: each array that is alive at the same time as another needs its own.
constexpr int kSlotFlags = 0, kSlotAddresses = 1, kSlotTotal = 2, kSlotFirstScanLevel = 3;
constexpr int kMaxScanLevels = 5;           // slots 3..7; 1024^4 > 2^31, so 4 levels would do

unsigned blocks_for(long long items, int threads) { return static_cast<unsigned>((items + threads - 1) / threads); }

// ---------------------------------------------------------------------------------
// Step 1, map: flags[i] = 1 when in[i] is kept, else 0.
__global__ void keep_flags_kernel(const int* in, int* flags, int n) {
  // TODO(student): one thread per element. Compute the global index i, and let only
  // threads with i < n touch memory. Use compact_keep(in[i]) from compact.h: the tests
  // and the CPU version use the same predicate.
  (void)in;
  (void)flags;
  (void)n;
}

// ---------------------------------------------------------------------------------
// Step 2, exclusive scan (lecture 4, made exclusive as in lecture 7). Three kernels:

// Scans tile blockIdx.x (elements blockIdx.x * kScanTile … + kScanTile - 1) so that
// out[i] = the sum of the tile's elements before i, and writes the tile's total sum to
// tile_sums[blockIdx.x]. in may equal out (the scan of the tile sums runs in place).
__global__ void scan_tile_kernel(const int* in, int* out, int n, int* tile_sums) {
  // TODO(student): load the tile into shared memory (elements past n count as 0), scan
  // it there (Blelloch: up-sweep, then set the last element to 0 and down-sweep, which
  // gives the exclusive scan directly), then write it back and the tile's sum.
  // Every thread must reach every __syncthreads(): never put one inside an `if` or a
  // loop whose trip count differs between threads (the lecture's first Hillis-Steele
  // code deadlocks for this reason). Read and write different elements within one step,
  // or double buffer: the lecture's first version has a read/write race.
  // Index products can exceed 2^31 for large n: compute them in long long.
  (void)in;
  (void)out;
  (void)n;
  (void)tile_sums;
}

// Adds tile_offsets[b] (the scanned tile sums: everything in tiles before b) to every
// element of tile b.
__global__ void add_tile_offsets_kernel(int* out, int n, const int* tile_offsets) {
  // TODO(student): one block per tile works well: every thread of block b adds
  // tile_offsets[b] to its elements of tile b (only those with index < n).
  (void)out;
  (void)n;
  (void)tile_offsets;
}

// out = exclusive scan of in[0, n); *total (a device int) = the sum of all n.
// Provided: the hierarchy of lecture 4 (tile scans, a scan of the tile sums, add back).
void exclusive_scan(const int* in, int* out, int n, int* total, int level = 0) {
  const long long tiles = (static_cast<long long>(n) + kScanTile - 1) / kScanTile;
  if (tiles <= 1) {  // a single tile: its sum is the total
    scan_tile_kernel<<<1, kScanThreads>>>(in, out, n, total);
    LAB_CHECK_LAUNCH();
    return;
  }
  if (level + 1 >= kMaxScanLevels) throw std::length_error("exclusive_scan: too many levels");
  int* sums = lab::workspace<int>(static_cast<std::size_t>(tiles), kSlotFirstScanLevel + level);
  scan_tile_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(in, out, n, sums);
  LAB_CHECK_LAUNCH();
  exclusive_scan(sums, sums, static_cast<int>(tiles), total, level + 1);  // scan the tile sums, in place
  add_tile_offsets_kernel<<<static_cast<unsigned>(tiles), kScanThreads>>>(out, n, sums);
  LAB_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------
// Step 3, scatter.

// compact: a flagged in[i] goes to out[addresses[i]].
__global__ void scatter_kept_kernel(const int* in, const int* flags, const int* addresses, int* out, int n) {
  // TODO(student): one thread per element; only flagged elements are written (writing
  // the others would overwrite kept ones, or write past the count).
  (void)in;
  (void)flags;
  (void)addresses;
  (void)out;
  (void)n;
}

// expand: in[i] goes to out[offsets[i]], out[offsets[i] + 1], …, counts[i] times.
__global__ void write_runs_kernel(const int* in, const int* counts, const int* offsets, int* out, int n) {
  // TODO(student): one thread per element writes its run. (What happens when a few
  // counts are huge? The handout's questions ask you to measure it.)
  (void)in;
  (void)counts;
  (void)offsets;
  (void)out;
  (void)n;
}

}  // namespace

int compact(const int* in, int* out, int n) {
  if (n <= 0) return 0;  // nothing to do, and a grid of 0 blocks is an invalid launch
  int* flags = lab::workspace<int>(static_cast<std::size_t>(n), kSlotFlags);
  int* addresses = lab::workspace<int>(static_cast<std::size_t>(n), kSlotAddresses);
  int* total = lab::workspace<int>(1, kSlotTotal);
  keep_flags_kernel<<<blocks_for(n, kThreads), kThreads>>>(in, flags, n);
  LAB_CHECK_LAUNCH();
  exclusive_scan(flags, addresses, n, total);
  scatter_kept_kernel<<<blocks_for(n, kThreads), kThreads>>>(in, flags, addresses, out, n);
  LAB_CHECK_LAUNCH();
  // TODO(student): the count is the scan's total, which lives in device memory: copy it
  // to the host (LAB_CUDA_CHECK(cudaMemcpy(&count, total, sizeof(int),
  // cudaMemcpyDeviceToHost))) and return it. The copy waits for the kernels before it.
  return 0;
}

int expand(const int* in, const int* counts, int* out, int n) {
  if (n <= 0) return 0;
  int* offsets = lab::workspace<int>(static_cast<std::size_t>(n), kSlotFlags);
  int* total = lab::workspace<int>(1, kSlotTotal);
  // TODO(student): the map step is already done: counts[] is it. Scan the counts into
  // offsets with exclusive_scan, copy the total to the host, and return 0 at once when
  // it is 0 (nothing to write). Then launch write_runs_kernel and return the total.
  (void)total;
  write_runs_kernel<<<blocks_for(n, kThreads), kThreads>>>(in, counts, offsets, out, n);
  LAB_CHECK_LAUNCH();
  return 0;
}

// TODO(student): the lecture's steps, each a function with compact's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     int compact_three_pass(const int* in, int* out, int n) { ... }
//     LAB_REGISTER_VARIANT(compact, "three_pass", compact_three_pass,
//                          "one line on what it does");
//   Needed: "three_pass" (include "lab/variants.h").
//   Your compact may call the fastest of them.

// ---- Further part: worklists with atomicInc and atomicDec (handout: "Further part:
// worklists, atomicInc and atomicDec"; tests: --gtest_filter='*Worklist*') -----------------

// Pushes every kept in[i] (compact_keep) into the ring buffer ring[0, capacity); *tail is
// the next free slot and wraps from capacity - 1 back to 0 (compact.h has the contract).
void worklist_push(const int* in, int n, int* ring, int capacity, unsigned* tail) {
  // TODO(student): a kernel with one thread per element (or a grid-stride loop). A thread
  // whose element is kept takes its slot with
  //     unsigned slot = atomicInc(tail, capacity - 1);   // returns the old *tail
  // and writes ring[slot] = its element. atomicInc stores 0 instead of going past
  // capacity - 1, so the tail wraps by itself: *tail must end in [0, capacity), which
  // atomicAdd followed by `% capacity` does not give. n = 0 launches nothing.
  (void)in;
  (void)n;
  (void)ring;
  (void)capacity;
  (void)tail;
}

// Each of `takers` threads takes at most one item from the donation box box[0, *top)
// (compact.h has the contract).
void worklist_take(const int* box, int capacity, unsigned* top, unsigned limit, int* taken, int takers) {
  // TODO(student): a kernel with one thread per taker. Each does
  //     unsigned old = atomicDec(top, limit);            // returns the old *top
  // An old value from 1 to capacity is an item: taken[t] = box[old - 1]. Any other old
  // value is not: 0 means the box was empty (atomicDec then stored limit, not -1), and a
  // value above capacity means an earlier taker already wrapped it; both get
  // taken[t] = -1. Never read box outside [0, capacity). takers = 0 launches nothing.
  (void)box;
  (void)capacity;
  (void)top;
  (void)limit;
  (void)taken;
  (void)takers;
}
