// Provided by the kit: do not edit. The interface of the transpose lab.
//
// transpose is what the tests and the grader call. It takes device pointers, so the
// timed work is the GPU's and not the copies over PCIe. Matrices are stored row-major,
// as C stores a 2D array: element (r, c) of a rows x cols matrix is at [r * cols + c].
// Handout: handouts/transpose.md.
#pragma once

/// out = in^T on the default stream: out[c * rows + r] = in[r * cols + c] for every
/// 0 <= r < rows, 0 <= c < cols. `in` is a device pointer to rows x cols floats
/// (row-major), `out` a device pointer to cols x rows floats (row-major); they do not
/// overlap. Any shape: square or not, sizes that are not multiples of the tile, one row
/// or one column, and more than 65535 tiles down a side (mind the grid's y limit).
/// rows = 0 or cols = 0 does nothing. Every element of out is overwritten; nothing past
/// out[rows * cols - 1] is touched. Exact: a transpose only moves bits.
void transpose(const float* in, float* out, int rows, int cols);

/// Find the bug (lecture 10's "1 thread per element tiled" kernel, as the slides print it):
/// transpose for square matrices only, rows == cols a positive multiple of
/// kFixTransposeTile (the slides' K). Your file starts with the lecture's code, bug
/// included: its tests (Registered/FixTransposeTiledGpu.*) fail until you fix it there.
/// Handout: "Find the bug".
void fix_transpose_tiled(const float* in, float* out, int rows, int cols);

/// The tile side of fix_transpose_tiled (the slides' K).
constexpr int kFixTransposeTile = 32;

/// The sequential version on the CPU (host pointers), the lecture's double loop: the
/// golden result and the CPU baseline.
void transpose_cpu(const float* in, float* out, int rows, int cols);
