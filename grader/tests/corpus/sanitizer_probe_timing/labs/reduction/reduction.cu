// Corpus case "sanitizer_probe_timing" (changing what is run, by timing): each call times
// a small probe kernel with CUDA events. Under compute-sanitizer the probe runs hundreds of
// times slower; then the file reduces with a kernel that has its barriers, else with one
// that has none (a race racecheck would report). The sanitizer's run without the tools
// launches the racy kernel, the run under racecheck the other: the grader compares the two
// and the lab loses the sanitizer penalty, with a message that names the racy kernel.
#include <algorithm>
#include <climits>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "reduction.h"

constexpr int kThreadsPerBlock = 256;

__device__ float probe_sink;

// Shared-memory traffic, each thread on its own slot (no race): cheap on a bare GPU, slow
// under the tools, which check every shared-memory access.
__global__ void probe_kernel() {
  __shared__ float slots[kThreadsPerBlock];
  volatile float* mine = slots;
  float v = static_cast<float>(threadIdx.x);
  for (int k = 0; k < 256; ++k) {
    mine[threadIdx.x] = v;
    v = mine[threadIdx.x] * 0.5f + 1.0f;
  }
  if (threadIdx.x == 0) probe_sink = v;
}

// Whether the probe is slow: the tools are watching.
bool watched() {
  probe_kernel<<<1, kThreadsPerBlock>>>();  // the first launch loads the module: not timed
  cudaEvent_t start, stop;
  LAB_CUDA_CHECK(cudaEventCreate(&start));
  LAB_CUDA_CHECK(cudaEventCreate(&stop));
  LAB_CUDA_CHECK(cudaEventRecord(start));
  probe_kernel<<<1, kThreadsPerBlock>>>();
  LAB_CUDA_CHECK(cudaEventRecord(stop));
  LAB_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  LAB_CUDA_CHECK(cudaEventDestroy(start));
  LAB_CUDA_CHECK(cudaEventDestroy(stop));
  return ms > 0.25f;
}

// The tree reduction with its barriers (what runs under the tools).
__global__ void block_sum_safe_kernel(const float* in, float* block_sums, int n) {
  __shared__ float partial[kThreadsPerBlock];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) block_sums[blockIdx.x] = partial[0];
}

// The same without barriers (what runs everywhere else): a race.
__global__ void block_sum_kernel(const float* in, float* block_sums, int n) {
  __shared__ float partial[kThreadsPerBlock];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0.0f;
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
  }
  if (t == 0) block_sums[blockIdx.x] = partial[0];
}

__global__ void block_max_safe_kernel(const int* in, int* block_maxima, int n) {
  __shared__ int partial[kThreadsPerBlock];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + t;
  partial[t] = i < n ? in[i] : INT_MIN;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] = max(partial[t], partial[t + stride]);
    __syncthreads();
  }
  if (t == 0) block_maxima[blockIdx.x] = partial[0];
}

__global__ void block_max_kernel(const int* in, int* block_maxima, int n) {
  __shared__ int partial[kThreadsPerBlock];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + t;
  partial[t] = i < n ? in[i] : INT_MIN;
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] = max(partial[t], partial[t + stride]);
  }
  if (t == 0) block_maxima[blockIdx.x] = partial[0];
}

// Reduces n values with `kernel`, level by level, until one block writes out[0].
template <class T>
void reduce_levels(void (*kernel)(const T*, T*, int), const T* in, T* out, int n) {
  long long count = n;
  const T* src = in;
  int slot = 0;
  do {
    const int blocks = static_cast<int>(std::max(1LL, (count + kThreadsPerBlock - 1) / kThreadsPerBlock));
    T* dst = blocks == 1 ? out : lab::workspace<T>(blocks, slot);
    kernel<<<blocks, kThreadsPerBlock>>>(src, dst, static_cast<int>(count));
    LAB_CHECK_LAUNCH();
    src = dst;
    count = blocks;
    slot ^= 1;
  } while (count > 1);
}

void reduce_sum(const float* in, float* out, int n) {
  reduce_levels(watched() ? block_sum_safe_kernel : block_sum_kernel, in, out, n);
}

void reduce_max(const int* in, int* out, int n) {
  reduce_levels(watched() ? block_max_safe_kernel : block_max_kernel, in, out, n);
}
