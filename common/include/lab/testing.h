// Provided by the kit. GoogleTest support shared by every lab's tests.
//
// - lab::GpuTest / lab::GpuTestWithParam<T>: fixtures whose tests skip, with a clear
//   message, when the machine has no CUDA GPU (CPU-only CI builds and runs them).
// - EXPECT_ARRAY_EQ / EXPECT_ARRAY_NEAR: comparisons whose failure names the first
//   differing index, expected and actual values, and how many elements differ.
// - lab::bits_of: an array's bit patterns, for checking poison, guards and special
//   values exactly with EXPECT_ARRAY_EQ; EXPECT_BITS_EQ compares two arrays so.
// - lab::registered_variants / lab::variant_test_name: one test per registered variant,
//   named Registered/<Suite>.<Test>/<variant> (the grader finds a lab's required steps
//   by that name).
// - The test main (linked in by add_lab) accepts --seed=<N> and prints the seed.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "lab/buffer.h"
#include "lab/compare.h"
#include "lab/cuda_check.h"
#include "lab/data.h"
#include "lab/device.h"
#include "lab/variants.h"

namespace lab {

/// Skips the current test when there is no usable GPU (call from SetUp or a test body).
/// Fails the running test when its suite name lacks "Gpu": CTest splits each test binary
/// into .cpu and .gpu entries by that word, and the grader weighs "*Cpu.*" suites 0, so a
/// GPU suite without it would run, and fail, among the CPU tests. Checked before the
/// skip, so that machines without a GPU catch the mistake too.
void expect_gpu_suite_name();

#define LAB_REQUIRE_GPU()                                                             \
  do {                                                                                \
    std::string lab_why_;                                                             \
    if (!::lab::gpu_available(&lab_why_)) {                                           \
      GTEST_SKIP() << "No CUDA GPU: " << lab_why_                                     \
                   << ". GPU tests run only on a machine with an NVIDIA GPU.";        \
    }                                                                                 \
  } while (false)

/// Fixture for tests that need a GPU: skipped without one.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    expect_gpu_suite_name();
    LAB_REQUIRE_GPU();
  }
};

/// Value-parameterised fixture for tests that need a GPU: skipped without one.
template <class T>
class GpuTestWithParam : public ::testing::TestWithParam<T> {
 protected:
  void SetUp() override {
    expect_gpu_suite_name();
    LAB_REQUIRE_GPU();
  }
};

/// GoogleTest assertion from a comparison report.
inline ::testing::AssertionResult as_assertion(const Mismatch& m) {
  if (m.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << m.message;
}

/// "seed 12345 (rerun with --seed=…)" for failure messages.
std::string seed_note(Seed seed);

/// Name for a size parameter in test names, e.g. "n_1025".
std::string size_name(const ::testing::TestParamInfo<int>& info);

/// Marks a variant that is wrong on purpose (a race to measure, a version that ignores an
/// argument to time it): its description starts with these words, and the tests leave it
/// out. It earns nothing (a required step so marked counts as not registered).
inline constexpr const char* kWrongOnPurpose = "WRONG ON PURPOSE";

/// The names of the variants registered for `function` (LAB_REGISTER_VARIANT), without
/// "default" (the interface function, which the lab's other tests check) and without the
/// ones whose description starts with kWrongOnPurpose. Use as
///   INSTANTIATE_TEST_SUITE_P(Registered, SomeVariantsGpu,
///                            ::testing::ValuesIn(lab::registered_variants("fn")), lab::variant_test_name);
/// with GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SomeVariantsGpu) for a file that
/// registers none. The grader reads a required step's verdict from these tests' names.
std::vector<std::string> registered_variants(const char* function);

/// A variant's name as a test-name suffix: characters other than letters and digits become '_'.
std::string variant_test_name(const ::testing::TestParamInfo<std::string>& info);

/// The bit patterns of `v` as 32-bit words (a float4 gives four), for EXPECT_ARRAY_EQ.
// Compared as floats, poison (NaN) never equals itself and -0 equals +0; as words, an
// untouched guard, a NaN payload or a sign is checked exactly, and a failure shows it.
template <class T>
std::vector<unsigned> bits_of(const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(unsigned) == 0,
                "bits_of takes elements made of whole 32-bit words");
  std::vector<unsigned> out(v.size() * (sizeof(T) / sizeof(unsigned)));
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * sizeof(T));
  return out;
}

/// compare_exact(bits_of(expected), bits_of(actual)), without making the two copies when
/// the bytes are the same: the tests check large inputs (tens of MB) for changes, and the
/// copies cost more host time and memory traffic than the comparison itself.
template <class T>
Mismatch compare_bits(const std::vector<T>& expected, const std::vector<T>& actual) {
  if (expected.size() == actual.size() &&
      (expected.empty() || std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(T)) == 0)) {
    return Mismatch{};
  }
  return compare_exact(bits_of(expected), bits_of(actual));
}

}  // namespace lab

/// Expects two arrays to be equal element by element.
#define EXPECT_ARRAY_EQ(expected, actual) EXPECT_TRUE(::lab::as_assertion(::lab::compare_exact((expected), (actual))))
/// Expects two arrays to hold the same bit patterns (compared as 32-bit words, as bits_of).
#define EXPECT_BITS_EQ(expected, actual) EXPECT_TRUE(::lab::as_assertion(::lab::compare_bits((expected), (actual))))
/// Asserts two arrays are equal element by element.
#define ASSERT_ARRAY_EQ(expected, actual) ASSERT_TRUE(::lab::as_assertion(::lab::compare_exact((expected), (actual))))
/// Expects two float arrays to agree within a lab::Tolerance.
#define EXPECT_ARRAY_NEAR(expected, actual, tol) \
  EXPECT_TRUE(::lab::as_assertion(::lab::compare_near((expected), (actual), (tol))))
