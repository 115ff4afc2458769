// Reference solution of the sort lab (instructors only; not in student repositories).
//
// The progression of lecture 8, each registered with the bench for both functions:
//   odd_even_transposition  O(n) phases, O(n^2) work; only at small n (labs/sort/lab.json "slow_variants", lab::variant_is_slow)
//   bitonic                 sorting network, O(n log^2 n) work; pairs through (key, index)
//   merge_path              block-sorted tiles, then merge passes split by merge path
//   radix_1bit              LSD radix sort with the lecture's 1-bit split: 32 passes
//   radix_4bit              4-bit digits, per-tile histograms, scan, stable scatter: 8 passes
//   radix_8bit_onesweep     8-bit digits: one histogram kernel for all 4 passes, then one
//                           kernel per pass that ranks, looks back and scatters
// sort_keys and sort_pairs (what the tests and the grader call) use radix_8bit_onesweep:
// the fewest passes over memory (4, plus one read for all histograms), stable, so it
// serves sort_pairs unchanged. On an H100 at 2^26 keys it sorts 30.6 Gkeys/s against
// radix_4bit's 19.5 (CUB: 40.4).
//
//   ./build/dev/bin/sort_solution_test && ./build/dev/bin/sort_solution_bench
#include "lab/variants.h"
#include "sort.h"
#include "sort_variants.cuh"

void sort_keys(unsigned* keys, int n) { sort_keys_radix_8bit_onesweep(keys, n); }

void sort_pairs(unsigned* keys, unsigned* values, int n) { sort_pairs_radix_8bit_onesweep(keys, values, n); }

LAB_REGISTER_VARIANT(sort_keys, "odd_even_transposition", sort_keys_odd_even,
                     "odd-even transposition: one block, or one launch per phase (O(n^2) work)");
LAB_REGISTER_VARIANT(sort_keys, "bitonic", sort_keys_bitonic,
                     "bitonic network: 2048-key tiles in shared memory, then global steps");
LAB_REGISTER_VARIANT(sort_keys, "merge_path", sort_keys_merge_path,
                     "merge sort: 2048-key tiles, then merge passes split by merge path");
LAB_REGISTER_VARIANT(sort_keys, "radix_1bit", sort_keys_radix_1bit, "LSD radix sort, 1-bit split + scan: 32 passes");
LAB_REGISTER_VARIANT(sort_keys, "radix_4bit", sort_keys_radix_4bit,
                     "LSD radix sort, 4-bit digits: histogram, scan, stable scatter; 8 passes");
LAB_REGISTER_VARIANT(sort_keys, "radix_8bit_onesweep", sort_keys_radix_8bit_onesweep,
                     "LSD radix sort, 8-bit digits: one histogram read, then 4 one-sweep passes (look-back)");

LAB_REGISTER_VARIANT(sort_pairs, "odd_even_transposition", sort_pairs_odd_even,
                     "odd-even transposition: one block, or one launch per phase (O(n^2) work)");
LAB_REGISTER_VARIANT(sort_pairs, "bitonic", sort_pairs_bitonic,
                     "bitonic network on (key, index) composites, values gathered after");
LAB_REGISTER_VARIANT(sort_pairs, "merge_path", sort_pairs_merge_path,
                     "merge sort: 2048-key tiles, then merge passes split by merge path");
LAB_REGISTER_VARIANT(sort_pairs, "radix_1bit", sort_pairs_radix_1bit, "LSD radix sort, 1-bit split + scan: 32 passes");
LAB_REGISTER_VARIANT(sort_pairs, "radix_4bit", sort_pairs_radix_4bit,
                     "LSD radix sort, 4-bit digits: histogram, scan, stable scatter; 8 passes");
LAB_REGISTER_VARIANT(sort_pairs, "radix_8bit_onesweep", sort_pairs_radix_8bit_onesweep,
                     "LSD radix sort, 8-bit digits: one histogram read, then 4 one-sweep passes (look-back)");
