// Provided by the kit: do not edit. Correctness tests of inclusive_scan, exclusive_scan
// and segmented_inclusive_scan, of the find-the-bug exercise fix_hsh_scan and of the
// further part spmv_csr (at the end).
//
//   ./build/dev/bin/scan_test                                     all tests
//   ./build/dev/bin/scan_test --gtest_filter='ScanCpu*'           the lectures' tables (CPU)
//   ./build/dev/bin/scan_test --gtest_filter='*InclusiveScanGpu*' one function
//   ./build/dev/bin/scan_test --gtest_filter='*n_1025*'           one size
//   ./build/dev/bin/scan_test --gtest_filter='*PartSpmvGpu*'      the sparse matrix-vector product
//   ./build/dev/bin/scan_test --seed=7                            other random data
//
// Each GPU test: prepare inputs and the expected result on the CPU, poison the output
// (NaN) so an element your kernel skips cannot pass, run the scan, then verify the
// result exactly, the memory just past the output, and that the inputs are unchanged.
// The data are integer-valued floats chosen so that every partial sum a scan can form,
// in any order, is exact (see exact_in_any_order): a correct scan then matches the
// sequential loop bit for bit, and one element missing anywhere shows.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/testing.h"
#include "scan.h"

namespace {

enum class Scan { Inclusive, Exclusive, Segmented };

const char* name_of(Scan s) {
  switch (s) {
    case Scan::Inclusive: return "inclusive_scan";
    case Scan::Exclusive: return "exclusive_scan";
    case Scan::Segmented: return "segmented_inclusive_scan";
  }
  return "?";
}

// The sequential result (scan_cpu.cpp).
std::vector<float> cpu_result(Scan s, const std::vector<float>& in, const std::vector<int>& flags) {
  const int n = static_cast<int>(in.size());
  std::vector<float> out(in.size());
  switch (s) {
    case Scan::Inclusive: inclusive_scan_cpu(in.data(), out.data(), n); break;
    case Scan::Exclusive: exclusive_scan_cpu(in.data(), out.data(), n); break;
    case Scan::Segmented: segmented_inclusive_scan_cpu(in.data(), flags.data(), out.data(), n); break;
  }
  return out;
}

// The versions under test: the interface functions, unless a variant's test swaps one
// in for its duration (UsingVariant).
using InclusiveFn = decltype(inclusive_scan);
using ExclusiveFn = decltype(exclusive_scan);
using SegmentedFn = decltype(segmented_inclusive_scan);
InclusiveFn* g_inclusive = inclusive_scan;
ExclusiveFn* g_exclusive = exclusive_scan;
SegmentedFn* g_segmented = segmented_inclusive_scan;

// Calls the function under test on device pointers.
void run_scan(Scan s, const float* in, const int* flags, float* out, int n) {
  switch (s) {
    case Scan::Inclusive: g_inclusive(in, out, n); break;
    case Scan::Exclusive: g_exclusive(in, out, n); break;
    case Scan::Segmented: g_segmented(in, flags, out, n); break;
  }
}

// Why exact comparisons are fair. Whatever order a scan adds in, each value it forms
// (a partial result, a block sum, a carry) is the sum of a contiguous range
// in[i] + ... + in[j], possibly plus zeros, and that equals P(j) - P(i - 1) for the
// exact prefix sums P (P(-1) = 0). For integer-valued inputs it is an integer of
// magnitude at most max P - min P. When that is <= 2^24, every such value is a float
// exactly (floats hold all integers up to 2^24), no addition rounds, and every correct
// scan returns exactly the sequential result. The segmented operator only ever adds
// contiguous ranges too, so the same bound covers it. Test data are checked with this.
bool exact_in_any_order(const std::vector<float>& in) {
  double p = 0, lo = 0, hi = 0;  // doubles hold these integers exactly
  for (float x : in) {
    if (x != std::floor(x)) return false;
    p += x;
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  return hi - lo <= 16777216.0;  // 2^24
}

// Values in {-1, 0, 1}: prefix sums wander like a random walk (about sqrt(n) away from 0).
std::vector<float> signed_data(int n, lab::Seed seed) { return lab::integer_floats(n, -1, 1, seed); }

// Small non-negative integers with max * n < 2^24, so even the total is exact; 0 when no
// such range exists (n >= 2^24), in which case the caller skips this distribution.
int small_data_max(int n) { return static_cast<int>(std::min<long long>(100, ((1LL << 24) - 1) / n)); }
std::vector<float> small_data(int n, lab::Seed seed) { return lab::integer_floats(n, 0, small_data_max(n), seed); }

// The device buffers of check_scan, kept from call to call: the tests make hundreds of
// calls, and a buffer allocated and freed for each one costs more than a small call (in
// the grader's judge programs each new buffer is also mapped into the worker process and
// unmapped again). Each grows to the largest size asked and stays. Never freed: the CUDA
// runtime may be gone by the time static destructors run. The grader's sanitizer runs
// still see exact bounds: the worker copies each argument into an allocation of the size
// labs/scan/lab.json's "bounds" give (n elements each).
template <class T>
lab::DeviceBuffer<T>& reused_buffer(int which, std::size_t count) {
  static auto* buffers = new lab::DeviceBuffer<T>[2];
  buffers[which].grow_to(count);
  return buffers[which];
}

// Runs scan `s` on device copies of `in` (and `flags`) and checks the result against
// `expected` (exactly, or within `tol`), that the 64 floats after out[n - 1] and the
// `offset` floats before out[0] are untouched, and that the inputs are unchanged.
// `offset` shifts every pointer by that many elements (not 16-byte aligned for 1..3).
void check_scan(Scan s, const std::vector<float>& in, const std::vector<int>& flags,
                const std::vector<float>& expected, int offset = 0, std::optional<lab::Tolerance> tol = {}) {
  // Prepare: padded inputs and a poisoned output with guard zones on both sides.
  const int n = static_cast<int>(in.size());
  const int guard = 64;
  std::vector<float> in_padded(offset, 0.0f);
  in_padded.insert(in_padded.end(), in.begin(), in.end());
  std::vector<int> flags_padded(offset, 0);
  if (s == Scan::Segmented) flags_padded.insert(flags_padded.end(), flags.begin(), flags.end());
  const std::size_t out_count = static_cast<std::size_t>(offset) + n + guard;
  lab::DeviceBuffer<float>& din = reused_buffer<float>(0, in_padded.size());
  lab::DeviceBuffer<float>& dout = reused_buffer<float>(1, out_count);
  din.upload(in_padded);
  dout.poison();
  int* dflags = nullptr;
  if (s == Scan::Segmented) {
    lab::DeviceBuffer<int>& buffer = reused_buffer<int>(0, flags_padded.size());
    buffer.upload(flags_padded);
    dflags = buffer.data();
  }

  // Run.
  run_scan(s, din.data() + offset, dflags != nullptr ? dflags + offset : nullptr, dout.data() + offset, n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const std::vector<float> out = dout.download(out_count);
  const std::vector<float> result(out.begin() + offset, out.begin() + offset + n);
  if (tol) {
    EXPECT_ARRAY_NEAR(expected, result, *tol) << name_of(s) << ": result differs by more than rounding allows";
  } else {
    EXPECT_ARRAY_EQ(expected, result) << name_of(s) << ": result must equal the sequential scan exactly";
  }
  const std::vector<float> after(out.begin() + offset + n, out.end());
  const std::vector<float> before(out.begin(), out.begin() + offset);
  EXPECT_ARRAY_EQ(std::vector<unsigned>(guard, 0xFFFFFFFFu), lab::bits_of(after))
      << name_of(s) << " wrote past out[n - 1]: check the bounds of the last block";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(offset, 0xFFFFFFFFu), lab::bits_of(before)) << name_of(s) << " wrote before out[0]";
  EXPECT_ARRAY_EQ(in_padded, din.download(in_padded.size()))
      << "input `in` was modified: scan into shared memory or `out`, not `in`";
  if (s == Scan::Segmented) {
    EXPECT_ARRAY_EQ(flags_padded, reused_buffer<int>(0, 0).download(flags_padded.size()))
        << "input `head_flags` was modified";
  }
}

// The usual case: exact comparison with the sequential result.
void check_exact(Scan s, const std::vector<float>& in, const std::vector<int>& flags = {}, int offset = 0) {
  ASSERT_TRUE(exact_in_any_order(in)) << "test data error: partial sums could round";
  check_scan(s, in, flags, cpu_result(s, in, flags), offset);
}

// Segment-start patterns for the segmented scan.
enum class Heads { Random, Sparse, All, None, OnlyFirst, Boundaries, NearBoundaries };

const char* name_of(Heads h) {
  switch (h) {
    case Heads::Random: return "random heads (1 in 8, flag values 1, 2, -1, 1000)";
    case Heads::Sparse: return "sparse heads (1 in 5000)";
    case Heads::All: return "every element starts a segment";
    case Heads::None: return "no flags at all (head_flags[0] = 0 too): one segment";
    case Heads::OnlyFirst: return "only head_flags[0] set: one segment";
    case Heads::Boundaries: return "heads at every multiple of 256 (block boundaries)";
    case Heads::NearBoundaries: return "heads at i % 1024 == 1 and i % 1024 == 1023";
  }
  return "?";
}

std::vector<int> head_flags(Heads h, int n, lab::Seed seed) {
  std::vector<int> f(n, 0);
  lab::Rng rng(seed);
  const int values[] = {1, 2, -1, 1000};  // any non-zero value starts a segment
  for (int i = 0; i < n; ++i) {
    switch (h) {
      case Heads::Random: f[i] = rng.below(8) == 0 ? values[rng.below(4)] : 0; break;
      case Heads::Sparse: f[i] = rng.below(5000) == 0 ? 1 : 0; break;
      case Heads::All: f[i] = 1; break;
      case Heads::None: f[i] = 0; break;
      case Heads::OnlyFirst: f[i] = i == 0 ? 1 : 0; break;
      case Heads::Boundaries: f[i] = i % 256 == 0 ? 1 : 0; break;
      case Heads::NearBoundaries: f[i] = (i % 1024 == 1 || i % 1024 == 1023) ? 7 : 0; break;
    }
  }
  return f;
}

// Seeds per size: the big sizes cost CPU time, and one seed already covers all their blocks.
int trials_for(int n) { return n <= (1 << 20) + 1 ? 3 : 1; }

// ---------------------------------------------------------------------------------
// The sequential versions on the lectures' worked examples.
// ---------------------------------------------------------------------------------

std::vector<float> run_cpu(Scan s, const std::vector<float>& in, const std::vector<int>& flags = {}) {
  return cpu_result(s, in, flags);
}

// Lecture 4: the inclusive scan of [1, 2, 3, 2, 3, 1, 4, 5].
TEST(ScanCpu, InclusiveLectureFourExample) {
  EXPECT_ARRAY_EQ((std::vector<float>{1, 3, 6, 8, 11, 12, 16, 21}),
                  run_cpu(Scan::Inclusive, {1, 2, 3, 2, 3, 1, 4, 5}));
}

// Lecture 7's table: the inclusive and the exclusive scan of the same input.
TEST(ScanCpu, InclusiveAndExclusiveLectureSevenTable) {
  const std::vector<float> input{1, 2, 1, 3, 1, 1, 3, 3, 2, 1, 2, 2};
  EXPECT_ARRAY_EQ((std::vector<float>{1, 3, 4, 7, 8, 9, 12, 15, 17, 18, 20, 22}), run_cpu(Scan::Inclusive, input));
  EXPECT_ARRAY_EQ((std::vector<float>{0, 1, 3, 4, 7, 8, 9, 12, 15, 17, 18, 20}), run_cpu(Scan::Exclusive, input));
}

// Lecture 7's segmented table: the header row as flags.
TEST(ScanCpu, SegmentedLectureSevenTable) {
  const std::vector<float> input{1, 2, 1, 3, 1, 1, 3, 3, 2, 1, 2, 2};
  const std::vector<int> headers{1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0};
  EXPECT_ARRAY_EQ((std::vector<float>{1, 3, 4, 3, 4, 5, 8, 11, 13, 1, 3, 5}), run_cpu(Scan::Segmented, input, headers));
}

// The same table's "alternative headers" (segment start indices 0, 3, 9) give the same flags.
TEST(ScanCpu, SegmentedLectureSevenAlternativeHeaders) {
  const std::vector<float> input{1, 2, 1, 3, 1, 1, 3, 3, 2, 1, 2, 2};
  std::vector<int> flags(input.size(), 0);
  for (int start : {0, 3, 9}) flags[start] = 1;
  EXPECT_ARRAY_EQ((std::vector<float>{1, 3, 4, 3, 4, 5, 8, 11, 13, 1, 3, 5}), run_cpu(Scan::Segmented, input, flags));
}

// The table's segmented exclusive row is the segmented inclusive scan minus the input.
TEST(ScanCpu, SegmentedExclusiveRowIsInclusiveMinusInput) {
  const std::vector<float> input{1, 2, 1, 3, 1, 1, 3, 3, 2, 1, 2, 2};
  const std::vector<int> headers{1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0};
  const std::vector<float> inclusive = run_cpu(Scan::Segmented, input, headers);
  std::vector<float> exclusive(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) exclusive[i] = inclusive[i] - input[i];
  EXPECT_ARRAY_EQ((std::vector<float>{0, 1, 3, 0, 3, 4, 5, 8, 11, 0, 1, 3}), exclusive);
}

// Lecture 4.4: where to cut a 100-inch sausage for 10 people, and what is left (39 inches).
TEST(ScanCpu, SausageCuts) {
  const std::vector<float> wants{3, 5, 2, 7, 28, 4, 3, 0, 8, 1};
  const std::vector<float> cuts = run_cpu(Scan::Inclusive, wants);
  EXPECT_ARRAY_EQ((std::vector<float>{3, 8, 10, 17, 45, 49, 52, 52, 60, 61}), cuts);
  EXPECT_EQ(100.0f - cuts.back(), 39.0f);
}

// Lecture 4.7: the exclusive and inclusive scan of [3, 1, 7, 0, 4, 1, 6, 3].
TEST(ScanCpu, ExclusiveAndInclusiveLectureFourSeven) {
  const std::vector<float> input{3, 1, 7, 0, 4, 1, 6, 3};
  EXPECT_ARRAY_EQ((std::vector<float>{0, 3, 4, 11, 11, 15, 16, 22}), run_cpu(Scan::Exclusive, input));
  EXPECT_ARRAY_EQ((std::vector<float>{3, 4, 11, 11, 15, 16, 22, 25}), run_cpu(Scan::Inclusive, input));
}

// Lecture 7's compact tables: the exclusive sum scan of the predicate row gives the
// scatter addresses; of the count row, the generalised compact's addresses.
TEST(ScanCpu, CompactAddressesLectureSeven) {
  EXPECT_ARRAY_EQ((std::vector<float>{0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3}),
                  run_cpu(Scan::Exclusive, {0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_ARRAY_EQ((std::vector<float>{0, 0, 2, 2, 2, 2, 2, 2, 5, 5, 6, 6}),
                  run_cpu(Scan::Exclusive, {0, 2, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0}));
}

// Index 0 starts a segment whatever head_flags[0] holds, and any non-zero flag counts.
TEST(ScanCpu, SegmentedFlagConventions) {
  const std::vector<float> input{4, 1, 2, 5, 1};
  EXPECT_ARRAY_EQ((std::vector<float>{4, 5, 2, 7, 1}), run_cpu(Scan::Segmented, input, {0, 0, -3, 0, 1000}));
  EXPECT_ARRAY_EQ((std::vector<float>{4, 5, 2, 7, 1}), run_cpu(Scan::Segmented, input, {1, 0, 1, 0, 1}));
}

// With n = 0 the sequential versions write nothing.
TEST(ScanCpu, ZeroLengthWritesNothing) {
  float out = 7.0f;
  inclusive_scan_cpu(nullptr, &out, 0);
  exclusive_scan_cpu(nullptr, &out, 0);
  segmented_inclusive_scan_cpu(nullptr, nullptr, &out, 0);
  EXPECT_EQ(out, 7.0f);
}

// ---------------------------------------------------------------------------------
// GPU: every size, several seeds and distributions.
// ---------------------------------------------------------------------------------

// Around warp (32), block (256 .. 4096 elements) and two-level (2^20) boundaries, and a
// size large enough that a hierarchical scan with 2048-element blocks needs three levels.
const int kSizes[] = {1, 31, 32, 33, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 65537,
                      (1 << 20) + 1, (1 << 24) + 7};

class InclusiveScanGpu : public lab::GpuTestWithParam<int> {};

// inclusive_scan equals the sequential scan exactly, for signed and non-negative data.
TEST_P(InclusiveScanGpu, MatchesCpu) {
  const int n = GetParam();
  for (int trial = 0; trial < trials_for(n); ++trial) {
    const lab::Seed seed = lab::case_seed("inclusive_scan", 4ull * n + trial);
    SCOPED_TRACE("n = " + std::to_string(n) + ", values in {-1, 0, 1}, " + lab::seed_note(seed));
    check_exact(Scan::Inclusive, signed_data(n, seed));
    if (small_data_max(n) > 0) {
      SCOPED_TRACE("values in [0, " + std::to_string(small_data_max(n)) + "]");
      check_exact(Scan::Inclusive, small_data(n, lab::derive_seed(seed, "small")));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, InclusiveScanGpu, ::testing::ValuesIn(kSizes), lab::size_name);

class ExclusiveScanGpu : public lab::GpuTestWithParam<int> {};

// exclusive_scan equals the sequential exclusive scan exactly (out[0] = 0).
TEST_P(ExclusiveScanGpu, MatchesCpu) {
  const int n = GetParam();
  for (int trial = 0; trial < trials_for(n); ++trial) {
    const lab::Seed seed = lab::case_seed("exclusive_scan", 4ull * n + trial);
    SCOPED_TRACE("n = " + std::to_string(n) + ", values in {-1, 0, 1}, " + lab::seed_note(seed));
    check_exact(Scan::Exclusive, signed_data(n, seed));
    if (small_data_max(n) > 0) {
      SCOPED_TRACE("values in [0, " + std::to_string(small_data_max(n)) + "]");
      check_exact(Scan::Exclusive, small_data(n, lab::derive_seed(seed, "small")));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ExclusiveScanGpu, ::testing::ValuesIn(kSizes), lab::size_name);

class SegmentedScanGpu : public lab::GpuTestWithParam<int> {};

// segmented_inclusive_scan equals the sequential version exactly for every head pattern.
TEST_P(SegmentedScanGpu, MatchesCpu) {
  const int n = GetParam();
  for (Heads h : {Heads::Random, Heads::Sparse, Heads::All, Heads::None, Heads::OnlyFirst, Heads::Boundaries,
                  Heads::NearBoundaries}) {
    for (int trial = 0; trial < trials_for(n); ++trial) {
      const lab::Seed seed = lab::case_seed("segmented_scan", 64ull * n + 8ull * static_cast<int>(h) + trial);
      SCOPED_TRACE("n = " + std::to_string(n) + ", " + name_of(h) + ", values in {-1, 0, 1}, " +
                   lab::seed_note(seed));
      check_exact(Scan::Segmented, signed_data(n, seed), head_flags(h, n, lab::derive_seed(seed, "heads")));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, SegmentedScanGpu, ::testing::ValuesIn(kSizes), lab::size_name);

using ScanGpuEdge = lab::GpuTest;

// n = 0 launches nothing, writes nothing and raises no CUDA error.
TEST_F(ScanGpuEdge, ZeroLengthDoesNothing) {
  // A real scan first: an implementation that does nothing at all must not pass this test.
  check_exact(Scan::Inclusive, {1, 2, 3, 2, 3, 1, 4, 5});
  lab::DeviceBuffer<float> in(16), out(16);
  lab::DeviceBuffer<int> flags(16);
  in.poison(0);
  flags.poison(0);
  for (Scan s : {Scan::Inclusive, Scan::Exclusive, Scan::Segmented}) {
    SCOPED_TRACE(name_of(s));
    out.poison();
    run_scan(s, in.data(), flags.data(), out.data(), 0);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    LAB_CUDA_CHECK(cudaGetLastError());
    EXPECT_ARRAY_EQ(std::vector<unsigned>(16, 0xFFFFFFFFu), lab::bits_of(out.download()));
  }
}

// The lectures' tables, on the GPU (small enough to check by hand).
TEST_F(ScanGpuEdge, LectureTables) {
  const std::vector<float> input{1, 2, 1, 3, 1, 1, 3, 3, 2, 1, 2, 2};
  check_exact(Scan::Inclusive, {1, 2, 3, 2, 3, 1, 4, 5});
  check_exact(Scan::Inclusive, input);
  check_exact(Scan::Exclusive, input);
  check_exact(Scan::Segmented, input, {1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0});
  check_exact(Scan::Exclusive, {3, 1, 7, 0, 4, 1, 6, 3});
}

// All ones: out[i] = i + 1 (inclusive) and i (exclusive), written down without the CPU
// version; 3 * 2^20 + 5 < 2^24, so every value is exact.
TEST_F(ScanGpuEdge, AllOnesCountIndices) {
  const int n = 3 * (1 << 20) + 5;
  const std::vector<float> ones(n, 1.0f);
  std::vector<float> inclusive(n), exclusive(n);
  for (int i = 0; i < n; ++i) {
    inclusive[i] = static_cast<float>(i + 1);
    exclusive[i] = static_cast<float>(i);
  }
  check_scan(Scan::Inclusive, ones, {}, inclusive);
  check_scan(Scan::Exclusive, ones, {}, exclusive);
  // One segment per 1000 elements: out[i] = i % 1000 + 1.
  std::vector<int> flags(n, 0);
  std::vector<float> segmented(n);
  for (int i = 0; i < n; ++i) {
    flags[i] = i % 1000 == 0 ? 1 : 0;
    segmented[i] = static_cast<float>(i % 1000 + 1);
  }
  check_scan(Scan::Segmented, ones, flags, segmented);
}

// Pointers that are not 16-byte aligned (vector loads must fall back, not fault).
TEST_F(ScanGpuEdge, UnalignedPointers) {
  for (int n : {4099, 50001}) {
    for (int offset = 1; offset < 4; ++offset) {
      const lab::Seed seed = lab::case_seed("scan_unaligned", 4ull * n + offset);
      SCOPED_TRACE("offset = " + std::to_string(offset) + " elements, n = " + std::to_string(n) + ", " +
                   lab::seed_note(seed));
      const std::vector<float> in = signed_data(n, seed);
      check_exact(Scan::Inclusive, in, {}, offset);
      check_exact(Scan::Exclusive, in, {}, offset);
      check_exact(Scan::Segmented, in, head_flags(Heads::Random, n, lab::derive_seed(seed, "heads")), offset);
    }
  }
}

// Calls in a row with other sizes and data: nothing may carry over from the previous
// call (counters or flags left in scratch memory, block sums of another size).
TEST_F(ScanGpuEdge, RepeatedCallsAreIndependent) {
  int round = 0;
  for (int n : {(1 << 20) + 1, 1025, 3 * 4096 + 1, (1 << 20) + 1, 7}) {
    ++round;
    const lab::Seed seed = lab::case_seed("scan_repeated", static_cast<std::uint64_t>(round));
    SCOPED_TRACE("call " + std::to_string(round) + ", n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    const std::vector<float> in = small_data(n, seed);
    check_exact(Scan::Inclusive, in);
    check_exact(Scan::Exclusive, in);
    check_exact(Scan::Segmented, in, head_flags(Heads::Sparse, n, lab::derive_seed(seed, "heads")));
    check_exact(Scan::Inclusive, in);
  }
}

// Arbitrary floats: the result may differ from the sequential loop in the last bits,
// never by more than rounding allows. For k non-negative terms added in any order the
// computed sum is within (k - 1) u / (1 - (k - 1) u) of the exact sum, relatively
// (u = 2^-24); the expected value (exact, rounded once to float) adds u more. With
// k <= n and n u <= 1/4 that is below 2 n u, the relative tolerance used here.
TEST_F(ScanGpuEdge, ArbitraryFloatsWithinRoundingBound) {
  for (int n : {1000, 4097, 40000}) {
    const lab::Seed seed = lab::case_seed("scan_floats", static_cast<std::uint64_t>(n));
    SCOPED_TRACE("n = " + std::to_string(n) + ", values uniform in [0, 1), " + lab::seed_note(seed));
    const std::vector<float> in = lab::random_floats(n, 0.0f, 1.0f, seed);
    const std::vector<int> flags = head_flags(Heads::Random, n, lab::derive_seed(seed, "heads"));
    std::vector<float> inclusive(n), exclusive(n), segmented(n);
    double sum = 0, segment_sum = 0;
    for (int i = 0; i < n; ++i) {
      exclusive[i] = static_cast<float>(sum);
      sum += in[i];
      inclusive[i] = static_cast<float>(sum);
      segment_sum = (i == 0 || flags[i] != 0) ? in[i] : segment_sum + in[i];
      segmented[i] = static_cast<float>(segment_sum);
    }
    const lab::Tolerance tol{0.0, 2.0 * n * std::ldexp(1.0, -24)};
    check_scan(Scan::Inclusive, in, {}, inclusive, 0, tol);
    check_scan(Scan::Exclusive, in, {}, exclusive, 0, tol);
    check_scan(Scan::Segmented, in, flags, segmented, 0, tol);
  }
}

// ---- every registered variant ---------------------------------------------------------------

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/scan/lab.json, "required_variants").
// Each runs at sizes around warp, block and two-level boundaries (up to 2^20 + 1), exactly.

// Puts a registered variant in place of the interface function while it lives.
template <class Fn>
class UsingVariant {
 public:
  UsingVariant(Fn** slot, const char* function, const std::string& name)
      : m_slot(slot), m_saved(*slot), m_fn(lab::local_variants().get<Fn>(function, name)) {
    if (m_fn != nullptr) *m_slot = m_fn;
  }
  ~UsingVariant() { *m_slot = m_saved; }
  UsingVariant(const UsingVariant&) = delete;
  UsingVariant& operator=(const UsingVariant&) = delete;
  bool found() const { return m_fn != nullptr; }

 private:
  Fn** m_slot;
  Fn* m_saved;
  Fn* m_fn;
};

const int kVariantSizes[] = {1, 31, 32, 33, 1023, 1025, 2047, 2049, 4097, 65537, (1 << 20) + 1};

class InclusiveScanVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(InclusiveScanVariantsGpu);

TEST_P(InclusiveScanVariantsGpu, MatchesCpuAtEverySize) {
  const UsingVariant<InclusiveFn> use(&g_inclusive, "inclusive_scan", GetParam());
  ASSERT_TRUE(use.found());
  for (const int n : kVariantSizes) {
    const lab::Seed seed = lab::case_seed("inclusive_scan_variant", n);
    SCOPED_TRACE("variant '" + GetParam() + "', n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_exact(Scan::Inclusive, signed_data(n, seed));
    check_exact(Scan::Inclusive, signed_data(n, seed), {}, 1);  // off a 16-byte boundary
    if (small_data_max(n) > 0) check_exact(Scan::Inclusive, small_data(n, lab::derive_seed(seed, "small")));
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, InclusiveScanVariantsGpu,
                         ::testing::ValuesIn(lab::registered_variants("inclusive_scan")), lab::variant_test_name);

class ExclusiveScanVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ExclusiveScanVariantsGpu);

TEST_P(ExclusiveScanVariantsGpu, MatchesCpuAtEverySize) {
  const UsingVariant<ExclusiveFn> use(&g_exclusive, "exclusive_scan", GetParam());
  ASSERT_TRUE(use.found());
  for (const int n : kVariantSizes) {
    const lab::Seed seed = lab::case_seed("exclusive_scan_variant", n);
    SCOPED_TRACE("variant '" + GetParam() + "', n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_exact(Scan::Exclusive, signed_data(n, seed));
    check_exact(Scan::Exclusive, signed_data(n, seed), {}, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, ExclusiveScanVariantsGpu,
                         ::testing::ValuesIn(lab::registered_variants("exclusive_scan")), lab::variant_test_name);

class SegmentedScanVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SegmentedScanVariantsGpu);

TEST_P(SegmentedScanVariantsGpu, MatchesCpuForEveryHeadPattern) {
  const UsingVariant<SegmentedFn> use(&g_segmented, "segmented_inclusive_scan", GetParam());
  ASSERT_TRUE(use.found());
  for (const int n : kVariantSizes) {
    for (Heads h : {Heads::Random, Heads::Sparse, Heads::All, Heads::None, Heads::OnlyFirst, Heads::Boundaries,
                    Heads::NearBoundaries}) {
      const lab::Seed seed = lab::case_seed("segmented_scan_variant", 8ull * n + static_cast<int>(h));
      SCOPED_TRACE("variant '" + GetParam() + "', n = " + std::to_string(n) + ", " + name_of(h) + ", " +
                   lab::seed_note(seed));
      check_exact(Scan::Segmented, signed_data(n, seed), head_flags(h, n, lab::derive_seed(seed, "heads")));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, SegmentedScanVariantsGpu,
                         ::testing::ValuesIn(lab::registered_variants("segmented_inclusive_scan")),
                         lab::variant_test_name);


// ---- Find the bug: fix_hsh_scan ------------------------------------------------------------
// Lecture 4's one-block Hillis-Steele scan (handout "Find the bug"), on data whose every
// partial sum is exact. Its race shows only between warps and only when one warp writes
// before another reads, which on recent GPUs may never happen: these tests can pass with
// the race in place. The grader also runs racecheck over them (labs/scan/lab.json,
// "sanitizer"), which finds it every time. Named like a registered variant's test so that
// the grader finds the exercise's verdict the same way.
class FixHshScanGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(FixHshScanGpu, ScansEveryLengthUpToOneBlock) {
  constexpr int kGuard = 64;
  constexpr int kRepeats = 2;  // a race may show on one call and not the next
  for (int len : {1, 2, 31, 32, 33, 64, 100, 255, 256, 257, 512, 777, 1000, 1023, kFixScanBlock}) {
    for (int trial = 0; trial < kRepeats; ++trial) {
      const lab::Seed seed = lab::case_seed("fix_hsh_scan", 16ull * len + trial);
      SCOPED_TRACE("fix_hsh_scan, len = " + std::to_string(len) + ", call " + std::to_string(trial + 1) + ", " +
                   lab::seed_note(seed));
      const std::vector<float> x = small_data(len, seed);
      std::vector<float> expected(len);
      inclusive_scan_cpu(x.data(), expected.data(), len);
      lab::DeviceBuffer<float> in(x), out(static_cast<std::size_t>(len) + kGuard);
      out.poison();
      fix_hsh_scan(in.data(), out.data(), len);
      LAB_CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<float> got = out.download();
      ASSERT_ARRAY_EQ(expected, std::vector<float>(got.begin(), got.begin() + len))
          << "the scan differs from the sequential one";
      ASSERT_ARRAY_EQ(std::vector<unsigned>(kGuard, 0xFFFFFFFFu), lab::bits_of(std::vector<float>(got.begin() + len, got.end())))
          << "fix_hsh_scan wrote past Y[len - 1]";
      ASSERT_ARRAY_EQ(x, in.download()) << "the input X was modified";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, FixHshScanGpu, ::testing::Values(std::string("fix_hsh_scan")),
                         lab::variant_test_name);

// ---- Further part: spmv_csr -----------------------------------------------------------------
// Lecture 7's application of the segmented scan: y = A x for a sparse matrix A in CSR form
// (scan.h). The CPU tests walk the lecture's table step by step; the GPU tests (suite
// PartSpmvGpu, named like a registered variant's so that the grader finds the part's verdict)
// run spmv_csr on generated matrices with seeded random structure. Values and x are small
// non-zero integers: every sum is then exact in any order of addition (see
// spmv_exact_in_any_order), so y is compared exactly, and no product is 0, so a nonzero that
// is lost or counted twice changes its row's sum.

// A sparse matrix in CSR form on the host.
struct Csr {
  int rows = 0;
  int cols = 0;
  std::vector<int> row_ptr{0};  // rows + 1 entries
  std::vector<int> col_idx;     // nnz entries
  std::vector<float> values;    // nnz entries
  int nnz() const { return static_cast<int>(values.size()); }
};

// Lecture 7's example: [[0 b c] [d e f] [0 0 i]] with b, c, d, e, f, i = 2, 3, 4, 5, 6, 7:
// V = [2 3 4 5 6 7], C = [1 2 0 1 2 2], R = [0 2 5] (and row_ptr[3] = nnz = 6).
Csr lecture_matrix() {
  Csr a;
  a.rows = 3;
  a.cols = 3;
  a.row_ptr = {0, 2, 5, 6};
  a.col_idx = {1, 2, 0, 1, 2, 2};
  a.values = {2, 3, 4, 5, 6, 7};
  return a;
}
// The lecture's vector (x, y, z) = (1, 2, 3), and y = A x worked out by hand.
const std::vector<float> kLectureX{1, 2, 3};
const std::vector<float> kLectureY{2 * 2 + 3 * 3, 4 * 1 + 5 * 2 + 6 * 3, 7 * 3};  // 13, 32, 21

// n integers in +-1 .. +-max, as floats (never 0).
std::vector<float> nonzero_small_ints(std::size_t n, int max, lab::Rng& rng) {
  std::vector<float> v(n);
  for (float& e : v) {
    const int magnitude = static_cast<int>(rng.between(1, max));
    e = static_cast<float>(rng.below(2) == 0 ? magnitude : -magnitude);
  }
  return v;
}

// A rows x cols matrix whose row r has lengths[r] nonzeros, in columns drawn uniformly from
// [0, cols) (unsorted, repeats possible: scan.h allows both), with values in +-1 .. +-4.
Csr matrix_with_row_lengths(const std::vector<int>& lengths, int cols, lab::Seed seed) {
  Csr a;
  a.rows = static_cast<int>(lengths.size());
  a.cols = cols;
  a.row_ptr.assign(1, 0);
  long long nnz = 0;
  for (int length : lengths) {
    nnz += length;
    a.row_ptr.push_back(static_cast<int>(std::min<long long>(nnz, INT_MAX)));
  }
  if (nnz > INT_MAX || (nnz > 0 && cols <= 0)) throw std::invalid_argument("test data error: no such CSR matrix");
  lab::Rng rng(seed);
  a.col_idx.resize(static_cast<std::size_t>(nnz));
  for (int& c : a.col_idx) c = static_cast<int>(rng.below(static_cast<std::uint64_t>(cols)));
  a.values = nonzero_small_ints(static_cast<std::size_t>(nnz), 4, rng);
  return a;
}

// x for spmv_csr: cols values in +-1 .. +-3.
std::vector<float> vector_x(int cols, lab::Seed seed) {
  lab::Rng rng(seed);
  return nonzero_small_ints(static_cast<std::size_t>(cols), 3, rng);
}

// `rows` row lengths, uniform in [lo, hi], except that a row is empty with probability
// `empty_percent` / 100.
std::vector<int> random_row_lengths(int rows, int lo, int hi, int empty_percent, lab::Seed seed) {
  lab::Rng rng(seed);
  std::vector<int> lengths(rows);
  for (int& length : lengths) {
    length = static_cast<int>(rng.between(lo, hi));
    if (static_cast<int>(rng.below(100)) < empty_percent) length = 0;
  }
  return lengths;
}

// Why exact comparisons are fair: any order of addition over a row only ever forms sums of
// some of that row's products (a segmented scan adds contiguous runs of one segment; a
// thread per row adds a prefix). Those are integers of magnitude at most the sum of the
// row's |products|; when that is <= 2^24 for every row, all of them are floats exactly, no
// addition rounds, and every correct method returns the sequential result bit for bit.
bool spmv_exact_in_any_order(const Csr& a, const std::vector<float>& x) {
  for (int r = 0; r < a.rows; ++r) {
    double bound = 0;
    for (int k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const double product = static_cast<double>(a.values[k]) * x[a.col_idx[k]];
      if (product != std::floor(product)) return false;
      bound += std::fabs(product);
    }
    if (bound > 16777216.0) return false;  // 2^24
  }
  return true;
}

// The sequential result (scan_cpu.cpp).
std::vector<float> spmv_cpu_result(const Csr& a, const std::vector<float>& x) {
  std::vector<float> y(a.rows);
  spmv_csr_cpu(a.row_ptr.data(), a.col_idx.data(), a.values.data(), x.data(), y.data(), a.rows, a.cols, a.nnz());
  return y;
}

std::string describe_matrix(const Csr& a) {
  return "rows = " + std::to_string(a.rows) + ", cols = " + std::to_string(a.cols) + ", nnz = " +
         std::to_string(a.nnz());
}

// Runs spmv_csr on device copies of `a` and `x` and checks that y equals `expected` exactly,
// that the 64 floats on either side of y are untouched, and that the inputs are unchanged.
void check_spmv(const Csr& a, const std::vector<float>& x, const std::vector<float>& expected) {
  // Prepare: the inputs on the device (an array of no elements is a null pointer) and a
  // poisoned y (NaN) with guard zones on both sides.
  constexpr int kGuard = 64;
  SCOPED_TRACE("spmv_csr: " + describe_matrix(a));
  lab::DeviceBuffer<int> row_ptr(a.row_ptr), col_idx(a.col_idx);
  lab::DeviceBuffer<float> values(a.values), dx(x), y(static_cast<std::size_t>(a.rows) + 2 * kGuard);
  y.poison();

  // Run.
  spmv_csr(row_ptr.data(), col_idx.data(), values.data(), dx.data(), y.data() + kGuard, a.rows, a.cols, a.nnz());
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());

  // Verify.
  const std::vector<float> out = y.download();
  const std::vector<float> result(out.begin() + kGuard, out.end() - kGuard);
  EXPECT_TRUE(lab::as_assertion(lab::compare_exact(expected, result, "row")))
      << "y[r] must equal the sum of row r's products exactly (0 for an empty row); a NaN is the poison "
         "written before the call: that row of y was never written";
  std::vector<float> guards(out.begin(), out.begin() + kGuard);
  guards.insert(guards.end(), out.end() - kGuard, out.end());
  EXPECT_ARRAY_EQ(std::vector<unsigned>(2 * kGuard, 0xFFFFFFFFu), lab::bits_of(guards))
      << "spmv_csr wrote outside y[0 .. rows-1] (the first 64 words checked lie before y[0], the last 64 after "
         "y[rows - 1]): check the bounds of your row kernels";
  EXPECT_ARRAY_EQ(a.row_ptr, row_ptr.download()) << "input row_ptr was modified";
  EXPECT_ARRAY_EQ(a.col_idx, col_idx.download()) << "input col_idx was modified";
  EXPECT_ARRAY_EQ(a.values, values.download()) << "input values was modified: put the products in a scratch array";
  EXPECT_ARRAY_EQ(x, dx.download()) << "input x was modified";
}

// The usual case: exact comparison with the sequential result.
void check_spmv_exact(const Csr& a, const std::vector<float>& x) {
  ASSERT_TRUE(spmv_exact_in_any_order(a, x)) << "test data error: row sums could round";
  check_spmv(a, x, spmv_cpu_result(a, x));
}

// A matrix with the given row lengths and a random x, both from `seed`, checked exactly.
void check_spmv_lengths(const std::vector<int>& lengths, int cols, lab::Seed seed, const std::string& what) {
  SCOPED_TRACE(what + ", " + lab::seed_note(seed));
  check_spmv_exact(matrix_with_row_lengths(lengths, cols, seed), vector_x(cols, lab::derive_seed(seed, "x")));
}

// Lecture 7's example, computed by the sequential version: y = (13, 32, 21).
TEST(SpmvCpu, LectureSevenExample) {
  const Csr a = lecture_matrix();
  EXPECT_ARRAY_EQ(kLectureY, spmv_cpu_result(a, kLectureX));
}

// Lecture 7's table, one row at a time, on the CPU: gather, map, segmented inclusive scan,
// and the last element of each row's segment.
TEST(SpmvCpu, LectureSevenTableStepByStep) {
  const Csr a = lecture_matrix();
  std::vector<float> gathered(a.nnz()), products(a.nnz()), scanned(a.nnz());
  for (int k = 0; k < a.nnz(); ++k) gathered[k] = kLectureX[a.col_idx[k]];  // G: gather of X by C
  EXPECT_ARRAY_EQ((std::vector<float>{2, 3, 1, 2, 3, 3}), gathered);         // y z x y z z
  for (int k = 0; k < a.nnz(); ++k) products[k] = a.values[k] * gathered[k];  // M: map V x G
  EXPECT_ARRAY_EQ((std::vector<float>{4, 9, 4, 10, 18, 21}), products);
  std::vector<int> heads(a.nnz(), 0);  // a segment starts at each row's first nonzero
  for (int r = 0; r < a.rows; ++r) heads[a.row_ptr[r]] = 1;
  EXPECT_ARRAY_EQ((std::vector<int>{1, 0, 1, 0, 0, 1}), heads);
  segmented_inclusive_scan_cpu(products.data(), heads.data(), scanned.data(), a.nnz());
  EXPECT_ARRAY_EQ((std::vector<float>{4, 13, 4, 14, 32, 21}), scanned);
  std::vector<float> y(a.rows);
  for (int r = 0; r < a.rows; ++r) y[r] = scanned[a.row_ptr[r + 1] - 1];  // each segment's last element
  EXPECT_ARRAY_EQ(kLectureY, y);
}

// An empty row sums to 0, and rows = 0 writes nothing.
TEST(SpmvCpu, EmptyRowsAndNoRows) {
  const std::vector<int> row_ptr{0, 0, 2, 2};  // rows 0 and 2 are empty
  const std::vector<int> col_idx{1, 0};
  const std::vector<float> values{5, -2}, x{3, 4};
  std::vector<float> y(3, -1.0f);
  spmv_csr_cpu(row_ptr.data(), col_idx.data(), values.data(), x.data(), y.data(), 3, 2, 2);
  EXPECT_ARRAY_EQ((std::vector<float>{0, 14, 0}), y);
  float untouched = 7.0f;
  spmv_csr_cpu(row_ptr.data(), nullptr, nullptr, nullptr, &untouched, 0, 0, 0);
  EXPECT_EQ(untouched, 7.0f);
}

class PartSpmvGpu : public lab::GpuTestWithParam<std::string> {};

// Lecture 7's example on the GPU, against the values worked out by hand: y = (13, 32, 21).
TEST_P(PartSpmvGpu, LectureSevenExample) {
  check_spmv(lecture_matrix(), kLectureX, kLectureY);
}

// rows = 0 writes nothing; nnz = 0 (every row empty) writes 0 to every row, also when x
// has no element; neither raises a CUDA error.
TEST_P(PartSpmvGpu, ZeroSizes) {
  // A real product first: an implementation that does nothing at all must not pass this test.
  check_spmv(lecture_matrix(), kLectureX, kLectureY);
  Csr no_rows;  // row_ptr = {0}
  no_rows.cols = 3;
  check_spmv(no_rows, kLectureX, {});
  for (const int rows : {1, 5, 1025}) {
    for (const int cols : {0, 4}) {
      Csr empty;
      empty.rows = rows;
      empty.cols = cols;
      empty.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
      check_spmv(empty, std::vector<float>(cols, 1.0f), std::vector<float>(rows, 0.0f));
    }
  }
}

// Empty rows first, last, in the middle and in long runs: they own no element of the scan,
// their start is the next row's start, and y must still be 0 for them.
TEST_P(PartSpmvGpu, EmptyRowsAnywhere) {
  const std::vector<std::vector<int>> patterns{
      {0, 2, 0, 0, 3, 1, 0}, {0, 0, 1}, {1, 0, 0}, {0, 5}, {5, 0}, {0, 1, 0, 1, 0, 1, 0}, {3, 0, 0, 0, 0, 0, 0, 4}};
  int number = 0;
  for (const std::vector<int>& lengths : patterns) {
    check_spmv_lengths(lengths, 6, lab::case_seed("spmv_empty_rows", ++number), "hand-made row lengths");
  }
  // Many rows, 40% of them empty, the others 1 .. 12 long: segments cross block boundaries.
  for (int trial = 0; trial < 3; ++trial) {
    const lab::Seed seed = lab::case_seed("spmv_empty_rows_random", trial);
    check_spmv_lengths(random_row_lengths(5000 + 997 * trial, 1, 12, 40, seed), 3000, lab::derive_seed(seed, "matrix"),
                       "random rows, 40% empty");
  }
  // 3000 empty rows, a row, 3000 empty rows, a row, 3000 empty rows.
  std::vector<int> runs(9002, 0);
  runs[3000] = 7;
  runs[6001] = 9;
  check_spmv_lengths(runs, 100, lab::case_seed("spmv_empty_runs"), "two rows among long runs of empty rows");
}

// One row far longer than a block's scan section (100 000 nonzeros) among short rows: first,
// in the middle, last, and two long rows side by side. The scan must carry the row's sum
// across many blocks and stop the carry exactly at the next row.
TEST_P(PartSpmvGpu, OneLongRowAmongShortRows) {
  constexpr int kRows = 4001;
  constexpr int kLong = 100000;
  for (const int where : {0, kRows / 2, kRows - 1}) {
    const lab::Seed seed = lab::case_seed("spmv_long_row", where);
    std::vector<int> lengths = random_row_lengths(kRows, 0, 6, 10, seed);
    lengths[where] = kLong;
    check_spmv_lengths(lengths, 5000, lab::derive_seed(seed, "matrix"),
                       "row " + std::to_string(where) + " has " + std::to_string(kLong) + " nonzeros");
  }
  const lab::Seed seed = lab::case_seed("spmv_two_long_rows");
  std::vector<int> lengths = random_row_lengths(kRows, 0, 6, 10, seed);
  lengths[1000] = 70001;
  lengths[1001] = 30002;
  check_spmv_lengths(lengths, 5000, lab::derive_seed(seed, "matrix"),
                     "rows 1000 and 1001 have 70001 and 30002 nonzeros");
}

// Rows of a single nonzero: every element of the scan starts a segment (and, alternating
// with empty rows, every other row is 0).
TEST_P(PartSpmvGpu, ManyRowsOfOneElement) {
  check_spmv_lengths(std::vector<int>(100000, 1), 100000, lab::case_seed("spmv_single_elements"),
                     "100000 rows of one nonzero");
  std::vector<int> alternating(60001, 0);
  for (std::size_t r = 0; r < alternating.size(); r += 2) alternating[r] = 1;
  check_spmv_lengths(alternating, 777, lab::case_seed("spmv_single_elements_alternating"),
                     "rows of one nonzero alternating with empty rows");
}

// A large random matrix: 200 000 x 200 000 with 0 .. 20 nonzeros per row (about 2 million).
TEST_P(PartSpmvGpu, LargeRandomMatrix) {
  const lab::Seed seed = lab::case_seed("spmv_large");
  check_spmv_lengths(random_row_lengths(200000, 0, 20, 0, seed), 200000, lab::derive_seed(seed, "matrix"),
                     "200000 rows of 0 .. 20 nonzeros");
}

// Shapes that are not square: few columns (the gather reads the same x many times, and
// columns repeat within a row) and few very wide rows.
TEST_P(PartSpmvGpu, RectangularMatrices) {
  const lab::Seed tall = lab::case_seed("spmv_tall");
  check_spmv_lengths(random_row_lengths(1000, 0, 40, 5, tall), 3, lab::derive_seed(tall, "matrix"),
                     "1000 x 3, columns repeat within rows");
  check_spmv_lengths(std::vector<int>(3, 5000), 1000000, lab::case_seed("spmv_wide"), "3 x 1000000");
  check_spmv_lengths({1}, 1, lab::case_seed("spmv_one_by_one"), "1 x 1");
}

// Calls in a row with other sizes and shapes: nothing may carry over from the previous call
// (scratch arrays sized for another nnz, flags left set).
TEST_P(PartSpmvGpu, RepeatedCallsAreIndependent) {
  int round = 0;
  for (const int rows : {50000, 7, 50000, 1025}) {
    ++round;
    const lab::Seed seed = lab::case_seed("spmv_repeated", static_cast<std::uint64_t>(round));
    std::vector<int> lengths = random_row_lengths(rows, 0, 16, 20, seed);
    if (round == 3) lengths[rows / 3] = 50000;
    check_spmv_lengths(lengths, 4096, lab::derive_seed(seed, "matrix"), "call " + std::to_string(round));
  }
  check_spmv(lecture_matrix(), kLectureX, kLectureY);
}

INSTANTIATE_TEST_SUITE_P(Registered, PartSpmvGpu, ::testing::Values(std::string("spmv_csr")), lab::variant_test_name);

}  // namespace
