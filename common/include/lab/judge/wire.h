// Provided by the kit. The channel between the judge and a worker process.
//
// The grader's test and bench programs (the judge) contain no student code: each call
// of a lab's interface function is forwarded to a worker process that holds the
// implementation library and runs sandboxed (common/worker/worker_main.cu). The two share
// one page-aligned block of memory (a memfd) laid out as `Channel`: the judge writes a
// request and bumps `request_seq`; the worker answers in `reply` and sets `reply_seq`
// to the same number. Device buffers cross as CUDA IPC handles of their allocation plus
// an offset, so the worker computes on the judge's own buffers. Host buffers
// (lab::HostBuffer) cross as offsets into the host arena: a second memfd, of a fixed size,
// that the judge maps and hands to the worker at start-up, and that both sides see alike.
//
// The worker is not trusted: the judge reads a reply only once, right after the worker
// signalled it, copies it out, and bounds every string and count it takes from it.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

namespace lab::judge::wire {

constexpr std::uint32_t kMagic = 0x4c424a44;  // "LBJD"
constexpr std::uint32_t kVersion = 4;
constexpr int kMaxArgs = 16;
constexpr int kNameBytes = 64;
constexpr int kDescriptionBytes = 160;
constexpr int kMessageBytes = 4096;
constexpr int kMaxVariants = 64;
constexpr int kValueBytes = 16;
/// Kernel launches one call's reply lists (Reply::launches); later ones are only counted.
constexpr int kMaxLaunches = 24;
constexpr int kKernelNameBytes = 160;
/// The file descriptor the worker finds the channel at.
constexpr int kChannelFd = 3;
/// The file descriptor the worker finds the host arena at; it maps it and closes it.
constexpr int kArenaFd = 4;
/// The host arena's size: every lab::HostBuffer of a judge program lives in it. Pages
/// cost memory only once written, so the size is a limit, not a reservation.
constexpr std::uint64_t kHostArenaBytes = std::uint64_t{1} << 30;

/// What the judge asks.
enum class Op : std::uint32_t {
  Hello = 1,  ///< before the library is loaded: report the sandbox in force
  Load = 2,   ///< load the implementation library; reply with its variants
  Call = 3,   ///< call one variant of one interface function
  Noop = 4,   ///< launch one empty kernel and synchronise (the boundary's own cost)
  Quit = 5,   ///< exit
};

/// How a request ended.
enum class Status : std::uint32_t {
  Ok = 0,
  Error = 1,       ///< the implementation reported an error (an exception, a failed launch)
  Fault = 2,       ///< the GPU context is lost (illegal address, ...): the worker exits
  BadRequest = 3,  ///< no such function or variant, wrong arguments
};

/// Null; a device buffer of the judge; a value; a pointer that is no memory of the
/// judge's (e.g. a zero-length buffer plus an offset), passed on as a number the callee
/// must not dereference, as it could not in the judge either; or a pointer into the host
/// arena (a lab::HostBuffer).
enum class ArgKind : std::uint32_t { Null = 0, Device = 1, Value = 2, Opaque = 3, Host = 4 };

/// One argument of a call: a device pointer (allocation handle + offset), a host pointer
/// (offset into the host arena) or a value.
struct Arg {
  ArgKind kind;
  std::uint32_t bytes;    ///< Value: the size of the value
  std::uint64_t offset;   ///< Device: bytes from the allocation's base; Host: bytes from the arena's start
  /// Device: the bytes the callee may touch from the pointer on: to the end of the judge's
  /// allocation, or less where the lab's manifest bounds the argument ("bounds": a[0 .. n-1]).
  /// A worker started with --exact-bounds (the sanitizer's runs) calls the implementation on
  /// an allocation of its own of exactly this size (copied in and out), so that memcheck
  /// reports any access past it.
  std::uint64_t extent;
  cudaIpcMemHandle_t handle;
  unsigned char value[kValueBytes];
};

struct Request {
  Op op;
  char function[kNameBytes];
  char variant[kNameBytes];
  std::uint32_t nargs;
  Arg args[kMaxArgs];
  /// A timed call: the worker brackets it with two CUDA events, as a direct bench does,
  /// and replies with their elapsed time (Reply::elapsed_ms, its clock stamps). The judge
  /// takes that time as the call's only where its own clock, which the worker cannot
  /// touch, agrees (lab/remote.h, common/judge/session.cu).
  std::uint32_t timed;
};

struct VariantInfo {
  char function[kNameBytes];
  char name[kNameBytes];
  char description[kDescriptionBytes];
};

/// One kernel launch of a call, as the worker's launch record saw it (--record-launches):
/// the kernel's (mangled) name, its shape, and a digest of its argument values with every
/// pointer left out (pointers differ from run to run; the other values do not).
struct LaunchInfo {
  char kernel[kKernelNameBytes];
  std::uint32_t grid[3];
  std::uint32_t block[3];
  std::uint64_t shared_bytes;
  std::uint64_t args_digest;  ///< 0: not known (an earlier CUDA error was pending)
};

struct Reply {
  Status status;
  unsigned char value[kValueBytes];  ///< the return value of a call, if any
  std::uint32_t nvariants;
  VariantInfo variants[kMaxVariants];
  char message[kMessageBytes];  ///< an error, or the sandbox report (Hello)
  /// A timed request: the time between the events around the call (ms); negative when
  /// there is none (the call failed, or never started).
  double elapsed_ms;
  /// The call's kernel launches (a worker started with --record-launches; else 0).
  std::uint32_t nlaunches;       ///< entries in `launches`
  std::uint32_t launches_total;  ///< launches in all (more than nlaunches when they did not fit)
  LaunchInfo launches[kMaxLaunches];
};

struct Channel {
  std::uint32_t magic;
  std::uint32_t version;
  alignas(64) std::atomic<std::uint32_t> request_seq;
  alignas(64) std::atomic<std::uint32_t> reply_seq;
  /// 1 while the judge times calls: the worker then spins instead of sleeping between
  /// requests, so that waking it adds no noise to the measurement.
  alignas(64) std::atomic<std::uint32_t> hot;
  alignas(64) Request request;
  alignas(64) Reply reply;
};

static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "the channel needs lock-free 32-bit atomics");

}  // namespace lab::judge::wire
