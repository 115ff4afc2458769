// Provided by the kit. Waiting on the judge's channel (lab/judge/wire.h), for both of its
// ends: spin with the CPU's pause hint while an answer is due soon, sleep on a futex
// (shared between the two processes) when not.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace lab::judge {

/// One turn of a spin loop: tells the CPU (and its other hardware thread) we are waiting.
inline void relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Sleeps while `*word` == `value`, at most `nanoseconds` (< 1 s), or until woken.
inline void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t value, long nanoseconds) {
  timespec timeout{0, nanoseconds};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, value, &timeout, nullptr, 0);
}

/// Wakes every process sleeping on `*word`.
inline void futex_wake(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace lab::judge
