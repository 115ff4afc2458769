// Provided by the kit: do not edit. Correctness tests of compact and expand.
//
//   ./build/dev/bin/compact_test                              all tests
//   ./build/dev/bin/compact_test --gtest_filter='*n_1025*'    one size
//   ./build/dev/bin/compact_test --gtest_filter='*Cpu*'       the lecture's tables (CPU)
//   ./build/dev/bin/compact_test --seed=7                     other random data
//
// Each GPU test: prepare the input and the expected result on the CPU, poison the
// output (every int -1) so an element your kernel skips cannot pass, run, then verify:
// the returned count, the output prefix exactly (kept values are all different, so an
// element in the wrong place shows), that nothing after the prefix was written, and
// that the inputs are unchanged. Selectivities: none, 1%, 50%, 99%, all kept,
// alternating, and long runs that cross block boundaries.
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "compact.h"
#include "lab/testing.h"
#include "lab/variants.h"

namespace {

constexpr int kGuard = 64;     // ints after the output that must stay untouched
constexpr int kPoison = -1;    // what DeviceBuffer::poison() leaves in every int

std::vector<int> slice(const std::vector<int>& v, std::size_t from, std::size_t to) {
  return std::vector<int>(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to));
}

// Which elements compact must keep.
enum class Selectivity { None, OnePercent, Half, NinetyNinePercent, All, Alternating, Runs };

const char* to_string(Selectivity s) {
  switch (s) {
    case Selectivity::None: return "none kept";
    case Selectivity::OnePercent: return "1% kept";
    case Selectivity::Half: return "50% kept";
    case Selectivity::NinetyNinePercent: return "99% kept";
    case Selectivity::All: return "all kept";
    case Selectivity::Alternating: return "every other kept";
    case Selectivity::Runs: return "runs of ~500 kept / dropped";
  }
  return "?";
}

const Selectivity kAllSelectivities[] = {Selectivity::None, Selectivity::OnePercent, Selectivity::Half,
                                         Selectivity::NinetyNinePercent, Selectivity::All,
                                         Selectivity::Alternating, Selectivity::Runs};

// A positive value that differs for every i < 2^30: i times an odd number, plus an
// offset, modulo 2^30 is a permutation of [0, 2^30).
int distinct_positive(std::size_t i, std::uint32_t offset) {
  return 1 + static_cast<int>((static_cast<std::uint32_t>(i) * 2654435761u + offset) & 0x3FFFFFFFu);
}

// n ints: kept ones (> 0) are all different; dropped ones are 0, INT_MIN or negative,
// so the predicate's boundary (0 is dropped) is exercised too.
std::vector<int> compact_input(int n, Selectivity s, lab::Seed seed) {
  lab::Rng rng(seed);
  const auto offset = static_cast<std::uint32_t>(rng.next());
  std::vector<int> v(static_cast<std::size_t>(n));
  bool in_run = rng.below(2) == 1;
  for (std::size_t i = 0; i < v.size(); ++i) {
    bool keep = false;
    switch (s) {
      case Selectivity::None: keep = false; break;
      case Selectivity::OnePercent: keep = rng.below(100) < 1; break;
      case Selectivity::Half: keep = rng.below(2) == 1; break;
      case Selectivity::NinetyNinePercent: keep = rng.below(100) < 99; break;
      case Selectivity::All: keep = true; break;
      case Selectivity::Alternating: keep = i % 2 == 1; break;
      case Selectivity::Runs:
        if (rng.below(500) == 0) in_run = !in_run;
        keep = in_run;
        break;
    }
    const int value = distinct_positive(i, offset);
    if (keep) {
      v[i] = value;
    } else {
      const auto kind = rng.below(16);
      v[i] = kind == 0 ? INT_MIN : (kind < 3 ? 0 : -value);
    }
  }
  return v;
}

// Runs compact on a device copy of `in` and checks the count, the kept elements in
// order, that nothing after them was written, and that `in` is unchanged. `offset`
// shifts both pointers by that many ints (not 16-byte aligned for vector loads).
using CompactFn = int(const int*, int*, int);

void check_compact(const std::vector<int>& in, int offset = 0, CompactFn* fn = compact) {
  // Prepare: the CPU result, the input, and a poisoned output with a guard zone after it.
  const int n = static_cast<int>(in.size());
  std::vector<int> expected(in.size());
  const int expected_count = compact_cpu(in.data(), expected.data(), n);
  std::vector<int> in_padded(static_cast<std::size_t>(offset), 0);
  in_padded.insert(in_padded.end(), in.begin(), in.end());
  lab::DeviceBuffer<int> din(in_padded), dout(static_cast<std::size_t>(offset) + in.size() + kGuard);
  dout.poison();

  // Run.
  const int count = fn(din.data() + offset, dout.data() + offset, n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify (the prefix is taken with the expected count, so a wrong count cannot hide it).
  EXPECT_EQ(expected_count, count) << "compact must return the number of kept elements (x > 0)";
  const std::vector<int> out = dout.download();
  const std::size_t begin = static_cast<std::size_t>(offset), end = begin + static_cast<std::size_t>(expected_count);
  EXPECT_ARRAY_EQ(slice(expected, 0, static_cast<std::size_t>(expected_count)), slice(out, begin, end))
      << "out[0, count) must hold the kept elements in input order (all kept values differ, so a "
         "missing, extra or swapped element shows here)";
  EXPECT_ARRAY_EQ(std::vector<int>(out.size() - end, kPoison), slice(out, end, out.size()))
      << "compact wrote after out[count - 1]: only kept elements may be written";
  EXPECT_ARRAY_EQ(std::vector<int>(begin, kPoison), slice(out, 0, begin)) << "compact wrote before out[0]";
  EXPECT_ARRAY_EQ(in_padded, din.download()) << "the input was modified";
}

// ---------------------------------------------------------------------------------
// The lecture's worked examples (CPU).

// Lecture 7's compact table: x1, x7 and x9 satisfy the predicate. The map gives the
// flags, the exclusive sum scan the addresses, the scatter moves x1, x7, x9 to 0, 1, 2.
TEST(CompactCpu, LectureAddressTable) {
  //                         x0  x1  x2  x3 x4  x5  x6  x7  x8  x9 x10  x11
  const std::vector<int> x{-4, 11, -2, 0, -7, -5, -1, 17, -8, 19, 0, -11};
  std::vector<int> flags(12, 9), addresses(12, 9), out(12, 9);
  compact_flags_cpu(x.data(), flags.data(), 12);
  EXPECT_EQ(flags, (std::vector<int>{0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(exclusive_sum_cpu(flags.data(), addresses.data(), 12), 3);
  EXPECT_EQ(addresses, (std::vector<int>{0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(compact_cpu(x.data(), out.data(), 12), 3);
  EXPECT_EQ(out, (std::vector<int>{11, 17, 19, 9, 9, 9, 9, 9, 9, 9, 9, 9}));  // only out[0, 3) written
}

// Lecture 7's exclusive scan table: the exclusive scan is the inclusive one shifted
// right by one, with 0 first.
TEST(CompactCpu, LectureExclusiveScanTable) {
  const std::vector<int> in{1, 2, 1, 3, 1, 1, 3, 3, 2, 1, 2, 2};
  std::vector<int> out(12, -1);
  EXPECT_EQ(exclusive_sum_cpu(in.data(), out.data(), 12), 22);
  EXPECT_EQ(out, (std::vector<int>{0, 1, 3, 4, 7, 8, 9, 12, 15, 17, 18, 20}));
}

// Lecture 7's generalised compact table: num() = 0 2 0 0 0 0 0 3 0 1 0 0, scanned to
// 0 0 2 2 2 2 2 2 5 5 6 6, scatters x1 x1 x7 x7 x7 x9.
TEST(CompactCpu, LectureGeneralisedCompactTable) {
  const std::vector<int> x{100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111};
  const std::vector<int> num{0, 2, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0};
  std::vector<int> offsets(12, -1), out(8, -1);
  EXPECT_EQ(exclusive_sum_cpu(num.data(), offsets.data(), 12), 6);
  EXPECT_EQ(offsets, (std::vector<int>{0, 0, 2, 2, 2, 2, 2, 2, 5, 5, 6, 6}));
  EXPECT_EQ(expand_cpu(x.data(), num.data(), out.data(), 12), 6);
  EXPECT_EQ(out, (std::vector<int>{101, 101, 107, 107, 107, 109, -1, -1}));
}

// The predicate keeps exactly the values > 0: 0 and INT_MIN are dropped, INT_MAX kept.
TEST(CompactCpu, PredicateBoundaries) {
  const std::vector<int> in{INT_MIN, -1, 0, 1, INT_MAX, 0, 2};
  std::vector<int> out(7, 0);
  EXPECT_EQ(compact_cpu(in.data(), out.data(), 7), 3);
  EXPECT_EQ(slice(out, 0, 3), (std::vector<int>{1, INT_MAX, 2}));
}

// With n = 0 the sequential versions write nothing and return 0.
TEST(CompactCpu, ZeroLengthWritesNothing) {
  int out = 7;
  EXPECT_EQ(compact_cpu(nullptr, &out, 0), 0);
  EXPECT_EQ(expand_cpu(nullptr, nullptr, &out, 0), 0);
  EXPECT_EQ(out, 7);
}

// ---------------------------------------------------------------------------------
// compact on the GPU.

class CompactGpu : public lab::GpuTestWithParam<int> {};

// Every selectivity at sizes around warp, block and tile boundaries.
TEST_P(CompactGpu, MatchesCpu) {
  const int n = GetParam();
  for (const Selectivity s : kAllSelectivities) {
    const lab::Seed seed = lab::case_seed(std::string("compact ") + to_string(s), static_cast<std::uint64_t>(n));
    SCOPED_TRACE("n = " + std::to_string(n) + ", " + to_string(s) + ", " + lab::seed_note(seed));
    check_compact(compact_input(n, s, seed));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, CompactGpu,
                         ::testing::Values(1, 31, 32, 33, 1023, 1024, 1025, 2049, 4097, 65537, (1 << 20) + 1,
                                           (1 << 24) + 3),
                         lab::size_name);

using CompactGpuEdge = lab::GpuTest;

// n = 0 returns 0, launches nothing, writes nothing and raises no CUDA error.
TEST_F(CompactGpuEdge, ZeroLengthDoesNothing) {
  // A real call first: an implementation that does nothing at all must not pass this test.
  check_compact({3, -1, 0, 7, 2});
  lab::DeviceBuffer<int> in(std::vector<int>(16, 5)), out(16);
  out.poison();
  EXPECT_EQ(compact(in.data(), out.data(), 0), 0);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(std::vector<int>(16, kPoison), out.download());
}

// The predicate's boundaries on the GPU: 0 and INT_MIN dropped, 1 and INT_MAX kept.
TEST_F(CompactGpuEdge, PredicateBoundaries) {
  check_compact({INT_MIN, -1, 0, 1, INT_MAX, 0, 2, INT_MIN + 1, -2147483647, 3, 0});
}

// Pointers that are not 16-byte aligned (vector loads must fall back, not fault).
TEST_F(CompactGpuEdge, UnalignedPointers) {
  for (int offset = 1; offset < 4; ++offset) {
    const lab::Seed seed = lab::case_seed("compact unaligned", static_cast<std::uint64_t>(offset));
    SCOPED_TRACE("offset = " + std::to_string(offset) + " ints, n = 9001, " + lab::seed_note(seed));
    check_compact(compact_input(9001, Selectivity::Half, seed), offset);
  }
}

// Two calls on the same input give the same, right result (no state left over between calls).
TEST_F(CompactGpuEdge, CalledTwiceGivesSameResult) {
  const int n = (1 << 20) + 7;
  const lab::Seed seed = lab::case_seed("compact twice");
  SCOPED_TRACE("n = " + std::to_string(n) + ", 50% kept, " + lab::seed_note(seed));
  const std::vector<int> in = compact_input(n, Selectivity::Half, seed);
  std::vector<int> expected(in.size());
  const int expected_count = compact_cpu(in.data(), expected.data(), n);
  lab::DeviceBuffer<int> din(in), first(in.size()), second(in.size());
  first.poison();
  second.poison();
  const int count1 = compact(din.data(), first.data(), n);
  const int count2 = compact(din.data(), second.data(), n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(expected_count, count1) << "first call";
  EXPECT_EQ(expected_count, count2) << "second call";
  EXPECT_ARRAY_EQ(first.download(), second.download()) << "the second call's output differs from the first's";
  EXPECT_ARRAY_EQ(slice(expected, 0, static_cast<std::size_t>(expected_count)),
                  slice(second.download(), 0, static_cast<std::size_t>(expected_count)));
}

// A small call after a large one, and a large one after a small one: scratch memory
// reused between calls must not leak counts or flags from the earlier call.
TEST_F(CompactGpuEdge, SizesChangeBetweenCalls) {
  const int sizes[] = {(1 << 21) + 5, 1000, 33, (1 << 21) + 5, 4097};
  for (int i = 0; i < 5; ++i) {
    const lab::Seed seed = lab::case_seed("compact sizes change", static_cast<std::uint64_t>(i));
    SCOPED_TRACE("call " + std::to_string(i) + ", n = " + std::to_string(sizes[i]) + ", " + lab::seed_note(seed));
    check_compact(compact_input(sizes[i], i % 2 == 0 ? Selectivity::Half : Selectivity::NinetyNinePercent, seed));
  }
}

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/compact/lab.json, "required_variants").
// Every variant of compact is right at every selectivity, at sizes around tile
// boundaries, some of them off a 16-byte boundary.
class CompactVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CompactVariantsGpu);

TEST_P(CompactVariantsGpu, MatchesCpuAtEverySelectivity) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<CompactFn>("compact", name);
  ASSERT_NE(fn, nullptr);
  for (const int n : {1, 33, 4097, 4099, 65537, (1 << 20) + 3}) {
    for (const Selectivity s : kAllSelectivities) {
      const lab::Seed seed = lab::case_seed(std::string("compact variant ") + to_string(s), static_cast<std::uint64_t>(n));
      const int offset = n % 4;  // some sizes start off a 16-byte boundary
      SCOPED_TRACE("variant " + name + ", n = " + std::to_string(n) + ", offset " + std::to_string(offset) + ", " +
                   to_string(s) + ", " + lab::seed_note(seed));
      check_compact(compact_input(n, s, seed), offset, fn);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, CompactVariantsGpu, ::testing::ValuesIn(lab::registered_variants("compact")),
                         lab::variant_test_name);

// ---------------------------------------------------------------------------------
// expand on the GPU.

// Shapes of counts for expand.
enum class Counts { Triangles, Zeros, Ones, FewLarge };

const char* to_string(Counts c) {
  switch (c) {
    case Counts::Triangles: return "counts 0..5 (clipped triangles)";
    case Counts::Zeros: return "all counts 0";
    case Counts::Ones: return "all counts 1";
    case Counts::FewLarge: return "a few large counts, the rest 0 or 1";
  }
  return "?";
}

std::vector<int> expand_counts(int n, Counts c, lab::Seed seed) {
  lab::Rng rng(seed);
  std::vector<int> counts(static_cast<std::size_t>(n));
  for (int& k : counts) {
    switch (c) {
      case Counts::Triangles: k = static_cast<int>(rng.below(6)); break;
      case Counts::Zeros: k = 0; break;
      case Counts::Ones: k = 1; break;
      case Counts::FewLarge: k = static_cast<int>(rng.below(2)); break;
    }
  }
  if (c == Counts::FewLarge) {
    for (int j = 0; j < 4; ++j) counts[rng.below(static_cast<std::uint64_t>(n))] = 1 + static_cast<int>(rng.below(100000));
  }
  return counts;
}

// n ints, all different, of either sign (expand copies any value).
std::vector<int> expand_values(int n, lab::Seed seed) {
  lab::Rng rng(seed);
  const auto offset = static_cast<std::uint32_t>(rng.next());
  std::vector<int> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = distinct_positive(i, offset);
    if (i % 3 == 2) v[i] = -v[i];
  }
  return v;
}

// Runs expand on device copies and checks the total, every output, the guard zone after
// out[total - 1] and that both inputs are unchanged.
void check_expand(const std::vector<int>& in, const std::vector<int>& counts, int offset = 0) {
  // Prepare.
  const int n = static_cast<int>(in.size());
  long long sum = 0;
  for (int k : counts) sum += k;
  ASSERT_LT(sum, 1LL << 31) << "test bug: the counts overflow an int";
  std::vector<int> expected(static_cast<std::size_t>(sum));
  const int expected_total = expand_cpu(in.data(), counts.data(), expected.data(), n);
  std::vector<int> in_padded(static_cast<std::size_t>(offset), 0), counts_padded(static_cast<std::size_t>(offset), 0);
  in_padded.insert(in_padded.end(), in.begin(), in.end());
  counts_padded.insert(counts_padded.end(), counts.begin(), counts.end());
  lab::DeviceBuffer<int> din(in_padded), dcounts(counts_padded);
  lab::DeviceBuffer<int> dout(static_cast<std::size_t>(offset) + expected.size() + kGuard);
  dout.poison();

  // Run.
  const int total = expand(din.data() + offset, dcounts.data() + offset, dout.data() + offset, n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  EXPECT_EQ(expected_total, total) << "expand must return counts[0] + ... + counts[n-1]";
  const std::vector<int> out = dout.download();
  const std::size_t begin = static_cast<std::size_t>(offset), end = begin + expected.size();
  EXPECT_ARRAY_EQ(expected, slice(out, begin, end)) << "in[i] must appear counts[i] times, in input order";
  EXPECT_ARRAY_EQ(std::vector<int>(out.size() - end, kPoison), slice(out, end, out.size()))
      << "expand wrote after out[total - 1]";
  EXPECT_ARRAY_EQ(std::vector<int>(begin, kPoison), slice(out, 0, begin)) << "expand wrote before out[0]";
  EXPECT_ARRAY_EQ(in_padded, din.download()) << "the input in was modified";
  EXPECT_ARRAY_EQ(counts_padded, dcounts.download()) << "the input counts was modified";
}

class ExpandGpu : public lab::GpuTestWithParam<int> {};

// Every shape of counts at sizes around warp, block and tile boundaries.
TEST_P(ExpandGpu, MatchesCpu) {
  const int n = GetParam();
  for (const Counts c : {Counts::Triangles, Counts::Zeros, Counts::Ones, Counts::FewLarge}) {
    const lab::Seed seed = lab::case_seed(std::string("expand ") + to_string(c), static_cast<std::uint64_t>(n));
    SCOPED_TRACE("n = " + std::to_string(n) + ", " + to_string(c) + ", " + lab::seed_note(seed));
    check_expand(expand_values(n, seed), expand_counts(n, c, lab::derive_seed(seed, "counts")));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ExpandGpu,
                         ::testing::Values(1, 31, 32, 33, 1023, 1024, 1025, 2049, 4097, 65537, (1 << 20) + 1,
                                           (1 << 23) + 3),
                         lab::size_name);

using ExpandGpuEdge = lab::GpuTest;

// Lecture 7's generalised compact table on the GPU.
TEST_F(ExpandGpuEdge, LectureGeneralisedCompactTable) {
  check_expand({100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111}, {0, 2, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0});
}

// n = 0 returns 0, writes nothing and raises no CUDA error; so do counts that are all 0.
TEST_F(ExpandGpuEdge, NothingToWrite) {
  // A real call first: an implementation that does nothing at all must not pass this test.
  check_expand({4, 5, 6}, {2, 0, 3});
  lab::DeviceBuffer<int> in(std::vector<int>(16, 5)), zeros(std::vector<int>(16, 0)), out(16);
  out.poison();
  EXPECT_EQ(expand(in.data(), zeros.data(), out.data(), 0), 0);
  EXPECT_EQ(expand(in.data(), zeros.data(), out.data(), 16), 0);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(std::vector<int>(16, kPoison), out.download());
}

// One element with a huge count amid zeros and ones, and huge counts on the first and
// last elements: runs that span many blocks of output.
TEST_F(ExpandGpuEdge, HugeCounts) {
  const int n = 100003;
  const lab::Seed seed = lab::case_seed("expand huge");
  SCOPED_TRACE("n = 100003, " + lab::seed_note(seed));
  const std::vector<int> in = expand_values(n, seed);
  std::vector<int> counts = expand_counts(n, Counts::FewLarge, lab::derive_seed(seed, "counts"));
  counts[n / 2] = 1 << 22;
  check_expand(in, counts);
  counts[0] = 3000000;
  counts[n - 1] = 2500001;
  check_expand(in, counts);
}

// Pointers that are not 16-byte aligned.
TEST_F(ExpandGpuEdge, UnalignedPointers) {
  for (int offset = 1; offset < 4; ++offset) {
    const lab::Seed seed = lab::case_seed("expand unaligned", static_cast<std::uint64_t>(offset));
    SCOPED_TRACE("offset = " + std::to_string(offset) + " ints, n = 9001, " + lab::seed_note(seed));
    check_expand(expand_values(9001, seed), expand_counts(9001, Counts::Triangles, lab::derive_seed(seed, "c")),
                 offset);
  }
}

// Two calls on the same input give the same result; then a smaller call after them.
TEST_F(ExpandGpuEdge, CalledTwiceGivesSameResult) {
  const int n = (1 << 20) + 7;
  const lab::Seed seed = lab::case_seed("expand twice");
  SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::seed_note(seed));
  const std::vector<int> in = expand_values(n, seed);
  const std::vector<int> counts = expand_counts(n, Counts::Triangles, lab::derive_seed(seed, "counts"));
  std::vector<int> expected(static_cast<std::size_t>(n) * 5);
  const int expected_total = expand_cpu(in.data(), counts.data(), expected.data(), n);
  expected.resize(static_cast<std::size_t>(expected_total));
  lab::DeviceBuffer<int> din(in), dcounts(counts), first(expected.size()), second(expected.size());
  first.poison();
  second.poison();
  const int total1 = expand(din.data(), dcounts.data(), first.data(), n);
  const int total2 = expand(din.data(), dcounts.data(), second.data(), n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(expected_total, total1) << "first call";
  EXPECT_EQ(expected_total, total2) << "second call";
  EXPECT_ARRAY_EQ(expected, first.download()) << "first call";
  EXPECT_ARRAY_EQ(expected, second.download()) << "second call";
  check_expand({7, -8, 9}, {2, 0, 3});
}

}  // namespace
