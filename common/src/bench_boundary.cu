// Provided by the kit. The boundary of a judge program's workers (lab/bench.h): what a
// forwarded call costs beyond the worker's own clock stamps, measured with empty
// requests before the first timing, so that a real call's stamps can be held against
// the judge's clock (common/judge/session.cu says why).
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "bench_internal.h"
#include "lab/bench_stats.h"

namespace lab::bench::detail {
namespace {

// The gaps of `samples` empty requests to one worker (the judge's clock minus the stamps),
// their median and the bound a real call's gap may reach. With `after_other`, each request
// follows one of the other worker's, untimed in its set-up, as the first call a worker
// serves in each round of a workload follows the other worker's calls.
void calibrate(Remote& remote, bool reference, bool after_other, DeviceBuffer<unsigned char>& flush, int samples,
               Summary& gap, double& bound_ms) {
  CandidateResult r;
  r.c.call = [&] { remote.noop(reference); };
  r.c.unchecked = true;
  Workload set_up;
  if (after_other) set_up.prepare = [&] { remote.noop(!reference); };
  std::vector<double> gaps;
  for (int i = 0; i < samples + 5; ++i) {
    const Sample s = sample(r, set_up, flush, &remote, true);
    if (!s.ok) {
      throw std::runtime_error("the boundary could not be calibrated: " + r.first_failure);
    }
    if (s.stamped_ms < 0) {
      throw std::runtime_error("the boundary could not be calibrated: the worker sent no clock stamps");
    }
    if (i >= 5) gaps.push_back(s.fenced_ms - s.stamped_ms);  // the first few warm the path up
  }
  gap = summarize(gaps);
  // A real call's gap varies a little more than an empty one's (what ran before, the
  // context's size): the bound leaves room for that, and no more, since it is what
  // forged stamps could gain.
  bound_ms = quantile(gaps, 0.95) + std::max(0.02, 0.1 * gap.median);
}

// One worker's boundary, after its own call and, when the other worker exists, after the
// other's (without one, every call but the first follows the worker's own); tells `remote`.
Boundary calibrate_worker(Remote& remote, bool reference, bool other_exists, DeviceBuffer<unsigned char>& flush,
                          int samples) {
  Boundary b;
  // Two conditions share the samples a single one had: the bench's start costs no more.
  const int each = other_exists ? std::max(10, samples / 2) : samples;
  calibrate(remote, reference, false, flush, each, b.gap, b.bound_ms);
  if (other_exists) {
    calibrate(remote, reference, true, flush, each, b.gap_after_other, b.bound_after_other_ms);
  } else {
    b.gap_after_other = b.gap;
    b.bound_after_other_ms = b.bound_ms;
  }
  remote.set_boundary(reference, false, b.gap.median, b.bound_ms);
  remote.set_boundary(reference, true, b.gap_after_other.median, b.bound_after_other_ms);
  return b;
}

}  // namespace

void calibrate_boundaries(Remote& remote, bool with_reference, DeviceBuffer<unsigned char>& flush, int samples,
                          Boundary& student, Boundary& reference) {
  student = calibrate_worker(remote, false, with_reference, flush, samples);
  if (with_reference) reference = calibrate_worker(remote, true, true, flush, samples);
  std::printf("boundary per call beyond the worker's stamps: student %.4f ms (IQR %.4f, bound %.4f; after the "
              "reference's call %.4f, bound %.4f), reference %.4f ms (IQR %.4f, bound %.4f; after the student's "
              "call %.4f, bound %.4f)\n",
              student.gap.median, student.gap.q3 - student.gap.q1, student.bound_ms, student.gap_after_other.median,
              student.bound_after_other_ms, reference.gap.median, reference.gap.q3 - reference.gap.q1,
              reference.bound_ms, reference.gap_after_other.median, reference.bound_after_other_ms);
}

}  // namespace lab::bench::detail
