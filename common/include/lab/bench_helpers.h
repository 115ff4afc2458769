// Provided by the kit. Pieces of a bench that every lab would otherwise write for itself
// (lab/bench.h is the harness they feed): the check that the timed calls left the
// inputs alone, the device-to-device copy that stands for the practical DRAM bound, and
// the variants too slow for a large workload.
//
//   lab::bench::PristineInputs inputs;
//   inputs.watch("a", da);                             // after the upload: copies da now
//   w.inputs_check = [&] { return inputs.check(); };
//   h.add_candidate(w, lab::bench::memcpy_roofline(dc.data(), da.data(), bytes, "…"));
//   w.skip_variants = lab::bench::slow_variants(h, "transpose");
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lab/bench.h"
#include "lab/buffer.h"
#include "lab/data.h"

namespace lab::bench {

/// The odd size the 1-D labs grade beside their aligned one (2^26): 30,000,001 elements,
/// a multiple of no block, tile or vector width, so that tails and edge blocks are timed
/// too, and still 120 MB of floats, far beyond the L2 cache.
constexpr long long kOddSize = 30000001;

/// The sizes a 1-D lab grades, in order: `aligned` and kOddSize; only the --size given,
/// when there is one (a size of your own is a single shape, never a grade).
inline std::vector<long long> graded_sizes(const Harness& h, long long aligned) {
  if (h.size_given()) return {h.options().size};
  return {aligned, kOddSize};
}

/// Device copies of a workload's inputs as they were before timing, for Workload::inputs_check.
// An implementation that writes to its input (scratch space, an in-place pass) would
// change what later samples and candidates are given; the check compares on the GPU,
// because the inputs are up to gigabytes.
//
// A graded workload also gets fresh data before every timed call (Workload::fresh),
// written on the GPU by the lab's generator, with the expected result computed there by
// trusted code: a result replayed from an earlier call, or cached per data set
// recognised by a few of its values, fails the check. The inputs as watched stay data
// set 0 (the warm-up, the CPU, the workloads that follow); each fresh draw is data set 1.
//
//   inputs.watch("x", d_x);                  // set 0
//   inputs.use_fresh_in(w, [&](lab::Seed s) {
//     lab::bench::fill_uniform(d_x.data(), n, -1.0f, 1.0f, s);    // new inputs…
//     expected[inputs.fresh_set()] = …;      // …and their result, by trusted code
//   });                                      // check: expected[inputs.current()]
class PristineInputs {
 public:
  /// Copies the `bytes` bytes at device address `data` as they are now; messages call them `name`.
  void watch(std::string name, void* data, std::size_t bytes);
  /// Copies the whole of `buffer` as it is now; messages call it `name`.
  template <class T>
  void watch(std::string name, DeviceBuffer<T>& buffer) {
    watch(std::move(name), buffer.data(), buffer.bytes());
  }
  /// Makes `w` draw fresh data before every timed call: `generate(seed)` writes new
  /// inputs into the watched buffers (same size and distribution) and their expected
  /// result where the workload's check looks for data set fresh_set(); this object then
  /// copies the inputs for check(). `w.restore` puts set 0 back. Watch every input first;
  /// this object must outlive the workload's run.
  void use_fresh_in(Workload& w, std::function<void(Seed)> generate);
  /// The data set the inputs hold: 0 (as watched) or fresh_set() (after a fresh draw).
  int current() const { return m_current; }
  /// The number of the fresh data as a data set: 1.
  static constexpr int fresh_set() { return 1; }
  /// "" when every watched input equals the current set, else "N bytes of NAME changed" for each that does not.
  std::string check() const;

 private:
  /// Copies data set 0 back into the inputs.
  void restore();

  struct Input {
    std::string name;
    void* data = nullptr;
    std::size_t bytes = 0;
    DeviceBuffer<unsigned char> sets[2];  ///< as watched (set 0); the last fresh draw (set 1, once used)
  };
  std::vector<Input> m_inputs;
  int m_current = 0;
  bool m_fresh = false;  ///< use_fresh_in() was called: set 1's copies exist
};

#if defined(__CUDACC__)
#define LAB_HOST_DEVICE __host__ __device__
#else
#define LAB_HOST_DEVICE
#endif

/// splitmix64's finaliser: a good 64-bit mix of `z`.
LAB_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// 64 random bits for counter `k` of the draw `seed` (mix64 of a Weyl sequence): the
/// counter-based generator behind the fill helpers below, for a lab's own generator
/// kernels. A new seed gives new bits for every counter.
LAB_HOST_DEVICE inline std::uint64_t random_bits(Seed seed, std::uint64_t k) {
  return mix64(seed + 0x9E3779B97F4A7C15ull * (k + 1));
}

/// Fresh data on the GPU (for PristineInputs::use_fresh_in), from a counter-based hash of
/// `seed` and each index: the same seed gives the same data. Uniform like the CPU
/// generators of lab/data.h, not the same values. All run on the default stream.
/// n floats uniform in [lo, hi).
void fill_uniform(float* out, std::size_t n, float lo, float hi, Seed seed);
/// n floats holding integers uniform in [lo, hi] (as lab::integer_floats).
void fill_integer_floats(float* out, std::size_t n, int lo, int hi, Seed seed);
/// n ints uniform in [lo, hi].
void fill_ints(int* out, std::size_t n, int lo, int hi, Seed seed);
/// n unsigned values uniform in [0, range) (range 0: the full 32-bit range).
void fill_uints(unsigned* out, std::size_t n, std::uint64_t range, Seed seed);

/// The "cudaMemcpy D2D" roofline: a device-to-device copy of `bytes` from `src` to `dst`.
// What any kernel that reads and writes that much can reach at best, measured on this GPU
// rather than taken from the data sheet. Its amount is the bytes read plus the bytes
// written (set `amount` afterwards where the unit is not bytes); its output is not a
// result, so it is unchecked.
Candidate memcpy_roofline(void* dst, const void* src, std::size_t bytes, std::string description);

/// The registered variants of `function`, the linked module's then the reference's, that lab::variant_is_slow names.
// A large workload's skip_variants: the lab's manifest ("slow_variants") names them once,
// for the tests and the bench alike.
std::vector<std::string> slow_variants(const Harness& h, std::string_view function);

}  // namespace lab::bench
