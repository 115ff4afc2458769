// Provided by the kit. The grow-only scratch memory behind lab::workspace<T>().
#include <mutex>
#include <string>

#include "lab/buffer.h"

namespace lab {

void* workspace_bytes(std::size_t bytes, int slot) {
  if (slot < 0 || slot >= kWorkspaceSlots) {
    throw std::out_of_range("lab::workspace: slot " + std::to_string(slot) + " is not in [0, " +
                            std::to_string(kWorkspaceSlots) + ")");
  }
  struct Block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };
  // Deliberately never freed: the blocks live until the process ends, and freeing them
  // from a static destructor could run after the CUDA runtime has shut down.
  static Block blocks[kWorkspaceSlots];
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  Block& block = blocks[slot];
  if (bytes > block.bytes) {
    if (block.ptr != nullptr) LAB_CUDA_CHECK(cudaFree(block.ptr));
    block.ptr = nullptr;
    block.bytes = 0;
    // Round up so that slightly growing requests do not reallocate every time.
    const std::size_t rounded = (bytes + 1048575) / 1048576 * 1048576;
    LAB_CUDA_CHECK(cudaMalloc(&block.ptr, rounded));
    block.bytes = rounded;
  }
  return block.ptr;
}

}  // namespace lab
