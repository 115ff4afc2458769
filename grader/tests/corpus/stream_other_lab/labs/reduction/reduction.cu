// Corpus case "stream_other_lab": a right reduction whose kernels all run on a
// non-blocking stream of the file's own, in reduction, a lab whose manifest does not allow
// streams of one's own (only vectorAdd's does, for its streams part). The tests pass (the
// worker synchronises the device after each call) and the timer would wait for the stream,
// but the rule stands: the static checks find cudaStreamCreateWithFlags in the object.
#include <algorithm>
#include <climits>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "reduction.h"

constexpr int kThreadsPerBlock = 256;

// Block b reduces its tile of in[] to block_sums[b]: load into shared memory, then a tree.
__global__ void block_sum_kernel(const float* in, float* block_sums, int n) {
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

// The same for the maximum (INT_MIN is the identity of max).
__global__ void block_max_kernel(const int* in, int* block_maxima, int n) {
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

// Reduces n values with `kernel`, level by level, until one block writes out[0], every
// level on a non-blocking stream of the file's own, and returns without waiting for it.
// The partial results alternate between workspace slots 0 and 1.
template <class T>
void reduce_levels(void (*kernel)(const T*, T*, int), const T* in, T* out, int n) {
  static cudaStream_t side = nullptr;
  if (side == nullptr) LAB_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  long long count = n;
  const T* src = in;
  int slot = 0;
  do {
    const int blocks = static_cast<int>(std::max(1LL, (count + kThreadsPerBlock - 1) / kThreadsPerBlock));
    T* dst = blocks == 1 ? out : lab::workspace<T>(blocks, slot);
    kernel<<<blocks, kThreadsPerBlock, 0, side>>>(src, dst, static_cast<int>(count));
    LAB_CHECK_LAUNCH();
    src = dst;
    count = blocks;
    slot ^= 1;
  } while (count > 1);
}

void reduce_sum(const float* in, float* out, int n) { reduce_levels(block_sum_kernel, in, out, n); }

void reduce_max(const int* in, int* out, int n) { reduce_levels(block_max_kernel, in, out, n); }
