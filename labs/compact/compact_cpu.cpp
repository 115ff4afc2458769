// Provided by the kit: do not edit. The sequential compact and expand of lecture 7.
//
// The lecture builds compact from three steps: map each element to a flag (1 = keep),
// exclusive-scan the flags into output addresses, scatter each kept element to its
// address. On one CPU core the three steps fuse into one loop: the running count of
// kept elements *is* the exclusive scan, read at the moment element i is visited. The
// tests compare your kernels with these functions, and the bench times them (sdkTimer)
// for the speedup columns. compact_flags_cpu and exclusive_sum_cpu are the map and scan
// steps on their own, so the tests can check the lecture's address table. Also the
// further part's worklists, with atomicInc's and atomicDec's rules written out.
#include "compact.h"

void compact_flags_cpu(const int* in, int* flags, int n) {
  for (int i = 0; i < n; ++i) flags[i] = compact_keep(in[i]) ? 1 : 0;
}

int exclusive_sum_cpu(const int* in, int* out, int n) {
  int running = 0;
  for (int i = 0; i < n; ++i) {
    out[i] = running;  // the sum of everything before i: exclusive
    running += in[i];
  }
  return running;
}

int compact_cpu(const int* in, int* out, int n) {
  int count = 0;  // exclusive scan of the flags so far = the address of the next kept element
  for (int i = 0; i < n; ++i) {
    if (compact_keep(in[i])) out[count++] = in[i];
  }
  return count;
}

int expand_cpu(const int* in, const int* counts, int* out, int n) {
  int total = 0;  // exclusive scan of the counts so far = where element i's run starts
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < counts[i]; ++k) out[total + k] = in[i];
    total += counts[i];
  }
  return total;
}

unsigned atomic_inc_cpu(unsigned* address, unsigned limit) {
  const unsigned old = *address;
  *address = old >= limit ? 0u : old + 1u;
  return old;
}

unsigned atomic_dec_cpu(unsigned* address, unsigned limit) {
  const unsigned old = *address;
  *address = (old == 0u || old > limit) ? limit : old - 1u;
  return old;
}

int worklist_push_cpu(const int* in, int n, int* ring, int capacity, unsigned* tail) {
  int pushed = 0;
  for (int i = 0; i < n; ++i) {
    if (!compact_keep(in[i])) continue;
    ring[atomic_inc_cpu(tail, static_cast<unsigned>(capacity) - 1u)] = in[i];
    ++pushed;
  }
  return pushed;
}

int worklist_take_cpu(const int* box, int capacity, unsigned* top, unsigned limit, int* taken, int takers) {
  int took = 0;
  for (int t = 0; t < takers; ++t) {
    const unsigned old = atomic_dec_cpu(top, limit);
    const bool valid = old >= 1u && old <= static_cast<unsigned>(capacity);  // else: empty, or wrapped before
    taken[t] = valid ? box[old - 1u] : -1;
    took += valid ? 1 : 0;
  }
  return took;
}
