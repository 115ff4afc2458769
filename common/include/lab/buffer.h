// Provided by the kit. Device memory without leaks: DeviceBuffer<T> frees itself, and
// lab::workspace<T>(count) hands out grow-only scratch memory, so an implementation
// does not pay cudaMalloc inside the timed region. HostBuffer<T> is the host array the
// tests pass to interface functions that take host pointers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "lab/cuda_check.h"

namespace lab {

/// Rounds every later DeviceBuffer allocation of this process up to a multiple of
/// `bytes` (0: exact sizes, the default). The bench harness sets 2 MiB: a worker process
/// reaches the judge's buffers through CUDA IPC, and an imported allocation whose size
/// is not a whole number of 2 MiB pages streams up to half again as slowly whenever the
/// worker's context takes over the GPU from another one (measured on an H100: 0.185 ms
/// against 0.118 ms for a vector add over 120 MB), as the student's and the reference's
/// workers do in every round. Tests keep exact sizes, so that compute-sanitizer sees an
/// access one element past the end. The rounding (the padding past a buffer's end) is
/// recorded, and the bench guards it: it fills it with canaries before every call it
/// times and checks them after (lab/padding.h).
void set_device_allocation_granularity(std::size_t bytes);

namespace detail {
/// `bytes` rounded up to the granularity set above.
std::size_t device_allocation_bytes(std::size_t bytes);
/// Records a DeviceBuffer's allocation: `bytes` used, `allocated` in all (its padding is
/// the difference; none is recorded when there is none). lab/padding.h.
void note_device_allocation(const void* base, std::size_t bytes, std::size_t allocated);
/// Forgets an allocation recorded above (before it is freed).
void note_device_free(const void* base) noexcept;
}  // namespace detail

/// RAII device array of `size()` elements of T (contents uninitialised).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `count` elements.
  explicit DeviceBuffer(std::size_t count) : m_count(count) {
    if (count > 0) {
      const std::size_t allocated = detail::device_allocation_bytes(bytes());
      LAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&m_ptr), allocated));
      if (allocated > bytes()) detail::note_device_allocation(m_ptr, bytes(), allocated);
    }
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
  std::vector<T> download() const { return download(m_count); }
  /// Copies the first `count` elements (at most size()) to a new host vector.
  std::vector<T> download(std::size_t count) const {
    if (count > m_count) throw std::length_error("DeviceBuffer::download: more elements asked than the buffer holds");
    std::vector<T> host(count);
    if (count > 0) LAB_CUDA_CHECK(cudaMemcpy(host.data(), m_ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  /// Makes room for at least `count` elements: a smaller buffer is replaced by a new one
  /// (its contents are lost), a large enough one stays as it is. For a buffer kept from
  /// call to call, which grows to the largest size asked.
  void grow_to(std::size_t count) {
    if (count > m_count) *this = DeviceBuffer(count);
  }
  /// Sets every byte to `value`; the default 0xFF makes floats NaN and integers -1 / max,
  /// so an element the code under test forgot to write cannot pass for a result.
  void poison(unsigned char value = 0xFF) {
    if (m_count > 0) LAB_CUDA_CHECK(cudaMemset(m_ptr, value, bytes()));
  }

 private:
  void release() noexcept {
    if (m_ptr != nullptr) {
      detail::note_device_free(m_ptr);
      LAB_CUDA_CHECK_NOEXCEPT(cudaFree(m_ptr));
    }
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

namespace detail {
/// Memory for a HostBuffer (page-aligned): from the installed Remote when there is one
/// (`*shared` is then true), else ordinary memory (common/src/remote.cpp).
void* host_buffer_allocate(std::size_t bytes, bool* shared);
/// Returns memory from host_buffer_allocate().
void host_buffer_free(void* pointer, bool shared) noexcept;
}  // namespace detail

/// RAII host array of `size()` elements of T (contents uninitialised) for interface
/// functions that take host pointers, such as a host program that does its own copies.
/// In a student's test program it is ordinary memory. In the grader's judge programs the
/// code under test runs in another process, and a HostBuffer's memory is shared with it
/// (a fixed-size arena, lab/judge/wire.h): only HostBuffer memory can be passed there as
/// a host argument. That process can read and write every HostBuffer while a call runs,
/// so keep expected results in a std::vector, never in a HostBuffer.
template <class T>
class HostBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "a HostBuffer holds trivially copyable elements");

 public:
  HostBuffer() = default;
  /// Allocates `count` elements.
  explicit HostBuffer(std::size_t count) : m_count(count) {
    if (count > static_cast<std::size_t>(-1) / sizeof(T)) throw std::length_error("lab::HostBuffer: too many elements");
    if (count > 0) m_ptr = static_cast<T*>(detail::host_buffer_allocate(bytes(), &m_shared));
  }
  /// Allocates and copies `values` in.
  explicit HostBuffer(const std::vector<T>& values) : HostBuffer(values.size()) { assign(values); }
  ~HostBuffer() { release(); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& other) noexcept
      : m_ptr(std::exchange(other.m_ptr, nullptr)),
        m_count(std::exchange(other.m_count, 0)),
        m_shared(std::exchange(other.m_shared, false)) {}
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    if (this != &other) {
      release();
      m_ptr = std::exchange(other.m_ptr, nullptr);
      m_count = std::exchange(other.m_count, 0);
      m_shared = std::exchange(other.m_shared, false);
    }
    return *this;
  }

  /// Host pointer to the first element (null when empty).
  T* data() noexcept { return m_ptr; }
  /// Host pointer to the first element (null when empty).
  const T* data() const noexcept { return m_ptr; }
  /// Number of elements.
  std::size_t size() const noexcept { return m_count; }
  /// Number of bytes.
  std::size_t bytes() const noexcept { return m_count * sizeof(T); }
  /// Element `i` (unchecked).
  T& operator[](std::size_t i) noexcept { return m_ptr[i]; }
  /// Element `i` (unchecked).
  const T& operator[](std::size_t i) const noexcept { return m_ptr[i]; }

  /// Copies `values` in; its size must equal size().
  void assign(const std::vector<T>& values) {
    if (values.size() != m_count) throw std::length_error("HostBuffer::assign: the vector's size differs from the buffer's");
    if (m_count > 0) std::memcpy(m_ptr, values.data(), bytes());
  }
  /// Copies the whole buffer to a new vector.
  std::vector<T> to_vector() const {
    std::vector<T> out(m_count);
    if (m_count > 0) std::memcpy(out.data(), m_ptr, bytes());
    return out;
  }
  /// Sets every byte to `value` (0xFF: floats NaN, integers -1 / max), so that an element
  /// the code under test should have written, and did not, cannot pass for a result.
  void poison(unsigned char value = 0xFF) {
    if (m_count > 0) std::memset(m_ptr, value, bytes());
  }

 private:
  void release() noexcept {
    if (m_ptr != nullptr) detail::host_buffer_free(m_ptr, m_shared);
    m_ptr = nullptr;
    m_count = 0;
    m_shared = false;
  }
  T* m_ptr = nullptr;
  std::size_t m_count = 0;
  bool m_shared = false;  // from the Remote's shared arena, not ordinary memory
};

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
