// Provided by the kit: do not edit. Times sort_keys and sort_pairs.
//
//   ./build/dev/bin/sort_bench                  default sizes 2^26 and 30000001 keys
//   ./build/dev/bin/sort_bench --size 1000000   one size of your own (at most 2^26)
//   ./build/dev/bin/sort_bench --filter radix   only the candidates whose name contains "radix"
//
// Workloads (throughput in Gkeys/s = n / time; sorting has no simple hardware peak):
//  1. sort_keys, n random 32-bit keys (graded), beside CUB's DeviceRadixSort::SortKeys, at
//     two sizes: n = 2^26 and n = 30000001 (a multiple of no tile size, so that the last,
//     partial tile is timed too); only the --size given, when there is one. The grade is
//     the geometric mean of the two ratios. Every timed call gets fresh keys, written on
//     the GPU, whose expected sorted keys the bench computes there with CUB: keys replayed
//     from an earlier call, or cached per data set, instead of sorted, fail the check;
//  2. sort_pairs, the keys of the first size with values = original positions, beside
//     CUB SortPairs;
//  3. sort_keys on few distinct keys (5 values), where comparison sorts and radix sorts
//     behave differently;
//  4. sort_keys and sort_pairs at n = 2^14, where every variant runs, the slow ones
//     (odd-even transposition: one kernel launch per phase) included.
// Workloads 2 to 4 are not graded; 2 and 3 use the first size (2^26 or --size) only.
// The sorts work in place, so before every timed call the unsorted keys are restored
// from a pristine device copy (the fresh keys, in the graded workloads), and after it the
// result is compared on the device with the expected sort. CUB sorts between two buffers
// (a DoubleBuffer): when its result ends in the second buffer, the timed call copies it
// back, as the in-place interface must. The CPU version (std::sort / std::stable_sort)
// runs once at the large sizes: it takes seconds there. The expected keys of data set 0
// (the warm-up's) come from the CPU's stable sort of pairs at the first size, which
// sort_pairs needs too, and from CUB at the other graded sizes; the grader's run
// (--graded-only) takes them from CUB at every size, as every run does for fresh keys.
#include <algorithm>
#include <cstdio>
#include <cub/cub.cuh>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"
#include "sort.h"

namespace {

using KeysFn = decltype(sort_keys);
using PairsFn = decltype(sort_pairs);
// Writes n fresh unsorted keys into a device array, from a seed (the graded workload).
using FreshKeys = std::function<void(unsigned* keys, int n, lab::Seed seed)>;

// Restores dst from src on the device: the in-place sorts consume their input.
void restore(lab::DeviceBuffer<unsigned>& dst, const lab::DeviceBuffer<unsigned>& src) {
  LAB_CUDA_CHECK(cudaMemcpy(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice));
}

// Copies CUB's result back when it ended in the alternate buffer.
void copy_back(unsigned* home, const unsigned* current, int n) {
  if (current != home) {
    LAB_CUDA_CHECK(
        cudaMemcpyAsync(home, current, sizeof(unsigned) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, 0));
  }
}

// `keys` sorted by CUB's radix sort on the GPU (the expected result of the graded run).
std::vector<unsigned> sorted_by_cub(const std::vector<unsigned>& keys) {
  const int n = static_cast<int>(keys.size());
  lab::DeviceBuffer<unsigned> in(keys), out(keys.size());
  std::size_t bytes = 0;
  LAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in.data(), out.data(), n));
  lab::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(bytes, 1));
  LAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp.data(), bytes, in.data(), out.data(), n));
  return out.download();
}

// Times sort_keys on `input` (sorted: `expected`) and, when `fresh_keys` is given, on
// fresh keys of the same size before every timed call instead (the warm-up and the CPU
// keep `input`): fresh_keys(pristine, n, seed) writes them, and CUB sorts them into the
// expected keys on the GPU.
void time_sort_keys(lab::bench::Harness& h, const std::string& name, bool graded, const std::vector<unsigned>& input,
                    const std::vector<unsigned>& expected, bool run_slow_variants, const FreshKeys& fresh_keys = {}) {
  const int n = static_cast<int>(input.size());
  lab::DeviceBuffer<unsigned> keys(input.size()), pristine(input);
  // The expected keys: [0] for `input`, [1] for the fresh keys.
  lab::DeviceBuffer<unsigned> d_expected[2] = {lab::DeviceBuffer<unsigned>(expected),
                                               lab::DeviceBuffer<unsigned>(fresh_keys ? input.size() : 0)};
  // The restore source must stay what it was; fresh keys are written into it, and after
  // the workload `saved` puts `input` back (Workload::restore).
  lab::bench::PristineInputs saved;
  saved.watch("the saved copy of the unsorted keys", pristine);
  std::vector<unsigned> cpu_keys;

  lab::bench::Workload w;
  w.name = name;
  w.function = "sort_keys";
  w.graded = graded;
  w.unit = "Gkeys/s";
  w.amount = n;
  // CUB's scratch memory for the fresh keys' expected sort, sized once, outside the generator.
  std::size_t expected_temp_bytes = 0;
  if (fresh_keys) {
    LAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, expected_temp_bytes, pristine.data(),
                                                  d_expected[1].data(), n));
  }
  lab::DeviceBuffer<unsigned char> expected_temp(fresh_keys ? std::max<std::size_t>(expected_temp_bytes, 1) : 0);
  if (fresh_keys) {
    // Fresh keys before every timed call (see the comment at the top), into the restore
    // source, and their sort by CUB from there into the expected keys (the input stays
    // unsorted): about one reference call.
    saved.use_fresh_in(w, [&](lab::Seed seed) {
      fresh_keys(pristine.data(), n, seed);
      std::size_t bytes = expected_temp_bytes;
      LAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(expected_temp.data(), bytes, pristine.data(),
                                                    d_expected[saved.fresh_set()].data(), n));
    });
  }
  w.prepare = [&] { restore(keys, pristine); };  // pristine holds `input`, or the fresh keys
  w.check = [&] {
    return lab::bench::check_equal_device(d_expected[saved.current()].data(), keys.data(), input.size());
  };
  w.inputs_check = [&] { return saved.check(); };
  w.cpu = [&] {
    cpu_keys = input;
    sort_keys_cpu(cpu_keys.data(), n);
  };
  w.cpu_max_runs = n > (1 << 22) ? 1 : 5;
  if (!run_slow_variants) w.skip_variants = lab::bench::slow_variants(h, "sort_keys");
  h.add_implementations<KeysFn>(w, "sort_keys", sort_keys, [&](KeysFn* fn) { return [&, fn] { fn(keys.data(), n); }; });

  // CUB: scratch memory sized by a first query and allocated once, outside the timed call.
  lab::DeviceBuffer<unsigned> cub_alt(input.size());
  std::size_t temp_bytes = 0;
  {
    cub::DoubleBuffer<unsigned> buffers(keys.data(), cub_alt.data());
    LAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, buffers, n));
  }
  lab::DeviceBuffer<unsigned char> cub_temp(std::max<std::size_t>(temp_bytes, 1));
  h.add_candidate(w, {"CUB DeviceRadixSort::SortKeys", lab::bench::Role::Library,
                      [&] {
                        cub::DoubleBuffer<unsigned> buffers(keys.data(), cub_alt.data());
                        std::size_t bytes = temp_bytes;
                        LAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(cub_temp.data(), bytes, buffers, n));
                        copy_back(keys.data(), buffers.Current(), n);
                      },
                      "CUB's radix sort (DoubleBuffer, result copied back when it ends in the other buffer)"});
  h.run(w);
}

// Times sort_pairs on (input_keys, input_values) (stably sorted: expected_*).
void time_sort_pairs(lab::bench::Harness& h, const std::string& name, const std::vector<unsigned>& input_keys,
                     const std::vector<unsigned>& input_values, const std::vector<unsigned>& expected_keys,
                     const std::vector<unsigned>& expected_values, bool run_slow_variants) {
  const int n = static_cast<int>(input_keys.size());
  lab::DeviceBuffer<unsigned> keys(input_keys.size()), values(input_keys.size());
  lab::DeviceBuffer<unsigned> pristine_keys(input_keys), pristine_values(input_values);
  lab::bench::PristineInputs saved;  // the restore sources must stay what they were
  saved.watch("the saved copy of the unsorted keys", pristine_keys);
  saved.watch("the saved copy of the unsorted values", pristine_values);
  lab::DeviceBuffer<unsigned> d_expected_keys(expected_keys), d_expected_values(expected_values);
  std::vector<unsigned> cpu_keys, cpu_values;

  lab::bench::Workload w;
  w.name = name;
  w.function = "sort_pairs";
  w.unit = "Gkeys/s";
  w.amount = n;
  w.prepare = [&] {
    restore(keys, pristine_keys);
    restore(values, pristine_values);
  };
  w.check = [&]() -> std::string {
    const std::string k = lab::bench::check_equal_device(d_expected_keys.data(), keys.data(), input_keys.size());
    if (!k.empty()) return "keys: " + k;
    const std::string v = lab::bench::check_equal_device(d_expected_values.data(), values.data(), input_keys.size());
    if (!v.empty()) return "values: " + v + " (keys are right: is the sort stable?)";
    return "";
  };
  w.inputs_check = [&] { return saved.check(); };
  w.cpu = [&] {
    cpu_keys = input_keys;
    cpu_values = input_values;
    sort_pairs_cpu(cpu_keys.data(), cpu_values.data(), n);
  };
  w.cpu_max_runs = n > (1 << 22) ? 1 : 5;
  if (!run_slow_variants) w.skip_variants = lab::bench::slow_variants(h, "sort_pairs");
  h.add_implementations<PairsFn>(w, "sort_pairs", sort_pairs,
                                 [&](PairsFn* fn) { return [&, fn] { fn(keys.data(), values.data(), n); }; });

  lab::DeviceBuffer<unsigned> cub_keys_alt(input_keys.size()), cub_values_alt(input_keys.size());
  std::size_t temp_bytes = 0;
  {
    cub::DoubleBuffer<unsigned> k(keys.data(), cub_keys_alt.data()), v(values.data(), cub_values_alt.data());
    LAB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, k, v, n));
  }
  lab::DeviceBuffer<unsigned char> cub_temp(std::max<std::size_t>(temp_bytes, 1));
  h.add_candidate(w, {"CUB DeviceRadixSort::SortPairs", lab::bench::Role::Library,
                      [&] {
                        cub::DoubleBuffer<unsigned> k(keys.data(), cub_keys_alt.data());
                        cub::DoubleBuffer<unsigned> v(values.data(), cub_values_alt.data());
                        std::size_t bytes = temp_bytes;
                        LAB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(cub_temp.data(), bytes, k, v, n));
                        copy_back(keys.data(), k.Current(), n);
                        copy_back(values.data(), v.Current(), n);
                      },
                      "CUB's radix sort of pairs (DoubleBuffers, results copied back when needed)"});
  h.run(w);
}

// Times a graded workload: `keys` (sorted: `expected`) for the warm-up and the CPU, and
// fresh keys of the same shape (uniform over all 32 bits, as `keys`) in every timed call,
// which CUB sorts on the GPU (milliseconds, where the CPU takes seconds).
void time_graded_sort_keys(lab::bench::Harness& h, const std::string& name, const std::vector<unsigned>& keys,
                           const std::vector<unsigned>& expected) {
  time_sort_keys(h, name, true, keys, expected, false, [](unsigned* fresh, int n, lab::Seed seed) {
    lab::bench::fill_uints(fresh, static_cast<std::size_t>(n), 0, seed);  // range 0: the full 32 bits
  });
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  // The graded sizes (2^26 and 30000001, or the --size given), each within [1, kSortMaxN].
  std::vector<int> sizes;
  for (long long requested : lab::bench::graded_sizes(h, kSortMaxN)) {
    if (requested > kSortMaxN || requested < 1) {
      std::printf("--size %lld is outside [1, %d]: using %d\n", requested, kSortMaxN, kSortMaxN);
      requested = kSortMaxN;
    }
    sizes.push_back(static_cast<int>(requested));
  }
  const int n = sizes.front();  // the first graded size, and that of the ungraded workloads
  const std::string size = " n=" + std::to_string(n);

  // Random 32-bit keys; their stable sort with values = positions gives the expected
  // result of both the keys workload and the pairs workload. The grader times the graded
  // workloads only, which need the sorted keys only: CUB sorts them in milliseconds,
  // where the CPU's stable sort of pairs takes seconds.
  const std::vector<unsigned> keys = lab::random_uints(n, 0, lab::Distribution::Uniform, lab::case_seed("bench_keys"));
  std::vector<unsigned> positions, sorted_keys, sorted_positions;
  if (h.times_everything()) {
    positions.resize(keys.size());
    std::iota(positions.begin(), positions.end(), 0u);
    sorted_keys = keys;
    sorted_positions = positions;
    sort_pairs_cpu(sorted_keys.data(), sorted_positions.data(), n);
  }

  // The graded shapes, the first size first (the grade's answers and the lecture's steps
  // are read from it); the keys of the other sizes are made, sorted by CUB and freed
  // within their iteration.
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int m = sizes[i];
    const std::string graded = "sort_keys n=" + std::to_string(m) + " random 32-bit keys";
    if (i == 0 && h.times_everything()) {
      time_graded_sort_keys(h, graded, keys, sorted_keys);
    } else if (i == 0) {
      time_graded_sort_keys(h, graded, keys, sorted_by_cub(keys));
    } else {
      const std::vector<unsigned> other =
          lab::random_uints(m, 0, lab::Distribution::Uniform, lab::case_seed("bench_keys"));
      time_graded_sort_keys(h, graded, other, sorted_by_cub(other));
    }
  }
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade

  time_sort_pairs(h, "sort_pairs" + size + " random 32-bit keys, values = positions", keys, positions, sorted_keys,
                  sorted_positions, false);

  {
    const std::vector<unsigned> few =
        lab::random_uints(n, 0, lab::Distribution::FewUnique, lab::case_seed("bench_few_unique"));
    std::vector<unsigned> few_sorted = few;
    sort_keys_cpu(few_sorted.data(), n);
    time_sort_keys(h, "sort_keys" + size + " few unique keys (5 values)", false, few, few_sorted, false);
  }

  // Small: every variant, the O(n^2) ones included.
  const int small = std::min(n, 1 << 14);
  const std::vector<unsigned> small_keys(keys.begin(), keys.begin() + small);
  const std::vector<unsigned> small_positions(positions.begin(), positions.begin() + small);
  std::vector<unsigned> small_sorted = small_keys, small_sorted_positions = small_positions;
  sort_pairs_cpu(small_sorted.data(), small_sorted_positions.data(), small);
  const std::string small_size = " n=" + std::to_string(small);
  time_sort_keys(h, "sort_keys" + small_size + " (every variant)", false, small_keys, small_sorted, true);
  time_sort_pairs(h, "sort_pairs" + small_size + " (every variant)", small_keys, small_positions, small_sorted,
                  small_sorted_positions, true);
  return h.finish();
}
