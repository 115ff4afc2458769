// Provided by the kit: do not edit. The sequential vector addition of lecture 1: one
// loop, one addition per element. The tests compare your kernel with it, and the bench
// times it (with the sdkTimer API) to compute your speedup.
#include "vectorAdd.h"

void vector_add_cpu(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
