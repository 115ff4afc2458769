// Provided by the kit. The padding of the bench's device buffers, guarded.
//
// A bench rounds every DeviceBuffer up to whole 2 MiB (lab/buffer.h says why), so at the
// bench's sizes an access a little past a buffer's end lands in memory that is still the
// buffer's: no fault, and no check of the output sees it, while at the tests' exact sizes
// the same access is out of bounds. The bench therefore fills that padding with canaries
// (bytes drawn at random for every call) before each call it checks, and compares them
// right after the call, outside the timed region: a call that wrote there fails its
// check, and the message names the buffer (in a judge program, the argument of the call
// it was passed as) and the first byte past its end that changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace lab {

/// A device buffer with padding: `bytes` used of `allocated` from `base`.
struct PaddedBuffer {
  const void* base = nullptr;
  std::size_t bytes = 0, allocated = 0;
  /// How the last forwarded call that was given it names it ("argument 3 of vector_add");
  /// "" when no call was (a buffer of the bench's own, or a bench that links the code).
  std::string name{};
};

namespace detail {
/// Judge programs: the call being forwarded passes the allocation at `base` as its
/// argument `index` (0-based) of `function`; names the buffer after it.
void note_device_argument(const void* base, int index, const char* function);
}  // namespace detail

/// The buffers with padding that are allocated now (DeviceBuffers made after
/// set_device_allocation_granularity), in address order.
std::vector<PaddedBuffer> padded_buffers();
/// Whether the buffer at `base` of `allocated` bytes is still allocated.
bool padded_buffer_live(const void* base, std::size_t allocated);

/// The check's message for a call that changed `changed` bytes of `buffer`'s padding, the
/// first at `first` bytes from the buffer's start (first >= buffer.bytes).
std::string padding_problem(const PaddedBuffer& buffer, std::size_t first, std::size_t changed);

namespace bench {

/// Fills the padding of every buffer of padded_buffers() with canaries and checks them.
/// Used by the harness around every checked call (common/src/bench_sampling.cu):
///   arm()           before the call and its L2 flush: new canaries (a new random draw);
///   launch_check()  right after the call, once its time is taken: enqueues the compare
///                   on the default stream, behind the judge's hold (session.cu);
///   result()        waits for it: "" or padding_problem() of the first buffer that
///                   changed (and how many others did).
/// Every step is a no-op when no buffer has padding.
class PaddingGuard {
 public:
  PaddingGuard();
  ~PaddingGuard();
  PaddingGuard(const PaddingGuard&) = delete;
  PaddingGuard& operator=(const PaddingGuard&) = delete;

  void arm();
  void launch_check();
  std::string result();
  /// Whether the last arm() guarded any buffer.
  bool armed() const { return !m_armed.empty(); }

 private:
  void reserve(std::size_t count);
  std::vector<PaddedBuffer> m_armed;
  std::uint64_t m_seed = 0;
  bool m_checking = false;
  unsigned long long* m_results = nullptr;  // per armed buffer: first changed offset, then changed bytes
  std::size_t m_capacity = 0;
  std::mt19937_64 m_rng;
};

}  // namespace bench
}  // namespace lab
