// Provided by the kit. The per-module variant registry (lab/variants.h).
#include "lab/variants.h"

#include <dlfcn.h>

#include <cstdio>

namespace lab {

void VariantRegistry::add(Variant v) {
  if (find(v.function, v.name) != nullptr) {
    std::fprintf(stderr, "labkit: variant '%s' of %s is registered twice; keeping the first\n",
                 v.name.c_str(), v.function.c_str());
    return;
  }
  m_variants.push_back(std::move(v));
}

std::vector<Variant> VariantRegistry::of(std::string_view function) const {
  std::vector<Variant> result;
  for (const Variant& v : m_variants) {
    if (v.function != function) continue;
    if (v.name == "default") {
      result.insert(result.begin(), v);
    } else {
      result.push_back(v);
    }
  }
  return result;
}

const Variant* VariantRegistry::find(std::string_view function, std::string_view name) const {
  for (const Variant& v : m_variants) {
    if (v.function == function && v.name == name) return &v;
  }
  return nullptr;
}

namespace {
std::vector<std::string>& slow_patterns() {
  static std::vector<std::string> patterns;
  return patterns;
}

std::string& lab_name_storage() {
  static std::string name;
  return name;
}

std::string& graded_variant() {
  static std::string name = "default";
  return name;
}

std::vector<BenchQuestion>& bench_question_list() {
  static std::vector<BenchQuestion> questions;
  return questions;
}
}  // namespace

const std::vector<BenchQuestion>& bench_questions() { return bench_question_list(); }

BenchQuestionsRegistrar::BenchQuestionsRegistrar(std::vector<BenchQuestion> questions) {
  for (auto& q : questions) bench_question_list().push_back(std::move(q));
}

const std::string& lab_name() { return lab_name_storage(); }

LabNameRegistrar::LabNameRegistrar(std::string name) { lab_name_storage() = std::move(name); }

const std::string& graded_reference_variant() { return graded_variant(); }

GradedVariantRegistrar::GradedVariantRegistrar(std::string name) {
  if (!name.empty()) graded_variant() = std::move(name);
}

SlowVariantsRegistrar::SlowVariantsRegistrar(std::vector<std::string> patterns) {
  for (auto& p : patterns) slow_patterns().push_back(std::move(p));
}

bool variant_is_slow(std::string_view variant) {
  for (const std::string& pattern : slow_patterns()) {
    if (!pattern.empty() && pattern.back() == '*') {
      if (variant.substr(0, pattern.size() - 1) == std::string_view(pattern).substr(0, pattern.size() - 1)) return true;
    } else if (variant == pattern) {
      return true;
    }
  }
  return false;
}

VariantRegistry& local_variants() {
  static VariantRegistry registry;
  return registry;
}

const VariantRegistry* load_variant_library(const std::string& path, const std::string& what, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + what + " " + path + ": " + (why != nullptr ? why : "unknown error");
    return nullptr;
  }
  using Accessor = const VariantRegistry* (*)();
  auto accessor = reinterpret_cast<Accessor>(dlsym(handle, LAB_VARIANT_REGISTRY_SYMBOL));
  if (accessor == nullptr) {
    *error = path + " is not a cuda-labkit library (it has no " LAB_VARIANT_REGISTRY_SYMBOL ")";
    return nullptr;
  }
  return accessor();
}

}  // namespace lab
