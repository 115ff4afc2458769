// Provided by the kit. The bench's JSON document (--json; grader/CONTRACT.md, "Bench
// binaries"): what a run measured, as one value, and the one writer that renders it.
// The harness fills it (lab/bench.h); nothing else writes the document.
#pragma once

#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_stats.h"
#include "lab/data.h"
#include "lab/device.h"

namespace lab::bench {

/// The document's "schema" and "version" (grader/CONTRACT.md): change the version with
/// any change the grader must know of.
inline constexpr const char* kBenchSchema = "labkit-bench";
inline constexpr int kBenchSchemaVersion = 1;

/// The boundary of one worker of a judge program, measured with empty requests: the
/// judge's clock minus the worker's stamps (the "gap"), and the bound a real call's gap
/// may reach; each twice, for a call that follows the same worker's call and for one that
/// follows the other worker's (the first a worker serves in each round of a workload: its
/// context comes back to the GPU after the other's, which costs microseconds more).
struct Boundary {
  Summary gap;
  double bound_ms = 0;
  Summary gap_after_other;
  double bound_after_other_ms = 0;
};

/// Where a run's wall time went, in seconds: its set-up (from the harness's start to the
/// grader's gate, or to the first workload), the wait at the gate, the judge's boundary
/// calibration, and the workloads' measurements (WorkloadResult::seconds added up).
struct BenchSeconds {
  double set_up = 0, gate = 0, calibration = 0, workloads = 0;
};

/// Everything the bench's JSON document says.
struct BenchDocument {
  std::string status = "ok";  ///< "ok", or "no_gpu" (then only `message` follows the lab)
  std::string lab;
  std::string message;        ///< no_gpu: why
  Seed seed = 0;
  Options options;
  DeviceFacts device;
  std::string reference_path, reference_error;  ///< reference_error "" when it loaded
  bool reference_loaded = false;
  bool judge = false;         ///< a judge program: the next three are its own
  Boundary student_boundary, reference_boundary;
  std::string workers;        ///< the workers' description
  std::vector<WorkloadResult> workloads;
  std::vector<AnswerLine> answers;
  std::vector<std::string> errors;
  BenchSeconds seconds;
};

/// The document as JSON text, with its final newline.
std::string bench_json(const BenchDocument& doc);
/// Writes bench_json(doc) to `path`; false when it could not be written.
bool write_bench_json(const std::string& path, const BenchDocument& doc);

}  // namespace lab::bench
