// Provided by the kit: do not edit. Correctness tests of sort_keys and sort_pairs.
//
//   ./build/dev/bin/sort_test                               all tests
//   ./build/dev/bin/sort_test --gtest_filter='SortCpu.*'    the lecture's examples, on the CPU
//   ./build/dev/bin/sort_test --gtest_filter='*n_1025*'     one size
//   ./build/dev/bin/sort_test --seed=7                      other random data
//
// Each GPU test: prepare keys (and values) and the expected result on the CPU (a radix
// sort that SortCpu checks against sort_keys_cpu and sort_pairs_cpu), surround the
// device arrays with guard words, run, then verify the result exactly (a
// sorted order is unique, and for pairs so is the stable one) and that the guard words
// are untouched. For sort_pairs the values are mostly the keys' original positions, so
// a wrong order among equal keys (an unstable sort) shows as a wrong value.
// SortKeysVariantsGpu and SortPairsVariantsGpu run every variant registered with
// LAB_REGISTER_VARIANT, one test each (Registered/.../<variant>): they must be right too.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "lab/testing.h"
#include "lab/variants.h"
#include "sort.h"

namespace {

using KeysFn = void(unsigned*, int);
using PairsFn = void(unsigned*, unsigned*, int);

constexpr int kGuard = 64;  // guard words after each array
constexpr unsigned char kGuardByte = 0xA5;
constexpr unsigned kGuardWord = 0xA5A5A5A5u;  // neither 0 nor UINT_MAX, the usual padding

std::vector<unsigned> slice(const std::vector<unsigned>& v, std::size_t first, std::size_t count) {
  return std::vector<unsigned>(v.begin() + static_cast<std::ptrdiff_t>(first),
                               v.begin() + static_cast<std::ptrdiff_t>(first + count));
}

std::vector<unsigned> positions(int n) {
  std::vector<unsigned> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

std::vector<unsigned> uniform_keys(int n, lab::Seed seed, std::uint64_t range = 0) {
  return lab::random_uints(static_cast<std::size_t>(n), range, lab::Distribution::Uniform, seed);
}

// A device copy of `data` starting `front` words into a buffer whose other words (the
// `front` words before it and kGuard after it) hold kGuardWord.
class GuardedArray {
 public:
  GuardedArray(const std::vector<unsigned>& data, int front)
      : m_front(front), m_n(data.size()), m_buffer(static_cast<std::size_t>(front) + data.size() + kGuard) {
    m_buffer.poison(kGuardByte);
    if (!data.empty()) {
      LAB_CUDA_CHECK(
          cudaMemcpy(m_buffer.data() + front, data.data(), data.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
    }
  }
  unsigned* data() { return m_buffer.data() + m_front; }

  // Expects the array to equal `expected` and the guard words to be intact.
  void verify(const std::vector<unsigned>& expected, const std::string& name, const std::string& rule) const {
    const std::vector<unsigned> all = m_buffer.download();
    EXPECT_ARRAY_EQ(expected, slice(all, m_front, m_n)) << name << ": " << rule;
    EXPECT_ARRAY_EQ(std::vector<unsigned>(m_front, kGuardWord), slice(all, 0, m_front))
        << "the sort wrote before " << name << "[0]";
    EXPECT_ARRAY_EQ(std::vector<unsigned>(kGuard, kGuardWord), slice(all, m_front + m_n, kGuard))
        << "the sort wrote past " << name << "[n - 1]: only the n elements may be written "
        << "(padding or sentinels copied back? a thread with index >= n writing?)";
  }

 private:
  std::size_t m_front, m_n;
  lab::DeviceBuffer<unsigned> m_buffer;
};

// The expected results. The same order as sort_keys_cpu (std::sort) and, for pairs,
// sort_pairs_cpu (std::stable_sort on the keys), which SortCpu.GoldenSortAgreesWithTheCpuSorts
// checks: an LSD radix sort, four stable passes over the keys' bytes, so equal keys keep
// their input order. At 2^24 keys it takes a fifth of std::sort's time, and the GPU
// tests sort that many several times.
void golden_sort(std::vector<unsigned>& keys, std::vector<unsigned>* values = nullptr) {
  const std::size_t n = keys.size();
  std::vector<unsigned> other_keys(n), other_values(values != nullptr ? n : 0);
  for (int shift = 0; shift < 32; shift += 8) {
    std::size_t start[257] = {};
    for (unsigned key : keys) ++start[((key >> shift) & 0xFFu) + 1];
    for (int digit = 0; digit < 256; ++digit) start[digit + 1] += start[digit];
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t to = start[(keys[i] >> shift) & 0xFFu]++;
      other_keys[to] = keys[i];
      if (values != nullptr) other_values[to] = (*values)[i];
    }
    keys.swap(other_keys);
    if (values != nullptr) values->swap(other_values);
  }
}

// Unsorted keys for the warm-up call of tests whose own input is already in order.
std::vector<unsigned> unsorted_keys() {
  return lab::random_uints(1000, 0, lab::Distribution::Uniform, lab::case_seed("sort_unsorted_warmup"));
}

// Sorts a device copy of `keys` with `fn` and checks it against the CPU sort.
void check_sort_keys(KeysFn* fn, const std::vector<unsigned>& keys, int front = 0) {
  // Prepare: the expected result, and the keys on the device between guard words.
  const int n = static_cast<int>(keys.size());
  std::vector<unsigned> expected = keys;
  golden_sort(expected);
  if (expected == keys) {
    // Input already in order: a sort that does nothing would pass, so it must also
    // sort unsorted keys to earn this test.
    SCOPED_TRACE("first, 1000 unsorted keys (this test's own input is already sorted)");
    check_sort_keys(fn, unsorted_keys());
  }
  GuardedArray d_keys(keys, front);

  // Run.
  fn(d_keys.data(), n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  d_keys.verify(expected, "keys", "keys[i] must be the (i+1)-th smallest input key");
}

// Sorts device copies of (keys, values) with `fn` and checks them against the CPU's stable sort.
void check_sort_pairs(PairsFn* fn, const std::vector<unsigned>& keys, const std::vector<unsigned>& values,
                      int front = 0) {
  // Prepare.
  const int n = static_cast<int>(keys.size());
  std::vector<unsigned> expected_keys = keys, expected_values = values;
  golden_sort(expected_keys, &expected_values);
  if (expected_keys == keys && expected_values == values) {
    // Input already in order: a sort that does nothing would pass (see check_sort_keys).
    SCOPED_TRACE("first, 1000 unsorted pairs (this test's own input is already sorted)");
    const std::vector<unsigned> unsorted = unsorted_keys();
    check_sort_pairs(fn, unsorted, positions(static_cast<int>(unsorted.size())));
  }
  GuardedArray d_keys(keys, front), d_values(values, front);

  // Run.
  fn(d_keys.data(), d_values.data(), n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  d_keys.verify(expected_keys, "keys", "keys must come out ascending");
  d_values.verify(expected_values, "values",
                  "each value must move with its key, and pairs with equal keys must keep their input "
                  "order (a stable sort)");
}

// True when v changes direction at most once, counted around the circle (a circular
// shift of a bitonic sequence is bitonic too): at most two changes going all the way round.
bool is_bitonic(const std::vector<unsigned>& v) {
  const std::size_t n = v.size();
  int changes = 0, direction = 0;
  // The first lap only finds the direction on arrival at v[0]; the second one counts.
  for (std::size_t i = 0; i < 2 * n; ++i) {
    const unsigned a = v[i % n], b = v[(i + 1) % n];
    const int d = a < b ? 1 : (a > b ? -1 : 0);
    if (d == 0) continue;
    if (i >= n && direction != 0 && d != direction) ++changes;
    direction = d;
  }
  return changes <= 2;
}

// ---------------------------------------------------------------- CPU: lecture 8 ----

// The lecture's odd-even transposition table, row by row: 5 3 1 2 4 sorted in 4 phases.
TEST(SortCpu, OddEvenTranspositionLectureTable) {
  std::vector<unsigned> keys{5, 3, 1, 2, 4};
  const std::vector<std::vector<unsigned>> rows{{3, 5, 1, 2, 4}, {3, 1, 5, 2, 4}, {1, 3, 2, 5, 4}, {1, 2, 3, 4, 5}};
  for (int phase = 0; phase < 4; ++phase) {
    SCOPED_TRACE("after phase " + std::to_string(phase));
    odd_even_phase_cpu(keys.data(), 5, phase);
    EXPECT_EQ(keys, rows[phase]);
  }
  std::vector<unsigned> again{5, 3, 1, 2, 4};
  odd_even_transposition_sort_cpu(again.data(), 5);
  EXPECT_EQ(again, (std::vector<unsigned>{1, 2, 3, 4, 5}));
}

// n phases are enough for any input, the reversed one (the worst case) included.
TEST(SortCpu, OddEvenTranspositionSortsInNPhases) {
  for (int n : {1, 2, 3, 8, 31, 100}) {
    const lab::Seed seed = lab::case_seed("odd_even_cpu", n);
    SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    for (auto d : {lab::Distribution::Uniform, lab::Distribution::Reversed, lab::Distribution::FewUnique}) {
      std::vector<unsigned> keys = lab::random_uints(n, 1000, d, seed), expected = keys;
      std::sort(expected.begin(), expected.end());
      odd_even_transposition_sort_cpu(keys.data(), n);
      EXPECT_EQ(keys, expected) << lab::to_string(d);
    }
  }
}

// The lecture's merge: 1 4 7 9 and 2 5 6 8.
TEST(SortCpu, MergeLectureExample) {
  const std::vector<unsigned> a{1, 4, 7, 9}, b{2, 5, 6, 8};
  std::vector<unsigned> out(8, 0);
  merge_cpu(a.data(), 4, b.data(), 4, out.data());
  EXPECT_EQ(out, (std::vector<unsigned>{1, 2, 4, 5, 6, 7, 8, 9}));
}

// The lecture's scatter address: A[2] = 7 is at 2 in A and would be inserted at 3 in B,
// so the merge puts it at 2 + 3 = 5 (what one thread per element computes).
TEST(SortCpu, MergeScatterAddressLectureExample) {
  const std::vector<unsigned> a{1, 4, 7, 9}, b{2, 5, 6, 8};
  const auto in_b = std::lower_bound(b.begin(), b.end(), a[2]) - b.begin();
  EXPECT_EQ(in_b, 3);
  std::vector<unsigned> out(8, 0);
  merge_cpu(a.data(), 4, b.data(), 4, out.data());
  EXPECT_EQ(out[2 + in_b], 7u);
}

// The lecture's bitonic sequences, and the split that halves them: every key of the
// lower half <= every key of the upper half, and both halves are bitonic again.
TEST(SortCpu, BitonicSplitLectureSequences) {
  for (const std::vector<unsigned>& sequence :
       {std::vector<unsigned>{15, 12, 5, 2, 1, 4, 8, 16}, std::vector<unsigned>{1, 4, 8, 16, 15, 12, 5, 2}}) {
    ASSERT_TRUE(is_bitonic(sequence));
    std::vector<unsigned> keys = sequence;
    bitonic_split_cpu(keys.data(), 8);
    EXPECT_EQ(keys, (std::vector<unsigned>{1, 4, 5, 2, 15, 12, 8, 16}));
    const std::vector<unsigned> lower(keys.begin(), keys.begin() + 4), upper(keys.begin() + 4, keys.end());
    EXPECT_LE(*std::max_element(lower.begin(), lower.end()), *std::min_element(upper.begin(), upper.end()));
    EXPECT_TRUE(is_bitonic(lower));
    EXPECT_TRUE(is_bitonic(upper));
  }
  EXPECT_FALSE(is_bitonic({1, 4, 2, 5, 3, 6, 0, 7}));
}

// The whole bitonic network sorts every power-of-two size.
TEST(SortCpu, BitonicNetworkSorts) {
  std::vector<unsigned> lecture{15, 12, 5, 2, 1, 4, 8, 16};
  bitonic_sort_cpu(lecture.data(), 8);
  EXPECT_EQ(lecture, (std::vector<unsigned>{1, 2, 4, 5, 8, 12, 15, 16}));
  for (int n = 2; n <= 1024; n *= 2) {
    const lab::Seed seed = lab::case_seed("bitonic_cpu", n);
    SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    std::vector<unsigned> keys = uniform_keys(n, seed, 50), expected = keys;
    std::sort(expected.begin(), expected.end());
    bitonic_sort_cpu(keys.data(), n);
    EXPECT_EQ(keys, expected);
  }
}

// The lecture's split on the least significant bit: 0 5 2 7 1 3 6 4 -> 0 2 6 4 5 7 1 3.
TEST(SortCpu, RadixSplitLectureExample) {
  const std::vector<unsigned> in{0, 5, 2, 7, 1, 3, 6, 4};
  std::vector<unsigned> out(8, 99);
  radix_split_cpu(in.data(), out.data(), 8, 0);
  EXPECT_EQ(out, (std::vector<unsigned>{0, 2, 6, 4, 5, 7, 1, 3}));
}

// Stable splits on bits 0, 1, 2, … in turn sort: the lecture's example in three splits,
// and random 32-bit keys in 32.
TEST(SortCpu, RadixSplitsOnEveryBitSort) {
  std::vector<unsigned> a{0, 5, 2, 7, 1, 3, 6, 4}, b(8);
  radix_split_cpu(a.data(), b.data(), 8, 0);
  radix_split_cpu(b.data(), a.data(), 8, 1);
  EXPECT_EQ(a, (std::vector<unsigned>{0, 4, 5, 1, 2, 6, 7, 3}));
  radix_split_cpu(a.data(), b.data(), 8, 2);
  EXPECT_EQ(b, (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7}));

  const lab::Seed seed = lab::case_seed("radix_cpu");
  SCOPED_TRACE(lab::seed_note(seed));
  std::vector<unsigned> keys = uniform_keys(1000, seed), other(1000), expected = keys;
  std::sort(expected.begin(), expected.end());
  for (int bit = 0; bit < 32; ++bit) {
    radix_split_cpu(keys.data(), other.data(), 1000, bit);
    keys.swap(other);
  }
  EXPECT_EQ(keys, expected);
}

// The golden sort_pairs keeps equal keys in their input order.
TEST(SortCpu, SortPairsIsStable) {
  std::vector<unsigned> keys{3, 1, 3, 1, 2}, values{0, 1, 2, 3, 4};
  sort_pairs_cpu(keys.data(), values.data(), 5);
  EXPECT_EQ(keys, (std::vector<unsigned>{1, 1, 2, 3, 3}));
  EXPECT_EQ(values, (std::vector<unsigned>{1, 3, 4, 0, 2}));
}

// The tests' expected results (golden_sort) are the CPU sorts' (sort_keys_cpu: std::sort;
// sort_pairs_cpu: the stable sort), on every distribution and around the radix passes'
// byte boundaries.
TEST(SortCpu, GoldenSortAgreesWithTheCpuSorts) {
  for (int n : {0, 1, 2, 255, 256, 257, 100003}) {
    for (lab::Distribution d : lab::all_distributions()) {
      for (std::uint64_t range : {std::uint64_t{0}, std::uint64_t{1000}}) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::to_string(d) + ", range " + std::to_string(range));
        const std::vector<unsigned> keys = lab::random_uints(static_cast<std::size_t>(n), range, d,
                                                             lab::case_seed("golden", static_cast<std::uint64_t>(n)));
        std::vector<unsigned> expected = keys, got = keys;
        sort_keys_cpu(expected.data(), n);
        golden_sort(got);
        EXPECT_EQ(got, expected) << "keys";
        std::vector<unsigned> expected_keys = keys, expected_values = positions(n);
        std::vector<unsigned> got_keys = keys, got_values = positions(n);
        sort_pairs_cpu(expected_keys.data(), expected_values.data(), n);
        golden_sort(got_keys, &got_values);
        EXPECT_EQ(got_keys, expected_keys) << "pairs' keys";
        EXPECT_EQ(got_values, expected_values) << "pairs' values: equal keys must keep their order";
      }
    }
  }
}

// n = 0 touches nothing.
TEST(SortCpu, ZeroLengthDoesNothing) {
  unsigned key = 7, value = 8;
  sort_keys_cpu(&key, 0);
  sort_pairs_cpu(&key, &value, 0);
  odd_even_transposition_sort_cpu(&key, 0);
  EXPECT_EQ(key, 7u);
  EXPECT_EQ(value, 8u);
}

// ---------------------------------------------------------------- GPU: sort_keys ----

// Warp and block boundaries, powers of two and one off, a tile boundary of 2048 and 4096,
// and two large sizes; full 32-bit random keys.
const int kMedium = (1 << 20) + 1, kLarge = 1 << 24;
const std::vector<int> kSizes{1, 2, 31, 32, 33, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, kMedium, kLarge};

class SortKeysGpu : public lab::GpuTestWithParam<int> {};

// Random keys over the full 32-bit range (the top bit included).
TEST_P(SortKeysGpu, MatchesCpu) {
  const int n = GetParam();
  const int trials = n <= (1 << 20) ? 2 : 1;
  for (int trial = 0; trial < trials; ++trial) {
    const lab::Seed seed = lab::case_seed("sort_keys", 2ull * n + trial);
    SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_sort_keys(sort_keys, uniform_keys(n, seed));
  }
}

// Keys in [0, 16): many equal keys, and every high bit zero.
TEST_P(SortKeysGpu, SmallKeyRange) {
  const int n = GetParam();
  const lab::Seed seed = lab::case_seed("sort_keys_small_range", n);
  SCOPED_TRACE("n = " + std::to_string(n) + ", keys in [0, 16), " + lab::seed_note(seed));
  check_sort_keys(sort_keys, uniform_keys(n, seed, 16));
}

INSTANTIATE_TEST_SUITE_P(Sizes, SortKeysGpu, ::testing::ValuesIn(kSizes), lab::size_name);

std::string distribution_name(const ::testing::TestParamInfo<lab::Distribution>& info) {
  return lab::to_string(info.param);
}

class SortKeysGpuDistributions : public lab::GpuTestWithParam<lab::Distribution> {};

// Each shape of data over the full 32-bit range, at a size that is no power of two.
TEST_P(SortKeysGpuDistributions, MatchesCpu) {
  for (int n : {100003, (1 << 20) + 1}) {
    const lab::Seed seed = lab::case_seed(std::string("sort_keys_") + lab::to_string(GetParam()), n);
    SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::to_string(GetParam()) + ", " + lab::seed_note(seed));
    check_sort_keys(sort_keys, lab::random_uints(n, 0, GetParam(), seed));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SortKeysGpuDistributions, ::testing::ValuesIn(lab::all_distributions()),
                         distribution_name);

using SortKeysGpuEdge = lab::GpuTest;

// n = 0 writes nothing and raises no CUDA error, with a real pointer or a null one.
TEST_F(SortKeysGpuEdge, ZeroLengthDoesNothing) {
  check_sort_keys(sort_keys, unsorted_keys());  // a sort that does nothing must not earn this test
  GuardedArray keys({}, 8);
  sort_keys(keys.data(), 0);
  sort_keys(nullptr, 0);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  keys.verify({}, "keys", "");
}

// Keys that differ only in the top bit: a sort that treats keys as signed, or skips the
// last digit, gets these wrong.
TEST_F(SortKeysGpuEdge, TopBitMatters) {
  check_sort_keys(sort_keys, {0x80000000u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0u, 1u, 0x80000001u, 0xFFFFFFFEu, 2u});
  const lab::Seed seed = lab::case_seed("sort_keys_top_bit");
  SCOPED_TRACE(lab::seed_note(seed));
  std::vector<unsigned> keys = uniform_keys(70001, seed, 4);
  for (unsigned& k : keys) k = ((k & 1u) << 31) | (k >> 1);  // top bit and bit 0 random, the rest zero
  check_sort_keys(sort_keys, keys);
}

// Many keys equal to 0 and to UINT_MAX, at a size that is no power of two: UINT_MAX is
// the usual padding value, which must not leak into the result or replace a key.
TEST_F(SortKeysGpuEdge, ExtremeValues) {
  const lab::Seed seed = lab::case_seed("sort_keys_extremes");
  SCOPED_TRACE(lab::seed_note(seed));
  std::vector<unsigned> keys = uniform_keys(6001, seed, 3);
  for (unsigned& k : keys) k = k == 0 ? 0u : (k == 1 ? 0xFFFFFFFFu : 0x12345678u);
  check_sort_keys(sort_keys, keys);
}

// Each key one bit (or all but one bit): every digit position has to be sorted.
TEST_F(SortKeysGpuEdge, EveryBitPosition) {
  std::vector<unsigned> keys;
  for (int copy = 0; copy < 40; ++copy) {
    for (int bit = 31; bit >= 0; --bit) {
      keys.push_back(1u << bit);
      keys.push_back(~(1u << bit));
    }
  }
  check_sort_keys(sort_keys, keys);
}

// Arrays that start 1, 2 or 3 words past a 16-byte boundary (vector loads must not fault).
TEST_F(SortKeysGpuEdge, UnalignedPointer) {
  for (int front = 1; front < 4; ++front) {
    const lab::Seed seed = lab::case_seed("sort_keys_unaligned", front);
    SCOPED_TRACE("keys start " + std::to_string(front) + " words in, n = 10007, " + lab::seed_note(seed));
    check_sort_keys(sort_keys, uniform_keys(10007, seed), front);
  }
}

// Calls of different sizes one after the other: scratch memory reused from an earlier
// call must not leak its contents (e.g. histograms that are not rewritten).
TEST_F(SortKeysGpuEdge, RepeatedCallsOfDifferentSizes) {
  int call = 0;
  for (int n : {(1 << 20) + 1, 33, 5000, 1, (1 << 20) + 1, 4097}) {
    const lab::Seed seed = lab::case_seed("sort_keys_repeated", call++);
    SCOPED_TRACE("call " + std::to_string(call) + ", n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_sort_keys(sort_keys, uniform_keys(n, seed));
  }
}

// Sorting sorted keys again leaves them as they are.
TEST_F(SortKeysGpuEdge, SortingTwiceChangesNothing) {
  const lab::Seed seed = lab::case_seed("sort_keys_twice");
  SCOPED_TRACE(lab::seed_note(seed));
  const std::vector<unsigned> keys = uniform_keys(300007, seed);
  std::vector<unsigned> expected = keys;
  golden_sort(expected);
  GuardedArray d_keys(keys, 0);
  sort_keys(d_keys.data(), static_cast<int>(keys.size()));
  sort_keys(d_keys.data(), static_cast<int>(keys.size()));
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  d_keys.verify(expected, "keys", "the second call must leave sorted keys sorted");
}

// --------------------------------------------------------------- GPU: sort_pairs ----

class SortPairsGpu : public lab::GpuTestWithParam<int> {};

// Random 32-bit keys; values are the original positions.
TEST_P(SortPairsGpu, MatchesStableCpuSort) {
  const int n = GetParam();
  const lab::Seed seed = lab::case_seed("sort_pairs", n);
  SCOPED_TRACE("n = " + std::to_string(n) + ", values = original positions, " + lab::seed_note(seed));
  check_sort_pairs(sort_pairs, uniform_keys(n, seed), positions(n));
}

// Keys in [0, 8): long runs of equal keys, whose values must keep their input order.
TEST_P(SortPairsGpu, StableWithManyEqualKeys) {
  const int n = GetParam();
  const lab::Seed seed = lab::case_seed("sort_pairs_equal_keys", n);
  SCOPED_TRACE("n = " + std::to_string(n) + ", keys in [0, 8), values = original positions, " + lab::seed_note(seed));
  check_sort_pairs(sort_pairs, uniform_keys(n, seed, 8), positions(n));
}

INSTANTIATE_TEST_SUITE_P(Sizes, SortPairsGpu, ::testing::ValuesIn(kSizes), lab::size_name);

class SortPairsGpuDistributions : public lab::GpuTestWithParam<lab::Distribution> {};

// Each shape of data; values are the original positions.
TEST_P(SortPairsGpuDistributions, MatchesStableCpuSort) {
  const int n = 100003;
  const lab::Seed seed = lab::case_seed(std::string("sort_pairs_") + lab::to_string(GetParam()), n);
  SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::to_string(GetParam()) + ", " + lab::seed_note(seed));
  check_sort_pairs(sort_pairs, lab::random_uints(n, 0, GetParam(), seed), positions(n));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SortPairsGpuDistributions, ::testing::ValuesIn(lab::all_distributions()),
                         distribution_name);

using SortPairsGpuEdge = lab::GpuTest;

// n = 0 writes nothing and raises no CUDA error.
TEST_F(SortPairsGpuEdge, ZeroLengthDoesNothing) {
  check_sort_pairs(sort_pairs, unsorted_keys(), positions(1000));  // a real sort first (see above)
  GuardedArray keys({}, 8), values({}, 8);
  sort_pairs(keys.data(), values.data(), 0);
  sort_pairs(nullptr, nullptr, 0);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  keys.verify({}, "keys", "");
  values.verify({}, "values", "");
}

// Values that are not positions (random 32-bit words) are moved, not recomputed.
TEST_F(SortPairsGpuEdge, ArbitraryValuesMoveWithTheirKeys) {
  const lab::Seed seed = lab::case_seed("sort_pairs_values");
  SCOPED_TRACE("n = 50001, " + lab::seed_note(seed));
  check_sort_pairs(sort_pairs, lab::random_uints(50001, 0, lab::Distribution::FewUnique, seed),
                   uniform_keys(50001, lab::derive_seed(seed, "values")));
}

// All keys equal: the values must come out exactly as they went in.
TEST_F(SortPairsGpuEdge, EqualKeysKeepTheirOrder) {
  const int n = 12345;
  check_sort_pairs(sort_pairs, std::vector<unsigned>(n, 0xFFFFFFFFu), positions(n));
  check_sort_pairs(sort_pairs, std::vector<unsigned>(n, 0u), positions(n));
}

// Keys that differ only in the top bit (and bit 0), values the positions.
TEST_F(SortPairsGpuEdge, TopBitMatters) {
  const lab::Seed seed = lab::case_seed("sort_pairs_top_bit");
  SCOPED_TRACE(lab::seed_note(seed));
  std::vector<unsigned> keys = uniform_keys(70001, seed, 4);
  for (unsigned& k : keys) k = ((k & 1u) << 31) | (k >> 1);
  check_sort_pairs(sort_pairs, keys, positions(70001));
}

// Arrays that start 1, 2 or 3 words past a 16-byte boundary.
TEST_F(SortPairsGpuEdge, UnalignedPointers) {
  for (int front = 1; front < 4; ++front) {
    const lab::Seed seed = lab::case_seed("sort_pairs_unaligned", front);
    SCOPED_TRACE("arrays start " + std::to_string(front) + " words in, n = 10007, " + lab::seed_note(seed));
    check_sort_pairs(sort_pairs, uniform_keys(10007, seed, 1000), positions(10007), front);
  }
}

// Calls of different sizes one after the other reuse scratch memory safely.
TEST_F(SortPairsGpuEdge, RepeatedCallsOfDifferentSizes) {
  int call = 0;
  for (int n : {(1 << 20) + 1, 33, 5000, 1, (1 << 20) + 1}) {
    const lab::Seed seed = lab::case_seed("sort_pairs_repeated", call++);
    SCOPED_TRACE("call " + std::to_string(call) + ", n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_sort_pairs(sort_pairs, uniform_keys(n, seed, 1u << 12), positions(n));
  }
}

// ------------------------------------------------------- GPU: registered variants ----

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/sort/lab.json, "required_variants").
// Each variant runs at small sizes (the slow ones too) and, unless it is slow
// (lab::variant_is_slow: labs/sort/lab.json, "slow_variants"), at n = 2^20 + 1.
const int kVariantSizes[] = {1, 2, 33, 1025, 2048, 2049, 4097};
constexpr int kVariantLarge = (1 << 20) + 1;

class SortKeysVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SortKeysVariantsGpu);

TEST_P(SortKeysVariantsGpu, SortsEverySize) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<KeysFn>("sort_keys", name);
  ASSERT_NE(fn, nullptr);
  for (const int n : kVariantSizes) {
    const lab::Seed seed = lab::case_seed("sort_keys_variant", n);
    SCOPED_TRACE("variant " + name + ", n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_sort_keys(fn, uniform_keys(n, seed));
    check_sort_keys(fn, uniform_keys(n, lab::derive_seed(seed, "few"), 5));
  }
  if (lab::variant_is_slow(name)) return;
  const lab::Seed seed = lab::case_seed("sort_variant_large");
  SCOPED_TRACE("variant " + name + ", n = " + std::to_string(kVariantLarge) + ", " + lab::seed_note(seed));
  check_sort_keys(fn, uniform_keys(kVariantLarge, seed));
}

INSTANTIATE_TEST_SUITE_P(Registered, SortKeysVariantsGpu, ::testing::ValuesIn(lab::registered_variants("sort_keys")),
                         lab::variant_test_name);

// Every variant of sort_pairs: stable, values moved with their keys.
class SortPairsVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SortPairsVariantsGpu);

TEST_P(SortPairsVariantsGpu, SortsEverySizeStably) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<PairsFn>("sort_pairs", name);
  ASSERT_NE(fn, nullptr);
  for (const int n : kVariantSizes) {
    const lab::Seed seed = lab::case_seed("sort_pairs_variant", n);
    SCOPED_TRACE("variant " + name + ", n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_sort_pairs(fn, uniform_keys(n, seed), positions(n));
    check_sort_pairs(fn, uniform_keys(n, lab::derive_seed(seed, "few"), 5), positions(n));
  }
  if (lab::variant_is_slow(name)) return;
  const lab::Seed seed = lab::case_seed("sort_variant_large");
  SCOPED_TRACE("variant " + name + ", n = " + std::to_string(kVariantLarge) + ", " + lab::seed_note(seed));
  check_sort_pairs(fn, uniform_keys(kVariantLarge, lab::derive_seed(seed, "few"), 5), positions(kVariantLarge));
}

INSTANTIATE_TEST_SUITE_P(Registered, SortPairsVariantsGpu, ::testing::ValuesIn(lab::registered_variants("sort_pairs")),
                         lab::variant_test_name);

}  // namespace
