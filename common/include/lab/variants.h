// Provided by the kit. Named versions of a lab's functions, so the bench can time them.
//
// An implementation file registers each version it wants timed:
//
//   void vector_add_grid_stride(const float* a, const float* b, float* c, int n) { … }
//   LAB_REGISTER_VARIANT(vector_add, "grid_stride", vector_add_grid_stride,
//                        "a fixed grid that loops over the vector");
//
// The first argument names the interface function; the compiler checks that the
// variant has the same signature. The interface function itself is registered as
// "default" by the build (add_lab), and it is what the tests and the grader call.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lab {

/// Any function pointer, stored untyped; cast back with the interface's type.
using AnyFunction = void (*)();

/// One registered version of an interface function.
struct Variant {
  std::string function;     ///< the interface function it implements, e.g. "vector_add"
  std::string name;         ///< e.g. "grid_stride"; "default" is the interface function
  AnyFunction fn = nullptr; ///< the version itself
  std::string description;  ///< one line for the bench table
};

/// The variants of one module (an executable or one shared library).
class VariantRegistry {
 public:
  /// Adds a variant; a second one with the same function and name is ignored with a warning.
  void add(Variant v);
  /// Every variant, in registration order.
  const std::vector<Variant>& all() const { return m_variants; }
  /// The variants of one function, "default" first.
  std::vector<Variant> of(std::string_view function) const;
  /// The variant, or null.
  const Variant* find(std::string_view function, std::string_view name) const;
  /// The variant cast to the interface's function type, or null.
  template <class Fn>
  Fn* get(std::string_view function, std::string_view name) const {
    const Variant* v = find(function, name);
    return v != nullptr ? reinterpret_cast<Fn*>(v->fn) : nullptr;
  }

 private:
  std::vector<Variant> m_variants;
};

/// This module's registry (each executable and each shared library has its own).
VariantRegistry& local_variants();

/// True when `variant` is too slow for a lab's large sizes: it matches one of the
/// patterns of the lab's manifest ("slow_variants" in labs/<lab>/lab.json; a trailing
/// `*` matches any ending). Tests and benches run such variants at small sizes only.
bool variant_is_slow(std::string_view variant);

/// Registers the slow-variant patterns (the build generates one LAB_SLOW_VARIANTS line per lab).
struct SlowVariantsRegistrar {
  explicit SlowVariantsRegistrar(std::vector<std::string> patterns);
};

/// The lab's name: its folder under labs/ (the build generates one LAB_NAME line per
/// lab); "" in a program built without its lab's facts.
const std::string& lab_name();

/// Registers the lab's name (the build generates one line per lab).
struct LabNameRegistrar {
  explicit LabNameRegistrar(std::string name);
};

/// The reference's variant the lab is graded against ("reference_variant" in its
/// manifest; "default", the reference's fastest, when it names none). A bench compares
/// with it unless --reference-variant says otherwise.
const std::string& graded_reference_variant();

/// Registers the graded reference variant (the build generates one line per lab).
struct GradedVariantRegistrar {
  explicit GradedVariantRegistrar(std::string name);
};

/// A graded question of the lab answered with a figure of the bench ("check": "bench" in
/// its manifest): the bench prints the line to paste into labs/<lab>/answers.md.
struct BenchQuestion {
  std::string id;      ///< the question's id: its `## <id>` heading in answers.md
  std::string figure;  ///< which figure of the workload: "throughput", "median_ms" or "pct_peak"
  /// The workload's exact name (its manifest's "workload"); "": the first graded workload.
  /// A workload a question names is timed with --graded-only too (Harness::run).
  std::string workload{};
};

/// The lab's bench questions, in its manifest's order (empty when it asks none).
const std::vector<BenchQuestion>& bench_questions();

/// Registers the bench questions (the build generates one LAB_BENCH_QUESTIONS line per lab).
struct BenchQuestionsRegistrar {
  explicit BenchQuestionsRegistrar(std::vector<BenchQuestion> questions);
};

/// What LAB_REGISTER_VARIANT also leaves in the compiled object, in its own section
/// ".labkit_variants": the interface function's name, the variant's name, then the
/// variant's address. The grader reads it from the object (grader/steps.py) to tell which
/// kernels each registered variant launches; nothing reads it at run time.
template <std::size_t FunctionSize, std::size_t NameSize>
struct VariantRecord {
  char function[FunctionSize];
  char name[NameSize];
  AnyFunction fn;
};

/// Registers a variant at static-initialisation time.
template <class Fn>
struct VariantRegistrar {
  VariantRegistrar(const char* function, const char* name, Fn* fn, const char* description) {
    // Null only for a weak interface function that the library does not define (add_lab's
    // generated exports): nothing to register.
    if (fn != nullptr) local_variants().add({function, name, reinterpret_cast<AnyFunction>(fn), description});
  }
};

}  // namespace lab

#define LAB_VARIANT_CONCAT_(a, b) a##b
#define LAB_VARIANT_CONCAT(a, b) LAB_VARIANT_CONCAT_(a, b)

/// Registers `impl` as version `name` (a string literal) of the interface function
/// `function`. The grader reads the record it leaves to tell which kernels each
/// registered version launches: a lecture step needs a kernel of its own.
#define LAB_REGISTER_VARIANT(function, name, impl, description)                                 \
  [[maybe_unused]] __attribute__((used, section(".labkit_variants"))) static const             \
      ::lab::VariantRecord<sizeof(#function), sizeof(name)> LAB_VARIANT_CONCAT(               \
          lab_variant_record_, __LINE__){#function, name, reinterpret_cast<::lab::AnyFunction>(&impl)}; \
  static const ::lab::VariantRegistrar<decltype(function)> LAB_VARIANT_CONCAT(                  \
      lab_variant_registrar_, __LINE__)(#function, name, &impl, description)

/// The manifest's slow-variant patterns, e.g. LAB_SLOW_VARIANTS("odd_even*", ); (generated).
#define LAB_SLOW_VARIANTS(...) \
  static const ::lab::SlowVariantsRegistrar lab_slow_variants_registrar_(std::vector<std::string>{__VA_ARGS__})

/// The lab's name, e.g. LAB_NAME("vectorAdd"); (generated).
#define LAB_NAME(name) static const ::lab::LabNameRegistrar lab_name_registrar_(name)

/// The manifest's graded reference variant, e.g. LAB_GRADED_REFERENCE_VARIANT("tiled16"); (generated).
#define LAB_GRADED_REFERENCE_VARIANT(name) \
  static const ::lab::GradedVariantRegistrar lab_graded_variant_registrar_(name)

/// The manifest's bench questions, e.g. LAB_BENCH_QUESTIONS({"your_gbps", "throughput", ""}, ); (generated).
#define LAB_BENCH_QUESTIONS(...)                                                 \
  static const ::lab::BenchQuestionsRegistrar lab_bench_questions_registrar_(    \
      std::vector<::lab::BenchQuestion>{__VA_ARGS__})

/// The symbol a bench looks up in a dlopen()ed reference library.
#define LAB_VARIANT_REGISTRY_SYMBOL "labkit_variant_registry"

namespace lab {
/// Loads a lab's library (lib<lab>_solution.so, lib<lab>_student.so) and returns its
/// registry, or null with `*error` saying why. `what` names it in the message ("the
/// reference library"). RTLD_LOCAL keeps its symbols from clashing with the program's,
/// which defines the same function names; the library stays loaded for the process's
/// life, so its kernels stay registered.
const VariantRegistry* load_variant_library(const std::string& path, const std::string& what, std::string* error);
}  // namespace lab

/// Defines the exported accessor of this module's registry (add_lab generates this line).
#define LAB_EXPORT_VARIANT_REGISTRY()                                            \
  extern "C" __attribute__((visibility("default"))) const ::lab::VariantRegistry* \
  labkit_variant_registry() {                                                    \
    return &::lab::local_variants();                                             \
  }
