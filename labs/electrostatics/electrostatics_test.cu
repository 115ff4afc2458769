// Provided by the kit: do not edit. Correctness tests of coulomb_slice, coulomb_slice_cutoff and the
// further part, atom_columns_aos and atom_columns_soa.
//
//   ./build/dev/bin/electrostatics_test                                all tests
//   ./build/dev/bin/electrostatics_test --gtest_filter='*Cutoff*'      the cutoff tests
//   ./build/dev/bin/electrostatics_test --gtest_filter='*nx129_ny65*'  one grid size
//   ./build/dev/bin/electrostatics_test --gtest_filter='*AtomColumns*' the AoS vs SoA part
//   ./build/dev/bin/electrostatics_test --seed=7                       other random atoms
//
// Each GPU test: make atoms (never closer than 0.1 grid spacing to a grid point, mixed
// charges) and compute the exact potential in double on the CPU, together with the error
// bound coulomb_tolerance() of every grid point; fill the grid with NaN so a point your
// kernel skips cannot pass; run; then check every point against its bound, the floats
// just past the grid, and that the atoms are unchanged. Cutoff tests also keep every
// atom away from r = cutoff at every grid point, where floats cannot decide. The further
// part's tests (suites PartAtomColumns*Gpu) compare every atom's column with
// atom_columns_cpu exactly: both compute it with the same float expressions.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "electrostatics.h"
#include "lab/testing.h"
#include "lab/variants.h"

namespace {

using DirectFn = decltype(coulomb_slice);
using CutoffFn = decltype(coulomb_slice_cutoff);
constexpr double kNoCutoff = std::numeric_limits<double>::infinity();

// One problem: the atoms and the slice.
struct Problem {
  std::vector<float4> atoms;
  int nx = 1, ny = 1;
  float spacing = 0.5f, z = 0.0f;
  double cutoff = kNoCutoff;  // infinite: the direct summation

  double extent_x() const { return static_cast<double>(spacing) * (nx - 1); }
  double extent_y() const { return static_cast<double>(spacing) * (ny - 1); }
};

// The largest coordinate magnitude of the grid and the atoms (the `coord_scale` of coulomb_tolerance).
double coord_scale(const Problem& p) {
  double scale = std::max({p.extent_x(), p.extent_y(), std::fabs(static_cast<double>(p.z))});
  for (const float4& a : p.atoms) scale = std::max({scale, std::fabs(static_cast<double>(a.x)), std::fabs(static_cast<double>(a.y)),
                                      std::fabs(static_cast<double>(a.z))});
  return scale;
}

// The exact potential and the error bound at every grid point.
struct Expected {
  std::vector<double> potential, tolerance;
};

Expected exact(const Problem& p) {
  const std::size_t points = static_cast<std::size_t>(p.nx) * static_cast<std::size_t>(p.ny);
  Expected e{std::vector<double>(points), std::vector<double>(points)};
  const double scale = coord_scale(p), s = p.spacing;
  for (int j = 0; j < p.ny; ++j) {
    for (int i = 0; i < p.nx; ++i) {
      double sum = 0, s1 = 0, s2 = 0, terms = 0;
      for (const float4& a : p.atoms) {
        const double dx = s * i - a.x, dy = s * j - a.y, dz = static_cast<double>(p.z) - a.z;
        const double r2 = dx * dx + dy * dy + dz * dz, r = std::sqrt(r2);
        if (!(r < p.cutoff)) continue;  // never for a cutoff <= 0 or NaN; always for infinity
        sum += a.w / r;
        s1 += std::fabs(a.w) / r;
        s2 += std::fabs(a.w) / r2;
        terms += 1;
      }
      const std::size_t k = static_cast<std::size_t>(j) * static_cast<std::size_t>(p.nx) + static_cast<std::size_t>(i);
      e.potential[k] = sum;
      e.tolerance[k] = coulomb_tolerance(s1, s2, terms, scale);
    }
  }
  return e;
}

// Every point within its bound; the message names the first failing points as (i, j).
::testing::AssertionResult within_bounds(const Expected& e, const std::vector<float>& got, int nx) {
  std::size_t bad = 0;
  std::ostringstream examples;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double err = std::fabs(static_cast<double>(got[k]) - e.potential[k]);
    if (err <= e.tolerance[k]) continue;  // false for NaN: an unwritten point fails
    if (bad < 5) {
      examples << "\n  (i " << k % static_cast<std::size_t>(nx) << ", j " << k / static_cast<std::size_t>(nx)
               << "): expected " << e.potential[k] << " +- " << e.tolerance[k] << ", got " << got[k]
               << (std::isnan(got[k]) ? " (never written: still the NaN poison)" : "");
    }
    ++bad;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size()
                                       << " grid points differ from the exact potential by more than "
                                          "coulomb_tolerance():"
                                       << examples.str();
}

// Runs `call(atoms, grid)` on device copies and checks the grid, the guard floats after
// it and the atoms.
void check_problem(const Problem& p, const std::function<void(const float4*, float*)>& call) {
  // Prepare: the exact result and a NaN-poisoned grid with 64 guard floats after it.
  const Expected e = exact(p);
  const std::size_t points = static_cast<std::size_t>(p.nx) * static_cast<std::size_t>(p.ny);
  const std::size_t guard = 64;
  lab::DeviceBuffer<float4> atoms(p.atoms);
  lab::DeviceBuffer<float> grid(points + guard);
  grid.poison();

  // Run.
  call(atoms.data(), grid.data());
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const std::vector<float> all = grid.download();
  const std::vector<float> result(all.begin(), all.begin() + static_cast<long>(points));
  EXPECT_TRUE(within_bounds(e, result, p.nx));
  EXPECT_ARRAY_EQ(std::vector<unsigned>(guard, 0xFFFFFFFFu), lab::bits_of(std::vector<float>(all.begin() + static_cast<long>(points), all.end())))
      << "wrote past grid[nx * ny - 1]: threads outside the grid must not write";
  EXPECT_ARRAY_EQ(lab::bits_of(p.atoms), lab::bits_of(atoms.download())) << "the atoms were modified";
}

void check_direct(const Problem& p, DirectFn* fn = coulomb_slice) {
  check_problem(p, [&](const float4* atoms, float* grid) {
    fn(atoms, static_cast<int>(p.atoms.size()), grid, p.nx, p.ny, p.spacing, p.z);
  });
}

void check_cutoff(const Problem& p, CutoffFn* fn = coulomb_slice_cutoff) {
  check_problem(p, [&](const float4* atoms, float* grid) {
    fn(atoms, static_cast<int>(p.atoms.size()), grid, p.nx, p.ny, p.spacing, p.z, static_cast<float>(p.cutoff));
  });
}

// ---- atoms ---------------------------------------------------------------------------

// True when the atom keeps 0.1 spacing from every grid point and, with a finite cutoff,
// |r - cutoff| > margin at every grid point.
bool acceptable(const float4& a, const Problem& p, double margin) {
  const double s = p.spacing, dz = static_cast<double>(p.z) - a.z;
  const int ni = std::clamp(static_cast<int>(std::lround(a.x / s)), 0, p.nx - 1);
  const int nj = std::clamp(static_cast<int>(std::lround(a.y / s)), 0, p.ny - 1);
  const double ndx = s * ni - a.x, ndy = s * nj - a.y;
  if (ndx * ndx + ndy * ndy + dz * dz < 0.01 * s * s) return false;  // the nearest grid point is the closest
  if (!std::isfinite(p.cutoff)) return true;
  const double reach = p.cutoff + margin;
  const int i0 = std::max(0, static_cast<int>(std::floor((a.x - reach) / s)));
  const int i1 = std::min(p.nx - 1, static_cast<int>(std::ceil((a.x + reach) / s)));
  const int j0 = std::max(0, static_cast<int>(std::floor((a.y - reach) / s)));
  const int j1 = std::min(p.ny - 1, static_cast<int>(std::ceil((a.y + reach) / s)));
  for (int j = j0; j <= j1; ++j) {
    for (int i = i0; i <= i1; ++i) {
      const double dx = s * i - a.x, dy = s * j - a.y;
      if (std::fabs(std::sqrt(dx * dx + dy * dy + dz * dz) - p.cutoff) <= margin) return false;
    }
  }
  return true;
}

// A box of space to draw atoms from.
struct Box {
  double x0, x1, y0, y1, z0, z1;
};

// Adds n atoms drawn uniformly from `box`, charges uniform in [-1, 1] (or [0.1, 1] when
// `positive`), rejecting those too close to a grid point or to r = cutoff.
void add_atoms(Problem& p, int n, const Box& box, lab::Seed seed, bool positive = false) {
  lab::Rng rng(seed);
  // Known before the atoms exist: the boxes and the grid bound every coordinate.
  const double scale = std::max({p.extent_x(), p.extent_y(), std::fabs(box.x0), std::fabs(box.x1), std::fabs(box.y0),
                                 std::fabs(box.y1), std::fabs(box.z0), std::fabs(box.z1), coord_scale(p)});
  const double margin = std::isfinite(p.cutoff) ? 4 * kCutoffAmbiguity * (p.cutoff + scale) : 0.0;
  for (int made = 0; made < n;) {
    float4 a;
    a.x = static_cast<float>(box.x0 + (box.x1 - box.x0) * rng.uniform01());
    a.y = static_cast<float>(box.y0 + (box.y1 - box.y0) * rng.uniform01());
    a.z = static_cast<float>(box.z0 + (box.z1 - box.z0) * rng.uniform01());
    a.w = static_cast<float>(positive ? 0.1 + 0.9 * rng.uniform01() : 2 * rng.uniform01() - 1);
    if (!acceptable(a, p, margin)) continue;
    p.atoms.push_back(a);
    ++made;
  }
}

// A grid with atoms scattered over it and a margin around it, in a slab of +-4 A about the slice.
Problem scattered(int nx, int ny, int natoms, lab::Seed seed, double cutoff = kNoCutoff) {
  Problem p;
  p.nx = nx;
  p.ny = ny;
  p.spacing = 0.5f;
  p.z = 1.25f;
  p.cutoff = cutoff;
  add_atoms(p, natoms, {-3.0, p.extent_x() + 3.0, -3.0, p.extent_y() + 3.0, p.z - 4.0, p.z + 4.0}, seed);
  return p;
}

struct GridSize {
  int nx, ny;
};
std::string grid_name(const ::testing::TestParamInfo<GridSize>& info) {
  return "nx" + std::to_string(info.param.nx) + "_ny" + std::to_string(info.param.ny);
}
std::string grid_label(const Problem& p) {
  return std::to_string(p.nx) + " x " + std::to_string(p.ny) + " grid, " + std::to_string(p.atoms.size()) + " atoms" +
         (std::isfinite(p.cutoff) ? ", cutoff " + std::to_string(p.cutoff) : "");
}

const auto kGridSizes = ::testing::Values(GridSize{1, 1}, GridSize{1, 7}, GridSize{7, 1}, GridSize{31, 33},
                                          GridSize{32, 32}, GridSize{33, 31}, GridSize{129, 65}, GridSize{257, 31},
                                          GridSize{31, 257}, GridSize{300, 9});

// ---- CPU tests -----------------------------------------------------------------------

// One unit charge 1 A above the corner of a 2 x 2 grid of spacing 1: the potential is
// 1 / distance, 1, 1/sqrt(2), 1/sqrt(2), 1/sqrt(3).
TEST(ElectrostaticsCpu, SingleChargeByHand) {
  const std::vector<float4> atoms = {make_float4(0.0f, 0.0f, 1.0f, 1.0f)};
  std::vector<float> grid(4, -1.0f);
  coulomb_slice_cpu(atoms.data(), 1, grid.data(), 2, 2, 1.0f, 0.0f);
  EXPECT_FLOAT_EQ(grid[0], 1.0f);
  EXPECT_FLOAT_EQ(grid[1], static_cast<float>(1 / std::sqrt(2.0)));
  EXPECT_FLOAT_EQ(grid[2], static_cast<float>(1 / std::sqrt(2.0)));
  EXPECT_FLOAT_EQ(grid[3], static_cast<float>(1 / std::sqrt(3.0)));
  // With a cutoff of 1.5 A the far corner (at sqrt(3) = 1.73 A) loses the atom.
  coulomb_slice_cutoff_cpu(atoms.data(), 1, grid.data(), 2, 2, 1.0f, 0.0f, 1.5f);
  EXPECT_FLOAT_EQ(grid[1], static_cast<float>(1 / std::sqrt(2.0)));
  EXPECT_EQ(grid[3], 0.0f);
}

// A dipole mirrored about the slice: every point is equally far from +q and -q, so the
// potential is exactly zero; without atoms the grid is zero too.
TEST(ElectrostaticsCpu, MirroredDipoleCancels) {
  const std::vector<float4> atoms = {make_float4(0.7f, 0.3f, 2.0f, 1.0f), make_float4(0.7f, 0.3f, -2.0f, -1.0f)};
  std::vector<float> grid(12, -1.0f);
  coulomb_slice_cpu(atoms.data(), 2, grid.data(), 4, 3, 0.5f, 0.0f);
  EXPECT_EQ(grid, std::vector<float>(12, 0.0f));
  std::fill(grid.begin(), grid.end(), -1.0f);
  coulomb_slice_cpu(atoms.data(), 0, grid.data(), 4, 3, 0.5f, 0.0f);
  EXPECT_EQ(grid, std::vector<float>(12, 0.0f));
}

// The two CPU versions agree with the exact sums of the test (within the float bound).
TEST(ElectrostaticsCpu, MatchExactSums) {
  const lab::Seed seed = lab::case_seed("electrostatics_cpu");
  SCOPED_TRACE(lab::seed_note(seed));
  Problem direct = scattered(37, 23, 300, seed);
  std::vector<float> grid(37 * 23);
  coulomb_slice_cpu(direct.atoms.data(), 300, grid.data(), 37, 23, direct.spacing, direct.z);
  EXPECT_TRUE(within_bounds(exact(direct), grid, 37));
  for (double cutoff : {0.8, 3.0, 100.0}) {
    SCOPED_TRACE("cutoff " + std::to_string(cutoff));
    Problem p = scattered(37, 23, 300, seed, cutoff);
    coulomb_slice_cutoff_cpu(p.atoms.data(), 300, grid.data(), 37, 23, p.spacing, p.z, static_cast<float>(cutoff));
    EXPECT_TRUE(within_bounds(exact(p), grid, 37));
  }
}

// The cutoff version's edge cases: no cutoff left (<= 0, NaN) gives zeros, an infinite one the direct sum.
TEST(ElectrostaticsCpu, CutoffEdgeCases) {
  const std::vector<float4> atoms = {make_float4(0.2f, 0.3f, 1.0f, 1.0f), make_float4(5.0f, 0.0f, 0.4f, -2.0f)};
  std::vector<float> grid(20, -1.0f), direct(20);
  for (float cutoff : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
    coulomb_slice_cutoff_cpu(atoms.data(), 2, grid.data(), 5, 4, 1.0f, 0.0f, cutoff);
    EXPECT_EQ(grid, std::vector<float>(20, 0.0f)) << "cutoff " << cutoff;
  }
  coulomb_slice_cpu(atoms.data(), 2, direct.data(), 5, 4, 1.0f, 0.0f);
  coulomb_slice_cutoff_cpu(atoms.data(), 2, grid.data(), 5, 4, 1.0f, 0.0f, std::numeric_limits<float>::infinity());
  EXPECT_EQ(grid, direct);
}

// ---- GPU tests: direct summation --------------------------------------------------------

class CoulombSliceGpu : public lab::GpuTestWithParam<GridSize> {};

// 1000 atoms with mixed charges over grids of many shapes, two seeds each.
TEST_P(CoulombSliceGpu, MatchesExactSum) {
  const GridSize g = GetParam();
  for (int trial = 0; trial < 2; ++trial) {
    const lab::Seed seed = lab::case_seed("coulomb_slice", 2ull * (100003ull * g.nx + g.ny) + trial);
    const Problem p = scattered(g.nx, g.ny, 1000, seed);
    SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
    check_direct(p);
  }
}

INSTANTIATE_TEST_SUITE_P(Grids, CoulombSliceGpu, kGridSizes, grid_name);

using CoulombSliceGpuEdge = lab::GpuTest;

// Atom counts around the 4000-atom chunks a constant-memory version uses, and 0 and 1.
TEST_F(CoulombSliceGpuEdge, AtomCounts) {
  for (int natoms : {0, 1, 2, 31, 3999, 4000, 4001}) {
    const lab::Seed seed = lab::case_seed("coulomb_natoms", natoms);
    const Problem p = scattered(45, 37, natoms, seed);
    SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
    check_direct(p);
  }
}

// 10 000 atoms: more than constant memory holds, so a constant-memory version needs chunks.
TEST_F(CoulombSliceGpuEdge, ManyAtoms) {
  const lab::Seed seed = lab::case_seed("coulomb_many");
  const Problem p = scattered(97, 61, 10000, seed);
  SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
  check_direct(p);
}

// Every atom counts, at the chunk boundaries too: 8001 faint, distant atoms, except
// strong ones close to the slice at positions 0, 1, 3999, 4000, 7999 and 8000. Losing
// any of those moves some point far beyond the bound.
TEST_F(CoulombSliceGpuEdge, EveryAtomCounts) {
  const lab::Seed seed = lab::case_seed("coulomb_every_atom");
  Problem p;
  p.nx = 40;
  p.ny = 30;
  p.spacing = 1.0f;
  p.z = 0.0f;
  add_atoms(p, 8001, {0.0, 39.0, 0.0, 29.0, 40.0, 60.0}, seed);
  for (float4& a : p.atoms) a.w *= 0.01f;
  const int probes[] = {0, 1, 3999, 4000, 7999, 8000};
  for (int k = 0; k < 6; ++k) {
    p.atoms[static_cast<std::size_t>(probes[k])] = make_float4(3.3f + 6.0f * k, 7.4f + 3.0f * k, 0.6f, 1.0f);
  }
  SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
  check_direct(p);
}

// Other spacings, a negative slice height, coordinates up to 1000 A and only positive charges.
TEST_F(CoulombSliceGpuEdge, GeometryAndCharges) {
  struct Case {
    int nx, ny;
    float spacing, z;
    bool positive;
  };
  for (const Case& c : {Case{50, 20, 0.1f, -3.0f, false}, Case{20, 50, 3.7f, 2.5f, true}, Case{501, 3, 2.0f, 10.0f, false}}) {
    const lab::Seed seed = lab::case_seed("coulomb_geometry", static_cast<std::uint64_t>(c.nx));
    Problem p;
    p.nx = c.nx;
    p.ny = c.ny;
    p.spacing = c.spacing;
    p.z = c.z;
    add_atoms(p, 500, {-2.0, p.extent_x() + 2.0, -2.0, p.extent_y() + 2.0, p.z - 5.0, p.z + 5.0}, seed, c.positive);
    SCOPED_TRACE(grid_label(p) + ", spacing " + std::to_string(c.spacing) + ", z " + std::to_string(c.z) + ", " +
                 lab::seed_note(seed));
    check_direct(p);
  }
}

// nx or ny of 0 (or negative) writes nothing and raises no CUDA error. Real calls come
// first: an implementation that does nothing at all must not pass this test.
TEST_F(CoulombSliceGpuEdge, EmptyGridDoesNothing) {
  check_direct(scattered(9, 5, 10, lab::case_seed("coulomb_empty")));
  check_cutoff(scattered(9, 5, 10, lab::case_seed("coulomb_empty"), 2.0));
  const std::vector<float4> host = {make_float4(0.3f, 0.3f, 1.0f, 1.0f)};
  lab::DeviceBuffer<float4> atoms(host);
  lab::DeviceBuffer<float> grid(16);
  grid.poison();
  for (auto [nx, ny] : {std::pair{0, 0}, std::pair{0, 4}, std::pair{4, 0}, std::pair{-2, 4}}) {
    coulomb_slice(atoms.data(), 1, grid.data(), nx, ny, 1.0f, 0.0f);
    coulomb_slice_cutoff(atoms.data(), 1, grid.data(), nx, ny, 1.0f, 0.0f, 2.0f);
  }
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(std::vector<unsigned>(16, 0xFFFFFFFFu), lab::bits_of(grid.download()));
}

// ---- GPU tests: cutoff -----------------------------------------------------------------

class CoulombCutoffGpu : public lab::GpuTestWithParam<GridSize> {};

// 1000 atoms, cutoffs of 1.2 A (a few spacings) and 4 A, over grids of many shapes.
TEST_P(CoulombCutoffGpu, MatchesExactSum) {
  const GridSize g = GetParam();
  for (double cutoff : {1.2, 4.0}) {
    const lab::Seed seed = lab::case_seed("coulomb_cutoff", 100003ull * g.nx + g.ny + static_cast<std::uint64_t>(cutoff));
    const Problem p = scattered(g.nx, g.ny, 1000, seed, cutoff);
    SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
    check_cutoff(p);
  }
}

INSTANTIATE_TEST_SUITE_P(Grids, CoulombCutoffGpu, kGridSizes, grid_name);

using CoulombCutoffGpuEdge = lab::GpuTest;

// A larger problem like the bench's, scaled down: 5000 atoms in a slab +-4 A about the
// slice, 0.5 A spacing, 4 A cutoff.
TEST_F(CoulombCutoffGpuEdge, Slab) {
  const lab::Seed seed = lab::case_seed("coulomb_cutoff_slab");
  Problem p;
  p.nx = 161;
  p.ny = 143;
  p.z = 4.0f;
  p.cutoff = 4.0;
  add_atoms(p, 5000, {0.0, 80.0, 0.0, 71.0, 0.0, 8.0}, seed);
  SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
  check_cutoff(p);
}

// Atoms piled into a 2 A cube (thousands in a few small bins: fixed-capacity bins
// overflow) beside scattered ones.
TEST_F(CoulombCutoffGpuEdge, DenseCluster) {
  const lab::Seed seed = lab::case_seed("coulomb_cutoff_cluster");
  Problem p = scattered(81, 77, 1000, seed, 4.0);
  add_atoms(p, 3000, {20.0, 22.0, 15.0, 17.0, 0.5, 2.5}, lab::derive_seed(seed, "cluster"));
  SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
  check_cutoff(p);
}

// Cutoffs at the extremes: larger than the whole problem (the direct sum), and smaller
// than the distance of every atom to every grid point (all zeros).
TEST_F(CoulombCutoffGpuEdge, HugeAndTinyCutoffs) {
  for (double cutoff : {1000.0, 0.04}) {
    const lab::Seed seed = lab::case_seed("coulomb_cutoff_extreme", static_cast<std::uint64_t>(cutoff * 100));
    const Problem p = scattered(41, 29, 700, seed, cutoff);
    SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
    check_cutoff(p);
  }
}

// Atoms that cannot reach the slice (too high above it, or too far to the side) count for nothing.
TEST_F(CoulombCutoffGpuEdge, UnreachableAtoms) {
  const lab::Seed seed = lab::case_seed("coulomb_cutoff_unreachable");
  Problem p;
  p.nx = 50;
  p.ny = 40;
  p.cutoff = 3.0;
  add_atoms(p, 300, {0.0, 25.0, 0.0, 20.0, 3.5, 30.0}, seed);                              // above the slab
  add_atoms(p, 300, {-80.0, -3.5, -50.0, 50.0, -2.0, 2.0}, lab::derive_seed(seed, "left"));  // left of the grid
  add_atoms(p, 300, {5.0, 20.0, 22.6, 90.0, -2.0, 2.0}, lab::derive_seed(seed, "above"));   // past the last row
  SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
  check_cutoff(p);
}

// Atom counts 0, 1 and 10 000, and cutoffs that leave nothing (0, negative, NaN) or
// everything (infinity).
TEST_F(CoulombCutoffGpuEdge, CountsAndSpecialCutoffs) {
  for (int natoms : {0, 1, 10000}) {
    const lab::Seed seed = lab::case_seed("coulomb_cutoff_natoms", natoms);
    const Problem p = scattered(63, 47, natoms, seed, 2.5);
    SCOPED_TRACE(grid_label(p) + ", " + lab::seed_note(seed));
    check_cutoff(p);
  }
  const lab::Seed seed = lab::case_seed("coulomb_cutoff_special");
  const Problem base = scattered(33, 35, 200, seed);
  for (double cutoff : {0.0, -1.0, static_cast<double>(std::numeric_limits<float>::quiet_NaN()), kNoCutoff}) {
    Problem p = base;
    p.cutoff = cutoff;
    SCOPED_TRACE("cutoff " + std::to_string(cutoff) + ", " + lab::seed_note(seed));
    check_cutoff(p);
  }
}

// ---- every registered variant -------------------------------------------------------------

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/electrostatics/lab.json, "required_variants").
const std::vector<GridSize> kVariantGrids = {{1, 1}, {33, 31}, {257, 9}, {9, 70}};

// Every variant of coulomb_slice is right on a few awkward problems.
class CoulombSliceVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CoulombSliceVariantsGpu);

TEST_P(CoulombSliceVariantsGpu, MatchesCpuOnAwkwardGrids) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<DirectFn>("coulomb_slice", name);
  ASSERT_NE(fn, nullptr);
  for (const GridSize& g : kVariantGrids) {
    for (int natoms : {0, 5, 4001}) {
      const lab::Seed seed = lab::case_seed("coulomb_variant", 100003ull * g.nx + g.ny + 7ull * natoms);
      const Problem p = scattered(g.nx, g.ny, natoms, seed);
      SCOPED_TRACE("coulomb_slice variant '" + name + "', " + grid_label(p) + ", " + lab::seed_note(seed));
      check_direct(p, fn);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, CoulombSliceVariantsGpu,
                         ::testing::ValuesIn(lab::registered_variants("coulomb_slice")), lab::variant_test_name);

// Every variant of coulomb_slice_cutoff is right on a few awkward problems, with a cluster.
class CoulombCutoffVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CoulombCutoffVariantsGpu);

TEST_P(CoulombCutoffVariantsGpu, MatchesCpuOnAwkwardGrids) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<CutoffFn>("coulomb_slice_cutoff", name);
  ASSERT_NE(fn, nullptr);
  for (const GridSize& g : kVariantGrids) {
    const lab::Seed seed = lab::case_seed("coulomb_cutoff_variant", 100003ull * g.nx + g.ny);
    Problem p = scattered(g.nx, g.ny, 1500, seed, 2.0);
    add_atoms(p, 400, {1.0, 2.0, 1.0, 2.0, 0.5, 2.0}, lab::derive_seed(seed, "cluster"));
    SCOPED_TRACE("coulomb_slice_cutoff variant '" + name + "', " + grid_label(p) + ", " + lab::seed_note(seed));
    check_cutoff(p, fn);
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, CoulombCutoffVariantsGpu,
                         ::testing::ValuesIn(lab::registered_variants("coulomb_slice_cutoff")), lab::variant_test_name);

// ---- further part: each atom's column, from an array of structs and from a struct of arrays ----

// The columns a test asks for (electrostatics.h, atom_columns_aos).
struct Columns {
  float x0, y0, inv_side;
  int ncx, ncy;
};

std::string columns_label(const Columns& c, std::size_t natoms) {
  std::ostringstream os;
  os << natoms << " atoms, " << c.ncx << " x " << c.ncy << " columns of side " << 1.0 / c.inv_side << " from ("
     << c.x0 << ", " << c.y0 << ")";
  return os.str();
}

// The layouts, and how each test names them.
enum class Layout { Aos, Soa };
const char* layout_function(Layout layout) { return layout == Layout::Aos ? "atom_columns_aos" : "atom_columns_soa"; }

// n records with positions uniform over the columns and two columns' width around them
// (so that some atoms lie outside, some just left of or below column 0, where a cast
// instead of floorf gives 0 instead of -1), the fields the pass never reads random too.
std::vector<AtomRecord> column_atoms(int n, const Columns& c, lab::Seed seed) {
  lab::Rng rng(seed);
  const double side = 1.0 / c.inv_side;
  const double x_lo = c.x0 - 2 * side, x_hi = c.x0 + (std::max(c.ncx, 0) + 2) * side;
  const double y_lo = c.y0 - 2 * side, y_hi = c.y0 + (std::max(c.ncy, 0) + 2) * side;
  std::vector<AtomRecord> atoms(static_cast<std::size_t>(n));
  for (AtomRecord& a : atoms) {
    a.x = static_cast<float>(x_lo + (x_hi - x_lo) * rng.uniform01());
    a.y = static_cast<float>(y_lo + (y_hi - y_lo) * rng.uniform01());
    a.z = static_cast<float>(-20 + 40 * rng.uniform01());
    a.q = static_cast<float>(2 * rng.uniform01() - 1);
    a.vx = static_cast<float>(rng.uniform01() - 0.5);
    a.vy = static_cast<float>(rng.uniform01() - 0.5);
    a.vz = static_cast<float>(rng.uniform01() - 0.5);
    a.mass = static_cast<float>(1 + 30 * rng.uniform01());
  }
  return atoms;
}

constexpr int kColumnsPoison = 0x5A5A5A5A;  // DeviceBuffer::poison(0x5A): a column no test has, and not -1

// Every column equal to the CPU's; the message names the first atoms that differ.
::testing::AssertionResult columns_match(const std::vector<AtomRecord>& atoms, const std::vector<int>& expected,
                                         const std::vector<int>& got) {
  std::size_t bad = 0;
  std::ostringstream examples;
  for (std::size_t n = 0; n < expected.size(); ++n) {
    if (got[n] == expected[n]) continue;
    if (bad < 5) {
      examples << "\n  atom " << n << " at (x " << atoms[n].x << ", y " << atoms[n].y << "): expected column "
               << expected[n] << ", got " << got[n] << (got[n] == kColumnsPoison ? " (never written)" : "");
    }
    ++bad;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << expected.size() << " columns differ from the CPU's:"
                                       << examples.str();
}

// Runs one layout's function on device copies of `atoms` and checks every column, the
// 64 ints after them and that the inputs are unchanged.
void check_columns(Layout layout, const std::vector<AtomRecord>& atoms, const Columns& c) {
  // Prepare: the CPU's columns, the inputs in the layout under test, a poisoned output.
  const int natoms = static_cast<int>(atoms.size());
  std::vector<int> expected(atoms.size());
  atom_columns_cpu(atoms.data(), natoms, expected.data(), c.x0, c.y0, c.inv_side, c.ncx, c.ncy);
  std::vector<float> xs(atoms.size()), ys(atoms.size());
  for (std::size_t n = 0; n < atoms.size(); ++n) {
    xs[n] = atoms[n].x;
    ys[n] = atoms[n].y;
  }
  const std::size_t guard = 64;
  lab::DeviceBuffer<int> columns(atoms.size() + guard);
  columns.poison(0x5A);

  // Run.
  if (layout == Layout::Aos) {
    lab::DeviceBuffer<AtomRecord> d_atoms(atoms);
    atom_columns_aos(d_atoms.data(), natoms, columns.data(), c.x0, c.y0, c.inv_side, c.ncx, c.ncy);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_BITS_EQ(atoms, d_atoms.download()) << "the atoms were modified";
  } else {
    lab::DeviceBuffer<float> d_x(xs), d_y(ys);
    atom_columns_soa(d_x.data(), d_y.data(), natoms, columns.data(), c.x0, c.y0, c.inv_side, c.ncx, c.ncy);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_BITS_EQ(xs, d_x.download()) << "x was modified";
    EXPECT_BITS_EQ(ys, d_y.download()) << "y was modified";
  }

  // Verify.
  const std::vector<int> all = columns.download();
  EXPECT_TRUE(columns_match(atoms, expected, std::vector<int>(all.begin(), all.begin() + natoms)));
  EXPECT_ARRAY_EQ(std::vector<int>(guard, kColumnsPoison), std::vector<int>(all.begin() + natoms, all.end()))
      << "wrote past columns[natoms - 1]: threads with n >= natoms must not write";
}

// Columns like the cutoff bench's (12 A over a 1024 A square), a non-square set of 4 A
// columns away from the origin, and one single column.
const Columns kCutoffColumns{-12.0f, -12.0f, 1.0f / 12.0f, 88, 88};
const Columns kOffsetColumns{3.5f, -40.0f, 0.25f, 37, 5};
const Columns kOneColumn{0.0f, 0.0f, 0.1f, 1, 1};

// 0 and 1 atom, counts around the warp and the block size (256) and not multiples of
// either, and 2^20 + 1, over three sets of columns.
void atom_counts(Layout layout) {
  const Columns sets[] = {kCutoffColumns, kOffsetColumns, kOneColumn};
  int k = 0;
  for (int natoms : {0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 1023, 1024, 1025, (1 << 20) + 1}) {
    const Columns& c = sets[k++ % 3];
    const lab::Seed seed = lab::case_seed("atom_columns_counts", static_cast<std::uint64_t>(natoms));
    SCOPED_TRACE(std::string(layout_function(layout)) + ", " + columns_label(c, static_cast<std::size_t>(natoms)) +
                 ", " + lab::seed_note(seed));
    check_columns(layout, column_atoms(natoms, c, seed), c);
    if (::testing::Test::HasFailure()) return;  // one size is enough to see what is wrong
  }
}

// Atoms placed by hand on the edges of the 37 x 5 columns of side 4 from (3.5, -40): on
// the first column's left edge, just left of it and half a column left (a cast gives 0
// there), on the right and top edges past the last column, far away, and one that tells
// cy * ncx + cx from cx * ncy + cy; then columns with no extent (ncx or ncy <= 0: all -1).
void edge_atoms(Layout layout) {
  const Columns& c = kOffsetColumns;  // x in [3.5, 151.5), y in [-40, -20)
  const float xy[][2] = {{3.5f, -40.0f},     {3.499f, -39.0f},  {1.5f, -39.0f},    {151.5f, -39.0f},
                         {151.499f, -39.0f}, {10.0f, -20.001f}, {10.0f, -20.0f},   {10.0f, -40.001f},
                         {10.0f, -42.0f},    {1e4f, 1e4f},      {-1e4f, -1e4f},    {100.25f, -30.5f},
                         {7.5f, -36.0f},     {-0.5f, -38.0f},   {151.5f, -20.0f},  {77.0f, -30.0f}};
  std::vector<AtomRecord> atoms;
  for (const auto& p : xy) atoms.push_back(AtomRecord{p[0], p[1], 1.0f, -0.5f, 0.1f, 0.2f, 0.3f, 12.0f});
  {
    SCOPED_TRACE(std::string(layout_function(layout)) + ", atoms by hand, " + columns_label(c, atoms.size()));
    check_columns(layout, atoms, c);
  }
  const lab::Seed seed = lab::case_seed("atom_columns_empty");
  const std::vector<AtomRecord> scattered_atoms = column_atoms(300, c, seed);
  for (const auto& [ncx, ncy] : {std::pair{0, 5}, std::pair{37, 0}, std::pair{-1, -1}}) {
    const Columns none{c.x0, c.y0, c.inv_side, ncx, ncy};
    SCOPED_TRACE(std::string(layout_function(layout)) + ", " + columns_label(none, 300) + " (every column -1), " +
                 lab::seed_note(seed));
    check_columns(layout, scattered_atoms, none);
  }
}

// 2^22 + 3 atoms over 4096 x 4096 columns of 0.125 A (16.7 million columns: large indices).
void many_atoms(Layout layout) {
  const Columns c{-256.0f, -256.0f, 8.0f, 4096, 4096};
  const int natoms = (1 << 22) + 3;
  const lab::Seed seed = lab::case_seed("atom_columns_many");
  SCOPED_TRACE(std::string(layout_function(layout)) + ", " + columns_label(c, static_cast<std::size_t>(natoms)) + ", " +
               lab::seed_note(seed));
  check_columns(layout, column_atoms(natoms, c, seed), c);
}

// The CPU version on the atoms by hand: the columns worked out on paper.
TEST(ElectrostaticsCpu, AtomColumnsByHand) {
  const std::vector<AtomRecord> atoms = {{3.5f, -40.0f, 0, 0, 0, 0, 0, 0},   {1.5f, -39.0f, 0, 0, 0, 0, 0, 0},
                                         {151.5f, -39.0f, 0, 0, 0, 0, 0, 0}, {151.499f, -39.0f, 0, 0, 0, 0, 0, 0},
                                         {100.25f, -30.5f, 0, 0, 0, 0, 0, 0}, {10.0f, -20.0f, 0, 0, 0, 0, 0, 0}};
  std::vector<int> got(atoms.size(), 7);
  atom_columns_cpu(atoms.data(), 6, got.data(), 3.5f, -40.0f, 0.25f, 37, 5);
  // (0, 0); x half a column left: -1; x on the right edge: -1; (36, 0); (24, 2) = 2 * 37 + 24; y on the top edge: -1.
  EXPECT_EQ(got, (std::vector<int>{0, -1, -1, 36, 98, -1}));
  atom_columns_cpu(atoms.data(), 6, got.data(), 3.5f, -40.0f, 0.25f, 0, 5);
  EXPECT_EQ(got, std::vector<int>(6, -1));
}

// The part's suites: each runs the interface function of its layout (the grader gives a
// part its point when every test named Registered/<Suite>.<Test>/<function> passes).
class PartAtomColumnsAosGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(PartAtomColumnsAosGpu, MatchesCpuOnAtomCounts) { atom_counts(Layout::Aos); }
TEST_P(PartAtomColumnsAosGpu, AtomsOnTheEdges) { edge_atoms(Layout::Aos); }
TEST_P(PartAtomColumnsAosGpu, ManyAtoms) { many_atoms(Layout::Aos); }

INSTANTIATE_TEST_SUITE_P(Registered, PartAtomColumnsAosGpu, ::testing::Values(std::string("atom_columns_aos")),
                         lab::variant_test_name);

class PartAtomColumnsSoaGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(PartAtomColumnsSoaGpu, MatchesCpuOnAtomCounts) { atom_counts(Layout::Soa); }
TEST_P(PartAtomColumnsSoaGpu, AtomsOnTheEdges) { edge_atoms(Layout::Soa); }
TEST_P(PartAtomColumnsSoaGpu, ManyAtoms) { many_atoms(Layout::Soa); }

INSTANTIATE_TEST_SUITE_P(Registered, PartAtomColumnsSoaGpu, ::testing::Values(std::string("atom_columns_soa")),
                         lab::variant_test_name);

}  // namespace
