// Provided by the kit. Where the implementation under test runs.
//
// In a student's own test and bench programs the implementation is linked in. In the
// grader's judge programs (<lab>_judge_test, <lab>_judge_bench) it is not: the interface
// functions are proxies that forward each call to a sandboxed worker process, and the
// judge library installs a Remote at start-up that the test main and the bench harness
// use to start workers, find their variants and time their calls. This header is the
// seam between the two, so the harness needs no judge code of its own.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lab/variants.h"

namespace lab {

/// How to start the workers of a judge program (its command-line options).
struct RemoteOptions {
  std::string impl;            ///< the implementation library under test (--impl)
  std::string worker;          ///< the worker program (--worker; default: the one built with the lab)
  double call_timeout_s = 60;  ///< a call that takes longer is a hang (--call-timeout)
  bool sandbox = true;         ///< --no-sandbox turns the worker's sandbox off (debugging only)
  bool sync_launches = false;  ///< the worker checks every kernel launch synchronously (tests)
  /// --exact-bounds (the grader's sanitizer runs): the student's worker calls the code under
  /// test on copies of exactly each device argument's extent, so memcheck sees every access
  /// past an array (lab/judge/wire.h, Arg::extent).
  bool exact_bounds = false;
  /// --launch-log=FILE: the student's worker records each call's kernel launches and the
  /// judge writes them to FILE, one JSON line per call (grader/CONTRACT.md, "Sanitizer runs").
  std::string launch_log;
  /// Before each timed call, ahead of its lead, each worker makes a small memset and a
  /// 4-byte synchronous copy to the host of its own, outside its clock stamps, as a direct
  /// bench's set-up does in its own process before every call: the call's own copies then
  /// find the copy path as they do in the student's bench (grader/tests/fairness_probe.py
  /// says why). --cold-copies (a diagnostic of the fairness tools, never the grader's)
  /// turns it off.
  bool warm_copies = true;
};

/// One of the judge programs' own options. The test main and the bench both read this
/// table, for parsing and for --help, so the two kinds of judge program agree.
struct RemoteOptionSpec {
  const char* name;   ///< "--impl"
  const char* value;  ///< the value's name in --help, or null for a flag
  const char* help;
  /// Sets the option; throws std::invalid_argument, with a message, for a bad value.
  void (*apply)(RemoteOptions& options, const std::string& value);
};

/// --impl, --worker, --call-timeout, --no-sandbox, --exact-bounds, --launch-log and --cold-copies.
const std::vector<RemoteOptionSpec>& remote_option_table();

/// The calls one timed sample forwarded to workers.
struct RemoteSample {
  int calls = 0;          ///< calls forwarded during the sample
  double bound_ms = 0.0;  ///< the most their boundary may cost (calibrated), summed over the calls
  double gap_ms = 0.0;    ///< what their boundary costs as a rule (the calibration's median), summed
};

/// The workers' clock stamps of the calls of one sample: their events' elapsed times.
struct RemoteStamps {
  bool valid = false;  ///< every call came back with a plausible time
  double ms = 0.0;     ///< the stamped time, summed over the calls
};

/// Implementations that run in worker processes (installed by the judge library).
class Remote {
 public:
  virtual ~Remote() = default;
  /// Sets the options; called once, before anything else.
  virtual void configure(const RemoteOptions& options) = 0;
  /// Starts the student's worker and registers its variants in local_variants(), so the
  /// tests and the bench find them as they find linked ones. Returns "" or why it failed.
  virtual std::string start_student() = 0;
  /// A registry whose variants run the library at `path` in a worker of its own (the
  /// bench's reference); null with `*error` set when it cannot be started.
  virtual const VariantRegistry* load_reference(const std::string& path, std::string* error) = 0;
  /// Timing mode on or off: workers spin between requests, each forwarded call is
  /// bracketed by clock stamps (CUDA events) in the worker, and ends with a fence in the judge's stream
  /// that waits until the GPU is the judge's again.
  virtual void set_timing(bool on) = 0;
  /// Starts counting the forwarded calls of one sample (and clears the stamps).
  virtual void begin_sample() = 0;
  /// The calls forwarded since begin_sample().
  virtual RemoteSample end_sample() = 0;
  /// The stamps of the sample's calls (read once the sample's work is done).
  virtual RemoteStamps read_stamps() = 0;
  /// Keeps the judge's context busy on the GPU for a moment, so that the output check
  /// enqueued next runs before a worker could resume (see common/judge/session.cu).
  virtual void hold_gpu() = 0;
  /// Sends one empty request to the worker of `reference` or of the student: the boundary's own cost.
  virtual void noop(bool reference) = 0;
  /// Records what a call to one worker costs at the boundary beyond its stamped time, as a
  /// rule (`gap_ms`) and at most (`bound_ms`), both calibrated with empty requests: for a
  /// call that follows the other worker's call (`after_other`) or the same worker's. Each
  /// forwarded call is held to the figures for what the judge forwarded just before it.
  virtual void set_boundary(bool reference, bool after_other, double gap_ms, double bound_ms) = 0;
  /// Lines for the report: the sandbox in force in each worker, restarts.
  virtual std::string describe() const = 0;
  /// Host memory the workers can read and write (lab::HostBuffer's storage in a judge
  /// program: one arena of fixed size shared with every worker). Throws
  /// std::length_error, with the arena's size in the message, when it is full.
  virtual void* allocate_host(std::size_t bytes) = 0;
  /// Returns memory from allocate_host().
  virtual void free_host(void* pointer) noexcept = 0;
};

/// The installed Remote, or null in programs that link the implementation.
Remote* remote();
/// Installs `r` (the judge library does this at start-up).
void install_remote(Remote* r);

}  // namespace lab
