// Provided by the kit. lab/bench_stats.h.
#include "lab/bench_stats.h"

#include <algorithm>
#include <cmath>

namespace lab::bench {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double pos = q * (values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return values[lo] + (values[hi] - values[lo]) * (pos - lo);
}

Summary summarize(const std::vector<double>& values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  s.median = quantile(values, 0.5);
  s.q1 = quantile(values, 0.25);
  s.q3 = quantile(values, 0.75);
  // σ ≈ IQR / 1.349 for a normal sample; the median's standard error is ≈ 1.2533 σ / √n.
  const double sigma = (s.q3 - s.q1) / 1.349;
  s.rel_se = s.median > 0 ? 1.2533 * sigma / std::sqrt(static_cast<double>(s.count)) / s.median : 0.0;
  return s;
}

bool should_stop(const StopRule& rule, const Summary& s, double elapsed_seconds) {
  if (s.count >= rule.max_samples || elapsed_seconds >= rule.max_seconds) return true;
  return s.count >= rule.min_samples && elapsed_seconds >= rule.min_seconds && s.rel_se <= rule.target_rel_se;
}

bool host_time_suspect(double event_ms, double host_ms) {
  // The host time includes launch and synchronisation overhead (tens of microseconds);
  // only a large excess means the events missed work.
  return host_ms > 2.0 * event_ms + 0.5;
}

}  // namespace lab::bench
