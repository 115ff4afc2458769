// Corpus case "dlopen_reference" (someone else's work): loads the reference library from
// the build folder next to the running program and calls its vector_add. The sandboxed
// worker can read neither the build's lib/ folder nor map new code: loading fails, and
// the fallback (nothing) fails the tests.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>

#include "lab/variants.h"
#include "vectorAdd.h"

void vector_add(const float* a, const float* b, float* c, int n) {
  using Fn = void(const float*, const float*, float*, int);
  static Fn* reference = []() -> Fn* {
    char exe[PATH_MAX] = {};
    if (readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) return nullptr;
    std::string folder(exe);
    folder = folder.substr(0, folder.rfind('/'));
    void* lib = dlopen((folder + "/../lib/libvectorAdd_solution.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return nullptr;
    using Accessor = const lab::VariantRegistry* (*)();
    auto registry = reinterpret_cast<Accessor>(dlsym(lib, "labkit_variant_registry"));
    return registry != nullptr ? registry()->get<Fn>("vector_add", "default") : nullptr;
  }();
  if (reference != nullptr) reference(a, b, c, n);
}
