// vectorAdd lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Write a kernel in which each thread adds one pair of elements, and launch enough
// threads to cover the whole vector. Then make it fast: the bench compares you with
// the reference and with the memory bandwidth of your GPU. Part A (at the end of this
// file) is the host program around the kernel: allocate, copy, launch, copy back, free.
//
//   cmake --build --preset dev && ./build/dev/bin/vectorAdd_test   # correctness
//   ./build/dev/bin/vectorAdd_bench                                       # timing
//   python3 -m grader vectorAdd                                                   # your score
//
// Handout: handouts/vectorAdd.md. Gaps are marked TODO(student).
#include "lab/cuda_check.h"
#include "vectorAdd.h"

// One thread per element: thread i computes c[i] = a[i] + b[i].
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  // TODO(student): compute this thread's global index from blockIdx.x, blockDim.x and
  // threadIdx.x. The grid has more threads than elements when n is not a multiple of
  // the block size, so only threads with an index below n may touch memory.
  (void)a;
  (void)b;
  (void)c;
  (void)n;
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;  // nothing to do, and a grid of 0 blocks is an invalid launch
  const int threads_per_block = 256;  // a multiple of the warp size (32)
  // TODO(student): launch enough blocks to cover all n elements (round up).
  const int blocks = 1;
  vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}

// TODO(student): the lecture's steps, each a function with vector_add's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void vector_add_one_per_thread(const float* a, const float* b, float* c, int n) { ... }
//     LAB_REGISTER_VARIANT(vector_add, "one_per_thread", vector_add_one_per_thread,
//                          "one line on what it does");
//   Needed: "one_per_thread" and "grid_stride" (include "lab/variants.h").
//   Your vector_add may call the fastest of them.

// ---- Part A: the host program (handout: "Part A: the host program") ------------------------
//
// vector_add above takes device pointers: the tests did the copying for you. Here you
// write that part yourself, as lecture 1 does, for n floats in HOST memory:
//   1. allocate device memory for a, b and c   cudaMalloc(&d_a, bytes)        bytes, not floats
//   2. copy the inputs to the device            cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice)
//   3. launch vector_add_kernel, and check it   kernel<<<blocks, threads>>>(...); cudaGetLastError()
//   4. copy the result back                     cudaMemcpy(h_c, d_c, bytes, cudaMemcpyDeviceToHost)
//   5. free the device memory                   cudaFree(d_a), ...
// and time the kernel alone with two events: cudaEventCreate both, cudaEventRecord(start, 0)
// just before the launch and cudaEventRecord(stop, 0) just after it, then, once the GPU has
// passed `stop`, cudaEventElapsedTime(&ms, start, stop); cudaEventDestroy both at the end.
//
// Why check every call: a CUDA call that fails does nothing else, and the ones after it
// then work on memory that was never allocated or data that never arrived. Unlike the
// lecture's checks, do not print and exit(): return the first error, as the interface
// says, after freeing what you allocated (a library that exits takes its caller with it).
// A pattern that frees on every path:
//   float* d_a = nullptr; ...                            // cudaFree(nullptr) does nothing
//   cudaError_t status = cudaMalloc(&d_a, bytes);
//   if (status == cudaSuccess) status = cudaMalloc(&d_b, bytes);
//   ... each step only while status == cudaSuccess ...
//   cudaFree(d_a); cudaFree(d_b); cudaFree(d_c);         // one clean-up for every path
//   return {status, status == cudaSuccess ? ms : 0.0f};
// The tests fill all free device memory but one array's worth, so that your second
// cudaMalloc fails: they expect cudaErrorMemoryAllocation back, h_c untouched, and the
// first allocation freed.

HostRunResult vector_add_host(const float* h_a, const float* h_b, float* h_c, int n) {
  // TODO(student): return {cudaSuccess, 0.0f} at once for n <= 0 (nothing to copy, and a
  //   launch of 0 blocks is an error); then steps 1-5 above, timing the kernel with events.
  (void)h_a;
  (void)h_b;
  (void)h_c;
  (void)n;
  return {cudaErrorNotYetImplemented, 0.0f};  // h_c untouched: the tests fail until you write it
}

// The same with pinned (page-locked) host memory. cudaMemcpy from ordinary memory goes
// through a pinned buffer of the driver's, chunk by chunk; from memory allocated with
// cudaMallocHost the GPU's copy engine reads the host memory directly, and the copies
// can be asynchronous (cudaMemcpyAsync(dst, src, bytes, kind, 0): queued on the default
// stream, in order with the kernel; wait with cudaStreamSynchronize(0) before reading).

HostRunResult vector_add_host_pinned(const float* h_a, const float* h_b, float* h_c, int n) {
  // TODO(student): as vector_add_host, but first cudaMallocHost three staging buffers,
  //   memcpy h_a and h_b into them, copy to and from the device with cudaMemcpyAsync,
  //   cudaStreamSynchronize(0), then memcpy the result into h_c. Free the staging
  //   buffers with cudaFreeHost on every path too.
  (void)h_a;
  (void)h_b;
  (void)h_c;
  (void)n;
  return {cudaErrorNotYetImplemented, 0.0f};
}

// ---- Further part: launch overhead and kernel fusion (handout: "Further part: launch
// overhead and kernel fusion"; tests: --gtest_filter='*Kernel*Gpu*') ---------------------
//
// The lecture's profiled program: each iteration runs K1 (x[i] = 3 x[i] + i), K2
// (hist[x[i] % kFuseBins] += 1, with atomics) and K3 (reverse each tile of kFuseTile
// elements, through shared memory). vectorAdd.h gives the exact contract.

void three_kernels(unsigned int* x, unsigned int* hist, int n, int iterations) {
  // TODO(student): three kernels and, for t = 0 .. iterations − 1, one launch of each in
  // this order (3 · iterations launches; each launch sees the previous one's writes, since
  // they queue on the default stream):
  //   K1: one thread per element; index in long long (blocks × 256 can pass 2^31 − 1).
  //   K2: atomicAdd(&hist[x[i] % kFuseBins], 1u): many threads hit the same counter.
  //   K3: one block of kFuseTile threads per tile: copy the tile into __shared__ memory,
  //       __syncthreads(), then write element k of the tile from element len − 1 − k
  //       (len: the tile's length, shorter for the last tile).
  // n <= 0 or iterations <= 0 launches nothing.
  (void)x;
  (void)hist;
  (void)n;
  (void)iterations;
}

void fused_kernel(unsigned int* x, unsigned int* hist, int n, int iterations) {
  // TODO(student): the same work in ONE launch: one block of kFuseTile threads per tile,
  // each thread keeping its element in a register, with the loop over the iterations
  // inside the kernel: K1 on the register, K2's atomicAdd, K3 through the shared tile.
  // Every thread of the block must reach every __syncthreads(), also the threads past
  // the end of a short last tile, and the tile may be overwritten only once every thread
  // has read its element from it. Then time both with the bench (vectorAdd_bench).
  (void)x;
  (void)hist;
  (void)n;
  (void)iterations;
}

// ---- Further part: streams (handout: "Further part: streams"; tests:
// --gtest_filter='*IndependentChains*') ---------------------------------------------------
//
// `chains` independent arrays of n elements in x, each taking `steps` steps of
// chain_step (vectorAdd.h gives the exact contract, and chain_step itself).

void independent_chains(unsigned int* x, int n, int chains, int steps, int streams) {
  // TODO(student): a kernel that applies chain_step to each of the n elements of one chain
  // (one thread per element), and one launch of it per step and chain: chains · steps
  // launches, chain c's on x + c · n. streams = 1: all on the default stream. streams ≥ 2:
  // chain c on stream c % streams of streams of your own (cudaStreamCreate); create them
  // once and keep them for the next calls, since creating a stream costs far more than a
  // launch. When you return, later work on the default stream must see the result.
  // n <= 0, chains <= 0 or steps <= 0 launches nothing. Then time both versions with the
  // bench (vectorAdd_bench, its last table).
  (void)x;
  (void)n;
  (void)chains;
  (void)steps;
  (void)streams;
}
