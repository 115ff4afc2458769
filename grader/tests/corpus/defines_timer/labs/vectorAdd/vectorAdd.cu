// Corpus case "defines_timer" (changing how time is measured): defines the CUDA runtime's
// cudaEventElapsedTime, which a program linked statically with this file would call
// instead of the runtime's, so every time it measures is tiny; the kernel is right but
// slow (a small grid that loops). The judge times in its own process, where this
// definition does not exist: the slow kernel is timed as it is.
#include <cuda_runtime.h>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return cudaSuccess;
}

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  vector_add_kernel<<<8, 64>>>(a, b, c, n);  // 512 threads for the whole vector: slow
  LAB_CHECK_LAUNCH();
}
