// transpose lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Write a kernel that transposes a rows x cols matrix through a tile in shared memory,
// so that both its reads of `in` and its writes of `out` are coalesced (neighbouring
// threads touch neighbouring addresses), and pad the tile so that reading it down a
// column causes no shared-memory bank conflicts. Then make it fast: the bench compares
// you with the reference and with a plain copy of the same matrix, the best any
// transpose can hope for.
//
//   cmake --preset dev -DLABKIT_LABS=transpose && cmake --build --preset dev
//   ./build/dev/bin/transpose_test      # correctness
//   ./build/dev/bin/transpose_bench     # timing
//   python3 -m grader transpose         # your score
//
// Handout: handouts/transpose.md. Gaps are marked TODO(student).
#include "lab/cuda_check.h"
#include "transpose.h"

namespace {

// A tile is kTile x kTile elements; one block of kTile x kTile threads moves one tile.
// 32 = the warp size: one row of the tile is read by one warp, in one coalesced access.
constexpr int kTile = 32;

}  // namespace

// One block transposes one kTile x kTile tile of `in` (and, if the grid is short in y,
// the tiles below it, see the loop). Thread (threadIdx.x, threadIdx.y) of the block:
//   1. reads in[r][c] with r = tile_row * kTile + threadIdx.y and
//      c = blockIdx.x * kTile + threadIdx.x (threadIdx.x varies fastest, so a warp reads
//      32 consecutive floats of one row: coalesced) into tile[threadIdx.y][threadIdx.x];
//   2. waits until the whole tile is in shared memory;
//   3. writes the tile's transposed element to out, again with threadIdx.x running
//      along a row of out, so the writes are coalesced too: out's row is the input's
//      column blockIdx.x * kTile + threadIdx.y, out's column is the input's row
//      tile_row * kTile + threadIdx.x, and the value is tile[threadIdx.x][threadIdx.y].
__global__ void transpose_tiled_kernel(const float* in, float* out, int rows, int cols) {
  // TODO(student): declare the tile: __shared__ float tile[kTile][kTile + 1];
  // Why + 1? Step 3 reads a column of the tile. Work out which of the 32 shared-memory
  // banks the 32 threads of a warp hit in that read, with and without the padding
  // (handout, "Bank conflicts", and question 3), and check it with ncu.

  // A grid has at most 65535 blocks in y, fewer than the tiles down a tall matrix, so
  // each block walks down the matrix in steps of gridDim.y tiles.
  const int tiles_down = (rows + kTile - 1) / kTile;
  for (int tile_row = blockIdx.y; tile_row < tiles_down; tile_row += gridDim.y) {
    // TODO(student): steps 1 to 3 above, for the tile at (tile_row, blockIdx.x).
    //  - A tile at the right or bottom edge sticks out of the matrix: only threads whose
    //    element is inside (r < rows and c < cols; for the write, the transposed test)
    //    may read or write. Bounds-check the accesses, never return early.
    //  - Every thread of the block must reach __syncthreads(): never put it inside an
    //    `if` that some threads skip.
    //  - Index with size_t (static_cast<size_t>(r) * cols + c): rows * cols can exceed
    //    the range of int.
    // TODO(student): a second __syncthreads() at the end of the loop body, so that no
    // thread overwrites the tile for the next tile_row while others still read it.
  }
  (void)in;
  (void)out;
  (void)cols;
}

void transpose(const float* in, float* out, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;  // nothing to do, and a grid of 0 blocks is an invalid launch
  const dim3 threads(kTile, kTile);     // 1024 threads, one per element of a tile
  // TODO(student): one block per tile: blocks.x = the tiles across (ceil(cols / kTile)),
  // blocks.y = the tiles down (ceil(rows / kTile)) but at most 65535, the limit of a
  // grid's y dimension (the kernel loops over the rest).
  const dim3 blocks(1, 1);
  transpose_tiled_kernel<<<blocks, threads>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
  // Faster, once this works: blocks of 32 x 8 threads, each thread moving 4 elements of
  // the 32 x 32 tile (rows threadIdx.y, threadIdx.y + 8, ...). See the handout.
}

// TODO(student): the lecture's steps, each a function with transpose's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void transpose_per_element(const float* in, float* out, int rows, int cols) { ... }
//     LAB_REGISTER_VARIANT(transpose, "per_element", transpose_per_element,
//                          "one line on what it does");
//   Needed: "per_element", "tiled" and "tiled_padded" (include "lab/variants.h").
//   Your transpose may call the fastest of them.

// ---- Find the bug (handout: "Find the bug") -------------------------------------------
// Lecture 10's "1 thread per element tiled" kernel, copied as the slides print it (N is a
// parameter here, K is kFixTransposeTile, and floats replace ints). It compiles and runs,
// and its tests (Registered/FixTransposeTiledGpu.*) fail: find the bug (it is there
// twice), fix it here, and explain it in answers.md (question bug_transpose_tiled).
// Work out by hand which element thread (x, y) of block (1, 1) reads for N = 64.
constexpr int K = kFixTransposeTile;

__global__ void transpose_thread_per_element_tiled(const float in[], float out[], int N) {
  int in_corner_i = blockIdx.x * K;
  int in_corner_j = blockIdx.y * K;

  int out_corner_i = blockIdx.y * K;
  int out_corner_j = blockIdx.x * K;

  int x = threadIdx.x;
  int y = threadIdx.y;

  __shared__ float tile[K][K];

  tile[y][x] = in[(in_corner_i + x) + (in_corner_j * y) * N];
  __syncthreads();
  out[(out_corner_i + x) + (out_corner_j * y) * N] = tile[x][y];
}

void fix_transpose_tiled(const float* in, float* out, int rows, int cols) {
  (void)cols;  // square: cols == rows
  const int N = rows;
  const dim3 threads(K, K);
  const dim3 blocks(N / K, N / K);
  transpose_thread_per_element_tiled<<<blocks, threads>>>(in, out, N);
  LAB_CHECK_LAUNCH();
}
