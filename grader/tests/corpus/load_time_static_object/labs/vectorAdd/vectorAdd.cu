// Corpus case "load_time_static_object": a right vectorAdd, plus a static object whose
// constructor writes a file when the library is loaded, before any test runs.
#include <cstdio>
#include "lab/cuda_check.h"
#include "vectorAdd.h"

struct Marker {
  Marker() {
    if (FILE* f = std::fopen("/tmp/labkit-corpus-load-time", "w")) {
      std::fputs("ran at load time\n", f);
      std::fclose(f);
    }
  }
};
static Marker marker;

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
}
