// Corpus case "cub_alias" (someone else's work): CUB does the work behind a namespace
// alias, and its header is named through a macro, so that neither "cub::" nor an
// "#include <cub/..." line appears in the code. The compiler's dependency list and the
// compiled object's symbols still name CUB.
#include <cstddef>

#define LIBRARY_HEADER <cub/device/device_reduce.cuh>
#include LIBRARY_HEADER

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "reduction.h"

namespace library = cub;

void reduce_sum(const float* in, float* out, int n) {
  std::size_t bytes = 0;
  LAB_CUDA_CHECK(library::DeviceReduce::Sum(nullptr, bytes, in, out, n));
  void* temp = lab::workspace_bytes(bytes > 0 ? bytes : 1, 0);
  LAB_CUDA_CHECK(library::DeviceReduce::Sum(temp, bytes, in, out, n));
}

void reduce_max(const int* in, int* out, int n) {
  std::size_t bytes = 0;
  LAB_CUDA_CHECK(library::DeviceReduce::Max(nullptr, bytes, in, out, n));
  void* temp = lab::workspace_bytes(bytes > 0 ? bytes : 1, 0);
  LAB_CUDA_CHECK(library::DeviceReduce::Max(temp, bytes, in, out, n));
}
