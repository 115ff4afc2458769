// Provided by the kit: do not edit. The sequential reductions of the lectures: the plain
// float loop (the CPU baseline of the bench), Kahan's compensated sum (lecture 9), the
// sum in double (the tests' reference value), the maximum, and the error bound the tests
// allow a float sum. The tests compare your kernels with these; the bench times
// reduce_sum_cpu (with the sdkTimer API) for your speedup.
//
// The file is compiled without -ffast-math, so the compiler keeps every addition in the
// order written: that is what makes the float loop and Kahan's correction behave as the
// lecture says.
#include <cmath>

#include "reduction.h"

float reduce_sum_cpu(const float* in, int n) {
  float sum = 0.0f;  // the identity of +
  for (int i = 0; i < n; ++i) sum += in[i];
  return sum;
}

float reduce_sum_kahan_cpu(const float* in, int n) {
  float sum = 0.0f;
  float correction = 0.0f;  // what the previous additions lost to rounding (with its sign flipped)
  for (int i = 0; i < n; ++i) {
    const float term = in[i] - correction;  // give back what was lost so far
    const float next = sum + term;          // rounded: the low bits of term may be lost here
    correction = (next - sum) - term;       // (what was really added) - (what we wanted to add)
    sum = next;
  }
  return sum;
}

double reduce_sum_double_cpu(const float* in, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += in[i];
  return sum;
}

double reduce_abs_sum_cpu(const float* in, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::fabs(static_cast<double>(in[i]));
  return sum;
}

int reduce_max_cpu(const int* in, int n) {
  int best = kReduceMaxIdentity;  // the identity of max: the smallest int
  for (int i = 0; i < n; ++i) best = in[i] > best ? in[i] : best;
  return best;
}

double reduce_sum_error_bound(long long n, double abs_sum) {
  const double k = n > 1 ? static_cast<double>(n - 1) : 0.0;  // roundings a term can pass through
  // (1 + u)^k - 1, computed without cancellation; for k·u < 1 it is at most γ_k = k·u / (1 - k·u).
  const double float_part = std::expm1(k * std::log1p(0x1p-24));
  // The reference is itself a sum of n terms, in double (u = 2^-53).
  const double double_part = std::expm1(k * std::log1p(0x1p-53));
  // The last factor covers the rounding of abs_sum (itself a double sum of n terms) and of
  // this formula.
  return (float_part + double_part) * std::fabs(abs_sum) * (1.0 + 2.0 * double_part + 1e-12);
}
