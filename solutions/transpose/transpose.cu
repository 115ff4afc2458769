// Reference solution of the transpose lab (instructors only; not in student repositories).
//
// The progression of lecture 10, each registered with the bench so that
// `transpose_bench` reproduces the lecture's comparison table:
//   serial             one thread does the whole double loop (small sizes only: it is
//                      thousands of times slower than the rest)
//   per_row            one thread per row of out (= column of in): loads coalesced,
//                      stores 4 bytes per 32-byte sector
//   per_element        one thread per element, 32 x 32 blocks: loads coalesced, stores not
//   tiled              32 x 32 tile in shared memory, 32 x 32 threads: both coalesced, but
//                      reading the tile down a column is a 32-way bank conflict
//   tiled_padded       the same with tile[32][33]: no bank conflicts
//   tiled_padded_16    the lecture's K = 16 experiment: 16 x 16 tiles and threads
//   tiled_32x8         32 x 32 tile moved by 32 x 8 threads (4 elements each), no padding
//   tiled_padded_32x8  32 x 8 threads and tile[32][33]: fewer threads per tile, more
//                      blocks per SM
//   span               8 padded tiles stacked in one block of 32 x 32 threads, every
//                      load issued before the barrier: what transpose() uses (see the
//                      comment above its kernel)
// Every variant handles any shape: accesses are bounds-checked, and the tiled kernels
// loop over tile rows when a matrix has more than 65535 tiles down (the grid's y limit).
//
//   ./build/dev/bin/transpose_solution_test && ./build/dev/bin/transpose_solution_bench
#include <algorithm>
#include <cstddef>
#include <limits>

#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "transpose.h"

namespace {

constexpr int kMaxGridY = 65535;  // gridDim.y limit on every architecture

// ceil(a / b) for a >= 0, b > 0, without overflow near INT_MAX.
__host__ __device__ inline int ceil_div(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) + b - 1) / b);
}

// The lecture's serial kernel, for any shape. Launched as <<<1, 1>>>.
__global__ void transpose_serial_kernel(const float* in, float* out, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
    }
  }
}

// Thread c writes row c of out (column c of in). At each step the warp's loads are 32
// consecutive floats of one row of in; its stores are `rows` floats apart.
__global__ void transpose_per_row_kernel(const float* in, float* out, int rows, int cols) {
  const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;  // no barrier in this kernel, so leaving early is safe
  float* out_row = out + c * rows;
  for (int r = 0; r < rows; ++r) out_row[r] = in[static_cast<std::size_t>(r) * cols + c];
}

// One thread per element, blockDim = (32, 32); grid y capped, so threads stride down.
__global__ void transpose_per_element_kernel(const float* in, float* out, int rows, int cols) {
  const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const long long stride = static_cast<long long>(gridDim.y) * blockDim.y;
  for (long long r = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows; r += stride) {
    out[c * rows + r] = in[r * cols + c];
  }
}

// One block moves TILE x TILE tiles through shared memory with TILE x BLOCK_ROWS threads;
// thread (tx, ty) handles rows ty, ty + BLOCK_ROWS, ... of the tile. PAD = 1 shifts each
// tile row by one bank, so reading a tile column hits 32 different banks. Index is int
// when every index of the matrix fits in one (fewer registers, so more resident blocks),
// else long long.
template <int TILE, int BLOCK_ROWS, int PAD, class Index>
__global__ void __launch_bounds__(TILE * BLOCK_ROWS)
    transpose_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  static_assert(TILE % BLOCK_ROWS == 0, "the block's rows must divide the tile");
  constexpr int kSteps = TILE / BLOCK_ROWS;
  __shared__ float tile[TILE][TILE + PAD];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const Index col0 = static_cast<Index>(blockIdx.x) * TILE;  // first column of in in this tile
  const int tiles_down = ceil_div(rows, TILE);
  // Uniform across the block (depends on blockIdx only), so the barriers inside are
  // reached by every thread.
  for (int tile_row = blockIdx.y; tile_row < tiles_down; tile_row += gridDim.y) {
    const Index row0 = static_cast<Index>(tile_row) * TILE;  // first row of in in this tile
    // Read: a warp reads consecutive columns of one row of in (coalesced) and writes one
    // row of the tile (consecutive banks).
    const Index c = col0 + tx;
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int i = ty + s * BLOCK_ROWS;
      const Index r = row0 + i;
      if (r < rows && c < cols) tile[i][tx] = in[r * cols + c];
    }
    __syncthreads();
    // Write: row (col0 + i) of out, columns row0 + tx: consecutive threads write
    // consecutive floats (coalesced) and read one column of the tile.
    const Index out_col = row0 + tx;
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int i = ty + s * BLOCK_ROWS;
      const Index out_row = col0 + i;
      if (out_row < cols && out_col < rows) out[out_row * rows + out_col] = tile[tx][i];
    }
    __syncthreads();  // the next tile_row overwrites `tile`
  }
}

void transpose_serial(const float* in, float* out, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  transpose_serial_kernel<<<1, 1>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

void transpose_per_row(const float* in, float* out, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  constexpr int kThreads = 256;
  transpose_per_row_kernel<<<ceil_div(cols, kThreads), kThreads>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

void transpose_per_element(const float* in, float* out, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 threads(32, 32);
  const dim3 blocks(ceil_div(cols, 32), std::min(ceil_div(rows, 32), kMaxGridY));
  transpose_per_element_kernel<<<blocks, threads>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

// True when a kernel whose blocks span `span` rows or columns may use int indices: the
// largest index, and a block's origin past the last row or column, stay below 2^31.
bool int_indices_fit(int rows, int cols, int span) {
  const long long margin = std::numeric_limits<int>::max() - 2LL * span;
  return static_cast<long long>(rows) * cols <= std::numeric_limits<int>::max() && rows <= margin && cols <= margin;
}

template <int TILE, int BLOCK_ROWS, int PAD>
void transpose_tiled_launch(const float* in, float* out, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 threads(TILE, BLOCK_ROWS);
  const dim3 blocks(ceil_div(cols, TILE), std::min(ceil_div(rows, TILE), kMaxGridY));
  if (int_indices_fit(rows, cols, TILE)) {
    transpose_tiled_kernel<TILE, BLOCK_ROWS, PAD, int><<<blocks, threads>>>(in, out, rows, cols);
  } else {
    transpose_tiled_kernel<TILE, BLOCK_ROWS, PAD, long long><<<blocks, threads>>>(in, out, rows, cols);
  }
  LAB_CHECK_LAUNCH();
}

void transpose_tiled(const float* in, float* out, int rows, int cols) {
  transpose_tiled_launch<32, 32, 0>(in, out, rows, cols);
}
void transpose_tiled_padded(const float* in, float* out, int rows, int cols) {
  transpose_tiled_launch<32, 32, 1>(in, out, rows, cols);
}
void transpose_tiled_padded_16(const float* in, float* out, int rows, int cols) {
  transpose_tiled_launch<16, 16, 1>(in, out, rows, cols);
}
void transpose_tiled_32x8(const float* in, float* out, int rows, int cols) {
  transpose_tiled_launch<32, 8, 0>(in, out, rows, cols);
}
void transpose_tiled_padded_32x8(const float* in, float* out, int rows, int cols) {
  transpose_tiled_launch<32, 8, 1>(in, out, rows, cols);
}

// ---- span: eight tiles per block, every load in flight before the barrier -------------
// The fastest version. A tiled transpose reads a tile, waits at a barrier, writes it out:
// while a block waits, its loads are not in flight, and DRAM bandwidth needs many bytes
// in flight per SM. tiled_padded_32x8 has 4 loads per thread in flight at a time. Here a
// block of 32 x 32 threads moves a span of TILES = 8 tiles stacked vertically (32 columns
// of in, 256 rows): each thread issues its 8 loads (one per tile) into registers before
// anything waits, then stores them to the padded tiles, and after one barrier writes
// them out. The writes gain too: a row of out gets 8 x 32 = 256 consecutive floats (1 KB)
// from one block instead of 128 bytes, fewer DRAM pages opened per byte written.
// Measured on an H100: at 8191 x 4097 (odd, not square) 0.107 ms against 0.142 ms for
// tiled_padded_32x8, faster than the bench's 32 x 8 2D copy (0.115 ms); at 8192 x 8192
// about the same (0.187 ms against 0.188 ms, the 2D copy 0.177 ms): there loads in
// flight were not what held it back.
// Shared memory: 8 x 32 x 33 floats = 33 KB per block.
template <int BLOCK_ROWS, int TILES, class Index>
__global__ void __launch_bounds__(32 * BLOCK_ROWS)
    transpose_span_kernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  constexpr int kTile = 32, kSteps = kTile / BLOCK_ROWS, kSpan = kTile * TILES, kLoads = TILES * kSteps;
  __shared__ float tile[kSpan][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const Index col0 = static_cast<Index>(blockIdx.x) * kTile;
  const Index c = col0 + tx;
  const int spans_down = ceil_div(rows, kSpan);
  for (int span = blockIdx.y; span < spans_down; span += gridDim.y) {
    const Index row0 = static_cast<Index>(span) * kSpan;
    float v[kLoads];
#pragma unroll
    for (int s = 0; s < kLoads; ++s) {
      const Index r = row0 + ty + s * BLOCK_ROWS;
      v[s] = (r < rows && c < cols) ? in[r * cols + c] : 0.0f;
    }
#pragma unroll
    for (int s = 0; s < kLoads; ++s) tile[ty + s * BLOCK_ROWS][tx] = v[s];
    __syncthreads();
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int i = ty + s * BLOCK_ROWS;
      const Index out_row = col0 + i;
#pragma unroll
      for (int t = 0; t < TILES; ++t) {
        const Index out_col = row0 + t * kTile + tx;
        if (out_row < cols && out_col < rows) out[out_row * rows + out_col] = tile[t * kTile + tx][i];
      }
    }
    __syncthreads();  // the next span overwrites `tile`
  }
}

template <int BLOCK_ROWS, int TILES>
void transpose_span_launch(const float* in, float* out, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 threads(32, BLOCK_ROWS);
  const dim3 blocks(ceil_div(cols, 32), std::min(ceil_div(rows, 32 * TILES), kMaxGridY));
  if (int_indices_fit(rows, cols, 32 * TILES)) {
    transpose_span_kernel<BLOCK_ROWS, TILES, int><<<blocks, threads>>>(in, out, rows, cols);
  } else {
    transpose_span_kernel<BLOCK_ROWS, TILES, long long><<<blocks, threads>>>(in, out, rows, cols);
  }
  LAB_CHECK_LAUNCH();
}

void transpose_span(const float* in, float* out, int rows, int cols) { transpose_span_launch<32, 8>(in, out, rows, cols); }

}  // namespace

void transpose(const float* in, float* out, int rows, int cols) { transpose_span(in, out, rows, cols); }


// ---- Find the bug: lecture 10's tiled transpose, fixed ------------------------------------
// The slides' kernel multiplies where it must add, twice: the row of the element a thread
// loads is in_corner_j + y (the tile's first row plus the thread's row in it), not
// in_corner_j * y, and the same for out_corner_j. With * every block but those of the
// first tile row reads (and writes) rows far outside its tile, most of them outside the
// matrix.
namespace {

constexpr int kFixTile = kFixTransposeTile;

__global__ void fixed_tiled_transpose_kernel(const float* in, float* out, int N) {
  const int in_corner_i = blockIdx.x * kFixTile, in_corner_j = blockIdx.y * kFixTile;
  const int out_corner_i = blockIdx.y * kFixTile, out_corner_j = blockIdx.x * kFixTile;
  const int x = threadIdx.x, y = threadIdx.y;
  __shared__ float tile[kFixTile][kFixTile];
  tile[y][x] = in[(in_corner_i + x) + static_cast<long long>(in_corner_j + y) * N];
  __syncthreads();
  out[(out_corner_i + x) + static_cast<long long>(out_corner_j + y) * N] = tile[x][y];
}

}  // namespace

void fix_transpose_tiled(const float* in, float* out, int rows, int cols) {
  if (rows <= 0 || rows != cols || rows % kFixTile != 0) return;  // outside the exercise's contract
  const dim3 threads(kFixTile, kFixTile);
  const dim3 blocks(rows / kFixTile, rows / kFixTile);
  fixed_tiled_transpose_kernel<<<blocks, threads>>>(in, out, rows);
  LAB_CHECK_LAUNCH();
}

LAB_REGISTER_VARIANT(transpose, "serial", transpose_serial, "one thread, the CPU's double loop (small sizes only)");
LAB_REGISTER_VARIANT(transpose, "per_row", transpose_per_row, "one thread per row of out: stores not coalesced");
LAB_REGISTER_VARIANT(transpose, "per_element", transpose_per_element, "one thread per element, 32x32 blocks");
LAB_REGISTER_VARIANT(transpose, "tiled", transpose_tiled, "32x32 shared tile, 32x32 threads, bank conflicts");
LAB_REGISTER_VARIANT(transpose, "tiled_padded", transpose_tiled_padded, "tile[32][33], 32x32 threads");
LAB_REGISTER_VARIANT(transpose, "tiled_padded_16", transpose_tiled_padded_16, "tile[16][17], 16x16 threads (K=16)");
LAB_REGISTER_VARIANT(transpose, "tiled_32x8", transpose_tiled_32x8, "tile[32][32], 32x8 threads, 4 elements each");
LAB_REGISTER_VARIANT(transpose, "tiled_padded_32x8", transpose_tiled_padded_32x8,
                     "tile[32][33], 32x8 threads, 4 elements each");
LAB_REGISTER_VARIANT(transpose, "span", transpose_span, "8 padded tiles per block, 32x32 threads, all loads before the barrier");
