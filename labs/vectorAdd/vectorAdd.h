// Provided by the kit: do not edit. The interface of the vectorAdd lab.
//
// vector_add is what the tests and the grader call. It takes device pointers, so the
// timed work is the GPU's and not the copies over PCIe (the bench times those too,
// separately). Part A, the host program, is the rest of the job: vector_add_host and
// vector_add_host_pinned take HOST pointers and do the allocations and copies themselves.
// Handout: handouts/vectorAdd.md.
#pragma once

#include <cuda_runtime.h>

/// c[i] = a[i] + b[i] for 0 <= i < n, on the default stream. a, b and c are device
/// pointers to n floats each (any float alignment); c does not overlap a or b.
/// n = 0 does nothing. The result is exact: one IEEE addition per element.
void vector_add(const float* a, const float* b, float* c, int n);

/// The sequential version on the CPU (host pointers): the golden result and the CPU baseline.
void vector_add_cpu(const float* a, const float* b, float* c, int n);

/// What a host program reports: the first CUDA call that failed, and the kernel's time.
struct HostRunResult {
  cudaError_t status;  ///< the error of the first CUDA call that failed, or cudaSuccess
  float kernel_ms;     ///< the kernel alone, timed with CUDA events; 0 when n == 0 or status is an error
};

/// Part A, the host program: c = a + b for n floats in HOST memory (h_c does not overlap
/// h_a or h_b). Allocates device memory for a, b and c, copies h_a and h_b to the device,
/// launches your kernel, copies the result to h_c and frees the device memory. Every CUDA
/// call is checked: at the first failure it frees whatever it allocated and returns that
/// call's error (h_c is written only by the copy back). Nothing leaks on any path.
/// n = 0 does nothing and returns {cudaSuccess, 0}.
HostRunResult vector_add_host(const float* h_a, const float* h_b, float* h_c, int n);

/// Part A with pinned memory: the same job, staged through page-locked host buffers
/// (cudaMallocHost): h_a and h_b are copied into them, the copies to and from the device
/// are cudaMemcpyAsync on the default stream, and h_c is filled from the pinned result.
/// Checks, errors, freeing (cudaFreeHost too) and n = 0 as vector_add_host.
HostRunResult vector_add_host_pinned(const float* h_a, const float* h_b, float* h_c, int n);
