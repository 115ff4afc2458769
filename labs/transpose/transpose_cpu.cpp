// Provided by the kit: do not edit. The sequential transpose of lecture 10: a double
// loop over the rows and columns of the input, writing each element to its mirrored
// place. The tests compare your kernel with it, and the bench times it (with the sdkTimer
// API) to compute your speedup. Its reads walk along a row (consecutive addresses), its
// writes walk down a column of out (a stride of `rows` floats): the same pattern that
// makes the naive GPU kernels slow.
#include <cstddef>

#include "transpose.h"

void transpose_cpu(const float* in, float* out, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {    // loop over the rows of in
    for (int c = 0; c < cols; ++c) {  // loop over the columns of in
      // size_t: rows * cols can exceed the int range for large matrices.
      out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
    }
  }
}
