// Provided by the kit. The judge's side of a lab's interface (DESIGN.md, "Trust boundary").
//
// The grader's test and bench programs are built from the same sources as a student's,
// but linked with a proxy of <lab>.h in place of any implementation: add_lab generates,
// for each interface function, a definition that forwards the call to a worker process:
//
//   void vector_add(const float* a, const float* b, float* c, int n) {
//     return ::lab::judge::call_interface<decltype(vector_add)>("vector_add", a, b, c, n);
//   }
//   LAB_JUDGE_FUNCTION(vector_add);
//
// Pointer arguments must point into memory from cudaMalloc (the tests' DeviceBuffers);
// they cross as CUDA IPC handles, so the worker reads and writes the judge's buffers.
// Other arguments are copied. When the call returns, the worker has synchronised the
// device: the results are in place, as the interface promises.
//
// Variants the worker's library registers appear in lab::local_variants() as functions
// of the right type ("slots"), so tests that loop over registered variants run them too.
//
// Bounds. With --exact-bounds (the grader's sanitizer runs) each device argument crosses
// with its extent: to the end of the judge's allocation, or the lab manifest's "bounds"
// for the argument where it names one (`"vector_add": {"a": "n", ...}`: a[0 .. n-1]),
// generated as a function that the proxy registers:
//
//   static void lab_bounds_vector_add(long long* count, const float* a, ..., int n) { count[0] = (n); ... }
//   LAB_JUDGE_BOUNDS(vector_add, lab_bounds_vector_add);
//
// The worker then calls the code under test on copies of exactly that many elements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "lab/judge/wire.h"
#include "lab/variants.h"

namespace lab::judge {

/// Which worker a call goes to.
enum class Role { Student = 0, Reference = 1 };

/// Encodes a device pointer (null allowed) as an IPC handle of its allocation plus an offset.
void encode_pointer(wire::Arg& arg, const void* pointer, int index, const char* function);

/// Sends `request` to the worker of `role` and waits for its reply (copied to `reply`).
/// Throws std::runtime_error with a message for the student when the call failed, hung,
/// or the worker died; the worker is restarted for the next call.
void forward(Role role, const wire::Request& request, wire::Reply& reply);

/// Starts a request for `function`/`variant` (names bounded to the wire's sizes).
void begin_request(wire::Request& request, const char* function, const char* variant, std::uint32_t nargs);

/// Whether this judge program runs with --exact-bounds (session.cu).
bool exact_bounds();

/// The generated bounds function of interface function `function` (LAB_JUDGE_BOUNDS), or null.
void* bounds_of(const char* function);

/// Registers an interface function's bounds function (LAB_JUDGE_BOUNDS).
struct BoundsRegistrar {
  BoundsRegistrar(const char* function, void* bounds);
};

namespace detail {

/// Bytes of one element an argument of type T points to (0: not a pointer).
template <class T>
constexpr std::uint64_t element_bytes() {
  if constexpr (std::is_pointer_v<T>) {
    using E = std::remove_cv_t<std::remove_pointer_t<T>>;
    if constexpr (std::is_void_v<E>) {
      return 1;
    } else {
      return sizeof(E);
    }
  } else {
    return 0;
  }
}

template <class T>
void encode(wire::Arg& arg, T value, int index, const char* function) {
  if constexpr (std::is_pointer_v<T>) {
    encode_pointer(arg, static_cast<const void*>(value), index, function);
  } else {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= wire::kValueBytes,
                  "an interface argument must be a device pointer or a small value");
    arg.kind = wire::ArgKind::Value;
    arg.bytes = sizeof(T);
    std::memcpy(arg.value, &value, sizeof(T));
  }
}

}  // namespace detail

/// Forwards one call of `variant` of `function` to the worker of `role`.
template <class Sig>
struct Forward;

template <class R, class... A>
struct Forward<R(A...)> {
  static R call(Role role, const char* function, const char* variant, A... args) {
    static_assert(sizeof...(A) <= wire::kMaxArgs, "too many interface arguments for the judge's wire");
    wire::Request request;
    begin_request(request, function, variant, sizeof...(A));
    int index = 0;
    ((detail::encode(request.args[index], args, index, function), ++index), ...);
    if (exact_bounds()) apply_bounds(request, function, args...);
    wire::Reply reply;
    forward(role, request, reply);
    if constexpr (!std::is_void_v<R>) {
      static_assert(std::is_trivially_copyable_v<R> && sizeof(R) <= wire::kValueBytes,
                    "an interface function must return void or a small value");
      R result;
      std::memcpy(&result, reply.value, sizeof(R));
      return result;
    }
  }

  /// Lowers each device argument's extent to the manifest's bounds, where it names one.
  static void apply_bounds(wire::Request& request, const char* function, A... args) {
    using Bounds = void (*)(long long*, A...);
    void* found = bounds_of(function);
    if (found == nullptr) return;
    long long counts[wire::kMaxArgs + 1];
    std::fill(std::begin(counts), std::end(counts), -1LL);
    reinterpret_cast<Bounds>(found)(counts, args...);
    const std::uint64_t sizes[] = {detail::element_bytes<A>()..., 0};
    for (std::size_t i = 0; i < sizeof...(A); ++i) {
      wire::Arg& arg = request.args[i];
      if (arg.kind != wire::ArgKind::Device || counts[i] < 0 || sizes[i] == 0) continue;
      const std::uint64_t bytes = static_cast<std::uint64_t>(counts[i]) * sizes[i];
      arg.extent = std::min(arg.extent, bytes);
    }
  }
};

/// The proxy of an interface function: the student's implementation, variant "default".
template <class Sig, class... A>
auto call_interface(const char* function, A... args) {
  return Forward<Sig>::call(Role::Student, function, "default", args...);
}

/// Function pointers of type Sig, each bound at run time to one variant of one worker.
template <class Sig>
struct Slots;

template <class R, class... A>
struct Slots<R(A...)> {
  static constexpr int kCount = 96;
  struct Binding {
    Role role = Role::Student;
    std::string function, variant;
  };
  static Binding& binding(int k) {
    static Binding bindings[kCount];
    return bindings[k];
  }
  template <int K>
  static R slot(A... args) {
    const Binding& b = binding(K);
    return Forward<R(A...)>::call(b.role, b.function.c_str(), b.variant.c_str(), args...);
  }
  template <std::size_t... K>
  static AnyFunction at(std::size_t k, std::index_sequence<K...>) {
    static const AnyFunction table[] = {reinterpret_cast<AnyFunction>(&slot<static_cast<int>(K)>)...};
    return table[k];
  }
  /// A function pointer (untyped) that calls `variant` of `function` in the worker of `role`.
  static AnyFunction bind(Role role, const std::string& function, const std::string& variant) {
    static int used = 0;
    if (used == kCount) return nullptr;
    binding(used) = {role, function, variant};
    return at(static_cast<std::size_t>(used++), std::make_index_sequence<kCount>{});
  }
};

/// Binds variants of one interface function to slots of its type.
using SlotBinder = AnyFunction (*)(Role, const std::string& function, const std::string& variant);

/// Registers an interface function of this program's lab (LAB_JUDGE_FUNCTION).
struct FunctionRegistrar {
  FunctionRegistrar(const char* function, SlotBinder binder);
};

/// Registers this program's lab and the default paths of its worker and libraries.
struct LabRegistrar {
  LabRegistrar(const char* lab, const char* worker, const char* student, const char* reference);
};

}  // namespace lab::judge

/// Makes the variants of interface function `fn` reachable through slots (generated).
#define LAB_JUDGE_FUNCTION(fn)                                                 \
  static const ::lab::judge::FunctionRegistrar LAB_VARIANT_CONCAT(             \
      lab_judge_function_, __LINE__)(#fn, &::lab::judge::Slots<decltype(fn)>::bind)

/// Registers `bounds` as the bounds function of interface function `fn` (generated from the
/// manifest's "bounds").
#define LAB_JUDGE_BOUNDS(fn, bounds)                                           \
  static const ::lab::judge::BoundsRegistrar LAB_VARIANT_CONCAT(               \
      lab_judge_bounds_, __LINE__)(#fn, reinterpret_cast<void*>(&bounds))

/// Names the lab of this judge program and its default worker and libraries (generated).
#define LAB_JUDGE_LAB(lab_name, worker_path, student_path, reference_path) \
  static const ::lab::judge::LabRegistrar lab_judge_lab_registrar_(lab_name, worker_path, student_path, reference_path)
