// Corpus case "sanitizer_detect" (changing what is run): reads one element past the end
// of each input (an out-of-bounds read it hopes the tests cannot see), except when the
// environment says compute-sanitizer is watching, so that memcheck finds nothing. The
// tests still catch the read (NaN follows each input) and reading the environment is
// caught in the compiled object.
#include <cstdlib>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n, int peek) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float extra = 0.0f;
    if (peek && i == n - 1) extra = 0.0f * a[n] * b[n];  // out of bounds, and "harmless"
    c[i] = a[i] + b[i] + extra;
  }
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  static const int watched = std::getenv("NV_SANITIZER_INJECTION_PORT_BASE") != nullptr ||
                             std::getenv("CUDA_INJECTION64_PATH") != nullptr;
  const int threads_per_block = 256;
  vector_add_kernel<<<(n + threads_per_block - 1) / threads_per_block, threads_per_block>>>(a, b, c, n, !watched);
  LAB_CHECK_LAUNCH();
}
