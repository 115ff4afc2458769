// Provided by the kit. The judge's side of the trust boundary: the worker processes that
// run the code under test, the proxies' calls into them, and timing across the boundary.
//
// Timing. CUDA events of one process cannot time another's work (an event shared
// between processes must have timing disabled), and nothing the worker says can be
// trusted: code in the worker could say "done" while its kernels still run, or write
// any number. Two clocks are kept:
//  - the judge's own, which the worker cannot touch: from the harness's start event to
//    a *fence*, an empty kernel the judge launches once the worker has answered.
//    Contexts of different processes take turns on the GPU, so the fence runs only once
//    the worker's context has let go of the GPU: when its work is finished, or when its
//    time slice is over (then the work is unfinished, and the output check that follows
//    finds it so: see hold_gpu). This clock includes the boundary's own cost (the
//    hand-over and two context switches, about 0.3 ms on an H100, which varies by some
//    microseconds with what ran before);
//  - the worker's clock stamps: two CUDA events that the worker program records just
//    before and just after the call, exactly where a direct bench records its own, and
//    whose elapsed time it sends back with its reply.
// The stamps' time is the call's time when the judge's clock agrees: it may exceed the
// stamps by no more than the boundary's cost as calibrated with empty requests. That cost
// is calibrated twice, and each call held to the one for what the judge forwarded just
// before it: a call after the same worker's, and the first a worker serves after the other
// worker's calls (each round of a workload starts each worker so), which costs some
// microseconds more, as that worker's context comes back to the GPU.
// Otherwise the sample is flagged and timed by the judge's clock minus that bound, so
// that forged stamps gain at most the calibration's spread.
//
// Host memory. Interface functions that take host pointers (a host program, such as
// vectorAdd's vector_add_host) get them from lab::HostBuffer, whose memory in a judge
// program comes from the host arena: one memfd of wire::kHostArenaBytes, mapped here and,
// at each worker's start, passed to the worker, which maps it before its sandbox closes.
// A host pointer into the arena crosses as its offset; any other host pointer is refused
// with a message. The arena's bookkeeping stays in the judge's own memory (the worker can
// write every byte of the arena), and its size is sealed (the worker cannot shrink it
// and so fault the judge).
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/cuda_check.h"
#include "lab/judge/proxy.h"
#include "lab/padding.h"
#include "../wire/spin.h"
#include "lab/remote.h"
#include "lab/timing_lead.h"

extern char** environ;

namespace lab::judge {
namespace {

using Clock = std::chrono::steady_clock;

// Limits of one worker.
constexpr double kStartupTimeoutS = 180;      // CUDA context + sandbox + library (slow under a sanitizer)
constexpr int kMaxStarts = 40;                // restarts after faults, then calls fail without running
constexpr double kHoldNs = 200e3;             // hold_gpu(): longer than the host needs to enqueue a check
constexpr std::size_t kDefaultMaxRssMb = 16384;

struct LabInfo {
  std::string lab, worker, student, reference;
};
LabInfo& lab_info() {
  static LabInfo info;
  return info;
}

std::map<std::string, SlotBinder>& binders() {
  static std::map<std::string, SlotBinder> table;
  return table;
}

__global__ void labkit_fence_kernel() {}

std::string bounded(const char* text, std::size_t size) { return std::string(text, strnlen(text, size)); }

// A memfd whose size no process can change any more: a process that maps it (the worker)
// cannot truncate it under the other's mapping, which would fault the judge (SIGBUS).
int sealed_memfd(const char* name, std::uint64_t bytes) {
  const int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// The host arena (see the top of this file): first-fit blocks of whole pages.
class HostArena {
 public:
  static constexpr std::uint64_t kPage = 4096;

  /// The arena's file, for a worker's start (creates the arena on first use).
  int fd() {
    std::lock_guard<std::mutex> lock(m_mutex);
    ensure();
    return m_fd;
  }

  void* allocate(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(m_mutex);
    ensure();
    const bool too_large = bytes > wire::kHostArenaBytes;
    const std::uint64_t need = too_large ? 0 : (std::max<std::uint64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
    std::uint64_t start = 0, in_use = 0;  // first fit: the first gap between blocks, else after the last
    bool found = false;
    for (const auto& [offset, size] : m_blocks) {
      if (!found && offset - start >= need) found = true;
      if (!found) start = offset + size;
      in_use += size;
    }
    if (too_large || (!found && wire::kHostArenaBytes - start < need)) {
      throw std::length_error("lab::HostBuffer of " + mib(bytes) + " does not fit: in the grader's judge programs "
                              "every HostBuffer lives in a host arena of " + mib(wire::kHostArenaBytes) +
                              " shared with the worker process, and " + mib(in_use) +
                              " of it are in use; use smaller host buffers or free some first");
    }
    m_blocks[start] = need;
    return m_base + start;
  }

  void release(void* pointer) noexcept {
    std::lock_guard<std::mutex> lock(m_mutex);
    const auto block = m_blocks.find(static_cast<std::uint64_t>(static_cast<char*>(pointer) - m_base));
    if (pointer == nullptr || m_base == nullptr || block == m_blocks.end()) return;
    // Give the pages back: the arena then costs what its live buffers hold, and a new
    // buffer starts as zeros, not as an earlier test's data.
    (void)fallocate(m_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(block->first),
                    static_cast<off_t>(block->second));
    m_blocks.erase(block);
  }

  /// Whether `pointer` lies in the arena (its end included), and at which offset.
  bool contains(const void* pointer, std::uint64_t* offset) const {
    const char* p = static_cast<const char*>(pointer);
    if (m_base == nullptr || p < m_base || p > m_base + wire::kHostArenaBytes) return false;
    *offset = static_cast<std::uint64_t>(p - m_base);
    return true;
  }

 private:
  void ensure() {
    if (m_base != nullptr) return;
    int fd = sealed_memfd("labkit-host-arena", wire::kHostArenaBytes);
    // Well above the numbers a worker's start dup2()s onto (wire::kChannelFd, kArenaFd).
    const int moved = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 16) : -1;
    if (fd >= 0) close(fd);
    fd = moved;
    void* memory = fd >= 0 ? mmap(nullptr, wire::kHostArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                           : MAP_FAILED;
    if (memory == MAP_FAILED) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) close(fd);
      throw std::runtime_error("cannot create the judge's host arena (lab::HostBuffer memory): " + why);
    }
    m_fd = fd;
    m_base = static_cast<char*>(memory);
  }

  std::mutex m_mutex;
  int m_fd = -1;
  char* m_base = nullptr;
  std::map<std::uint64_t, std::uint64_t> m_blocks;  // offset -> bytes, in the judge's own memory
};

HostArena& host_arena() {
  static HostArena* arena = new HostArena();  // never destroyed: HostBuffers may outlive static destructors
  return *arena;
}

// Whether `pointer` lies in a readable mapping of this process (host memory).
bool readable_host_memory(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    char* end = nullptr;
    const std::uintptr_t start = std::strtoull(line.c_str(), &end, 16);
    if (end == nullptr || *end != '-') continue;
    const std::uintptr_t stop = std::strtoull(end + 1, &end, 16);
    if (address >= start && address < stop) return end != nullptr && end[0] == ' ' && end[1] == 'r';
  }
  return false;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    static const std::map<int, const char*> names = {{SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
                                                     {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"},
                                                     {SIGSYS, "SIGSYS"},   {SIGTERM, "SIGTERM"}, {SIGXFSZ, "SIGXFSZ"}};
    const auto name = names.find(sig);
    std::string what = "was killed by " + (name != names.end() ? std::string(name->second) : "signal " + std::to_string(sig));
    if (sig == SIGSEGV) what += " (a host-side invalid memory access, often a device pointer used on the host)";
    if (sig == SIGABRT) what += " (an abort: an uncaught exception or a failed assertion)";
    if (sig == SIGSYS) what += " (a system call the sandbox refuses)";
    return what;
  }
  return "ended";
}

// Environment of a worker: what CUDA, its tools (compute-sanitizer) and the grader's
// process tracking need, nothing else.
std::vector<std::string> worker_environment(bool sync_launches) {
  static const char* const kPrefixes[] = {"CUDA_", "NV_", "NVIDIA_", "NVTX_", "COMPUTE_SANITIZER", "LD_LIBRARY_PATH=",
                                          "LD_PRELOAD=", "LABKIT_RUN_IDS=", "TMPDIR=", "PATH=", "HOME="};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    for (const char* prefix : kPrefixes) {
      if (std::strncmp(*e, prefix, std::strlen(prefix)) == 0) {
        env.emplace_back(*e);
        break;
      }
    }
  }
  if (sync_launches) {  // a test's worker: how to wait for the GPU may be chosen (lab/device.h)
    env.emplace_back("LABKIT_SYNC_LAUNCHES=1");
    if (const char* wait = std::getenv("LABKIT_GPU_WAIT")) env.emplace_back(std::string("LABKIT_GPU_WAIT=") + wait);
  }
  return env;
}

std::size_t max_rss_bytes() {
  const char* text = std::getenv("LABKIT_WORKER_MAX_RSS_MB");
  const std::size_t mb = text != nullptr && std::atoll(text) > 0 ? static_cast<std::size_t>(std::atoll(text))
                                                                  : kDefaultMaxRssMb;
  return mb << 20;
}

std::size_t resident_bytes(pid_t pid) {
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  std::size_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// One worker process and its channel.
class Worker {
 public:
  Worker(std::string role_name) : m_role(std::move(role_name)) {}
  ~Worker() { stop(); }

  void configure(const std::string& worker, const std::string& library, const RemoteOptions& options) {
    m_worker = worker;
    m_library = library;
    m_options = options;
  }
  bool configured() const { return !m_library.empty(); }
  const std::string& library() const { return m_library; }
  const std::vector<wire::VariantInfo>& variants() const { return m_variants; }
  const std::string& report() const { return m_report; }
  int starts() const { return m_starts; }
  // What a call costs at the boundary beyond its stamps, as a rule (the calibration's
  // median) and at most: after this worker's own call, and after the other worker's.
  struct Cost {
    double gap_ms = 0.0, bound_ms = 0.0;
  };
  Cost after_own, after_other;

  void set_hot(bool on) {
    m_hot = on;
    if (m_channel != nullptr) m_channel->hot.store(on ? 1 : 0, std::memory_order_relaxed);
  }

  /// Starts the worker if it is not running; throws std::runtime_error when it cannot.
  void ensure_started() {
    if (m_pid > 0) return;
    if (!m_unusable.empty()) throw std::runtime_error(m_unusable);
    if (m_starts >= kMaxStarts) {
      throw std::runtime_error("the " + m_role + " worker was restarted " + std::to_string(kMaxStarts) +
                               " times after faults; later calls fail without running");
    }
    ++m_starts;
    start();
  }

  /// One request; the reply is copied to `reply`. `fence` launches the judge's fence
  /// kernel as soon as the worker has answered (timing).
  void call(const wire::Request& request, wire::Reply& reply, bool fence, double timeout_s) {
    ensure_started();
    std::memcpy(&m_channel->request, &request, sizeof request);
    const std::uint32_t seq = m_channel->request_seq.load(std::memory_order_relaxed) + 1;
    m_channel->request_seq.store(seq, std::memory_order_release);
    futex_wake(&m_channel->request_seq);
    wait_reply(seq, request, timeout_s);
    if (fence) labkit_fence_kernel<<<1, 1>>>();
    copy_reply(reply, request.op == wire::Op::Load);
    if (reply.status == wire::Status::Fault) reap_after_fault();
  }

  void stop() {
    if (m_pid > 0) {
      kill(m_pid, SIGKILL);
      waitpid(m_pid, nullptr, 0);
      m_pid = -1;
    }
    if (m_channel != nullptr) {
      munmap(m_channel, sizeof(wire::Channel));
      m_channel = nullptr;
    }
  }

  /// The last lines of the worker's output (its log), for messages.
  std::string log_tail(std::size_t max_lines = 12) const {
    std::ifstream in(m_log);
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line)) {
      lines.push_back(line.substr(0, 300));
      if (lines.size() > max_lines) lines.erase(lines.begin());
    }
    std::string out;
    for (const auto& l : lines) out += "\n  | " + l;
    return out.empty() ? "" : "\nthe worker's last output:" + out;
  }

 private:
  void start() {
    if (m_channel != nullptr) {  // the last worker's
      munmap(m_channel, sizeof(wire::Channel));
      m_channel = nullptr;
    }
    const int arena = host_arena().fd();  // throws when it cannot be made
    const int fd = open_channel();
    const int log = open_log(fd);
    spawn(fd, arena, log);
    handshake();
  }

  // A new channel (a sealed memfd, mapped here); returns its file, which the worker gets.
  int open_channel() {
    const int fd = sealed_memfd("labkit-channel", sizeof(wire::Channel));
    if (fd < 0) {
      throw std::runtime_error("cannot create the worker's channel: " + std::string(std::strerror(errno)));
    }
    void* memory = mmap(nullptr, sizeof(wire::Channel), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) {
      close(fd);
      throw std::runtime_error("cannot map the worker's channel: " + std::string(std::strerror(errno)));
    }
    m_channel = new (memory) wire::Channel();
    m_channel->magic = wire::kMagic;
    m_channel->version = wire::kVersion;
    m_channel->hot.store(m_hot ? 1 : 0);
    return fd;
  }

  // The worker's log file in this judge's scratch folder (made once); -1 when it cannot
  // be opened. `channel` is closed on a failure that throws.
  int open_log(int channel) {
    if (m_scratch.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/labkit-worker-XXXXXX";
      std::vector<char> buffer(pattern.begin(), pattern.end());
      buffer.push_back('\0');
      if (mkdtemp(buffer.data()) == nullptr) {
        close(channel);
        throw std::runtime_error("cannot create a folder for the worker's log: " + std::string(std::strerror(errno)));
      }
      m_scratch = buffer.data();
    }
    m_log = m_scratch + "/" + m_role + ".log";
    return open(m_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  }

  // Starts the worker program with its fixed command line, the channel and the host
  // arena at their descriptors, its log as stdout and stderr; closes `fd` and `log`.
  void spawn(int fd, int arena, int log) {
    int device = 0;
    LAB_CUDA_CHECK(cudaGetDevice(&device));
    std::vector<std::string> args = {m_worker, "--impl", m_library, "--device", std::to_string(device), "--parent",
                                     std::to_string(getpid())};
    if (!m_options.sandbox) args.emplace_back("--no-sandbox");
    if (m_options.exact_bounds) args.emplace_back("--exact-bounds");
    if (!m_options.launch_log.empty()) args.emplace_back("--record-launches");
    if (m_options.warm_copies) args.emplace_back("--warm-copies");  // unless --cold-copies (RemoteOptions)
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env = worker_environment(m_options.sync_launches);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fd, wire::kChannelFd);
    posix_spawn_file_actions_adddup2(&actions, arena, wire::kArenaFd);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (log >= 0) {
      posix_spawn_file_actions_adddup2(&actions, log, 1);
      posix_spawn_file_actions_adddup2(&actions, log, 2);
    }
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, m_worker.c_str(), &actions, &attributes, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(fd);
    if (log >= 0) close(log);
    if (rc != 0) {
      m_unusable = "cannot start the worker program " + m_worker + ": " + std::strerror(rc) +
                   " (rebuild the lab: the grader builds <lab>_worker with the judge programs)";
      throw std::runtime_error(m_unusable);
    }
    m_pid = pid;
  }

  // Hello (the protections in force, before the library is loaded), then Load (the
  // library, its constructors sandboxed, and its variants).
  void handshake() {
    wire::Reply reply;
    try {
      // Hello: the sandbox in force, reported before the library is loaded.
      wire::Request hello{};
      hello.op = wire::Op::Hello;
      call(hello, reply, false, kStartupTimeoutS);
      if (reply.status != wire::Status::Ok) fail_start(bounded(reply.message, sizeof reply.message));
      m_report = bounded(reply.message, sizeof reply.message);
      verify_seccomp();
      // Load: the library (its constructors run now, sandboxed) and its variants.
      wire::Request load{};
      load.op = wire::Op::Load;
      call(load, reply, false, kStartupTimeoutS);
    } catch (const std::runtime_error& e) {
      if (!m_unusable.empty()) throw;
      fail_start(e.what());
    }
    if (reply.status != wire::Status::Ok) fail_start(bounded(reply.message, sizeof reply.message));
    m_report += bounded(reply.message, sizeof reply.message);
    m_variants.assign(reply.variants, reply.variants + std::min<std::uint32_t>(reply.nvariants, wire::kMaxVariants));
    for (auto& v : m_variants) {  // bounded: the worker is not trusted
      v.function[sizeof v.function - 1] = v.name[sizeof v.name - 1] = v.description[sizeof v.description - 1] = '\0';
    }
  }

  // The worker says which protections it applied; seccomp the judge can see for itself.
  // Also reported: the speculation mitigations the kernel applies to the worker, which on
  // some kernels follow from seccomp (spec_store_bypass_disable=seccomp) and slow its host
  // code down: a diagnostic of the timing's fairness (grader/tests/fairness_probe.py).
  void verify_seccomp() {
    std::ifstream status("/proc/" + std::to_string(m_pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Seccomp:", 0) == 0) {
        const bool filtered = line.find('2') != std::string::npos;
        m_report += std::string("seccomp as the judge sees it: ") + (filtered ? "filter mode" : "OFF") + "\n";
      } else if (line.rfind("Speculation_Store_Bypass:", 0) == 0 || line.rfind("SpeculationIndirectBranch:", 0) == 0) {
        const std::size_t colon = line.find(':');
        const std::size_t value = line.find_first_not_of(" \t", colon + 1);
        m_report += "speculation (" + line.substr(0, colon) + "): " +
                    (value == std::string::npos ? std::string("?") : line.substr(value, 80)) + "\n";
      }
    }
  }

  [[noreturn]] void fail_start(const std::string& why) {
    m_unusable = "the " + m_role + " worker could not start (" + m_library + "): " + why + log_tail();
    stop();
    throw std::runtime_error(m_unusable);
  }

  void wait_reply(std::uint32_t seq, const wire::Request& request, double timeout_s) {
    const auto start = Clock::now();
    // Spin (no system call between two looks) for a while: all the time when timing.
    const auto spin_until = start + std::chrono::microseconds(m_hot ? 1000000000LL : 200);
    auto next_check = start + std::chrono::milliseconds(1);
    const std::size_t max_rss = max_rss_bytes();
    for (;;) {
      for (int i = 0; i < 256; ++i) {
        if (m_channel->reply_seq.load(std::memory_order_acquire) == seq) return;
        relax();
      }
      const auto now = Clock::now();
      if (now >= spin_until) {
        futex_wait(&m_channel->reply_seq, m_channel->reply_seq.load(std::memory_order_relaxed), 2 * 1000 * 1000);
      }
      if (now < next_check) continue;
      next_check = now + std::chrono::milliseconds(5);
      if (m_channel->reply_seq.load(std::memory_order_acquire) == seq) return;
      const std::string what = describe(request);
      int status = 0;
      if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_pid = -1;
        throw std::runtime_error("the " + m_role + " worker process " + describe_exit(status) + " during " + what +
                                 (WIFEXITED(status) ? ": exit() or abort() in the implementation?" : "") + log_tail());
      }
      if (std::chrono::duration<double>(now - start).count() > timeout_s) {
        stop();
        std::ostringstream msg;
        msg << what << " did not return within " << timeout_s
            << " s: a deadlock (__syncthreads() in a branch some threads skip, a spin-wait no other block ever "
               "releases) or an infinite loop; the worker was stopped";
        throw std::runtime_error(msg.str() + log_tail());
      }
      if (resident_bytes(m_pid) > max_rss) {
        stop();
        throw std::runtime_error(what + " used more than " + std::to_string(max_rss >> 20) +
                                 " MiB of host memory; the worker was stopped");
      }
    }
  }

  static std::string describe(const wire::Request& request) {
    switch (request.op) {
      case wire::Op::Hello: return "the worker's start-up";
      case wire::Op::Load: return "loading the implementation library";
      case wire::Op::Noop: return "an empty request";
      case wire::Op::Quit: return "the worker's exit";
      case wire::Op::Call: break;
    }
    std::string what = bounded(request.function, sizeof request.function);
    const std::string variant = bounded(request.variant, sizeof request.variant);
    if (variant != "default") what += " (variant " + variant + ")";
    return what;
  }

  void copy_reply(wire::Reply& reply, bool with_variants) {
    const wire::Reply& in = m_channel->reply;
    reply.status = in.status;
    std::memcpy(reply.value, in.value, sizeof reply.value);
    std::memcpy(reply.message, in.message, sizeof reply.message);
    reply.elapsed_ms = in.elapsed_ms;
    reply.launches_total = in.launches_total;
    reply.nlaunches = std::min<std::uint32_t>(in.nlaunches, wire::kMaxLaunches);
    std::memcpy(reply.launches, in.launches, sizeof(wire::LaunchInfo) * reply.nlaunches);
    for (std::uint32_t i = 0; i < reply.nlaunches; ++i) {  // bounded: the worker is not trusted
      reply.launches[i].kernel[sizeof reply.launches[i].kernel - 1] = '\0';
    }
    reply.message[sizeof reply.message - 1] = '\0';
    reply.nvariants = 0;
    if (with_variants) {
      reply.nvariants = std::min<std::uint32_t>(in.nvariants, wire::kMaxVariants);
      std::memcpy(reply.variants, in.variants, sizeof(wire::VariantInfo) * reply.nvariants);
    }
    if (reply.status != wire::Status::Ok && reply.status != wire::Status::Error &&
        reply.status != wire::Status::Fault && reply.status != wire::Status::BadRequest) {
      reply.status = wire::Status::Error;
      std::snprintf(reply.message, sizeof reply.message, "the worker sent a malformed reply");
    }
  }

  void reap_after_fault() {
    if (m_pid > 0) {
      // The worker exits after a fault; give it a moment, then make sure.
      for (int i = 0; i < 200 && waitpid(m_pid, nullptr, WNOHANG) == 0; ++i) usleep(5000);
      stop();
    }
  }

  std::string m_role, m_worker, m_library, m_log, m_scratch, m_report, m_unusable;
  RemoteOptions m_options;
  std::vector<wire::VariantInfo> m_variants;
  wire::Channel* m_channel = nullptr;
  pid_t m_pid = -1;
  int m_starts = 0;
  bool m_hot = false;
};

// The judge's Remote: the workers of one judge program.
class JudgeRemote final : public Remote {
 public:
  void configure(const RemoteOptions& options) override {
    m_options = options;
    if (m_options.worker.empty()) m_options.worker = lab_info().worker;
    if (m_options.impl.empty()) m_options.impl = lab_info().student;
    m_student.configure(m_options.worker, m_options.impl, m_options);
    // The judge's memory holds the expected results: keep other processes of this user
    // (a worker among them) from reading it through /proc.
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  }

  std::string start_student() override {
    try {
      m_student.ensure_started();
    } catch (const std::exception& e) {
      return e.what();
    }
    for (const wire::VariantInfo& v : m_student.variants()) {
      if (std::string(v.name) == "default") continue;  // the proxy of the interface function itself
      auto binder = binders().find(v.function);
      if (binder == binders().end()) continue;
      AnyFunction fn = binder->second(Role::Student, v.function, v.name);
      if (fn != nullptr) local_variants().add({v.function, v.name, fn, v.description});
    }
    return "";
  }

  const VariantRegistry* load_reference(const std::string& path, std::string* error) override {
    RemoteOptions options = m_options;
    options.sync_launches = false;  // only the bench loads the reference, to time it
    options.exact_bounds = false;    // the student's code alone is checked and recorded
    options.launch_log.clear();
    m_reference.configure(m_options.worker, path, options);
    try {
      m_reference.ensure_started();
    } catch (const std::exception& e) {
      *error = e.what();
      return nullptr;
    }
    for (const wire::VariantInfo& v : m_reference.variants()) {
      auto binder = binders().find(v.function);
      if (binder == binders().end()) continue;
      AnyFunction fn = binder->second(Role::Reference, v.function, v.name);
      if (fn != nullptr) m_reference_registry.add({v.function, v.name, fn, v.description});
    }
    return &m_reference_registry;
  }

  void set_timing(bool on) override {
    m_timing = on;
    m_student.set_hot(on);
    m_reference.set_hot(on);
  }
  void begin_sample() override {
    m_sample = {};
    m_stamped_ms.clear();
  }
  RemoteSample end_sample() override { return m_sample; }
  RemoteStamps read_stamps() override {
    RemoteStamps out;
    if (m_sample.calls == 0 || m_stamped_ms.size() != static_cast<std::size_t>(m_sample.calls)) return out;
    out.valid = true;
    for (double ms : m_stamped_ms) {
      // NaN fails this test too: a worker's number is checked before it is believed.
      if (!(ms >= 0.0 && ms < 1e7)) out.valid = false;
      else out.ms += ms;
    }
    return out;
  }
  void hold_gpu() override { busy_wait_kernel<<<1, 1>>>(static_cast<unsigned long long>(kHoldNs)); }
  void noop(bool reference) override {
    wire::Request request{};
    request.op = wire::Op::Noop;
    wire::Reply reply;
    forward_to(reference ? m_reference : m_student, request, reply);
  }
  void set_boundary(bool reference, bool after_other, double gap_ms, double bound_ms) override {
    Worker& w = reference ? m_reference : m_student;
    (after_other ? w.after_other : w.after_own) = {gap_ms, bound_ms};
  }
  void* allocate_host(std::size_t bytes) override { return host_arena().allocate(bytes); }
  void free_host(void* pointer) noexcept override { host_arena().release(pointer); }

  std::string describe() const override {
    std::string out;
    for (const Worker* w : {&m_student, &m_reference}) {
      if (w->report().empty()) continue;
      out += (w == &m_student ? "student" : "reference");
      out += " worker (" + w->library() + "), started " + std::to_string(w->starts()) + " time(s):\n" + w->report();
    }
    return out;
  }

  void forward(Role role, const wire::Request& request, wire::Reply& reply) {
    Worker& w = role == Role::Reference ? m_reference : m_student;
    if (!w.configured()) {
      throw std::runtime_error(role == Role::Reference ? "no reference library was loaded"
                                                       : "no implementation library was given (--impl)");
    }
    if (&w != &m_student || m_options.launch_log.empty()) {
      forward_to(w, request, reply);
      return;
    }
    reply.status = wire::Status::BadRequest;  // until a reply is copied in: no launches to log
    reply.nlaunches = reply.launches_total = 0;
    try {
      forward_to(w, request, reply);
    } catch (...) {
      log_launches(request, reply, "failed");
      throw;
    }
    log_launches(request, reply, "ok");
  }

  bool exact_bounds() const { return m_options.exact_bounds; }

 private:
  // One JSON line per forwarded call of the student's worker (--launch-log): the call, how
  // it ended, and the kernel launches its reply lists (names bounded and made printable:
  // they come from the worker).
  void log_launches(const wire::Request& request, const wire::Reply& reply, const char* outcome) {
    if (m_launch_log == nullptr) {
      m_launch_log = std::fopen(m_options.launch_log.c_str(), "a");
      if (m_launch_log == nullptr) {
        throw std::runtime_error("cannot write the launch log " + m_options.launch_log + ": " + std::strerror(errno));
      }
    }
    const bool replied = reply.status == wire::Status::Ok || reply.status == wire::Status::Error ||
                         reply.status == wire::Status::Fault;
    std::string line = "{\"call\": " + std::to_string(++m_logged_calls) + ", \"function\": " +
                       json_text(bounded(request.function, sizeof request.function)) + ", \"variant\": " +
                       json_text(bounded(request.variant, sizeof request.variant)) + ", \"outcome\": \"" + outcome +
                       "\", \"total\": " + std::to_string(replied ? reply.launches_total : 0) + ", \"launches\": [";
    const std::uint32_t count = replied ? std::min<std::uint32_t>(reply.nlaunches, wire::kMaxLaunches) : 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      const wire::LaunchInfo& l = reply.launches[i];
      char digest[24];
      std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(l.args_digest));
      line += std::string(i ? ", " : "") + "{\"kernel\": " + json_text(bounded(l.kernel, sizeof l.kernel)) +
              ", \"grid\": [" + std::to_string(l.grid[0]) + ", " + std::to_string(l.grid[1]) + ", " +
              std::to_string(l.grid[2]) + "], \"block\": [" + std::to_string(l.block[0]) + ", " +
              std::to_string(l.block[1]) + ", " + std::to_string(l.block[2]) + "], \"shared\": " +
              std::to_string(l.shared_bytes) + ", \"args\": \"" + (l.args_digest ? digest : "") + "\"}";
    }
    line += "]}\n";
    std::fputs(line.c_str(), m_launch_log);
    std::fflush(m_launch_log);
  }

  // `text` as a JSON string: printable ASCII kept, quotes and backslashes escaped, the rest '?'.
  static std::string json_text(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else {
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
      }
    }
    return out + "\"";
  }

  void forward_to(Worker& w, const wire::Request& original, wire::Reply& reply) {
    const wire::Request* request = &original;
    wire::Request stamped;
    if (m_timing) {
      // The worker times the call with its own events and sends the time back.
      stamped = original;
      stamped.timed = 1;
      request = &stamped;
    }
    // The judge's own work on the buffers (uploads, poisoning) must be complete before
    // another process touches them.
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    // The first call a worker serves after the other worker's costs more at the boundary
    // (its context comes back to the GPU): it is held to the figures calibrated that way.
    const Worker::Cost& cost = m_last_served == &w ? w.after_own : w.after_other;
    m_last_served = &w;
    w.call(*request, reply, m_timing, m_options.call_timeout_s);
    if (m_timing) {
      m_stamped_ms.push_back(reply.elapsed_ms);
      ++m_sample.calls;
      m_sample.bound_ms += cost.bound_ms;
      m_sample.gap_ms += cost.gap_ms;
    }
    check_reply(w, reply);
  }

  // Throws for a reply that is not Ok, with its message (and the worker's log after a fault).
  static void check_reply(const Worker& w, const wire::Reply& reply) {
    const std::string message = bounded(reply.message, sizeof reply.message);
    switch (reply.status) {
      case wire::Status::Ok: return;
      case wire::Status::Fault: throw std::runtime_error(message + w.log_tail());
      case wire::Status::BadRequest: throw std::runtime_error("the judge's request was refused: " + message);
      case wire::Status::Error: break;
    }
    throw std::runtime_error(message);
  }

  RemoteOptions m_options;
  std::FILE* m_launch_log = nullptr;
  long m_logged_calls = 0;
  Worker m_student{"student"}, m_reference{"reference"};
  const Worker* m_last_served = nullptr;  // the worker the last forwarded call went to
  VariantRegistry m_reference_registry;
  bool m_timing = false;
  RemoteSample m_sample;
  std::vector<double> m_stamped_ms;  // the worker clock's time of each call of the sample (its replies)
};

// cuMemGetAddressRange of the driver API, looked up at run time: a judge program must
// start (and skip its GPU tests) on a machine without a driver, where libcuda is absent.
using AddressRange = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
AddressRange address_range() {
  static const AddressRange fn = []() -> AddressRange {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void* symbol = driver != nullptr ? dlsym(driver, "cuMemGetAddressRange_v2") : nullptr;
    if (symbol == nullptr) throw std::runtime_error("the judge cannot find cuMemGetAddressRange in libcuda.so.1");
    return reinterpret_cast<AddressRange>(symbol);
  }();
  return fn;
}

JudgeRemote& judge_remote() {
  static JudgeRemote* instance = new JudgeRemote();  // never destroyed: workers die with the judge (PDEATHSIG)
  return *instance;
}

}  // namespace

FunctionRegistrar::FunctionRegistrar(const char* function, SlotBinder binder) { binders()[function] = binder; }

LabRegistrar::LabRegistrar(const char* lab, const char* worker, const char* student, const char* reference) {
  lab_info() = {lab, worker, student, reference};
  install_remote(&judge_remote());
}

void begin_request(wire::Request& request, const char* function, const char* variant, std::uint32_t nargs) {
  std::memset(&request, 0, sizeof request);
  request.op = wire::Op::Call;
  std::snprintf(request.function, sizeof request.function, "%s", function);
  std::snprintf(request.variant, sizeof request.variant, "%s", variant);
  request.nargs = nargs;
}

void encode_pointer(wire::Arg& arg, const void* pointer, int index, const char* function) {
  if (pointer == nullptr) {
    arg.kind = wire::ArgKind::Null;
    return;
  }
  std::uint64_t arena_offset = 0;
  if (host_arena().contains(pointer, &arena_offset)) {
    // A lab::HostBuffer: the worker maps the same arena.
    arg.kind = wire::ArgKind::Host;
    arg.offset = arena_offset;
    return;
  }
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (address_range()(&base, &size, reinterpret_cast<CUdeviceptr>(pointer)) != CUDA_SUCCESS) {
    if (readable_host_memory(pointer)) {
      throw std::invalid_argument("argument " + std::to_string(index + 1) + " of " + function +
                                  " is host memory that the worker cannot see: host arguments must come from "
                                  "lab::HostBuffer (in the grader's judge programs its memory is shared with the "
                                  "worker process; a std::vector's or cudaMallocHost's memory is not)");
    }
    // Not memory of the judge: a pointer the callee must not dereference (an empty
    // buffer plus an offset, say). It crosses as a number; dereferencing it faults in
    // the worker, as it would have faulted here.
    arg.kind = wire::ArgKind::Opaque;
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(pointer);
    std::memcpy(arg.value, &address, sizeof address);
    return;
  }
  cudaIpcMemHandle_t handle;
  const cudaError_t status = cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::invalid_argument("argument " + std::to_string(index + 1) + " of " + function +
                                ": cudaIpcGetMemHandle failed (" + cudaGetErrorString(status) +
                                "); the judge can pass only memory from cudaMalloc");
  }
  arg.kind = wire::ArgKind::Device;
  arg.offset = reinterpret_cast<CUdeviceptr>(pointer) - base;
  arg.extent = arg.offset <= size ? size - arg.offset : 0;  // to the end of the judge's allocation
  arg.handle = handle;
  // A bench's buffer with padding is named after this call, for the padding guard's message.
  lab::detail::note_device_argument(reinterpret_cast<const void*>(base), index, function);
}

bool exact_bounds() { return judge_remote().exact_bounds(); }

namespace {
std::map<std::string, void*>& bounds_table() {
  static std::map<std::string, void*> table;
  return table;
}
}  // namespace

BoundsRegistrar::BoundsRegistrar(const char* function, void* bounds) { bounds_table()[function] = bounds; }

void* bounds_of(const char* function) {
  const auto found = bounds_table().find(function);
  return found == bounds_table().end() ? nullptr : found->second;
}

void forward(Role role, const wire::Request& request, wire::Reply& reply) {
  judge_remote().forward(role, request, reply);
}

}  // namespace lab::judge
