// Provided by the kit. The worker: the only process of a grading run that holds the code
// under test (DESIGN.md, "Trust boundary").
//
// A judge program starts it with a fixed command line and a scrubbed environment:
//
//   <lab>_worker --impl LIBRARY --device N --parent PID [--no-sandbox] [--exact-bounds]
//                [--record-launches] [--warm-copies]
//
// It closes every inherited file but the channel (fd 3) and its log (stdout, stderr),
// maps the host arena (fd 4: the judge's lab::HostBuffer memory) and closes that file too,
// creates its CUDA context, puts itself in the sandbox (sandbox.h), reports the
// protections in force, and only then loads the implementation library: the library's
// constructors already run sandboxed. It then serves the judge's requests one at a time
// (lab/judge/wire.h): each call runs on the judge's own device buffers (CUDA IPC), is
// followed by a device-wide synchronisation, and is answered with its return value or
// its error. After a GPU fault the context is lost: the worker answers and exits, and
// the judge starts a new one for the next call.
//
// For the sanitizer's runs (the grader passes the judge --exact-bounds, the judge passes
// it on) each device argument is copied into an allocation of the worker's own of exactly
// the argument's extent (wire::Arg::extent), the implementation is called on those, and
// they are copied back: memcheck then reports an access one element past an array, which
// inside the judge's larger buffers (guard zones, whole IPC mappings) it cannot see.
//
// With --record-launches the worker keeps a record of each call's kernel launches (name,
// shape, a digest of the argument values without pointers) and sends it with the reply:
// the grader compares the launches of the same tests with and without the sanitizer, so
// that code which behaves differently under the tools is seen (grader/sanitize.py). The
// record comes from the CUDA runtime's launch entry points, which this program defines
// (and exports) itself: the implementation library's launches bind to them, and they
// pass each launch on to libcudart unchanged.
//
// --warm-copies (the judge passes it unless its --cold-copies diagnostic is given): before
// each timed call's lead, the worker makes a memset and a 4-byte synchronous copy to the
// host of its own, outside the call's clock stamps, so that the call's own copies find the
// copy path as a direct bench's call does, whose set-up has just used it in the same
// process. Without it, a call that starts with a memset and ends with a small copy to the
// host (compact's single-pass kernels) paid the copy engines' switch from the judge's
// context inside its stamps: 2-5 us, about 3% of such a call (grader/tests/fairness_probe.py).
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "lab/device.h"
#include "lab/judge/wire.h"
#include "lab/judge/worker.h"
#include "lab/timing_lead.h"
#include "../src/next_symbol.h"
#include "../src/stream_fence.h"
#include "../wire/spin.h"
#include "sandbox.h"

namespace lab::judge {

void* map_device_argument(const wire::Arg& arg);

namespace {

void set_message(wire::Reply& reply, const std::string& text);

std::map<std::string, Invoker>& invokers() {
  static std::map<std::string, Invoker> table;
  return table;
}

std::string& worker_lab() {
  static std::string lab;
  return lab;
}

// The IPC mappings of the current call (and of the last one, until this call ends).
struct Mapping {
  cudaIpcMemHandle_t handle;
  void* base = nullptr;
  bool used = false;
};
std::vector<Mapping>& mappings() {
  static std::vector<Mapping> open;
  return open;
}

// Closes the mappings the call did not use; with `keep_marks` false (after a call) the
// ones it used stay open for the next, unmarked.
void close_unused_mappings(bool keep_marks = false) {
  auto& all = mappings();
  for (auto it = all.begin(); it != all.end();) {
    if (!it->used) {
      cudaIpcCloseMemHandle(it->base);
      it = all.erase(it);
    } else {
      if (!keep_marks) it->used = false;
      ++it;
    }
  }
}

// The host arena: the judge's lab::HostBuffer memory, mapped at start-up (before the
// sandbox closes), the same size as in the judge.
struct HostArena {
  char* base = nullptr;
  std::uint64_t bytes = 0;
};
HostArena& host_arena() {
  static HostArena arena;
  return arena;
}

// Maps the arena the judge passed at wire::kArenaFd, then closes the file: the mapping is
// all the worker keeps (the judge sealed the file's size, so nothing can shrink it under
// the judge's feet either). Returns "" or what went wrong.
std::string map_host_arena() {
  struct stat st {};
  if (fstat(wire::kArenaFd, &st) != 0) return "no host arena at fd 4";
  if (static_cast<std::uint64_t>(st.st_size) != wire::kHostArenaBytes) {
    close(wire::kArenaFd);
    return "the host arena at fd 4 has " + std::to_string(st.st_size) + " bytes, not " +
           std::to_string(wire::kHostArenaBytes) + ": rebuild the kit";
  }
  void* memory = mmap(nullptr, wire::kHostArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, wire::kArenaFd, 0);
  close(wire::kArenaFd);
  if (memory == MAP_FAILED) return std::string("cannot map the host arena: ") + std::strerror(errno);
  host_arena() = {static_cast<char*>(memory), wire::kHostArenaBytes};
  return "";
}

// Set when the current call returned a CUDA error as its result (note_returned_error()).
bool& returned_error() {
  static bool flag = false;
  return flag;
}

// --exact-bounds: the current call's own copies of its device arguments.
struct ExactCopy {
  char* mapped = nullptr;  // the first byte of the judge's memory the copy holds
  char* own = nullptr;     // the worker's allocation (cudaMalloc: memcheck knows its size)
  std::uint64_t pad = 0;   // bytes before the copy, so that it keeps the argument's alignment
  std::uint64_t bytes = 0;
};
struct ExactCall {
  bool enabled = false;  // --exact-bounds
  bool active = false;   // a call's copies are in place
  void* pointer[wire::kMaxArgs] = {};
  std::vector<ExactCopy> copies;
};
ExactCall& exact_call() {
  static ExactCall call;
  return call;
}

// The largest extent a copy may have (a judge's argument never comes near it).
constexpr std::uint64_t kMaxExactBytes = std::uint64_t{1} << 36;

// Copies every device argument of `request` into an allocation of exactly its extent.
// Arguments whose extents overlap or start at the same byte (in-place calls: in == out)
// share one copy, so that the implementation sees the aliasing the judge's call has. Each
// copy starts at the argument's own alignment modulo 256 bytes (a vectorised path stays
// the path taken), so only the bytes before an argument's start, less than 256, are not
// checked. Throws BadRequest when an argument cannot be mapped or copied.
void prepare_exact_call(const wire::Request& request) {
  ExactCall& exact = exact_call();
  std::fill(std::begin(exact.pointer), std::end(exact.pointer), nullptr);
  exact.copies.clear();
  exact.active = true;
  struct Span {
    int index;
    char* start;
    std::uint64_t bytes;
  };
  std::vector<Span> spans;
  const std::uint32_t nargs = std::min<std::uint32_t>(request.nargs, wire::kMaxArgs);
  for (std::uint32_t i = 0; i < nargs; ++i) {
    const wire::Arg& arg = request.args[i];
    if (arg.kind != wire::ArgKind::Device) continue;
    if (arg.extent > kMaxExactBytes) throw BadRequest("an argument's extent is out of range");
    spans.push_back({static_cast<int>(i), static_cast<char*>(map_device_argument(arg)), arg.extent});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) {
    return x.start < y.start || (x.start == y.start && x.bytes > y.bytes);
  });
  std::vector<std::vector<Span>> groups;
  char* group_end = nullptr;
  for (const Span& span : spans) {
    const bool joins = !groups.empty() &&
                       (span.start < group_end || span.start == groups.back().front().start);
    if (!joins) {
      groups.emplace_back();
      group_end = span.start;
    }
    groups.back().push_back(span);
    group_end = std::max(group_end, span.start + span.bytes);
  }
  for (const auto& group : groups) {
    char* start = group.front().start;
    std::uint64_t bytes = 0;
    for (const Span& span : group) bytes = std::max<std::uint64_t>(bytes, span.start + span.bytes - start);
    ExactCopy copy;
    copy.mapped = start;
    copy.bytes = bytes;
    copy.pad = reinterpret_cast<std::uintptr_t>(start) % 256;
    void* own = nullptr;
    // At least one byte: an empty argument still gets a pointer of its own, and reading
    // anything through it is out of bounds.
    cudaError_t status = cudaMalloc(&own, copy.pad + std::max<std::uint64_t>(bytes, 1));
    if (status == cudaSuccess) {
      copy.own = static_cast<char*>(own);
      exact.copies.push_back(copy);
      if (bytes > 0) status = cudaMemcpy(copy.own + copy.pad, start, bytes, cudaMemcpyDeviceToDevice);
    }
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      throw BadRequest(std::string("--exact-bounds: cannot copy an argument (") + cudaGetErrorString(status) + ")");
    }
    for (const Span& span : group) exact.pointer[span.index] = copy.own + copy.pad + (span.start - start);
  }
}

// After the call's work is finished: copies every argument back to the judge's memory
// (unless the GPU context is lost) and frees the copies.
void finish_exact_call(wire::Reply& reply) {
  ExactCall& exact = exact_call();
  if (!exact.active) return;
  exact.active = false;
  cudaError_t status = cudaSuccess;
  if (reply.status != wire::Status::Fault) {
    for (const ExactCopy& copy : exact.copies) {
      if (status == cudaSuccess && copy.bytes > 0) {
        status = cudaMemcpy(copy.mapped, copy.own + copy.pad, copy.bytes, cudaMemcpyDeviceToDevice);
      }
    }
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
  }
  for (const ExactCopy& copy : exact.copies) (void)cudaFree(copy.own);
  exact.copies.clear();
  std::fill(std::begin(exact.pointer), std::end(exact.pointer), nullptr);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    if (reply.status == wire::Status::Ok) {
      reply.status = wire::Status::Error;
      set_message(reply, std::string("the worker could not copy the results back (--exact-bounds): ") +
                             cudaGetErrorString(status));
    }
  }
}

// --record-launches: the current call's kernel launches.
struct LaunchRecord {
  bool enabled = false;  // --record-launches
  bool active = false;   // between start_call_clock() and the call's return
  std::uint32_t total = 0;
  std::uint32_t kept = 0;
  wire::LaunchInfo launches[wire::kMaxLaunches];
};
LaunchRecord& launch_record() {
  static LaunchRecord record;
  return record;
}

void mix(std::uint64_t& digest, const unsigned char* bytes, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    digest ^= bytes[i];
    digest *= 1099511628211ull;  // FNV-1a
  }
}

// Whether a 64-bit argument word is an address CUDA knows (device, managed or host
// memory it allocated or registered), or one past the end of one.
bool is_cuda_address(std::uint64_t word) {
  for (const std::uint64_t address : {word, word - 1}) {
    if (address == 0 || address == ~std::uint64_t{0}) continue;
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, reinterpret_cast<const void*>(address)) == cudaSuccess &&
        attributes.type != cudaMemoryTypeUnregistered) {
      return true;
    }
  }
  return false;
}

// A digest of a launch's scalar argument values (1, 2, 4 or 8 bytes), every one that is an
// address left out: the same call on the same data gives the same digest in every run
// (0: not known, before CUDA 12.4, which can say how large each argument is). A larger
// argument, a struct passed by value, counts by its size alone: its padding bytes are
// whatever the host's stack held (they differ from run to run, more so under a tool),
// and the runtime does not say where they are.
std::uint64_t arguments_digest(const void* func, void** args) {
#if CUDART_VERSION < 12040
  (void)func;
  (void)args;
  return 0;
#else
  std::uint64_t digest = 1469598103934665603ull;
  for (std::size_t i = 0; i < 1024 && args != nullptr; ++i) {
    std::size_t offset = 0, size = 0;
    if (cudaFuncGetParamInfo(func, i, &offset, &size) != cudaSuccess) break;
    const auto* value = static_cast<const unsigned char*>(args[i]);
    if (value == nullptr) break;
    const std::uint64_t header[2] = {i, size};
    mix(digest, reinterpret_cast<const unsigned char*>(header), sizeof header);
    if (size != 1 && size != 2 && size != 4 && size != 8) continue;  // a struct: its size only (above)
    for (std::size_t b = 0; b < size;) {
      if (b % 8 == 0 && size - b >= 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, value + b, 8);
        if (is_cuda_address(word)) {
          const unsigned char mark[] = {'P'};
          mix(digest, mark, 1);
        } else {
          mix(digest, value + b, 8);
        }
        b += 8;
      } else {
        mix(digest, value + b, 1);
        b += 1;
      }
    }
  }
  return digest == 0 ? 1 : digest;
#endif
}

// The kernel's name: the runtime's (CUDA 12.3 and later), else where its host stub lies
// in its library ("libx.so+0x1f40"), which is the same in every run of the same library.
void kernel_name(const void* func, char* out, std::size_t size) {
#if CUDART_VERSION >= 12030
  const char* name = nullptr;
  if (cudaFuncGetName(&name, func) == cudaSuccess && name != nullptr) {
    std::snprintf(out, size, "%s", name);
    return;
  }
#endif
  Dl_info info{};
  if (dladdr(func, &info) != 0 && info.dli_fname != nullptr && info.dli_fbase != nullptr) {
    const char* file = std::strrchr(info.dli_fname, '/');
    std::snprintf(out, size, "%s+0x%llx", file != nullptr ? file + 1 : info.dli_fname,
                  static_cast<unsigned long long>(static_cast<const char*>(func) -
                                                  static_cast<const char*>(info.dli_fbase)));
    return;
  }
  std::snprintf(out, size, "%s", "?");
}

// Records one launch of the current call (after it was passed on to libcudart). The
// queries must not change what the implementation sees: they run only when no CUDA error
// is pending, and whatever error they raise is cleared again.
void record_launch(const void* func, dim3 grid, dim3 block, size_t shared_bytes, void** args) {
  LaunchRecord& record = launch_record();
  if (!record.active) return;
  ++record.total;
  if (record.kept >= static_cast<std::uint32_t>(wire::kMaxLaunches)) return;
  wire::LaunchInfo& info = record.launches[record.kept++];
  std::memset(&info, 0, sizeof info);
  info.grid[0] = grid.x, info.grid[1] = grid.y, info.grid[2] = grid.z;
  info.block[0] = block.x, info.block[1] = block.y, info.block[2] = block.z;
  info.shared_bytes = shared_bytes;
  const bool clean = cudaPeekAtLastError() == cudaSuccess;
  if (clean) {
    kernel_name(func, info.kernel, sizeof info.kernel);
  } else {
    std::snprintf(info.kernel, sizeof info.kernel, "%s", "?");
  }
  if (clean) {
    info.args_digest = arguments_digest(func, args);
    (void)cudaGetLastError();  // only what the queries raised: nothing was pending
  }
}

// How deep the current thread is inside launch entry points: libcudart may implement one
// with another, and a launch is recorded once, by the outermost.
int& launch_depth() {
  static thread_local int depth = 0;
  return depth;
}
template <class Call>
cudaError_t pass_on(Call call) {
  ++launch_depth();
  const cudaError_t status = call();
  --launch_depth();
  return status;
}

// libcudart's own launch entry points (lab::next_symbol: found past this program).
#if CUDART_VERSION >= 12000
using LaunchByHandle = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
// Absent from libcudart before nvcc's launches used it: then nothing calls it either.
LaunchByHandle next_launch_by_handle() {
  static const LaunchByHandle fn = next_symbol<LaunchByHandle>("__cudaLaunchKernel");
  return fn;
}
#endif
using LaunchByStub = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
LaunchByStub next_launch_kernel() {
  static const LaunchByStub fn = next_symbol<LaunchByStub>("cudaLaunchKernel");
  return fn;
}
LaunchByStub next_launch_cooperative() {
  static const LaunchByStub fn = next_symbol<LaunchByStub>("cudaLaunchCooperativeKernel");
  return fn;
}

__global__ void labkit_noop_kernel() {}

// --warm-copies: the worker's own device memory for the warm-up (made before the sandbox
// closes), and whether to warm up at all.
struct CopyWarmup {
  bool enabled = false;
  void* device = nullptr;
};
CopyWarmup& copy_warmup() {
  static CopyWarmup warmup;
  return warmup;
}
// As large as the workspace compact's single-pass calls zero before their kernel (one
// status word per tile of 4096 ints: 59 KB at 30,000,001 ints, 128 KB at 2^26).
constexpr std::size_t kWarmupMemsetBytes = std::size_t{128} << 10;

// Untimed, right before a timed call's lead: a memset and a synchronous 4-byte copy to a
// host variable, the operations compact's calls start and end with, so that neither is
// the first use of its engine by this process since the judge's or the other worker's
// turn. A failure costs only the warm-up: its error is cleared (nothing of the call has
// run yet, and the last call's errors were taken by finish_gpu_work).
void warm_copy_path() {
  const CopyWarmup& warmup = copy_warmup();
  if (!warmup.enabled || warmup.device == nullptr) return;
  int host = 0;
  cudaError_t status = cudaMemsetAsync(warmup.device, 0, kWarmupMemsetBytes, nullptr);
  if (status == cudaSuccess) status = cudaMemcpy(&host, warmup.device, sizeof host, cudaMemcpyDeviceToHost);
  if (status != cudaSuccess) (void)cudaGetLastError();
}

// The worker's clock for timed requests: two CUDA events around the call, recorded on
// the default stream exactly where a direct bench records its own (common/src/bench_sampling.cu),
// behind the same lead (lab/timing_lead.h), so that both time the same span: from when
// the GPU is ready to run the call to the end of the work it enqueued, on the default
// stream and on every stream of its own (the stop event waits for them: stream_fence.h).
// Created once, before the sandbox closes.
struct CallClock {
  cudaEvent_t start = nullptr, stop = nullptr;
  bool pending = false;  // a timed call whose start event start_call_clock() has not yet recorded
  bool started = false;  // the start event of the current call is recorded
  cudaError_t fence = cudaSuccess;  // why the stop event could not wait for the implementation's streams
};
CallClock& call_clock() {
  static CallClock clock;
  return clock;
}

// Arms the clock for one request (timed or not).
void arm_call_clock(const wire::Request& request) {
  CallClock& clock = call_clock();
  clock.pending = request.timed != 0 && clock.start != nullptr;
  clock.started = false;
  clock.fence = cudaSuccess;
}

// Records the stop event after the call, behind all the work of the implementation's own
// streams (stream_fence.h); a no-op for an untimed request. When the fence fails the call
// has no time (fence_problem() says why).
void stop_call_clock() {
  CallClock& clock = call_clock();
  if (!clock.started) return;
  clock.fence = lab::streams::wait_for_streams();
  if (clock.fence != cudaSuccess) {
    clock.started = false;
    return;
  }
  (void)cudaEventRecord(clock.stop, nullptr);
}

// After the call's work is finished (finish_gpu_work): a call that tried to have more
// streams than the timer follows, or whose streams the stop event could not wait for,
// fails, unless it already failed with its own fault.
void fence_problem(wire::Reply& reply) {
  std::string problem;
  if (lab::streams::take_refused()) {
    problem = lab::streams::kTooManyStreams;
  } else if (call_clock().fence != cudaSuccess) {
    problem = std::string("the timer could not wait for the streams your code created: ") +
              cudaGetErrorName(call_clock().fence) + " (" + cudaGetErrorString(call_clock().fence) + ")";
  }
  if (problem.empty() || reply.status == wire::Status::Fault || reply.status == wire::Status::BadRequest) return;
  const bool had_message = reply.status != wire::Status::Ok && reply.message[0] != '\0';
  set_message(reply, had_message ? problem + "; " + reply.message : problem);
  reply.status = wire::Status::Error;
}

// The timed call's time once its work is finished (after finish_gpu_work), or -1.
double call_clock_ms() {
  CallClock& clock = call_clock();
  float ms = -1.0f;
  if (!clock.started || cudaEventElapsedTime(&ms, clock.start, clock.stop) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1.0;
  }
  return ms;
}

// Waits for the next request: spins while the judge times calls, else sleeps soon.
std::uint32_t wait_request(wire::Channel* channel, std::uint32_t seen) {
  for (int spins = 0;; ++spins) {
    const std::uint32_t seq = channel->request_seq.load(std::memory_order_acquire);
    if (seq != seen) return seq;
    if (channel->hot.load(std::memory_order_relaxed) != 0 || spins < 20000) {
      relax();
    } else {
      futex_wait(&channel->request_seq, seen, 100 * 1000 * 1000);
    }
    // The judge is gone: nothing will come any more (PR_SET_PDEATHSIG usually ends us first).
    if ((spins & 0xffff) == 0 && getppid() == 1) std::exit(0);
  }
}

void set_message(wire::Reply& reply, const std::string& text) {
  std::snprintf(reply.message, sizeof reply.message, "%s", text.c_str());
}

// After a call: wait for the whole device, then report a fault or an unchecked launch error.
void finish_gpu_work(wire::Reply& reply, const char* what) {
  cudaError_t status = cudaDeviceSynchronize();
  if (status == cudaSuccess) {
    status = cudaGetLastError();  // reads and clears the runtime's record of the last error
    // A function that returns a CUDA status (a host program's cudaMalloc failed, say) and
    // returned an error has reported it: the runtime's record of it is no unchecked launch.
    if (status != cudaSuccess && returned_error()) return;
  }
  if (status == cudaSuccess) return;
  // Sticky errors (an illegal address, a failed launch) fail every later call: the context is lost.
  const bool lost = cudaDeviceSynchronize() != cudaSuccess;
  (void)cudaGetLastError();
  std::string message = reply.status == wire::Status::Ok ? "" : std::string(reply.message) + "; ";
  message += std::string("CUDA error ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ") after " + what;
  if (lost) {
    message += ": the GPU context of the worker process is lost, so the next call runs in a new one";
  } else {
    message += ": a kernel launch failed and nothing checked it (put LAB_CHECK_LAUNCH() after each launch), or "
               "a CUDA call failed and its error was ignored";
  }
  reply.status = lost ? wire::Status::Fault : wire::Status::Error;
  set_message(reply, message);
}

struct Args {
  std::string impl;
  int device = 0;
  long parent = 0;
  bool sandbox = true;
  bool exact_bounds = false;     // the sanitizer's runs: arguments of exactly their extent
  bool record_launches = false;  // send each call's kernel launches with the reply
  bool warm_copies = false;      // warm the copy path before each timed call (the judge asks for it)
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "labkit worker: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--impl") a.impl = value();
    else if (arg == "--device") a.device = std::atoi(value().c_str());
    else if (arg == "--parent") a.parent = std::atol(value().c_str());
    else if (arg == "--no-sandbox") a.sandbox = false;
    else if (arg == "--exact-bounds") a.exact_bounds = true;
    else if (arg == "--record-launches") a.record_launches = true;
    else if (arg == "--warm-copies") a.warm_copies = true;
    else {
      std::fprintf(stderr,
                   "labkit worker: unknown argument '%s'. This program is started by the grader's judge programs "
                   "(<lab>_judge_test, <lab>_judge_bench), not by hand.\n",
                   arg.c_str());
      std::exit(2);
    }
  }
  if (a.impl.empty()) {
    std::fprintf(stderr, "labkit worker: --impl LIBRARY is required (started by the judge programs only)\n");
    std::exit(2);
  }
  return a;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

void list_variants(const VariantRegistry& registry, wire::Reply& reply) {
  reply.nvariants = 0;
  for (const Variant& v : registry.all()) {
    if (reply.nvariants == wire::kMaxVariants) break;
    wire::VariantInfo& info = reply.variants[reply.nvariants++];
    std::snprintf(info.function, sizeof info.function, "%s", v.function.c_str());
    std::snprintf(info.name, sizeof info.name, "%s", v.name.c_str());
    std::snprintf(info.description, sizeof info.description, "%s", v.description.c_str());
  }
}

}  // namespace

InvokerRegistrar::InvokerRegistrar(const char* function, Invoker invoker) { invokers()[function] = invoker; }

WorkerLabRegistrar::WorkerLabRegistrar(const char* lab) { worker_lab() = lab; }

void* open_host_argument(const wire::Arg& arg) {
  const HostArena& arena = host_arena();
  if (arena.base == nullptr) throw BadRequest("a host argument, but this worker has no host arena");
  // Offset == size is the end of the arena: a pointer one past a buffer, never dereferenced.
  if (arg.offset > arena.bytes) throw BadRequest("a host argument outside the host arena");
  return arena.base + arg.offset;
}

void note_returned_error() { returned_error() = true; }

void start_call_clock() {
  CallClock& clock = call_clock();
  if (clock.pending) {
    clock.pending = false;
    warm_copy_path();                 // --warm-copies (the judge's default)
    (void)lab::launch_timing_lead();  // as a direct bench does (lab/timing_lead.h)
    clock.started = cudaEventRecord(clock.start, nullptr) == cudaSuccess;
  }
  LaunchRecord& record = launch_record();
  if (record.enabled) {  // from here on, every launch is the implementation's
    record.active = true;
    record.total = record.kept = 0;
  }
}

// The judge's buffer an argument names, mapped into this process (IPC), plus its offset.
void* map_device_argument(const wire::Arg& arg) {
  for (Mapping& m : mappings()) {
    if (std::memcmp(&m.handle, &arg.handle, sizeof m.handle) == 0) {
      m.used = true;
      return static_cast<char*>(m.base) + arg.offset;
    }
  }
  void* base = nullptr;
  cudaError_t status = cudaIpcOpenMemHandle(&base, arg.handle, cudaIpcMemLazyEnablePeerAccess);
  if (status == cudaErrorAlreadyMapped) {
    // A mapping kept from the last call still holds memory that the judge has freed since
    // and allocated again (a new handle for the same range): close the ones this call has
    // not used, then map again.
    (void)cudaGetLastError();
    close_unused_mappings(true);
    status = cudaIpcOpenMemHandle(&base, arg.handle, cudaIpcMemLazyEnablePeerAccess);
  }
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw BadRequest(std::string("cannot map a buffer of the judge (") + cudaGetErrorString(status) + ")");
  }
  mappings().push_back({arg.handle, base, true});
  return static_cast<char*>(base) + arg.offset;
}

void* open_device_argument(const wire::Arg& arg, int index) {
  const ExactCall& exact = exact_call();
  if (exact.active && index >= 0 && index < wire::kMaxArgs && exact.pointer[index] != nullptr) {
    return exact.pointer[index];
  }
  return map_device_argument(arg);
}

// The channel to the judge (fd wire::kChannelFd), mapped and checked; nullptr after saying why.
wire::Channel* open_channel() {
  void* memory = mmap(nullptr, sizeof(wire::Channel), PROT_READ | PROT_WRITE, MAP_SHARED, wire::kChannelFd, 0);
  if (memory == MAP_FAILED) {
    std::fprintf(stderr, "labkit worker: no channel at fd %d: started by hand? It is started by the judge programs.\n",
                 wire::kChannelFd);
    return nullptr;
  }
  auto* channel = static_cast<wire::Channel*>(memory);
  if (channel->magic != wire::kMagic || channel->version != wire::kVersion) {
    std::fprintf(stderr, "labkit worker: the judge speaks another version of the channel: rebuild the kit\n");
    return nullptr;
  }
  return channel;
}

// Before the sandbox closes: streams of every priority the device has, each with a kernel
// on it, made and destroyed again, so that whatever the driver sets up for a stream (the
// queues that streams share) exists before an implementation creates streams of its own
// inside the sandbox. Nothing depends on it: a failure is cleared and forgotten.
void warm_streams() {
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) least = greatest = 0;
  std::vector<cudaStream_t> streams;
  for (int i = 0; i < 8; ++i) {  // as many as the device's default number of queues
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, i % 2 == 0 ? cudaStreamNonBlocking : cudaStreamDefault) == cudaSuccess) {
      streams.push_back(stream);
    }
  }
  for (int priority = greatest; priority <= least && priority - greatest < 16; ++priority) {
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority) == cudaSuccess) {
      streams.push_back(stream);
    }
  }
  for (cudaStream_t stream : streams) labkit_noop_kernel<<<1, 1, 0, stream>>>();
  (void)cudaDeviceSynchronize();
  for (cudaStream_t stream : streams) (void)cudaStreamDestroy(stream);
  (void)cudaDeviceSynchronize();
  (void)cudaGetLastError();
}

// The CUDA context, the call clock's events and the launch record, made before the
// sandbox closes; returns what went wrong ("" when nothing did; `startup_error` is kept
// when it already says something).
std::string start_gpu(const Args& args, std::string startup_error) {
  // Spin while waiting for the GPU: the judge's clock runs until the worker notices its
  // work is done, and a sleeping wait adds tens of microseconds, more after long kernels.
  // LABKIT_GPU_WAIT (passed on by the judge) may choose otherwise, e.g. for tests.
  lab::apply_gpu_wait(cudaDeviceScheduleSpin);  // where it fails, so does the next call, and says why
  cudaError_t status = cudaSetDevice(args.device);
  if (status == cudaSuccess) status = cudaFree(nullptr);  // creates the context before the sandbox closes
  if (status == cudaSuccess) status = cudaEventCreate(&call_clock().start);
  if (status == cudaSuccess) status = cudaEventCreate(&call_clock().stop);
  if (status == cudaSuccess) {  // the events of the fence over the implementation's streams
    const cudaError_t fence = lab::streams::prepare_stream_fence();
    if (fence == cudaErrorSharedObjectSymbolNotFound) {
      if (startup_error.empty()) startup_error = "the worker cannot find libcudart's stream functions: rebuild the kit";
    } else {
      status = fence;
    }
  }
  if (status == cudaSuccess) warm_streams();
  if (status == cudaSuccess && args.warm_copies) {
    status = cudaMalloc(&copy_warmup().device, kWarmupMemsetBytes);
    copy_warmup().enabled = status == cudaSuccess;
  }
  exact_call().enabled = args.exact_bounds;
  launch_record().enabled = args.record_launches;
  if (next_launch_kernel() == nullptr || next_launch_cooperative() == nullptr) {
    if (startup_error.empty()) startup_error = "the worker cannot find libcudart's launch functions: rebuild the kit";
  }
  if (status != cudaSuccess && startup_error.empty()) {
    startup_error = std::string("the worker could not use the GPU: ") + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")";
  }
  return startup_error;
}

// The reply's fields, reset before each request.
void clear_reply(wire::Reply& reply) {
  reply.status = wire::Status::Ok;
  returned_error() = false;
  reply.message[0] = '\0';
  reply.nvariants = 0;
  reply.elapsed_ms = -1.0;
  reply.nlaunches = reply.launches_total = 0;
  std::memset(reply.value, 0, sizeof reply.value);
}

// Op::Load: the implementation library, then the sandbox's second stage. False: the
// worker exits after its reply.
bool serve_load(const Args& args, const VariantRegistry*& registry, wire::Reply& reply) {
  std::string error;
  registry = load_variant_library(args.impl, "the implementation library", &error);
  if (registry == nullptr) {
    reply.status = wire::Status::Error;
    set_message(reply, error);
    return false;
  }
  list_variants(*registry, reply);
  std::string stage_two = args.sandbox ? sandbox_after_load() : "";
  set_message(reply, stage_two);
  return true;
}

// Op::Call: one call of the implementation, timed by the worker's clock when asked.
void serve_call(const VariantRegistry* registry, const wire::Request& request, wire::Reply& reply) {
  char what[2 * wire::kNameBytes + 16];
  std::snprintf(what, sizeof what, "%.*s (variant %.*s)", wire::kNameBytes, request.function, wire::kNameBytes,
                request.variant);
  auto found = invokers().find(std::string(request.function, strnlen(request.function, wire::kNameBytes)));
  try {
    if (registry == nullptr) throw BadRequest("no implementation library is loaded");
    if (found == invokers().end()) throw BadRequest(std::string("this worker has no interface function ") + what);
    launch_record().total = launch_record().kept = 0;  // nothing of an earlier call
    if (exact_call().enabled) prepare_exact_call(request);
    found->second(*registry, request, reply);  // starts the clock once the arguments are decoded
    launch_record().active = false;
    stop_call_clock();
  } catch (const BadRequest& e) {
    reply.status = wire::Status::BadRequest;
    set_message(reply, e.what());
  } catch (const std::exception& e) {
    reply.status = wire::Status::Error;
    set_message(reply, e.what());
  } catch (...) {
    reply.status = wire::Status::Error;
    set_message(reply, std::string("an exception that is not a std::exception left ") + what);
  }
  launch_record().active = false;
  finish_gpu_work(reply, what);
  finish_exact_call(reply);
  fence_problem(reply);
  if (reply.status == wire::Status::Ok) reply.elapsed_ms = call_clock_ms();
  if (launch_record().enabled) {
    const LaunchRecord& record = launch_record();
    reply.launches_total = record.total;
    reply.nlaunches = record.kept;
    std::memcpy(reply.launches, record.launches, sizeof(wire::LaunchInfo) * record.kept);
  }
  close_unused_mappings();
}

// Op::Noop: the judge's empty request (the boundary's calibration), timed like a call.
void serve_noop(wire::Reply& reply) {
  start_call_clock();
  labkit_noop_kernel<<<1, 1>>>();
  launch_record().active = false;  // the worker's own kernel: never reported
  stop_call_clock();
  finish_gpu_work(reply, "the judge's empty kernel");
  fence_problem(reply);
  if (reply.status == wire::Status::Ok) reply.elapsed_ms = call_clock_ms();
  close_unused_mappings();
}

int worker_main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (args.parent != 0 && getppid() != args.parent) return 0;  // the judge is already gone
  for (int fd = wire::kArenaFd + 1; fd < 4096; ++fd) close(fd);  // nothing inherited but the channel, arena and log
  wire::Channel* channel = open_channel();
  if (channel == nullptr) return 2;
  std::string startup_error = map_host_arena();
  limit_process();
  startup_error = start_gpu(args, startup_error);
  std::string report = "worker for " + worker_lab() + ", pid " + std::to_string(getpid()) + "\n";
  if (args.sandbox) {
    SandboxPlan plan;
    plan.readable.push_back(folder_of(args.impl));
    report += sandbox_before_load(plan);
  } else {
    report += "sandbox: off (--no-sandbox)\n";
  }
  if (copy_warmup().enabled) {
    report += "copy warm-up before each timed call: on\n";
  } else {
    report += args.warm_copies ? "copy warm-up before each timed call: off (its memory could not be allocated)\n"
                               : "copy warm-up before each timed call: off (the judge's --cold-copies, a diagnostic)\n";
  }

  const VariantRegistry* registry = nullptr;
  std::uint32_t seen = 0;
  for (;;) {
    seen = wait_request(channel, seen);
    const wire::Request& request = channel->request;
    wire::Reply& reply = channel->reply;
    clear_reply(reply);
    arm_call_clock(request);
    bool exit_after_reply = false;
    switch (request.op) {
      case wire::Op::Hello:
        set_message(reply, report);
        if (!startup_error.empty()) {
          reply.status = wire::Status::Error;
          set_message(reply, startup_error);
          exit_after_reply = true;
        }
        break;
      case wire::Op::Load:
        exit_after_reply = !serve_load(args, registry, reply);
        break;
      case wire::Op::Call:
        serve_call(registry, request, reply);
        exit_after_reply = reply.status == wire::Status::Fault;
        break;
      case wire::Op::Noop:
        serve_noop(reply);
        exit_after_reply = reply.status == wire::Status::Fault;
        break;
      case wire::Op::Quit:
        exit_after_reply = true;
        break;
      default:
        reply.status = wire::Status::BadRequest;
        set_message(reply, "unknown request");
        break;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    channel->reply_seq.store(seen, std::memory_order_release);
    futex_wake(&channel->reply_seq);
    if (exit_after_reply) _exit(reply.status == wire::Status::Fault ? 3 : 0);
  }
}

}  // namespace lab::judge

// The CUDA runtime's launch entry points, defined here and exported (cmake/LabKit.cmake:
// --export-dynamic-symbol), so that the implementation library's launches, which it takes
// from libcudart.so, come here first: each is passed on unchanged, then recorded when the
// worker records launches (--record-launches). `<<<...>>>` calls __cudaLaunchKernel. They
// are visible (the kit builds with hidden visibility), or nothing could bind to them.
#if CUDART_VERSION >= 12000
extern "C" __attribute__((visibility("default"))) cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                                    size_t shared_bytes, cudaStream_t stream) {
  const auto next = lab::judge::next_launch_by_handle();
  if (next == nullptr) return cudaErrorNotSupported;
  const cudaError_t status = lab::judge::pass_on([&] { return next(kernel, grid, block, args, shared_bytes, stream); });
  if (lab::judge::launch_depth() == 0) lab::judge::record_launch(reinterpret_cast<const void*>(kernel), grid, block, shared_bytes, args);
  return status;
}
#endif

extern "C" __attribute__((visibility("default"))) cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                                  size_t shared_bytes, cudaStream_t stream) {
  const auto next = lab::judge::next_launch_kernel();
  if (next == nullptr) return cudaErrorNotSupported;
  const cudaError_t status = lab::judge::pass_on([&] { return next(func, grid, block, args, shared_bytes, stream); });
  if (lab::judge::launch_depth() == 0) lab::judge::record_launch(func, grid, block, shared_bytes, args);
  return status;
}

extern "C" __attribute__((visibility("default"))) cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args,
                                                             size_t shared_bytes, cudaStream_t stream) {
  const auto next = lab::judge::next_launch_cooperative();
  if (next == nullptr) return cudaErrorNotSupported;
  const cudaError_t status = lab::judge::pass_on([&] { return next(func, grid, block, args, shared_bytes, stream); });
  if (lab::judge::launch_depth() == 0) lab::judge::record_launch(func, grid, block, shared_bytes, args);
  return status;
}

int main(int argc, char** argv) { return lab::judge::worker_main(argc, argv); }
