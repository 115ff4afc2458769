// Provided by the kit. The timing harness (lab/bench.h): its set-up, the reference
// loader, and measure/run/finish, which put the other parts together: the options
// (bench_options.cpp), the sampling (bench_sampling.cu), the boundary calibration of
// judge programs (bench_boundary.cu), the table and the JSON (bench_report.cpp).
#include "lab/bench.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_internal.h"
#include "lab/bench_document.h"
#include "lab/bench_stats.h"
#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/padding.h"
#include "lab/remote.h"
#include "lab/sdk_timer.h"

namespace lab::bench {
namespace {

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

// ---- the harness -------------------------------------------------------------------

struct Harness::State {
  std::string lab;
  Options opt;
  DeviceFacts facts;
  Reference reference;
  std::vector<std::string> errors;
  std::vector<WorkloadResult> workloads;
  bool any_failure = false;
  DeviceBuffer<unsigned char> shift;  // --shift-allocations: held, never used
  DeviceBuffer<unsigned char> flush;
  Remote* remote = nullptr;  // judge programs: the implementations run in workers
  Boundary student_boundary, reference_boundary;  // the boundary of each worker
  bool timing_begun = false;  // past the gate, and (judge programs) the boundary calibrated
  std::string first_graded;   // the first graded workload given to add_implementations()
  detail::Clock::time_point started = detail::Clock::now();
  BenchSeconds seconds;       // where the run's wall time went (the JSON's "seconds")
};

namespace {

// No GPU: says so, writes the no_gpu document when asked (--json) and exits 3.
[[noreturn]] void exit_without_gpu(const std::string& lab, const Options& o, const std::string& why) {
  std::fprintf(stderr, "No CUDA GPU (%s): the bench needs an NVIDIA GPU.\n", why.c_str());
  if (!o.json_path.empty()) {
    BenchDocument doc;
    doc.status = "no_gpu";
    doc.lab = lab;
    doc.message = "No CUDA GPU: " + why;
    (void)write_bench_json(o.json_path, doc);
  }
  std::exit(3);
}

}  // namespace

Harness::Harness(int argc, char** argv, std::string default_reference) : m(new State) {
  reuse_freed_host_memory();  // inputs and expected results: no page faults paid again for each array
  // Whole 2 MiB pages for every buffer the bench allocates from here on: in a judge
  // program the workers import them (set_device_allocation_granularity says why).
  set_device_allocation_granularity(std::size_t{2} << 20);
  m->lab = lab_name();  // the lab's folder, as add_lab generated it (lab/variants.h)
  if (m->lab.empty()) {
    std::fprintf(stderr, "error: this bench was built without its lab's generated facts (add_lab, cmake/LabKit.cmake)\n");
    std::exit(2);
  }
  m->opt = detail::parse_options(m->lab, argc, argv, std::move(default_reference));
  const Options& o = m->opt;
  m->remote = remote();
  try {
    if (o.seed_given) set_run_seed(o.seed);
    (void)run_seed();
  } catch (const std::exception& e) {
    detail::refuse_options(m->lab, e.what());
  }

  std::string why;
  if (!gpu_available(&why)) exit_without_gpu(m->lab, o, why);
  m->facts = device_facts();
  if (o.shift_mib > 0) m->shift = DeviceBuffer<unsigned char>(static_cast<std::size_t>(o.shift_mib * 1048576.0));
  // Twice the L2 size: reading it evicts whatever the previous call left in the cache
  // (bench_sampling.cu, flush_l2). Zeroed once, so that the sweep reads defined bytes.
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
  m->seconds.set_up = detail::seconds_since(m->started);
  const auto ready = detail::Clock::now();
  wait_for_gate(m->opt.gate_fd, m->lab);
  m->seconds.gate = detail::seconds_since(ready);
  const auto go = detail::Clock::now();
  if (m->remote != nullptr) {
    std::printf("judge: the implementations run in sandboxed worker processes\n%s", m->remote->describe().c_str());
    m->remote->set_timing(true);
    try {
      const int samples = m->opt.quick ? 20 : 200;
      detail::calibrate_boundaries(*m->remote, m->reference.loaded(), m->flush, samples, m->student_boundary,
                                   m->reference_boundary);
    } catch (const std::exception& e) {
      note_error(e.what());
    }
    m->remote->set_timing(false);
  }
  m->seconds.calibration = detail::seconds_since(go);
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

namespace {

// The CPU version, timed with the sdkTimer API as the lectures do.
void time_cpu(Workload& w, WorkloadResult& out) {
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

}  // namespace

WorkloadResult Harness::measure(Workload& w) {
  begin_timing();
  const auto start = detail::Clock::now();
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
  if (w.cpu && !o.no_cpu) time_cpu(w, out);
  detail::sample_workload(w, out, o, m->flush, m->remote);
  if (w.inputs_check) {
    try {
      out.inputs_problem = w.inputs_check();
    } catch (const std::exception& e) {
      out.inputs_problem = e.what();
    }
  }
  // The inputs checked, set 0 goes back in: the next workload may read the same buffers.
  if (w.restore) w.restore();
  for (auto& r : out.results) r.s = summarize(r.ms);
  out.pair = summarize(out.ratios);
  out.seconds = detail::seconds_since(start);
  m->seconds.workloads += out.seconds;
  return out;
}

namespace {

// Whether a bench question reads its figure from the workload `name` (its "workload").
bool named_by_question(const std::string& name) {
  for (const BenchQuestion& q : bench_questions()) {
    if (!q.workload.empty() && q.workload == name) return true;
  }
  return false;
}

}  // namespace

void Harness::run(Workload& w) {
  // The grade needs the graded workloads, and those a question reads its figure from.
  const bool named = named_by_question(w.name);
  if (m->opt.graded_only && !w.graded && !named) return;
  begin_timing();
  std::printf("\n== %s%s\n", w.name.c_str(), w.graded ? "  [graded]" : "");
  std::fflush(stdout);
  WorkloadResult result = measure(w);
  print_table(result);
  // With --graded-only, a workload timed for a question only leaves the exit code as the
  // graded ones make it: its answer line says when its output was wrong.
  const bool counts = w.graded || !m->opt.graded_only;
  for (const CandidateResult& r : result.results) {
    const bool graded_role = r.c.role == Role::Student || r.c.role == Role::Reference;
    if (counts && graded_role && r.check_failures > 0) m->any_failure = true;
  }
  if (counts && !result.inputs_problem.empty()) m->any_failure = true;
  m->workloads.push_back(std::move(result));
}

int Harness::finish() {
  begin_timing();  // a bench that timed no workload still reports its boundary
  const Options& o = m->opt;
  // The figures the graded questions ask for, as the lines to paste into answers.md.
  const std::vector<AnswerLine> answers = answer_lines(bench_questions(), m->workloads, m->facts, size_given());
  print_answer_lines(m->lab, answers);
  if (!o.json_path.empty()) {
    BenchDocument doc;
    doc.lab = m->lab;
    doc.seed = run_seed();
    doc.options = o;
    doc.device = m->facts;
    doc.reference_path = m->reference.path();
    doc.reference_loaded = m->reference.loaded();
    doc.reference_error = m->reference.error();
    doc.judge = m->remote != nullptr;
    doc.student_boundary = m->student_boundary;
    doc.reference_boundary = m->reference_boundary;
    if (doc.judge) doc.workers = m->remote->describe();
    doc.workloads = m->workloads;
    doc.answers = answers;
    doc.errors = m->errors;
    doc.seconds = m->seconds;
    if (!write_bench_json(o.json_path, doc)) {
      std::fprintf(stderr, "error: could not write %s\n", o.json_path.c_str());
      return 1;
    }
  }
  return m->any_failure ? 1 : 0;
}

}  // namespace lab::bench
