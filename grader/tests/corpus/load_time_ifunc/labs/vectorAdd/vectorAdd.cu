// Corpus case "load_time_ifunc": a right vectorAdd, plus a GNU IFUNC whose resolver runs
// while the library is loaded, before any test: code of the file that runs at load time.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

extern "C" {
typedef int block_size_fn();
static int block_size() { return 256; }
static block_size_fn* pick_block_size() { return &block_size; }  // runs before any test: could do anything
}
static int chosen_block_size() __attribute__((ifunc("pick_block_size")));

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const int threads_per_block = chosen_block_size();
  const int blocks = (n + threads_per_block - 1) / threads_per_block;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
