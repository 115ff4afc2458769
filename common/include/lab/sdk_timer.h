// Provided by the kit. The CUDA samples' sdkTimer API (helper_timer.h), written anew
// for the kit because the toolkit stopped shipping it, with the samples' semantics:
//
//   sdkGetTimerValue         total of all completed start/stop laps, plus the running
//                            lap if the timer is running (milliseconds)
//   sdkGetAverageTimerValue  total of completed laps / number of completed laps
//                            (0 before the first stop)
//   sdkResetTimer            forgets all laps; a running timer keeps running from now
//
// It measures host time. To time GPU work with it, call cudaDeviceSynchronize()
// before sdkStopTimer, or better, use CUDA events (lab::EventTimer).
#pragma once

#include <chrono>

/// A stopwatch accumulating laps of host time.
class StopWatchInterface {
 public:
  StopWatchInterface() = default;
  StopWatchInterface(const StopWatchInterface&) = delete;
  StopWatchInterface& operator=(const StopWatchInterface&) = delete;
  virtual ~StopWatchInterface() = default;

  /// Starts a lap.
  virtual void start() {
    m_start = Clock::now();
    m_running = true;
  }
  /// Ends the running lap and adds it to the total (no effect when not running).
  virtual void stop() {
    if (!m_running) return;
    m_total_ms += lap_ms();
    m_running = false;
    ++m_laps;
  }
  /// Forgets every lap; a running timer restarts its lap now.
  virtual void reset() {
    m_total_ms = 0.0;
    m_laps = 0;
    if (m_running) m_start = Clock::now();
  }
  /// Total milliseconds of completed laps plus the running lap.
  virtual float getTime() const {
    return static_cast<float>(m_total_ms + (m_running ? lap_ms() : 0.0));
  }
  /// Average milliseconds per completed lap, 0 when none completed.
  virtual float getAverageTime() const {
    return m_laps > 0 ? static_cast<float>(m_total_ms / m_laps) : 0.0f;
  }

 private:
  using Clock = std::chrono::steady_clock;
  double lap_ms() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - m_start).count();
  }
  Clock::time_point m_start{};
  double m_total_ms = 0.0;
  long m_laps = 0;
  bool m_running = false;
};

/// Creates a timer; returns false when `timer` is null.
inline bool sdkCreateTimer(StopWatchInterface** timer) {
  if (timer == nullptr) return false;
  *timer = new StopWatchInterface();
  return true;
}
/// Deletes a timer and sets the pointer to null.
inline bool sdkDeleteTimer(StopWatchInterface** timer) {
  if (timer == nullptr) return false;
  delete *timer;
  *timer = nullptr;
  return true;
}
/// Starts a lap.
inline bool sdkStartTimer(StopWatchInterface** timer) {
  if (timer == nullptr || *timer == nullptr) return false;
  (*timer)->start();
  return true;
}
/// Ends the running lap.
inline bool sdkStopTimer(StopWatchInterface** timer) {
  if (timer == nullptr || *timer == nullptr) return false;
  (*timer)->stop();
  return true;
}
/// Forgets every lap.
inline bool sdkResetTimer(StopWatchInterface** timer) {
  if (timer == nullptr || *timer == nullptr) return false;
  (*timer)->reset();
  return true;
}
/// Average milliseconds per completed lap.
inline float sdkGetAverageTimerValue(StopWatchInterface** timer) {
  return (timer != nullptr && *timer != nullptr) ? (*timer)->getAverageTime() : 0.0f;
}
/// Total milliseconds, including a running lap.
inline float sdkGetTimerValue(StopWatchInterface** timer) {
  return (timer != nullptr && *timer != nullptr) ? (*timer)->getTime() : 0.0f;
}
