// Provided by the kit. The fake libcudart of stream_fence_test (fake_cudart.cpp): what the
// test reads and sets.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fake_cudart {

/// Calls that fail when set.
struct Knobs {
  bool create_fails = false;        // every cudaStreamCreate*: cudaErrorMemoryAllocation
  bool event_create_fails = false;  // cudaEventCreateWithFlags: cudaErrorNoDevice
  bool record_fails = false;        // cudaEventRecord: cudaErrorInvalidResourceHandle
};

/// One line per call that did something: "create s3", "create non-blocking s4",
/// "event e7", "record e7 on s3", "legacy waits for e7", "destroy s3", ...
__attribute__((visibility("default"))) std::vector<std::string>& journal();
__attribute__((visibility("default"))) Knobs& knobs();
/// The runtime's record of the last error (cudaPeekAtLastError/cudaGetLastError read it).
__attribute__((visibility("default"))) void set_last_error(cudaError_t error);

}  // namespace fake_cudart
