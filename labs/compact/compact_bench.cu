// Provided by the kit: do not edit. Times compact and expand.
//
//   ./build/dev/bin/compact_bench                  default size 2^26 ints
//   ./build/dev/bin/compact_bench --size 1000000   another size
//
// Workloads:
//  1. compact, 50% kept (graded): GB/s = (4n bytes read + 4·count bytes written) / time,
//     beside CUB's DeviceSelect::If with the same predicate (the library) and a
//     device-to-device copy of the input (what moving 8n bytes costs at best). Each timed
//     call gets one of two data sets, picked at random: a result replayed from an earlier
//     call, instead of computed, fails the check half the time;
//  2. compact with 1% and 99% kept (not graded): how the time follows the output size;
//  3. expand with counts 0..5 (clipped triangles) and with a few huge counts (not
//     graded), both writing about 2.5 ints per input element: same work, different
//     balance. GB/s = (4n in + 4n counts + 4·total written) / time.
// Every timed call returns its count on the host, and the check compares it and the
// output prefix with the CPU version's. The CPU versions are timed with sdkTimer.
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

// n ints, `percent` of them (at random) positive; the others 0 or negative.
std::vector<int> compact_input(int n, int percent, lab::Seed seed) {
  lab::Rng rng(seed);
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int& x : v) {
    const std::uint64_t r = rng.next();
    const int magnitude = static_cast<int>((r >> 32) & 0x3FFFFFFFu);  // 0 .. 2^30 - 1
    x = static_cast<int>(r % 100) < percent ? magnitude + 1 : -magnitude;
  }
  return v;
}

std::string count_problem(int got, int expected, const char* what) {
  return "returned " + std::string(what) + " " + std::to_string(got) + ", expected " + std::to_string(expected);
}

void run_compact(lab::bench::Harness& h, int n, int percent, bool graded) {
  // Inputs, the expected result, and a pristine copy to check the input against.
  const lab::Seed seed = lab::case_seed("bench compact", static_cast<std::uint64_t>(percent));
  const std::vector<int> in = compact_input(n, percent, seed);
  std::vector<int> expected(in.size()), out_host(in.size());
  int expected_counts[2] = {compact_cpu(in.data(), expected.data(), n), -1};
  const int expected_count = expected_counts[0];
  const std::size_t bytes = sizeof(int) * in.size();
  lab::DeviceBuffer<int> din(in), dout(in.size());
  lab::DeviceBuffer<int> d_expected[2] = {lab::DeviceBuffer<int>(expected), lab::DeviceBuffer<int>()};
  lab::bench::PristineInputs inputs;
  inputs.watch("the input", din);
  if (graded) {
    // A second data set (same size and distribution) for the graded workload only, with
    // its own expected result and count; the ungraded ones keep one set.
    const std::vector<int> in2 = compact_input(n, percent, lab::derive_seed(seed, "set 2"));
    expected_counts[1] = compact_cpu(in2.data(), out_host.data(), n);
    d_expected[1] = lab::DeviceBuffer<int>(out_host);
    din.upload(in2);
    inputs.add_set();
    inputs.load(0);
  }
  int got = -1;  // the count the timed call returned

  using Fn = decltype(compact);
  lab::bench::Workload w;
  w.name = "compact n=" + std::to_string(n) + ", " + std::to_string(percent) + "% kept";
  w.function = "compact";
  w.graded = graded;
  w.unit = "GB/s";
  // Read the input once, write the kept elements: set 0's count (set 1's differs by about
  // sqrt(n)/2 at 50% kept, 4e-5 of the amount at n = 2^26).
  w.amount = 4.0 * n + 4.0 * expected_count;
  w.peak = h.device().peak_dram_gbps;
  inputs.use_in(w);
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

  // CUB: scratch memory and the device count are allocated once, outside the timed call.
  lab::DeviceBuffer<int> d_selected(1);
  std::size_t temp_bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, din.data(), dout.data(), d_selected.data(), n,
                                       KeepPredicate{}));
  lab::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
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
  lab::bench::Harness h("compact", argc, argv);
  const int n = static_cast<int>(std::clamp<long long>(h.size_or(1 << 26), 1, INT_MAX));
  run_compact(h, n, 50, /*graded=*/true);
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade
  run_compact(h, n, 1, false);
  run_compact(h, n, 99, false);
  const int n_expand = std::max(1, n / 4);  // about 2.5 outputs per input: the output is ~ n ints
  run_expand(h, n_expand, false);
  run_expand(h, n_expand, true);
  return h.finish();
}
