// Provided by the kit. The helpers of lab/bench_helpers.h.
#include "lab/bench_helpers.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lab/cuda_check.h"
#include "lab/variants.h"

namespace lab::bench {

namespace {
DeviceBuffer<unsigned char> copy_of(const void* data, std::size_t bytes) {
  DeviceBuffer<unsigned char> copy(bytes);
  if (bytes > 0) LAB_CUDA_CHECK(cudaMemcpy(copy.data(), data, bytes, cudaMemcpyDeviceToDevice));
  return copy;
}
}  // namespace

void PristineInputs::watch(std::string name, void* data, std::size_t bytes) {
  if (m_fresh) throw std::logic_error("PristineInputs: watch every input before use_fresh_in()");
  Input input{std::move(name), data, bytes, {}};
  input.sets[0] = copy_of(data, bytes);
  m_inputs.push_back(std::move(input));
}

void PristineInputs::restore() {
  for (Input& input : m_inputs) {
    if (input.bytes > 0) {
      LAB_CUDA_CHECK(cudaMemcpy(input.data, input.sets[0].data(), input.bytes, cudaMemcpyDeviceToDevice));
    }
  }
  m_current = 0;
}

void PristineInputs::use_fresh_in(Workload& w, std::function<void(Seed)> generate) {
  if (!m_fresh) {
    for (Input& input : m_inputs) input.sets[fresh_set()] = DeviceBuffer<unsigned char>(input.bytes);
    m_fresh = true;
  }
  w.restore = [this] { restore(); };
  w.fresh = [this, generate = std::move(generate)](Seed seed) {
    generate(seed);
    for (Input& input : m_inputs) {
      if (input.bytes > 0) {
        LAB_CUDA_CHECK(cudaMemcpy(input.sets[fresh_set()].data(), input.data, input.bytes, cudaMemcpyDeviceToDevice));
      }
    }
    m_current = fresh_set();
  };
}

std::string PristineInputs::check() const {
  std::string problems;
  for (const Input& input : m_inputs) {
    const std::size_t changed = count_differences(input.data, input.sets[m_current].data(), input.bytes);
    if (changed == 0) continue;
    if (!problems.empty()) problems += "; ";
    problems += std::to_string(changed) + " bytes of " + input.name + " changed";
  }
  return problems;
}

namespace {

// Uniform in [0, bound) for bound <= 2^32: the high half of a 64 x 32-bit product (a bias
// below 2^-32, invisible in timing data).
__device__ inline std::uint64_t below_at(Seed seed, std::size_t i, std::uint64_t bound) {
  return ((random_bits(seed, i) >> 32) * bound) >> 32;
}

__global__ void fill_uniform_kernel(float* out, std::size_t n, float lo, float hi, Seed seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float u = static_cast<float>(random_bits(seed, i) >> 40) * (1.0f / 16777216.0f);  // 24 bits: [0, 1)
    const float v = lo + (hi - lo) * u;
    out[i] = v < hi ? v : lo;  // rounding may reach hi
  }
}

template <class T>
__global__ void fill_integers_kernel(T* out, std::size_t n, long long lo, std::uint64_t count, Seed seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<T>(lo + static_cast<long long>(below_at(seed, i, count)));
  }
}

__global__ void fill_full_uints_kernel(unsigned* out, std::size_t n, Seed seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<unsigned>(random_bits(seed, i) >> 32);
  }
}

unsigned fill_blocks(std::size_t n) { return static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 8192)); }

// How many integers [lo, hi] holds.
std::uint64_t count_of(long long lo, long long hi, const char* what) {
  if (hi < lo) throw std::invalid_argument(std::string(what) + ": empty range");
  return static_cast<std::uint64_t>(hi - lo + 1);
}
}  // namespace

void fill_uniform(float* out, std::size_t n, float lo, float hi, Seed seed) {
  if (n == 0) return;
  if (!(lo < hi)) throw std::invalid_argument("fill_uniform: empty range");
  fill_uniform_kernel<<<fill_blocks(n), 256>>>(out, n, lo, hi, seed);
  LAB_CHECK_LAUNCH();
}

void fill_integer_floats(float* out, std::size_t n, int lo, int hi, Seed seed) {
  if (n == 0) return;
  const std::uint64_t count = count_of(lo, hi, "fill_integer_floats");
  fill_integers_kernel<float><<<fill_blocks(n), 256>>>(out, n, lo, count, seed);
  LAB_CHECK_LAUNCH();
}

void fill_ints(int* out, std::size_t n, int lo, int hi, Seed seed) {
  if (n == 0) return;
  const std::uint64_t count = count_of(lo, hi, "fill_ints");
  fill_integers_kernel<int><<<fill_blocks(n), 256>>>(out, n, lo, count, seed);
  LAB_CHECK_LAUNCH();
}

void fill_uints(unsigned* out, std::size_t n, std::uint64_t range, Seed seed) {
  if (n == 0) return;
  if (range > (std::uint64_t{1} << 32)) throw std::invalid_argument("fill_uints: range above 2^32");
  if (range == 0 || range == (std::uint64_t{1} << 32)) {
    fill_full_uints_kernel<<<fill_blocks(n), 256>>>(out, n, seed);
  } else {
    fill_integers_kernel<unsigned><<<fill_blocks(n), 256>>>(out, n, 0, range, seed);
  }
  LAB_CHECK_LAUNCH();
}

Candidate memcpy_roofline(void* dst, const void* src, std::size_t bytes, std::string description) {
  Candidate copy;
  copy.name = "cudaMemcpy D2D";
  copy.role = Role::Roofline;
  copy.description = std::move(description);
  copy.call = [dst, src, bytes] { LAB_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice)); };
  copy.unchecked = true;
  copy.amount = 2.0 * static_cast<double>(bytes);  // read once, written once
  return copy;
}

std::vector<std::string> slow_variants(const Harness& h, std::string_view function) {
  std::vector<std::string> names;
  auto add = [&](const VariantRegistry& registry) {
    for (const Variant& v : registry.of(function)) {
      if (variant_is_slow(v.name)) names.push_back(v.name);
    }
  };
  add(local_variants());
  if (h.reference().loaded()) add(*h.reference().registry());
  return names;
}

}  // namespace lab::bench
