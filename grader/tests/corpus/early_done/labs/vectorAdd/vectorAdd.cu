// Corpus case "early_done" (changing how time is measured): while the judge times it
// (the channel's `hot` flag), the call tells the judge it is done right after launching a
// kernel that first waits a millisecond, so that the judge would stop its clock before
// the work is done. The judge's clock stops at a fence of its own that runs only once
// this process's GPU work has let go of the GPU: the waiting is timed all the same.
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

__global__ void slow_vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const unsigned long long start = clock64();
  while (clock64() - start < 2000000ull) {  // about a millisecond at 2 GHz
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}

}  // namespace

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  slow_vector_add_kernel<<<1024, 256>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
  lab::judge::wire::Channel* ch = channel();
  if (ch != nullptr && ch->hot.load() != 0) ch->reply_seq.store(ch->request_seq.load());  // "done"
}
