// sort lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Sort unsigned keys on the GPU, in place: sort_keys(keys, n) ascending, and
// sort_pairs(keys, values, n) by key, stably, carrying the values along. The plan laid
// out below is the lecture's LSD radix sort: for each digit, least significant first,
// (1) count the digits of each block, (2) scan the counts into output positions,
// (3) scatter every key, stably, to its position. Start with 1-bit digits (the
// lecture's split, 32 passes), get every test green, then make it fast (4-bit digits
// need only 8 passes; see the handout).
//
//   cmake --preset dev -DLABKIT_LABS=sort && cmake --build --preset dev
//   ./build/dev/bin/sort_test                      correctness
//   ./build/dev/bin/sort_bench                     timing, against the reference and CUB
//   python3 -m grader sort                         your score
//
// Handout: handouts/sort.md. Gaps are marked TODO(student).
#include <utility>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "sort.h"

namespace {

constexpr int kDigitBits = 1;             // bits sorted per pass: 1 is the lecture's split
constexpr int kDigits = 1 << kDigitBits;  // buckets per pass
constexpr int kThreads = 256;             // one key per thread: a block's tile is 256 keys
constexpr int kScanThreads = 1024;

// Step 1 of a pass. Block b counts, for every digit value d, the keys of its tile
// keys[b * kThreads, (b + 1) * kThreads) whose digit is d, and writes the count to
// counts[d * num_blocks + b] (all blocks of digit 0 first, then digit 1, …).
__global__ void count_digits_kernel(const unsigned* keys, int n, int shift, unsigned* counts, int num_blocks) {
  // TODO(student): the digit of a key is (key >> shift) & (kDigits - 1). Count into a
  // __shared__ array of kDigits counters: zero it, __syncthreads(), atomicAdd one per
  // key, __syncthreads(), then threads 0 .. kDigits-1 write the counters out. A thread
  // past the end of the array (index >= n) counts nothing, but it must still reach
  // every __syncthreads() of the block.
  (void)keys;
  (void)n;
  (void)shift;
  (void)counts;
  (void)num_blocks;
}

// Step 2. An exclusive scan of counts[0 .. total), in place. Afterwards
// counts[d * num_blocks + b] is where the first key of digit d of block b goes: every
// key with a smaller digit comes first, then the keys of digit d of blocks 0 .. b-1.
__global__ void scan_counts_kernel(unsigned* counts, int total) {
  // TODO(student): one block of kScanThreads threads can walk the array in chunks of
  // kScanThreads entries: scan each chunk in shared memory (lecture 4), make it
  // exclusive (lecture 7: shift by one, or subtract the element), add the sum of the
  // earlier chunks, and carry the chunk's total on. Mind the last, partial chunk.
  (void)counts;
  (void)total;
}

// Step 3. Every key of block b moves to keys_out[offsets[d * num_blocks + b] + r], where
// d is its digit and r the number of keys of block b before it with the same digit.
// Values (sort_pairs) move the same way; values_in is null for sort_keys.
__global__ void scatter_kernel(const unsigned* keys_in, unsigned* keys_out, const unsigned* values_in,
                               unsigned* values_out, int n, int shift, const unsigned* offsets, int num_blocks) {
  // TODO(student): r keeps keys with equal digits in their input order: the scatter must
  // be stable (why does LSD radix sort, and not only sort_pairs, need that? graded
  // question unstable_scatter). With 1-bit digits, r is an exclusive scan within the
  // block of the flags "my digit is 0" (for digit 1: my index in the block minus that
  // scan). Load the key (and value) first, compute r with shared memory and
  // __syncthreads() reached by all threads, and only then let the threads with
  // index < n write.
  (void)keys_in;
  (void)keys_out;
  (void)values_in;
  (void)values_out;
  (void)n;
  (void)shift;
  (void)offsets;
  (void)num_blocks;
}

// The passes of LSD radix sort, ping-ponging between the caller's arrays and scratch
// arrays from lab::workspace (allocated once, reused by later calls: no cudaMalloc here).
void radix_sort(unsigned* keys, unsigned* values, int n) {
  if (n <= 1) return;  // nothing to sort, and a grid of 0 blocks is an invalid launch
  const int num_blocks = (n + kThreads - 1) / kThreads;
  unsigned* keys_alt = lab::workspace<unsigned>(static_cast<std::size_t>(n), 0);
  unsigned* values_alt = values != nullptr ? lab::workspace<unsigned>(static_cast<std::size_t>(n), 1) : nullptr;
  unsigned* counts = lab::workspace<unsigned>(static_cast<std::size_t>(kDigits) * num_blocks, 2);

  unsigned *src_keys = keys, *dst_keys = keys_alt, *src_values = values, *dst_values = values_alt;
  for (int shift = 0; shift < 32; shift += kDigitBits) {
    count_digits_kernel<<<num_blocks, kThreads>>>(src_keys, n, shift, counts, num_blocks);
    LAB_CHECK_LAUNCH();
    scan_counts_kernel<<<1, kScanThreads>>>(counts, kDigits * num_blocks);
    LAB_CHECK_LAUNCH();
    scatter_kernel<<<num_blocks, kThreads>>>(src_keys, dst_keys, src_values, dst_values, n, shift, counts, num_blocks);
    LAB_CHECK_LAUNCH();
    std::swap(src_keys, dst_keys);
    std::swap(src_values, dst_values);
  }
  // After an even number of passes the result is back in the caller's arrays; after an
  // odd number (e.g. 3-bit digits) it must be copied back.
  if (src_keys != keys) {
    const std::size_t bytes = sizeof(unsigned) * static_cast<std::size_t>(n);
    LAB_CUDA_CHECK(cudaMemcpyAsync(keys, src_keys, bytes, cudaMemcpyDeviceToDevice, 0));
    if (values != nullptr) LAB_CUDA_CHECK(cudaMemcpyAsync(values, src_values, bytes, cudaMemcpyDeviceToDevice, 0));
  }
}

}  // namespace

void sort_keys(unsigned* keys, int n) { radix_sort(keys, nullptr, n); }

void sort_pairs(unsigned* keys, unsigned* values, int n) { radix_sort(keys, values, n); }

// TODO(student): the lecture's steps, each a function with sort_keys's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void sort_keys_bitonic(unsigned* keys, int n) { ... }
//     LAB_REGISTER_VARIANT(sort_keys, "bitonic", sort_keys_bitonic,
//                          "one line on what it does");
//   Needed: "bitonic" and "radix_4bit" (include "lab/variants.h").
//   Your sort_keys may call the fastest of them.
