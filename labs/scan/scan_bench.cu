// Provided by the kit: do not edit. Times inclusive_scan, exclusive_scan and
// segmented_inclusive_scan.
//
//   ./build/dev/bin/scan_bench                  default sizes (see below)
//   ./build/dev/bin/scan_bench --size 1000000   one size of your own, in every workload
//
// Three workloads, each beside the CUB library call that does the same job:
//  1. inclusive_scan (graded, at two sizes: n = 2^26 and n = 30,000,001, an odd size that
//     is a multiple of no block, tile or vector width, so that the last, partial tile is
//     timed too; the grade is the geometric mean of the two ratios to the reference):
//     GB/s = (4 bytes read + 4 bytes written) x n / time, beside
//     cub::DeviceScan::InclusiveSum and a device-to-device copy of n floats (a scan has
//     to move at least what a copy moves, so the copy bounds it). Every timed call gets
//     fresh data, written on the GPU, whose exact scan the bench computes there (CUB, in
//     integers): a result replayed from an earlier call, or cached per data set
//     recognised by a few of its values, instead of computed, fails the check. The
//     warm-up and the CPU use data set 0, made on the CPU, as do the other workloads;
//  2. exclusive_scan at n = 2^26, beside cub::DeviceScan::ExclusiveSum;
//  3. segmented_inclusive_scan at n = 2^26, (4 + 4 bytes read, 4 written) x n, beside
//     cub::DeviceScan::InclusiveSumByKey with segment numbers as keys (prepared once,
//     untimed), which moves the same number of bytes.
// The inputs (set 0 and the fresh data alike) are integer-valued floats in {-1, 0, 1},
// so every correct scan gives the exact result, and each timed output is compared with
// it bit for bit on the GPU. The CPU versions are timed with the sdkTimer API for the
// speedup columns.
#include <cub/cub.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"
#include "scan.h"

namespace {

// True when every contiguous range sum of `in` is an integer of magnitude <= 2^24, so
// that no order of additions rounds (see exact_in_any_order in scan_test.cu).
bool exact_in_any_order(const std::vector<float>& in) {
  double p = 0, lo = 0, hi = 0;
  for (float x : in) {
    p += x;
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  return hi - lo <= 16777216.0;
}

// An integer-valued float as the integer it holds: the fresh data's expected scan is
// added up in ints (|prefix| <= n <= INT_MAX), exact whatever the order, and each prefix
// becomes a float once, exactly (below 2^24 in magnitude, see where it is used).
struct AsInteger {
  __host__ __device__ int operator()(float x) const { return static_cast<int>(x); }
};

// Data set 0 of n elements: integer-valued floats in {-1, 0, 1}, made on the CPU.
std::vector<float> bench_input(lab::bench::Harness& h, int n) {
  std::vector<float> in = lab::integer_floats(n, -1, 1, lab::case_seed("bench_in"));
  if (!exact_in_any_order(in)) h.note_error("bench data: partial sums could round; the exact checks may fail");
  return in;
}

using Fn = decltype(inclusive_scan);

// 1. inclusive_scan at n elements (a graded workload): sets up its inputs, expected
// results and CUB's scratch memory, times every candidate, and frees it all on return.
void run_inclusive(lab::bench::Harness& h, int n) {
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);
  // Data set 0, its expected result, and a pristine copy of the input to check it against.
  const std::vector<float> in = bench_input(h, n);
  std::vector<float> inclusive(n), out_host(n);
  inclusive_scan_cpu(in.data(), inclusive.data(), n);
  lab::DeviceBuffer<float> din(in), dout(n);
  // d_inclusive[1]: the expected result of the fresh data.
  lab::DeviceBuffer<float> d_inclusive[2] = {lab::DeviceBuffer<float>(inclusive), lab::DeviceBuffer<float>(n)};
  lab::bench::PristineInputs in_unchanged;
  in_unchanged.watch("`in`", din);

  // CUB's scratch memory, sized by query calls and allocated once, outside the timing:
  // for the library candidate, and for the fresh data's expected scan (in integers).
  const auto in_as_integers = thrust::make_transform_iterator(din.data(), AsInteger{});
  std::size_t inclusive_bytes = 0, expected_bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, inclusive_bytes, din.data(), dout.data(), n));
  LAB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, expected_bytes, in_as_integers, d_inclusive[1].data(), n));
  lab::DeviceBuffer<unsigned char> cub_temp(std::max({inclusive_bytes, expected_bytes, std::size_t{1}}));

  lab::bench::Workload inc;
  inc.name = "inclusive_scan n=" + std::to_string(n);
  inc.function = "inclusive_scan";
  inc.graded = true;
  inc.unit = "GB/s";
  inc.amount = 2.0 * bytes;  // read in, write out
  inc.peak = h.device().peak_dram_gbps;
  // Fresh data before every timed call: n integer-valued floats uniform in {-1, 0, 1}, as
  // set 0, and their inclusive scan by CUB in ints, each prefix written as a float. Like
  // set 0 the fresh data keep every contiguous range sum within 2^24 in magnitude, so that
  // no order of additions rounds and a correct scan gives these floats bit for bit: the
  // prefix sums are a walk of steps in [-1, 1] with mean 0, which strays 2^23 from 0 with
  // probability at most 2·exp(-2^46 / (2n)) (Azuma-Hoeffding), 2·exp(-2^19) at n = 2^26
  // (less still at 30,000,001): never, in practice. Per call: one write of `in`, then CUB's
  // scan (one read of `in`, one write of the expected result), about one library call and
  // less than a reference one.
  in_unchanged.use_fresh_in(inc, [&](lab::Seed seed) {
    lab::bench::fill_integer_floats(din.data(), static_cast<std::size_t>(n), -1, 1, seed);
    std::size_t temp_bytes = expected_bytes;
    LAB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(cub_temp.data(), temp_bytes, in_as_integers,
                                                 d_inclusive[in_unchanged.fresh_set()].data(), n));
  });
  inc.prepare = [&] { dout.poison(); };
  auto inc_check = [&] {
    return lab::bench::check_equal_device(d_inclusive[in_unchanged.current()].data(), dout.data(), n);
  };
  inc.check = inc_check;
  inc.inputs_check = [&] { return in_unchanged.check(); };
  inc.cpu = [&] { inclusive_scan_cpu(in.data(), out_host.data(), n); };
  h.add_implementations<Fn>(inc, "inclusive_scan", inclusive_scan,
                            [&](Fn* fn) { return [&, fn] { fn(din.data(), dout.data(), n); }; });
  lab::bench::Candidate cub_inclusive;
  cub_inclusive.name = "CUB DeviceScan::InclusiveSum";
  cub_inclusive.role = lab::bench::Role::Library;
  cub_inclusive.description = "the library's single-pass scan (scratch allocated once)";
  cub_inclusive.call = [&] {
    std::size_t temp_bytes = inclusive_bytes;
    LAB_CUDA_CHECK(cub::DeviceScan::InclusiveSum(cub_temp.data(), temp_bytes, din.data(), dout.data(), n));
  };
  cub_inclusive.check = inc_check;
  h.add_candidate(inc, cub_inclusive);
  h.add_candidate(inc, lab::bench::memcpy_roofline(dout.data(), din.data(), bytes,
                                                   "device-to-device copy of n floats: the practical DRAM bound"));
  h.run(inc);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  // 1. inclusive_scan (graded), at each graded size; 2^26 first.
  for (const long long size : lab::bench::graded_sizes(h, 1 << 26)) run_inclusive(h, static_cast<int>(size));
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade

  // The ungraded workloads, at one size.
  const int n = static_cast<int>(h.size_or(1 << 26));
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);

  // Inputs: values in {-1, 0, 1} (data set 0, as in the graded workload); segment heads at
  // random, one in 256 on average.
  const std::vector<float> in = bench_input(h, n);
  std::vector<int> flags(n), keys(n);
  lab::Rng rng(lab::case_seed("bench_heads"));
  int segment = 0;
  for (int i = 0; i < n; ++i) {
    flags[i] = rng.below(256) == 0 ? 1 : 0;
    if (i > 0 && flags[i] != 0) ++segment;
    keys[i] = segment;  // CUB's by-key scan: a segment is a run of equal keys
  }
  // Expected results, and pristine copies of the inputs to check them against.
  std::vector<float> exclusive(n), segmented(n), out_host(n);
  exclusive_scan_cpu(in.data(), exclusive.data(), n);
  segmented_inclusive_scan_cpu(in.data(), flags.data(), segmented.data(), n);
  lab::DeviceBuffer<float> din(in), dout(n);
  lab::DeviceBuffer<float> d_exclusive(exclusive), d_segmented(segmented);
  lab::DeviceBuffer<int> dflags(flags), dkeys(keys);
  lab::bench::PristineInputs in_unchanged, flags_unchanged;
  in_unchanged.watch("`in`", din);
  flags_unchanged.watch("`head_flags`", dflags);

  // CUB's scratch memory, sized by query calls and allocated once, outside the timing.
  std::size_t exclusive_bytes = 0, by_key_bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, exclusive_bytes, din.data(), dout.data(), n));
  LAB_CUDA_CHECK(
      cub::DeviceScan::InclusiveSumByKey(nullptr, by_key_bytes, dkeys.data(), din.data(), dout.data(), n));
  lab::DeviceBuffer<unsigned char> cub_temp(std::max({exclusive_bytes, by_key_bytes, std::size_t{1}}));

  // 2. exclusive_scan.
  lab::bench::Workload exc;
  exc.name = "exclusive_scan n=" + std::to_string(n);
  exc.function = "exclusive_scan";
  exc.unit = "GB/s";
  exc.amount = 2.0 * bytes;
  exc.peak = h.device().peak_dram_gbps;
  exc.prepare = [&] { dout.poison(); };
  exc.check = [&] { return lab::bench::check_equal_device(d_exclusive.data(), dout.data(), n); };
  exc.inputs_check = [&] { return in_unchanged.check(); };
  exc.cpu = [&] { exclusive_scan_cpu(in.data(), out_host.data(), n); };
  h.add_implementations<Fn>(exc, "exclusive_scan", exclusive_scan,
                            [&](Fn* fn) { return [&, fn] { fn(din.data(), dout.data(), n); }; });
  lab::bench::Candidate cub_exclusive;
  cub_exclusive.name = "CUB DeviceScan::ExclusiveSum";
  cub_exclusive.role = lab::bench::Role::Library;
  cub_exclusive.description = "the library's single-pass scan (scratch allocated once)";
  cub_exclusive.call = [&] {
    std::size_t temp_bytes = exclusive_bytes;
    LAB_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp.data(), temp_bytes, din.data(), dout.data(), n));
  };
  cub_exclusive.check = [&] { return lab::bench::check_equal_device(d_exclusive.data(), dout.data(), n); };
  h.add_candidate(exc, cub_exclusive);
  h.run(exc);

  // 3. segmented_inclusive_scan.
  using SegFn = decltype(segmented_inclusive_scan);
  lab::bench::Workload seg;
  seg.name = "segmented_inclusive_scan n=" + std::to_string(n) + " (a head every 256 elements on average)";
  seg.function = "segmented_inclusive_scan";
  seg.unit = "GB/s";
  seg.amount = 3.0 * bytes;  // read in and head_flags, write out
  seg.peak = h.device().peak_dram_gbps;
  seg.prepare = [&] { dout.poison(); };
  seg.check = [&] { return lab::bench::check_equal_device(d_segmented.data(), dout.data(), n); };
  seg.inputs_check = [&] {
    const std::string values = in_unchanged.check();
    return values.empty() ? flags_unchanged.check() : values;
  };
  seg.cpu = [&] { segmented_inclusive_scan_cpu(in.data(), flags.data(), out_host.data(), n); };
  h.add_implementations<SegFn>(seg, "segmented_inclusive_scan", segmented_inclusive_scan, [&](SegFn* fn) {
    return [&, fn] { fn(din.data(), dflags.data(), dout.data(), n); };
  });
  lab::bench::Candidate cub_by_key;
  cub_by_key.name = "CUB DeviceScan::InclusiveSumByKey";
  cub_by_key.role = lab::bench::Role::Library;
  cub_by_key.description = "segment numbers as keys instead of head flags (same bytes moved)";
  cub_by_key.call = [&] {
    std::size_t temp_bytes = by_key_bytes;
    LAB_CUDA_CHECK(
        cub::DeviceScan::InclusiveSumByKey(cub_temp.data(), temp_bytes, dkeys.data(), din.data(), dout.data(), n));
  };
  cub_by_key.check = [&] { return lab::bench::check_equal_device(d_segmented.data(), dout.data(), n); };
  h.add_candidate(seg, cub_by_key);
  h.run(seg);
  return h.finish();
}
