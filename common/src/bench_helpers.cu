// Provided by the kit. The helpers of lab/bench_helpers.h.
#include "lab/bench_helpers.h"

#include <stdexcept>

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
  if (m_sets > 1) throw std::logic_error("PristineInputs: watch every input before add_set()");
  Input input{std::move(name), data, bytes, {}};
  input.sets.push_back(copy_of(data, bytes));
  m_inputs.push_back(std::move(input));
}

int PristineInputs::add_set() {
  for (Input& input : m_inputs) input.sets.push_back(copy_of(input.data, input.bytes));
  m_current = m_sets++;
  return m_current;
}

void PristineInputs::load(int k) {
  if (k < 0 || k >= m_sets) throw std::out_of_range("PristineInputs::load: no data set " + std::to_string(k));
  for (Input& input : m_inputs) {
    if (input.bytes > 0) {
      LAB_CUDA_CHECK(cudaMemcpy(input.data, input.sets[k].data(), input.bytes, cudaMemcpyDeviceToDevice));
    }
  }
  m_current = k;
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
