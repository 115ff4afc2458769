// Corpus case "infinite_loop": a grid-stride loop with a 16-bit index. For n > 65535
// the index wraps around before reaching n, so the loop never ends.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (unsigned short i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {  // BUG: 16 bits
    c[i] = a[i] + b[i];
  }
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const int threads_per_block = 256;
  const int blocks = (n + threads_per_block - 1) / threads_per_block;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
