// Corpus case "oob_read_one_past": the last thread also reads a[n] and b[n], one element
// past each array, and keeps what it read in a global variable of its own, not in c. The
// tests pass (their arrays have a guard zone after the inputs, which the read lands in),
// and only exact bounds let memcheck see the read: in the sanitizer's runs the worker
// calls the code on copies of exactly n elements.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

__device__ float peeked;  // where the out-of-bounds values go (never into c)

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    if (i == n - 1) peeked = a[n] + b[n];  // BUG: one past the end of a and of b
  }
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const int threads_per_block = 256;
  const int blocks = (n + threads_per_block - 1) / threads_per_block;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
