// Provided by the kit. CPU tests of common/: the sdkTimer semantics, seeded data,
// comparison messages, device-peak arithmetic and the bench's statistics.
//   ./bin/common_test
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
// mallinfo2(), which the host-memory test reads, is glibc 2.33's.
#if __GLIBC_PREREQ(2, 33)
#define LABKIT_HAS_MALLINFO2 1
#endif
#endif

#include "helper_cuda.h"
#include "helper_timer.h"
#include "lab/bench_stats.h"
#include "lab/buffer.h"
#include "lab/padding.h"
#include "lab/testing.h"

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Average = total of completed laps / number of completed laps; value includes a running lap.
TEST(SdkTimer, AccumulatesLapsAndAverages) {
  StopWatchInterface* timer = nullptr;
  ASSERT_TRUE(sdkCreateTimer(&timer));
  EXPECT_EQ(sdkGetAverageTimerValue(&timer), 0.0f);
  for (int i = 0; i < 2; ++i) {
    sdkStartTimer(&timer);
    sleep_ms(20);
    sdkStopTimer(&timer);
  }
  const float total = sdkGetTimerValue(&timer);
  EXPECT_GE(total, 40.0f);
  EXPECT_LT(total, 400.0f);
  EXPECT_FLOAT_EQ(sdkGetAverageTimerValue(&timer), total / 2);
  sdkStartTimer(&timer);  // a running lap counts in the value, not in the average
  sleep_ms(20);
  EXPECT_GE(sdkGetTimerValue(&timer), total + 20.0f);
  EXPECT_FLOAT_EQ(sdkGetAverageTimerValue(&timer), total / 2);
  sdkStopTimer(&timer);
  EXPECT_TRUE(sdkDeleteTimer(&timer));
  EXPECT_EQ(timer, nullptr);
}

// Reset forgets the laps; a running timer keeps running from the reset.
TEST(SdkTimer, ResetForgetsLapsAndKeepsRunning) {
  StopWatchInterface* timer = nullptr;
  sdkCreateTimer(&timer);
  sdkStartTimer(&timer);
  sleep_ms(30);
  sdkResetTimer(&timer);
  EXPECT_LT(sdkGetTimerValue(&timer), 25.0f);
  sleep_ms(10);
  sdkStopTimer(&timer);
  EXPECT_GE(sdkGetTimerValue(&timer), 10.0f);
  EXPECT_FLOAT_EQ(sdkGetAverageTimerValue(&timer), sdkGetTimerValue(&timer));
  sdkDeleteTimer(&timer);
  EXPECT_FALSE(sdkStartTimer(nullptr));
}

// Bounded draws give exactly what they gave when each call divided twice (for its rejection
// limit and for the value): the limit kept from call to call and the power-of-two masks
// change no value, nor how many raw numbers a draw takes.
TEST(Data, BoundedDrawsAreTheSameAsBefore) {
  auto former = [](lab::Rng& raw, std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t x = raw.next();
    while (x >= limit) x = raw.next();
    return x % bound;
  };
  const std::uint64_t bounds[] = {1, 2, 3, 7, 41, 256, 1000, 65536, (1ull << 32) - 1, 1ull << 32, (1ull << 32) + 1,
                                  1ull << 63, (1ull << 63) + 5, ~0ull};
  lab::Rng fast(99), raw(99);
  for (int round = 0; round < 300; ++round) {
    for (const std::uint64_t bound : bounds) ASSERT_EQ(fast.below(bound), former(raw, bound)) << "bound " << bound;
  }
  for (const std::uint64_t bound : bounds) {  // the same bound many times in a row, as the generators ask it
    for (int i = 0; i < 200; ++i) ASSERT_EQ(fast.below(bound), former(raw, bound)) << "bound " << bound;
  }
  EXPECT_EQ(fast.next(), raw.next());
}

// The same seed gives the same data; another seed gives other data.
TEST(Data, SeededGeneratorsAreReproducible) {
  EXPECT_EQ(lab::random_floats(1000, -1, 1, 7), lab::random_floats(1000, -1, 1, 7));
  EXPECT_NE(lab::random_floats(1000, -1, 1, 7), lab::random_floats(1000, -1, 1, 8));
  EXPECT_NE(lab::derive_seed(1, "a"), lab::derive_seed(1, "b"));
  EXPECT_EQ(lab::derive_seed(1, "a"), lab::derive_seed(1, "a"));
  // The first outputs of xoshiro256** are fixed forever: data must not change between versions.
  lab::Rng rng(42);
  const std::uint64_t first = rng.next();
  EXPECT_EQ(first, lab::Rng(42).next());
}

// Values stay in range and integer-valued floats are integers.
TEST(Data, RangesAndIntegerFloats) {
  for (float v : lab::random_floats(10000, 2.0f, 3.0f, 1)) {
    ASSERT_GE(v, 2.0f);
    ASSERT_LT(v, 3.0f);
  }
  std::set<float> seen;
  for (float v : lab::integer_floats(10000, -3, 3, 2)) {
    ASSERT_EQ(v, std::floor(v));
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);  // every value of [-3, 3] appears
  for (int v : lab::random_ints(10000, 5, 6, 3)) ASSERT_TRUE(v == 5 || v == 6);
}

// Each distribution has the shape its name promises.
TEST(Data, DistributionsHaveTheirShape) {
  const std::size_t n = 5000;
  auto sorted = lab::random_uints(n, 1000, lab::Distribution::Sorted, 4);
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end()));
  auto reversed = lab::random_uints(n, 1000, lab::Distribution::Reversed, 4);
  EXPECT_TRUE(std::is_sorted(reversed.rbegin(), reversed.rend()));
  auto equal = lab::random_uints(n, 0, lab::Distribution::AllEqual, 4);
  EXPECT_EQ(std::count(equal.begin(), equal.end(), equal[0]), static_cast<long>(n));
  auto few = lab::random_uints(n, 0, lab::Distribution::FewUnique, 4);
  EXPECT_LE(std::set<unsigned>(few.begin(), few.end()).size(), 5u);
  auto skewed = lab::random_uints(n, 1000, lab::Distribution::Skewed, 4);
  const auto small = std::count_if(skewed.begin(), skewed.end(), [](unsigned v) { return v < 100; });
  EXPECT_GT(small, static_cast<long>(n / 2));  // P(1000 u^4 < 100) = 0.1^(1/4) ≈ 0.56
  for (unsigned v : skewed) ASSERT_LT(v, 1000u);
  EXPECT_STREQ(lab::to_string(lab::Distribution::FewUnique), "few_unique");
}

// reuse_freed_host_memory(): a large array (64 MB, or half the threshold the C library
// took) comes from the heap, not a mapping of its own, and once freed it stays with the
// process for the next one (no page faults paid again).
TEST(Data, FreedHostMemoryIsReused) {
#if defined(LABKIT_HAS_MALLINFO2)
  const std::size_t threshold = lab::reuse_freed_host_memory();
  ASSERT_GT(threshold, 0u) << "glibc took neither threshold";
  const std::size_t bytes = std::min(std::size_t{64} << 20, threshold / 2);
  const struct mallinfo2 before = mallinfo2();
  void* block = std::malloc(bytes);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, bytes);
  const struct mallinfo2 during = mallinfo2();
  EXPECT_EQ(during.hblkhd, before.hblkhd) << "the block of " << bytes << " bytes was mapped on its own";
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.fordblks, bytes) << "the freed block went back to the system";
#else
  GTEST_SKIP() << "reuse_freed_host_memory() acts on glibc 2.33 and newer only";
#endif
}

// A mismatch names the count, the first index, expected and actual values.
TEST(Compare, ExactMismatchMessageNamesFirstIndexAndCount) {
  std::vector<int> expected{1, 2, 3, 4, 5}, actual{1, 2, 9, 4, 7};
  const lab::Mismatch m = lab::compare_exact(expected, actual);
  EXPECT_EQ(m.count, 2u);
  EXPECT_EQ(m.first, 2u);
  EXPECT_NE(m.message.find("2 of 5 elements differ"), std::string::npos) << m.message;
  EXPECT_NE(m.message.find("[2] expected 3, got 9"), std::string::npos) << m.message;
  EXPECT_NE(m.message.find("[4] expected 5, got 7"), std::string::npos) << m.message;
  EXPECT_TRUE(lab::compare_exact(expected, expected).ok());
  EXPECT_FALSE(lab::compare_exact(expected, std::vector<int>{1, 2}).ok());
}

// Float tolerance is abs + rel·|expected|; NaN and Inf positions must match.
TEST(Compare, ToleranceAndSpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const lab::Tolerance tol{1e-3, 1e-2};
  EXPECT_TRUE(lab::compare_near(std::vector<float>{100.0f, 0.0f}, std::vector<float>{100.9f, 0.0009f}, tol).ok());
  EXPECT_FALSE(lab::compare_near(std::vector<float>{100.0f}, std::vector<float>{101.1f}, tol).ok());
  EXPECT_TRUE(lab::compare_near(std::vector<float>{nan, inf}, std::vector<float>{nan, inf}, tol).ok());
  EXPECT_FALSE(lab::compare_near(std::vector<float>{1.0f}, std::vector<float>{nan}, tol).ok());
  EXPECT_FALSE(lab::compare_near(std::vector<float>{inf}, std::vector<float>{-inf}, tol).ok());
  EXPECT_TRUE(lab::compare_exact(std::vector<float>{nan}, std::vector<float>{nan}).ok());
  const lab::Mismatch m = lab::compare_near(std::vector<float>{1.0f}, std::vector<float>{nan}, tol);
  EXPECT_NE(m.message.find("got nan"), std::string::npos) << m.message;
}

// Bit patterns compared without copies: the same verdict and message as comparing bits_of
// of each, where -0 differs from +0 and a NaN's payload counts.
TEST(Compare, BitsAsWords) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> guard{1.5f, nan, -0.0f, 4.0f};
  EXPECT_TRUE(lab::compare_bits(guard, guard).ok());
  EXPECT_TRUE(lab::compare_bits(std::vector<float>{}, std::vector<float>{}).ok());
  const std::vector<float> changed{1.5f, nan, 0.0f, 4.25f};
  const lab::Mismatch m = lab::compare_bits(guard, changed);
  const lab::Mismatch words = lab::compare_exact(lab::bits_of(guard), lab::bits_of(changed));
  EXPECT_EQ(m.count, words.count);
  EXPECT_EQ(m.first, words.first);
  EXPECT_EQ(m.message, words.message);
  EXPECT_EQ(m.count, 2u);
  EXPECT_EQ(m.first, 2u);
  EXPECT_NE(m.message.find("[2] expected 2147483648, got 0"), std::string::npos) << m.message;
  EXPECT_FALSE(lab::compare_bits(guard, std::vector<float>{1.5f, nan}).ok());
  // Elements of several words (four floats) compare word by word, as bits_of gives them.
  struct Quad {
    float x, y, z, w;
  };
  const std::vector<Quad> quads{{1, 2, 3, 4}}, other{{1, 2, 3, 5}};
  const lab::Mismatch q = lab::compare_bits(quads, other);
  EXPECT_EQ(q.count, 1u);
  EXPECT_EQ(q.first, 3u);
}

// Peak figures from the device attributes: the H100 SXM's published numbers.
TEST(DeviceFacts, PeakArithmetic) {
  EXPECT_NEAR(lab::peak_dram_gbps(2619000, 5120), 3352.3, 0.1);
  EXPECT_EQ(lab::fp32_lanes_per_sm(7, 5), 64);
  EXPECT_EQ(lab::fp32_lanes_per_sm(8, 0), 64);
  EXPECT_EQ(lab::fp32_lanes_per_sm(8, 6), 128);
  EXPECT_EQ(lab::fp32_lanes_per_sm(9, 0), 128);
}

// Quantiles interpolate; the median's relative error shrinks with more samples.
// The record of padded buffers behind the bench's padding guard: bookkeeping only (fake
// addresses, nothing is dereferenced).
TEST(PaddingRecord, RecordsNamesAndForgetsPaddedBuffers) {
  const auto find = [](const void* base) -> const lab::PaddedBuffer* {
    static std::vector<lab::PaddedBuffer> snapshot;
    snapshot = lab::padded_buffers();
    for (const auto& b : snapshot) {
      if (b.base == base) return &b;
    }
    return nullptr;
  };
  static char storage[3];
  const void* padded = &storage[0];
  const void* exact = &storage[1];
  lab::detail::note_device_allocation(padded, 1000, 2 << 20);
  lab::detail::note_device_allocation(exact, 4096, 4096);  // no padding: not recorded
  ASSERT_NE(find(padded), nullptr);
  EXPECT_EQ(find(padded)->bytes, 1000u);
  EXPECT_EQ(find(padded)->allocated, std::size_t{2} << 20);
  EXPECT_EQ(find(padded)->name, "");
  EXPECT_EQ(find(exact), nullptr);
  EXPECT_TRUE(lab::padded_buffer_live(padded, 2 << 20));
  EXPECT_FALSE(lab::padded_buffer_live(padded, 4 << 20));

  lab::detail::note_device_argument(padded, 2, "vector_add");
  lab::detail::note_device_argument(exact, 0, "vector_add");  // unknown: ignored
  EXPECT_EQ(find(padded)->name, "argument 3 of vector_add");
  lab::detail::note_device_argument(padded, 0, "reduce_sum");  // the latest call names it
  EXPECT_EQ(find(padded)->name, "argument 1 of reduce_sum");

  lab::detail::note_device_free(padded);
  EXPECT_EQ(find(padded), nullptr);
  EXPECT_FALSE(lab::padded_buffer_live(padded, 2 << 20));
  lab::detail::note_device_free(exact);  // never recorded: no effect
  lab::detail::note_device_free(nullptr);
}

// The message names the buffer, the first changed byte past its end and what to do.
TEST(PaddingRecord, ProblemNamesBufferAndFirstOffsetPastTheEnd) {
  lab::PaddedBuffer b;
  b.bytes = 120000004;
  b.allocated = 121634816;
  b.name = "argument 3 of vector_add";
  const std::string at_end = lab::padding_problem(b, 120000004, 12);
  EXPECT_NE(at_end.find("wrote past the end of argument 3 of vector_add (120000004 bytes)"), std::string::npos) << at_end;
  EXPECT_NE(at_end.find("12 bytes of the padding behind it changed, the first 0 bytes past its end (byte 120000004"),
            std::string::npos) << at_end;
  EXPECT_NE(at_end.find("lab::workspace"), std::string::npos);
  const std::string later = lab::padding_problem(b, 120000005, 1);
  EXPECT_NE(later.find("1 byte of the padding behind it changed, the first 1 byte past its end"), std::string::npos)
      << later;
  b.name.clear();
  EXPECT_NE(lab::padding_problem(b, 120004004, 4).find("past the end of a device buffer of the bench (120000004 bytes)"),
            std::string::npos);
}

TEST(BenchStats, QuantilesAndStopRule) {
  EXPECT_DOUBLE_EQ(lab::bench::quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(lab::bench::quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(lab::bench::quantile({}, 0.5), 0.0);
  std::vector<double> few{1.0, 1.1, 0.9, 1.05, 0.95}, many;
  for (int i = 0; i < 20; ++i) many.insert(many.end(), few.begin(), few.end());
  const auto s_few = lab::bench::summarize(few), s_many = lab::bench::summarize(many);
  EXPECT_DOUBLE_EQ(s_few.median, 1.0);
  EXPECT_LT(s_many.rel_se, s_few.rel_se);
  lab::bench::StopRule rule;  // 10 samples, 0.3 s, 1%
  EXPECT_FALSE(lab::bench::should_stop(rule, s_few, 1.0));          // too few samples
  EXPECT_FALSE(lab::bench::should_stop(rule, s_many, 0.1));         // too little time
  EXPECT_TRUE(lab::bench::should_stop(rule, s_many, 0.5));          // precise: 1.2533*0.074/10 < 1%
  EXPECT_TRUE(lab::bench::should_stop(rule, s_few, rule.max_seconds));  // the time cap
  EXPECT_TRUE(lab::bench::host_time_suspect(0.01, 5.0));
  EXPECT_FALSE(lab::bench::host_time_suspect(1.0, 1.05));
}

// The error message names the call, the error and gives a next step.
TEST(CudaCheck, MessageNamesCallErrorAndHint) {
  const std::string m = lab::cuda_error_message(cudaErrorIllegalAddress, "cudaMemcpy(a, b, n, k)", "/x/y/lab.cu", 42);
  EXPECT_NE(m.find("lab.cu:42"), std::string::npos) << m;
  EXPECT_NE(m.find("cudaErrorIllegalAddress"), std::string::npos) << m;
  EXPECT_NE(m.find("`cudaMemcpy(a, b, n, k)`"), std::string::npos) << m;
  EXPECT_NE(m.find("compute-sanitizer"), std::string::npos) << m;
  EXPECT_THROW(checkCudaErrors(cudaErrorInvalidValue), lab::CudaError);
  EXPECT_NO_THROW(checkCudaErrors(cudaSuccess));
}

// One test per registered variant: "default" and the versions wrong on purpose are left
// out, the rest keep their order; test names keep letters and digits only.
void probe_add(const float*, float*, int) {}
TEST(RegisteredVariants, LeaveOutDefaultAndWrongOnPurpose) {
  auto& registry = lab::local_variants();
  const auto fn = reinterpret_cast<lab::AnyFunction>(&probe_add);
  registry.add({"probe_add", "default", fn, "the interface function"});
  registry.add({"probe_add", "tiled", fn, "a tile in shared memory"});
  registry.add({"probe_add", "my_racy", fn, std::string(lab::kWrongOnPurpose) + ": bins[b]++"});
  registry.add({"probe_add", "warp.finish", fn, "says WRONG ON PURPOSE later, not first"});
  EXPECT_EQ(lab::registered_variants("probe_add"), (std::vector<std::string>{"tiled", "warp.finish"}));
  EXPECT_TRUE(lab::registered_variants("no_such_function").empty());
  EXPECT_EQ(lab::variant_test_name(::testing::TestParamInfo<std::string>("warp.finish", 0)), "warp_finish");
  EXPECT_EQ(lab::variant_test_name(::testing::TestParamInfo<std::string>("", 0)), "unnamed");
}

}  // namespace
