// vectorAdd lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Write a kernel in which each thread adds one pair of elements, and launch enough
// threads to cover the whole vector. Then make it fast: the bench compares you with
// the reference and with the memory bandwidth of your GPU.
//
//   cmake --build --preset dev && ./build/dev/bin/vectorAdd_test   # correctness
//   ./build/dev/bin/vectorAdd_bench                                       # timing
//   python3 -m grader vectorAdd                                                   # your score
//
// Handout: handouts/vectorAdd.md. Gaps are marked TODO(student).
#include "lab/cuda_check.h"
#include "vectorAdd.h"

// One thread per element: thread i computes c[i] = a[i] + b[i].
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  // TODO(student): compute this thread's global index from blockIdx.x, blockDim.x and
  // threadIdx.x. The grid has more threads than elements when n is not a multiple of
  // the block size, so only threads with an index below n may touch memory.
  (void)a;
  (void)b;
  (void)c;
  (void)n;
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;  // nothing to do, and a grid of 0 blocks is an invalid launch
  const int threads_per_block = 256;  // a multiple of the warp size (32)
  // TODO(student): launch enough blocks to cover all n elements (round up).
  const int blocks = 1;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}

// TODO(student): the lecture's steps, each a function with vector_add's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void vector_add_one_per_thread(const float* a, const float* b, float* c, int n) { ... }
//     LAB_REGISTER_VARIANT(vector_add, "one_per_thread", vector_add_one_per_thread,
//                          "one line on what it does");
//   Needed: "one_per_thread" and "grid_stride" (include "lab/variants.h").
//   Your vector_add may call the fastest of them.
