// Reference solution of the electrostatics lab, part 3: one pass over the atoms in two
// memory layouts, array of structs (AoS) and struct of arrays (SoA) (instructors only;
// not in student repositories). Parts 1 and 2 are electrostatics.cu and cutoff.cu.
//
// The pass is the first step of binning: the column of every atom, from its x and y.
// It does a few instructions per atom and no reuse, so it is bound by DRAM bandwidth and
// its time is the bytes it moves. Those bytes depend on the layout, not on the code:
//
//   AoS  thread n reads atoms[n].x and atoms[n].y, bytes 32n .. 32n + 7 of the array. A
//        warp's load touches 32 sectors of 32 bytes (one per record), and DRAM delivers
//        whole sectors: 32 bytes read per atom, of which 8 are used.
//   SoA  thread n reads x[n] and y[n]: consecutive threads, consecutive floats, so each
//        load of a warp is 128 contiguous bytes, 4 sectors, every byte used: 8 bytes per
//        atom.
// Both write one int per atom (4 bytes, coalesced): 36 bytes per atom against 12, so the
// SoA pass should take about a third of the AoS pass's time.
//
// Both kernels are the same code apart from the two loads, on purpose: the bench's
// ratio between them is the layout's alone.
#include "electrostatics.h"
#include "lab/cuda_check.h"

namespace {

constexpr int kColumnsThreads = 256;

// The column of (x, y), or -1: electrostatics.h's float expressions. The range test is
// done on the floats, before the conversion, so a coordinate far outside the columns
// cannot wrap around to a valid index; floorf (not truncation) puts x in (x0 - side, x0)
// in column -1, not 0.
__device__ __forceinline__ int column_of(float x, float y, float x0, float y0, float inv_side, int ncx, int ncy) {
  const float cx = floorf((x - x0) * inv_side);
  const float cy = floorf((y - y0) * inv_side);
  const bool inside = cx >= 0.0f && cx < static_cast<float>(ncx) && cy >= 0.0f && cy < static_cast<float>(ncy);
  return inside ? static_cast<int>(cy) * ncx + static_cast<int>(cx) : -1;
}

// AoS: only x and y are named, but the hardware moves the sector that holds them, and
// with 32-byte records that is the whole record.
__global__ void __launch_bounds__(kColumnsThreads)
    atom_columns_aos_kernel(const AtomRecord* __restrict__ atoms, int natoms, int* __restrict__ columns, float x0,
                            float y0, float inv_side, int ncx, int ncy) {
  const int n = static_cast<int>(blockIdx.x) * kColumnsThreads + static_cast<int>(threadIdx.x);
  if (n >= natoms) return;
  const float x = atoms[n].x, y = atoms[n].y;  // strided: 32 bytes apart from thread to thread
  columns[n] = column_of(x, y, x0, y0, inv_side, ncx, ncy);
}

// SoA: the same arithmetic; each load of a warp is coalesced into 128 contiguous bytes.
__global__ void __launch_bounds__(kColumnsThreads)
    atom_columns_soa_kernel(const float* __restrict__ xs, const float* __restrict__ ys, int natoms,
                            int* __restrict__ columns, float x0, float y0, float inv_side, int ncx, int ncy) {
  const int n = static_cast<int>(blockIdx.x) * kColumnsThreads + static_cast<int>(threadIdx.x);
  if (n >= natoms) return;
  const float x = xs[n], y = ys[n];  // unit stride: consecutive threads, consecutive words
  columns[n] = column_of(x, y, x0, y0, inv_side, ncx, ncy);
}

unsigned blocks_for(int natoms) {
  return static_cast<unsigned>((static_cast<long long>(natoms) + kColumnsThreads - 1) / kColumnsThreads);
}

}  // namespace

void atom_columns_aos(const AtomRecord* atoms, int natoms, int* columns, float x0, float y0, float inv_side, int ncx,
                      int ncy) {
  if (natoms <= 0) return;
  atom_columns_aos_kernel<<<blocks_for(natoms), kColumnsThreads>>>(atoms, natoms, columns, x0, y0, inv_side, ncx,
                                                                   ncy);
  LAB_CHECK_LAUNCH();
}

void atom_columns_soa(const float* x, const float* y, int natoms, int* columns, float x0, float y0, float inv_side,
                      int ncx, int ncy) {
  if (natoms <= 0) return;
  atom_columns_soa_kernel<<<blocks_for(natoms), kColumnsThreads>>>(x, y, natoms, columns, x0, y0, inv_side, ncx,
                                                                   ncy);
  LAB_CHECK_LAUNCH();
}
