// Corpus case "wrong_tail": the grid is rounded down, so the last partial block of
// elements is never computed. Right only when n is a multiple of the block (or n < 256).
#include <algorithm>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const int threads_per_block = 256;
  const int blocks = std::max(1, n / threads_per_block);  // BUG: rounds down
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
