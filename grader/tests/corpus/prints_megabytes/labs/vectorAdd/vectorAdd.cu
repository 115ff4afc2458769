// Corpus case "prints_megabytes": right, but prints up to 100000 result lines per call
// (debug output left in): megabytes over the test run, which the grader must cap.
#include <cstdio>
#include <vector>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const int threads_per_block = 256;
  const int blocks = (n + threads_per_block - 1) / threads_per_block;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
  const int shown = n < 100000 ? n : 100000;
  std::vector<float> host(shown);
  LAB_CUDA_CHECK(cudaMemcpy(host.data(), c, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < shown; ++i) std::printf("debug: c[%d] = %.9g\n", i, host[i]);
}
