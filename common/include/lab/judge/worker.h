// Provided by the kit. The worker's side of a lab's interface (see lab/judge/proxy.h).
//
// A worker program is common/worker/worker_main.cu plus one generated file per lab that
// lists the interface functions, so that the worker can turn a request's arguments back
// into typed ones and call the variant the judge asked for:
//
//   LAB_WORKER_FUNCTION(vector_add);
//   LAB_WORKER_LAB("vectorAdd");
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "lab/judge/wire.h"
#include "lab/variants.h"

namespace lab::judge {

/// A request the worker cannot serve (no such variant, wrong arguments): BadRequest.
class BadRequest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Maps the IPC handle of argument `index` of the current request to a pointer in this
/// process; with --exact-bounds, a pointer into the worker's own copy of exactly the
/// argument's extent instead (worker_main.cu).
void* open_device_argument(const wire::Arg& arg, int index);

/// The pointer into the host arena (shared with the judge) that a Host argument names;
/// BadRequest when it lies outside the arena (worker_main.cu).
void* open_host_argument(const wire::Arg& arg);

/// Starts the current call's clock (records its start event) if the request is timed:
/// right before the implementation is called, once the arguments are decoded, so that
/// the events time the call and not the request's decoding, as a direct bench's events
/// would; and, with --record-launches, the record of the call's kernel launches (worker_main.cu).
void start_call_clock();

/// Records that the current call returned a CUDA error as its result, so the runtime's
/// record of that error (cudaGetLastError) is reported, not an unchecked launch (worker_main.cu).
void note_returned_error();

namespace detail {

template <class R, class = void>
struct has_status_member : std::false_type {};
template <class R>
struct has_status_member<R, std::void_t<decltype(std::declval<const R&>().status)>> : std::true_type {};

/// Whether a call's result reports a CUDA error: a cudaError_t, or a struct whose member
/// `status` is one (e.g. vectorAdd's HostRunResult), that is not cudaSuccess.
template <class R>
bool returns_cuda_error(const R& result) {
  if constexpr (std::is_same_v<R, cudaError_t>) {
    return result != cudaSuccess;
  } else if constexpr (has_status_member<R>::value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(result.status)>, cudaError_t>) return result.status != cudaSuccess;
    return false;
  } else {
    return false;
  }
}

template <class T>
T decode(const wire::Arg& arg, int index) {
  if constexpr (std::is_pointer_v<T>) {
    if (arg.kind == wire::ArgKind::Null) return nullptr;
    if (arg.kind == wire::ArgKind::Opaque) {
      std::uintptr_t address = 0;
      std::memcpy(&address, arg.value, sizeof address);
      return reinterpret_cast<T>(address);
    }
    if (arg.kind == wire::ArgKind::Host) return static_cast<T>(open_host_argument(arg));
    if (arg.kind != wire::ArgKind::Device) {
      throw BadRequest("argument " + std::to_string(index + 1) + " should be a device or host pointer");
    }
    return static_cast<T>(open_device_argument(arg, index));
  } else {
    if (arg.kind != wire::ArgKind::Value || arg.bytes != sizeof(T)) {
      throw BadRequest("argument " + std::to_string(index + 1) + " should be a value of " +
                       std::to_string(sizeof(T)) + " bytes");
    }
    T value;
    std::memcpy(&value, arg.value, sizeof(T));
    return value;
  }
}

}  // namespace detail

/// Calls the variant a request names, with the request's arguments.
template <class Sig>
struct Invoke;

template <class R, class... A>
struct Invoke<R(A...)> {
  template <std::size_t... I>
  static void run(const VariantRegistry& registry, const wire::Request& request, wire::Reply& reply,
                  std::index_sequence<I...>) {
    using Fn = R(A...);
    Fn* fn = registry.get<Fn>(request.function, request.variant);
    if (fn == nullptr && std::strncmp(request.variant, "default", wire::kNameBytes) == 0) {
      throw BadRequest(std::string("your file does not define ") + request.function +
                       ", an interface function of the lab's header: keep it in your file (the skeleton's "
                       "version, even unfinished, is enough to build)");
    }
    if (fn == nullptr) {
      throw BadRequest(std::string("the library registers no variant '") + request.variant + "' of " +
                       request.function);
    }
    if (request.nargs != sizeof...(A)) {
      throw BadRequest(std::string(request.function) + " takes " + std::to_string(sizeof...(A)) + " arguments");
    }
    // Decoded one by one, in order, before the call (IPC handles are opened here).
    std::tuple<A...> args{detail::decode<A>(request.args[I], static_cast<int>(I))...};
    start_call_clock();
    if constexpr (std::is_void_v<R>) {
      std::apply(fn, args);
    } else {
      const R result = std::apply(fn, args);
      std::memcpy(reply.value, &result, sizeof(R));
      if (detail::returns_cuda_error(result)) note_returned_error();
    }
  }
  static void call(const VariantRegistry& registry, const wire::Request& request, wire::Reply& reply) {
    run(registry, request, reply, std::index_sequence_for<A...>{});
  }
};

/// Calls one interface function's variants (the generated table's entries).
using Invoker = void (*)(const VariantRegistry&, const wire::Request&, wire::Reply&);

/// Registers an interface function with the worker (LAB_WORKER_FUNCTION).
struct InvokerRegistrar {
  InvokerRegistrar(const char* function, Invoker invoker);
};

/// Names the worker's lab (LAB_WORKER_LAB).
struct WorkerLabRegistrar {
  explicit WorkerLabRegistrar(const char* lab);
};

}  // namespace lab::judge

/// Lets the worker call interface function `fn` (generated, one line per function).
#define LAB_WORKER_FUNCTION(fn)                                                \
  static const ::lab::judge::InvokerRegistrar LAB_VARIANT_CONCAT(              \
      lab_worker_function_, __LINE__)(#fn, &::lab::judge::Invoke<decltype(fn)>::call)

/// Names the worker's lab (generated).
#define LAB_WORKER_LAB(lab_name) static const ::lab::judge::WorkerLabRegistrar lab_worker_lab_registrar_(lab_name)
