// Provided by the kit. The bench's sampling (lab/bench.h): one call of a candidate
// (prepare, flush the L2, time, check) and the warm-up and interleaved rounds of one
// workload, up to the stopping rule (lab/bench_stats.h).
#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nvtx3/nvToolsExt.h>

#include "bench_internal.h"
#include "stream_fence.h"
#include "lab/bench_stats.h"
#include "lab/cuda_check.h"
#include "lab/padding.h"
#include "lab/timing_lead.h"

namespace lab::bench::detail {
namespace {

// How many times a sample whose stamps the judge's clock contradicts is made again.
constexpr int kRetakes = 3;
// How many contradicted calls of a candidate the report describes.
constexpr std::size_t kMissesKept = 16;

// Keeps what a contradicted call's clocks said, for the report.
void note_miss(CandidateResult& r, const Sample& s) {
  if (!s.contradicted || s.stamped_ms < 0 || r.boundary_miss_gaps.size() >= kMissesKept) return;
  r.boundary_miss_gaps.push_back(s.fenced_ms - s.stamped_ms);
  r.boundary_bound_ms = s.bound_ms;
}

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

// Untimed, before a call: fresh (or the first) inputs, prepared outputs, new canaries in
// the padding of a checked call's buffers (before the L2 flush: the flush evicts them,
// and nothing of the guard runs while timed), the flush, and the device idle.
void set_up_call(const Workload& w, DeviceBuffer<unsigned char>& flush, Remote* remote, bool timed, Rng* pick,
                 bool guarded) {
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
}

// What time_call() saw: the calls forwarded to workers, and the host's clock.
struct CallTimes {
  RemoteSample forwarded;
  double host_ms = 0;
};

// The timed call, between the events `start` and `stop`; the stop event waits for the
// work of the implementation's own streams too (stream_fence.h), as the worker's does. A
// call forwarded to a worker (judge programs): right after the stop event the judge holds
// the GPU for a moment, so that the output check it enqueues next runs before a worker that
// said "done" too early could finish behind the judge's back.
CallTimes time_call(CandidateResult& r, Remote* remote, bool timed, cudaEvent_t start, cudaEvent_t stop) {
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
    if (lab::streams::take_refused()) throw std::runtime_error(lab::streams::kTooManyStreams);
    LAB_CUDA_CHECK(lab::streams::wait_for_streams());
    LAB_CUDA_CHECK(cudaEventRecord(stop, nullptr));
  }
  CallTimes times;
  times.forwarded = remote != nullptr ? remote->end_sample() : RemoteSample{};
  if (times.forwarded.calls > 0) {
    r.remote = true;
    remote->hold_gpu();
    LAB_CUDA_CHECK(cudaEventSynchronize(stop));
  } else {
    // Wait for the whole device, not only the stop event: work hidden on another
    // stream then shows in the host time.
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
  }
  times.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - host0).count();
  return times;
}

// Untimed, after a checked call: its output, its inputs (with fresh data the next call
// overwrites them) and the canaries in its buffers' padding.
void check_call(CandidateResult& r, const Workload& w) {
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

// A forwarded call's time: the worker's clock stamps where the judge's own clock (start
// event to fence, `fenced_ms`) agrees, else the judge's clock minus the calibrated
// boundary (common/judge/session.cu).
void use_stamps(Remote& remote, const RemoteSample& forwarded, double fenced_ms, Sample& s) {
  const RemoteStamps stamps = remote.read_stamps();
  s.stamped_ms = stamps.valid ? stamps.ms : -1.0;
  s.judged_ms = fenced_ms - forwarded.gap_ms;  // the judge's clock, less the usual boundary
  // The boundary's cost, plus 2% of the call: a long call's wait for the GPU costs a
  // little more to notice (forged stamps can gain at most that much).
  const double bound = forwarded.bound_ms + 0.02 * std::max(0.0, stamps.ms);
  s.bound_ms = bound;
  if (stamps.valid && fenced_ms - stamps.ms <= bound) {
    s.ms = std::max(1e-6, stamps.ms);
  } else {
    s.ms = std::max(1e-6, fenced_ms - forwarded.bound_ms);
    s.contradicted = true;
  }
}

}  // namespace

Sample sample(CandidateResult& r, const Workload& w, DeviceBuffer<unsigned char>& flush, Remote* remote, bool timed,
              Rng* pick) {
  Sample s;
  const bool guarded = !r.c.unchecked;
  try {
    set_up_call(w, flush, remote, timed, pick, guarded);
    cudaEvent_t start, stop;
    LAB_CUDA_CHECK(cudaEventCreate(&start));
    LAB_CUDA_CHECK(cudaEventCreate(&stop));
    const CallTimes times = time_call(r, remote, timed, start, stop);
    // The canaries' compare, enqueued first: behind the judge's hold, before a worker
    // that answered early could put them back (hold_gpu); read after the output check.
    if (guarded) padding_guard().launch_check();
    float ms = 0;
    LAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    s.ms = ms;
    s.fenced_ms = ms;
    if (timed && times.forwarded.calls == 0 && host_time_suspect(ms, times.host_ms)) ++r.host_suspect;
    if (!r.c.unchecked) check_call(r, w);
    if (times.forwarded.calls > 0) use_stamps(*remote, times.forwarded, ms, s);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    LAB_CUDA_CHECK(cudaEventDestroy(start));
    LAB_CUDA_CHECK(cudaEventDestroy(stop));
    s.ok = true;
    return s;
  } catch (const std::exception& e) {
    r.failed = true;
    ++r.check_failures;
    // A stream creation refused inside the call (more than the timer follows) explains
    // the CUDA error the call then threw.
    std::string why = e.what();
    if (lab::streams::take_refused()) why = std::string(lab::streams::kTooManyStreams) + " (" + why + ")";
    if (r.first_failure.empty()) r.first_failure = why;
    return s;
  }
}

namespace {

// Warm-up: one checked call each (module loading, workspace growth), then `seconds` more
// (--warm-up, 0.1 by default).
void warm_up(std::vector<CandidateResult>& results, const Workload& w, DeviceBuffer<unsigned char>& flush,
             Remote* remote, double seconds) {
  for (auto& r : results) sample(r, w, flush, remote, false);
  const auto warm0 = Clock::now();
  while (seconds_since(warm0) < seconds) {
    for (auto& r : results) {
      if (!r.failed) sample(r, w, flush, remote, false);
    }
  }
  for (auto& r : results) {  // warm-up checks count only when they failed
    if (r.check_failures == 0) r.checks = 0;
  }
}

StopRule stop_rule(const Options& o, const Workload& w) {
  StopRule rule;
  rule.min_samples = static_cast<std::size_t>(o.min_samples);
  rule.max_samples = static_cast<std::size_t>(o.max_samples);
  rule.min_seconds = o.min_seconds;
  rule.max_seconds = w.max_seconds > 0 ? w.max_seconds : o.max_seconds;
  rule.target_rel_se = o.target_rel_se;
  return rule;
}

// Candidates other than the student and the reference stop early once they have enough
// samples or used their share.
bool has_enough(const CandidateResult& r, const StopRule& rule) {
  if (r.ms.size() >= rule.min_samples && (r.spent_s > rule.max_seconds / 4 || r.ms.size() >= rule.max_samples)) {
    return true;
  }
  return r.ms.size() >= 3 && r.spent_s > rule.max_seconds / 2;
}

// One timed sample of `r`, kept in its results; false when `r` failed.
bool take_sample(CandidateResult& r, const Workload& w, DeviceBuffer<unsigned char>& flush, Remote* remote,
                 Rng& pick, double* ms) {
  Sample s = sample(r, w, flush, remote, true, &pick);
  if (!s.ok) return false;
  // Stamps the judge's clock contradicts: the call is made again, up to kRetakes
  // times, and the first agreeing call is the sample. An honest call meets a late
  // hand-over between the processes now and then (the H100 showed up to half of a
  // run's calls), rarely on every retake; forged stamps are contradicted on every
  // call, so the sample stays suspect and is timed by the judge's clock. Each retake
  // waits a little longer first (2, 4, 8 ms), so that one burst of disturbance does
  // not spoil them all.
  for (int retake = 0; s.contradicted && retake < kRetakes; ++retake) {
    note_miss(r, s);
    ++r.boundary_retaken;
    std::this_thread::sleep_for(std::chrono::milliseconds(2 << retake));
    s = sample(r, w, flush, remote, true, &pick);
    if (!s.ok) break;
  }
  if (r.failed) return false;
  if (s.contradicted) {
    note_miss(r, s);
    ++r.boundary_suspect;
  }
  if (r.remote && s.stamped_ms >= 0) r.boundary_excess.push_back(s.judged_ms - s.stamped_ms);
  r.ms.push_back(s.ms);
  r.spent_s += s.ms / 1e3;
  *ms = s.ms;
  return true;
}

// Interleaved sampling: every round times each candidate once, in the same order.
void sample_rounds(WorkloadResult& out, CandidateResult* student, CandidateResult* reference, const Workload& w,
                   const StopRule& rule, DeviceBuffer<unsigned char>& flush, Remote* remote) {
  std::vector<CandidateResult>& results = out.results;
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
      if (!essential && has_enough(r, rule)) continue;
      double ms = 0;
      if (!take_sample(r, w, flush, remote, pick, &ms)) continue;
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
}

}  // namespace

void sample_workload(Workload& w, WorkloadResult& out, const Options& o, DeviceBuffer<unsigned char>& flush,
                     Remote* remote) {
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
  if (remote != nullptr) remote->set_timing(true);
  warm_up(results, w, flush, remote, o.quick ? 0.0 : o.warm_up_seconds);
  sample_rounds(out, student, reference, w, stop_rule(o, w), flush, remote);
  if (remote != nullptr) remote->set_timing(false);
  for (auto& r : results) {
    if (!r.boundary_excess.empty()) r.boundary_excess_ms = summarize(r.boundary_excess).median;
  }
}

}  // namespace lab::bench::detail
