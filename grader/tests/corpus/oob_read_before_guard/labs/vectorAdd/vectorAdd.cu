// Corpus case "oob_read_before_guard": every thread reads a[i] and b[i] before its
// `i < n` test, so the threads of the last block past n - 1 read beyond both arrays.
// Nothing read there reaches c, so the tests pass; memcheck must report the read with its
// kernel and line (the sanitizer's runs call the code on arrays of exactly n elements).
// The reads are volatile: a plain `a[i]` whose value only the `i < n` branch uses is moved
// into that branch by the compiler, and then no thread reads past the end at all.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float x = static_cast<const volatile float*>(a)[i];  // BUG: read before the bounds test
  const float y = static_cast<const volatile float*>(b)[i];
  if (i < n) c[i] = x + y;
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const int threads_per_block = 256;
  const int blocks = (n + threads_per_block - 1) / threads_per_block;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
