// histogram lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Count how many input values fall into each bin (bin = value % num_bins). First make
// it correct: many threads add to the same bin at the same time, and a plain
// bins[b]++ loses counts. Then make it fast: the bench compares you with the
// reference, with CUB and with the memory bandwidth of your GPU.
//
//   cmake --preset dev -DLABKIT_LABS=histogram && cmake --build --preset dev
//   ./build/dev/bin/histogram_test     # correctness
//   ./build/dev/bin/histogram_bench    # timing
//   python3 -m grader histogram        # your score
//
// Handout: handouts/histogram.md. Gaps are marked TODO(student).
#include "histogram.h"
#include "lab/cuda_check.h"

// One thread per input value: thread i adds one to the bin of in[i].
__global__ void histogram_kernel(const unsigned* in, int n, unsigned* bins, int num_bins) {
  // TODO(student): compute this thread's global index from blockIdx.x, blockDim.x and
  // threadIdx.x (in 64 bits or unsigned: near n = 2^31 the product overflows an int);
  // threads whose index is not below n must not read in[].
  //
  // TODO(student): the bin of a value is value % num_bins, computed in unsigned
  // arithmetic (values use all 32 bits; as a signed int 0xFFFFFFFF is -1, and -1 % 7 is
  // a negative index). Then add one to that bin. Many threads add to the same bin at
  // the same time, and a plain bins[b]++ gives wrong counts: why (graded question
  // race_lost_counts), and which operation makes the update of a counter safe? See the
  // handout, "The race in bins[b]++" and "Atomics".
  (void)in;
  (void)n;
  (void)bins;
  (void)num_bins;
}

void histogram(const unsigned* in, int n, unsigned* bins, int num_bins) {
  // TODO(student): the bins are overwritten, not accumulated into, and the kernel adds
  // to them: set all num_bins counters to 0 before it runs. cudaMemset on the default
  // stream does it (check it with LAB_CUDA_CHECK). With n == 0 that is the whole job.
  if (n <= 0 || num_bins <= 0) return;  // a grid of 0 blocks is an invalid launch

  const int threads_per_block = 256;  // a multiple of the warp size (32)
  // TODO(student): launch enough blocks to cover all n values (round up).
  const int blocks = 1;
  histogram_kernel<<<blocks, threads_per_block>>>(in, n, bins, num_bins);
  LAB_CHECK_LAUNCH();

  // TODO(student), once every test passes: make it fast (handout, "Privatisation").
  // n atomic additions on num_bins global counters queue up behind each other. Give each
  // block its own sub-histogram in __shared__ memory (up to 4096 counters = 16 KB):
  // zero it, __syncthreads(), add the block's values to it with shared-memory atomics
  // (a grid-stride loop lets a GPU-sized grid cover any n), __syncthreads(), then add
  // each non-zero shared counter to bins[] with one global atomicAdd.
}

// TODO(student): the lecture's steps, each a function with histogram's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void histogram_global_atomics(const unsigned* in, int n, unsigned* bins, int num_bins) { ... }
//     LAB_REGISTER_VARIANT(histogram, "global_atomics", histogram_global_atomics,
//                          "one line on what it does");
//   Needed: "global_atomics" and "shared_privatized" (include "lab/variants.h").
//   Your histogram may call the fastest of them.

// ---- Find the bug (handout: "Find the bug") -------------------------------------------
// Lecture 6's parallel histogram "with error", copied as the slides print it (unsigned
// values, and the bins set to 0 first, as histogram's contract asks). It compiles and
// runs, and its tests (Registered/FixHistogramGpu.*) fail. The slides name one error;
// there is a second one, which the slides' corrected kernel still has. Find both, fix
// them here, and explain them in answers.md (question bug_histogram).
__global__ void lecture_hist_kernel(unsigned* d_bins, const unsigned* d_vals, int num_bins) {
  int id = blockDim.x * blockIdx.x + threadIdx.x;
  unsigned val = d_vals[id];
  unsigned bin = val % num_bins;  // computeBin
  d_bins[bin]++;
}

void fix_histogram(const unsigned* in, int n, unsigned* bins, int num_bins) {
  LAB_CUDA_CHECK(cudaMemsetAsync(bins, 0, sizeof(unsigned) * num_bins));  // every count starts at 0
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = (n + threads - 1) / threads;
  lecture_hist_kernel<<<blocks, threads>>>(bins, in, num_bins);
  LAB_CHECK_LAUNCH();
}
