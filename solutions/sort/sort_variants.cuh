// Reference solution of the sort lab: the variants, one file per algorithm family.
//
//   odd_even.cu   odd-even transposition (one block in shared memory, or one launch per phase)
//   bitonic.cu    bitonic network: 2048-element tiles in shared memory, then global steps
//   merge.cu      merge sort: block-sorted tiles, then merge passes split by merge path
//   radix.cu      LSD radix sort, 1-bit (the lecture's split) and 4-bit digits
//   onesweep.cu   LSD radix sort, 8-bit digits: one histogram kernel, then one kernel per
//                 pass with decoupled look-back (CUB's "onesweep")
//   sort.cu       the interface functions and the variant registrations
//
// Every variant sorts in place, handles any n >= 0, runs on the default stream and takes
// scratch memory only from lab::workspace. Slots: 0 the alternate key (or composite)
// buffer, 1 the alternate value buffer, 2 small per-tile arrays (histograms, splits).
//
//   ./build/dev/bin/sort_solution_test && ./build/dev/bin/sort_solution_bench
#pragma once

void sort_keys_odd_even(unsigned* keys, int n);
void sort_pairs_odd_even(unsigned* keys, unsigned* values, int n);

void sort_keys_bitonic(unsigned* keys, int n);
void sort_pairs_bitonic(unsigned* keys, unsigned* values, int n);

void sort_keys_merge_path(unsigned* keys, int n);
void sort_pairs_merge_path(unsigned* keys, unsigned* values, int n);

void sort_keys_radix_1bit(unsigned* keys, int n);
void sort_pairs_radix_1bit(unsigned* keys, unsigned* values, int n);

void sort_keys_radix_4bit(unsigned* keys, int n);
void sort_pairs_radix_4bit(unsigned* keys, unsigned* values, int n);

void sort_keys_radix_8bit_onesweep(unsigned* keys, int n);
void sort_pairs_radix_8bit_onesweep(unsigned* keys, unsigned* values, int n);

/// Blocks of `threads` threads that cover `items` work items (at least one block).
inline int sort_blocks_for(long long items, int threads) {
  const long long blocks = (items + threads - 1) / threads;
  return blocks > 0 ? static_cast<int>(blocks) : 1;
}
