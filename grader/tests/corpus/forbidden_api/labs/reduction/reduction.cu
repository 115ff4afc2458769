// Corpus case "forbidden_api": right and fast, but CUB does all the work.
#include <cstddef>

#include <cub/cub.cuh>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "reduction.h"

void reduce_sum(const float* in, float* out, int n) {
  std::size_t bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in, out, n));
  void* temp = lab::workspace_bytes(bytes > 0 ? bytes : 1, 0);
  LAB_CUDA_CHECK(cub::DeviceReduce::Sum(temp, bytes, in, out, n));
}

void reduce_max(const int* in, int* out, int n) {
  std::size_t bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, bytes, in, out, n));
  void* temp = lab::workspace_bytes(bytes > 0 ? bytes : 1, 0);
  LAB_CUDA_CHECK(cub::DeviceReduce::Max(temp, bytes, in, out, n));
}
