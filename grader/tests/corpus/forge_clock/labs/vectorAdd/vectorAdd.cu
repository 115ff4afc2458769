// Corpus case "forge_clock" (changing how time is measured): a slow kernel (each call
// waits about a millisecond first), and a thread of the worker process that, while the
// judge times calls, keeps overwriting the time the worker measured (`reply.elapsed_ms`,
// its clock stamps) with 1 µs, so that the judge copies the forged figure. The thread
// starts from a constructor, when the library is loaded: later the worker's sandbox
// allows no new threads. The judge's own clock, which this process cannot touch, still
// sees the millisecond: it contradicts the forged stamps on every call, so the sample is
// timed by the judge's clock, the lab is timed again, and the performance points are
// withheld.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lab/cuda_check.h"
#include "lab/judge/wire.h"
#include "vectorAdd.h"

namespace {

// The judge's channel, found in this process's memory map.
lab::judge::wire::Channel* channel() {
  static lab::judge::wire::Channel* found = [] {
    lab::judge::wire::Channel* at = nullptr;
    if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, maps) != nullptr) {
        if (std::strstr(line, "labkit-channel") != nullptr) {
          at = reinterpret_cast<lab::judge::wire::Channel*>(std::strtoull(line, nullptr, 16));
          break;
        }
      }
      std::fclose(maps);
    }
    return at;
  }();
  return found;
}

// Keeps writing a tiny time into the reply while the judge times calls, so that the
// store lands between the worker's own and the judge's copy of the reply.
void forge_forever(lab::judge::wire::Channel* ch) {
  volatile double* reported = &ch->reply.elapsed_ms;
  for (;;) {
    if (ch->hot.load(std::memory_order_relaxed) != 0) *reported = 0.001;
  }
}

__global__ void slow_vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const unsigned long long start = clock64();
  while (clock64() - start < 2000000ull) {  // about a millisecond at 2 GHz
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}

}  // namespace

// Runs when the worker loads the library, before its sandbox forbids new threads.
__attribute__((constructor)) void start_forging() {
  lab::judge::wire::Channel* ch = channel();
  if (ch == nullptr) return;  // not in a worker (the student's own test or bench)
  try {
    std::thread(forge_forever, ch).detach();
  } catch (...) {
  }
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  slow_vector_add_kernel<<<1024, 256>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
