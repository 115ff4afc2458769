// Provided by the kit: do not edit. The interface of the electrostatics lab.
//
// coulomb_slice and coulomb_slice_cutoff are what the tests and the grader call; the
// further part, atom_columns_aos and atom_columns_soa, measures how the layout of the
// atoms in memory sets the bytes a pass over them moves. All take device pointers, so
// the timed work is the GPU's and not the copies over PCIe.
// Handout: handouts/electrostatics.md.
//
// Units: lengths in ångström (Å), charges in units of the elementary charge e. The
// potential is Σ q / r in e/Å, without the physical constant 1/(4π ε0) (multiply by
// 332.06 to get kcal/(mol·e), or by 14.40 for volts). Coordinates should stay below
// about 10^4 Å in magnitude (floats carry 7 digits: at 10^4 Å that is 10^-3 Å).
#pragma once

#include <vector_types.h>  // float4

/// The electrostatic potential on one slice of a lattice, by direct Coulomb summation,
/// on the default stream.
///
/// `atoms` is a device array of `natoms` float4: (x, y, z) the position in Å and w the
/// charge in e. `grid` is a device array of nx × ny floats, row-major: grid[j·nx + i] is
/// the potential at the point (i · spacing, j · spacing, z):
///
///     grid[j·nx + i] = Σ_a q_a / r_a,   r_a = |(i·spacing, j·spacing, z) − (x_a, y_a, z_a)|
///
/// Every grid element is overwritten (natoms = 0 gives all zeros); nx or ny ≤ 0 does
/// nothing. No atom may sit on a grid point (r = 0 gives ±inf or NaN there); positions
/// and charges must be finite. The sum is computed in float: the result agrees with the
/// exact sum within coulomb_tolerance(). nx · ny may exceed 2^31 (index with size_t).
void coulomb_slice(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z);

/// Like coulomb_slice, but only atoms with r < cutoff (in Å) contribute, and the cost is
/// linear in the number of atoms and grid points (spatial binning) instead of their
/// product.
///
/// An atom whose distance to a grid point is within kCutoffAmbiguity × (cutoff + the
/// largest coordinate magnitude) of the cutoff may count or not at that point (floats
/// cannot decide r < cutoff more precisely). A cutoff ≤ 0 or NaN gives all zeros; an
/// infinite cutoff is the direct sum.
void coulomb_slice_cutoff(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z,
                          float cutoff);

/// One atom as a molecular-dynamics program keeps it: everything about the atom in one
/// 32-byte record. An array of them is an *array of structs* (AoS): atom n's fields lie
/// together, and atom n + 1 starts 32 bytes later. (The float4 atoms above are an AoS of
/// 16-byte records.) cudaMalloc returns addresses aligned to 256 bytes, so in a device
/// array every record fills exactly one 32-byte sector of memory.
struct AtomRecord {
  float x, y, z;     ///< position, Å
  float q;           ///< charge, e
  float vx, vy, vz;  ///< velocity, Å/ps
  float mass;        ///< mass, u
};
static_assert(sizeof(AtomRecord) == 32, "an AtomRecord is eight floats, one 32-byte sector");

/// The column of every atom, the first pass of binning (handout: "Array of structs or
/// struct of arrays"), reading the atoms from an array of structs; on the default stream.
///
/// Columns are squares of side 1 / inv_side over the slice, ncx across and ncy down, with
/// column (0, 0) starting at (x0, y0) (z does not matter: a column spans every height).
/// For atom n, computed in float exactly as written:
///
///     cx = floorf((atoms[n].x − x0) · inv_side),  cy = floorf((atoms[n].y − y0) · inv_side)
///     columns[n] = cy · ncx + cx   when 0 ≤ cx < ncx and 0 ≤ cy < ncy,   else −1
///
/// Only x and y are needed: 8 of each record's 32 bytes. `columns` is a device array of
/// natoms ints, every one overwritten; natoms ≤ 0 does nothing, and ncx or ncy ≤ 0 gives
/// −1 for every atom. inv_side must be positive and finite, coordinates finite,
/// ncx and ncy at most 2^24 and ncx · ncy below 2^31.
void atom_columns_aos(const AtomRecord* atoms, int natoms, int* columns, float x0, float y0, float inv_side, int ncx,
                      int ncy);

/// The same columns as atom_columns_aos, reading the atoms from a *struct of arrays*
/// (SoA): `x` and `y` are device arrays of natoms floats, x[n] and y[n] the position of
/// atom n (the other fields would be arrays of their own, which this pass never reads).
/// Same contract and the same results, bit for bit.
void atom_columns_soa(const float* x, const float* y, int natoms, int* columns, float x0, float y0, float inv_side,
                      int ncx, int ncy);

/// The sequential direct summation of the lecture (host pointers, same contract),
/// accumulated in double and stored as float: the golden result and the CPU baseline.
void coulomb_slice_cpu(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z);

/// The sequential cutoff summation (host pointers, same contract; double accumulation):
/// atoms are sorted into square columns of side ≥ cutoff over the slice, and each point
/// visits the 3 × 3 columns around it. Linear cost, the CPU baseline of the cutoff kernel.
void coulomb_slice_cutoff_cpu(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z,
                              float cutoff);

/// The sequential atom_columns_aos (host pointers, same contract and the same float
/// expressions): the golden result of both layouts and the CPU baseline.
void atom_columns_cpu(const AtomRecord* atoms, int natoms, int* columns, float x0, float y0, float inv_side, int ncx,
                      int ncy);

/// The float rounding unit u = 2^-24.
constexpr double kFloatUnit = 5.9604644775390625e-8;
/// Relative error of the GPU's reciprocal square root (rsqrt.approx.f32, rsqrtf): 2^-22.9 < 2^-22.
constexpr double kRsqrtRelError = 2.384185791015625e-7;
/// Relative width of the band around r = cutoff where an atom may count or not (see coulomb_slice_cutoff).
constexpr double kCutoffAmbiguity = 16 * kFloatUnit;

/// How far a float evaluation of the potential at one point may be from the exact sum.
///
///   sum_abs_q_over_r   Σ |q_a| / r_a over the atoms that count at this point
///   sum_abs_q_over_r2  Σ |q_a| / r_a² over the same atoms
///   terms              how many atoms count at this point
///   coord_scale        the largest magnitude of any coordinate (grid points and atoms), Å
///
/// Each term q / r is off by at most (kRsqrtRelError + 5u)·|q/r| from its rounded inputs
/// and the reciprocal square root, plus 3u·coord_scale·|q|/r² because the coordinates of
/// the point and the atom are rounded to floats (u·|x| each) before they are subtracted;
/// adding `terms` terms one after another in float adds at most (terms − 1)·u·Σ|q/r|
/// (every partial sum is at most Σ|q/r|), and storing the result u·Σ|q/r|. The bound
/// returned is twice the sum of these, plus a few u of slack for chunked launches.
inline double coulomb_tolerance(double sum_abs_q_over_r, double sum_abs_q_over_r2, double terms,
                                double coord_scale) {
  return 2.0 * ((terms + 8.0) * kFloatUnit * sum_abs_q_over_r + (kRsqrtRelError + 5.0 * kFloatUnit) * sum_abs_q_over_r +
                3.0 * kFloatUnit * coord_scale * sum_abs_q_over_r2);
}
