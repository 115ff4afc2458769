// matmul lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Write a kernel that multiplies two matrices, C = A · B, with one thread per element of
// C. Make it correct for every shape first (m, k, n need not be multiples of anything).
// Then make it fast: load tiles of A and B into shared memory so that each value read
// from global memory is used many times, then let each thread compute several elements
// of C from registers. The bench compares you with the reference and with cuBLAS.
//
//   cmake --preset dev -DLABKIT_LABS=matmul && cmake --build --preset dev
//   ./build/dev/bin/matmul_test      # correctness
//   ./build/dev/bin/matmul_bench     # timing
//   python3 -m grader matmul         # your score
//
// Handout: handouts/matmul.md. Gaps are marked TODO(student).
#include "lab/cuda_check.h"
#include "matmul.h"

namespace {

// One block of kBlock x kBlock threads computes a kBlock x kBlock square of C.
constexpr int kBlock = 16;

}  // namespace

// One thread per element of C. Thread (threadIdx.x, threadIdx.y) of block (blockIdx.x,
// tile_row) computes C[row][col] with
//   row = tile_row * kBlock + threadIdx.y,   col = blockIdx.x * kBlock + threadIdx.x,
// so that the threads of a warp (consecutive threadIdx.x) write consecutive elements of
// a row of C and read consecutive elements of a row of B.
__global__ void matmul_simple_kernel(const float* A, const float* B, float* C, int m, int k, int n) {
  // A grid has at most 65535 blocks in y, fewer than the squares down a tall C, so each
  // block walks down C in steps of gridDim.y squares.
  const int tiles_down = (m + kBlock - 1) / kBlock;
  for (int tile_row = blockIdx.y; tile_row < tiles_down; tile_row += gridDim.y) {
    // TODO(student): compute row and col; if row < m and col < n, add up
    // A[row][l] * B[l][col] for l = 0 .. k - 1 in a float and store the sum in
    // C[row][col]. Row-major: A[row][l] is A[row * k + l], B[l][col] is B[l * n + col],
    // C[row][col] is C[row * n + col]. Compute those indices in size_t
    // (static_cast<size_t>(row) * k + l): m * k can exceed the range of int.
    // k = 0 must give C[row][col] = 0, not leave C untouched.
  }
  (void)A;
  (void)B;
  (void)C;
  (void)k;
  (void)n;
}

// TODO(student), once the simple kernel passes the tests: a tiled kernel.
//   __shared__ float As[kBlock][kBlock], Bs[kBlock][kBlock];
//   for each k-tile t = 0 .. ceil(k / kBlock) - 1:
//     every thread loads one element of A's tile and one of B's tile (0.0f where the
//     element lies outside A or B: the tiles at the edges stick out of the matrices);
//     __syncthreads();   // the tiles are complete
//     acc += As[threadIdx.y][q] * Bs[q][threadIdx.x] for q = 0 .. kBlock - 1;
//     __syncthreads();   // everyone is done before the next tiles overwrite these
//   if row < m and col < n: C[row][col] = acc.
// Every thread of the block must reach both barriers, also threads whose (row, col) lies
// outside C: they still help load the tiles. So no early return, and no barrier inside
// an `if` that only some threads take. Then: several outputs per thread (handout).

void matmul(const float* A, const float* B, float* C, int m, int k, int n) {
  if (m <= 0 || n <= 0) return;  // nothing to do, and a grid of 0 blocks is an invalid launch
  const dim3 threads(kBlock, kBlock);
  // TODO(student): one block per kBlock x kBlock square of C: blocks.x = ceil(n / kBlock),
  // blocks.y = ceil(m / kBlock) but at most 65535 (the kernel loops over the rest).
  const dim3 blocks(1, 1);
  matmul_simple_kernel<<<blocks, threads>>>(A, B, C, m, k, n);
  LAB_CHECK_LAUNCH();
}

// TODO(student): the lecture's steps, each a function with matmul's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void matmul_simple(const float* A, const float* B, float* C, int m, int k, int n) { ... }
//     LAB_REGISTER_VARIANT(matmul, "simple", matmul_simple,
//                          "one line on what it does");
//   Needed: "simple" and "tiled16" (include "lab/variants.h").
//   Your matmul may call the fastest of them.

// ---- Find the bug (handout: "Find the bug") -------------------------------------------
// Lecture 10's tiled kernel, copied as the slides print it (TILE_DIM is kFixMatmulTile).
// The slides' comment says the bounds test was left out "because of sync: pad matrices
// instead", so it is right only when n is a multiple of the tile. Its tests
// (Registered/FixMatmulTiledGpu.*) fail for other n: make it right for every n without
// padding the matrices (keep every __syncthreads() reached by every thread of the block),
// and explain what went wrong in answers.md (question bug_matmul_tiled).
constexpr int TILE_DIM = kFixMatmulTile;

__global__ void simpleMMM(const float* d_A, const float* d_B, float* d_C, int n) {
  __shared__ float As[TILE_DIM][TILE_DIM];
  __shared__ float Bs[TILE_DIM][TILE_DIM];
  int bx = blockIdx.x;  int by = blockIdx.y;
  int tx = threadIdx.x; int ty = threadIdx.y;
  int row = by * TILE_DIM + ty;
  int col = bx * TILE_DIM + tx;

  // can't do test because of sync: pad matrices instead
  // if (row < n && col < n)
  {
    float val = 0;
    for (int m = 0; m < n / TILE_DIM; m++) {
      As[ty][tx] = d_A[row * n + m * TILE_DIM + tx];
      Bs[ty][tx] = d_B[(m * TILE_DIM + ty) * n + col];
      __syncthreads();
      for (int k = 0; k < TILE_DIM; k++) val += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
    d_C[row * n + col] = val;
  }
}

void fix_matmul_tiled(const float* d_A, const float* d_B, float* d_C, int n) {
  const dim3 threads(TILE_DIM, TILE_DIM);
  const dim3 blocks((n + TILE_DIM - 1) / TILE_DIM, (n + TILE_DIM - 1) / TILE_DIM);
  simpleMMM<<<blocks, threads>>>(d_A, d_B, d_C, n);
  LAB_CHECK_LAUNCH();
}
