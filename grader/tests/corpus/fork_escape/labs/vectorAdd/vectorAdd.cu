// Corpus case "fork_escape" (harming the machine): at its first call, starts a
// double-forked child in a session of its own that outlives the grader and writes a file
// outside the build a second later. The worker may not create processes: fork fails,
// and the right kernel still runs.
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

namespace {
void escape() {
  if (fork() != 0) return;
  setsid();
  if (fork() != 0) _exit(0);
  sleep(1);
  if (FILE* f = std::fopen("/tmp/labkit-corpus-escaped", "w")) std::fclose(f);
  sleep(600);
  _exit(0);
}
}  // namespace

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void vector_add(const float* a, const float* b, float* c, int n) {
  static const bool started = (escape(), true);
  (void)started;
  if (n <= 0) return;
  const int threads_per_block = 256;
  vector_add_kernel<<<(n + threads_per_block - 1) / threads_per_block, threads_per_block>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
