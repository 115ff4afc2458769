// Provided by the kit: do not edit. The sequential scans of lecture 4 and lecture 7: one
// loop each, where element i is computed from element i - 1. The loop-carried
// dependency is exactly what a parallel scan has to break. The tests compare your
// kernels with these functions, and the bench times them (with the sdkTimer API) to
// compute your speedup. Also the sequential sparse matrix-vector product (lecture 7's
// application of the segmented scan), the golden result of spmv_csr's tests.
#include "scan.h"

void inclusive_scan_cpu(const float* in, float* out, int n) {
  if (n <= 0) return;
  out[0] = in[0];
  for (int i = 1; i < n; ++i) out[i] = out[i - 1] + in[i];  // n - 1 additions
}

void exclusive_scan_cpu(const float* in, float* out, int n) {
  if (n <= 0) return;
  out[0] = 0.0f;  // nothing comes before the first element
  for (int i = 1; i < n; ++i) out[i] = out[i - 1] + in[i - 1];
}

void segmented_inclusive_scan_cpu(const float* in, const int* head_flags, float* out, int n) {
  if (n <= 0) return;
  out[0] = in[0];  // index 0 always starts a segment
  for (int i = 1; i < n; ++i) out[i] = head_flags[i] != 0 ? in[i] : out[i - 1] + in[i];
}

void spmv_csr_cpu(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                  int /*cols*/, int /*nnz*/) {
  for (int r = 0; r < rows; ++r) {
    float sum = 0.0f;  // an empty row sums to 0
    for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k) sum += values[k] * x[col_idx[k]];
    y[r] = sum;
  }
}
