// Provided by the kit. The timing harness every lab's bench uses.
//
// The protocol (DESIGN.md, "Timing protocol"): the implementation under test (the
// "student") and the reference are timed in one process, interleaved, on the same
// inputs. Before every sample the outputs are poisoned and the L2 cache is flushed;
// each sample is bracketed by CUDA events and also timed on the host (a sample whose
// host time is far above its event time hides work on another stream). Every timed
// output is checked. Sampling stops once the median of the student/reference time
// ratio is known to about 1%, or at a cap. Measuring is apart from presenting: each
// workload's measurement is a WorkloadResult, which one function prints as a table and
// another writes as a versioned JSON file for the grader (--json; grader/CONTRACT.md).
//
// In the grader's judge programs (<lab>_judge_bench) the student's implementation and
// the reference run in sandboxed worker processes (lab/remote.h): the harness then times
// each forwarded call up to a fence in its own stream and subtracts the boundary's cost,
// measured at start-up with empty requests (common/judge/session.cu says why).
//
//   lab::bench::Harness h(argc, argv);  // the lab: its manifest's, as add_lab built it
//   lab::bench::Workload w;  … describe inputs, checks, the CPU version …
//   h.add_implementations<decltype(vector_add)>(w, "vector_add", vector_add,
//       [&](auto* fn) { return [=] { fn(a, b, c, n); }; });
//   h.run(w);
//   return h.finish();
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lab/bench_stats.h"
#include "lab/data.h"
#include "lab/device.h"
#include "lab/remote.h"
#include "lab/variants.h"

#ifndef LABKIT_DEFAULT_REFERENCE
#define LABKIT_DEFAULT_REFERENCE ""
#endif

namespace lab::bench {

/// What a timed candidate is, for the table and the grader.
enum class Role { Student, Reference, Variant, Library, Roofline };
/// "student", "reference", "variant", "library", "roofline".
const char* to_string(Role r);

/// One thing to time.
struct Candidate {
  std::string name{};                  ///< shown in the table
  Role role = Role::Variant;           ///< what it is
  std::function<void()> call{};        ///< the timed call (device work on the default stream)
  std::string description{};           ///< one line, optional
  std::function<std::string()> check{};  ///< overrides the workload's check; return "" when right
  bool unchecked = false;              ///< true for rooflines/copies whose output is not the result
  double amount = 0;                   ///< overrides the workload's amount per call (e.g. bytes of a copy)
};

/// One timed problem: the inputs are fixed; every candidate solves it.
struct Workload {
  std::string name;                    ///< e.g. "vector_add n=67108864"
  std::string function;                ///< the interface function, e.g. "vector_add"
  bool graded = false;                 ///< the grader scores the student/reference pair of this workload
  std::string unit = "GB/s";           ///< throughput unit
  double amount = 0;                   ///< amount of `unit` work per call, e.g. bytes moved (GB/s) or keys
  double peak = 0;                     ///< the device's peak in `unit` (0: no % of peak column)
  /// Which of the device's peaks `peak` is a multiple of: "dram", "fp32" or "rsqrt" ("": the
  /// harness finds it, e.g. peak_dram_gbps / 2 is "dram"). The grader scales the peak to
  /// another GPU by it when a student measured there (grader/answers.py).
  std::string peak_of{};
  /// Fresh inputs for timed calls (the graded workloads): when set, the harness calls
  /// `fresh(seed)` before every timed call, with a new seed each time. It writes new
  /// inputs of the same size and distribution into the buffers and computes their
  /// expected result with trusted code (CUB, cuBLAS, a kernel of the bench), so that no
  /// result can be replayed or cached, not even one per data set recognised by a few of
  /// its values. The inputs check then runs after every call. PristineInputs::use_fresh_in()
  /// sets it, and `restore`.
  std::function<void(Seed)> fresh;
  /// Untimed: puts the inputs the workload started with (data set 0) back, before each
  /// warm-up call and after the workload's last call, for what comes next.
  std::function<void()> restore;
  /// True when the inputs change between calls.
  bool varies() const { return static_cast<bool>(fresh); }
  std::function<void()> prepare;       ///< untimed, before every call: poison outputs, restore in-place inputs
  std::function<std::string()> check;  ///< untimed, after every call: "" when the output is right
  std::function<std::string()> inputs_check;  ///< after all samples: "" when inputs are unchanged
  std::function<void()> cpu;           ///< the CPU version, timed with sdkTimer (optional)
  double cpu_min_seconds = 0.3;        ///< repeat the CPU version until this much time has passed…
  int cpu_max_runs = 5;                ///< …or this many runs
  std::vector<Candidate> candidates;   ///< filled by add_implementations() and the lab
  double max_seconds = 0;              ///< sampling time cap (0: the harness default)
  /// Registered variants not timed in this workload, e.g. an O(n^2) one at a large n
  /// (time it in a smaller workload instead).
  std::vector<std::string> skip_variants{};
  /// True when `variant` is in skip_variants.
  bool skips(const std::string& variant) const {
    for (const auto& v : skip_variants) {
      if (v == variant) return true;
    }
    return false;
  }
};

/// A reference implementation loaded from a shared library.
class Reference {
 public:
  /// Loads `path` (dlopen, RTLD_LOCAL so its symbols never clash with the host's); in a
  /// judge program, into a worker process of its own.
  static Reference load(const std::string& path);
  /// True when a library with a variant registry was loaded.
  bool loaded() const { return m_registry != nullptr; }
  /// The library path.
  const std::string& path() const { return m_path; }
  /// Why loading failed ("" when it did not).
  const std::string& error() const { return m_error; }
  /// The library's variants (null when not loaded).
  const VariantRegistry* registry() const { return m_registry; }

 private:
  std::string m_path, m_error;
  const VariantRegistry* m_registry = nullptr;
};

/// Parsed command line (the option table in bench_options.cpp drives both parsing and --help).
struct Options {
  std::string json_path;            ///< --json PATH
  std::string reference_path;       ///< --reference PATH
  std::string reference_variant = "default";  ///< --reference-variant NAME (else the manifest's)
  std::string filter;               ///< --filter TEXT: time only candidates whose name contains it
  bool quick = false;               ///< --quick: few samples, for smoke tests
  bool no_cpu = false;              ///< --no-cpu: skip the CPU version
  bool graded_only = false;         ///< --graded-only: the graded workloads' student, reference, library, roofline
  std::vector<std::string> time_variants;  ///< --time-variants A,B: these variants (and ref:A, ...) are timed anyway
  /// Whether --time-variants names `variant`.
  bool times_variant(const std::string& variant) const {
    for (const std::string& v : time_variants) {
      if (v == variant) return true;
    }
    return false;
  }
  long long size = 0;               ///< --size N: the lab's problem size (0: the lab's default)
  double warm_up_seconds = 0.1;     ///< --warm-up S per workload: untimed calls before its samples
  double min_seconds = 0.3;         ///< --min-time S per workload
  double max_seconds = 6.0;         ///< --max-time S per workload
  int min_samples = 10;             ///< --min-samples N
  int max_samples = 400;            ///< --max-samples N
  double target_rel_se = 0.01;      ///< stop once the ratio's median is known to this
  Seed seed = 0;                    ///< --seed N (when seed_given)
  bool seed_given = false;
  /// --gate-fd N: a socket from the grader. The bench sets up (workers, inputs, expected
  /// results), writes 'r' to it and times nothing until it reads 'g': the grader sets up
  /// the next labs' benches while tests still run and lets each time alone on the GPU.
  int gate_fd = -1;
  double shift_mib = 0;             ///< --shift-allocations MIB: a diagnostic (device memory taken first)
  RemoteOptions remote;             ///< judge programs only: --impl, --worker, --call-timeout, --no-sandbox
};

/// One candidate's measurement in one workload.
struct CandidateResult {
  Candidate c{};
  std::vector<double> ms{};       ///< the samples' times
  std::size_t checks = 0, check_failures = 0, host_suspect = 0;
  std::size_t boundary_suspect = 0;  ///< judge: samples whose stamps the judge's clock contradicts, every retake too
  std::size_t boundary_retaken = 0;  ///< judge: calls made again because the judge's clock contradicted their stamps
  /// judge, per stamped sample: the judge's clock less the boundary's usual cost (the
  /// calibration's median), less the stamps: how much longer the GPU was busy than the
  /// stamps say. For the report (boundary_excess_ms, their median): a diagnostic, not a rule.
  std::vector<double> boundary_excess{};
  double boundary_excess_ms = 0;
  /// judge: the first contradicted calls (retakes too), each as the judge's clock less the
  /// stamps, and the bound they passed: a diagnostic for the report (boundary_misses).
  std::vector<double> boundary_miss_gaps{};
  double boundary_bound_ms = 0;
  std::string first_failure{};    ///< first check or runtime failure
  bool failed = false;            ///< stopped after an exception
  bool remote = false;            ///< ran in a worker process (judge programs)
  double spent_s = 0;             ///< accumulated time
  Summary s{};
};

/// One workload's measurement: what the table and the JSON present.
struct WorkloadResult {
  std::string name, function, unit;
  bool graded = false;
  double amount = 0, peak = 0;
  std::string peak_of;            ///< "dram", "fp32" or "rsqrt"; "" when there is no peak or it is none of them
  double cpu_ms = 0;
  int cpu_runs = 0;
  std::string inputs_problem;     ///< "" when the inputs were unchanged
  std::vector<double> ratios;     ///< student/reference time, per interleaved round
  Summary pair{};
  double target_rel_se = 0.01;
  double seconds = 0;             ///< wall time of its measurement (CPU version, warm-up, rounds, checks)
  std::vector<CandidateResult> results;
  /// The result with `role`, or null.
  const CandidateResult* find(Role role) const;
  /// Throughput of `r` in the workload's unit per second (0 when not timed).
  double throughput(const CandidateResult& r) const;
};

/// Prints one workload's table (the readable output of a bench).
void print_table(const WorkloadResult& w);
/// One workload as a JSON object (grader/CONTRACT.md, "Bench binaries").
std::string workload_json(const WorkloadResult& w);

/// Which of the device's peaks `peak` is (a small whole multiple or fraction of):
/// "dram", "fp32" or "rsqrt"; "" when it is 0 or none of them.
std::string infer_peak_of(double peak, const DeviceFacts& device);
/// How the bench and the grader name a GPU: "NVIDIA H100 80GB HBM3 (sm_90)".
std::string device_label(const DeviceFacts& device);

/// The answer to one bench question (lab/variants.h, BenchQuestion) that this run gives:
/// the question's figure in the row of the implementation under test of its workload (the
/// one it names, else the first graded one), the figure the grader reads, and the line to
/// paste into labs/<lab>/answers.md.
struct AnswerLine {
  std::string id, figure;  ///< the question's
  bool given = false;      ///< false: no figure to give (`why` says why)
  double value = 0;        ///< the figure
  std::string line;        ///< "Answer: 3002 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)"
  std::string why;         ///< when not given
};
/// The lines of `questions` from the measured `workloads`. `size_given`: the run timed a
/// size of the user's own (--size), not the graded one, so it gives no line.
std::vector<AnswerLine> answer_lines(const std::vector<BenchQuestion>& questions,
                                     const std::vector<WorkloadResult>& workloads, const DeviceFacts& device,
                                     bool size_given);
/// Prints the lines, each under the heading it goes to in labs/<lab>/answers.md.
void print_answer_lines(const std::string& lab, const std::vector<AnswerLine>& lines);
/// The lines as a JSON array (grader/CONTRACT.md, "Bench binaries": "answers").
std::string answer_lines_json(const std::vector<AnswerLine>& lines);

class Harness {
 public:
  /// Parses the command line (prints help and exits 0 for --help, exits 2 for bad arguments),
  /// checks for a GPU (exits 3, writing a no_gpu JSON, when there is none), reads the device
  /// facts and loads the reference (the default path comes from the build). The lab's
  /// name is the one add_lab generated from its folder (lab/variants.h, lab_name()).
  Harness(int argc, char** argv, std::string default_reference = LABKIT_DEFAULT_REFERENCE);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  /// The parsed options.
  const Options& options() const;
  /// The device being timed.
  const DeviceFacts& device() const;
  /// The reference (possibly not loaded).
  const Reference& reference() const;
  /// The run's seed.
  Seed seed() const;
  /// The problem size: --size when given, else `fallback`.
  long long size_or(long long fallback) const;
  /// True when --size was given: a size of the user's own, the one graded shape (no odd ones).
  bool size_given() const { return options().size > 0; }
  /// False when the grader asked for the graded workloads only (--graded-only): a lab
  /// skips the set-up of its other workloads then (run() would skip them anyway).
  bool times_everything() const { return !options().graded_only; }

  /// Adds the student (`student`, the linked interface function), the student's other
  /// registered variants of `function`, the reference's graded variant and, when they
  /// are not the linked module's own, the reference's other variants. When the graded
  /// variant is not the reference's fastest (`default`), the fastest is timed too, also
  /// with --graded-only, as `ref:default`: a stretch goal the report shows, never graded.
  /// `bind(fn)` returns the call of one version on the workload's buffers.
  template <class Fn, class Bind>
  void add_implementations(Workload& w, const std::string& function, Fn* student, Bind bind) {
    add_candidate(w, {"student", Role::Student, bind(student), "the implementation under test"});
    // The grade needs the student and the reference only, and the lab's required variants
    // (in the first graded workload only: the report shows their figures there).
    const bool variants = !options().graded_only;
    const bool steps_here = times_required_variants_in(w);
    for (const Variant& v : local_variants().of(function)) {
      const bool required = steps_here && options().times_variant(v.name);
      if ((!variants && !required) || v.name == "default" || w.skips(v.name)) continue;
      add_candidate(w, {v.name, Role::Variant, bind(reinterpret_cast<Fn*>(v.fn)), v.description});
    }
    if (!reference().loaded()) return;
    const VariantRegistry& ref = *reference().registry();
    // A function of an ungraded workload may lack the graded variant (a lab graded
    // against its lecture kernel for one function): it is compared with the fastest.
    const std::string& wanted = options().reference_variant;
    Fn* graded = ref.get<Fn>(function, wanted);
    const bool fallback = graded == nullptr && !w.graded && wanted != "default";
    if (fallback) graded = ref.get<Fn>(function, "default");
    if (graded != nullptr) {
      add_candidate(w, {"reference", Role::Reference, bind(graded),
                        "reference variant '" + (fallback ? std::string("default") : wanted) + "'"});
    } else {
      note_error("reference has no variant '" + wanted + "' of " + function);
    }
    if (wanted != "default" && !fallback && !w.skips("default")) {
      if (Fn* fastest = ref.get<Fn>(function, "default")) {
        add_candidate(w, {"ref:default", Role::Variant, bind(fastest),
                          "the reference's fastest version: a stretch goal, not graded"});
      }
    }
    for (const Variant& v : ref.of(function)) {
      // A required step is timed beside the student's version of it; the rest, by hand,
      // where the linked module does not have it itself.
      const bool required = steps_here && options().times_variant(v.name);
      if (v.name == "default" || w.skips(v.name) ||
          (!required && (!variants || local_variants().find(function, v.name) != nullptr))) {
        continue;
      }
      add_candidate(w, {"ref:" + v.name, Role::Variant, bind(reinterpret_cast<Fn*>(v.fn)), v.description});
    }
  }

  /// Whether the lab's required variants (--time-variants) are timed in `w`: in every
  /// workload, except that of the graded ones only the first (by name) times them; a grade
  /// reads their figures there, and timing them again on every graded shape would cost
  /// time no grade uses.
  bool times_required_variants_in(const Workload& w);
  /// Adds a candidate (library, roofline, …) unless --filter excludes it.
  void add_candidate(Workload& w, Candidate c);
  /// Times every candidate of `w` (the measurement only).
  WorkloadResult measure(Workload& w);
  /// Measures `w`, prints its table and keeps the result for finish(); with --graded-only
  /// a workload that is neither graded nor named by a bench question is skipped (one that
  /// a question names then leaves the exit code alone).
  void run(Workload& w);
  /// Records a problem that is not tied to one candidate (shown and written to JSON).
  void note_error(const std::string& message);
  /// Prints the lines to paste into labs/<lab>/answers.md (one per bench question of the
  /// lab), writes the JSON (when asked) and returns the exit code: 0 all checks passed, 1 otherwise.
  int finish();

 private:
  /// Before the first timing: waits for the grader's go (--gate-fd), then, in a judge
  /// program, calibrates the boundary of each worker. Set-up before it is never timed.
  void begin_timing();

  struct State;
  std::unique_ptr<State> m;
};

/// Number of positions where two device arrays differ (bitwise), counted on the GPU.
std::size_t count_differences(const void* a, const void* b, std::size_t bytes);

/// Standard "" or message check: the first `count` elements of device array `actual`
/// equal those of device array `expected`, bit for bit.
template <class T>
std::string check_equal_device(const T* expected, const T* actual, std::size_t count) {
  const std::size_t diff = count_differences(expected, actual, count * sizeof(T));
  if (diff == 0) return "";
  return std::to_string(diff) + " of " + std::to_string(count * sizeof(T)) +
         " output bytes differ from the expected result";
}

}  // namespace lab::bench
