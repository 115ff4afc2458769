// Corpus case "calls_cpu_reference" (someone else's work): right, but the kit's sequential versions
// do the work: the input is copied to the host, reduce_sum_cpu and reduce_max_cpu (the tests' answer
// key, linked into every lab's library) sum it, and the result is copied back.
#include <vector>

#include "lab/cuda_check.h"
#include "reduction.h"

void reduce_sum(const float* in, float* out, int n) {
  std::vector<float> host(n > 0 ? n : 1);
  if (n > 0) LAB_CUDA_CHECK(cudaMemcpy(host.data(), in, sizeof(float) * n, cudaMemcpyDeviceToHost));
  const float sum = reduce_sum_cpu(host.data(), n);
  LAB_CUDA_CHECK(cudaMemcpy(out, &sum, sizeof sum, cudaMemcpyHostToDevice));
}

void reduce_max(const int* in, int* out, int n) {
  std::vector<int> host(n > 0 ? n : 1);
  if (n > 0) LAB_CUDA_CHECK(cudaMemcpy(host.data(), in, sizeof(int) * n, cudaMemcpyDeviceToHost));
  const int largest = reduce_max_cpu(host.data(), n);
  LAB_CUDA_CHECK(cudaMemcpy(out, &largest, sizeof largest, cudaMemcpyHostToDevice));
}
