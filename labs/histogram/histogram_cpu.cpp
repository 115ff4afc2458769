// Provided by the kit: do not edit. The sequential histogram of lecture 6: clear every
// bin, then one pass over the values adding one to the bin of each. The tests compare
// your kernel with it, and the bench times it (with the sdkTimer API) for your speedup.
#include "histogram.h"

void histogram_cpu(const unsigned* in, int n, unsigned* bins, int num_bins) {
  for (int b = 0; b < num_bins; ++b) bins[b] = 0;
  // The bin is computed in unsigned arithmetic: a value such as 0xFFFFFFFF read as a
  // signed int would be -1, and -1 % num_bins is negative, an index before bins[0].
  const unsigned divisor = static_cast<unsigned>(num_bins);
  for (int i = 0; i < n; ++i) ++bins[in[i] % divisor];
}
