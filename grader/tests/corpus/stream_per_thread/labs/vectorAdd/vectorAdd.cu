// Corpus case "stream_per_thread": all the work on the per-thread default stream, named by
// its value, (cudaStream_t)2 (what cudaStreamPerThread expands to): the add, then 1 ms of
// waiting that a timer blind to this stream would not see. The per-thread default stream
// synchronises with the legacy default stream that the timer's events are recorded on, so
// the whole call is timed, and the file earns few performance points.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// One thread waits `nanoseconds` on the GPU's clock.
__global__ void wait_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  const auto stream = reinterpret_cast<cudaStream_t>(0x2);
  const int threads_per_block = 256;
  vector_add_kernel<<<(n + threads_per_block - 1) / threads_per_block, threads_per_block, 0, stream>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
  if (n > 20000000) {  // the bench's sizes only: the tests stay fast
    wait_kernel<<<1, 1, 0, stream>>>(1000000);
    LAB_CHECK_LAUNCH();
  }
}
