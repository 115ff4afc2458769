// Provided by the kit. The timing harness (lab/bench.h): options, the reference loader,
// L2 flushing, the sampling loop and the boundary calibration of judge programs. The
// table and the JSON are bench_report.cpp's.
#include "lab/bench.h"


#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "lab/bench_json.h"
#include "lab/bench_stats.h"
#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/padding.h"
#include "lab/remote.h"
#include "lab/sdk_timer.h"
#include "lab/timing_lead.h"

namespace lab::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- device helpers ----------------------------------------------------------------

__global__ void count_differences_kernel(const unsigned* a, const unsigned* b, std::size_t words,
                                         const unsigned char* a_tail, const unsigned char* b_tail,
                                         std::size_t tail, unsigned long long* count) {
  unsigned long long local = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words; i += stride) {
    local += a[i] != b[i];
  }
  if (blockIdx.x == 0 && threadIdx.x < tail) local += a_tail[threadIdx.x] != b_tail[threadIdx.x];
  if (local != 0) atomicAdd(count, local);
}

}  // namespace

std::size_t count_differences(const void* a, const void* b, std::size_t bytes) {
  if (bytes == 0) return 0;
  // Compare whole 4-byte words when both arrays allow it, else byte by byte (slow but rare).
  const bool aligned = reinterpret_cast<std::uintptr_t>(a) % 4 == 0 && reinterpret_cast<std::uintptr_t>(b) % 4 == 0;
  // A counter of its own: the workspace slots belong to the implementations being checked.
  static unsigned long long* counter = [] {
    unsigned long long* p = nullptr;
    LAB_CUDA_CHECK(cudaMalloc(&p, sizeof(unsigned long long)));
    return p;
  }();
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  if (!aligned) {
    std::vector<unsigned char> ha(bytes), hb(bytes);
    LAB_CUDA_CHECK(cudaMemcpy(ha.data(), a, bytes, cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(hb.data(), b, bytes, cudaMemcpyDeviceToHost));
    std::size_t diff = 0;
    for (std::size_t i = 0; i < bytes; ++i) diff += ha[i] != hb[i];
    return diff;
  }
  // Asynchronous up to the final copy: enqueued right behind whatever the stream holds
  // (in a judge program, behind the hold that keeps a worker from resuming; bench.h).
  LAB_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), nullptr));
  const std::size_t words = bytes / 4, tail = bytes % 4;
  count_differences_kernel<<<1024, 256>>>(reinterpret_cast<const unsigned*>(pa), reinterpret_cast<const unsigned*>(pb),
                                          words, pa + words * 4, pb + words * 4, tail, counter);
  LAB_CHECK_LAUNCH();
  unsigned long long diff = 0;
  LAB_CUDA_CHECK(cudaMemcpy(&diff, counter, sizeof diff, cudaMemcpyDeviceToHost));
  return static_cast<std::size_t>(diff);
}

const char* to_string(Role r) {
  switch (r) {
    case Role::Student: return "student";
    case Role::Reference: return "reference";
    case Role::Variant: return "variant";
    case Role::Library: return "library";
    case Role::Roofline: return "roofline";
  }
  return "unknown";
}

Reference Reference::load(const std::string& path) {
  Reference ref;
  ref.m_path = path;
  if (path.empty()) {
    ref.m_error = "no reference library given (--reference PATH)";
    return ref;
  }
  if (Remote* r = remote()) {
    // A judge program: the reference runs in a worker of its own, like the student's code,
    // so that both pay the same boundary.
    ref.m_registry = r->load_reference(path, &ref.m_error);
    return ref;
  }
  ref.m_registry = load_variant_library(path, "the reference library", &ref.m_error);
  return ref;
}

// ---- options -----------------------------------------------------------------------

namespace {

// One command-line option: parsing and --help both read this table.
struct OptionSpec {
  const char* name;   // "--json"
  const char* value;  // the value's name in --help, or null for a flag
  std::string help;
  bool judge_only;    // an option of the grader's judge programs
  std::function<void(Options&, const std::string&)> apply;
};

double number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
    throw std::invalid_argument(flag + " takes a non-negative number, got '" + text + "'");
  }
  return v;
}

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = [] {
    std::vector<OptionSpec> t = {
        {"--json", "PATH", "also write the results as JSON (for the grader)", false,
         [](Options& o, const std::string& v) { o.json_path = v; }},
        {"--reference", "PATH", "reference library (default: the solution built with the kit)", false,
         [](Options& o, const std::string& v) { o.reference_path = v; }},
        {"--reference-variant", "NAME",
         "which registered variant of the reference to compare with (default: " + graded_reference_variant() +
             ", the one the lab is graded against)",
         false,
         [](Options& o, const std::string& v) { o.reference_variant = v; }},
        {"--seed", "N", "data seed, a whole number (default: LABKIT_SEED or 1)", false,
         [](Options& o, const std::string& v) {
           o.seed = parse_seed(v);
           o.seed_given = true;
         }},
        {"--size", "N", "problem size (see the lab's handout)", false,
         [](Options& o, const std::string& v) { o.size = static_cast<long long>(number("--size", v)); }},
        {"--filter", "TEXT", "time only candidates whose name contains TEXT", false,
         [](Options& o, const std::string& v) { o.filter = v; }},
        {"--graded-only", nullptr, "the graded workloads only: student, reference, library and roofline (the grader)",
         false, [](Options& o, const std::string&) { o.graded_only = true; }},
        {"--time-variants", "A,B", "also time these registered variants and the reference's of the same names "
                                   "(ref:A, ...), with --graded-only too: the lecture's steps a lab requires",
         false,
         [](Options& o, const std::string& v) {
           o.time_variants.clear();
           std::size_t start = 0;
           while (start <= v.size()) {
             const std::size_t comma = std::min(v.find(',', start), v.size());
             if (comma > start) o.time_variants.push_back(v.substr(start, comma - start));
             start = comma + 1;
           }
         }},
        {"--gate-fd", "N", "set up, write 'r' to file descriptor N, and time nothing until 'g' is read from it "
                           "(the grader: set-up overlaps other labs' tests; the timing runs alone)",
         false,
         [](Options& o, const std::string& v) {
           const double fd = number("--gate-fd", v);
           if (fd != std::floor(fd) || fd < 3 || fd > 1 << 20) throw std::invalid_argument("--gate-fd takes a descriptor number of 3 or more");
           o.gate_fd = static_cast<int>(fd);
         }},
        {"--quick", nullptr, "few samples: a smoke test, not a measurement", false,
         [](Options& o, const std::string&) { o.quick = true; }},
        {"--no-cpu", nullptr, "skip timing the CPU version", false,
         [](Options& o, const std::string&) { o.no_cpu = true; }},
        {"--min-time", "S", "sampling time per workload, at least", false,
         [](Options& o, const std::string& v) { o.min_seconds = number("--min-time", v); }},
        {"--max-time", "S", "sampling time per workload, at most", false,
         [](Options& o, const std::string& v) { o.max_seconds = number("--max-time", v); }},
        {"--min-samples", "N", "samples per candidate, at least", false,
         [](Options& o, const std::string& v) { o.min_samples = static_cast<int>(number("--min-samples", v)); }},
        {"--max-samples", "N", "samples per candidate, at most", false,
         [](Options& o, const std::string& v) { o.max_samples = static_cast<int>(number("--max-samples", v)); }},
    };
    // The judge programs' options, from the table the test main reads too.
    for (const RemoteOptionSpec& r : remote_option_table()) {
      t.push_back({r.name, r.value, r.help, true,
                   [apply = r.apply](Options& o, const std::string& v) { apply(o.remote, v); }});
    }
    return t;
  }();
  return table;
}

[[noreturn]] void usage(const std::string& lab, int code, const std::string& problem = "") {
  FILE* out = code == 0 ? stdout : stderr;
  if (!problem.empty()) {
    std::fprintf(out, "%s_bench: error: %s (see --help)\n", lab.c_str(), problem.c_str());
    std::exit(code);
  }
  std::fprintf(out,
               "usage: %s_bench [options]\n"
               "Times the implementation under test against the reference, the solution's variants, the CPU\n"
               "version and the library, on the same inputs, and prints a table; then, for each graded question\n"
               "answered with a figure of the bench, the line to paste into labs/%s/answers.md (the figure and\n"
               "the GPU it was measured on).\n\n",
               lab.c_str(), lab.c_str());
  for (const OptionSpec& spec : option_table()) {
    if (spec.judge_only && remote() == nullptr) continue;
    const std::string left = std::string(spec.name) + (spec.value != nullptr ? std::string(" ") + spec.value : "");
    std::fprintf(out, "  %-26s %s\n", left.c_str(), spec.help.c_str());
  }
  std::fprintf(out, "  %-26s %s\n", "--help", "this text");
  std::fprintf(out,
               "\nExit status: 0 every timed output was right, 1 a check failed, 2 bad options, 3 no GPU, 4 stopped\n"
               "at the gate (--gate-fd closed before its go).\n");
  std::exit(code);
}

Options parse_options(const std::string& lab, int argc, char** argv, std::string default_reference) {
  Options o;
  o.reference_path = std::move(default_reference);
  o.reference_variant = graded_reference_variant();  // the manifest's, as the grader grades
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const auto eq = arg.find('=');
    const bool has_inline = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "--help" || arg == "-h") usage(lab, 0);
    const auto spec = std::find_if(option_table().begin(), option_table().end(),
                                   [&](const OptionSpec& s) { return arg == s.name; });
    if (spec == option_table().end()) usage(lab, 2, "unknown option '" + arg + "'");
    if (spec->judge_only && remote() == nullptr) {
      usage(lab, 2, arg + " is an option of the grader's judge programs (" + lab + "_judge_bench)");
    }
    if (spec->value != nullptr && !has_inline) {
      if (i + 1 >= argc) usage(lab, 2, arg + " needs a value");
      value = argv[++i];
    } else if (spec->value == nullptr && has_inline) {
      usage(lab, 2, arg + " takes no value");
    }
    try {
      spec->apply(o, value);
    } catch (const std::exception& e) {
      usage(lab, 2, e.what());
    }
  }
  if (o.quick) {
    o.min_samples = 3;
    o.max_samples = 5;
    o.min_seconds = 0;
    o.max_seconds = 1;
    o.no_cpu = true;
  }
  if (o.graded_only) o.no_cpu = true;  // the CPU's time is in no grade
  // The gate is the grader's alone: no worker this process starts may inherit it.
  if (o.gate_fd >= 0 && fcntl(o.gate_fd, F_SETFD, FD_CLOEXEC) != 0) {
    usage(lab, 2, "--gate-fd " + std::to_string(o.gate_fd) + " is not an open file descriptor");
  }
  if (o.max_samples < std::max(1, o.min_samples)) usage(lab, 2, "--max-samples must be at least --min-samples");
  return o;
}

}  // namespace

// ---- the harness -------------------------------------------------------------------

namespace {
// The boundary of one worker, measured with empty requests: the judge's clock minus the
// stamps (the "gap"), its median and the bound a real call's gap may reach.
struct Boundary {
  Summary gap;
  double bound_ms = 0;
};

}  // namespace

struct Harness::State {
  std::string lab;
  Options opt;
  DeviceFacts facts;
  Reference reference;
  std::vector<std::string> errors;
  std::vector<WorkloadResult> workloads;
  bool any_failure = false;
  DeviceBuffer<unsigned char> flush;
  Remote* remote = nullptr;  // judge programs: the implementations run in workers
  Boundary student_boundary, reference_boundary;  // the boundary of each worker
  bool timing_begun = false;  // past the gate, and (judge programs) the boundary calibrated
  std::string first_graded;   // the first graded workload given to add_implementations()
};

namespace {

// How many times a sample whose stamps the judge's clock contradicts is made again.
constexpr int kRetakes = 3;

// Reads the flush buffer (twice the L2 size) through L2; `sink` is written only if the
// bytes XOR to a value they never do, which keeps the loads from being optimised away.
__global__ void flush_sweep_kernel(const int4* __restrict__ buffer, std::size_t count, int* sink) {
  int seen = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const int4 v = __ldcg(buffer + i);
    seen ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (seen == 0x5EED) *sink = seen;  // the buffer is all zeros: never
}

// Empties the L2 cache of everything a timed call could use, by reading a buffer twice
// its size. A read, not a write: written (dirty) lines would have to go back to DRAM
// while the next call runs, as it evicts them, and that write-back costs a DRAM-bound
// call up to a tenth of its bandwidth (measured on an H100: a 256 MB sum 72% of the DRAM
// peak after a memset flush, 78% after this one). The lines this leaves are clean, and
// the write-back of what the set-up wrote (fresh inputs, poisoned outputs) happens here,
// untimed.
void flush_l2(DeviceBuffer<unsigned char>& flush) {
  // Persisting lines survive ordinary traffic, so drop them first.
  LAB_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  // The last 4 bytes of the buffer are the sink; the sweep reads the whole 16-byte words before them.
  const std::size_t words = (flush.bytes() - sizeof(int)) / sizeof(int4);
  flush_sweep_kernel<<<1024, 256>>>(reinterpret_cast<const int4*>(flush.data()), words,
                                    reinterpret_cast<int*>(flush.data() + flush.bytes() - sizeof(int)));
  LAB_CUDA_CHECK(cudaGetLastError());
}

// Runs one call of `r` (prepare, flush, time, check); returns false after a failure.
//
// A call forwarded to a worker (judge programs) is timed by the worker's clock stamps
// where the judge's own clock (start event to a fence) agrees, else by the judge's clock
// minus the calibrated boundary (common/judge/session.cu). Right after the stop event
// the judge holds the GPU for a moment, so that the output check it enqueues next runs
// before a worker that said "done" too early could finish behind the judge's back.
// An NVTX push/pop range for the life of the object.
struct NvtxRange {
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// The guard of the buffers' padding (lab/padding.h); never destroyed, like the buffers'
// memory at exit.
PaddingGuard& padding_guard() {
  static PaddingGuard* guard = new PaddingGuard();
  return *guard;
}

bool sample(CandidateResult& r, const Workload& w, DeviceBuffer<unsigned char>& flush, Remote* remote, bool timed,
            double* event_ms, Rng* pick = nullptr, double* fenced_ms = nullptr,
            double* stamped_ms = nullptr, bool* contradicted = nullptr, double* judged_ms = nullptr) {
  if (contradicted != nullptr) *contradicted = false;
  if (stamped_ms != nullptr) *stamped_ms = -1.0;
  // A checked call's buffers get new canaries in their padding (lab/padding.h), before
  // the L2 flush: the flush evicts them, and nothing of the guard runs while timed.
  const bool guarded = !r.c.unchecked;
  try {
    if (pick != nullptr && w.fresh) {
      w.fresh(pick->next());
    } else if (w.restore) {
      w.restore();
    }
    if (w.prepare) w.prepare();
    if (guarded) padding_guard().arm();
    if (timed) flush_l2(flush);
    if (remote != nullptr) remote->begin_sample();
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    LAB_CUDA_CHECK(cudaEventCreate(&start));
    LAB_CUDA_CHECK(cudaEventCreate(&stop));
    // A call made in this process is timed behind the lead (lab/timing_lead.h); one
    // forwarded to a worker (known from the warm-up) gets its lead in the worker, right
    // before the worker's own start event.
    if (timed && !r.remote) LAB_CUDA_CHECK(launch_timing_lead());
    const auto host0 = Clock::now();
    // An NVTX range named after the candidate, so that a profiler can pick one
    // candidate's kernels (`ncu --nvtx --nvtx-include "student/"`, grader profile); a
    // no-op without a profiler attached.
    {
      const NvtxRange range(r.c.name);
      LAB_CUDA_CHECK(cudaEventRecord(start, nullptr));
      r.c.call();
      LAB_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    }
    const RemoteSample forwarded = remote != nullptr ? remote->end_sample() : RemoteSample{};
    if (forwarded.calls > 0) {
      r.remote = true;
      remote->hold_gpu();
      LAB_CUDA_CHECK(cudaEventSynchronize(stop));
    } else {
      // Wait for the whole device, not only the stop event: work hidden on another
      // stream then shows in the host time.
      LAB_CUDA_CHECK(cudaDeviceSynchronize());
    }
    const double host_ms = std::chrono::duration<double, std::milli>(Clock::now() - host0).count();
    // The canaries' compare, enqueued first: behind the judge's hold, before a worker
    // that answered early could put them back (hold_gpu); read after the output check.
    if (guarded) padding_guard().launch_check();
    float ms = 0;
    LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    *event_ms = ms;
    if (fenced_ms != nullptr) *fenced_ms = ms;
    if (timed && forwarded.calls == 0 && host_time_suspect(ms, host_ms)) ++r.host_suspect;
    if (!r.c.unchecked) {
      const auto& check = r.c.check ? r.c.check : w.check;
      std::string problem = check ? check() : "";
      // With fresh data the next call overwrites the inputs: check them after each.
      if (problem.empty() && w.varies() && w.inputs_check) {
        problem = w.inputs_check();
        if (!problem.empty()) problem = "the inputs changed: " + problem;
      }
      const std::string padding = padding_guard().result();
      if (!padding.empty()) problem = problem.empty() ? padding : problem + "; " + padding;
      if (check || w.varies() || padding_guard().armed()) ++r.checks;
      if (!problem.empty()) {
        ++r.check_failures;
        if (r.first_failure.empty()) r.first_failure = problem;
      }
    }
    if (forwarded.calls > 0) {
      const RemoteStamps stamps = remote->read_stamps();
      if (stamped_ms != nullptr) *stamped_ms = stamps.valid ? stamps.ms : -1.0;
      if (judged_ms != nullptr) *judged_ms = ms - forwarded.gap_ms;  // the judge's clock, less the usual boundary
      // The boundary's cost, plus 2% of the call: a long call's wait for the GPU costs a
      // little more to notice (forged stamps can gain at most that much).
      const double bound = forwarded.bound_ms + 0.02 * std::max(0.0, stamps.ms);
      if (stamps.valid && ms - stamps.ms <= bound) {
        *event_ms = std::max(1e-6, stamps.ms);
      } else {
        *event_ms = std::max(1e-6, ms - forwarded.bound_ms);
        if (contradicted != nullptr) *contradicted = true;
      }
    }
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    LAB_CUDA_CHECK(cudaEventDestroy(start));
    LAB_CUDA_CHECK(cudaEventDestroy(stop));
    return true;
  } catch (const std::exception& e) {
    r.failed = true;
    ++r.check_failures;
    if (r.first_failure.empty()) r.first_failure = e.what();
    return false;
  }
}

Boundary calibrate(Remote& remote, bool reference, DeviceBuffer<unsigned char>& flush, int samples) {
  CandidateResult r;
  r.c.call = [&] { remote.noop(reference); };
  r.c.unchecked = true;
  const Workload none;
  std::vector<double> gaps;
  for (int i = 0; i < samples + 5; ++i) {
    double used = 0, fenced = 0, stamped = -1;
    if (!sample(r, none, flush, &remote, true, &used, nullptr, &fenced, &stamped)) {
      throw std::runtime_error("the boundary could not be calibrated: " + r.first_failure);
    }
    if (stamped < 0) throw std::runtime_error("the boundary could not be calibrated: the worker sent no clock stamps");
    if (i >= 5) gaps.push_back(fenced - stamped);  // the first few warm the path up
  }
  Boundary b;
  b.gap = summarize(gaps);
  // A real call's gap varies a little more than an empty one's (what ran before, the
  // context's size): the bound leaves room for that, and no more, since it is what
  // forged stamps could gain.
  b.bound_ms = quantile(gaps, 0.95) + std::max(0.02, 0.1 * b.gap.median);
  return b;
}

}  // namespace

Harness::Harness(std::string lab, int argc, char** argv, std::string default_reference) : m(new State) {
  // Whole 2 MiB pages for every buffer the bench allocates from here on: in a judge
  // program the workers import them (set_device_allocation_granularity says why).
  set_device_allocation_granularity(std::size_t{2} << 20);
  m->lab = std::move(lab);
  m->opt = parse_options(m->lab, argc, argv, std::move(default_reference));
  const Options& o = m->opt;
  m->remote = remote();
  try {
    if (o.seed_given) set_run_seed(o.seed);
    (void)run_seed();
  } catch (const std::exception& e) {
    usage(m->lab, 2, e.what());
  }

  std::string why;
  if (!gpu_available(&why)) {
    std::fprintf(stderr, "No CUDA GPU (%s): the bench needs an NVIDIA GPU.\n", why.c_str());
    if (!o.json_path.empty()) {
      std::ofstream(o.json_path) << "{\"schema\": \"labkit-bench\", \"version\": 1, \"status\": \"no_gpu\", "
                                 << "\"lab\": " << json_string(m->lab) << ", \"message\": "
                                 << json_string("No CUDA GPU: " + why) << "}\n";
    }
    std::exit(3);
  }
  m->facts = device_facts();
  // Twice the L2 size: reading it evicts whatever the previous call left in the cache
  // (flush_l2). Zeroed once, so that the sweep reads defined bytes.
  m->flush = DeviceBuffer<unsigned char>(std::max<std::size_t>(2 * m->facts.l2_bytes, 1 << 20));
  LAB_CUDA_CHECK(cudaMemset(m->flush.data(), 0, m->flush.bytes()));
  if (m->remote != nullptr) {
    m->remote->configure(o.remote);
    const std::string problem = m->remote->start_student();
    if (!problem.empty()) note_error("the implementation under test could not be started: " + problem);
  }
  m->reference = Reference::load(o.reference_path);
  std::printf("%s bench on %s\nseed %llu; reference: %s\n", m->lab.c_str(), describe(m->facts).c_str(),
              static_cast<unsigned long long>(run_seed()),
              m->reference.loaded() ? m->reference.path().c_str() : m->reference.error().c_str());
}

namespace {

// The grader's go (--gate-fd): "r" says the set-up is done; nothing is timed before "g".
void wait_for_gate(int& fd, const std::string& lab) {
  if (fd < 0) return;
  const char ready = 'r';
  ssize_t n;
  do n = write(fd, &ready, 1); while (n < 0 && errno == EINTR);
  char go = 0;
  do n = read(fd, &go, 1); while (n < 0 && errno == EINTR);
  close(fd);
  fd = -1;
  if (n != 1 || go != 'g') {
    std::fprintf(stderr, "%s_bench: the grader stopped this bench before its timing (the gate closed)\n", lab.c_str());
    std::fflush(stdout);
    std::exit(4);
  }
}

}  // namespace

void Harness::begin_timing() {
  if (m->timing_begun) return;
  m->timing_begun = true;
  wait_for_gate(m->opt.gate_fd, m->lab);
  const Options& o = m->opt;
  if (m->remote != nullptr) {
    std::printf("judge: the implementations run in sandboxed worker processes\n%s", m->remote->describe().c_str());
    m->remote->set_timing(true);
    try {
      const int samples = o.quick ? 20 : 200;
      m->student_boundary = calibrate(*m->remote, false, m->flush, samples);
      m->remote->set_boundary(false, m->student_boundary.gap.median, m->student_boundary.bound_ms);
      if (m->reference.loaded()) {
        m->reference_boundary = calibrate(*m->remote, true, m->flush, samples);
        m->remote->set_boundary(true, m->reference_boundary.gap.median, m->reference_boundary.bound_ms);
      }
      std::printf("boundary per call beyond the worker's stamps: student %.4f ms (IQR %.4f, bound %.4f), "
                  "reference %.4f ms (IQR %.4f, bound %.4f)\n",
                  m->student_boundary.gap.median, m->student_boundary.gap.q3 - m->student_boundary.gap.q1,
                  m->student_boundary.bound_ms, m->reference_boundary.gap.median,
                  m->reference_boundary.gap.q3 - m->reference_boundary.gap.q1, m->reference_boundary.bound_ms);
    } catch (const std::exception& e) {
      note_error(e.what());
    }
    m->remote->set_timing(false);
  }
}

Harness::~Harness() = default;

const Options& Harness::options() const { return m->opt; }
const DeviceFacts& Harness::device() const { return m->facts; }
const Reference& Harness::reference() const { return m->reference; }
Seed Harness::seed() const { return run_seed(); }
long long Harness::size_or(long long fallback) const { return m->opt.size > 0 ? m->opt.size : fallback; }

void Harness::note_error(const std::string& message) {
  std::printf("note: %s\n", message.c_str());
  m->errors.push_back(message);
}

bool Harness::times_required_variants_in(const Workload& w) {
  if (!w.graded) return true;
  if (m->first_graded.empty()) m->first_graded = w.name;
  return m->first_graded == w.name;
}

void Harness::add_candidate(Workload& w, Candidate c) {
  const bool essential = c.role == Role::Student || c.role == Role::Reference;
  if (!essential && !m->opt.filter.empty() && c.name.find(m->opt.filter) == std::string::npos) return;
  w.candidates.push_back(std::move(c));
}

WorkloadResult Harness::measure(Workload& w) {
  begin_timing();
  const Options& o = m->opt;
  WorkloadResult out;
  out.name = w.name;
  out.function = w.function;
  out.graded = w.graded;
  out.unit = w.unit;
  out.amount = w.amount;
  out.peak = w.peak;
  if (w.peak_of.empty() || w.peak_of == "dram" || w.peak_of == "fp32" || w.peak_of == "rsqrt") {
    out.peak_of = w.peak > 0 ? (w.peak_of.empty() ? infer_peak_of(w.peak, m->facts) : w.peak_of) : "";
  } else {
    note_error(w.name + ": peak_of \"" + w.peak_of + "\" is none of \"dram\", \"fp32\", \"rsqrt\"");
  }
  out.target_rel_se = o.target_rel_se;

  // The CPU version, timed with the sdkTimer API as the lectures do.
  if (w.cpu && !o.no_cpu) {
    StopWatchInterface* timer = nullptr;
    sdkCreateTimer(&timer);
    while (out.cpu_runs < w.cpu_max_runs &&
           (out.cpu_runs == 0 || sdkGetTimerValue(&timer) < w.cpu_min_seconds * 1e3)) {
      sdkStartTimer(&timer);
      w.cpu();
      sdkStopTimer(&timer);
      ++out.cpu_runs;
    }
    out.cpu_ms = sdkGetAverageTimerValue(&timer);
    sdkDeleteTimer(&timer);
  }

  std::vector<CandidateResult>& results = out.results;
  for (const Candidate& c : w.candidates) {
    results.push_back({});
    results.back().c = c;
  }
  CandidateResult* student = nullptr;
  CandidateResult* reference = nullptr;
  for (auto& r : results) {
    if (r.c.role == Role::Student) student = &r;
    if (r.c.role == Role::Reference) reference = &r;
  }
  Remote* remote = m->remote;
  if (remote != nullptr) remote->set_timing(true);

  // Warm-up: one checked call each (module loading, workspace growth), then ~100 ms more.
  double ignored = 0;
  for (auto& r : results) sample(r, w, m->flush, remote, false, &ignored);
  const auto warm0 = Clock::now();
  while (seconds_since(warm0) < 0.1 && !o.quick) {
    for (auto& r : results) {
      if (!r.failed) sample(r, w, m->flush, remote, false, &ignored);
    }
  }
  for (auto& r : results) {  // warm-up checks count only when they failed
    if (r.check_failures == 0) r.checks = 0;
  }

  // Interleaved sampling: every round times each candidate once, in the same order.
  StopRule rule;
  rule.min_samples = static_cast<std::size_t>(o.min_samples);
  rule.max_samples = static_cast<std::size_t>(o.max_samples);
  rule.min_seconds = o.min_seconds;
  rule.max_seconds = w.max_seconds > 0 ? w.max_seconds : o.max_seconds;
  rule.target_rel_se = o.target_rel_se;
  const auto t0 = Clock::now();
  // The seeds of each call's fresh data. In a judge program the seed also
  // takes bits the run's seed does not give: the student's worker may learn the run's
  // seed, and fresh data it could predict could be computed ahead of the timed call.
  Seed pick_seed = derive_seed(run_seed(), "bench fresh data " + w.name);
  if (remote != nullptr) pick_seed ^= (static_cast<Seed>(std::random_device{}()) << 32) ^ std::random_device{}();
  Rng pick(pick_seed);
  for (unsigned round = 1;; ++round) {
    double ms_student = -1, ms_reference = -1;
    for (auto& r : results) {
      if (r.failed) continue;
      const bool essential = &r == student || &r == reference;
      // Other candidates stop early once they have enough samples or used their share.
      if (!essential && r.ms.size() >= rule.min_samples &&
          (r.spent_s > rule.max_seconds / 4 || r.ms.size() >= rule.max_samples)) {
        continue;
      }
      if (!essential && r.ms.size() >= 3 && r.spent_s > rule.max_seconds / 2) continue;
      double ms = 0, stamped = -1, judged = 0;
      bool contradicted = false;
      if (!sample(r, w, m->flush, remote, true, &ms, &pick, nullptr, &stamped, &contradicted, &judged)) continue;
      // Stamps the judge's clock contradicts: the call is made again, up to kRetakes
      // times, and the first agreeing call is the sample. An honest call meets a late
      // hand-over between the processes now and then (the H100 showed up to half of a
      // run's calls), rarely on every retake; forged stamps are contradicted on every
      // call, so the sample stays suspect and is timed by the judge's clock. Each retake
      // waits a little longer first (2, 4, 8 ms), so that one burst of disturbance does
      // not spoil them all.
      for (int retake = 0; contradicted && retake < kRetakes; ++retake) {
        ++r.boundary_retaken;
        std::this_thread::sleep_for(std::chrono::milliseconds(2 << retake));
        if (!sample(r, w, m->flush, remote, true, &ms, &pick, nullptr, &stamped, &contradicted, &judged)) break;
      }
      if (r.failed) continue;
      if (contradicted) ++r.boundary_suspect;
      if (r.remote && stamped >= 0) r.boundary_excess.push_back(judged - stamped);
      r.ms.push_back(ms);
      r.spent_s += ms / 1e3;
      if (&r == student) ms_student = ms;
      if (&r == reference) ms_reference = ms;
    }
    if (ms_student > 0 && ms_reference > 0) out.ratios.push_back(ms_student / ms_reference);
    const Summary progress = summarize(!out.ratios.empty() ? out.ratios
                                                           : (student ? student->ms : std::vector<double>{}));
    bool any_alive = false;
    for (auto& r : results) any_alive = any_alive || !r.failed;
    if (!any_alive || should_stop(rule, progress, seconds_since(t0))) break;
    if (student != nullptr && student->failed && (reference == nullptr || reference->failed) &&
        round >= rule.min_samples) {
      break;
    }
  }
  if (remote != nullptr) remote->set_timing(false);
  for (auto& r : results) {
    if (!r.boundary_excess.empty()) r.boundary_excess_ms = summarize(r.boundary_excess).median;
  }
  if (w.inputs_check) {
    try {
      out.inputs_problem = w.inputs_check();
    } catch (const std::exception& e) {
      out.inputs_problem = e.what();
    }
  }
  // The inputs checked, set 0 goes back in: the next workload may read the same buffers.
  if (w.restore) w.restore();
  for (auto& r : results) r.s = summarize(r.ms);
  out.pair = summarize(out.ratios);
  return out;
}

void Harness::run(Workload& w) {
  if (m->opt.graded_only && !w.graded) return;  // the grade does not need it
  begin_timing();
  std::printf("\n== %s%s\n", w.name.c_str(), w.graded ? "  [graded]" : "");
  std::fflush(stdout);
  WorkloadResult result = measure(w);
  print_table(result);
  for (const CandidateResult& r : result.results) {
    const bool graded_role = r.c.role == Role::Student || r.c.role == Role::Reference;
    if (graded_role && r.check_failures > 0) m->any_failure = true;
  }
  if (!result.inputs_problem.empty()) m->any_failure = true;
  m->workloads.push_back(std::move(result));
}

int Harness::finish() {
  begin_timing();  // a bench that timed no workload still reports its boundary
  const DeviceFacts& f = m->facts;
  const Options& o = m->opt;
  // The figures the graded questions ask for, as the lines to paste into answers.md.
  const std::vector<AnswerLine> answers = answer_lines(bench_questions(), m->workloads, f, size_given());
  print_answer_lines(m->lab, answers);
  if (!o.json_path.empty()) {
    auto boundary = [](const Boundary& b) {
      return "{\"median_ms\": " + json_number(b.gap.median) + ", \"q1_ms\": " + json_number(b.gap.q1) +
             ", \"q3_ms\": " + json_number(b.gap.q3) + ", \"bound_ms\": " + json_number(b.bound_ms) +
             ", \"samples\": " + std::to_string(b.gap.count) + "}";
    };
    std::ofstream out(o.json_path);
    out << "{\"schema\": \"labkit-bench\", \"version\": 1, \"status\": \"ok\", \"lab\": " << json_string(m->lab)
        << ", \"seed\": " << run_seed() << ",\n \"options\": {\"size\": " << o.size
        << ", \"graded_only\": " << (o.graded_only ? "true" : "false") << ", \"filter\": " << json_string(o.filter)
        << ", \"quick\": " << (o.quick ? "true" : "false") << "},\n \"device\": {\"name\": " << json_string(f.name)
        << ", \"compute_capability\": " << json_string(std::to_string(f.major) + "." + std::to_string(f.minor))
        << ", \"sms\": " << f.sms << ", \"sm_clock_mhz\": " << json_number(f.sm_clock_mhz)
        << ", \"l2_bytes\": " << f.l2_bytes << ", \"peak_dram_gbps\": " << json_number(f.peak_dram_gbps)
        << ", \"peak_fp32_gflops\": " << json_number(f.peak_fp32_gflops)
        << ", \"peak_rsqrt_gops\": " << json_number(f.peak_rsqrt_gops) << "},\n \"reference\": {\"path\": "
        << json_string(m->reference.path()) << ", \"loaded\": " << (m->reference.loaded() ? "true" : "false")
        << ", \"variant\": " << json_string(o.reference_variant) << ", \"error\": "
        << (m->reference.error().empty() ? "null" : json_string(m->reference.error())) << "},\n \"judge\": ";
    if (m->remote != nullptr) {
      out << "{\"impl\": " << json_string(o.remote.impl)
          << ", \"boundary\": {\"student\": " << boundary(m->student_boundary)
          << ", \"reference\": " << boundary(m->reference_boundary)
          << "}, \"workers\": " << json_string(m->remote->describe()) << "}";
    } else {
      out << "null";
    }
    out << ",\n \"workloads\": [";
    for (std::size_t i = 0; i < m->workloads.size(); ++i) {
      out << (i ? ",\n  " : "\n  ") << workload_json(m->workloads[i]);
    }
    out << "],\n \"answers\": " << answer_lines_json(answers) << ",\n \"errors\": [";
    for (std::size_t i = 0; i < m->errors.size(); ++i) out << (i ? ", " : "") << json_string(m->errors[i]);
    out << "]}\n";
    if (!out) {
      std::fprintf(stderr, "error: could not write %s\n", o.json_path.c_str());
      return 1;
    }
  }
  return m->any_failure ? 1 : 0;
}

}  // namespace lab::bench
