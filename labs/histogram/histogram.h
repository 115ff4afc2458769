// Provided by the kit: do not edit. The interface of the histogram lab.
//
// histogram is what the tests and the grader call. It takes device pointers, so the
// timed work is the GPU's and not the copies over PCIe. Handout: handouts/histogram.md.
#pragma once

/// The largest bin count the lab supports: 4096 counters of 4 bytes are 16 KB, so one
/// block can keep a whole private histogram in shared memory.
constexpr int kHistogramMaxBins = 4096;

/// Counts how many of the n values in[0 .. n-1] fall into each bin, on the default
/// stream: bins[b] = number of i with in[i] % num_bins == b, for 0 <= b < num_bins.
/// `in` is a device pointer to n unsigned values (any value, the full 32-bit range; the
/// modulo is unsigned) aligned to 4 bytes but not necessarily to 16; `bins` is a device
/// pointer to num_bins counters that do not overlap `in`. 1 <= num_bins <= kHistogramMaxBins.
/// The bins are overwritten, never accumulated into: their old contents do not matter.
/// n = 0 is legal and sets every bin to 0. `in` is not modified.
void histogram(const unsigned* in, int n, unsigned* bins, int num_bins);

/// Find the bug (lecture 6's parallel histogram "with error", as the slides print it):
/// the same contract as histogram, for 1 <= num_bins <= kHistogramMaxBins. Your file
/// starts with the lecture's kernel, errors included: its tests
/// (Registered/FixHistogramGpu.*) fail until you fix it there. Handout: "Find the bug".
void fix_histogram(const unsigned* in, int n, unsigned* bins, int num_bins);

/// The sequential version on the CPU (host pointers, same contract): the golden result
/// and the CPU baseline.
void histogram_cpu(const unsigned* in, int n, unsigned* bins, int num_bins);
