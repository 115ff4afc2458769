// Provided by the kit. Device memory without leaks: DeviceBuffer<T> frees itself, and
// lab::workspace<T>(count) hands out grow-only scratch memory, so an implementation
// does not pay cudaMalloc inside the timed region.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <utility>
#include <vector>

#include "lab/cuda_check.h"

namespace lab {

/// RAII device array of `size()` elements of T (contents uninitialised).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `count` elements.
  explicit DeviceBuffer(std::size_t count) : m_count(count) {
    if (count > 0) LAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&m_ptr), bytes()));
  }
  /// Allocates and uploads `host`.
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : m_ptr(std::exchange(other.m_ptr, nullptr)), m_count(std::exchange(other.m_count, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      m_ptr = std::exchange(other.m_ptr, nullptr);
      m_count = std::exchange(other.m_count, 0);
    }
    return *this;
  }

  /// Device pointer to the first element.
  T* data() noexcept { return m_ptr; }
  /// Device pointer to the first element.
  const T* data() const noexcept { return m_ptr; }
  /// Number of elements.
  std::size_t size() const noexcept { return m_count; }
  /// Number of bytes.
  std::size_t bytes() const noexcept { return m_count * sizeof(T); }

  /// Copies `host` (at most size() elements) to the device.
  void upload(const std::vector<T>& host) {
    if (host.size() > m_count) {
      throw std::length_error("DeviceBuffer::upload: host vector is larger than the buffer");
    }
    if (!host.empty()) LAB_CUDA_CHECK(cudaMemcpy(m_ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  /// Copies the whole buffer to a new host vector.
  std::vector<T> download() const {
    std::vector<T> host(m_count);
    if (m_count > 0) LAB_CUDA_CHECK(cudaMemcpy(host.data(), m_ptr, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  /// Sets every byte to `value`; the default 0xFF makes floats NaN and integers -1 / max,
  /// so an element the code under test forgot to write cannot pass for a result.
  void poison(unsigned char value = 0xFF) {
    if (m_count > 0) LAB_CUDA_CHECK(cudaMemset(m_ptr, value, bytes()));
  }

 private:
  void release() noexcept {
    if (m_ptr != nullptr) LAB_CUDA_CHECK_NOEXCEPT(cudaFree(m_ptr));
    m_ptr = nullptr;
    m_count = 0;
  }
  T* m_ptr = nullptr;
  std::size_t m_count = 0;
};

/// Copies a host vector into a new device buffer.
template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
  return DeviceBuffer<T>(host);
}

/// Number of independent workspace slots (a function needing two scratch arrays uses two slots).
constexpr int kWorkspaceSlots = 8;

/// Scratch device memory of at least `bytes` bytes in `slot`, 256-byte aligned, kept for
/// the rest of the process and reused by later calls. Growing it frees the old block
/// (cudaFree waits for the device), so size it once with the largest need.
void* workspace_bytes(std::size_t bytes, int slot = 0);

/// Scratch device array of at least `count` elements of T; see workspace_bytes().
template <class T>
T* workspace(std::size_t count, int slot = 0) {
  return static_cast<T*>(workspace_bytes(count * sizeof(T), slot));
}

}  // namespace lab
