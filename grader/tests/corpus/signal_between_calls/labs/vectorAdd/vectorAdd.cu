// Corpus case "signal_between_calls" (code outside the judge's calls): at its first call,
// installs a SIGALRM handler and, only if that worked, arms a 1 ms interval timer. The
// handler would run between the judge's calls (while the worker waits, or while the
// reference's call is timed), as a thread of its own would; here it only counts its runs,
// and once it has run, every call writes one wrong element, so that a handler that got
// through fails the tests. The worker's sandbox refuses new signal handlers once the
// library is loaded: sigaction fails, no timer is armed, and the right kernel runs.
#include <signal.h>
#include <sys/time.h>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

namespace {
volatile sig_atomic_t g_ticks = 0;

void on_alarm(int) { g_ticks = g_ticks + 1; }

bool arm_timer() {
  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGALRM, &action, nullptr) != 0) return false;  // refused: no timer, or SIGALRM would end us
  itimerval every_ms{};
  every_ms.it_interval.tv_usec = 1000;
  every_ms.it_value.tv_usec = 1000;
  return setitimer(ITIMER_REAL, &every_ms, nullptr) == 0;
}
}  // namespace

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n, int spoil) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i] + (i == 0 ? static_cast<float>(spoil) : 0.0f);
}

void vector_add(const float* a, const float* b, float* c, int n) {
  static const bool armed = arm_timer();
  (void)armed;
  if (n <= 0) return;
  const int threads_per_block = 256;
  const int spoil = g_ticks > 0 ? 1 : 0;  // the handler ran: this call's c[0] is wrong
  vector_add_kernel<<<(n + threads_per_block - 1) / threads_per_block, threads_per_block>>>(a, b, c, n, spoil);
  LAB_CHECK_LAUNCH();
}
