// Provided by the kit. The per-module variant registry (lab/variants.h).
#include "lab/variants.h"

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

VariantRegistry& local_variants() {
  static VariantRegistry registry;
  return registry;
}

}  // namespace lab
