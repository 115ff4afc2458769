// Provided by the kit: do not edit. Times transpose.
//
//   ./build/dev/bin/transpose_bench                  graded shapes 8192 x 8192 and 8191 x 4097 floats
//   ./build/dev/bin/transpose_bench --size 4096      one square size instead of the graded shapes
//   ./build/dev/bin/transpose_bench --filter tiled   only the variants whose name holds "tiled"
//
// Three workloads; the first two are graded, and the grade is the geometric mean of their
// ratios to the reference:
//  1. 8192 x 8192 (graded): GB/s = 2 x 4 bytes x rows x cols / time (every float is read
//     once and written once), beside two copies of the same matrix, which bound what any
//     transpose can reach: a coalesced 2D copy kernel with the same tiling as a fast
//     transpose (written here), and cudaMemcpy device to device. The serial and per-row
//     versions are left out at this size (they would take seconds per call). Every timed
//     call gets a fresh random matrix, written on the GPU, whose expected transpose the
//     bench's own kernel writes there: a result replayed from an earlier call, or cached
//     per data set, instead of computed, fails the check.
//  2. 8191 x 4097, odd and not square (graded, with fresh matrices like 1): the edge tiles
//     cost something too, and rows of 4097 floats are not 128-byte aligned.
//  3. 1024 x 1024, the lecture's size, with every version and the lecture's non-coalesced
//     copy: the lecture's comparison table on your GPU.
// The CPU version (the double loop) is timed with the sdkTimer API for the speedup columns.
#include <algorithm>
#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"
#include "transpose.h"

namespace {

// The roofline: the same 32 x 32 tiles and 32 x 8 threads (4 rows each) as a fast
// transpose, but out[r][c] = in[r][c]: reads and writes both coalesced, no shared memory.
__global__ void copy_2d_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const long long c = static_cast<long long>(blockIdx.x) * 32 + threadIdx.x;
  const int tiles_down = static_cast<int>((rows + 31LL) / 32);
  for (int tile_row = blockIdx.y; tile_row < tiles_down; tile_row += gridDim.y) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const long long r = static_cast<long long>(tile_row) * 32 + threadIdx.y + 8 * s;
      if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c];
    }
  }
}

void copy_2d(const float* in, float* out, int rows, int cols) {
  const long long tiles_across = (cols + 31LL) / 32, tiles_down = (rows + 31LL) / 32;
  // At most 65535 blocks in y: the kernel loops over the tiles below.
  const dim3 blocks(static_cast<unsigned>(tiles_across), static_cast<unsigned>(std::min(tiles_down, 65535LL)));
  copy_2d_kernel<<<blocks, dim3(32, 8)>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

// The lecture's non-coalesced copy: the same copy, but consecutive threads of a warp take
// consecutive rows of one column, so each warp's loads and stores touch 32 rows, 32
// sectors where a coalesced access needs 4. Timed at the lecture's size only: it is the
// table's row, not a bound.
__global__ void copy_2d_strided_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const long long r = static_cast<long long>(blockIdx.x) * 32 + threadIdx.x;
  const long long c0 = static_cast<long long>(blockIdx.y) * 32 + threadIdx.y;
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const long long c = c0 + 8 * s;
    if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c];
  }
}

void copy_2d_strided(const float* in, float* out, int rows, int cols) {
  const dim3 blocks(static_cast<unsigned>((rows + 31LL) / 32), static_cast<unsigned>((cols + 31LL) / 32));
  copy_2d_strided_kernel<<<blocks, dim3(32, 8)>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

// The expected result of a fresh matrix: the bench's own transpose, which the student's
// code never touches. 32 x 32 tiles through shared memory (a padded column, no bank
// conflicts), 32 x 8 threads of 4 rows each, so that reads and writes are both coalesced
// and it costs about one reference call. It only moves bits: exact, as the check needs.
__global__ void expected_transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[32][33];
  const long long c = static_cast<long long>(blockIdx.x) * 32 + threadIdx.x;  // in's column, when reading
  const long long r_out = static_cast<long long>(blockIdx.x) * 32 + threadIdx.y;  // out's row (in's column), writing
  const int tiles_down = static_cast<int>((rows + 31LL) / 32);
  for (int tile_row = blockIdx.y; tile_row < tiles_down; tile_row += gridDim.y) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const long long r = static_cast<long long>(tile_row) * 32 + threadIdx.y + 8 * s;
      if (r < rows && c < cols) tile[threadIdx.y + 8 * s][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads();
    const long long c_out = static_cast<long long>(tile_row) * 32 + threadIdx.x;  // out's column (in's row)
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const long long r = r_out + 8 * s;
      if (r < cols && c_out < rows) out[r * rows + c_out] = tile[threadIdx.x][threadIdx.y + 8 * s];
    }
    __syncthreads();  // the tile is read before the next tile row overwrites it
  }
}

void expected_transpose(const float* in, float* out, int rows, int cols) {
  const long long tiles_across = (cols + 31LL) / 32, tiles_down = (rows + 31LL) / 32;
  // At most 65535 blocks in y: the kernel loops over the tiles below.
  const dim3 blocks(static_cast<unsigned>(tiles_across), static_cast<unsigned>(std::min(tiles_down, 65535LL)));
  expected_transpose_kernel<<<blocks, dim3(32, 8)>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

// Times every version on one rows x cols matrix of random floats; `all_variants` false
// leaves out the slow ones (labs/transpose/lab.json, "slow_variants").
void run_workload(lab::bench::Harness& h, int rows, int cols, bool graded, const std::string& note,
                  bool all_variants) {
  const std::size_t count = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  const std::size_t bytes = sizeof(float) * count;

  // The input (set 0: the warm-up, the CPU, and every call of the ungraded workloads),
  // its expected result, a pristine copy of the input to check it against. The graded
  // workload's timed calls get fresh matrices instead, with their own expected result
  // (see the top).
  const std::vector<float> in = lab::random_floats(count, -1000.0f, 1000.0f, lab::case_seed("bench_in", count));
  std::vector<float> expected(count), out_host(count);
  transpose_cpu(in.data(), expected.data(), rows, cols);
  lab::DeviceBuffer<float> din(in), dout(count);
  lab::DeviceBuffer<float> d_expected[2] = {lab::DeviceBuffer<float>(expected),
                                            lab::DeviceBuffer<float>(graded ? count : 0)};  // fresh: graded only
  lab::bench::PristineInputs inputs;
  inputs.watch("the input", din);

  using Fn = decltype(transpose);
  lab::bench::Workload w;
  w.name = "transpose " + std::to_string(rows) + " x " + std::to_string(cols) + note;
  w.function = "transpose";
  w.graded = graded;
  w.unit = "GB/s";
  w.amount = 2.0 * bytes;  // every float read once and written once
  w.peak = h.device().peak_dram_gbps;
  if (!all_variants) w.skip_variants = lab::bench::slow_variants(h, "transpose");
  if (graded) {
    // A fresh matrix before every timed call, uniform in [-1000, 1000) like set 0, and its
    // transpose by the bench's kernel: about one reference call.
    inputs.use_fresh_in(w, [&](lab::Seed seed) {
      lab::bench::fill_uniform(din.data(), count, -1000.0f, 1000.0f, seed);
      expected_transpose(din.data(), d_expected[inputs.fresh_set()].data(), rows, cols);
    });
  }
  w.prepare = [&] { dout.poison(); };
  w.check = [&] { return lab::bench::check_equal_device(d_expected[inputs.current()].data(), dout.data(), count); };
  w.inputs_check = [&] { return inputs.check(); };
  w.cpu = [&] { transpose_cpu(in.data(), out_host.data(), rows, cols); };
  if (count > (std::size_t{1} << 24)) w.cpu_max_runs = 1;  // large: one run of the CPU loop is enough
  h.add_implementations<Fn>(w, "transpose", transpose,
                            [&](Fn* fn) { return [&, fn] { fn(din.data(), dout.data(), rows, cols); }; });

  // The copies write no transpose: unchecked (the last field).
  h.add_candidate(w, {"2D copy (32x8 threads)", lab::bench::Role::Roofline,
                      [&] { copy_2d(din.data(), dout.data(), rows, cols); },
                      "coalesced 2D copy of the same matrix: what a transpose can reach at best", {}, true});

  h.add_candidate(w, lab::bench::memcpy_roofline(dout.data(), din.data(), bytes,
                                                 "device-to-device copy of the same bytes: the practical DRAM bound"));
  if (all_variants) {
    h.add_candidate(w, {"2D copy, non-coalesced", lab::bench::Role::Variant,
                        [&] { copy_2d_strided(din.data(), dout.data(), rows, cols); },
                        "the lecture's non-coalesced copy: a warp walks down a column (not a bound)", {}, true});
  }
  h.run(w);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  const int n = static_cast<int>(h.size_or(8192));
  run_workload(h, n, n, true, "", /*all_variants=*/false);
  // With --size, that size alone; else the odd shape too (graded: see the top).
  if (!h.size_given()) run_workload(h, 8191, 4097, true, " (odd, not square)", /*all_variants=*/false);
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade
  run_workload(h, 1024, 1024, false, " (the lecture's size, every version)", /*all_variants=*/true);
  return h.finish();
}
