// Corpus case "stream_nonblocking": a stream that does not synchronise with the default
// stream (cudaStreamNonBlocking, flag value 1), made through a declaration under another
// name so that no spelling rule sees it, and 2 ms of work left running on it at the end
// of every call at bench sizes: the events around the call, on the default stream, would
// not wait for it by themselves. The object refers to the runtime's symbol, which
// vectorAdd allows (rule own_streams, for its streams part), and the call binds to the
// worker's own cudaStreamCreateWithFlags whatever the file calls it: the timer's stop
// event waits for the stream, so the 2 ms are in the stamps, the judge's clock agrees with
// them, and the file earns few performance points, honestly timed.
#include "lab/cuda_check.h"
#include "vectorAdd.h"

extern "C" cudaError_t make_queue(cudaStream_t* stream, unsigned int flags) __asm__("cudaStreamCreateWithFlags");

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
  const int threads_per_block = 256;
  vector_add_kernel<<<(n + threads_per_block - 1) / threads_per_block, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
  if (n > 20000000) {  // the bench's sizes only: the tests stay fast
    static cudaStream_t side = nullptr;
    if (side == nullptr) LAB_CUDA_CHECK(make_queue(&side, 1u));
    wait_kernel<<<1, 1, 0, side>>>(2000000);
    LAB_CHECK_LAUNCH();
  }
}
