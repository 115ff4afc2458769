// Provided by the kit: do not edit. Times reduce_sum and reduce_max.
//
//   ./build/dev/bin/reduction_bench                   default size 2^26 elements
//   ./build/dev/bin/reduction_bench --size 1000000    another size
//   ./build/dev/bin/reduction_bench --filter vec4     only the candidates whose name contains "vec4"
//
// Two workloads, each beside CUB's cub::DeviceReduce (its temporary storage allocated
// once, before timing) and the CPU version (timed with the sdkTimer API):
//  1. reduce_sum of n floats (graded, at two sizes: 2^26 and 30,000,001, an odd size that
//     is a multiple of no block or vector width; the grade is the geometric mean of the
//     two ratios to the reference). A reduction reads every element once and writes
//     one, so GB/s = 4 bytes x n / time, and DRAM bandwidth bounds it: compare with the
//     % peak column. Every timed call gets fresh data, written on the GPU, whose exact
//     sum the bench computes there (CUB, in 64-bit integers): a sum replayed from an
//     earlier call, or cached per data set recognised by a few of its values, instead of
//     computed, fails the check. The warm-up and the CPU use data set 0 (made on the CPU);
//  2. reduce_max of n = 2^26 ints (not graded, data set 0 only), the same memory traffic with
//     another operation.
//
// Every timed output is copied back and checked. The sum data (set 0 and the fresh data
// alike) are integer-valued floats in {-1, 0, 1}, so the exact sum is known and every
// order of additions the kernel could use gives it exactly: an intermediate result of an
// order fixed before the values are seen is the sum of some fixed set of m <= n
// elements, independent, in [-1, 1], with mean 0; by Hoeffding's inequality it reaches
// 2^24 in magnitude with probability at most 2·exp(-2^48 / (2m)), which is 2·exp(-2^21)
// at n = 2^26 and 2·exp(-2^16) at n = 2^31, even summed over all the fewer than 2n
// intermediates: never, in practice. Below 2^24 every intermediate is an integer a float
// holds exactly, so the sum is exact. (The bound reduce_sum_error_bound, which holds for
// every order and all data, says nothing useful at this size: it exceeds Σ|x|.)
#include <cub/cub.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"
#include "reduction.h"

namespace {

std::string show(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

// An integer-valued float as the integer it holds: the fresh data's expected sum is added
// up in 64-bit integers, exact whatever the order (CUB's), never a float rounding.
struct AsInteger {
  __host__ __device__ long long operator()(float x) const { return static_cast<long long>(x); }
};

// Times reduce_sum on n floats (a graded workload).
void run_sum(lab::bench::Harness& h, int n) {
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);
  // Data set 0 (the warm-up and the CPU) and its exact sum; every timed call gets fresh
  // data instead (see the comment at the top), whose exact sum the generator below writes
  // into expected_sums[1]: a sum replayed or cached, instead of computed, fails the check.
  const std::vector<float> x = lab::integer_floats(n, -1, 1, lab::case_seed("bench_sum"));
  float expected_sums[2] = {static_cast<float>(reduce_sum_double_cpu(x.data(), n)), 0.0f};  // exact, see above
  lab::DeviceBuffer<float> d_x(x), d_sum(1);
  lab::bench::PristineInputs sum_inputs;
  sum_inputs.watch("the input", d_x);
  volatile float cpu_sum = 0;  // keeps the CPU loop from being optimised away

  // The fresh data's exact sum: CUB adds the values as 64-bit integers on the GPU into
  // d_exact_sum (scratch sized once, here, outside the generator).
  const auto x_as_integers = thrust::make_transform_iterator(d_x.data(), AsInteger{});
  lab::DeviceBuffer<long long> d_exact_sum(1);
  std::size_t exact_temp_bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, exact_temp_bytes, x_as_integers, d_exact_sum.data(), n));
  lab::DeviceBuffer<unsigned char> exact_temp(std::max<std::size_t>(exact_temp_bytes, 1));

  using SumFn = decltype(reduce_sum);
  lab::bench::Workload sum;
  sum.name = "reduce_sum n=" + std::to_string(n);
  sum.function = "reduce_sum";
  sum.graded = true;
  sum.unit = "GB/s";
  sum.amount = static_cast<double>(bytes);  // every float read once; the one written is negligible
  sum.peak = h.device().peak_dram_gbps;
  // Fresh data before every timed call: n integer-valued floats uniform in {-1, 0, 1}, as
  // set 0, and their sum, exact in 64-bit integers; the float of it is exact too (below
  // 2^24 in magnitude, see the top). Per call: one write of the input, one read (CUB's
  // sum, as much as a reference call) and an 8-byte copy to the host.
  sum_inputs.use_fresh_in(sum, [&](lab::Seed seed) {
    lab::bench::fill_integer_floats(d_x.data(), static_cast<std::size_t>(n), -1, 1, seed);
    std::size_t temp_bytes = exact_temp_bytes;
    LAB_CUDA_CHECK(cub::DeviceReduce::Sum(exact_temp.data(), temp_bytes, x_as_integers, d_exact_sum.data(), n));
    long long exact_sum = 0;
    LAB_CUDA_CHECK(cudaMemcpy(&exact_sum, d_exact_sum.data(), sizeof exact_sum, cudaMemcpyDeviceToHost));
    expected_sums[sum_inputs.fresh_set()] = static_cast<float>(exact_sum);
  });
  sum.prepare = [&] { d_sum.poison(); };  // NaN: a sum never written cannot pass
  sum.check = [&]() -> std::string {
    float got = 0;
    LAB_CUDA_CHECK(cudaMemcpy(&got, d_sum.data(), sizeof got, cudaMemcpyDeviceToHost));
    const float expected_sum = expected_sums[sum_inputs.current()];
    if (got == expected_sum) return "";
    return "sum " + show(got) + ", expected exactly " + show(expected_sum) +
           " (integer-valued data: every order of additions gives it)";
  };
  sum.inputs_check = [&] { return sum_inputs.check(); };
  sum.cpu = [&] { cpu_sum = reduce_sum_cpu(x.data(), n); };
  h.add_implementations<SumFn>(sum, "reduce_sum", reduce_sum,
                               [&](SumFn* fn) { return [&, fn] { fn(d_x.data(), d_sum.data(), n); }; });

  std::size_t sum_temp_bytes = 0;  // CUB's first call only asks how much scratch memory it needs
  LAB_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, sum_temp_bytes, d_x.data(), d_sum.data(), n));
  lab::DeviceBuffer<unsigned char> sum_temp(std::max<std::size_t>(sum_temp_bytes, 1));
  lab::bench::Candidate cub_sum;
  cub_sum.name = "cub::DeviceReduce::Sum";
  cub_sum.role = lab::bench::Role::Library;
  cub_sum.description = "CUB's device-wide sum (scratch memory allocated before timing)";
  cub_sum.call = [&] {
    LAB_CUDA_CHECK(cub::DeviceReduce::Sum(sum_temp.data(), sum_temp_bytes, d_x.data(), d_sum.data(), n));
  };
  cub_sum.check = sum.check;
  h.add_candidate(sum, cub_sum);
  h.run(sum);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  // ---- 1. reduce_sum (graded, at each size) ----------------------------------------------
  for (const long long size : lab::bench::graded_sizes(h, 1 << 26)) {
    run_sum(h, static_cast<int>(std::min<long long>(size, INT_MAX)));
  }
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade
  const int n = static_cast<int>(std::min<long long>(h.size_or(1 << 26), INT_MAX));

  // ---- 2. reduce_max (not graded) --------------------------------------------------------
  const std::vector<int> v = lab::random_ints(n, INT_MIN, INT_MAX, lab::case_seed("bench_max"));
  const int expected_max = reduce_max_cpu(v.data(), n);
  lab::DeviceBuffer<int> d_v(v), d_max(1);
  lab::bench::PristineInputs max_inputs;
  max_inputs.watch("the input", d_v);
  volatile int cpu_max = 0;

  using MaxFn = decltype(reduce_max);
  lab::bench::Workload max;
  max.name = "reduce_max n=" + std::to_string(n);
  max.function = "reduce_max";
  max.unit = "GB/s";
  max.amount = static_cast<double>(sizeof(int) * static_cast<std::size_t>(n));
  max.peak = h.device().peak_dram_gbps;
  max.prepare = [&] { d_max.poison(0x7F); };  // 0x7F7F7F7F: a max never written cannot pass
  max.check = [&]() -> std::string {
    int got = 0;
    LAB_CUDA_CHECK(cudaMemcpy(&got, d_max.data(), sizeof got, cudaMemcpyDeviceToHost));
    if (got == expected_max) return "";
    return "max " + std::to_string(got) + ", expected " + std::to_string(expected_max);
  };
  max.inputs_check = [&] { return max_inputs.check(); };
  max.cpu = [&] { cpu_max = reduce_max_cpu(v.data(), n); };
  h.add_implementations<MaxFn>(max, "reduce_max", reduce_max,
                               [&](MaxFn* fn) { return [&, fn] { fn(d_v.data(), d_max.data(), n); }; });

  std::size_t max_temp_bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, max_temp_bytes, d_v.data(), d_max.data(), n));
  lab::DeviceBuffer<unsigned char> max_temp(std::max<std::size_t>(max_temp_bytes, 1));
  lab::bench::Candidate cub_max;
  cub_max.name = "cub::DeviceReduce::Max";
  cub_max.role = lab::bench::Role::Library;
  cub_max.description = "CUB's device-wide maximum (scratch memory allocated before timing)";
  cub_max.call = [&] {
    LAB_CUDA_CHECK(cub::DeviceReduce::Max(max_temp.data(), max_temp_bytes, d_v.data(), d_max.data(), n));
  };
  cub_max.check = max.check;
  h.add_candidate(max, cub_max);
  h.run(max);
  return h.finish();
}
