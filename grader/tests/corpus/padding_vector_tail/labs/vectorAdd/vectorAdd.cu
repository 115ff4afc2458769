// Corpus case "padding_vector_tail": float4 loads and stores with no tail handling, at
// large sizes only. The last float4 of an n that is no multiple of 4 writes up to three
// floats past c[n - 1]; at the tests' sizes the exact kernel runs, so the tests and
// compute-sanitizer see nothing. At the bench's odd size (30,000,001) those floats land
// in the buffer's rounding to whole 2 MiB: no fault, and the output itself is right.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_quads(const float4* a, const float4* b, float4* c, int quads) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < quads) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const int threads_per_block = 256;
  if (n > 20000000) {  // larger than any test: "the buffers are rounded up there anyway"
    const int quads = (n + 3) / 4;
    vector_add_quads<<<(quads + threads_per_block - 1) / threads_per_block, threads_per_block>>>(
        reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(c), quads);
  } else {
    vector_add_kernel<<<(n + threads_per_block - 1) / threads_per_block, threads_per_block>>>(a, b, c, n);
  }
  LAB_CHECK_LAUNCH();
}
