// Reference solution of the matmul lab (instructors only; not in student repositories).
//
// The progression, each registered with the bench:
//   simple            lecture 10's kernel: one thread per element of C, 16 x 16 blocks;
//                     two global loads per multiply-add (CGMA ratio 1)
//   tiled16, tiled32  lecture 10's tiled kernel with T x T shared-memory tiles of A and B
//                     (global loads divided by T), but bounds-checked: edge tiles are
//                     zero-filled instead of requiring padded matrices
//   register_blocked  a 128 x 128 block tile of C, k-tiles of 8; each of 256 threads
//                     computes 8 x 8 outputs from registers (the classic SGEMM structure):
//                     16 shared loads per 64 multiply-adds
//   vectorized        register_blocked with 16-byte (float4) global and shared loads and
//                     stores where the data is aligned, scalar loads otherwise
//   double_buffered   vectorized with the next k-tile loaded into registers while the
//                     current one is multiplied, and two shared buffers: one barrier per
//                     k-tile: the fastest for shapes whose rows are whole float4s
//   padded            double_buffered on zero-padded copies of A and B when k or n is not
//                     a multiple of 4: float4 loads for every shape. matmul() uses it
// Every variant is correct for any m, k, n >= 0: loads outside A or B read as 0 (they add
// 0 · 0 to sums that are never stored), stores are bounds-checked, and a C with more
// than 65535 block rows (the grid's y limit) is computed in slabs of rows, one launch each.
//
//   ./build/dev/bin/matmul_solution_test && ./build/dev/bin/matmul_solution_bench
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "matmul.h"

namespace {

constexpr int kMaxGridY = 65535;  // gridDim.y limit on every architecture

// ceil(a / b) for a >= 0, b > 0, without overflow near INT_MAX.
__host__ __device__ inline int ceil_div(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) + b - 1) / b);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// The tiled kernels compute k-offsets such as t * 32 + 31 in int. Sizes this close to
// INT_MAX (a 1 x 2^31 matrix is 8 GB, so they can occur) go to the simple kernel.
bool near_int_limit(int m, int k, int n) {
  constexpr int kLimit = INT_MAX - 1024;
  return m > kLimit || k > kLimit || n > kLimit;
}

// Launches `launch(row0, rows, grid)` for slabs of C's rows, each at most 65535 block rows
// (the grid's y limit), so that kernels can take their block row from blockIdx.y alone.
// The kernels then see A + row0 * k and C + row0 * n as matrices of `rows` rows.
template <class Launch>
void for_each_row_slab(int m, int n, int block_rows, int block_cols, Launch launch) {
  const long long slab = static_cast<long long>(kMaxGridY) * block_rows;
  for (long long row0 = 0; row0 < m; row0 += slab) {
    const int rows = static_cast<int>(std::min<long long>(slab, m - row0));
    launch(row0, rows, dim3(ceil_div(n, block_cols), ceil_div(rows, block_rows)));
    LAB_CHECK_LAUNCH();
  }
}

// ---------------------------------------------------------------------------------------
// simple: one thread per element of C.

constexpr int kSimpleBlock = 16;

__global__ void __launch_bounds__(kSimpleBlock * kSimpleBlock)
    matmul_simple_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m,
                         int k, int n) {
  const long long row = static_cast<long long>(blockIdx.y) * kSimpleBlock + threadIdx.y;
  const long long col = static_cast<long long>(blockIdx.x) * kSimpleBlock + threadIdx.x;
  if (row >= m || col >= n) return;  // no barrier in this kernel: leaving early is safe
  const float* a = A + row * k;      // row `row` of A
  const float* b = B + col;          // column `col` of B, stride n
  float acc = 0.0f;
  for (int l = 0; l < k; ++l) acc += a[l] * b[static_cast<long long>(l) * n];
  C[row * n + col] = acc;
}

void matmul_simple(const float* A, const float* B, float* C, int m, int k, int n) {
  if (m <= 0 || n <= 0) return;
  for_each_row_slab(m, n, kSimpleBlock, kSimpleBlock, [&](long long row0, int rows, dim3 grid) {
    matmul_simple_kernel<<<grid, dim3(kSimpleBlock, kSimpleBlock)>>>(A + row0 * k, B, C + row0 * n, rows, k, n);
  });
}

// ---------------------------------------------------------------------------------------
// tiled<T>: T x T threads, one element of C each, T x T tiles of A and B in shared memory.

template <int T>
__global__ void __launch_bounds__(T * T)
    matmul_tiled_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m,
                        int k, int n) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty;  // may lie outside C: such threads still load tiles
  const int col = blockIdx.x * T + tx;
  const int k_tiles = ceil_div(k, T);
  float acc = 0.0f;
  // The loop is uniform across the block, so every thread reaches every barrier.
  for (int t = 0; t < k_tiles; ++t) {
    // Thread (tx, ty) loads A[row][t*T + tx] and B[t*T + ty][col]: both along rows, so a
    // warp's loads are coalesced. Outside the matrices: 0.
    const int a_col = t * T + tx, b_row = t * T + ty;
    As[ty][tx] = (row < m && a_col < k) ? A[static_cast<long long>(row) * k + a_col] : 0.0f;
    Bs[ty][tx] = (b_row < k && col < n) ? B[static_cast<long long>(b_row) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int q = 0; q < T; ++q) acc += As[ty][q] * Bs[q][tx];
    __syncthreads();  // the next k-tile overwrites As and Bs
  }
  if (row < m && col < n) C[static_cast<long long>(row) * n + col] = acc;
}

template <int T>
void matmul_tiled(const float* A, const float* B, float* C, int m, int k, int n) {
  if (m <= 0 || n <= 0) return;
  if (near_int_limit(m, k, n)) return matmul_simple(A, B, C, m, k, n);
  for_each_row_slab(m, n, T, T, [&](long long row0, int rows, dim3 grid) {
    matmul_tiled_kernel<T><<<grid, dim3(T, T)>>>(A + row0 * k, B, C + row0 * n, rows, k, n);
  });
}

// ---------------------------------------------------------------------------------------
// Register blocking. A block of 256 threads computes a kBM x kBN tile of C; each thread
// computes kTM x kTN of it in registers. Per k-tile of kBK, the block stages a kBM x kBK
// tile of A (stored transposed, As[l][i], so that a thread's kTM values of one column are
// contiguous) and a kBK x kBN tile of B in shared memory.

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kRegThreads = (kBM / kTM) * (kBN / kTN);  // 256
// As rows padded by 4 floats: the transposed stores As[l][i] then hit 32 different banks
// (bank = 4 l + i mod 32), and rows stay 16-byte aligned for float4 reads.
constexpr int kAPad = 4;
static_assert(kRegThreads == 256, "the load mappings below assume 256 threads");
static_assert(kBM * kBK == 4 * kRegThreads && kBK * kBN == 4 * kRegThreads, "4 elements of each tile per thread");

// Thread (tx, ty) = (tid % 16, tid / 16) owns rows ty + 16 i and columns tx + 16 j of the
// block tile (i, j < 8): a warp's shared reads of B are 16 consecutive floats (no bank
// conflict), of A 2 floats (broadcast), and its stores of C are 16 consecutive floats.
__global__ void __launch_bounds__(kRegThreads, 2)
    matmul_register_blocked_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   int m, int k, int n) {
  __shared__ float As[kBK][kBM + kAPad];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;  // < m, < n: fit an int
  const int rows_left = min(kBM, m - row0), cols_left = min(kBN, n - col0);  // 1 .. 128
  const int k_tiles = ceil_div(k, kBK);
  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  }
  for (int t = 0; t < k_tiles; ++t) {
    const int l0 = t * kBK;
    // A tile: element e = tid + 256 p is row e / 8, column e % 8. A warp reads 4 rows x
    // 8 consecutive floats: four full 32-byte sectors.
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int e = tid + p * kRegThreads;
      const int i = e / kBK, l = e % kBK;
      As[l][i] = (i < rows_left && l0 + l < k) ? A[static_cast<long long>(row0 + i) * k + (l0 + l)] : 0.0f;
    }
    // B tile: element e is row e / 128, column e % 128: a warp reads 32 consecutive floats.
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int e = tid + p * kRegThreads;
      const int l = e / kBN, j = e % kBN;
      Bs[l][j] = (l0 + l < k && j < cols_left) ? B[static_cast<long long>(l0 + l) * n + (col0 + j)] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int l = 0; l < kBK; ++l) {
      float a[kTM], b[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a[i] = As[l][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) b[j] = Bs[l][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    __syncthreads();  // the next k-tile overwrites As and Bs
  }
  float* c_tile = C + static_cast<long long>(row0) * n + col0;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int r = ty + 16 * i;
    if (r >= rows_left) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int c = tx + 16 * j;
      if (c < cols_left) c_tile[static_cast<long long>(r) * n + c] = acc[i][j];
    }
  }
}

void matmul_register_blocked(const float* A, const float* B, float* C, int m, int k, int n) {
  if (m <= 0 || n <= 0) return;
  if (near_int_limit(m, k, n)) return matmul_simple(A, B, C, m, k, n);
  for_each_row_slab(m, n, kBM, kBN, [&](long long row0, int rows, dim3 grid) {
    matmul_register_blocked_kernel<<<grid, kRegThreads>>>(A + row0 * k, B, C + row0 * n, rows, k, n);
  });
}

// ---------------------------------------------------------------------------------------
// vectorized / double_buffered: the same tiles, with 16-byte accesses.
//
// Thread (tx, ty) = (tid % 16, tid / 16) owns rows {4 ty .. 4 ty + 3} and
// {64 + 4 ty .. 64 + 4 ty + 3} of the block tile, and the same pattern of columns with tx.
// Per k step it reads two float4 of As (broadcast within a warp) and two float4 of Bs
// (16 threads x 16 bytes = 256 consecutive bytes: no bank conflict beyond the two passes
// 256 bytes need) and does 64 multiply-adds.
//
// Loads from global memory, per k-tile, one of two ways:
//   kVecA: A's k is a multiple of 4 and A is 16-byte aligned: thread tid reads one
//          float4, row tid / 2, columns 4 (tid % 2) .. + 3 of the tile.
//   else:  4 floats, elements e = tid + 256 p (row e / 8, column e % 8).
//   kVecB: B's n is a multiple of 4 and B is aligned: one float4, row tid / 32, columns
//          4 (tid % 32) .. + 3 (a warp reads 512 consecutive bytes).
//   else:  4 floats, elements e = tid + 256 p (row e / 128, column e % 128).
// With the multiples of 4, a float4 lies either wholly inside the matrix or wholly
// outside it, so one bounds test per float4 suffices.
//
// B's rows are `ldb` floats apart (n, except for the padded copy of matmul_padded).
//
// kDoubleBuffer: while the block multiplies k-tile t from one shared buffer, each thread
// already holds tile t + 1 in registers (its loads were issued before the multiply), and
// stores it into the other buffer afterwards: one barrier per k-tile, and the global
// load latency hidden behind 512 multiply-adds per thread.
template <bool kVecA, bool kVecB, bool kDoubleBuffer>
__global__ void __launch_bounds__(kRegThreads, 2)
    matmul_vectorized_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m,
                             int k, int n, int ldb, bool vec_c) {
  constexpr int kStages = kDoubleBuffer ? 2 : 1;
  __shared__ __align__(16) float As[kStages][kBK][kBM + kAPad];
  __shared__ __align__(16) float Bs[kStages][kBK][kBN];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;  // < m, < n: fit an int
  // The part of this block tile inside C (1 .. 128 each way). Bounds tests compare
  // block-local int offsets with these, which keeps 64-bit arithmetic out of the main
  // loop: it would cost registers, and at 128 per thread there are none to spare.
  const int rows_left = min(kBM, m - row0), cols_left = min(kBN, n - col0);
  const int k_tiles = ceil_div(k, kBK);

  // Which elements of each k-tile this thread loads (see the comment above the kernel).
  const int a_i = kVecA ? tid / 2 : tid / kBK;         // first (or only) tile row of A
  const int a_l = kVecA ? (tid % 2) * 4 : tid % kBK;   // tile column of A
  const int b_l = kVecB ? tid / 32 : tid / kBN;        // first (or only) tile row of B
  const int b_j = kVecB ? (tid % 32) * 4 : tid % kBN;  // tile column of B
  constexpr int kARowStep = kRegThreads / kBK;         // scalar A: rows a_i + 32 p
  constexpr int kBRowStep = kRegThreads / kBN;         // scalar B: rows b_l + 2 p
  const bool b_col_ok = b_j < cols_left;
  // &A[row0 + a_i][a_l] and &B[b_l][col0 + b_j]; per k-tile add l0 (A) or l0 * n (B).
  // Clamped to the tile's first row / column when the thread's own lies outside the
  // matrix: it then loads nothing, and the pointer stays inside the allocation.
  const float* a_src = A + static_cast<long long>(row0 + (a_i < rows_left ? a_i : 0)) * k + a_l;
  const float* b_src = B + static_cast<long long>(b_l) * ldb + col0 + (b_col_ok ? b_j : 0);
  float a_ld[4], b_ld[4];  // this thread's share of the next k-tile, on its way to shared memory

  // Global -> registers: the k-tile starting at column (of A) / row (of B) l0.
  auto load_tiles = [&](int l0) {
    if constexpr (kVecA) {
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (a_i < rows_left && l0 + a_l < k) v = *reinterpret_cast<const float4*>(a_src + l0);
      a_ld[0] = v.x;
      a_ld[1] = v.y;
      a_ld[2] = v.z;
      a_ld[3] = v.w;
    } else {
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const int i = a_i + p * kARowStep;
        const long long offset = static_cast<long long>(p * kARowStep) * k + l0;
        a_ld[p] = (i < rows_left && l0 + a_l < k) ? a_src[offset] : 0.0f;
      }
    }
    if constexpr (kVecB) {
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (l0 + b_l < k && b_col_ok) v = *reinterpret_cast<const float4*>(b_src + static_cast<long long>(l0) * ldb);
      b_ld[0] = v.x;
      b_ld[1] = v.y;
      b_ld[2] = v.z;
      b_ld[3] = v.w;
    } else {
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const int l = l0 + p * kBRowStep;  // row of B, minus b_l
        b_ld[p] = (l + b_l < k && b_col_ok) ? b_src[static_cast<long long>(l) * ldb] : 0.0f;
      }
    }
  };

  // Registers -> shared buffer `stage`.
  auto store_tiles = [&](int stage) {
    if constexpr (kVecA) {
#pragma unroll
      for (int q = 0; q < 4; ++q) As[stage][a_l + q][a_i] = a_ld[q];
    } else {
#pragma unroll
      for (int p = 0; p < 4; ++p) As[stage][a_l][a_i + p * kARowStep] = a_ld[p];
    }
    if constexpr (kVecB) {
      *reinterpret_cast<float4*>(&Bs[stage][b_l][b_j]) = make_float4(b_ld[0], b_ld[1], b_ld[2], b_ld[3]);
    } else {
#pragma unroll
      for (int p = 0; p < 4; ++p) Bs[stage][b_l + p * kBRowStep][b_j] = b_ld[p];
    }
  };

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  }

  if (k_tiles > 0) {
    load_tiles(0);
    store_tiles(0);
  }
  __syncthreads();
  for (int t = 0; t < k_tiles; ++t) {
    const int stage = kDoubleBuffer ? (t & 1) : 0;
    const bool more = t + 1 < k_tiles;  // uniform across the block
    if (kDoubleBuffer && more) load_tiles((t + 1) * kBK);
#pragma unroll
    for (int l = 0; l < kBK; ++l) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[stage][l][4 * ty]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[stage][l][64 + 4 * ty]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[stage][l][4 * tx]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[stage][l][64 + 4 * tx]);
      const float a[kTM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[kTN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    if constexpr (kDoubleBuffer) {
      // The other buffer was last read in iteration t - 1, which every thread finished
      // before the barrier that ended it.
      if (more) store_tiles(stage ^ 1);
      __syncthreads();
    } else {
      __syncthreads();  // everyone is done reading the buffer before it is refilled
      if (more) {
        load_tiles((t + 1) * kBK);
        store_tiles(0);
      }
      __syncthreads();
    }
  }

  // C: rows (i / 4) * 64 + 4 ty + i % 4 and columns h * 64 + 4 tx + q of the block tile,
  // as float4 when C's rows allow it.
  float* c_tile = C + static_cast<long long>(row0) * n + col0;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int r = (i / 4) * 64 + 4 * ty + (i % 4);
    if (r >= rows_left) continue;
    float* c_row = c_tile + static_cast<long long>(r) * n;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = h * 64 + 4 * tx;
      // With n % 4 == 0 (vec_c), c < cols_left implies c + 3 < cols_left.
      if (vec_c && c < cols_left) {
        *reinterpret_cast<float4*>(c_row + c) =
            make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if (c + q < cols_left) c_row[c + q] = acc[i][4 * h + q];
        }
      }
    }
  }
}

template <bool kDoubleBuffer>
void matmul_vectorized_launch(const float* A, const float* B, float* C, int m, int k, int n) {
  if (m <= 0 || n <= 0) return;
  if (near_int_limit(m, k, n)) return matmul_simple(A, B, C, m, k, n);
  // 16-byte accesses need 16-byte aligned addresses: the base pointer aligned and every
  // row a multiple of 4 floats long.
  const bool vec_a = k % 4 == 0 && aligned16(A);
  const bool vec_b = n % 4 == 0 && aligned16(B);
  const bool vec_c = n % 4 == 0 && aligned16(C);
  for_each_row_slab(m, n, kBM, kBN, [&](long long row0, int rows, dim3 grid) {
    const float* a = A + row0 * k;  // still 16-byte aligned when vec_a (k % 4 == 0), likewise c
    float* c = C + row0 * n;
    if (vec_a && vec_b) {
      matmul_vectorized_kernel<true, true, kDoubleBuffer><<<grid, kRegThreads>>>(a, B, c, rows, k, n, n, vec_c);
    } else if (vec_a) {
      matmul_vectorized_kernel<true, false, kDoubleBuffer><<<grid, kRegThreads>>>(a, B, c, rows, k, n, n, vec_c);
    } else if (vec_b) {
      matmul_vectorized_kernel<false, true, kDoubleBuffer><<<grid, kRegThreads>>>(a, B, c, rows, k, n, n, vec_c);
    } else {
      matmul_vectorized_kernel<false, false, kDoubleBuffer><<<grid, kRegThreads>>>(a, B, c, rows, k, n, n, vec_c);
    }
  });
}

void matmul_tiled16(const float* A, const float* B, float* C, int m, int k, int n) {
  matmul_tiled<16>(A, B, C, m, k, n);
}
void matmul_tiled32(const float* A, const float* B, float* C, int m, int k, int n) {
  matmul_tiled<32>(A, B, C, m, k, n);
}
void matmul_vectorized(const float* A, const float* B, float* C, int m, int k, int n) {
  matmul_vectorized_launch<false>(A, B, C, m, k, n);
}
void matmul_double_buffered(const float* A, const float* B, float* C, int m, int k, int n) {
  matmul_vectorized_launch<true>(A, B, C, m, k, n);
}

// ---------------------------------------------------------------------------------------
// padded: double_buffered for every shape at the speed of the aligned ones.
//
// The 16-byte loads of double_buffered need rows whose length is a multiple of 4 floats:
// for k or n odd (a 2999 x 1999 A, a 1999 x 4001 B) it falls back to scalar loads, four
// times the load instructions, and loses a third of its speed. padded copies the
// misaligned operand into scratch memory first, with its rows zero-filled up to a
// multiple of 4 floats, and multiplies the copies with the float4 kernel:
//   A (m x k)  -> A' (m x k4),  k4 = k rounded up to a multiple of 4, columns k.. zero;
//   B (k x n)  -> B' (k4 x n4), rows k.. and columns n.. zero.
// The zeros add 0 * 0 to sums (A's extra columns meet B's extra rows), and the kernel
// still writes only C's real n columns (B' rows are n4 apart: the kernel's ldb). The
// copies move each input once more, 2 x (m k + k n) x 4 bytes, about 40 us at m x k x n =
// 2999 x 1999 x 4001. Measured on an H100 at that shape: 1.31 ms, where double_buffered
// with scalar loads takes 1.61 ms (0.81 and 0.66 times cuBLAS's speed).
constexpr int kPadThreads = 256;
constexpr int kPaddedASlot = 0, kPaddedBSlot = 1;

// out (rows_out x cols_out) = in (rows x cols) with zeros to the right and below.
__global__ void pad_copy_kernel(const float* __restrict__ in, int rows, int cols, float* __restrict__ out,
                                int rows_out, int cols_out) {
  const long long total = static_cast<long long>(rows_out) * cols_out;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const long long r = e / cols_out, c = e % cols_out;
    out[e] = (r < rows && c < cols) ? in[r * cols + c] : 0.0f;
  }
}

const float* padded_copy(const float* in, int rows, int cols, int rows_out, int cols_out, int slot) {
  const std::size_t count = static_cast<std::size_t>(rows_out) * static_cast<std::size_t>(cols_out);
  float* out = lab::workspace<float>(count, slot);
  const long long blocks = std::min<long long>((static_cast<long long>(count) + kPadThreads - 1) / kPadThreads, 8192);
  pad_copy_kernel<<<static_cast<unsigned>(std::max<long long>(blocks, 1)), kPadThreads>>>(in, rows, cols, out, rows_out,
                                                                                          cols_out);
  LAB_CHECK_LAUNCH();
  return out;
}

void matmul_padded(const float* A, const float* B, float* C, int m, int k, int n) {
  if (m <= 0 || n <= 0) return;
  const int k4 = (k + 3) / 4 * 4, n4 = (n + 3) / 4 * 4;
  const bool a_ok = k == k4 && aligned16(A), b_ok = n == n4 && aligned16(B);
  if ((a_ok && b_ok) || k <= 0 || near_int_limit(m, k4, n4) || static_cast<long long>(m) * k4 > INT_MAX ||
      static_cast<long long>(k4) * n4 > INT_MAX) {
    matmul_vectorized_launch<true>(A, B, C, m, k, n);  // aligned already, or too large to copy
    return;
  }
  // B is copied when its rows are misaligned, and also when k is not a multiple of 4:
  // the kernel then reads k4 rows of it, and rows k.. must exist and be zero.
  const bool copy_b = !b_ok || k != k4;
  const float* a = a_ok ? A : padded_copy(A, m, k, m, k4, kPaddedASlot);
  const float* b = copy_b ? padded_copy(B, k, n, k4, n4, kPaddedBSlot) : B;
  const int ldb = copy_b ? n4 : n;
  const bool vec_c = n % 4 == 0 && aligned16(C);
  for_each_row_slab(m, n, kBM, kBN, [&](long long row0, int rows, dim3 grid) {
    matmul_vectorized_kernel<true, true, true><<<grid, kRegThreads>>>(a + row0 * k4, b, C + row0 * n, rows, k4, n, ldb,
                                                                      vec_c);
  });
}

}  // namespace

void matmul(const float* A, const float* B, float* C, int m, int k, int n) { matmul_padded(A, B, C, m, k, n); }

// ---- Find the bug: lecture 10's tiled kernel, fixed --------------------------------------
// For n not a multiple of the tile the slides' kernel goes wrong in three ways: the loop
// runs n / TILE_DIM times and skips the last, partial tile of the k dimension; the
// threads of the edge blocks load past the last row and column (other rows' values, or
// past the end of A and B); and they store past the end of C, or into the next row. The
// bounds test cannot go around the whole body, because every thread must reach every
// __syncthreads(): instead every thread takes part in every phase, loads 0 where its
// element is outside the matrix (0 adds nothing to the dot product), and only threads
// inside C store.
namespace {

constexpr int kFixTile = kFixMatmulTile;

__global__ void fixed_tiled_matmul_kernel(const float* A, const float* B, float* C, int n) {
  __shared__ float As[kFixTile][kFixTile];
  __shared__ float Bs[kFixTile][kFixTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kFixTile + ty, col = blockIdx.x * kFixTile + tx;
  float val = 0.0f;
  for (int m = 0; m < (n + kFixTile - 1) / kFixTile; ++m) {
    const int a_col = m * kFixTile + tx, b_row = m * kFixTile + ty;
    As[ty][tx] = row < n && a_col < n ? A[static_cast<long long>(row) * n + a_col] : 0.0f;
    Bs[ty][tx] = b_row < n && col < n ? B[static_cast<long long>(b_row) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kFixTile; ++k) val += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) C[static_cast<long long>(row) * n + col] = val;
}

}  // namespace

void fix_matmul_tiled(const float* d_A, const float* d_B, float* d_C, int n) {
  if (n <= 0) return;
  const dim3 threads(kFixTile, kFixTile);
  const unsigned tiles = static_cast<unsigned>((n + kFixTile - 1) / kFixTile);
  fixed_tiled_matmul_kernel<<<dim3(tiles, tiles), threads>>>(d_A, d_B, d_C, n);
  LAB_CHECK_LAUNCH();
}

LAB_REGISTER_VARIANT(matmul, "simple", matmul_simple, "one thread per element of C (lecture 10)");
LAB_REGISTER_VARIANT(matmul, "tiled16", matmul_tiled16, "16x16 shared-memory tiles (lecture 10)");
LAB_REGISTER_VARIANT(matmul, "tiled32", matmul_tiled32, "32x32 shared-memory tiles");
LAB_REGISTER_VARIANT(matmul, "register_blocked", matmul_register_blocked, "128x128x8 tiles, 8x8 outputs per thread");
LAB_REGISTER_VARIANT(matmul, "vectorized", matmul_vectorized, "register_blocked with float4 loads and stores");
LAB_REGISTER_VARIANT(matmul, "double_buffered", matmul_double_buffered,
                     "vectorized, next k-tile prefetched, 2 shared buffers");
LAB_REGISTER_VARIANT(matmul, "padded", matmul_padded,
                     "double_buffered on zero-padded copies when rows are not whole float4s");
