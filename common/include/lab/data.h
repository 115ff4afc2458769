// Provided by the kit. Seeded, reproducible test and bench data.
//
// Every generator takes a lab::Seed; the same seed gives the same data on every
// machine (the generator is xoshiro256**, not the standard library's distributions,
// whose output differs between implementations). Tests print the seed when they
// fail; rerun with `--seed=<N>` (or LABKIT_SEED=<N>) to get the same data again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lab {

/// The one seed type of the kit.
using Seed = std::uint64_t;

/// The run's seed: --seed=<N> (see set_run_seed) or LABKIT_SEED, else 1.
Seed run_seed();
/// A seed from its decimal text; std::invalid_argument for anything else (a sign, letters,
/// more than 64 bits), so that "--seed=-5" is refused rather than wrapped around.
Seed parse_seed(std::string_view text);
/// Sets the run's seed (the test main and the bench call this for --seed=<N>).
void set_run_seed(Seed seed);
/// A seed for one use (e.g. one test case), derived from `base` and a label.
Seed derive_seed(Seed base, std::string_view label);
/// A seed for one use, derived from the run's seed, a label and a number (e.g. the size).
Seed case_seed(std::string_view label, std::uint64_t number = 0);

/// xoshiro256** pseudo-random generator, seeded through splitmix64.
class Rng {
 public:
  explicit Rng(Seed seed);
  /// 64 random bits.
  std::uint64_t next();
  /// Uniform in [0, 1).
  double uniform01();
  /// Uniform integer in [0, bound) without modulo bias; bound > 0.
  std::uint64_t below(std::uint64_t bound);
  /// Uniform integer in [lo, hi] (inclusive).
  std::int64_t between(std::int64_t lo, std::int64_t hi);

 private:
  std::uint64_t m_state[4];
  std::uint64_t m_bound = 0, m_limit = 0;  // below(): the last bound and its rejection limit
};

/// Shapes of data the labs test with.
enum class Distribution {
  Uniform,    ///< independent uniform values
  Skewed,     ///< power law: many small values, few large ones (value = range · u⁴)
  Sorted,     ///< ascending
  Reversed,   ///< descending
  AllEqual,   ///< one value repeated (worst case for atomics)
  FewUnique,  ///< a handful of distinct values
};

/// Lower-case name, e.g. "few_unique" (used in test names).
const char* to_string(Distribution d);
/// Every distribution, for parameterised tests.
std::vector<Distribution> all_distributions();

/// n floats uniform in [lo, hi).
std::vector<float> random_floats(std::size_t n, float lo, float hi, Seed seed);
/// n floats holding integers uniform in [lo, hi]: sums of them are exact while they stay below 2^24.
std::vector<float> integer_floats(std::size_t n, int lo, int hi, Seed seed);
/// n ints uniform in [lo, hi].
std::vector<int> random_ints(std::size_t n, int lo, int hi, Seed seed);
/// n unsigned values in [0, range) (range 0 means the full 32-bit range) shaped by `d`.
std::vector<unsigned> random_uints(std::size_t n, std::uint64_t range, Distribution d, Seed seed);

/// Makes this process reuse the host memory it frees (arrays under 1 GiB) instead of
/// handing it back to the system and mapping it afresh for the next array: tests and
/// benches make and drop many arrays of tens of MB, and each fresh mapping is paid again
/// in page faults, one per 4 KiB touched (64 MB arrays: five times slower on a virtual
/// machine). The test main and the bench call it first. Returns the largest array size
/// that now comes from the heap (1 GiB, or 32 MiB where the C library refuses more: the
/// documented limit on 64-bit systems), 0 outside glibc or where it refuses both.
std::size_t reuse_freed_host_memory();

}  // namespace lab
