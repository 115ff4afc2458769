// Provided by the kit. Array comparisons that explain themselves.
//
// A comparison returns a Mismatch report: how many elements differ, the first
// differing index with the expected and actual values, and a few more examples.
// Tests wrap it in a GoogleTest assertion (lab/testing.h); the bench uses it to
// re-check the outputs of timed calls.
#pragma once

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace lab {

/// The result of comparing two arrays.
struct Mismatch {
  std::size_t count = 0;   ///< number of differing elements
  std::size_t first = 0;   ///< index of the first difference (valid when count > 0)
  std::string message;     ///< a readable description, empty when equal
  /// True when the arrays matched.
  bool ok() const { return count == 0; }
};

/// Allowed float error: |actual - expected| <= abs + rel * |expected|.
struct Tolerance {
  double abs = 0.0;  ///< absolute part
  double rel = 0.0;  ///< relative part
};

namespace detail {
std::string format_value(float v);
std::string format_value(double v);
inline std::string format_value(long long v) { return std::to_string(v); }
inline std::string format_value(unsigned long long v) { return std::to_string(v); }
template <class T>
std::string format_any(const T& v) {
  if constexpr (std::is_floating_point_v<T>) {
    return format_value(v);
  } else if constexpr (std::is_signed_v<T>) {
    return format_value(static_cast<long long>(v));
  } else {
    return format_value(static_cast<unsigned long long>(v));
  }
}
/// Builds the message once all differences are counted.
std::string describe(std::size_t count, std::size_t n, const std::vector<std::string>& examples,
                     const std::string& what);
}  // namespace detail

/// Compares element by element with `same(expected, actual)`; lists up to 5 differences.
template <class T, class Same>
Mismatch compare_with(const T* expected, const T* actual, std::size_t n, Same same,
                      const std::string& what = "element") {
  Mismatch result;
  std::vector<std::string> examples;
  for (std::size_t i = 0; i < n; ++i) {
    if (same(expected[i], actual[i])) continue;
    if (result.count == 0) result.first = i;
    if (examples.size() < 5) {
      examples.push_back("[" + std::to_string(i) + "] expected " + detail::format_any(expected[i]) +
                         ", got " + detail::format_any(actual[i]));
    }
    ++result.count;
  }
  if (result.count > 0) result.message = detail::describe(result.count, n, examples, what);
  return result;
}

/// Exact comparison (integers, or floats that must be bit-for-bit equal in value; NaN equals NaN).
template <class T>
Mismatch compare_exact(const std::vector<T>& expected, const std::vector<T>& actual,
                       const std::string& what = "element") {
  if (expected.size() != actual.size()) {
    Mismatch m;
    m.count = 1;
    m.message = "size differs: expected " + std::to_string(expected.size()) + " " + what +
                "s, got " + std::to_string(actual.size());
    return m;
  }
  return compare_with(expected.data(), actual.data(), expected.size(),
                      [](const T& e, const T& a) {
                        if constexpr (std::is_floating_point_v<T>) {
                          if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
                        }
                        return e == a;
                      },
                      what);
}

/// True when `actual` is within `tol` of `expected`; NaN and infinities must match exactly.
inline bool within(double expected, double actual, Tolerance tol) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return expected == actual;
  return std::fabs(actual - expected) <= tol.abs + tol.rel * std::fabs(expected);
}

/// Float comparison within a tolerance.
template <class T>
Mismatch compare_near(const std::vector<T>& expected, const std::vector<T>& actual, Tolerance tol,
                      const std::string& what = "element") {
  static_assert(std::is_floating_point_v<T>, "compare_near is for floating-point data");
  if (expected.size() != actual.size()) return compare_exact(expected, actual, what);
  Mismatch m = compare_with(expected.data(), actual.data(), expected.size(),
                            [tol](T e, T a) { return within(e, a, tol); }, what);
  if (!m.ok()) {
    std::ostringstream os;
    os << m.message << " (tolerance: abs " << tol.abs << " + rel " << tol.rel << " x |expected|)";
    m.message = os.str();
  }
  return m;
}

}  // namespace lab
