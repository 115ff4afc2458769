// Provided by the kit: do not edit. Times compact and expand.
//
//   ./build/dev/bin/compact_bench                  default sizes 2^26 and 30000001 ints
//   ./build/dev/bin/compact_bench --size 1000000   one size of your own
//
// Workloads:
//  1. compact, 50% kept (graded), at two sizes: n = 2^26 and n = 30000001 (a multiple
//     of no block or vector width, so that the last, partial tile is timed too); only the
//     --size given, when there is one. The grade is the geometric mean of the two ratios.
//     GB/s = (4n bytes read + 4·count bytes written) / time, beside CUB's
//     DeviceSelect::If with the same predicate (the library) and a device-to-device copy
//     of the input (what moving 8n bytes costs at best), at each size. Every timed call
//     gets fresh data, written on the GPU, whose expected output and count the bench
//     computes there with CUB: a result replayed from an earlier call, or cached per data
//     set recognised by a few of its values, instead of computed, fails the check. The
//     warm-up and the CPU use data set 0, made on the CPU;
//  2. compact with 1% and 99% kept (not graded, at 2^26 or --size only): how the time
//     follows the output size;
//  3. expand with counts 0..5 (clipped triangles) and with a few huge counts (not
//     graded, n = 2^24 or --size / 4), both writing about 2.5 ints per input element:
//     same work, different balance. GB/s = (4n in + 4n counts + 4·total written) / time.
// Every timed call returns its count on the host, and the check compares it and the
// output prefix with the expected ones: the CPU version's for data set 0 (every call of
// the ungraded workloads), CUB's for the fresh data. The CPU versions are timed with
// sdkTimer.
#include <cub/cub.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "compact.h"
#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"

namespace {

// compact's predicate as a functor, the form CUB takes.
struct KeepPredicate {
  __host__ __device__ bool operator()(int x) const { return compact_keep(x); }
};

// The value compact_input makes from 64 random bits: `percent` in 100 positive, in
// [1, 2^30]; the others in [-(2^30 - 1), 0].
__host__ __device__ inline int compact_value(std::uint64_t r, int percent) {
  const int magnitude = static_cast<int>((r >> 32) & 0x3FFFFFFFu);  // 0 .. 2^30 - 1
  return static_cast<int>(r % 100) < percent ? magnitude + 1 : -magnitude;
}

// n ints, `percent` of them (at random) positive; the others 0 or negative.
std::vector<int> compact_input(int n, int percent, lab::Seed seed) {
  lab::Rng rng(seed);
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int& x : v) x = compact_value(rng.next(), percent);
  return v;
}

// compact_input's distribution on the GPU, for fresh data: the 64 random bits of element
// i are lab::bench::random_bits(seed, i) (the fill helpers' counter-based generator), so
// the values are new for every seed and cost one write.
__global__ void fresh_compact_input_kernel(int* out, int n, int percent, lab::Seed seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < static_cast<std::size_t>(n);
       i += stride) {
    out[i] = compact_value(lab::bench::random_bits(seed, i), percent);
  }
}

std::string count_problem(int got, int expected, const char* what) {
  return "returned " + std::string(what) + " " + std::to_string(got) + ", expected " + std::to_string(expected);
}

void run_compact(lab::bench::Harness& h, int n, int percent, bool graded) {
  // Data set 0 (the warm-up, the CPU, and every call of the ungraded workloads), its
  // expected result, and a pristine copy to check the input against. [1]: the expected
  // output and count of the graded workload's fresh data.
  const lab::Seed seed = lab::case_seed("bench compact", static_cast<std::uint64_t>(percent));
  const std::vector<int> in = compact_input(n, percent, seed);
  std::vector<int> expected(in.size()), out_host(in.size());
  int expected_counts[2] = {compact_cpu(in.data(), expected.data(), n), -1};
  const int expected_count = expected_counts[0];
  const std::size_t bytes = sizeof(int) * in.size();
  lab::DeviceBuffer<int> din(in), dout(in.size());
  lab::DeviceBuffer<int> d_expected[2] = {lab::DeviceBuffer<int>(expected),
                                          lab::DeviceBuffer<int>(graded ? in.size() : 0)};
  lab::bench::PristineInputs inputs;
  inputs.watch("the input", din);
  int got = -1;  // the count the timed call returned

  // CUB: scratch memory and the device counts are allocated once, outside the timed call
  // and the generator. d_selected is the library candidate's count, d_expected_count the
  // fresh data's.
  lab::DeviceBuffer<int> d_selected(1), d_expected_count(1);
  std::size_t temp_bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, din.data(), dout.data(), d_selected.data(), n,
                                       KeepPredicate{}));
  lab::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));

  using Fn = decltype(compact);
  lab::bench::Workload w;
  w.name = "compact n=" + std::to_string(n) + ", " + std::to_string(percent) + "% kept";
  w.function = "compact";
  w.graded = graded;
  w.unit = "GB/s";
  // Read the input once, write the kept elements: set 0's count (the fresh data's differs
  // by about sqrt(n)/2 at 50% kept, 4e-5 of the amount at n = 2^26).
  w.amount = 4.0 * n + 4.0 * expected_count;
  w.peak = h.device().peak_dram_gbps;
  if (graded) {
    // Fresh data before every timed call (see the comment at the top), of set 0's size
    // and distribution, and its expected output and count from CUB's DeviceSelect::If with
    // compact's own predicate: stable, so exactly what a correct compact writes. Per call:
    // one write of the input, CUB's select (one read of it, the kept half written) and a
    // 4-byte copy of the count to the host, about one library call, less than a reference one.
    inputs.use_fresh_in(w, [&](lab::Seed fresh_seed) {
      const unsigned blocks = static_cast<unsigned>(std::min<long long>((n + 255LL) / 256, 8192));
      fresh_compact_input_kernel<<<blocks, 256>>>(din.data(), n, percent, fresh_seed);
      LAB_CHECK_LAUNCH();
      const int k = inputs.fresh_set();
      std::size_t size = temp_bytes;
      LAB_CUDA_CHECK(cub::DeviceSelect::If(temp.data(), size, din.data(), d_expected[k].data(),
                                           d_expected_count.data(), n, KeepPredicate{}));
      LAB_CUDA_CHECK(cudaMemcpy(&expected_counts[k], d_expected_count.data(), sizeof(int), cudaMemcpyDeviceToHost));
    });
  }
  w.prepare = [&] {
    dout.poison();
    got = -1;
  };
  auto check = [&]() -> std::string {
    const int k = inputs.current();  // the data set the call was given
    if (got != expected_counts[k]) return count_problem(got, expected_counts[k], "count");
    return lab::bench::check_equal_device(d_expected[k].data(), dout.data(),
                                          static_cast<std::size_t>(expected_counts[k]));
  };
  w.check = check;
  w.inputs_check = [&] { return inputs.check(); };
  w.cpu = [&] { compact_cpu(in.data(), out_host.data(), n); };
  h.add_implementations<Fn>(w, "compact", compact,
                            [&](Fn* fn) { return [&, fn] { got = fn(din.data(), dout.data(), n); }; });

  lab::bench::Candidate cub_select;
  cub_select.name = "CUB DeviceSelect::If";
  cub_select.role = lab::bench::Role::Library;
  cub_select.description = "same predicate; copies its count to the host, as compact() must";
  cub_select.call = [&] {
    std::size_t size = temp_bytes;
    LAB_CUDA_CHECK(cub::DeviceSelect::If(temp.data(), size, din.data(), dout.data(), d_selected.data(), n,
                                         KeepPredicate{}));
    // compact() returns its count on the host, which costs a device-to-host copy and a
    // wait; the library pays the same, or the comparison would favour it.
    LAB_CUDA_CHECK(cudaMemcpy(&got, d_selected.data(), sizeof(int), cudaMemcpyDeviceToHost));
  };
  cub_select.check = check;
  h.add_candidate(w, cub_select);

  if (graded) {
    h.add_candidate(w, lab::bench::memcpy_roofline(
                           dout.data(), din.data(), bytes,
                           "device-to-device copy of the input: reading and writing 4n bytes at best"));
  }
  h.run(w);
}

// Counts for expand: "triangles" = uniform 0..5; "few huge" = 256 elements share the
// same total (about 2.5 n) and every other count is 0.
std::vector<int> expand_counts(int n, bool few_huge, lab::Seed seed) {
  lab::Rng rng(seed);
  std::vector<int> counts(static_cast<std::size_t>(n), 0);
  if (!few_huge) {
    for (int& c : counts) c = static_cast<int>(rng.below(6));
    return counts;
  }
  const int big = static_cast<int>(std::max<long long>(1, 5LL * n / 2 / 256));
  for (int j = 0; j < 256; ++j) counts[rng.below(static_cast<std::uint64_t>(n))] = big;
  return counts;
}

void run_expand(lab::bench::Harness& h, int n, bool few_huge) {
  const lab::Seed seed = lab::case_seed(few_huge ? "bench expand few huge" : "bench expand triangles");
  const std::vector<int> in = lab::random_ints(static_cast<std::size_t>(n), -1000000, 1000000, seed);
  const std::vector<int> counts = expand_counts(n, few_huge, lab::derive_seed(seed, "counts"));
  long long sum = 0;
  for (int c : counts) sum += c;
  std::vector<int> expected(static_cast<std::size_t>(sum)), out_host(expected.size());
  const int expected_total = expand_cpu(in.data(), counts.data(), expected.data(), n);
  lab::DeviceBuffer<int> din(in), dcounts(counts), dout(expected.size() + 1);
  lab::bench::PristineInputs inputs;
  inputs.watch("in", din);
  inputs.watch("counts", dcounts);
  lab::DeviceBuffer<int> d_expected(expected);
  int got = -1;

  using Fn = decltype(expand);
  lab::bench::Workload w;
  w.name = std::string("expand n=") + std::to_string(n) + (few_huge ? ", 256 huge counts" : ", counts 0..5") +
           ", total=" + std::to_string(expected_total);
  w.function = "expand";
  w.unit = "GB/s";
  w.amount = 8.0 * n + 4.0 * expected_total;  // read in and counts, write the runs
  w.peak = h.device().peak_dram_gbps;
  w.prepare = [&] {
    dout.poison();
    got = -1;
  };
  w.check = [&]() -> std::string {
    if (got != expected_total) return count_problem(got, expected_total, "total");
    return lab::bench::check_equal_device(d_expected.data(), dout.data(), static_cast<std::size_t>(expected_total));
  };
  w.inputs_check = [&] { return inputs.check(); };
  w.cpu = [&] { expand_cpu(in.data(), counts.data(), out_host.data(), n); };
  h.add_implementations<Fn>(w, "expand", expand, [&](Fn* fn) {
    return [&, fn] { got = fn(din.data(), dcounts.data(), dout.data(), n); };
  });
  h.run(w);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  // The graded shapes first (2^26 first: the grade's answers and the lecture's steps are
  // read from it); each one's buffers are freed before the next is set up.
  for (long long graded_n : lab::bench::graded_sizes(h, 1 << 26)) {
    run_compact(h, static_cast<int>(std::clamp<long long>(graded_n, 1, INT_MAX)), 50, /*graded=*/true);
  }
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade
  const int n = static_cast<int>(std::clamp<long long>(h.size_or(1 << 26), 1, INT_MAX));
  run_compact(h, n, 1, false);
  run_compact(h, n, 99, false);
  const int n_expand = std::max(1, n / 4);  // about 2.5 outputs per input: the output is ~ n ints
  run_expand(h, n_expand, false);
  run_expand(h, n_expand, true);
  return h.finish();
}
