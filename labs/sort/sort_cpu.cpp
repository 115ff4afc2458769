// Provided by the kit: do not edit. The sequential sorts of lecture 8.
//
// sort_keys_cpu and sort_pairs_cpu give the golden results (the standard library's
// sorts) and the CPU baseline the bench times with sdkTimer. The others are the
// lecture's building blocks run one step at a time on the CPU, so the tests can check
// them against the lecture's tables: odd-even transposition, the sequential merge, the
// bitonic split and network, and the stable split of radix sort.
//
//   ./build/dev/bin/sort_test --gtest_filter='SortCpu.*'
#include <algorithm>
#include <utility>
#include <vector>

#include "sort.h"

void sort_keys_cpu(unsigned* keys, int n) {
  // For keys alone stability cannot be observed (equal keys are identical), so the
  // faster unstable sort gives the same result as std::stable_sort.
  if (n > 1) std::sort(keys, keys + n);
}

void sort_pairs_cpu(unsigned* keys, unsigned* values, int n) {
  if (n <= 0) return;
  std::vector<std::pair<unsigned, unsigned>> pairs(n);
  for (int i = 0; i < n; ++i) pairs[i] = {keys[i], values[i]};
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (int i = 0; i < n; ++i) {
    keys[i] = pairs[i].first;
    values[i] = pairs[i].second;
  }
}

void odd_even_phase_cpu(unsigned* keys, int n, int phase) {
  for (int i = phase % 2; i + 1 < n; i += 2) {
    if (keys[i] > keys[i + 1]) std::swap(keys[i], keys[i + 1]);
  }
}

void odd_even_transposition_sort_cpu(unsigned* keys, int n) {
  // After n phases every key has had the chance to move across the whole array.
  for (int phase = 0; phase < n; ++phase) odd_even_phase_cpu(keys, n, phase);
}

void merge_cpu(const unsigned* a, int na, const unsigned* b, int nb, unsigned* out) {
  int i = 0, j = 0, k = 0;
  while (i < na && j < nb) out[k++] = (b[j] < a[i]) ? b[j++] : a[i++];  // ties: a first
  while (i < na) out[k++] = a[i++];
  while (j < nb) out[k++] = b[j++];
}

void bitonic_split_cpu(unsigned* keys, int n) {
  const int half = n / 2;
  for (int i = 0; i < half; ++i) {
    if (keys[i] > keys[i + half]) std::swap(keys[i], keys[i + half]);
  }
}

void bitonic_sort_cpu(unsigned* keys, int n) {
  // Stage `size` builds sorted runs of that length, alternately ascending and
  // descending (together: bitonic runs of twice the length); each stage is a
  // sequence of splits with distance stride = size/2, size/4, …, 1.
  for (int size = 2; size <= n; size *= 2) {
    for (int stride = size / 2; stride > 0; stride /= 2) {
      for (int i = 0; i < n; ++i) {
        const int partner = i ^ stride;
        if (partner <= i) continue;
        const bool ascending = (i & size) == 0;
        const bool out_of_order = ascending ? keys[i] > keys[partner] : keys[i] < keys[partner];
        if (out_of_order) std::swap(keys[i], keys[partner]);
      }
    }
  }
}

void radix_split_cpu(const unsigned* in, unsigned* out, int n, int bit) {
  int k = 0;
  for (int i = 0; i < n; ++i) {
    if (((in[i] >> bit) & 1u) == 0) out[k++] = in[i];
  }
  for (int i = 0; i < n; ++i) {
    if (((in[i] >> bit) & 1u) != 0) out[k++] = in[i];
  }
}
