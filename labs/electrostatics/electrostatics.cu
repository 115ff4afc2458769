// electrostatics lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Compute the electrostatic potential of a set of atoms on one slice of a 3-D lattice:
// first by direct Coulomb summation (every grid point sums q / r over every atom), then
// with a cutoff and spatial binning, so that the cost grows linearly with the size of
// the problem. electrostatics.h says exactly what to compute; the bench compares your
// direct summation with the reference and with the reciprocal-square-root peak of your GPU.
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
