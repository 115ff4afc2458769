// Provided by the kit. Seeded data generators (lab/data.h).
#include "lab/data.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace lab {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

Seed seed_from_environment() {
  const char* text = std::getenv("LABKIT_SEED");
  if (text == nullptr || *text == '\0') return 1;
  try {
    return parse_seed(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("LABKIT_SEED: ") + e.what());
  }
}

Seed& seed_storage() {
  static Seed seed = seed_from_environment();
  return seed;
}

}  // namespace

Seed parse_seed(std::string_view text) {
  Seed value = 0;
  bool overflow = false;
  for (char c : text) {
    if (c < '0' || c > '9') {
      throw std::invalid_argument("a seed is a whole number from 0 to 18446744073709551615, got '" +
                                  std::string(text) + "'");
    }
    const Seed digit = static_cast<Seed>(c - '0');
    if (value > (~Seed{0} - digit) / 10) overflow = true;
    value = value * 10 + digit;
  }
  if (text.empty() || overflow) {
    throw std::invalid_argument("a seed is a whole number from 0 to 18446744073709551615, got '" +
                                std::string(text) + "'");
  }
  return value;
}

Seed run_seed() { return seed_storage(); }
void set_run_seed(Seed seed) { seed_storage() = seed; }

Seed derive_seed(Seed base, std::string_view label) {
  // FNV-1a over the label, mixed with the base through splitmix64.
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : label) h = (h ^ ch) * 0x100000001B3ull;
  std::uint64_t x = base ^ h;
  return splitmix64(x);
}

Seed case_seed(std::string_view label, std::uint64_t number) {
  std::uint64_t x = derive_seed(run_seed(), label) ^ (number * 0xD1B54A32D192ED03ull);
  return splitmix64(x);
}

Rng::Rng(Seed seed) {
  std::uint64_t x = seed;
  for (auto& s : m_state) s = splitmix64(x);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(m_state[1] * 5, 7) * 9;
  const std::uint64_t t = m_state[1] << 17;
  m_state[2] ^= m_state[0];
  m_state[3] ^= m_state[1];
  m_state[1] ^= m_state[2];
  m_state[0] ^= m_state[3];
  m_state[2] ^= t;
  m_state[3] = rotl(m_state[3], 45);
  return result;
}

double Rng::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::uint64_t Rng::below(std::uint64_t bound) {
  if (bound == 0) throw std::invalid_argument("Rng::below: bound must be > 0");
  // Rejection sampling: drop the top values that would make some results more likely.
  // The limit depends on the bound only, and the data generators ask the same bound for
  // millions of values: it is kept for the next call. A power of two needs no division.
  // The values are the same as with a division for each (data never change between versions).
  if (bound != m_bound) {
    m_bound = bound;
    m_limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
  }
  std::uint64_t x = next();
  while (x >= m_limit) x = next();
  return (bound & (bound - 1)) == 0 ? x & (bound - 1) : x % bound;
}

std::int64_t Rng::between(std::int64_t lo, std::int64_t hi) {
  if (hi < lo) throw std::invalid_argument("Rng::between: hi < lo");
  const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
  return span == 0 ? static_cast<std::int64_t>(next()) : lo + static_cast<std::int64_t>(below(span));
}

const char* to_string(Distribution d) {
  switch (d) {
    case Distribution::Uniform: return "uniform";
    case Distribution::Skewed: return "skewed";
    case Distribution::Sorted: return "sorted";
    case Distribution::Reversed: return "reversed";
    case Distribution::AllEqual: return "all_equal";
    case Distribution::FewUnique: return "few_unique";
  }
  return "unknown";
}

std::vector<Distribution> all_distributions() {
  return {Distribution::Uniform, Distribution::Skewed,   Distribution::Sorted,
          Distribution::Reversed, Distribution::AllEqual, Distribution::FewUnique};
}

std::vector<float> random_floats(std::size_t n, float lo, float hi, Seed seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  const double span = static_cast<double>(hi) - lo;
  for (auto& x : v) x = static_cast<float>(lo + span * rng.uniform01());
  return v;
}

std::vector<float> integer_floats(std::size_t n, int lo, int hi, Seed seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.between(lo, hi));
  return v;
}

std::vector<int> random_ints(std::size_t n, int lo, int hi, Seed seed) {
  Rng rng(seed);
  std::vector<int> v(n);
  for (auto& x : v) x = static_cast<int>(rng.between(lo, hi));
  return v;
}

std::vector<unsigned> random_uints(std::size_t n, std::uint64_t range, Distribution d, Seed seed) {
  if (range > (std::uint64_t{1} << 32)) throw std::invalid_argument("random_uints: range above 2^32");
  const std::uint64_t r = range == 0 ? (std::uint64_t{1} << 32) : range;
  Rng rng(seed);
  std::vector<unsigned> v(n);
  switch (d) {
    case Distribution::Uniform:
    case Distribution::Sorted:
    case Distribution::Reversed:
      for (auto& x : v) x = static_cast<unsigned>(rng.below(r));
      if (d == Distribution::Sorted) std::sort(v.begin(), v.end());
      if (d == Distribution::Reversed) std::sort(v.begin(), v.end(), [](unsigned a, unsigned b) { return a > b; });
      break;
    case Distribution::Skewed:
      for (auto& x : v) {
        const double u = rng.uniform01();
        x = static_cast<unsigned>(std::min<double>(static_cast<double>(r) - 1, std::floor(r * u * u * u * u)));
      }
      break;
    case Distribution::AllEqual: {
      const auto value = static_cast<unsigned>(rng.below(r));
      std::fill(v.begin(), v.end(), value);
      break;
    }
    case Distribution::FewUnique: {
      unsigned pool[5];
      for (auto& p : pool) p = static_cast<unsigned>(rng.below(r));
      for (auto& x : v) x = pool[rng.below(5)];
      break;
    }
  }
  return v;
}

std::size_t reuse_freed_host_memory() {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
  // Blocks under the threshold come from the heap, not from mappings of their own, and
  // freed heap memory is kept (up to 1 GiB at the heap's top) for the next allocation.
  // Some versions of glibc refuse a threshold above 32 MiB on 64-bit systems.
  for (const int threshold : {1 << 30, 32 << 20}) {
    if (mallopt(M_MMAP_THRESHOLD, threshold) == 1) {
      (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
      return static_cast<std::size_t>(threshold);
    }
  }
#endif
  return 0;
}

}  // namespace lab
