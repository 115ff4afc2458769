// Corpus case "renamed_copy_steps": the lecture's kernel and a copy of it under another
// name, registered as the two steps. The copy is the same work: "grid_stride" earns nothing
// (grader/CONTRACT.md, "Steps are distinct work").
#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "vectorAdd.h"

namespace {

constexpr int kThreads = 256;

__global__ void one_per_thread_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// The same body under another name.
__global__ void grid_stride_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void vector_add_one_per_thread(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  one_per_thread_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}

void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  grid_stride_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, int n) { vector_add_one_per_thread(a, b, c, n); }

LAB_REGISTER_VARIANT(vector_add, "one_per_thread", vector_add_one_per_thread, "the lecture's kernel");
LAB_REGISTER_VARIANT(vector_add, "grid_stride", vector_add_grid_stride, "the same kernel, renamed");
