// Provided by the kit. Messages and launch checks behind LAB_CUDA_CHECK / LAB_CHECK_LAUNCH.
#include "lab/cuda_check.h"

#include <cstdlib>
#include <cstring>

namespace lab {
namespace {

// A next step for the errors students meet most; the rest get the runtime's text only.
const char* hint_for(cudaError_t code) {
  switch (code) {
    case cudaErrorIllegalAddress:
      return "A kernel read or wrote outside its allocation: check the bounds test (i < n) "
             "and the index arithmetic. `compute-sanitizer <program>` names the line.";
    case cudaErrorInvalidConfiguration:
      return "The launch configuration is invalid: blocks and threads per block must be > 0, "
             "at most 1024 threads per block, and dynamic shared memory within the limit.";
    case cudaErrorLaunchOutOfResources:
      return "The kernel needs more registers or shared memory than a block can have: "
             "use fewer threads per block.";
    case cudaErrorMemoryAllocation:
      return "The GPU is out of memory: free buffers you no longer need, or use lab::workspace.";
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return "No usable CUDA GPU: run on a machine with an NVIDIA GPU and a driver for this CUDA version.";
    case cudaErrorMisalignedAddress:
      return "A vector load or store used an address that is not a multiple of its size: "
             "check the alignment before using float4/int4 accesses.";
    case cudaErrorLaunchTimeout:
      return "The kernel ran too long and was stopped: look for a loop that never ends.";
    default:
      return nullptr;
  }
}

}  // namespace

std::string cuda_error_message(cudaError_t code, const char* call, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  std::string message = std::string(base != nullptr ? base + 1 : file) + ":" + std::to_string(line) +
                        ": CUDA error " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) +
                        ") in `" + call + "`";
  if (const char* hint = hint_for(code)) message += ". " + std::string(hint);
  return message;
}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw CudaError(code, cuda_error_message(code, call, file, line));
}

bool sync_launches() {
  static const bool enabled = [] {
    const char* value = std::getenv("LABKIT_SYNC_LAUNCHES");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

void check_launch(const char* what, const char* file, int line) {
  cudaError_t code = cudaGetLastError();
  if (code == cudaSuccess && sync_launches()) code = cudaDeviceSynchronize();
  if (code != cudaSuccess) throw_cuda_error(code, what, file, line);
}

}  // namespace lab
