// Provided by the kit: do not edit. The sequential matrix multiplication of lecture 10:
// C[i][j] = sum over l of A[i][l] · B[l][j], accumulated in double and rounded to float
// once, so that it is a trustworthy golden result for float GPU code. The tests compare
// your kernel with it, and the bench times it (with the sdkTimer API) on a small size.
//
// The loops run i, l, j rather than the lecture's i, j, l: the innermost loop then walks
// along a row of B and of the accumulator (consecutive addresses, which a CPU cache and
// its vector units like) instead of down a column of B. Every C[i][j] is still the sum
// of the same products in the same order l = 0, 1, ..., k - 1.
#include <cmath>
#include <cstddef>
#include <vector>

#include "matmul.h"

namespace {

template <bool kWithMagnitude>
void multiply(const float* A, const float* B, float* C, float* magnitude, int m, int k, int n) {
  if (m <= 0 || n <= 0) return;  // C has no elements: nothing to compute or read
  std::vector<double> sum(n), abs_sum(kWithMagnitude ? n : 0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) sum[j] = 0.0;
    if (kWithMagnitude) {
      for (int j = 0; j < n; ++j) abs_sum[j] = 0.0;
    }
    const float* a_row = A + static_cast<std::size_t>(i) * k;
    for (int l = 0; l < k; ++l) {
      const double a = a_row[l];
      const float* b_row = B + static_cast<std::size_t>(l) * n;
      for (int j = 0; j < n; ++j) sum[j] += a * static_cast<double>(b_row[j]);
      if (kWithMagnitude) {
        const double abs_a = std::fabs(a);
        for (int j = 0; j < n; ++j) abs_sum[j] += abs_a * std::fabs(static_cast<double>(b_row[j]));
      }
    }
    float* c_row = C + static_cast<std::size_t>(i) * n;
    for (int j = 0; j < n; ++j) c_row[j] = static_cast<float>(sum[j]);
    if (kWithMagnitude) {
      float* mag_row = magnitude + static_cast<std::size_t>(i) * n;
      for (int j = 0; j < n; ++j) mag_row[j] = static_cast<float>(abs_sum[j]);
    }
  }
}

}  // namespace

void matmul_cpu(const float* A, const float* B, float* C, int m, int k, int n) {
  multiply<false>(A, B, C, nullptr, m, k, n);
}

void matmul_cpu_with_magnitude(const float* A, const float* B, float* C, float* magnitude, int m, int k, int n) {
  multiply<true>(A, B, C, magnitude, m, k, n);
}
