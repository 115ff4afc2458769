// Reference solution of the vectorAdd lab (instructors only; not in student repositories).
//
// The progression, each registered with the bench:
//   one_per_thread  the lecture's kernel: one thread per element, ceil(n / 256) blocks
//   grid_stride     a grid sized to the GPU that loops over the vector
//   float4          16-byte loads and stores: a quarter of the memory instructions
// vector_add (what the tests and the grader call) uses float4, falling back to scalar
// accesses when the pointers are not 16-byte aligned.
// Part A, the host program: vector_add_host (pageable memory) and vector_add_host_pinned
// (staged through page-locked buffers) do the allocations, copies and frees themselves,
// check every call, and time the kernel with events.
// Further part: three_kernels launches the lecture's K1, K2 and K3 once per iteration;
// fused_kernel does the same work in one launch. independent_chains runs independent
// chains of small kernels on the default stream or spread over streams of its own.
#include <cstdint>
#include <cstring>

#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "vectorAdd.h"

namespace {

constexpr int kThreads = 256;

int blocks_for(long long work_items) { return static_cast<int>((work_items + kThreads - 1) / kThreads); }

__global__ void one_per_thread_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void grid_stride_kernel(const float* a, const float* b, float* c, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) c[i] = a[i] + b[i];
}

// Thread i handles floats 4i .. 4i+3 as one float4; the last n % 4 floats are done by
// the first threads one at a time.
__global__ void float4_kernel(const float4* a, const float4* b, float4* c, int n4, const float* a_tail,
                              const float* b_tail, float* c_tail, int tail) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (i < tail) c_tail[i] = a_tail[i] + b_tail[i];
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

void vector_add_one_per_thread(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  one_per_thread_kernel<<<blocks_for(n), kThreads>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}

void vector_add_grid_stride(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  int sms = 0;
  LAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // Enough resident blocks to fill every SM (8 x 256 threads = 2048, the SM's limit).
  const int blocks = std::min(blocks_for(n), sms * 8);
  grid_stride_kernel<<<blocks, kThreads>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}

void vector_add_float4(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  if (!aligned16(a) || !aligned16(b) || !aligned16(c)) {
    vector_add_one_per_thread(a, b, c, n);  // a float4 access must be 16-byte aligned
    return;
  }
  const int n4 = n / 4, tail = n % 4;
  const int threads_needed = n4 > tail ? n4 : tail;
  float4_kernel<<<blocks_for(threads_needed), kThreads>>>(
      reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(c), n4,
      a + 4 * n4, b + 4 * n4, c + 4 * n4, tail);
  LAB_CHECK_LAUNCH();
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, int n) { vector_add_float4(a, b, c, n); }

LAB_REGISTER_VARIANT(vector_add, "one_per_thread", vector_add_one_per_thread, "the lecture's kernel");
LAB_REGISTER_VARIANT(vector_add, "grid_stride", vector_add_grid_stride, "a GPU-sized grid looping over n");
LAB_REGISTER_VARIANT(vector_add, "float4", vector_add_float4, "16-byte vector loads and stores");

// ---- Part A: the host program --------------------------------------------------------------
//
// Every CUDA call returns a status; the first failure is the one worth reporting (later
// calls often fail only because of it). Each step runs only while the status is still
// cudaSuccess, and one clean-up at the end serves every path: cudaFree(nullptr) does
// nothing, and pointers start as nullptr, so whatever was allocated is freed and nothing
// leaks, whichever call failed.
namespace {

// Keeps the first error: a clean-up call's error matters only when nothing failed before.
void keep_first(cudaError_t& status, cudaError_t next) {
  if (status == cudaSuccess) status = next;
}

// Creates the two events that time the kernel.
cudaError_t create_events(cudaEvent_t& start, cudaEvent_t& stop) {
  cudaError_t status = cudaEventCreate(&start);
  keep_first(status, cudaEventCreate(&stop));
  return status;
}

// Records start, launches the kernel, records stop, and checks the launch itself
// (a bad configuration is reported here; a fault while running, by the next synchronising call).
cudaError_t launch_timed(const float* d_a, const float* d_b, float* d_c, int n, cudaEvent_t start, cudaEvent_t stop) {
  cudaError_t status = cudaEventRecord(start, 0);
  if (status != cudaSuccess) return status;
  one_per_thread_kernel<<<blocks_for(n), kThreads>>>(d_a, d_b, d_c, n);
  status = cudaGetLastError();
  keep_first(status, cudaEventRecord(stop, 0));
  return status;
}

// The kernel's time, once `stop` has been reached (the copy back or a synchronisation waited for it).
cudaError_t elapsed_ms(cudaEvent_t start, cudaEvent_t stop, float& ms) {
  cudaError_t status = cudaEventSynchronize(stop);
  keep_first(status, cudaEventElapsedTime(&ms, start, stop));
  return status;
}

void destroy_events(cudaError_t& status, cudaEvent_t start, cudaEvent_t stop) {
  if (start != nullptr) keep_first(status, cudaEventDestroy(start));
  if (stop != nullptr) keep_first(status, cudaEventDestroy(stop));
}

}  // namespace

HostRunResult vector_add_host(const float* h_a, const float* h_b, float* h_c, int n) {
  if (n <= 0) return {cudaSuccess, 0.0f};  // nothing to copy, and a 0-block launch is an error
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  float ms = 0.0f;

  cudaError_t status = cudaMalloc(&d_a, bytes);
  if (status == cudaSuccess) status = cudaMalloc(&d_b, bytes);
  if (status == cudaSuccess) status = cudaMalloc(&d_c, bytes);
  if (status == cudaSuccess) status = create_events(start, stop);
  // From pageable memory cudaMemcpy returns once the data is on its way or there: the
  // host waits, and the driver stages it through a pinned buffer of its own.
  if (status == cudaSuccess) status = cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice);
  if (status == cudaSuccess) status = cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice);
  if (status == cudaSuccess) status = launch_timed(d_a, d_b, d_c, n, start, stop);
  // The copy back waits for the kernel, so a fault while it ran is reported here.
  if (status == cudaSuccess) status = cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost);
  if (status == cudaSuccess) status = elapsed_ms(start, stop, ms);

  // One clean-up for every path.
  destroy_events(status, start, stop);
  keep_first(status, cudaFree(d_a));
  keep_first(status, cudaFree(d_b));
  keep_first(status, cudaFree(d_c));
  return {status, status == cudaSuccess ? ms : 0.0f};
}

HostRunResult vector_add_host_pinned(const float* h_a, const float* h_b, float* h_c, int n) {
  if (n <= 0) return {cudaSuccess, 0.0f};
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *p_a = nullptr, *p_b = nullptr, *p_c = nullptr;  // page-locked staging buffers
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  float ms = 0.0f;

  cudaError_t status = cudaMallocHost(&p_a, bytes);
  if (status == cudaSuccess) status = cudaMallocHost(&p_b, bytes);
  if (status == cudaSuccess) status = cudaMallocHost(&p_c, bytes);
  if (status == cudaSuccess) status = cudaMalloc(&d_a, bytes);
  if (status == cudaSuccess) status = cudaMalloc(&d_b, bytes);
  if (status == cudaSuccess) status = cudaMalloc(&d_c, bytes);
  if (status == cudaSuccess) status = create_events(start, stop);
  if (status == cudaSuccess) {
    // Staging costs one host copy each way; a program that keeps its data in pinned
    // memory from the start saves it (and the slow cudaMallocHost of every call).
    std::memcpy(p_a, h_a, bytes);
    std::memcpy(p_b, h_b, bytes);
    // From pinned memory the copy engine reads the host memory directly (DMA), so the
    // copies can be asynchronous: they, the kernel and the copy back queue up in order
    // on the default stream, and the host waits once.
    status = cudaMemcpyAsync(d_a, p_a, bytes, cudaMemcpyHostToDevice, 0);
  }
  if (status == cudaSuccess) status = cudaMemcpyAsync(d_b, p_b, bytes, cudaMemcpyHostToDevice, 0);
  if (status == cudaSuccess) status = launch_timed(d_a, d_b, d_c, n, start, stop);
  if (status == cudaSuccess) status = cudaMemcpyAsync(p_c, d_c, bytes, cudaMemcpyDeviceToHost, 0);
  // An asynchronous copy has only been queued: wait before the host reads p_c.
  if (status == cudaSuccess) status = cudaStreamSynchronize(0);
  if (status == cudaSuccess) status = elapsed_ms(start, stop, ms);
  if (status == cudaSuccess) std::memcpy(h_c, p_c, bytes);

  destroy_events(status, start, stop);
  keep_first(status, cudaFree(d_a));
  keep_first(status, cudaFree(d_b));
  keep_first(status, cudaFree(d_c));
  for (float* p : {p_a, p_b, p_c}) {
    if (p != nullptr) keep_first(status, cudaFreeHost(p));
  }
  return {status, status == cudaSuccess ? ms : 0.0f};
}

// ---- Further part: launch overhead and kernel fusion ---------------------------------------
//
// three_kernels is the lecture's program: K1, K2 and K3, each a few microseconds of work on
// a small array, launched once per iteration, so the launches cost more than the work.
// fused_kernel does all three in one kernel with the loop inside: one launch in all. A block
// owns one tile (K3 needs no other block's elements), each thread keeps its element in a
// register between the steps, and fusing lets K2 count into the block's own histogram in
// shared memory, merged into hist once at the end instead of 256 global atomics per
// iteration.
namespace {

__global__ void k1_scale_add_kernel(unsigned int* x, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 3u * x[i] + static_cast<unsigned int>(i);
}

__global__ void k2_count_kernel(const unsigned int* x, unsigned int* hist, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&hist[x[i] % kFuseBins], 1u);
}

// One block of kFuseTile threads per tile; `len` is the tile's length (the last may be short).
__global__ void k3_reverse_tiles_kernel(unsigned int* x, int n) {
  __shared__ unsigned int tile[kFuseTile];
  const long long start = static_cast<long long>(blockIdx.x) * kFuseTile;
  const int len = static_cast<int>(n - start < kFuseTile ? n - start : kFuseTile);
  const int k = threadIdx.x;
  if (k < len) tile[k] = x[start + k];
  __syncthreads();  // the whole tile is read before any element of it is written
  if (k < len) x[start + k] = tile[len - 1 - k];
}

__global__ void fused_steps_kernel(unsigned int* x, unsigned int* hist, int n, int iterations) {
  __shared__ unsigned int tile[kFuseTile];
  __shared__ unsigned int counts[kFuseBins];
  const long long start = static_cast<long long>(blockIdx.x) * kFuseTile;
  const int len = static_cast<int>(n - start < kFuseTile ? n - start : kFuseTile);
  const int k = threadIdx.x;
  const bool mine = k < len;  // threads past a short last tile still reach every barrier
  for (int b = k; b < kFuseBins; b += blockDim.x) counts[b] = 0u;
  unsigned int v = mine ? x[start + k] : 0u;
  __syncthreads();
  for (int t = 0; t < iterations; ++t) {
    // K1: this thread's element sits at position start + k in every iteration.
    v = 3u * v + static_cast<unsigned int>(start + k);
    // K2: into the block's counters (shared memory atomics).
    if (mine) atomicAdd(&counts[v % kFuseBins], 1u);
    // K3: through the tile. The second barrier keeps the next iteration's writes to
    // `tile` until every thread has read its new element.
    tile[k] = v;
    __syncthreads();
    if (mine) v = tile[len - 1 - k];
    __syncthreads();
  }
  if (mine) x[start + k] = v;
  for (int b = k; b < kFuseBins; b += blockDim.x) {
    if (counts[b] != 0u) atomicAdd(&hist[b], counts[b]);
  }
}

int tiles_for(int n) { return static_cast<int>((static_cast<long long>(n) + kFuseTile - 1) / kFuseTile); }

}  // namespace

void three_kernels(unsigned int* x, unsigned int* hist, int n, int iterations) {
  if (n <= 0 || iterations <= 0) return;
  const int blocks = tiles_for(n);  // blocks of kFuseTile threads: one per tile, for K3
  for (int t = 0; t < iterations; ++t) {
    k1_scale_add_kernel<<<blocks, kFuseTile>>>(x, n);
    LAB_CHECK_LAUNCH();
    k2_count_kernel<<<blocks, kFuseTile>>>(x, hist, n);
    LAB_CHECK_LAUNCH();
    k3_reverse_tiles_kernel<<<blocks, kFuseTile>>>(x, n);
    LAB_CHECK_LAUNCH();
  }
}

void fused_kernel(unsigned int* x, unsigned int* hist, int n, int iterations) {
  if (n <= 0 || iterations <= 0) return;
  fused_steps_kernel<<<tiles_for(n), kFuseTile>>>(x, hist, n, iterations);
  LAB_CHECK_LAUNCH();
}

// ---- Further part: streams ------------------------------------------------------------------
//
// Each kernel of independent_chains works on one chain of about a thousand elements: a few
// blocks, most of the GPU idle, for tens of microseconds (chain_step's rounds depend on each
// other). On the default stream the chains' kernels run one after the other; on streams of
// their own, kernels of different chains run side by side. The streams are made with
// cudaStreamCreate: *blocking* streams, which synchronise with the legacy default stream, so
// the caller's later work on the default stream waits for them with no join of ours (and a
// bench that dlopen()s this library times all of their work with its default-stream events).
namespace {

__global__ void chain_step_kernel(unsigned int* chain, int n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) chain[i] = chain_step(chain[i]);
}

// Stream k of independent_chains, made at the first call that needs it and kept for the
// program's life: creating a stream costs far more than a launch.
cudaStream_t chain_stream(int k) {
  static cudaStream_t streams[kMaxChainStreams] = {};
  if (streams[k] == nullptr) LAB_CUDA_CHECK(cudaStreamCreate(&streams[k]));
  return streams[k];
}

}  // namespace

void independent_chains(unsigned int* x, int n, int chains, int steps, int streams) {
  if (n <= 0 || chains <= 0 || steps <= 0) return;
  const int used = streams < 1 ? 1 : (streams > kMaxChainStreams ? kMaxChainStreams : streams);
  const int threads = 256;
  const int blocks = static_cast<int>((static_cast<long long>(n) + threads - 1) / threads);
  // Step by step across the chains, so that every stream has its next kernel queued early
  // (the host launches one kernel at a time, each costing it a few microseconds).
  for (int s = 0; s < steps; ++s) {
    for (int c = 0; c < chains; ++c) {
      const cudaStream_t stream = used == 1 ? nullptr : chain_stream(c % used);
      chain_step_kernel<<<blocks, threads, 0, stream>>>(x + static_cast<long long>(c) * n, n);
      LAB_CHECK_LAUNCH();
    }
  }
}
