// Provided by the kit. lab::EventTimer.
#include "lab/event_timer.h"

#include <cstdio>
#include <utility>

#include "lab/cuda_check.h"

namespace lab {

EventTimer::EventTimer(cudaStream_t stream) : m_stream(stream) {
  LAB_CUDA_CHECK(cudaEventCreate(&m_start));
  try {
    LAB_CUDA_CHECK(cudaEventCreate(&m_stop));
  } catch (...) {
    release();
    throw;
  }
}

EventTimer::~EventTimer() { release(); }

EventTimer::EventTimer(EventTimer&& other) noexcept
    : m_start(std::exchange(other.m_start, nullptr)),
      m_stop(std::exchange(other.m_stop, nullptr)),
      m_stream(other.m_stream) {}

EventTimer& EventTimer::operator=(EventTimer&& other) noexcept {
  if (this != &other) {
    release();
    m_start = std::exchange(other.m_start, nullptr);
    m_stop = std::exchange(other.m_stop, nullptr);
    m_stream = other.m_stream;
  }
  return *this;
}

void EventTimer::start() { LAB_CUDA_CHECK(cudaEventRecord(m_start, m_stream)); }

void EventTimer::stop() { LAB_CUDA_CHECK(cudaEventRecord(m_stop, m_stream)); }

float EventTimer::elapsed_ms() const {
  LAB_CUDA_CHECK(cudaEventSynchronize(m_stop));
  float ms = 0.0f;
  LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, m_start, m_stop));
  return ms;
}

void EventTimer::release() noexcept {
  if (m_start != nullptr) LAB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(m_start));
  if (m_stop != nullptr) LAB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(m_stop));
  m_start = m_stop = nullptr;
}

}  // namespace lab
