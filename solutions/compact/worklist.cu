// Reference solution of the compact lab's further part: worklists (instructors only; not
// in student repositories).
//
//   worklist_push  one thread per element; a kept element takes its ring slot with
//                  atomicInc(tail, capacity - 1), which wraps the tail from capacity - 1
//                  back to 0 by itself: no modulo, and the stored tail stays in range
//   worklist_take  one thread per taker; atomicDec(top, limit) gives each taker a top
//                  of its own. 1 .. capacity is an item (box[old - 1]); 0 means the box was
//                  empty (and the top wrapped to limit), above capacity that an earlier
//                  taker wrapped it: the valid range and the invalid range of the lecture
//
//   ./build/dev/bin/compact_solution_test --gtest_filter='*Worklist*'
#include "compact.h"
#include "lab/cuda_check.h"

namespace compact_worklist {
namespace {

constexpr int kWorklistThreads = 256;
constexpr long long kWorklistMaxBlocks = 65536;  // a grid-stride loop covers the rest

unsigned worklist_blocks(int items) {
  const long long blocks = (static_cast<long long>(items) + kWorklistThreads - 1) / kWorklistThreads;
  return static_cast<unsigned>(blocks < kWorklistMaxBlocks ? blocks : kWorklistMaxBlocks);
}

__global__ void push_kernel(const int* __restrict__ in, int n, int* __restrict__ ring, unsigned last_slot,
                            unsigned* tail) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int value = in[i];
    if (compact_keep(value)) {
      const unsigned slot = atomicInc(tail, last_slot);  // old value; stores 0 after last_slot
      ring[slot] = value;
    }
  }
}

__global__ void take_kernel(const int* __restrict__ box, unsigned capacity, unsigned* top, unsigned limit,
                            int* __restrict__ taken, int takers) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < takers; t += stride) {
    const unsigned old = atomicDec(top, limit);  // old value; 0 stores limit
    taken[t] = (old >= 1u && old <= capacity) ? box[old - 1u] : -1;
  }
}

}  // namespace
}  // namespace compact_worklist

void worklist_push(const int* in, int n, int* ring, int capacity, unsigned* tail) {
  if (n <= 0) return;  // nothing to push, and a grid of 0 blocks is an invalid launch
  compact_worklist::push_kernel<<<compact_worklist::worklist_blocks(n), compact_worklist::kWorklistThreads>>>(
      in, n, ring, static_cast<unsigned>(capacity) - 1u, tail);
  LAB_CHECK_LAUNCH();
}

void worklist_take(const int* box, int capacity, unsigned* top, unsigned limit, int* taken, int takers) {
  if (takers <= 0) return;
  compact_worklist::take_kernel<<<compact_worklist::worklist_blocks(takers), compact_worklist::kWorklistThreads>>>(
      box, static_cast<unsigned>(capacity), top, limit, taken, takers);
  LAB_CHECK_LAUNCH();
}
