// Provided by the kit. The timing harness (lab/bench.h): option parsing, the reference
// loader, L2 flushing, the sampling loop, the table and the JSON report.
#include "lab/bench.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lab/bench_stats.h"
#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/sdk_timer.h"

namespace lab::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- JSON output -------------------------------------------------------------------

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_optional(double v, bool present) { return present ? json_number(v) : "null"; }

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
  LAB_CUDA_CHECK(cudaMemset(counter, 0, sizeof(unsigned long long)));
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  if (aligned) {
    const std::size_t words = bytes / 4, tail = bytes % 4;
    count_differences_kernel<<<1024, 256>>>(reinterpret_cast<const unsigned*>(pa), reinterpret_cast<const unsigned*>(pb),
                                            words, pa + words * 4, pb + words * 4, tail, counter);
    LAB_CHECK_LAUNCH();
  } else {
    std::vector<unsigned char> ha(bytes), hb(bytes);
    LAB_CUDA_CHECK(cudaMemcpy(ha.data(), a, bytes, cudaMemcpyDeviceToHost));
    LAB_CUDA_CHECK(cudaMemcpy(hb.data(), b, bytes, cudaMemcpyDeviceToHost));
    std::size_t diff = 0;
    for (std::size_t i = 0; i < bytes; ++i) diff += ha[i] != hb[i];
    return diff;
  }
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
  // RTLD_LOCAL: the reference defines the same function names as the program; keep them apart.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    ref.m_error = "cannot load " + path + ": " + (err != nullptr ? err : "unknown error");
    return ref;
  }
  using Accessor = const VariantRegistry* (*)();
  auto accessor = reinterpret_cast<Accessor>(dlsym(handle, LAB_VARIANT_REGISTRY_SYMBOL));
  if (accessor == nullptr) {
    ref.m_error = path + " is not a cuda-labkit reference library (no " LAB_VARIANT_REGISTRY_SYMBOL ")";
    return ref;
  }
  // The handle is kept open for the life of the process: its kernels stay registered.
  ref.m_registry = accessor();
  return ref;
}

// ---- the harness -------------------------------------------------------------------

struct CandidateResult {
  Candidate c{};
  std::vector<double> ms{};       // event times of the samples
  std::size_t checks = 0, check_failures = 0, host_suspect = 0;
  std::string first_failure{};    // first check or runtime failure
  bool failed = false;            // stopped after an exception
  double spent_s = 0;             // accumulated event time
  Summary s{};
};

struct Harness::State {
  std::string lab;
  Options opt;
  DeviceFacts facts;
  Reference reference;
  std::vector<std::string> errors;
  std::vector<std::string> workload_json;
  bool any_failure = false;
  DeviceBuffer<unsigned char> flush;
};

namespace {

[[noreturn]] void usage(const std::string& lab, int code, const std::string& problem = "") {
  FILE* out = code == 0 ? stdout : stderr;
  if (!problem.empty()) std::fprintf(out, "error: %s\n\n", problem.c_str());
  std::fprintf(out,
               "usage: %s_bench [options]\n"
               "Times the linked implementation of %s against the reference, the solution's variants,\n"
               "the CPU version and the library, on the same inputs, and prints a table.\n\n"
               "  --json PATH               also write the results as JSON (for the grader)\n"
               "  --reference PATH          reference library (default: the solution built with the kit)\n"
               "  --reference-variant NAME  which registered variant of the reference to compare with\n"
               "  --seed=N                  data seed (default: LABKIT_SEED or 1)\n"
               "  --size N                  problem size (see the lab's handout)\n"
               "  --filter TEXT             time only candidates whose name contains TEXT\n"
               "  --quick                   few samples: a smoke test, not a measurement\n"
               "  --no-cpu                  skip timing the CPU version\n"
               "  --min-time S, --max-time S, --min-samples N, --max-samples N   sampling limits\n",
               lab.c_str(), lab.c_str());
  std::exit(code);
}

double parse_number(const std::string& lab, const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
    usage(lab, 2, flag + " takes a non-negative number, got '" + text + "'");
  }
  return v;
}

}  // namespace

Harness::Harness(std::string lab, int argc, char** argv, std::string default_reference) : m(new State) {
  m->lab = std::move(lab);
  Options& o = m->opt;
  o.reference_path = std::move(default_reference);
  Seed seed = 0;
  bool seed_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const auto eq = arg.find('=');
    const bool has_inline = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) usage(m->lab, 2, arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") usage(m->lab, 0);
    else if (arg == "--json") o.json_path = next();
    else if (arg == "--reference") o.reference_path = next();
    else if (arg == "--reference-variant") o.reference_variant = next();
    else if (arg == "--filter") o.filter = next();
    else if (arg == "--quick") o.quick = true;
    else if (arg == "--no-cpu") o.no_cpu = true;
    else if (arg == "--seed") { seed = static_cast<Seed>(parse_number(m->lab, arg, next())); seed_given = true; }
    else if (arg == "--size") o.size = static_cast<long long>(parse_number(m->lab, arg, next()));
    else if (arg == "--min-time") o.min_seconds = parse_number(m->lab, arg, next());
    else if (arg == "--max-time") o.max_seconds = parse_number(m->lab, arg, next());
    else if (arg == "--min-samples") o.min_samples = static_cast<int>(parse_number(m->lab, arg, next()));
    else if (arg == "--max-samples") o.max_samples = static_cast<int>(parse_number(m->lab, arg, next()));
    else usage(m->lab, 2, "unknown option '" + arg + "'");
  }
  if (o.quick) {
    o.min_samples = 3;
    o.max_samples = 5;
    o.min_seconds = 0;
    o.max_seconds = 1;
    o.no_cpu = true;
  }
  if (o.max_samples < std::max(1, o.min_samples)) usage(m->lab, 2, "--max-samples must be at least --min-samples");
  try {
    if (seed_given) set_run_seed(seed);
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
  // Twice the L2 size: writing it evicts whatever the previous call left in the cache.
  m->flush = DeviceBuffer<unsigned char>(std::max<std::size_t>(2 * m->facts.l2_bytes, 1 << 20));
  m->reference = Reference::load(o.reference_path);
  std::printf("%s bench on %s\nseed %llu; reference: %s\n", m->lab.c_str(), describe(m->facts).c_str(),
              static_cast<unsigned long long>(run_seed()),
              m->reference.loaded() ? m->reference.path().c_str() : m->reference.error().c_str());
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

void Harness::add_candidate(Workload& w, Candidate c) {
  const bool essential = c.role == Role::Student || c.role == Role::Reference;
  if (!essential && !m->opt.filter.empty() && c.name.find(m->opt.filter) == std::string::npos) return;
  w.candidates.push_back(std::move(c));
}

namespace {

void flush_l2(DeviceBuffer<unsigned char>& flush, unsigned char value) {
  // Persisting lines survive ordinary traffic, so drop them first.
  LAB_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  LAB_CUDA_CHECK(cudaMemsetAsync(flush.data(), value, flush.bytes()));
}

// Runs one call of `r` (prepare, flush, time, check); returns false after a failure.
bool sample(CandidateResult& r, const Workload& w, DeviceBuffer<unsigned char>& flush, bool timed,
            unsigned round, double* event_ms) {
  try {
    if (w.prepare) w.prepare();
    if (timed) flush_l2(flush, static_cast<unsigned char>(round));
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    LAB_CUDA_CHECK(cudaEventCreate(&start));
    LAB_CUDA_CHECK(cudaEventCreate(&stop));
    const auto host0 = Clock::now();
    LAB_CUDA_CHECK(cudaEventRecord(start, nullptr));
    r.c.call();
    LAB_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    // Wait for the whole device, not only the stop event: work hidden on another
    // stream then shows in the host time.
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    const double host_ms = std::chrono::duration<double, std::milli>(Clock::now() - host0).count();
    float ms = 0;
    LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    LAB_CUDA_CHECK(cudaEventDestroy(start));
    LAB_CUDA_CHECK(cudaEventDestroy(stop));
    *event_ms = ms;
    if (timed && host_time_suspect(ms, host_ms)) ++r.host_suspect;
    if (!r.c.unchecked) {
      const auto& check = r.c.check ? r.c.check : w.check;
      if (check) {
        const std::string problem = check();
        ++r.checks;
        if (!problem.empty()) {
          ++r.check_failures;
          if (r.first_failure.empty()) r.first_failure = problem;
        }
      }
    }
    return true;
  } catch (const std::exception& e) {
    r.failed = true;
    ++r.check_failures;
    if (r.first_failure.empty()) r.first_failure = e.what();
    return false;
  }
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

void Harness::run(Workload& w) {
  const Options& o = m->opt;
  std::printf("\n== %s%s\n", w.name.c_str(), w.graded ? "  [graded]" : "");

  // The CPU version, timed with the sdkTimer API as the lectures do.
  double cpu_ms = 0;
  int cpu_runs = 0;
  if (w.cpu && !o.no_cpu) {
    StopWatchInterface* timer = nullptr;
    sdkCreateTimer(&timer);
    while (cpu_runs < w.cpu_max_runs && (cpu_runs == 0 || sdkGetTimerValue(&timer) < w.cpu_min_seconds * 1e3)) {
      sdkStartTimer(&timer);
      w.cpu();
      sdkStopTimer(&timer);
      ++cpu_runs;
    }
    cpu_ms = sdkGetAverageTimerValue(&timer);
    sdkDeleteTimer(&timer);
  }

  std::vector<CandidateResult> results;
  for (const Candidate& c : w.candidates) results.push_back({c});
  CandidateResult* student = nullptr;
  CandidateResult* reference = nullptr;
  for (auto& r : results) {
    if (r.c.role == Role::Student) student = &r;
    if (r.c.role == Role::Reference) reference = &r;
  }

  // Warm-up: one checked call each (module loading, workspace growth), then ~100 ms more.
  double ignored = 0;
  for (auto& r : results) sample(r, w, m->flush, false, 0, &ignored);
  const auto warm0 = Clock::now();
  while (seconds_since(warm0) < 0.1 && !o.quick) {
    for (auto& r : results) {
      if (!r.failed) sample(r, w, m->flush, false, 0, &ignored);
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
  std::vector<double> ratios;
  const auto t0 = Clock::now();
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
      double ms = 0;
      if (!sample(r, w, m->flush, true, round, &ms)) continue;
      r.ms.push_back(ms);
      r.spent_s += ms / 1e3;
      if (&r == student) ms_student = ms;
      if (&r == reference) ms_reference = ms;
    }
    if (ms_student > 0 && ms_reference > 0) ratios.push_back(ms_student / ms_reference);
    const Summary progress = summarize(!ratios.empty() ? ratios : (student ? student->ms : std::vector<double>{}));
    bool any_alive = false;
    for (auto& r : results) any_alive = any_alive || !r.failed;
    if (!any_alive || should_stop(rule, progress, seconds_since(t0))) break;
    if (student != nullptr && student->failed && (reference == nullptr || reference->failed) &&
        round >= rule.min_samples) {
      break;
    }
  }
  std::string inputs_problem;
  if (w.inputs_check) {
    try {
      inputs_problem = w.inputs_check();
    } catch (const std::exception& e) {
      inputs_problem = e.what();
    }
  }

  // Summaries and ratios.
  for (auto& r : results) r.s = summarize(r.ms);
  const CandidateResult* library = nullptr;
  for (auto& r : results) {
    if (r.c.role == Role::Library && !r.ms.empty() && library == nullptr) library = &r;
  }
  const Summary pair = summarize(ratios);

  auto throughput = [&](const CandidateResult& r) {
    const double amount = r.c.amount > 0 ? r.c.amount : w.amount;
    return r.s.median > 0 ? amount / (r.s.median * 1e-3) / 1e9 : 0.0;
  };

  // The table.
  if (cpu_runs > 0) std::printf("CPU version (sdkTimer): %.3f ms, average of %d run(s)\n", cpu_ms, cpu_runs);
  std::printf("%-22s %-9s %10s %9s %7s %10s %7s %9s %7s %7s  %s\n", "name", "role", "median ms", "IQR ms", "samples",
              w.unit.c_str(), "% peak", "x CPU", "x ref", "x lib", "check");
  for (auto& r : results) {
    const bool timed = !r.ms.empty();
    std::string check = r.c.unchecked ? "-" : (r.check_failures == 0 ? "ok" : "FAILED");
    if (r.c.role == Role::Student && !inputs_problem.empty()) check = "INPUT CHANGED";
    if (r.host_suspect > 0) check += " host-time!";
    std::printf("%-22s %-9s %10s %9s %7zu %10s %7s %9s %7s %7s  %s\n", r.c.name.c_str(), to_string(r.c.role),
                timed ? fmt("%.4f", r.s.median).c_str() : "-", timed ? fmt("%.4f", r.s.q3 - r.s.q1).c_str() : "-",
                r.ms.size(), timed ? fmt("%.1f", throughput(r)).c_str() : "-",
                timed && w.peak > 0 ? fmt("%.1f%%", 100 * throughput(r) / w.peak).c_str() : "-",
                timed && cpu_ms > 0 ? fmt("%.1f", cpu_ms / r.s.median).c_str() : "-",
                timed && reference && !reference->ms.empty() ? fmt("%.2f", reference->s.median / r.s.median).c_str() : "-",
                timed && library ? fmt("%.2f", library->s.median / r.s.median).c_str() : "-", check.c_str());
  }
  for (auto& r : results) {
    if (!r.first_failure.empty()) std::printf("  %s: %s\n", r.c.name.c_str(), r.first_failure.c_str());
  }
  if (!inputs_problem.empty()) std::printf("  inputs changed: %s\n", inputs_problem.c_str());
  if (!ratios.empty()) {
    std::printf("student / reference time: median %.3f over %zu interleaved pairs (±%.1f%%)%s\n", pair.median,
                pair.count, 100 * pair.rel_se, pair.rel_se > o.target_rel_se ? "  [noisy]" : "");
  }

  // JSON for this workload.
  std::ostringstream js;
  js << "{\"name\": " << json_string(w.name) << ", \"function\": " << json_string(w.function)
     << ", \"graded\": " << (w.graded ? "true" : "false") << ", \"unit\": " << json_string(w.unit)
     << ", \"amount\": " << json_number(w.amount) << ", \"peak\": " << json_optional(w.peak, w.peak > 0)
     << ", \"cpu_ms\": " << json_optional(cpu_ms, cpu_runs > 0) << ", \"cpu_runs\": " << cpu_runs
     << ", \"inputs_check\": " << (inputs_problem.empty() ? "null" : json_string(inputs_problem));
  if (!ratios.empty()) {
    js << ", \"pair\": {\"ratio_median\": " << json_number(pair.median) << ", \"ratio_rel_se\": "
       << json_number(pair.rel_se) << ", \"samples\": " << pair.count
       << ", \"noisy\": " << (pair.rel_se > o.target_rel_se ? "true" : "false") << "}";
  } else {
    js << ", \"pair\": null";
  }
  js << ", \"results\": [";
  bool first = true;
  for (auto& r : results) {
    const bool timed = !r.ms.empty();
    const bool is_student = r.c.role == Role::Student;
    if (r.check_failures > 0 && (is_student || r.c.role == Role::Reference)) m->any_failure = true;
    if (is_student && !inputs_problem.empty()) m->any_failure = true;
    js << (first ? "" : ", ") << "{\"name\": " << json_string(r.c.name) << ", \"role\": "
       << json_string(to_string(r.c.role)) << ", \"description\": " << json_string(r.c.description)
       << ", \"median_ms\": " << json_optional(r.s.median, timed) << ", \"q1_ms\": " << json_optional(r.s.q1, timed)
       << ", \"q3_ms\": " << json_optional(r.s.q3, timed) << ", \"samples\": " << r.ms.size()
       << ", \"noisy\": " << (r.s.rel_se > o.target_rel_se ? "true" : "false")
       << ", \"throughput\": " << json_optional(throughput(r), timed)
       << ", \"pct_peak\": " << json_optional(100 * throughput(r) / w.peak, timed && w.peak > 0)
       << ", \"speedup_vs_cpu\": " << json_optional(cpu_ms / r.s.median, timed && cpu_runs > 0)
       << ", \"speed_vs_reference\": "
       << json_optional(reference ? reference->s.median / r.s.median : 0, timed && reference && !reference->ms.empty())
       << ", \"speed_vs_library\": " << json_optional(library ? library->s.median / r.s.median : 0, timed && library)
       << ", \"checks\": " << r.checks << ", \"check_failures\": " << r.check_failures
       << ", \"first_failure\": " << (r.first_failure.empty() ? "null" : json_string(r.first_failure))
       << ", \"host_suspect\": " << r.host_suspect
       << ", \"inputs_changed\": " << (is_student && !inputs_problem.empty() ? "true" : "false") << "}";
    first = false;
  }
  js << "]}";
  m->workload_json.push_back(js.str());
  std::fflush(stdout);
}

int Harness::finish() {
  const DeviceFacts& f = m->facts;
  if (!m->opt.json_path.empty()) {
    std::ofstream out(m->opt.json_path);
    out << "{\"schema\": \"labkit-bench\", \"version\": 1, \"status\": \"ok\", \"lab\": " << json_string(m->lab)
        << ", \"seed\": " << run_seed() << ",\n \"device\": {\"name\": " << json_string(f.name)
        << ", \"sms\": " << f.sms << ", \"sm_clock_mhz\": " << json_number(f.sm_clock_mhz)
        << ", \"l2_bytes\": " << f.l2_bytes << ", \"peak_dram_gbps\": " << json_number(f.peak_dram_gbps)
        << ", \"peak_fp32_gflops\": " << json_number(f.peak_fp32_gflops)
        << ", \"peak_rsqrt_gops\": " << json_number(f.peak_rsqrt_gops) << "},\n \"reference\": {\"path\": "
        << json_string(m->reference.path()) << ", \"loaded\": " << (m->reference.loaded() ? "true" : "false")
        << ", \"variant\": " << json_string(m->opt.reference_variant) << ", \"error\": "
        << (m->reference.error().empty() ? "null" : json_string(m->reference.error())) << "},\n \"workloads\": [";
    for (std::size_t i = 0; i < m->workload_json.size(); ++i) out << (i ? ",\n  " : "\n  ") << m->workload_json[i];
    out << "],\n \"errors\": [";
    for (std::size_t i = 0; i < m->errors.size(); ++i) out << (i ? ", " : "") << json_string(m->errors[i]);
    out << "]}\n";
    if (!out) {
      std::fprintf(stderr, "error: could not write %s\n", m->opt.json_path.c_str());
      return 1;
    }
  }
  return m->any_failure ? 1 : 0;
}

}  // namespace lab::bench
