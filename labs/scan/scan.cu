// scan lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Compute prefix sums on the GPU for any n: inclusive_scan, exclusive_scan and
// segmented_inclusive_scan (see scan.h). Start with inclusive_scan: a block scan
// (Kogge-Stone or Brent-Kung), then the hierarchical scan that
// stitches the blocks together. Then make it fast: the bench compares you with the
// reference, with CUB and with the memory bandwidth of your GPU. A further part at the
// end, spmv_csr, builds lecture 7's sparse matrix-vector product on your segmented scan.
//
//   cmake --preset dev -DLABKIT_LABS=scan && cmake --build --preset dev
//   ./build/dev/bin/scan_test                                      correctness
//   ./build/dev/bin/scan_test --gtest_filter='*InclusiveScanGpu*'  one function at a time
//   ./build/dev/bin/scan_bench                                     timing
//   python3 -m grader scan                                         your score
//
// Handout: handouts/scan.md. Gaps are marked TODO(student).
#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "scan.h"

// Elements scanned by one block (one "section"). Kogge-Stone uses one thread per
// element; Brent-Kung uses half as many threads, each owning two elements.
constexpr int kSectionSize = 1024;
constexpr int kThreadsPerBlock = 1024;  // use kSectionSize / 2 for Brent-Kung

// Step 1 of the hierarchical scan: block b scans its section in[b * kSectionSize ..] on
// its own, writes the section's inclusive scan to out, and writes the section's total
// (its last scanned value) to section_sums[b] when section_sums is not null.
__global__ void scan_section_kernel(const float* in, float* out, float* section_sums, int n) {
  // TODO(student): load the section into shared memory (elements past n count as 0, the
  // identity of +), scan it in shared memory, write back the elements below n.
  //  - Kogge-Stone: in step `stride` (1, 2, 4, ...), element t becomes
  //    XY[t - stride] + XY[t]. Do "Find the bug" (fix_hsh_scan, below) first: lecture
  //    4's version of this loop has two errors, and this kernel must have neither.
  (void)in;
  (void)out;
  (void)section_sums;
  (void)n;
}

// Step 3: every element of section s > 0 gets the scanned sum of the sections before it,
// scanned_sums[s - 1].
__global__ void add_section_carries_kernel(float* out, const float* scanned_sums, int n) {
  // TODO(student): one block per section (or one thread per element); section 0 needs
  // nothing. Keep every index below n.
  (void)out;
  (void)scanned_sums;
  (void)n;
}

// The hierarchical scan: scan the sections, scan the section sums (they can be more
// than one section, so this is the same problem again, one level up), add them back.
// `level` picks separate scratch arrays for each level.
void scan_hierarchical(const float* in, float* out, int n, int level) {
  const int sections = static_cast<int>((static_cast<long long>(n) + kSectionSize - 1) / kSectionSize);
  // Scratch memory without cudaMalloc in the timed path: lab::workspace hands out
  // arrays that are kept between calls; slots 2 * level and 2 * level + 1 are this
  // level's (there are lab::kWorkspaceSlots = 8 slots, enough for 4 levels).
  float* section_sums = sections > 1 ? lab::workspace<float>(sections, 2 * level) : nullptr;
  scan_section_kernel<<<sections, kThreadsPerBlock>>>(in, out, section_sums, n);
  LAB_CHECK_LAUNCH();
  if (sections == 1) return;
  // TODO(student): step 2: scan section_sums (`sections` of them) into a second array,
  // lab::workspace<float>(sections, 2 * level + 1), by calling scan_hierarchical one
  // level up; step 3: launch add_section_carries_kernel.
}

void inclusive_scan(const float* in, float* out, int n) {
  if (n <= 0) return;  // nothing to do, and a grid of 0 blocks is an invalid launch
  scan_hierarchical(in, out, n, 0);
}

void exclusive_scan(const float* in, float* out, int n) {
  // TODO(student): out[0] = 0, out[i] = in[0] + ... + in[i - 1]. Do not scan and then
  // shift the output (that costs another pass over memory): shift the input as you
  // load it instead, element i of the scanned sequence being in[i - 1] and element 0
  // being 0. Then the inclusive scan of that sequence is the exclusive scan of `in`.
  (void)in;
  (void)out;
  (void)n;
}

void segmented_inclusive_scan(const float* in, const int* head_flags, float* out, int n) {
  // TODO(student): scan pairs (head, value) with the segmented operator, where `a` comes
  // before `b`:
  //   (a.head, a.value) + (b.head, b.value) = (a.head | b.head, b.head ? b.value : a.value + b.value)
  // It is associative, so every scan above works with it, but not commutative: always
  // keep the earlier operand on the left. A carry from earlier sections reaches only
  // the elements before the first head of a section. head_flags[0] does not matter.
  (void)in;
  (void)head_flags;
  (void)out;
  (void)n;
}

// TODO(student): the lecture's steps, each a function with inclusive_scan's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void inclusive_scan_kogge_stone(const float* in, float* out, int n) { ... }
//     LAB_REGISTER_VARIANT(inclusive_scan, "kogge_stone", inclusive_scan_kogge_stone,
//                          "one line on what it does");
//   Needed: "kogge_stone" and "brent_kung" (include "lab/variants.h").
//   Your inclusive_scan may call the fastest of them.

// ---- Find the bug (handout: "Find the bug") -------------------------------------------
// Lecture 4's Hillis-Steele scan "with errors", copied as the slides print it (BLOCK_SIZE
// is kFixScanBlock; len must fit one block). The slides say it has two errors. It
// compiles and runs, and its tests (Registered/FixHshScanGpu.*) may even pass on your
// GPU: compute-sanitizer --tool racecheck, which the grader runs on them, names one
// error every time. Find both, fix them here, and explain them in answers.md (question
// bug_hsh_scan).
__global__ void lecture_hsh_scan_kernel(const float* X, float* Y, int len) {
  __shared__ float XY[kFixScanBlock];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < len) XY[threadIdx.x] = X[i];
  for (unsigned stride = 1; stride <= threadIdx.x; stride *= 2) {
    __syncthreads();
    XY[threadIdx.x] += XY[threadIdx.x - stride];
  }
  if (i < len) Y[i] = XY[threadIdx.x];
}

void fix_hsh_scan(const float* X, float* Y, int len) {
  lecture_hsh_scan_kernel<<<1, kFixScanBlock>>>(X, Y, len);
  LAB_CHECK_LAUNCH();
}

// ---- Further part: sparse matrix-vector product (handout: "Further part: sparse
// matrix-vector product") ----------------------------------------------------------------
// y = A x for a matrix in CSR form (row_ptr, col_idx, values; see scan.h), lecture 7's way:
// four data-parallel steps over the nnz nonzeros, whatever the lengths of the rows.
// Its tests: ./build/dev/bin/scan_test --gtest_filter='*PartSpmvGpu*'
void spmv_csr(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
              int cols, int nnz) {
  // TODO(student): the lecture's table, one step per row of it, each a kernel on the
  // default stream (so each step sees the previous step's results):
  //  1. gather: g[k] = x[col_idx[k]] for every nonzero k, 0 <= k < nnz (one thread per
  //     nonzero: it lines x up with the values it multiplies);
  //  2. map: p[k] = values[k] * g[k]. Steps 1 and 2 fit in one kernel, and then g is
  //     never stored;
  //  3. segmented inclusive scan of p, one segment per row: the head flags are 1 at
  //     row_ptr[r], the first nonzero of row r, and 0 elsewhere. Set all nnz flags to 0
  //     (the kernel of steps 1-2 can do it), then one thread per row r sets
  //     flags[row_ptr[r]] = 1 when row_ptr[r] < nnz. An empty row has no element: its
  //     row_ptr[r] is the next row's start, so it marks that start again, which is
  //     harmless. Then call your segmented_inclusive_scan(p, flags, s, nnz);
  //  4. one thread per row: y[r] = s[row_ptr[r + 1] - 1], the last element of row r's
  //     segment, which holds the sum of the whole row; y[r] = 0 when the row is empty
  //     (row_ptr[r] == row_ptr[r + 1]).
  // Scratch arrays p, flags and s (nnz elements each): cudaMalloc them here and cudaFree
  // them before you return. Not lab::workspace: your segmented scan's levels already use
  // its slots. Sizes: rows == 0 does nothing; nnz == 0 leaves only step 4 (every row
  // empty, y = 0); never launch a grid of 0 blocks; index with long long where
  // blockIdx.x * blockDim.x could pass 2^31.
  (void)row_ptr;
  (void)col_idx;
  (void)values;
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  (void)nnz;
}
