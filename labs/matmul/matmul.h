// Provided by the kit: do not edit. The interface of the matmul lab.
//
// matmul is what the tests and the grader call. It takes device pointers, so the timed
// work is the GPU's and not the copies over PCIe. Matrices are stored row-major, as C
// stores a 2D array: element (i, j) of a matrix with `cols` columns is at [i * cols + j].
// Handout: handouts/matmul.md.
#pragma once

/// C = A · B on the default stream, in single precision (float arithmetic, any order
/// of the k products and sums, no TF32 or other reduced-precision shortcut). Row-major:
/// A is m x k (A[i * k + l]), B is k x n (B[l * n + j]), C is m x n (C[i * n + j]).
/// All three are device pointers with any float alignment; C overlaps neither A nor B.
/// Any m, k, n >= 0, not only multiples of a tile: m = 0 or n = 0 does nothing; k = 0
/// sets C to zero. C is overwritten (never accumulated into); nothing past
/// C[m * n - 1] is touched. m may exceed 65535 tiles (mind the grid's y limit).
void matmul(const float* A, const float* B, float* C, int m, int k, int n);

/// Find the bug (lecture 10's tiled matrix-matrix multiplication, as the slides print it):
/// C = A B for square n x n matrices (row-major device pointers), any n >= 1. Your file
/// starts with the lecture's kernel, which works only when n is a multiple of
/// kFixMatmulTile: its tests (Registered/FixMatmulTiledGpu.*) fail until you fix it there.
/// Handout: "Find the bug".
void fix_matmul_tiled(const float* d_A, const float* d_B, float* d_C, int n);

/// The tile side of fix_matmul_tiled (the slides' TILE_DIM).
constexpr int kFixMatmulTile = 16;

/// The sequential version on the CPU (host pointers), the lecture's triple loop with
/// each sum accumulated in double and rounded to float once: the golden result and the
/// CPU baseline. Same shapes and rules as matmul.
void matmul_cpu(const float* A, const float* B, float* C, int m, int k, int n);

/// matmul_cpu, and also magnitude[i * n + j] = sum over l of |A[i][l]| · |B[l][j]|, the
/// scale of the rounding error of C[i][j] (host pointers; magnitude is m x n).
void matmul_cpu_with_magnitude(const float* A, const float* B, float* C, float* magnitude, int m, int k, int n);

/// Unit roundoff of float: 2^-24, the largest relative error of one rounding.
constexpr double kMatmulUnitRoundoff = 1.0 / 16777216.0;

/// The constant c of the tolerance below. A sum of k products computed in float, in any
/// order, with or without fused multiply-adds, is within gamma_k · magnitude of the exact
/// value, where gamma_k = k·u / (1 − k·u) (Higham, "Accuracy and Stability of Numerical
/// Algorithms", section 3.1). The reference is the exact value rounded once more (u ·
/// magnitude). For k >= 2 and k·u <= 1/4 both together stay below 2·k·u·magnitude, so
/// c = 2; for k = 1 both sides are the same single rounding of one product.
constexpr double kMatmulErrorFactor = 2.0;

/// A tiny absolute term, for results whose magnitude is 0 or underflows.
constexpr double kMatmulAbsoluteTolerance = 1e-30;

/// The largest |C[i][j] − reference[i][j]| a correct float matmul may show against
/// matmul_cpu: c · k · u · magnitude[i][j] + a tiny absolute term.
inline double matmul_tolerance(int k, double magnitude) {
  return kMatmulErrorFactor * k * kMatmulUnitRoundoff * magnitude + kMatmulAbsoluteTolerance;
}
