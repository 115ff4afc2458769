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

// The boundary of one worker: the judge's clock minus the stamps (the "gap") of
// `samples` empty requests, its median and the bound a real call's gap may reach.
Boundary calibrate(Remote& remote, bool reference, DeviceBuffer<unsigned char>& flush, int samples) {
  CandidateResult r;
  r.c.call = [&] { remote.noop(reference); };
  r.c.unchecked = true;
  const Workload none;
  std::vector<double> gaps;
  for (int i = 0; i < samples + 5; ++i) {
    const Sample s = sample(r, none, flush, &remote, true);
    if (!s.ok) {
      throw std::runtime_error("the boundary could not be calibrated: " + r.first_failure);
    }
    if (s.stamped_ms < 0) {
      throw std::runtime_error("the boundary could not be calibrated: the worker sent no clock stamps");
    }
    if (i >= 5) gaps.push_back(s.fenced_ms - s.stamped_ms);  // the first few warm the path up
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

void calibrate_boundaries(Remote& remote, bool with_reference, DeviceBuffer<unsigned char>& flush, int samples,
                          Boundary& student, Boundary& reference) {
  student = calibrate(remote, false, flush, samples);
  remote.set_boundary(false, student.gap.median, student.bound_ms);
  if (with_reference) {
    reference = calibrate(remote, true, flush, samples);
    remote.set_boundary(true, reference.gap.median, reference.bound_ms);
  }
  std::printf("boundary per call beyond the worker's stamps: student %.4f ms (IQR %.4f, bound %.4f), "
              "reference %.4f ms (IQR %.4f, bound %.4f)\n",
              student.gap.median, student.gap.q3 - student.gap.q1, student.bound_ms, reference.gap.median,
              reference.gap.q3 - reference.gap.q1, reference.bound_ms);
}

}  // namespace lab::bench::detail
