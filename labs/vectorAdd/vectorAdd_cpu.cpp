// Provided by the kit: do not edit. The sequential vector addition of lecture 1: one
// loop, one addition per element. The tests compare your kernel with it, and the bench
// times it (with the sdkTimer API) to compute your speedup. fusion_steps_cpu is the
// golden result of the further part (launch overhead and kernel fusion).
#include <utility>

#include "vectorAdd.h"

void vector_add_cpu(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

// The lecture's three steps, one after the other, `iterations` times (vectorAdd.h).
void fusion_steps_cpu(unsigned int* x, unsigned int* hist, int n, int iterations) {
  for (int t = 0; t < iterations; ++t) {
    for (int i = 0; i < n; ++i) x[i] = 3u * x[i] + static_cast<unsigned int>(i);  // K1
    for (int i = 0; i < n; ++i) hist[x[i] % kFuseBins] += 1u;                      // K2
    for (long long start = 0; start < n; start += kFuseTile) {                     // K3
      long long lo = start, hi = (n - start < kFuseTile ? n : start + kFuseTile) - 1;
      for (; lo < hi; ++lo, --hi) std::swap(x[lo], x[hi]);
    }
  }
}

// The chains one after the other, each step of each chain on every element (vectorAdd.h).
void independent_chains_cpu(unsigned int* x, int n, int chains, int steps) {
  if (n <= 0 || chains <= 0) return;
  for (int c = 0; c < chains; ++c) {
    unsigned int* chain = x + static_cast<long long>(c) * n;
    for (int s = 0; s < steps; ++s) {
      for (int i = 0; i < n; ++i) chain[i] = chain_step(chain[i]);
    }
  }
}
