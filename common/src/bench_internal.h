// Provided by the kit. What the parts of the timing harness (lab/bench.h) give each
// other, and nothing outside them sees.
//   bench.cu           the harness: set-up, measure(), run(), finish()
//   bench_options.cpp  the options: the table, --help, parsing
//   bench_sampling.cu  one sample (prepare, flush, time, check) and the interleaved rounds
//   bench_boundary.cu  the calibration of a judge program's boundary to its workers
//   bench_report.cpp   the table, the answer lines and the JSON document
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_document.h"
#include "lab/buffer.h"
#include "lab/data.h"
#include "lab/remote.h"

namespace lab::bench {

namespace detail {

using Clock = std::chrono::steady_clock;

/// Wall seconds since `t0`.
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- bench_options.cpp ----

/// The command line of `lab`'s bench; prints --help and exits 0, or refuses bad options
/// ("<lab>_bench: error: ...") and exits 2.
Options parse_options(const std::string& lab, int argc, char** argv, std::string default_reference);
/// Refuses the command line of `lab`'s bench: prints the problem, exits 2.
[[noreturn]] void refuse_options(const std::string& lab, const std::string& problem);

// ---- bench_sampling.cu ----

/// One call of a candidate, made by sample().
struct Sample {
  bool ok = false;           ///< false after a failure (the candidate is then marked failed)
  double ms = 0;             ///< the sample's time
  double fenced_ms = 0;      ///< the events' time: in a judge program, the judge's clock up to the fence
  double stamped_ms = -1;    ///< the worker's stamps, -1 when there are none
  double judged_ms = 0;      ///< the judge's clock less the boundary's usual cost (forwarded calls)
  bool contradicted = false; ///< the judge's clock contradicts the stamps
  double bound_ms = 0;       ///< the bound the stamps were held to (forwarded calls)
};

/// Runs one call of `r` (prepare, flush when `timed`, time, check). `pick`, when given
/// and the workload has fresh data, seeds the call's fresh inputs.
Sample sample(CandidateResult& r, const Workload& w, DeviceBuffer<unsigned char>& flush, Remote* remote, bool timed,
              Rng* pick = nullptr);
/// The warm-up and the interleaved sampling rounds of one workload, into `out`'s results.
void sample_workload(Workload& w, WorkloadResult& out, const Options& o, DeviceBuffer<unsigned char>& flush,
                     Remote* remote);

// ---- bench_boundary.cu ----

/// Calibrates the boundary of the student's worker and, when `with_reference`, of the
/// reference's (judge programs), with `samples` empty requests each, split between a call
/// after the worker's own and one after the other worker's; tells `remote` the figures
/// and prints them. Throws std::runtime_error when a worker cannot be calibrated.
void calibrate_boundaries(Remote& remote, bool with_reference, DeviceBuffer<unsigned char>& flush, int samples,
                          Boundary& student, Boundary& reference);

}  // namespace detail
}  // namespace lab::bench
