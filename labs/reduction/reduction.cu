// reduction lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Reduce an array to one value on the GPU: the sum of n floats and the maximum of n ints.
// Start inside one block: copy a tile into shared memory, then add pairs in a tree,
// halving the number of working threads at each step, until thread 0 holds the block's
// result. Then make it work for every n (the results of many blocks are reduced again),
// and then fast: the bench compares you with the reference, with CUB and with the memory
// bandwidth of your GPU.
//
//   cmake --build --preset dev --target reduction_test && ./build/dev/bin/reduction_test   # correctness
//   ./build/dev/bin/reduction_bench                                                            # timing
//   python3 -m grader reduction                                                                # your score
//
// Handout: handouts/reduction.md. Gaps are marked TODO(student).
#include <climits>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "reduction.h"

// Threads per block: a power of two (the tree halves it) and a multiple of the warp size.
constexpr int kThreadsPerBlock = 256;

// Block b reduces its tile, in[b * blockDim.x] .. in[b * blockDim.x + blockDim.x - 1]
// (the part of it below n), to one sum and writes it to block_sums[b].
__global__ void block_sum_kernel(const float* in, float* block_sums, int n) {
  // TODO(student): 0. Declare the block's scratch array in shared memory, one slot per
  //   thread, visible to every thread of the block: __shared__ float partial[kThreadsPerBlock];
  // TODO(student): 1. Load. Thread t copies its element into partial[t]. A thread whose
  //   index is n or more stores 0, the identity of +, so the last, partly filled tile
  //   needs no special case (and never reads past in[n - 1]). For n close to INT_MAX the
  //   last block's indices pass INT_MAX: compute the index as a long long.
  // TODO(student): 2. Tree. In each step, half as many threads as before each add two
  //   slots of partial. Lecture 3 shows two ways to pick them: `t % (2 * stride) == 0`
  //   (stride 1, 2, 4, ...) and `t < stride` (stride blockDim.x / 2, ..., 2, 1). Both are
  //   correct; the handout asks you to time both and explain the difference. Check that
  //   your loop runs its last step (stride 1): lecture 3's second loop does not.
  //   Before each step every thread must wait until the previous step is done:
  //   __syncthreads(). Every thread of the block must reach it, so never put it inside
  //   an `if` that only some threads enter.
  // TODO(student): 3. Thread 0 writes the block's result, partial[0], to
  //   block_sums[blockIdx.x].
  (void)in;
  (void)block_sums;
  (void)n;
}

// The same for the maximum: block b writes the largest int of its tile to block_maxima[b].
__global__ void block_max_kernel(const int* in, int* block_maxima, int n) {
  // TODO(student): as block_sum_kernel, with an int array and max(a, b) in place of a + b.
  //   The identity of max, which threads past the end store, is INT_MIN (not 0 and not
  //   -1: the data may all be negative, or all INT_MIN).
  (void)in;
  (void)block_maxima;
  (void)n;
}

void reduce_sum(const float* in, float* out, int n) {
  // TODO(student): every n from 0 to INT_MAX. One block reduces kThreadsPerBlock elements,
  //   so launch enough blocks to cover n (round up, in long long arithmetic: n + 255
  //   overflows an int near INT_MAX; at least one block, so that n = 0 writes the
  //   identity, 0). With more than one block, the kernel writes its `blocks` sums to
  //   scratch memory, e.g. float* sums = lab::workspace<float>(blocks, 0); then reduce
  //   those sums with the same kernel, and again, until a single block is left: that
  //   launch writes straight to out. Alternate between two workspace slots (0 and 1) so
  //   that a launch never overwrites the sums it is reading. Do not cudaMalloc here: it
  //   would be timed.
  const int blocks = 1;
  block_sum_kernel<<<blocks, kThreadsPerBlock>>>(in, out, n);
  LAB_CHECK_LAUNCH();
}

void reduce_max(const int* in, int* out, int n) {
  // TODO(student): as reduce_sum, with block_max_kernel (use lab::workspace<int>).
  const int blocks = 1;
  block_max_kernel<<<blocks, kThreadsPerBlock>>>(in, out, n);
  LAB_CHECK_LAUNCH();
}

// TODO(student): the lecture's steps, each a function with reduce_sum's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void reduce_sum_interleaved(const float* in, float* out, int n) { ... }
//     LAB_REGISTER_VARIANT(reduce_sum, "interleaved", reduce_sum_interleaved,
//                          "t % (2 * stride) works");
//   Needed: "interleaved", "contiguous", "first_add" and "warp_finish" (include
//   "lab/variants.h"). Your reduce_sum may call the fastest of them.

// ---- Find the bug (handout: "Find the bug") -------------------------------------------
// Lecture 3's "alternative" reduction, copied as the slides print it, in a one-block
// wrapper. It compiles and runs, and its tests (Registered/FixBlockSumGpu.*) fail: find
// the bug, fix it here, and explain it in answers.md (question bug_stride_loop). Trace
// the loop by hand for a block of 8 threads if you are stuck.
__global__ void lecture_block_sum_kernel(const float* in, float* out, int n) {
  __shared__ float partialSum[kFixBlockThreads];
  const unsigned t = threadIdx.x;
  partialSum[t] = t < static_cast<unsigned>(n) ? in[t] : 0.0f;  // 0 past the end: the identity of +
  for (unsigned stride = blockDim.x / 2; stride > 1; stride /= 2) {
    __syncthreads();
    if (t < stride) partialSum[t] += partialSum[t + stride];
  }
  if (t == 0) *out = partialSum[0];
}

void fix_block_sum(const float* in, float* out, int n) {
  lecture_block_sum_kernel<<<1, kFixBlockThreads>>>(in, out, n);
  LAB_CHECK_LAUNCH();
}

// ---- Further part: atomicCAS (handout: "Atomics beyond atomicAdd") ------------------------
// atomicMax exists for ints, not for floats. atomicCAS(address, expected, desired) writes
// `desired` only if *address still holds `expected`, and returns what it found there: a
// read-modify-write you build yourself, in a loop that retries when another thread got in
// first. Plan:
//   1. a __device__ function that merges one value into *address:
//        read the current bits; while (the float they stand for) < value: try to swap in
//        __float_as_int(value) with atomicCAS; stop when the swap succeeded, otherwise
//        retry with the bits atomicCAS returned (someone else changed them).
//      Why compare the floats, not the ints? Negative floats' bit patterns order the
//      other way round.
//   2. a kernel: each block finds its own maximum (a grid-stride loop and a tree, as in
//      reduce_max), then ONE thread of the block merges it into *out: one atomic per block,
//      not one per element.
//   3. atomic_max_float: set *out to -INFINITY first (a one-thread kernel, or
//      cudaMemcpy), then launch the kernel. n = 0 needs only the first step.
void atomic_max_float(const float* in, float* out, int n) {
  // TODO(student): steps 1-3 above. Until then this writes nothing, and its tests fail.
  (void)in;
  (void)out;
  (void)n;
}

// ---- Further part: the last block finishes (handout: "The last block finishes") ------------
// One launch instead of two: each block writes its partial sum to
// lab::workspace<float>(blocks), then __threadfence() (so that every other block will see
// that write before it sees the ticket below), then takes a ticket with
// atomicAdd(counter, 1) (the counter: lab::workspace<unsigned>(1, another slot), set to 0
// once with cudaMemset before the first call). The block that gets ticket blocks - 1 knows
// every other partial sum is written and visible: it adds them, writes *out, and sets the
// counter back to 0 for the next call. Read the partial sums through a `volatile` pointer
// (or with __ldcg) so that no stale cached copy is used.
void last_block_sum(const float* in, float* out, int n) {
  // TODO(student): the plan above. Until then this writes nothing, and its tests fail.
  (void)in;
  (void)out;
  (void)n;
}
