// Provided by the kit. CUDA error checking used by every lab.
//
// LAB_CUDA_CHECK(call) turns a failed CUDA call into a lab::CudaError exception that
// names the file, the line, the error and the call, so a mistake becomes one failed
// test with a readable message instead of a dead test run. LAB_CHECK_LAUNCH() checks
// the kernel launch just made; in test runs (LABKIT_SYNC_LAUNCHES=1, set by the test
// main) it also waits for the kernel, so an illegal address is reported at the launch
// that caused it and not at some later call.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace lab {

/// A failed CUDA runtime call; what() holds the full message.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& message)
      : std::runtime_error(message), m_code(code) {}
  /// The CUDA error code.
  cudaError_t code() const noexcept { return m_code; }

 private:
  cudaError_t m_code;
};

/// Builds the message for a failed call: "<file>:<line>: CUDA error <name> (<text>) in `<call>`" and a hint.
std::string cuda_error_message(cudaError_t code, const char* call, const char* file, int line);

/// Throws CudaError for a failed call.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

/// Checks the last kernel launch; synchronizes too when launches are checked synchronously.
void check_launch(const char* what, const char* file, int line);

/// True when LABKIT_SYNC_LAUNCHES is set to a non-zero value (the test main sets it).
bool sync_launches();

}  // namespace lab

/// Throws lab::CudaError when `call` does not return cudaSuccess.
#define LAB_CUDA_CHECK(call)                                               \
  do {                                                                     \
    const cudaError_t lab_status_ = (call);                                \
    if (lab_status_ != cudaSuccess) {                                      \
      ::lab::throw_cuda_error(lab_status_, #call, __FILE__, __LINE__);     \
    }                                                                      \
  } while (false)

/// Like LAB_CUDA_CHECK but only prints: for destructors, which must not throw.
#define LAB_CUDA_CHECK_NOEXCEPT(call)                                      \
  do {                                                                     \
    const cudaError_t lab_status_ = (call);                                \
    if (lab_status_ != cudaSuccess) {                                      \
      std::fprintf(stderr, "%s\n",                                         \
                   ::lab::cuda_error_message(lab_status_, #call, __FILE__, \
                                             __LINE__).c_str());           \
    }                                                                      \
  } while (false)

/// Checks the kernel launch just made (put it right after `kernel<<<…>>>(…);`).
#define LAB_CHECK_LAUNCH() ::lab::check_launch("kernel launch", __FILE__, __LINE__)
