// Provided by the kit. Statistics behind the bench's stopping rule (host-only, unit tested).
#pragma once

#include <cstddef>
#include <vector>

namespace lab::bench {

/// Median, quartiles and the relative standard error of the median of a sample.
struct Summary {
  std::size_t count = 0;
  double median = 0, q1 = 0, q3 = 0;
  double rel_se = 0;  ///< standard error of the median / median (robust: from the IQR)
};

/// The q-quantile (0 ≤ q ≤ 1) by linear interpolation; 0 for an empty sample.
double quantile(std::vector<double> values, double q);
/// Summarises a sample.
Summary summarize(const std::vector<double>& values);

/// When to stop sampling.
struct StopRule {
  std::size_t min_samples = 10;
  std::size_t max_samples = 400;
  double min_seconds = 0.3;
  double max_seconds = 6.0;
  double target_rel_se = 0.01;
};

/// True once the rule is met: enough samples and time and a precise enough median, or a cap.
bool should_stop(const StopRule& rule, const Summary& s, double elapsed_seconds);

/// True when a sample's host time is far above its event time: work the events did not
/// see, such as kernels on another stream.
bool host_time_suspect(double event_ms, double host_ms);

}  // namespace lab::bench
