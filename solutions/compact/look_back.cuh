// Reference solution of the compact lab (instructors only): the decoupled look-back
// shared by the single_pass and single_pass_vec variants, with the warp sums it uses.
//
// Tile t's status word (one 64-bit word per tile, all zeroed before the launch): the
// flag in the high 32 bits (kInvalid = not yet known, kAggregate = the tile's own count
// is known, kPrefix = the count of everything up to and including the tile is known),
// the value in the low 32 bits. Flag and value travel in one word, so a reader that
// sees a flag sees its value; no other data passes between blocks, so no fence is needed.
#pragma once

namespace compact_solution {

constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr unsigned kInvalid = 0, kAggregate = 1, kPrefix = 2;

__device__ __forceinline__ unsigned long long pack_status(unsigned flag, int value) {
  return (static_cast<unsigned long long>(flag) << 32) | static_cast<unsigned>(value);
}

// Relaxed device-scope accesses: single 64-bit transactions that always go to memory
// (never a stale L1 copy) and are never hoisted out of the spin loop.
__device__ __forceinline__ unsigned long long load_status(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_status(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

// Inclusive prefix sum over the 32 lanes of a warp (Hillis-Steele with shuffles).
__device__ __forceinline__ int warp_inclusive_sum(int v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

__device__ __forceinline__ int warp_sum(int v) {
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) v += __shfl_xor_sync(kFullMask, v, d);
  return v;
}

// Run by all 32 lanes of warp 0: publishes the tile's count, then adds up the counts of
// the tiles before it, 32 at a time (lane l reads tile `window - l`), stopping at the
// nearest tile that has published its inclusive prefix. Publishes this tile's own
// inclusive prefix and returns the exclusive one (the tile's base in out).
__device__ __forceinline__ int look_back(unsigned long long* status, int tile, int tile_count) {
  const int lane = threadIdx.x & 31;
  if (tile == 0) {
    if (lane == 0) store_status(&status[0], pack_status(kPrefix, tile_count));
    return 0;
  }
  if (lane == 0) store_status(&status[tile], pack_status(kAggregate, tile_count));
  int exclusive = 0;
  for (int window = tile - 1;; window -= 32) {
    const int pred = window - lane;
    unsigned long long s;
    do {  // tiles before 0 count as a prefix of 0; the loop condition is the same for the whole warp
      s = pred >= 0 ? load_status(&status[pred]) : pack_status(kPrefix, 0);
    } while (__any_sync(kFullMask, static_cast<unsigned>(s >> 32) == kInvalid));
    const unsigned prefixes = __ballot_sync(kFullMask, static_cast<unsigned>(s >> 32) == kPrefix);
    const int last_lane = prefixes != 0 ? __ffs(prefixes) - 1 : 31;  // the nearest prefix ends the walk
    exclusive += warp_sum(lane <= last_lane ? static_cast<int>(static_cast<unsigned>(s)) : 0);
    if (prefixes != 0) break;
  }
  if (lane == 0) store_status(&status[tile], pack_status(kPrefix, exclusive + tile_count));
  return exclusive;
}

}  // namespace compact_solution
