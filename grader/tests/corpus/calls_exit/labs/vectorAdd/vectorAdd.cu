// Corpus case "calls_exit": ends the program for n = 0 with exit(0), a success code:
// the tests after it never run, and the grader must not read that as a pass.
#include <cstdlib>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) std::exit(0);  // BUG: "nothing to do" ends the whole program
  const int threads_per_block = 256;
  const int blocks = (n + threads_per_block - 1) / threads_per_block;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
