// Corpus case "stream_returns_early": the lecture's kernel, launched on a non-blocking stream
// of the file's own and nothing else: vector_add returns as soon as the launch is queued,
// with no join, and the default stream, where the timer's events are, never waits for the
// stream by itself. vectorAdd allows streams of one's own (rule own_streams); the timer's
// stop event waits for every live stream of the implementation, so the call is timed
// from start to the kernel's end: the time of an honest kernel, no faster.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  static cudaStream_t side = nullptr;  // made at the first call, kept
  if (side == nullptr) LAB_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  const int threads_per_block = 256;
  vector_add_kernel<<<(n + threads_per_block - 1) / threads_per_block, threads_per_block, 0, side>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
