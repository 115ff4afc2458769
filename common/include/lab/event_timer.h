// Provided by the kit. A move-only pair of CUDA events that times GPU work on a stream.
//
//   lab::EventTimer timer;
//   timer.start();
//   kernel<<<blocks, threads>>>(…);
//   timer.stop();
//   float ms = timer.elapsed_ms();   // waits for the stop event
//
// Events measure the time the GPU spent between the two records, with about half a
// microsecond of resolution, independent of what the host does meanwhile.
#pragma once

#include <cuda_runtime.h>

namespace lab {

/// RAII start/stop CUDA events on one stream.
class EventTimer {
 public:
  /// Creates the two events; records on `stream` (default: the legacy default stream).
  explicit EventTimer(cudaStream_t stream = nullptr);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  EventTimer(EventTimer&& other) noexcept;
  EventTimer& operator=(EventTimer&& other) noexcept;

  /// Records the start event.
  void start();
  /// Records the stop event.
  void stop();
  /// Waits for the stop event and returns the milliseconds between the two events.
  float elapsed_ms() const;

 private:
  void release() noexcept;
  cudaEvent_t m_start = nullptr;
  cudaEvent_t m_stop = nullptr;
  cudaStream_t m_stream = nullptr;
};

}  // namespace lab
