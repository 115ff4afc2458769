// Corpus case "huge_array" (harming the machine): a 1 GiB initialised device array makes
// a 1 GiB object file (and as much memory in every process that loads it). The grader's
// limit on the size of the files a compiler writes ends it as BUILD_ERROR.
#include "vectorAdd.h"

__device__ char g_ballast[1u << 30] = {1};

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i] + 0.0f * g_ballast[i & 1023];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  vector_add_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
