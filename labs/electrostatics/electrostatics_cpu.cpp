// Provided by the kit: do not edit. The sequential versions of the lecture: the direct
// Coulomb summation (every grid point sums over every atom) and the cutoff summation
// with the atoms sorted into bins, both accumulated in double, and the column of each
// atom (the first pass of binning, for the AoS vs SoA part). The tests compare your
// kernels with them, and the bench times them (sdkTimer) for your speedup.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "electrostatics.h"

void coulomb_slice_cpu(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z) {
  if (nx <= 0 || ny <= 0) return;
  for (int j = 0; j < ny; ++j) {
    const double y = static_cast<double>(spacing) * j;
    for (int i = 0; i < nx; ++i) {
      const double x = static_cast<double>(spacing) * i;
      double energy = 0.0;
      for (int n = 0; n < natoms; ++n) {  // the contribution of each atom
        const double dx = x - atoms[n].x, dy = y - atoms[n].y, dz = static_cast<double>(z) - atoms[n].z;
        energy += atoms[n].w / std::sqrt(dx * dx + dy * dy + dz * dz);
      }
      grid[static_cast<std::size_t>(j) * static_cast<std::size_t>(nx) + static_cast<std::size_t>(i)] =
          static_cast<float>(energy);
    }
  }
}

void coulomb_slice_cutoff_cpu(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z,
                              float cutoff) {
  if (nx <= 0 || ny <= 0) return;
  if (std::isinf(cutoff) && cutoff > 0) {
    coulomb_slice_cpu(atoms, natoms, grid, nx, ny, spacing, z);
    return;
  }
  const std::size_t points = static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny);
  std::fill(grid, grid + points, 0.0f);
  if (natoms <= 0 || !(cutoff > 0)) return;

  // Square columns of side b ≥ cutoff over the slice and a cutoff margin around it: the
  // atoms within the cutoff of a point are in the point's column or the 8 around it.
  // (At most 1024 columns per side, so a tiny cutoff cannot ask for billions of them.)
  const double c = cutoff, s = spacing;
  const double x_lo = -c, y_lo = -c;
  const double width = s * (nx - 1) + 2 * c, height = s * (ny - 1) + 2 * c;
  const double b = std::max({c, width / 1024, height / 1024});
  const int nbx = static_cast<int>(width / b) + 1, nby = static_cast<int>(height / b) + 1;
  auto column_of = [&](double x, double y) {
    const int bx = std::clamp(static_cast<int>(std::floor((x - x_lo) / b)), 0, nbx - 1);
    const int by = std::clamp(static_cast<int>(std::floor((y - y_lo) / b)), 0, nby - 1);
    return by * nbx + bx;
  };
  // Counting sort of the atoms that can matter (within the cutoff of the slice's rectangle).
  std::vector<int> start(static_cast<std::size_t>(nbx) * nby + 1, 0);
  std::vector<int> column(static_cast<std::size_t>(natoms), -1);
  for (int n = 0; n < natoms; ++n) {
    const double x = atoms[n].x, y = atoms[n].y, dz = static_cast<double>(z) - atoms[n].z;
    if (std::fabs(dz) >= c || x <= x_lo || y <= y_lo || x >= x_lo + width || y >= y_lo + height) continue;
    column[static_cast<std::size_t>(n)] = column_of(x, y);
    ++start[static_cast<std::size_t>(column[static_cast<std::size_t>(n)]) + 1];
  }
  for (std::size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
  std::vector<int> fill(start.begin(), start.end() - 1);
  std::vector<float4> sorted(static_cast<std::size_t>(start.back()));
  for (int n = 0; n < natoms; ++n) {
    const int col = column[static_cast<std::size_t>(n)];
    if (col >= 0) sorted[static_cast<std::size_t>(fill[static_cast<std::size_t>(col)]++)] = atoms[n];
  }

  const double c2 = c * c;
  for (int j = 0; j < ny; ++j) {
    const double y = s * j;
    for (int i = 0; i < nx; ++i) {
      const double x = s * i;
      const int home = column_of(x, y), hx = home % nbx, hy = home / nbx;
      double energy = 0.0;
      for (int by = std::max(hy - 1, 0); by <= std::min(hy + 1, nby - 1); ++by) {
        // Columns bx-1 .. bx+1 of one row are adjacent in the sorted order.
        const int first = start[static_cast<std::size_t>(by * nbx + std::max(hx - 1, 0))];
        const int last = start[static_cast<std::size_t>(by * nbx + std::min(hx + 1, nbx - 1) + 1)];
        for (int n = first; n < last; ++n) {
          const float4& a = sorted[static_cast<std::size_t>(n)];
          const double dx = x - a.x, dy = y - a.y, dz = static_cast<double>(z) - a.z;
          const double r2 = dx * dx + dy * dy + dz * dz;
          if (r2 < c2) energy += a.w / std::sqrt(r2);
        }
      }
      grid[static_cast<std::size_t>(j) * static_cast<std::size_t>(nx) + static_cast<std::size_t>(i)] =
          static_cast<float>(energy);
    }
  }
}

// The column of each atom, the float expressions of electrostatics.h exactly. The range
// test comes before the conversion to int: converting a float outside int's range is
// undefined behaviour in C++ (the GPU's conversion saturates instead).
void atom_columns_cpu(const AtomRecord* atoms, int natoms, int* columns, float x0, float y0, float inv_side, int ncx,
                      int ncy) {
  for (int n = 0; n < natoms; ++n) {
    const float cx = std::floor((atoms[n].x - x0) * inv_side);
    const float cy = std::floor((atoms[n].y - y0) * inv_side);
    const bool inside = cx >= 0.0f && cx < static_cast<float>(ncx) && cy >= 0.0f && cy < static_cast<float>(ncy);
    columns[n] = inside ? static_cast<int>(cy) * ncx + static_cast<int>(cx) : -1;
  }
}
