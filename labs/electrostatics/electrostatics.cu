// electrostatics lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Compute the electrostatic potential of a set of atoms on one slice of a 3-D lattice:
// first by direct Coulomb summation (every grid point sums q / r over every atom), then
// with a cutoff and spatial binning, so that the cost grows linearly with the size of
// the problem. A further part writes one pass over the atoms twice, for an array of
// structs and for a struct of arrays, to measure what the layout costs. electrostatics.h
// says exactly what to compute; the bench compares your direct summation with the
// reference and with the reciprocal-square-root peak of your GPU, and your two layouts
// with the reference's and with the DRAM bandwidth.
//
//   cmake --preset dev -DLABKIT_LABS=electrostatics && cmake --build --preset dev
//   ./build/dev/bin/electrostatics_test        # correctness
//   ./build/dev/bin/electrostatics_bench       # timing
//   python3 -m grader electrostatics           # your score
//
// Handout: handouts/electrostatics.md. Gaps are marked TODO(student).
#include "electrostatics.h"
#include "lab/buffer.h"
#include "lab/cuda_check.h"

// Atoms in constant memory: every thread of a warp reads the same atom at the same
// time, and constant memory delivers one value to all 32 threads in one access.
// 4000 atoms x 16 bytes = 64 000 bytes, nearly all of the 64 KB there is.
constexpr int kMaxConstantAtoms = 4000;
static_assert(kMaxConstantAtoms * sizeof(float4) <= 65536, "constant memory holds 64 KB");
// TODO(student): declare the atom buffer in constant memory:
//   __constant__ float4 c_atoms[kMaxConstantAtoms];

constexpr int kBlockX = 16, kBlockY = 16;

// Direct summation: one thread per grid point (i, j).
__global__ void coulomb_kernel(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z) {
  // TODO(student): compute i and j from blockIdx, blockDim and threadIdx; threads
  // outside the grid do nothing. The point is (i * spacing, j * spacing, z).
  //
  // TODO(student): sum atoms[n].w / r over the atoms, with r the distance from the
  // point to (atoms[n].x, atoms[n].y, atoms[n].z). rsqrtf(r2) gives 1 / sqrt(r2) in one
  // instruction of the special-function unit. Store the sum in grid[(size_t)j * nx + i]
  // (overwrite: the grid holds garbage before the call).
  //
  // TODO(student), step 2: read the atoms from c_atoms instead of global memory. The
  // host copies up to kMaxConstantAtoms of them at a time with cudaMemcpyToSymbol(c_atoms,
  // atoms + first, bytes, 0, cudaMemcpyDeviceToDevice) and launches once per chunk; the
  // first launch overwrites the grid, the next ones add to it. Then: several points per
  // thread (see the handout).
  (void)atoms;
  (void)natoms;
  (void)grid;
  (void)nx;
  (void)ny;
  (void)spacing;
  (void)z;
}

void coulomb_slice(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z) {
  if (nx <= 0 || ny <= 0) return;  // nothing to do, and a grid of 0 blocks is an invalid launch
  const dim3 threads(kBlockX, kBlockY);
  // TODO(student): enough blocks to cover nx x ny points (round up in both directions).
  const dim3 blocks(1, 1);
  coulomb_kernel<<<blocks, threads>>>(atoms, natoms, grid, nx, ny, spacing, z);
  LAB_CHECK_LAUNCH();
}

// Cutoff summation: only atoms with r < cutoff count.
__global__ void coulomb_cutoff_kernel(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing,
                                      float z, float cutoff) {
  // TODO(student), step 1: the direct summation with a test r*r < cutoff*cutoff. Correct,
  // but every point still looks at every atom.
  //
  // TODO(student), step 2: binning. Sort the atoms into bins by position (a cell of
  // side >= cutoff holds all atoms that can reach a point of the cell from the 3 x 3
  // cells around it), then let each point (or each block of points) visit only the bins
  // near it. Building the bins on the GPU: count the atoms per bin with atomicAdd, turn
  // the counts into start offsets (an exclusive scan), then scatter each atom to
  // start[bin] + atomicAdd(&fill[bin], 1). Scratch arrays come from
  // lab::workspace<T>(count, slot) (lab/buffer.h): never cudaMalloc in here.
  (void)atoms;
  (void)natoms;
  (void)grid;
  (void)nx;
  (void)ny;
  (void)spacing;
  (void)z;
  (void)cutoff;
}

void coulomb_slice_cutoff(const float4* atoms, int natoms, float* grid, int nx, int ny, float spacing, float z,
                          float cutoff) {
  if (nx <= 0 || ny <= 0) return;
  const dim3 threads(kBlockX, kBlockY);
  // TODO(student): enough blocks to cover the grid, as above.
  const dim3 blocks(1, 1);
  coulomb_cutoff_kernel<<<blocks, threads>>>(atoms, natoms, grid, nx, ny, spacing, z, cutoff);
  LAB_CHECK_LAUNCH();
}

// TODO(student): the lecture's steps, each a function with coulomb_slice's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void coulomb_slice_v1(const float4* atoms, int natoms, float* grid, int nx, int ny,
//                           float spacing, float z) { ... }
//     LAB_REGISTER_VARIANT(coulomb_slice, "v1", coulomb_slice_v1,
//                          "one line on what it does");
//   Needed: "v1", "v2" and "v3" (include "lab/variants.h").
//   Your coulomb_slice may call the fastest of them.

// ---- Further part: array of structs (AoS) vs struct of arrays (SoA) ----------------------
//
// One pass over the atoms, written twice: each thread takes one atom and computes its
// column (electrostatics.h gives the exact formula), reading x and y either from 32-byte
// AtomRecords (AoS) or from two arrays x[] and y[] (SoA). The pass does almost no
// arithmetic, so its time is the bytes it moves: the bench times both forms side by side
// (handout: "Array of structs or struct of arrays").
constexpr int kColumnsBlock = 256;

// The column of a point (x, y), or -1 outside the columns: the same float expressions as
// electrostatics.h, shared by both kernels.
__device__ int column_of(float x, float y, float x0, float y0, float inv_side, int ncx, int ncy) {
  // TODO(student): cx = floorf((x - x0) * inv_side), cy likewise with y and y0. Test the
  // range while they are still floats (0 <= cx < ncx, 0 <= cy < ncy), and only then turn
  // them into ints: cy * ncx + cx. Note floorf, not a cast: (int)-0.5f is 0, but the point
  // lies left of column 0.
  (void)x;
  (void)y;
  (void)x0;
  (void)y0;
  (void)inv_side;
  (void)ncx;
  (void)ncy;
  return -1;
}

__global__ void atom_columns_aos_kernel(const AtomRecord* atoms, int natoms, int* columns, float x0, float y0,
                                        float inv_side, int ncx, int ncy) {
  // TODO(student): n = blockIdx.x * blockDim.x + threadIdx.x; a thread with n >= natoms
  // does nothing. columns[n] = column_of(atoms[n].x, atoms[n].y, ...). Read only the two
  // fields you need: thread n reads bytes 32n .. 32n + 7, so the 32 threads of a warp
  // touch 32 different 32-byte sectors, and each sector is read from DRAM whole.
  (void)atoms;
  (void)natoms;
  (void)columns;
  (void)x0;
  (void)y0;
  (void)inv_side;
  (void)ncx;
  (void)ncy;
}

__global__ void atom_columns_soa_kernel(const float* x, const float* y, int natoms, int* columns, float x0, float y0,
                                        float inv_side, int ncx, int ncy) {
  // TODO(student): the same with x[n] and y[n]: consecutive threads read consecutive
  // floats, so a warp's read of x is 128 consecutive bytes (4 sectors), all of them used.
  (void)x;
  (void)y;
  (void)natoms;
  (void)columns;
  (void)x0;
  (void)y0;
  (void)inv_side;
  (void)ncx;
  (void)ncy;
}

void atom_columns_aos(const AtomRecord* atoms, int natoms, int* columns, float x0, float y0, float inv_side, int ncx,
                      int ncy) {
  if (natoms <= 0) return;  // no atoms: nothing to write, and 0 blocks is an invalid launch
  // TODO(student): enough blocks of kColumnsBlock threads for natoms atoms (round up).
  const int blocks = 1;
  atom_columns_aos_kernel<<<blocks, kColumnsBlock>>>(atoms, natoms, columns, x0, y0, inv_side, ncx, ncy);
  LAB_CHECK_LAUNCH();
}

void atom_columns_soa(const float* x, const float* y, int natoms, int* columns, float x0, float y0, float inv_side,
                      int ncx, int ncy) {
  if (natoms <= 0) return;
  // TODO(student): enough blocks, as above.
  const int blocks = 1;
  atom_columns_soa_kernel<<<blocks, kColumnsBlock>>>(x, y, natoms, columns, x0, y0, inv_side, ncx, ncy);
  LAB_CHECK_LAUNCH();
}
