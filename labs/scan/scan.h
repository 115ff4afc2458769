// Provided by the kit: do not edit. The interface of the scan (prefix sum) lab.
//
// The functions below are what the tests and the grader call. They take device
// pointers, so the timed work is the GPU's and not the copies over PCIe.
// Handout: handouts/scan.md.
//
// Floating-point note: a parallel scan adds in a different order from the sequential
// loop, so on arbitrary floats the last bits may differ from the CPU result. On
// integer-valued floats whose partial sums stay below 2^24 in magnitude every order
// gives the same, exact result; the tests and the bench use such data and compare
// exactly.
#pragma once

/// Inclusive scan: out[i] = in[0] + in[1] + ... + in[i] for 0 <= i < n, on the default
/// stream. `in` and `out` are device pointers to n floats each (any float alignment)
/// and do not overlap; all n elements of `out` are overwritten, nothing else is
/// written. `in` is left unchanged. n = 0 does nothing; 0 <= n <= 2^31 - 1.
void inclusive_scan(const float* in, float* out, int n);

/// Exclusive scan: out[0] = 0 and out[i] = in[0] + ... + in[i - 1] for 0 < i < n, on the
/// default stream. Pointers, overlap, limits and n = 0 as for inclusive_scan.
void exclusive_scan(const float* in, float* out, int n);

/// Segmented inclusive scan: the array is cut into segments, each starting at an index i
/// where head_flags[i] != 0 (any non-zero value counts) and running up to the next such
/// index; index 0 always starts a segment, whatever head_flags[0] holds. Within each
/// segment out holds the inclusive scan of that segment alone:
/// out[i] = in[i] when i starts a segment, else out[i - 1] + in[i]. `in`, `head_flags`
/// and `out` are device pointers to n elements each; `out` overlaps neither input, and
/// both inputs are left unchanged. Limits and n = 0 as for inclusive_scan.
void segmented_inclusive_scan(const float* in, const int* head_flags, float* out, int n);

/// Find the bug (lecture 4's Hillis-Steele scan "with errors", as the slides print it):
/// the inclusive scan of X[0 .. len-1] into Y, 1 <= len <= kFixScanBlock, by one block of
/// kFixScanBlock threads. Your file starts with the lecture's code, both errors included:
/// fix it there, until its tests (Registered/FixHshScanGpu.*) pass and racecheck finds
/// nothing in them (the grader runs it: the race can hide from the tests). X and Y are device
/// pointers to len floats and do not overlap. Handout: "Find the bug".
void fix_hsh_scan(const float* X, float* Y, int len);

/// The block size of fix_hsh_scan (the lecture's BLOCK_SIZE).
constexpr int kFixScanBlock = 1024;

/// Further part (lecture 7's application of the segmented scan; handout: "Further part:
/// sparse matrix-vector product"): y = A x for a sparse rows x cols matrix A stored in
/// compressed sparse row (CSR) form, on the default stream. Row r's nonzeros are
/// values[k] in column col_idx[k] for row_ptr[r] <= k < row_ptr[r + 1], and
/// y[r] = sum over them of values[k] * x[col_idx[k]]; an empty row (row_ptr[r] ==
/// row_ptr[r + 1]) gives y[r] = 0.
/// The expected method is the lecture's: gather x by col_idx, multiply by values (a map),
/// a segmented inclusive scan of the products with one segment per non-empty row, then
/// y[r] is the last element of row r's segment. You may call your own
/// segmented_inclusive_scan, and take scratch arrays from cudaMalloc and give them back with
/// cudaFree inside the function.
/// All pointers are device pointers and describe a valid CSR matrix (nothing is checked):
/// row_ptr holds rows + 1 ints, non-decreasing, with row_ptr[0] = 0 and row_ptr[rows] = nnz;
/// col_idx and values hold nnz elements each, with 0 <= col_idx[k] < cols, in any order
/// within a row, a column possibly repeated (each repeat adds its own product); x holds cols
/// floats; y holds rows floats and overlaps no input. All of y[0 .. rows-1] is overwritten,
/// nothing else is written, and the inputs are left unchanged.
/// Limits: 0 <= rows <= 2^31 - 2, 0 <= cols <= 2^31 - 1, 0 <= nnz <= 2^31 - 1; a pointer to
/// an array of zero elements may be null. rows = 0 does nothing; nnz = 0 (every row empty)
/// sets y[0 .. rows-1] to 0. The tests use small integer values and x, so that every sum is
/// exact in any order of addition and the result is compared exactly.
void spmv_csr(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
              int cols, int nnz);

/// The sequential inclusive scan on the CPU (host pointers): the golden result and the CPU baseline.
void inclusive_scan_cpu(const float* in, float* out, int n);
/// The sequential exclusive scan on the CPU (host pointers); out[0] = 0.
void exclusive_scan_cpu(const float* in, float* out, int n);
/// The sequential segmented inclusive scan on the CPU (host pointers).
void segmented_inclusive_scan_cpu(const float* in, const int* head_flags, float* out, int n);
/// The sequential sparse matrix-vector product on the CPU (host pointers; arguments as for
/// spmv_csr): one loop over the rows, each adding its nonzeros' products in order.
void spmv_csr_cpu(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
                  int cols, int nnz);
