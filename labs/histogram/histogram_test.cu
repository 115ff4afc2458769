// Provided by the kit: do not edit. Correctness tests of histogram.
//
//   ./build/dev/bin/histogram_test                            all tests
//   ./build/dev/bin/histogram_test --gtest_filter='*n_1025*'   one size
//   ./build/dev/bin/histogram_test --gtest_filter='*bins_7*'   one bin count
//   ./build/dev/bin/histogram_test --seed=7                   other random data
//
// Each GPU test: prepare the values and the expected counts on the CPU, poison the bins
// (every counter 0xFFFFFFFF) so a histogram that adds to old contents instead of
// overwriting them cannot pass, run histogram, then verify every count exactly, that the
// counts add up to n, that the memory after the bins is untouched and that the input is
// unchanged. Then run it a second time on the same bins: the result must not change.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "histogram.h"
#include "lab/testing.h"

namespace {

constexpr unsigned kPoison = 0xFFFFFFFFu;
constexpr int kGuard = 64;  // counters after bins[num_bins - 1] that must stay poisoned

// Values after in[n - 1] in the device buffer: an implementation that reads past the end
// counts them, and the exact comparison (and the sum) catches it.
const std::vector<unsigned> kValuesAfterEnd(kGuard, 0u);

unsigned long long sum_of(const std::vector<unsigned>& v) {
  return std::accumulate(v.begin(), v.end(), 0ull);
}

// Runs histogram on a device copy of `values` (starting `offset` values into its buffer,
// so offset 1..3 is not 16-byte aligned) and checks the counts exactly, their sum, the
// guard after the bins and the input; then calls it again and checks the counts again.
// `fn` is the version under test: histogram itself, or a registered variant of it.
using HistogramFn = decltype(histogram);
void check_histogram(const std::vector<unsigned>& values, int num_bins, int offset = 0, HistogramFn* fn = histogram) {
  // Prepare: the expected counts, the input with values before and after it, poisoned bins.
  const int n = static_cast<int>(values.size());
  std::vector<unsigned> expected(num_bins);
  histogram_cpu(values.data(), n, expected.data(), num_bins);
  std::vector<unsigned> padded(offset, 1u);  // values before in[0] must not be counted either
  padded.insert(padded.end(), values.begin(), values.end());
  padded.insert(padded.end(), kValuesAfterEnd.begin(), kValuesAfterEnd.end());
  lab::DeviceBuffer<unsigned> d_in(padded), d_bins(num_bins + kGuard);
  d_bins.poison();

  for (int call = 1; call <= 2; ++call) {
    SCOPED_TRACE("call " + std::to_string(call) + " of 2 on the same bins (the second must give the same counts)");
    // Run.
    fn(d_in.data() + offset, n, d_bins.data(), num_bins);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());

    // Verify.
    const std::vector<unsigned> all = d_bins.download();
    const std::vector<unsigned> bins(all.begin(), all.begin() + num_bins);
    const std::vector<unsigned> after(all.begin() + num_bins, all.end());
    EXPECT_ARRAY_EQ(expected, bins) << "bins[b] must be the number of values with value % num_bins == b "
                                       "(a count 1 too low everywhere: the bins were not set to 0 first)";
    EXPECT_EQ(static_cast<unsigned long long>(n), sum_of(bins))
        << "the counts must add up to n: a smaller sum means lost increments (a race: use atomicAdd), "
           "a larger one values counted twice or read past in[n - 1]";
    EXPECT_ARRAY_EQ(std::vector<unsigned>(kGuard, kPoison), after)
        << "histogram wrote past bins[num_bins - 1]: is the bin computed as an unsigned value % num_bins?";
  }
  EXPECT_ARRAY_EQ(padded, d_in.download()) << "the input was modified";
}

// `n` values of `distribution` in [0, range) (range 0: the full 32-bit range).
std::vector<unsigned> make_values(int n, std::uint64_t range, lab::Distribution distribution, lab::Seed seed) {
  return lab::random_uints(static_cast<std::size_t>(n), range, distribution, seed);
}

std::string describe(int n, int num_bins, const char* data, lab::Seed seed) {
  return "n = " + std::to_string(n) + ", num_bins = " + std::to_string(num_bins) + ", " + data + ", " +
         lab::seed_note(seed);
}

// ---- the sequential version ----------------------------------------------------------

// A small example by hand: the bin of each value is its remainder by 4.
TEST(HistogramCpu, CountsRemainders) {
  const std::vector<unsigned> values{3, 7, 0, 5, 3, 3, 9, 12};  // bins 3 3 0 1 3 3 1 0
  std::vector<unsigned> bins(4);
  histogram_cpu(values.data(), 8, bins.data(), 4);
  EXPECT_EQ(bins, (std::vector<unsigned>{2, 2, 0, 4}));
}

// The lecture's serial version starts by setting every bin to 0: old contents never count.
TEST(HistogramCpu, OverwritesBins) {
  const std::vector<unsigned> values{1, 1, 2};
  std::vector<unsigned> bins{99, 99, 99};
  histogram_cpu(values.data(), 3, bins.data(), 3);
  EXPECT_EQ(bins, (std::vector<unsigned>{0, 2, 1}));
}

// With n = 0 every bin is 0.
TEST(HistogramCpu, ZeroLengthZeroesBins) {
  std::vector<unsigned> bins(5, 7u);
  histogram_cpu(nullptr, 0, bins.data(), 5);
  EXPECT_EQ(bins, std::vector<unsigned>(5, 0u));
}

// Values at and above 2^31 use unsigned remainders (as signed ints they would be negative
// and so would their remainders): 2^32 - 1 = 3 (mod 7), 2^31 = 2, 2^31 - 1 = 1, 2^32 - 6 = 5.
TEST(HistogramCpu, FullRangeValuesUseUnsignedModulo) {
  const std::vector<unsigned> values{0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 0xFFFFFFFAu};
  std::vector<unsigned> bins(7);
  histogram_cpu(values.data(), 4, bins.data(), 7);
  EXPECT_EQ(bins, (std::vector<unsigned>{0, 1, 1, 1, 0, 1, 0}));
}

// One bin counts every value.
TEST(HistogramCpu, OneBinCountsEverything) {
  const std::vector<unsigned> values{0, 1, 0xFFFFFFFFu, 12345};
  unsigned bin = 0;
  histogram_cpu(values.data(), 4, &bin, 1);
  EXPECT_EQ(bin, 4u);
}

// The lecture's example: 1M values, 16 bins, 1024 threads of 1024 values each. The 1024
// per-thread histograms of 16 bins (16 x 1024 = 16384 partial counts; the slide's
// "16284" is a typo) reduce, bin by bin, to the histogram of all the values.
TEST(HistogramCpu, LecturePerThreadHistogramsReduceToTheWhole) {
  const int n = 1 << 20, threads = 1024, per_thread = n / threads, num_bins = 16;
  std::vector<unsigned> values(n);
  std::iota(values.begin(), values.end(), 0u);  // 0 .. 2^20 - 1: every bin gets 2^16
  std::vector<unsigned> whole(num_bins);
  histogram_cpu(values.data(), n, whole.data(), num_bins);
  EXPECT_EQ(whole, std::vector<unsigned>(num_bins, 65536u));

  std::vector<unsigned> partial(static_cast<std::size_t>(threads) * num_bins);
  EXPECT_EQ(partial.size(), 16384u);
  for (int t = 0; t < threads; ++t) {
    histogram_cpu(values.data() + t * per_thread, per_thread, partial.data() + t * num_bins, num_bins);
  }
  std::vector<unsigned> reduced(num_bins, 0u);
  for (int t = 0; t < threads; ++t) {
    for (int b = 0; b < num_bins; ++b) reduced[b] += partial[t * num_bins + b];
  }
  EXPECT_EQ(reduced, whole);
}

// ---- the GPU version: sizes ---------------------------------------------------------

class HistogramGpu : public lab::GpuTestWithParam<int> {};

// Exact counts at sizes around warp and block boundaries: full-range values into 256 bins
// (a power of two) and 1000 bins (not one), and all-equal values (every thread hits one bin).
TEST_P(HistogramGpu, MatchesCpu) {
  const int n = GetParam();
  struct Case {
    const char* data;
    int num_bins;
    lab::Distribution distribution;
  };
  const Case cases[] = {{"uniform full-range values", 256, lab::Distribution::Uniform},
                        {"uniform full-range values", 1000, lab::Distribution::Uniform},
                        {"all-equal values", 256, lab::Distribution::AllEqual}};
  std::uint64_t number = 0;
  for (const Case& c : cases) {
    const lab::Seed seed = lab::case_seed("histogram_sizes", 4ull * n + number++);
    SCOPED_TRACE(describe(n, c.num_bins, c.data, seed));
    check_histogram(make_values(n, 0, c.distribution, seed), c.num_bins);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, HistogramGpu,
                         ::testing::Values(1, 31, 32, 33, 1023, 1024, 1025, (1 << 20) + 1, (1 << 24) + 3),
                         lab::size_name);

// ---- the GPU version: bin counts and distributions ----------------------------------

std::string bins_name(const ::testing::TestParamInfo<int>& info) { return "bins_" + std::to_string(info.param); }

class HistogramBinsGpu : public lab::GpuTestWithParam<int> {};

// Every bin count of the contract's range with every distribution, drawn once from the
// full 32-bit range and once from [0, num_bins) (so skewed data is skewed over the bins,
// and few-unique data lands in few bins), two seeds each.
TEST_P(HistogramBinsGpu, MatchesCpuForEveryDistribution) {
  const int num_bins = GetParam();
  const int n = 100003;  // not a multiple of 4, 32 or any block size
  for (lab::Distribution d : lab::all_distributions()) {
    for (const std::uint64_t range : {std::uint64_t{0}, static_cast<std::uint64_t>(num_bins)}) {
      for (int trial = 0; trial < 2; ++trial) {
        const lab::Seed seed =
            lab::case_seed(std::string("histogram_bins_") + lab::to_string(d), 4ull * num_bins + 2 * (range != 0) + trial);
        const std::string data = std::string(lab::to_string(d)) + (range == 0 ? " full-range" : " below num_bins") + " values";
        SCOPED_TRACE(describe(n, num_bins, data.c_str(), seed));
        check_histogram(make_values(n, range, d, seed), num_bins);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BinCounts, HistogramBinsGpu, ::testing::Values(1, 2, 7, 32, 255, 256, 1000, 1024, 4096),
                         bins_name);

// ---- the GPU version: edge cases ------------------------------------------------------

using HistogramGpuEdge = lab::GpuTest;

// n = 0 sets every bin to 0 (the bins were poisoned) and writes nothing else.
TEST_F(HistogramGpuEdge, ZeroLengthZeroesBins) {
  for (const int num_bins : {1, 7, 256, kHistogramMaxBins}) {
    SCOPED_TRACE("n = 0, num_bins = " + std::to_string(num_bins));
    check_histogram({}, num_bins);
  }
}

// Input pointers that are not 16-byte aligned (vector loads must fall back, not fault).
TEST_F(HistogramGpuEdge, UnalignedInput) {
  for (const int num_bins : {16, 256, 1000}) {
    for (int offset = 1; offset < 4; ++offset) {
      for (const int n : {1, 2, 3, 5, 4099}) {
        const lab::Seed seed = lab::case_seed("histogram_unaligned", 10000ull * num_bins + 100ull * offset + n);
        SCOPED_TRACE("offset = " + std::to_string(offset) + " values, " +
                     describe(n, num_bins, "uniform full-range values", seed));
        check_histogram(make_values(n, 0, lab::Distribution::Uniform, seed), num_bins, offset);
      }
    }
  }
}

// Maximum atomic contention: 2^24 equal values all land in one bin, whatever num_bins.
TEST_F(HistogramGpuEdge, AllEqualValuesMaximumContention) {
  const int n = 1 << 24;
  for (const int num_bins : {1, 32, 256, kHistogramMaxBins}) {
    const lab::Seed seed = lab::case_seed("histogram_all_equal", num_bins);
    SCOPED_TRACE(describe(n, num_bins, "all-equal values", seed));
    check_histogram(make_values(n, 0, lab::Distribution::AllEqual, seed), num_bins);
  }
}

// The bench's workloads at 2^24: uniform and skewed values in [0, 256) into 256 bins,
// and uniform values in [0, 4096) into 4096 bins.
TEST_F(HistogramGpuEdge, BenchShapes) {
  const int n = (1 << 24) + 5;
  struct Case {
    const char* data;
    std::uint64_t range;
    lab::Distribution distribution;
    int num_bins;
  };
  const Case cases[] = {{"uniform values in [0, 256)", 256, lab::Distribution::Uniform, 256},
                        {"skewed values in [0, 256)", 256, lab::Distribution::Skewed, 256},
                        {"uniform values in [0, 4096)", 4096, lab::Distribution::Uniform, 4096}};
  std::uint64_t number = 0;
  for (const Case& c : cases) {
    const lab::Seed seed = lab::case_seed("histogram_bench_shapes", number++);
    SCOPED_TRACE(describe(n, c.num_bins, c.data, seed));
    check_histogram(make_values(n, c.range, c.distribution, seed), c.num_bins);
  }
}

// Values at and above 2^31 with divisors that are not powers of two: a signed remainder
// would be negative (an index before bins[0]), a wrong fast remainder lands in a
// neighbouring bin. Multiples of num_bins and their neighbours test the edges of each bin.
TEST_F(HistogramGpuEdge, FullRangeValuesUseUnsignedModulo) {
  for (const int num_bins : {3, 7, 255, 1000, 4095, kHistogramMaxBins}) {
    std::vector<unsigned> values;
    const unsigned top_multiple = 0xFFFFFFFFu / num_bins * num_bins;
    for (unsigned k = 0; k < 300; ++k) {
      values.push_back(0xFFFFFFFFu - k);
      values.push_back(0x80000000u + k);
      values.push_back(0x7FFFFFFFu - k);
      values.push_back(k);
      values.push_back(top_multiple - k);
      values.push_back(k * static_cast<unsigned>(num_bins) + 0x80000000u / num_bins * num_bins);
    }
    SCOPED_TRACE("n = " + std::to_string(values.size()) + ", num_bins = " + std::to_string(num_bins) +
                 ", values near 0, 2^31 and 2^32 and multiples of num_bins");
    check_histogram(values, num_bins);
  }
}

// Calls with different bin counts on the same buffers, one after another: nothing is
// cached between calls (by pointer, by size) and every call overwrites its bins.
TEST_F(HistogramGpuEdge, BackToBackCallsWithDifferentBinCounts) {
  const int n = 70001;
  const lab::Seed seed = lab::case_seed("histogram_back_to_back");
  const std::vector<unsigned> values = make_values(n, 0, lab::Distribution::Uniform, seed);
  lab::DeviceBuffer<unsigned> d_in(values), d_bins(kHistogramMaxBins);
  d_bins.poison();
  for (const int num_bins : {256, 7, 4096, 1, 256, 33}) {
    SCOPED_TRACE(describe(n, num_bins, "uniform full-range values", seed));
    std::vector<unsigned> expected(num_bins);
    histogram_cpu(values.data(), n, expected.data(), num_bins);
    histogram(d_in.data(), n, d_bins.data(), num_bins);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<unsigned> all = d_bins.download();
    EXPECT_ARRAY_EQ(expected, std::vector<unsigned>(all.begin(), all.begin() + num_bins));
  }
}

// ---- every registered variant ---------------------------------------------------------------

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/histogram/lab.json, "required_variants").
// Every variant is exact for bin counts across the contract's range, with uniform and
// all-equal values, at sizes around block boundaries and off a 16-byte boundary. A variant
// whose description starts with "WRONG ON PURPOSE" (the reference's racy one, yours for
// questions 1 and 6) is left out: lab::registered_variants.
class HistogramVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HistogramVariantsGpu);

TEST_P(HistogramVariantsGpu, MatchesCpu) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<HistogramFn>("histogram", name);
  ASSERT_NE(fn, nullptr);
  for (const int num_bins : {1, 7, 32, 256, 1000, 4096}) {
    for (const int n : {1, 33, 1025, 100003}) {
      for (const lab::Distribution d : {lab::Distribution::Uniform, lab::Distribution::AllEqual}) {
        const lab::Seed seed = lab::case_seed(std::string("histogram_variant_") + lab::to_string(d), 8192ull * n + num_bins);
        const int offset = n % 4;
        SCOPED_TRACE("variant '" + name + "', offset " + std::to_string(offset) + ", " +
                     describe(n, num_bins, lab::to_string(d), seed));
        check_histogram(make_values(n, 0, d, seed), num_bins, offset, fn);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, HistogramVariantsGpu, ::testing::ValuesIn(lab::registered_variants("histogram")),
                         lab::variant_test_name);


// ---- Find the bug: fix_histogram -----------------------------------------------------------
// Lecture 6's histogram "with error" (handout "Find the bug"): exact counts on sizes that
// leave the last block partly empty, with a whole block of values after in[n - 1] (all in
// bin 0, so that reading them shows) and enough values per bin that a race loses some.
// Named like a registered variant's test so that the grader finds the exercise's verdict
// the same way (labs/histogram/lab.json).
class FixHistogramGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(FixHistogramGpu, CountsExactly) {
  constexpr int kBlockOfValues = 1024;  // more than any block the kernel could be launched with
  struct Case { int n; int num_bins; };
  for (const Case c : {Case{1, 16}, Case{100, 16}, Case{1000, 256}, Case{4097, 7}, Case{65537, 256},
                       Case{(1 << 20) + 3, 16}, Case{(1 << 20) + 5, kHistogramMaxBins}}) {
    const lab::Seed seed = lab::case_seed("fix_histogram", 8192ull * c.n + c.num_bins);
    SCOPED_TRACE(describe(c.n, c.num_bins, "uniform full-range values", seed));
    const std::vector<unsigned> values = make_values(c.n, 0, lab::Distribution::Uniform, seed);
    std::vector<unsigned> expected(c.num_bins);
    histogram_cpu(values.data(), c.n, expected.data(), c.num_bins);
    std::vector<unsigned> padded = values;
    padded.insert(padded.end(), kBlockOfValues, 0u);
    lab::DeviceBuffer<unsigned> d_in(padded), d_bins(c.num_bins + kGuard);
    d_bins.poison();
    fix_histogram(d_in.data(), c.n, d_bins.data(), c.num_bins);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<unsigned> all = d_bins.download();
    const std::vector<unsigned> bins(all.begin(), all.begin() + c.num_bins);
    EXPECT_EQ(static_cast<unsigned long long>(c.n), sum_of(bins))
        << "the counts must add up to n: fewer means lost increments (a race), more means values counted "
           "from past in[n - 1]";
    EXPECT_ARRAY_EQ(expected, bins) << "bins[b] must be the number of values with value % num_bins == b";
    EXPECT_ARRAY_EQ(std::vector<unsigned>(kGuard, kPoison), std::vector<unsigned>(all.begin() + c.num_bins, all.end()))
        << "fix_histogram wrote past bins[num_bins - 1]";
    EXPECT_ARRAY_EQ(padded, d_in.download()) << "the input was modified";
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, FixHistogramGpu, ::testing::Values(std::string("fix_histogram")),
                         lab::variant_test_name);

}  // namespace
