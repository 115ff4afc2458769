// Provided by the kit: do not edit. Times coulomb_slice, coulomb_slice_cutoff and the AoS vs SoA
// column pass (atom_columns_aos, atom_columns_soa).
//
//   ./build/dev/bin/electrostatics_bench              all workloads
//   ./build/dev/bin/electrostatics_bench --size 1024  a 1024 x 1024 grid as the only graded shape
//
// Workloads (1 to 3: throughput in G atom-point evaluations per second, Gevals/s):
//  1. (graded) direct summation on two shapes, each a grid of 0.5 A spacing (slice z = 0)
//     with its atoms spread over the grid's area in a slab z in [-10, 10) A, charges
//     uniform in [-1, 1] e: a 2048 x 2048 grid (1024 A square) with 4000 atoms, then an
//     odd one, a 2047 x 1021 grid (nx x ny, multiples of no block or tile) with 3999
//     atoms (with --size n, only the n x n grid with 4000 atoms). The grade is the
//     geometric mean of the two ratios (your time / the reference's); --graded-only times
//     only these. amount = nx * ny * natoms, peak = the reciprocal square roots the
//     special-function units can deliver (16 per SM per clock). Every timed call gets
//     fresh atoms of that distribution, made on the GPU by the bench from a new seed, and
//     is checked at 16384 grid points drawn from that seed, their exact sums computed on
//     the GPU too: a result replayed from an earlier call, or cached per set of atoms
//     recognised by a few of their values, fails the check.
//  2. the square grid's set of atoms (the same seed) on a 256 x 256 corner of that grid:
//     small enough to time the sequential version (sdkTimer, about a second), for the
//     speedup over the CPU (left out when the square is no larger).
//  3. cutoff summation: 100 000 atoms uniform in a 256 A x 256 A x 24 A slab (density
//     0.064 atoms per cubic A, about that of a protein), the slice through its middle
//     (z = 12 A) on a 512 x 512 grid of 0.5 A, cutoff 12 A. Throughput counts
//     nx * ny * natoms evaluations, as if every pair were computed, so the cutoff kernels
//     and the direct summation ("direct", timed on the same problem in the library row)
//     compare directly: the "x lib" column is each kernel's speedup over the direct sum.
//  4. (not graded: for the AoS vs SoA part) each atom's column for binning, 2^24 atoms in
//     the two layouts: atom_columns_aos on 32-byte AtomRecords and atom_columns_soa on
//     x[] and y[], yours and the reference's side by side, with a device-to-device copy
//     as the practical DRAM bound. Throughput is the bytes each layout must move between
//     DRAM and the SMs (AoS 32 read + 4 written per atom, SoA 8 + 4), against the DRAM peak;
//     "x ref" is the reference's SoA time over each row's, so the AoS rows show the
//     layout's cost as a ratio.
// Every timed output is checked on the host against a double-precision result computed
// on the GPU (once for fixed atoms, every grid point; before every call for fresh atoms, at
// random points: the whole exact grid would cost about five times a call, see
// exact_sampled), point by point within coulomb_tolerance() (plus, with a cutoff, the
// atoms within kCutoffAmbiguity of r = cutoff, which may count either way); workload 4's
// columns against atom_columns_cpu's, bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "electrostatics.h"
#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"

namespace {

// The exact potential (double) at one point, and the sums coulomb_tolerance needs there.
struct PointSums {
  double sum = 0, s1 = 0, s2 = 0, terms = 0, either_way = 0;
};

__device__ PointSums exact_point(const float4* __restrict__ atoms, int natoms, double x, double y, float z,
                                 double cutoff, double ambiguity) {
  PointSums p;
  for (int n = 0; n < natoms; ++n) {
    const float4 a = atoms[n];
    const double dx = x - a.x, dy = y - a.y, dz = static_cast<double>(z) - a.z;
    const double r2 = dx * dx + dy * dy + dz * dz, inv_r = rsqrt(r2), r = r2 * inv_r;
    if (r < cutoff) {
      p.sum += a.w * inv_r;
      p.s1 += fabs(a.w) * inv_r;
      p.s2 += fabs(a.w) * inv_r * inv_r;
      p.terms += 1;
    }
    if (fabs(r - cutoff) < ambiguity) p.either_way += fabs(a.w) * inv_r;
  }
  return p;
}

// The sums of point k of `points` points into out[k], out[points + k], … (five arrays).
__device__ void store_sums(const PointSums& p, std::size_t k, std::size_t points, double* __restrict__ out) {
  out[k] = p.sum;
  out[points + k] = p.s1;
  out[2 * points + k] = p.s2;
  out[3 * points + k] = p.terms;
  out[4 * points + k] = p.either_way;
}

// Every grid point.
__global__ void exact_kernel(const float4* __restrict__ atoms, int natoms, int nx, int ny, float spacing, float z,
                             double cutoff, double ambiguity, double* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= nx || j >= ny) return;
  const double x = static_cast<double>(spacing) * i, y = static_cast<double>(spacing) * j;
  const PointSums p = exact_point(atoms, natoms, x, y, z, cutoff, ambiguity);
  store_sums(p, static_cast<std::size_t>(j) * nx + i, static_cast<std::size_t>(nx) * ny, out);
}

// `samples` grid points drawn from `seed` (uniform over the grid; a point may come twice):
// their grid index into points[s], and exact_point's sums there, the very arithmetic of
// exact_kernel, into out (five arrays of `samples`).
__global__ void exact_sampled_kernel(const float4* __restrict__ atoms, int natoms, int nx, int ny, float spacing,
                                     float z, double cutoff, double ambiguity, lab::Seed seed, int samples,
                                     std::size_t* __restrict__ points, double* __restrict__ out) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= samples) return;
  const std::uint64_t bits = lab::bench::random_bits(seed, static_cast<std::uint64_t>(s));
  const int i = static_cast<int>(((bits >> 32) * static_cast<std::uint64_t>(nx)) >> 32);  // uniform in [0, nx)
  const int j = static_cast<int>(((bits & 0xFFFFFFFFull) * static_cast<std::uint64_t>(ny)) >> 32);
  const double x = static_cast<double>(spacing) * i, y = static_cast<double>(spacing) * j;
  points[s] = static_cast<std::size_t>(j) * nx + i;
  store_sums(exact_point(atoms, natoms, x, y, z, cutoff, ambiguity), static_cast<std::size_t>(s),
             static_cast<std::size_t>(samples), out);
}

// out[s] = grid[points[s]]: the result at the sampled points, for a small download.
__global__ void gather_kernel(const float* __restrict__ grid, const std::size_t* __restrict__ points, int samples,
                              float* __restrict__ out) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < samples) out[s] = grid[points[s]];
}

// The exact values and allowed errors at the points checked, every grid point or a sample
// of them, and the check of a result.
struct Exact {
  int nx = 0, ny = 0;
  std::vector<double> potential, tolerance;  // per point checked
  std::vector<std::size_t> points;           // a sample: the grid index of each point checked (empty: all, in order)
  lab::DeviceBuffer<std::size_t> d_points;   // a sample: `points` and the sums there, on the device
  lab::DeviceBuffer<double> d_sums;
  mutable lab::DeviceBuffer<float> d_got;    // a sample: the result at `points`
  mutable std::vector<float> got;  // the downloaded result, reused between checks

  std::string check(const float* grid) const {
    const int samples = static_cast<int>(points.size());
    if (samples == 0) {
      LAB_CUDA_CHECK(cudaMemcpy(got.data(), grid, sizeof(float) * got.size(), cudaMemcpyDeviceToHost));
    } else {
      gather_kernel<<<(samples + 255) / 256, 256>>>(grid, d_points.data(), samples, d_got.data());
      LAB_CHECK_LAUNCH();
      LAB_CUDA_CHECK(cudaMemcpy(got.data(), d_got.data(), sizeof(float) * got.size(), cudaMemcpyDeviceToHost));
    }
    std::size_t bad = 0, first = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (std::fabs(static_cast<double>(got[k]) - potential[k]) <= tolerance[k]) continue;  // NaN fails
      if (bad++ == 0) first = k;
    }
    if (bad == 0) return "";
    const std::size_t at = samples == 0 ? first : points[first];
    std::ostringstream os;
    os << bad << " of " << got.size() << (samples == 0 ? "" : " sampled") << " grid points outside the tolerance; "
       << "first at (i " << at % static_cast<std::size_t>(nx) << ", j " << at / static_cast<std::size_t>(nx)
       << "): expected " << potential[first] << " +- " << tolerance[first] << ", got " << got[first];
    return os.str();
  }
};

// How many grid points are checked in each call with fresh atoms (exact_sampled).
constexpr int kSampledPoints = 16384;

// The band around r = cutoff where an atom may count or not (none without a cutoff).
double ambiguity_of(double cutoff, double scale) {
  return std::isfinite(cutoff) ? kCutoffAmbiguity * (cutoff + scale) : 0.0;
}

// The potential and tolerance of every point from the five arrays of sums of `points` points.
void set_from_sums(Exact& e, const std::vector<double>& sums, std::size_t points, double scale) {
  e.potential.assign(sums.begin(), sums.begin() + static_cast<long>(points));
  e.tolerance.resize(points);
  for (std::size_t k = 0; k < points; ++k) {
    e.tolerance[k] = coulomb_tolerance(sums[points + k], sums[2 * points + k], sums[3 * points + k], scale) +
                     sums[4 * points + k];
  }
  e.got.resize(points);
}

Exact exact(const lab::DeviceBuffer<float4>& atoms, int natoms, int nx, int ny, float spacing, float z, double cutoff,
            double scale) {
  const std::size_t points = static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny);
  lab::DeviceBuffer<double> out(5 * points);
  const dim3 threads(16, 16), blocks((nx + 15) / 16, (ny + 15) / 16);
  exact_kernel<<<blocks, threads>>>(atoms.data(), natoms, nx, ny, spacing, z, cutoff, ambiguity_of(cutoff, scale),
                                    out.data());
  LAB_CHECK_LAUNCH();
  Exact e;
  e.nx = nx;
  e.ny = ny;
  set_from_sums(e, out.download(), points, scale);
  return e;
}

// `e` for `samples` grid points drawn from `seed` instead of all of them: the check of fresh
// atoms before every timed call. The whole grid in double would cost about five times a
// call at the graded size (2048 x 2048 x 4000 pairs: the FP64 units do a quarter of the
// float rate and a double rsqrt takes several of their operations), and its sums would be
// 160 MiB to download; 16384 points cost a few percent of a call, and a result that skips
// or fakes even 0.1% of the grid fails them but for a chance of e^-16. Reuses e's buffers.
void exact_sampled(Exact& e, const lab::DeviceBuffer<float4>& atoms, int natoms, int nx, int ny, float spacing,
                   float z, double cutoff, double scale, lab::Seed seed, int samples) {
  const std::size_t count = static_cast<std::size_t>(samples);
  if (e.d_points.size() != count) {
    e.d_points = lab::DeviceBuffer<std::size_t>(count);
    e.d_sums = lab::DeviceBuffer<double>(5 * count);
    e.d_got = lab::DeviceBuffer<float>(count);
  }
  e.nx = nx;
  e.ny = ny;
  exact_sampled_kernel<<<(samples + 63) / 64, 64>>>(atoms.data(), natoms, nx, ny, spacing, z, cutoff,
                                                    ambiguity_of(cutoff, scale), seed, samples, e.d_points.data(),
                                                    e.d_sums.data());
  LAB_CHECK_LAUNCH();
  e.points = e.d_points.download();
  set_from_sums(e, e.d_sums.download(), count, scale);
}

// n atoms uniform in the box, charges uniform in [-1, 1], none within 0.1 spacing of a grid point.
std::vector<float4> make_atoms(int n, double x1, double y1, double z0, double z1, float spacing, float z,
                               lab::Seed seed) {
  lab::Rng rng(seed);
  std::vector<float4> atoms;
  atoms.reserve(static_cast<std::size_t>(n));
  const double s = spacing;
  while (static_cast<int>(atoms.size()) < n) {
    float4 a;
    a.x = static_cast<float>(x1 * rng.uniform01());
    a.y = static_cast<float>(y1 * rng.uniform01());
    a.z = static_cast<float>(z0 + (z1 - z0) * rng.uniform01());
    a.w = static_cast<float>(2 * rng.uniform01() - 1);
    const double dx = a.x - s * std::round(a.x / s), dy = a.y - s * std::round(a.y / s), dz = a.z - z;
    if (dx * dx + dy * dy + dz * dz >= 0.01 * s * s) atoms.push_back(a);
  }
  return atoms;
}

// make_atoms on the GPU, for fresh atoms: atom n's draws are lab::bench::random_bits(seed, …) of its own
// counters (attempt by attempt, four draws each) instead of one sequence, with the same
// formulas, bounds and rejection. Also atomicMax-es the largest coordinate magnitude of the
// atoms into `largest` (as float bits: for floats >= 0 their order is that of the bits).
__global__ void fresh_atoms_kernel(float4* __restrict__ atoms, int natoms, double x1, double y1, double z0, double z1,
                                   float spacing, float z, lab::Seed seed, unsigned* __restrict__ largest) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= natoms) return;
  const double s = spacing;
  // As lab::Rng::uniform01: 53 random bits in [0, 1).
  auto uniform01 = [&](std::uint64_t attempt, int draw) {
    const std::uint64_t counter = (attempt * static_cast<std::uint64_t>(natoms) + n) * 4 + draw;
    return static_cast<double>(lab::bench::random_bits(seed, counter) >> 11) * 0x1.0p-53;
  };
  for (std::uint64_t attempt = 0;; ++attempt) {
    float4 a;
    a.x = static_cast<float>(x1 * uniform01(attempt, 0));
    a.y = static_cast<float>(y1 * uniform01(attempt, 1));
    a.z = static_cast<float>(z0 + (z1 - z0) * uniform01(attempt, 2));
    a.w = static_cast<float>(2 * uniform01(attempt, 3) - 1);
    const double dx = a.x - s * round(a.x / s), dy = a.y - s * round(a.y / s), dz = a.z - z;
    if (dx * dx + dy * dy + dz * dz >= 0.01 * s * s) {
      atoms[n] = a;
      atomicMax(largest, __float_as_uint(fmaxf(fabsf(a.x), fmaxf(fabsf(a.y), fabsf(a.z)))));
      return;
    }
  }
}

// Fresh atoms as make_atoms makes them, into `atoms` (all of it); returns their largest
// coordinate magnitude. `largest`: one unsigned of scratch.
double make_fresh_atoms(lab::DeviceBuffer<float4>& atoms, double x1, double y1, double z0, double z1, float spacing,
                        float z, lab::Seed seed, lab::DeviceBuffer<unsigned>& largest) {
  const int natoms = static_cast<int>(atoms.size());
  LAB_CUDA_CHECK(cudaMemset(largest.data(), 0, sizeof(unsigned)));
  fresh_atoms_kernel<<<(natoms + 127) / 128, 128>>>(atoms.data(), natoms, x1, y1, z0, z1, spacing, z, seed,
                                                    largest.data());
  LAB_CHECK_LAUNCH();
  const unsigned bits = largest.download()[0];
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// The largest coordinate magnitude of the grid points.
double grid_scale(int nx, int ny, float spacing, float z) {
  return std::max(static_cast<double>(spacing) * (std::max(nx, ny) - 1), std::fabs(static_cast<double>(z)));
}

double coord_scale(const std::vector<float4>& atoms, int nx, int ny, float spacing, float z) {
  double scale = grid_scale(nx, ny, spacing, z);
  for (const float4& a : atoms) {
    scale = std::max({scale, std::fabs(static_cast<double>(a.x)), std::fabs(static_cast<double>(a.y)),
                      std::fabs(static_cast<double>(a.z))});
  }
  return scale;
}

// One coulomb_slice workload on an nx x ny grid of `spacing` (slice z = 0): set 0 is
// `natoms` atoms from `seed` (make_atoms), uniform over [0, x1) x [0, y1) in the slab
// z in [-10, 10) A, charges uniform in [-1, 1] e. `graded`: fresh atoms of that
// distribution before every timed call, checked at kSampledPoints points; otherwise the
// CPU version is timed too (for a small grid only). Everything it sets up lives until the
// workload has run, and is freed before the next one.
void run_direct(lab::bench::Harness& h, int nx, int ny, int natoms, double x1, double y1, float spacing,
                lab::Seed seed, bool graded, const std::string& note) {
  using Direct = decltype(coulomb_slice);
  const float z = 0.0f;
  const std::vector<float4> host = make_atoms(natoms, x1, y1, -10.0, 10.0, spacing, z, seed);
  lab::DeviceBuffer<float4> atoms(host);
  lab::bench::PristineInputs inputs;
  inputs.watch("the atoms", atoms);
  lab::DeviceBuffer<unsigned> largest(1);  // scratch of make_fresh_atoms
  // Set 0's expected grid (every point), and for a graded workload the fresh atoms'
  // (sampled points: exact_sampled says why), remade before every timed call.
  std::vector<Exact> expected;
  expected.push_back(exact(atoms, natoms, nx, ny, spacing, z, INFINITY, coord_scale(host, nx, ny, spacing, z)));
  if (graded) expected.emplace_back();
  const std::size_t points = static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny);
  lab::DeviceBuffer<float> grid(points);
  std::vector<float> cpu_grid(graded ? 0 : points);
  lab::bench::Workload w;
  w.name = "coulomb_slice " + std::to_string(nx) + "x" + std::to_string(ny) + " grid x " + std::to_string(natoms) +
           " atoms" + note;
  w.function = "coulomb_slice";
  w.graded = graded;
  w.unit = "Gevals/s";
  w.amount = static_cast<double>(points) * natoms;
  w.peak = h.device().peak_rsqrt_gops;
  if (graded) {
    // Fresh atoms of set 0's distribution before every timed call, so that no result can
    // be replayed or cached. Per call: the atoms made, 16384 points of every atom each
    // summed in double, and two small downloads, a few percent of a call.
    inputs.use_fresh_in(w, [&](lab::Seed fresh_seed) {
      const double largest_atom = make_fresh_atoms(atoms, x1, y1, -10.0, 10.0, spacing, z, fresh_seed, largest);
      const double scale = std::max(grid_scale(nx, ny, spacing, z), largest_atom);
      exact_sampled(expected[inputs.fresh_set()], atoms, natoms, nx, ny, spacing, z, INFINITY, scale,
                    lab::derive_seed(fresh_seed, "points"), kSampledPoints);
    });
  } else {
    w.cpu = [&] { coulomb_slice_cpu(host.data(), natoms, cpu_grid.data(), nx, ny, spacing, z); };
    w.cpu_max_runs = 1;  // about a second at 256 x 256
  }
  w.prepare = [&] { grid.poison(); };
  w.check = [&] { return expected[inputs.current()].check(grid.data()); };
  w.inputs_check = [&] { return inputs.check(); };
  h.add_implementations<Direct>(w, "coulomb_slice", coulomb_slice, [&](Direct* fn) {
    return [&, fn] { fn(atoms.data(), natoms, grid.data(), nx, ny, spacing, z); };
  });
  h.run(w);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  using Direct = decltype(coulomb_slice);  // workload 3's library row
  using Cutoff = decltype(coulomb_slice_cutoff);
  const float spacing = 0.5f;

  // ---- 1: direct summation, the graded shapes (the grade is the geometric mean of their ratios) ----
  // The aligned square first, then the odd non-square grid; only the square with --size.
  const int n = static_cast<int>(h.size_or(2048));
  const lab::Seed dcs_seed = lab::case_seed("bench_dcs_atoms");
  run_direct(h, n, n, 4000, spacing * n, spacing * n, spacing, dcs_seed, true, "");
  if (!h.size_given()) {
    const int nx = 2047, ny = 1021;
    run_direct(h, nx, ny, 3999, spacing * nx, spacing * ny, spacing, lab::case_seed("bench_dcs_atoms_odd"), true, "");
  }
  if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade

  // ---- 2: the first graded shape's atoms on the CPU's size, a 256 x 256 corner ----
  if (n > 256) run_direct(h, 256, 256, 4000, spacing * n, spacing * n, spacing, dcs_seed, false, " (the CPU's size)");

  // ---- 3: cutoff summation, and the direct summation on the same problem ----
  {
    const int nx = 512, ny = 512, natoms = 100000;
    const float z = 12.0f, cutoff = 12.0f;
    const std::vector<float4> host =
        make_atoms(natoms, 256.0, 256.0, 0.0, 24.0, spacing, z, lab::case_seed("bench_cutoff_atoms"));
    lab::DeviceBuffer<float4> atoms(host);
    lab::bench::PristineInputs inputs;
    inputs.watch("the atoms", atoms);
    const double scale = coord_scale(host, nx, ny, spacing, z);
    const Exact expected = exact(atoms, natoms, nx, ny, spacing, z, cutoff, scale);
    const Exact expected_direct = exact(atoms, natoms, nx, ny, spacing, z, INFINITY, scale);
    lab::DeviceBuffer<float> grid(static_cast<std::size_t>(nx) * ny);
    std::vector<float> cpu_grid(static_cast<std::size_t>(nx) * ny);
    lab::bench::Workload w;
    w.name = "coulomb_slice_cutoff 512x512 grid x 100000 atoms, cutoff 12 A (Gevals/s as if all pairs)";
    w.function = "coulomb_slice_cutoff";
    w.unit = "Gevals/s";
    w.amount = static_cast<double>(nx) * ny * natoms;
    w.prepare = [&] { grid.poison(); };
    w.check = [&] { return expected.check(grid.data()); };
    w.inputs_check = [&] { return inputs.check(); };
    w.cpu = [&] { coulomb_slice_cutoff_cpu(host.data(), natoms, cpu_grid.data(), nx, ny, spacing, z, cutoff); };
    w.cpu_max_runs = 1;  // a second or two
    h.add_implementations<Cutoff>(w, "coulomb_slice_cutoff", coulomb_slice_cutoff, [&](Cutoff* fn) {
      return [&, fn] { fn(atoms.data(), natoms, grid.data(), nx, ny, spacing, z, cutoff); };
    });
    // The direct summation of the same atoms: the reference's when it is loaded, else the linked one.
    Direct* direct = coulomb_slice;
    std::string whose = "the linked coulomb_slice";
    if (h.reference().loaded()) {
      if (Direct* ref = h.reference().registry()->get<Direct>("coulomb_slice", "default")) {
        direct = ref;
        whose = "the reference's coulomb_slice";
      }
    }
    lab::bench::Candidate dcs;
    dcs.name = "direct";
    dcs.role = lab::bench::Role::Library;
    dcs.description = "direct summation of all pairs (" + whose + "), the baseline of the cutoff speedup";
    dcs.call = [&, direct] { direct(atoms.data(), natoms, grid.data(), nx, ny, spacing, z); };
    dcs.check = [&] { return expected_direct.check(grid.data()); };
    h.add_candidate(w, dcs);
    h.run(w);
  }

  // ---- 4: one pass over the atoms in two layouts, AoS and SoA ----
  {
    // The cutoff workload's kind of columns, 12 A wide, over the graded grid's 1024 A
    // square (88 x 88 columns from (-12, -12)); the atoms spread a little beyond them.
    const int natoms = 1 << 24;
    const float side = 12.0f, x0 = -side, y0 = -side, inv_side = 1.0f / side;
    const int ncx = 88, ncy = 88;
    std::vector<AtomRecord> host(static_cast<std::size_t>(natoms));
    std::vector<float> host_x(host.size()), host_y(host.size());
    lab::Rng rng(lab::case_seed("bench_atom_columns"));
    for (std::size_t n = 0; n < host.size(); ++n) {
      AtomRecord& a = host[n];
      a.x = host_x[n] = static_cast<float>(-24.0 + 1072.0 * rng.uniform01());
      a.y = host_y[n] = static_cast<float>(-24.0 + 1072.0 * rng.uniform01());
      a.z = static_cast<float>(-10.0 + 20.0 * rng.uniform01());
      a.q = static_cast<float>(2 * rng.uniform01() - 1);
      a.vx = a.vy = a.vz = 0.0f;  // never read by the pass: their bytes are moved all the same
      a.mass = 12.0f;
    }
    std::vector<int> expected_host(host.size()), cpu_columns(host.size());
    atom_columns_cpu(host.data(), natoms, expected_host.data(), x0, y0, inv_side, ncx, ncy);
    lab::DeviceBuffer<AtomRecord> atoms(host);
    lab::DeviceBuffer<float> xs(host_x), ys(host_y);
    lab::DeviceBuffer<int> expected(expected_host), columns(host.size());
    lab::bench::PristineInputs inputs;
    inputs.watch("the atom records", atoms);
    inputs.watch("x", xs);
    inputs.watch("y", ys);
    const double atoms_d = natoms;
    const double aos_bytes = 36.0 * atoms_d, soa_bytes = 12.0 * atoms_d;  // per call, reads + writes

    lab::bench::Workload w;
    w.name = "atom columns, " + std::to_string(natoms) +
             " atoms: AoS (32-byte records, 36 B/atom) vs SoA (x[], y[], 12 B/atom); GB/s of the bytes each moves";
    w.function = "atom_columns_soa";
    w.unit = "GB/s";
    w.amount = soa_bytes;
    w.peak = h.device().peak_dram_gbps;
    w.prepare = [&] { columns.poison(0x5A); };
    w.check = [&] { return lab::bench::check_equal_device(expected.data(), columns.data(), host.size()); };
    w.inputs_check = [&] { return inputs.check(); };
    w.cpu = [&] { atom_columns_cpu(host.data(), natoms, cpu_columns.data(), x0, y0, inv_side, ncx, ncy); };

    using AosFn = decltype(atom_columns_aos);
    using SoaFn = decltype(atom_columns_soa);
    auto aos = [&](AosFn* fn) {
      return [&, fn] { fn(atoms.data(), natoms, columns.data(), x0, y0, inv_side, ncx, ncy); };
    };
    auto soa = [&](SoaFn* fn) {
      return [&, fn] { fn(xs.data(), ys.data(), natoms, columns.data(), x0, y0, inv_side, ncx, ncy); };
    };
    using lab::bench::Candidate;
    using lab::bench::Role;
    // Yours: the SoA form is the "student" row, so the pair line compares it with the reference's SoA.
    h.add_candidate(w, Candidate{"soa (yours)", Role::Student, soa(atom_columns_soa),
                                 "your atom_columns_soa: x[n], y[n], 12 B per atom", {}, false, soa_bytes});
    h.add_candidate(w, Candidate{"aos (yours)", Role::Variant, aos(atom_columns_aos),
                                 "your atom_columns_aos: 32-byte records, 36 B per atom", {}, false, aos_bytes});
    if (h.reference().loaded()) {
      const lab::VariantRegistry& ref = *h.reference().registry();
      if (SoaFn* fn = ref.get<SoaFn>("atom_columns_soa", "default")) {
        h.add_candidate(w, Candidate{"soa (reference)", Role::Reference, soa(fn), "the reference's atom_columns_soa",
                                     {}, false, soa_bytes});
      }
      if (AosFn* fn = ref.get<AosFn>("atom_columns_aos", "default")) {
        h.add_candidate(w, Candidate{"aos (reference)", Role::Variant, aos(fn), "the reference's atom_columns_aos",
                                     {}, false, aos_bytes});
      }
    }
    // The practical DRAM bound: copying 256 MiB (the first half of the records) reads and writes 512 MiB.
    lab::DeviceBuffer<unsigned char> copy(16 * host.size());
    h.add_candidate(w, lab::bench::memcpy_roofline(copy.data(), atoms.data(), copy.size(),
                                                   "device-to-device copy of 256 MiB: the DRAM bandwidth in practice"));
    h.run(w);
  }
  return h.finish();
}
