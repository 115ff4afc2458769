// Provided by the kit: do not edit. The interface of the sort lab.
//
// sort_keys and sort_pairs are what the tests and the grader call. They sort in place
// on the GPU: the array you are given is both the input and the output. The CPU
// functions below are the sequential algorithms of the lecture (the tests check them on
// the lecture's worked examples) and the golden result. Handout: handouts/sort.md.
#pragma once

/// The largest n the lab supports and tests (2^26 keys, the graded size).
constexpr int kSortMaxN = 1 << 26;

/// Sorts keys[0..n) into ascending order in place, on the default stream. `keys` is a
/// device pointer to n unsigned ints (any 4-byte alignment); all 32 bits are compared.
/// 0 <= n <= kSortMaxN; n = 0 does nothing. Nothing outside keys[0..n) is written; scratch
/// memory comes from lab::workspace (never cudaMalloc inside the call).
void sort_keys(unsigned* keys, int n);

/// Sorts the pairs (keys[i], values[i]) by key, ascending and STABLE: pairs with equal
/// keys keep their original order. Both arrays are device pointers to n unsigned ints,
/// overwritten in place (values move with their keys; they are never compared). The
/// arrays do not overlap. 0 <= n <= kSortMaxN; n = 0 does nothing.
void sort_pairs(unsigned* keys, unsigned* values, int n);

// Registered variants that do O(n^2) work or launch one kernel per step (odd-even
// transposition) are slow: the tests run them only at small n, and the bench only in its
// small workload. labs/sort/lab.json names them ("slow_variants": "odd_even*", any name
// that starts with odd_even), and lab::variant_is_slow answers; give a slow variant of
// your own such a name.

// ---- The sequential versions (host pointers) ----

/// The golden result and the CPU baseline: keys[0..n) ascending (std::sort).
void sort_keys_cpu(unsigned* keys, int n);

/// The golden result and the CPU baseline for pairs: std::stable_sort by key.
void sort_pairs_cpu(unsigned* keys, unsigned* values, int n);

/// One step of odd-even transposition sort: `phase` even compares the pairs (0,1), (2,3), …;
/// odd compares (1,2), (3,4), …; each pair out of order is swapped.
void odd_even_phase_cpu(unsigned* keys, int n, int phase);

/// The lecture's odd-even transposition sort: n phases (0, 1, …, n-1) sort any n keys.
void odd_even_transposition_sort_cpu(unsigned* keys, int n);

/// Merges the sorted a[0..na) and b[0..nb) into out[0..na+nb); on equal keys a's come
/// first (stable). The lecture's sequential merge.
void merge_cpu(const unsigned* a, int na, const unsigned* b, int nb, unsigned* out);

/// The bitonic split (half-cleaner) of keys[0..n), n even: compares i with i + n/2 and
/// keeps the smaller below. A bitonic input becomes two bitonic halves with every key of
/// the lower half <= every key of the upper half.
void bitonic_split_cpu(unsigned* keys, int n);

/// The bitonic sorting network run sequentially; n must be a power of two (or 0).
void bitonic_sort_cpu(unsigned* keys, int n);

/// The stable split of radix sort: out gets the keys of in[0..n) whose bit `bit` is 0, in
/// their order, then those whose bit is 1, in their order.
void radix_split_cpu(const unsigned* in, unsigned* out, int n, int bit);
