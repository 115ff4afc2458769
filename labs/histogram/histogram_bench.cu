// Provided by the kit: do not edit. Times histogram.
//
//   ./build/dev/bin/histogram_bench                 default sizes (see below)
//   ./build/dev/bin/histogram_bench --size 1000000  one size of your own, in every workload
//
// Workloads:
//  1. uniform values in [0, 256) into 256 bins (graded, at two sizes: n = 2^26 and
//     n = 30,000,001, an odd size that is a multiple of no block or vector width, so that
//     the tail is timed too; the grade is the geometric mean of the two ratios to the
//     reference): GB/s = 4 bytes x n / time (the input is read once; the bins are too
//     small to count), beside CUB's histogram. Every timed call gets fresh values,
//     written on the GPU, whose expected bins the bench counts there with CUB: bins
//     replayed from an earlier call, or cached per data set, instead of counted, fail
//     the check;
//  2. skewed values in [0, 256) (a quarter of them are 0), with CUB;
//  3. all-equal values: every thread adds to the same bin (the worst case for atomics);
//  4. uniform values in [0, 4096) into 4096 bins (the largest count), with CUB;
//  5. uniform values in [0, 16) into 16 bins (lecture 6's example: few bins, many
//     collisions), with CUB.
// Workloads 2 to 5 are timed at n = 2^26 only.
// Every workload also times the reference's variants, including 'racy', which loses
// counts and so shows "FAILED" in the check column: that is the point of it.
// The CPU version is timed with the sdkTimer API for the speedup columns.
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "histogram.h"
#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"

namespace {

// One timed problem: its values and bin count.
struct Shape {
  const char* label;              // for the workload's name
  std::uint64_t range;            // values in [0, range)
  lab::Distribution distribution;
  int num_bins;
  bool graded;
};

// Times one workload: the values of shape `s`, n of them. Sets up its input, bins,
// expected bins and CUB's scratch memory, times every candidate, and frees it all on return.
void run_shape(lab::bench::Harness& h, const Shape& s, int n) {
  const std::size_t bytes = sizeof(unsigned) * static_cast<std::size_t>(n);
  const int num_bins = s.num_bins;

  // The input, the bins (room for the largest bin count) and the
  // expected bins: [0] for data set 0, [1] for the graded workload's fresh data.
  lab::DeviceBuffer<unsigned> d_in(n), d_bins(kHistogramMaxBins);
  lab::DeviceBuffer<unsigned> d_expected[2] = {lab::DeviceBuffer<unsigned>(num_bins),
                                               lab::DeviceBuffer<unsigned>(num_bins)};
  std::vector<unsigned> host_bins(num_bins);

  // CUB's DeviceHistogram::HistogramEven with num_bins + 1 levels 0, 1, ..., num_bins
  // puts a sample v with 0 <= v < num_bins into bin (v - 0) * num_bins / (num_bins - 0)
  // = v, which is v % num_bins: on these inputs (every value is below num_bins) it does
  // exactly our job. (For larger values the two differ: CUB drops samples outside
  // [lower, upper), histogram wraps them around with the modulo.) It is a candidate, and
  // it counts the expected bins of the graded workload's fresh data. Its scratch memory
  // is sized by a first query call and allocated once, outside the timed calls and the
  // generator.
  std::size_t cub_temp_bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, cub_temp_bytes, d_in.data(), d_bins.data(),
                                                     num_bins + 1, 0u, static_cast<unsigned>(num_bins), n));
  lab::DeviceBuffer<unsigned char> cub_temp(std::max<std::size_t>(cub_temp_bytes, 1));

  // Data set 0 of this workload (the warm-up, the CPU, and every call of the ungraded
  // workloads), its expected result, and a pristine copy of the input to check it against.
  const lab::Seed seed = lab::case_seed(std::string("bench_") + lab::to_string(s.distribution), s.range);
  const std::vector<unsigned> values = lab::random_uints(static_cast<std::size_t>(n), s.range, s.distribution, seed);
  std::vector<unsigned> expected(num_bins);
  histogram_cpu(values.data(), n, expected.data(), num_bins);
  d_in.upload(values);
  d_expected[0].upload(expected);
  lab::bench::PristineInputs inputs;
  inputs.watch("the input", d_in);

  using Fn = decltype(histogram);
  lab::bench::Workload w;
  w.name = std::string("histogram ") + s.label + ", " + std::to_string(num_bins) + " bins, n=" + std::to_string(n);
  w.function = "histogram";
  w.graded = s.graded;
  w.unit = "GB/s";
  w.amount = static_cast<double>(bytes);  // every value is read once
  w.peak = h.device().peak_dram_gbps;
  if (s.graded) {
    // Fresh values before every timed call (see the comment at the top), uniform in
    // [0, range) like set 0 (the generator knows no other distribution), and their bins
    // counted by CUB on the GPU: one read of the input, about one reference call.
    if (s.distribution != lab::Distribution::Uniform) {
      throw std::logic_error("histogram bench: the graded workload's fresh values are uniform");
    }
    inputs.use_fresh_in(w, [&](lab::Seed fresh_seed) {
      lab::bench::fill_uints(d_in.data(), static_cast<std::size_t>(n), s.range, fresh_seed);
      std::size_t temp_bytes = cub_temp.bytes();
      LAB_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(cub_temp.data(), temp_bytes, d_in.data(),
                                                         d_expected[inputs.fresh_set()].data(), num_bins + 1, 0u,
                                                         static_cast<unsigned>(num_bins), n));
    });
  }
  w.prepare = [&] { d_bins.poison(); };  // 0xFFFFFFFF everywhere: the bins must be overwritten
  w.check = [&] {
    return lab::bench::check_equal_device(d_expected[inputs.current()].data(), d_bins.data(), num_bins);
  };
  w.inputs_check = [&] { return inputs.check(); };
  w.cpu = [&] { histogram_cpu(values.data(), n, host_bins.data(), num_bins); };
  h.add_implementations<Fn>(w, "histogram", histogram,
                            [&](Fn* fn) { return [&, fn] { fn(d_in.data(), n, d_bins.data(), num_bins); }; });

  lab::bench::Candidate library;
  library.name = "CUB HistogramEven";
  library.role = lab::bench::Role::Library;
  library.description = "cub::DeviceHistogram::HistogramEven, levels 0, 1, ..., num_bins";
  library.call = [&] {
    std::size_t temp_bytes = cub_temp.bytes();
    LAB_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(cub_temp.data(), temp_bytes, d_in.data(), d_bins.data(),
                                                       num_bins + 1, 0u, static_cast<unsigned>(num_bins), n));
  };
  library.check = [&]() -> std::string {
    const std::string problem =
        lab::bench::check_equal_device(d_expected[inputs.current()].data(), d_bins.data(), num_bins);
    return problem.empty() ? problem : "CUB's bins differ from the expected bins: " + problem;
  };
  h.add_candidate(w, library);
  h.run(w);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);

  // 1. The graded workload, at each graded size; 2^26 first.
  const Shape graded = {"uniform values in [0, 256)", 256, lab::Distribution::Uniform, 256, true};
  for (const long long size : lab::bench::graded_sizes(h, 1 << 26)) run_shape(h, graded, static_cast<int>(size));
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade

  // 2 to 5: the other distributions and bin counts, at one size.
  const int n = static_cast<int>(h.size_or(1 << 26));
  const Shape others[] = {
      {"skewed values in [0, 256)", 256, lab::Distribution::Skewed, 256, false},
      {"all-equal values", 256, lab::Distribution::AllEqual, 256, false},
      {"uniform values in [0, 4096)", 4096, lab::Distribution::Uniform, 4096, false},
      {"uniform values in [0, 16)", 16, lab::Distribution::Uniform, 16, false},
  };
  for (const Shape& s : others) run_shape(h, s, n);
  return h.finish();
}
