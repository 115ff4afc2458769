// Reference solution of the scan lab (instructors only; not in student repositories).
//
//   ./build/dev/bin/scan_solution_test      the lab's tests against this file
//   ./build/dev/bin/scan_solution_bench     every variant below, timed
//
// The progression, each registered with the bench (handouts/scan.md explains it):
//   kogge_stone         hierarchical scan; each block scans 1024 elements with the
//                       Kogge-Stone / Hillis-Steele step (double-buffered shared memory,
//                       log2(1024) = 10 steps, ~n log n additions)
//   brent_kung          hierarchical scan; each block scans 2 x 512 elements with the
//                       Brent-Kung / Blelloch up-sweep and down-sweep (2 log n steps,
//                       ~2n additions)
//   reduce_then_scan    three kernels: every block sums its chunk; one block scans the
//                       chunk sums; every block rescans its chunk with that carry-in.
//                       16 elements per thread in registers; reads the input twice.
//   decoupled_lookback  one pass (Merrill & Garland): a tile publishes its sum, then
//                       looks back over its predecessors' published sums for its
//                       carry-in. Reads the input once and writes the output once.
// The interface functions call decoupled_lookback. Exclusive scan has brent_kung (the
// lecture's shifted load), reduce_then_scan and decoupled_lookback; the segmented scan
// has brent_kung and decoupled_lookback, both scanning (value, head) pairs with the
// segmented operator.
//
// Memory traffic per element (4-byte floats), which is what bounds a scan:
//   hierarchical: read in, write out, read out, write out          = 16 bytes
//   reduce_then_scan: read in, read in, write out                  = 12 bytes
//   decoupled_lookback: read in, write out                         =  8 bytes
//
// spmv_csr, the further part (lecture 7's sparse matrix-vector product), is the gather,
// map, segmented scan and pick of the lecture, on decoupled_lookback's segmented scan;
// its comment at the end of the file says why it works and what it costs.
//
// The racy single-buffer Kogge-Stone of the lecture is deliberately not here: in one
// step a thread may overwrite XY[j] before the thread that reads XY[j] as its left
// neighbour has read it (threads of different warps run in any order), and its loop
// bound `stride <= threadIdx.x` puts __syncthreads() in divergent code.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "scan.h"

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// Workspace slots (lab::workspace): the look-back tile states, one slot per level of
// the hierarchical scan's block sums, and the reduce-then-scan chunk sums.
constexpr int kLookbackSlot = 0;
constexpr int kFirstLevelSlot = 1;
constexpr int kPartialsSlot = lab::kWorkspaceSlots - 1;

// ---------------------------------------------------------------------------------
// The two scan operators. A scan needs an associative operator and its identity;
// everything below is written once against combine()/identity<T>() and works for both.
// ---------------------------------------------------------------------------------

// Plain sum on floats. +0.0f is the identity for every value except -0.0f, which
// integer-valued data never produces.
__device__ __forceinline__ float combine(float a, float b) { return a + b; }

// The segmented scan scans (value, head) pairs. `head` says "a segment starts somewhere
// in this span"; `value` is the sum from the last segment start in the span (or from
// the span's start when it holds none). combine(a, b) with a before b: if b holds a
// segment start, whatever came before it does not reach past it. The operator is
// associative but not commutative, so every reduction below keeps the order.
struct SegItem {
  float value;
  int head;
};

__device__ __forceinline__ SegItem combine(SegItem a, SegItem b) {
  SegItem r;
  r.value = b.head ? b.value : a.value + b.value;
  r.head = a.head | b.head;
  return r;
}

template <class T>
__device__ __forceinline__ T identity();
template <>
__device__ __forceinline__ float identity<float>() {
  return 0.0f;
}
template <>
__device__ __forceinline__ SegItem identity<SegItem>() {
  SegItem r;
  r.value = 0.0f;
  r.head = 0;
  return r;
}

// The float that goes to `out`.
__device__ __forceinline__ float value_of(float v) { return v; }
__device__ __forceinline__ float value_of(SegItem v) { return v.value; }

// True when nothing before `v` can change combine(anything, v): the look-back may stop
// at such a predecessor as if it had published its inclusive prefix.
__device__ __forceinline__ bool closes(float) { return false; }
__device__ __forceinline__ bool closes(SegItem v) { return v.head != 0; }

// Warp shuffles of either type (all 32 lanes must call them).
__device__ __forceinline__ float shfl_up(float v, int d) { return __shfl_up_sync(kFullMask, v, d); }
__device__ __forceinline__ float shfl_down(float v, int d) { return __shfl_down_sync(kFullMask, v, d); }
__device__ __forceinline__ float shfl_idx(float v, int lane) { return __shfl_sync(kFullMask, v, lane); }
__device__ __forceinline__ SegItem shfl_up(SegItem v, int d) {
  SegItem r;
  r.value = __shfl_up_sync(kFullMask, v.value, d);
  r.head = __shfl_up_sync(kFullMask, v.head, d);
  return r;
}
__device__ __forceinline__ SegItem shfl_down(SegItem v, int d) {
  SegItem r;
  r.value = __shfl_down_sync(kFullMask, v.value, d);
  r.head = __shfl_down_sync(kFullMask, v.head, d);
  return r;
}
__device__ __forceinline__ SegItem shfl_idx(SegItem v, int lane) {
  SegItem r;
  r.value = __shfl_sync(kFullMask, v.value, lane);
  r.head = __shfl_sync(kFullMask, v.head, lane);
  return r;
}

// Element sources and sinks: how a scan kernel reads its input and writes its output.
// The hierarchical scan uses the same kernels on the user's arrays (level 0) and on its
// own arrays of block sums (levels 1, 2, ...).
template <class T>
struct ItemSource {
  const T* p;
  __device__ T operator()(long long i) const { return p[i]; }
};
template <class T>
struct ItemSink {
  T* p;
  __device__ void operator()(long long i, T v) const { p[i] = v; }
};
// The lecture's exclusive scan: element i of the scanned sequence is in[i - 1] and
// element 0 is the identity, so the inclusive scan of it is the exclusive scan of `in`.
struct ShiftedSource {
  const float* p;
  __device__ float operator()(long long i) const { return i == 0 ? 0.0f : p[i - 1]; }
};
struct SegSource {
  const float* values;
  const int* flags;
  __device__ SegItem operator()(long long i) const {
    SegItem r;
    r.value = values[i];
    r.head = flags[i] != 0 ? 1 : 0;  // flags[0] does not matter: nothing comes before it
    return r;
  }
};
struct SegValueSink {
  float* out;
  const int* flags;  // the carry fix-up needs to know where segments start
  __device__ void operator()(long long i, SegItem v) const { out[i] = v.value; }
};

// std::min is a host function; kernels use this one.
__host__ __device__ __forceinline__ long long min_ll(long long a, long long b) { return a < b ? a : b; }

int sections_of(int n, int section) { return static_cast<int>((static_cast<long long>(n) + section - 1) / section); }

// ---------------------------------------------------------------------------------
// Hierarchical scan (lectures: block scan -> scan of block sums -> add).
// ---------------------------------------------------------------------------------

// Kogge-Stone with double buffering: in step `stride`, element t becomes
// XY[t - stride] + XY[t]. Reading from one buffer and writing the other means no
// thread can overwrite a value another thread has yet to read in the same step, so one
// barrier per step is enough, and every thread reaches every barrier.
template <int kThreads, class Source, class Sink, class T>
__global__ void __launch_bounds__(kThreads)
    kogge_stone_sections_kernel(Source src, Sink dst, T* totals, int n) {
  __shared__ T buffer[2][kThreads];
  const int t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + t;
  int current = 0;
  buffer[current][t] = i < n ? src(i) : identity<T>();
  for (int stride = 1; stride < kThreads; stride *= 2) {
    __syncthreads();  // the previous step's writes are visible to every thread
    const T mine = buffer[current][t];
    buffer[1 - current][t] = t >= stride ? combine(buffer[current][t - stride], mine) : mine;
    current = 1 - current;
  }
  __syncthreads();
  const T result = buffer[current][t];
  if (i < n) dst(i, result);
  if (totals != nullptr && t == kThreads - 1) totals[blockIdx.x] = result;
}

// Brent-Kung: an up-sweep (a reduction tree whose partial sums stay in place) then a
// down-sweep that pushes them to the elements still missing them. Each thread owns two
// elements; consecutive threads take consecutive tree nodes, so the working threads
// are packed into the lowest warps. No element is read and written by different
// threads in one step, so a single buffer is safe.
template <int kThreads, class Source, class Sink, class T>
__global__ void __launch_bounds__(kThreads)
    brent_kung_sections_kernel(Source src, Sink dst, T* totals, int n) {
  constexpr int kSection = 2 * kThreads;
  __shared__ T xy[kSection];
  const int t = threadIdx.x;
  const long long base = static_cast<long long>(blockIdx.x) * kSection;
  for (int k = 0; k < 2; ++k) {  // coalesced: thread t takes elements t and t + kThreads
    const long long i = base + t + k * kThreads;
    xy[t + k * kThreads] = i < n ? src(i) : identity<T>();
  }
  for (int stride = 1; stride <= kThreads; stride *= 2) {
    __syncthreads();
    const int index = (t + 1) * 2 * stride - 1;
    if (index < kSection) xy[index] = combine(xy[index - stride], xy[index]);
  }
  for (int stride = kSection / 4; stride > 0; stride /= 2) {
    __syncthreads();
    const int index = (t + 1) * 2 * stride - 1;
    if (index + stride < kSection) xy[index + stride] = combine(xy[index], xy[index + stride]);
  }
  __syncthreads();
  for (int k = 0; k < 2; ++k) {
    const long long i = base + t + k * kThreads;
    if (i < n) dst(i, xy[t + k * kThreads]);
  }
  if (totals != nullptr && t == 0) totals[blockIdx.x] = xy[kSection - 1];
}

struct KoggeStoneBlocks {
  static constexpr int kSection = 1024;  // one element per thread
  template <class Source, class Sink, class T>
  static void scan_sections(Source src, Sink dst, T* totals, int n, int sections) {
    kogge_stone_sections_kernel<kSection><<<sections, kSection>>>(src, dst, totals, n);
    LAB_CHECK_LAUNCH();
  }
};

struct BrentKungBlocks {
  static constexpr int kThreads = 512;
  static constexpr int kSection = 2 * kThreads;  // two elements per thread
  template <class Source, class Sink, class T>
  static void scan_sections(Source src, Sink dst, T* totals, int n, int sections) {
    brent_kung_sections_kernel<kThreads><<<sections, kThreads>>>(src, dst, totals, n);
    LAB_CHECK_LAUNCH();
  }
};

constexpr int kAddThreads = 256;

// Block b adds the scanned sum of sections 0 .. s-1 to every element of section s = b + 1
// (section 0 needs nothing).
template <class T>
__global__ void __launch_bounds__(kAddThreads)
    add_carry_kernel(T* data, const T* scanned_totals, int n, int section) {
  const long long s = blockIdx.x + 1LL;
  const T carry = scanned_totals[s - 1];
  const long long start = s * section;
  const long long end = min_ll(start + section, n);
  for (long long i = start + threadIdx.x; i < end; i += kAddThreads) data[i] = combine(carry, data[i]);
}

// The segmented fix-up on the user's output: the carry reaches only the elements before
// the section's first segment start.
__global__ void __launch_bounds__(kAddThreads)
    segmented_add_carry_kernel(float* out, const int* flags, const SegItem* scanned_totals, int n, int section) {
  __shared__ int first_head;
  const long long s = blockIdx.x + 1LL;
  const long long start = s * section;
  const int length = static_cast<int>(min_ll(start + section, n) - start);
  if (threadIdx.x == 0) first_head = length;
  __syncthreads();
  for (int j = threadIdx.x; j < length; j += kAddThreads) {
    if (flags[start + j] != 0) atomicMin(&first_head, j);
  }
  __syncthreads();
  const float carry = scanned_totals[s - 1].value;
  for (int j = threadIdx.x; j < first_head; j += kAddThreads) out[start + j] = carry + out[start + j];
}

template <class T>
void add_carries(ItemSink<T> dst, const T* scanned_totals, int n, int section, int sections) {
  add_carry_kernel<<<sections - 1, kAddThreads>>>(dst.p, scanned_totals, n, section);
  LAB_CHECK_LAUNCH();
}

void add_carries(SegValueSink dst, const SegItem* scanned_totals, int n, int section, int sections) {
  segmented_add_carry_kernel<<<sections - 1, kAddThreads>>>(dst.out, dst.flags, scanned_totals, n, section);
  LAB_CHECK_LAUNCH();
}

// Scans n elements: each block scans one section and writes its total; the totals are
// scanned by the same function one level up (in place: a block reads its whole
// section before writing it); then every section gets the scanned total of the
// sections before it. 1024-element sections need 4 levels for n = 2^31 - 1.
template <class Blocks, class T, class Source, class Sink>
void hierarchical_scan(Source src, Sink dst, int n, int level) {
  const int sections = sections_of(n, Blocks::kSection);
  T* totals = nullptr;
  if (sections > 1) {
    if (kFirstLevelSlot + level >= kPartialsSlot) throw std::length_error("hierarchical_scan: too many levels");
    totals = lab::workspace<T>(sections, kFirstLevelSlot + level);
  }
  Blocks::scan_sections(src, dst, totals, n, sections);
  if (sections == 1) return;
  hierarchical_scan<Blocks, T>(ItemSource<T>{totals}, ItemSink<T>{totals}, sections, level + 1);
  add_carries(dst, totals, n, Blocks::kSection, sections);
}

// ---------------------------------------------------------------------------------
// Tiles in registers: the building blocks of reduce_then_scan and decoupled_lookback.
// A block of 256 threads handles a tile of 4096 elements, 16 consecutive ones per
// thread: each thread scans its 16 sequentially in registers (work-efficient), and only
// the 256 thread totals go through a parallel (warp-shuffle) scan.
// ---------------------------------------------------------------------------------

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kItems = 16;
constexpr int kTile = kThreads * kItems;
static_assert(kItems % 4 == 0, "tiles are moved as 4-element vectors");

// Global memory is read and written in a striped order (coalesced: neighbouring threads,
// neighbouring addresses), registers hold a blocked order (thread t owns t*16 .. t*16+15);
// shared memory converts between the two. One padding word per 32 makes both access
// patterns free of bank conflicts.
__device__ __forceinline__ int padded(int i) { return i + (i >> 5); }
constexpr int kPaddedTile = kTile + kTile / 32;

template <class V>
struct Vec4;
template <>
struct Vec4<float> {
  using type = float4;
};
template <>
struct Vec4<int> {
  using type = int4;
};

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Loads src[base .. base + valid) into regs (blocked order); missing elements get `fill`.
// `vec`: src is 16-byte aligned, so a full tile can use 16-byte loads.
template <class V>
__device__ __forceinline__ void load_tile(const V* src, long long base, int valid, V fill, V (&regs)[kItems],
                                          V* smem, bool vec) {
  __syncthreads();  // the previous tile's store may still be reading smem
  if (vec && valid == kTile) {
    using V4 = typename Vec4<V>::type;
    const V4* src4 = reinterpret_cast<const V4*>(src + base);
    V4 v[kItems / 4];
#pragma unroll
    for (int k = 0; k < kItems / 4; ++k) v[k] = src4[k * kThreads + threadIdx.x];  // all loads in flight
#pragma unroll
    for (int k = 0; k < kItems / 4; ++k) {
      const int i = 4 * (k * kThreads + threadIdx.x);
      smem[padded(i)] = v[k].x;
      smem[padded(i + 1)] = v[k].y;
      smem[padded(i + 2)] = v[k].z;
      smem[padded(i + 3)] = v[k].w;
    }
  } else {
    V v[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int i = k * kThreads + threadIdx.x;
      v[k] = i < valid ? src[base + i] : fill;
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) smem[padded(k * kThreads + threadIdx.x)] = v[k];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kItems; ++j) regs[j] = smem[padded(threadIdx.x * kItems + j)];
}

// Stores regs (blocked order) to dst[base .. base + valid).
template <class V>
__device__ __forceinline__ void store_tile(V* dst, long long base, int valid, const V (&regs)[kItems], V* smem,
                                           bool vec) {
  __syncthreads();  // every thread has finished reading smem in load_tile
#pragma unroll
  for (int j = 0; j < kItems; ++j) smem[padded(threadIdx.x * kItems + j)] = regs[j];
  __syncthreads();
  if (vec && valid == kTile) {
    using V4 = typename Vec4<V>::type;
    V4* dst4 = reinterpret_cast<V4*>(dst + base);
#pragma unroll
    for (int k = 0; k < kItems / 4; ++k) {
      const int i = 4 * (k * kThreads + threadIdx.x);
      V4 v;
      v.x = smem[padded(i)];
      v.y = smem[padded(i + 1)];
      v.z = smem[padded(i + 2)];
      v.w = smem[padded(i + 3)];
      dst4[k * kThreads + threadIdx.x] = v;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int i = k * kThreads + threadIdx.x;
      if (i < valid) dst[base + i] = smem[padded(i)];
    }
  }
}

// Plain scan of floats: the tile's elements are the input values.
struct PlainTiles {
  using T = float;
  const float* in;
  float* out;
  int n;
  bool vec;  // in and out are 16-byte aligned
  struct Shared {
    float values[kPaddedTile];
  };
  __device__ void load(long long base, int valid, float (&items)[kItems], Shared& s) const {
    load_tile(in, base, valid, 0.0f, items, s.values, vec);
  }
  __device__ void store(long long base, int valid, const float (&values)[kItems], Shared& s) const {
    store_tile(out, base, valid, values, s.values, vec);
  }
};

// Segmented scan: the tile's elements are (value, head) pairs built from two arrays.
struct SegmentedTiles {
  using T = SegItem;
  const float* in;
  const int* flags;
  float* out;
  int n;
  bool vec;  // in, flags and out are 16-byte aligned
  struct Shared {
    float values[kPaddedTile];
    int flags[kPaddedTile];
  };
  __device__ void load(long long base, int valid, SegItem (&items)[kItems], Shared& s) const {
    float v[kItems];
    int f[kItems];
    load_tile(in, base, valid, 0.0f, v, s.values, vec);
    load_tile(flags, base, valid, 0, f, s.flags, vec);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      items[j].value = v[j];
      items[j].head = f[j] != 0 ? 1 : 0;
    }
  }
  __device__ void store(long long base, int valid, const float (&values)[kItems], Shared& s) const {
    store_tile(out, base, valid, values, s.values, vec);
  }
};

// Inclusive scan across one warp (Kogge-Stone on registers: shuffles need no barrier).
template <class T>
__device__ __forceinline__ T warp_inclusive_scan(T x) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const T y = shfl_up(x, d);
    if (lane >= d) x = combine(y, x);
  }
  return x;
}

// Exclusive scan of one value per thread across the block; block_total gets the
// combination of all of them. Every thread must call it (it holds a barrier).
template <int kWarpCount, class T>
__device__ __forceinline__ T block_exclusive_scan(T x, T* warp_totals, T& block_total) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const T inclusive = warp_inclusive_scan(x);
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  T warp_prefix = identity<T>();
  T total = identity<T>();
#pragma unroll
  for (int w = 0; w < kWarpCount; ++w) {
    if (w == warp) warp_prefix = total;
    total = combine(total, warp_totals[w]);
  }
  block_total = total;
  T exclusive = shfl_up(inclusive, 1);
  if (lane == 0) exclusive = identity<T>();
  return combine(warp_prefix, exclusive);
}

template <class T>
__device__ __forceinline__ T thread_reduce(const T (&items)[kItems]) {
  T total = items[0];
#pragma unroll
  for (int j = 1; j < kItems; ++j) total = combine(total, items[j]);
  return total;
}

// The thread's output values from its items and the combination of everything before them.
template <bool kExclusive, class T>
__device__ __forceinline__ void finish_items(const T (&items)[kItems], T prefix, float (&values)[kItems]) {
  T running = prefix;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (kExclusive) {
      values[j] = value_of(running);
      running = combine(running, items[j]);
    } else {
      running = combine(running, items[j]);
      values[j] = value_of(running);
    }
  }
}

// ---------------------------------------------------------------------------------
// reduce_then_scan
// ---------------------------------------------------------------------------------

constexpr int kMaxChunks = 1024;  // the chunk sums are scanned by one block of 1024 threads

// Pass 1: block b sums elements [b * chunk, (b + 1) * chunk). Addition order does not
// matter for a sum, so plain striped loads suffice.
__global__ void __launch_bounds__(kThreads) chunk_sums_kernel(const float* in, int n, long long chunk, float* sums) {
  __shared__ float warp_sums[kWarps];
  const long long begin = blockIdx.x * chunk;
  const long long end = min_ll(begin + chunk, n);
  float sum = 0.0f;
  for (long long base = begin; base < end; base += kTile) {
    float v[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const long long i = base + k * kThreads + threadIdx.x;
      v[k] = i < end ? in[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) sum += v[k];
  }
#pragma unroll
  for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(kFullMask, sum, d);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
    sums[blockIdx.x] = total;
  }
}

// Pass 2: exclusive scan of the chunk sums, in place, by one block.
__global__ void __launch_bounds__(kMaxChunks) scan_chunk_sums_kernel(float* sums, int count) {
  __shared__ float warp_totals[kMaxChunks / 32];
  const int t = threadIdx.x;
  float block_total;
  const float exclusive = block_exclusive_scan<kMaxChunks / 32>(t < count ? sums[t] : 0.0f, warp_totals, block_total);
  if (t < count) sums[t] = exclusive;
}

// Pass 3: block b scans its chunk tile by tile, starting from carries[b] and carrying
// each tile's total into the next.
template <class Tiles, bool kExclusive>
__global__ void __launch_bounds__(kThreads)
    chunk_scan_kernel(Tiles tiles, long long chunk, const typename Tiles::T* carries) {
  using T = typename Tiles::T;
  __shared__ typename Tiles::Shared smem;
  __shared__ T warp_totals[kWarps];
  T carry = carries[blockIdx.x];
  const long long begin = blockIdx.x * chunk;
  const long long end = min_ll(begin + chunk, tiles.n);
  for (long long base = begin; base < end; base += kTile) {  // the same trip count in every thread
    const int valid = static_cast<int>(min_ll(kTile, end - base));
    T items[kItems];
    tiles.load(base, valid, items, smem);
    T tile_total;
    const T before_thread = block_exclusive_scan<kWarps>(thread_reduce(items), warp_totals, tile_total);
    float values[kItems];
    finish_items<kExclusive>(items, combine(carry, before_thread), values);
    tiles.store(base, valid, values, smem);
    carry = combine(carry, tile_total);
  }
}

int reduce_then_scan_blocks(long long tiles) {
  static const int resident = [] {  // blocks that fit on the GPU at once: one wave
    int device = 0, sms = 0, per_sm = 0;
    LAB_CUDA_CHECK(cudaGetDevice(&device));
    LAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    LAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, chunk_scan_kernel<PlainTiles, false>,
                                                                 kThreads, 0));
    return std::max(1, sms * std::max(1, per_sm));
  }();
  return static_cast<int>(std::min<long long>({tiles, static_cast<long long>(resident), kMaxChunks}));
}

template <bool kExclusive>
void reduce_then_scan(const float* in, float* out, int n) {
  if (n <= 0) return;
  const long long tiles = (static_cast<long long>(n) + kTile - 1) / kTile;
  int blocks = reduce_then_scan_blocks(tiles);
  const long long tiles_per_block = (tiles + blocks - 1) / blocks;
  blocks = static_cast<int>((tiles + tiles_per_block - 1) / tiles_per_block);  // no empty chunk
  const long long chunk = tiles_per_block * kTile;
  float* sums = lab::workspace<float>(blocks, kPartialsSlot);
  chunk_sums_kernel<<<blocks, kThreads>>>(in, n, chunk, sums);
  LAB_CHECK_LAUNCH();
  scan_chunk_sums_kernel<<<1, kMaxChunks>>>(sums, blocks);
  LAB_CHECK_LAUNCH();
  const PlainTiles tiles_desc{in, out, n, aligned16(in) && aligned16(out)};
  chunk_scan_kernel<PlainTiles, kExclusive><<<blocks, kThreads>>>(tiles_desc, chunk, sums);
  LAB_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------
// decoupled_lookback (single pass)
// ---------------------------------------------------------------------------------

// A tile's state is one 64-bit word, so that its flag and its value are written and read
// together (one aligned 64-bit access is indivisible): the flag in the high half, the
// float in the low half, and for the segmented scan the head bit above the flag.
constexpr unsigned kInvalid = 0;    // nothing published yet
constexpr unsigned kAggregate = 1;  // the value is the tile's own total
constexpr unsigned kPrefix = 2;     // the value is the total of tiles 0 .. this one
using TileState = unsigned long long;

__device__ __forceinline__ TileState pack_state(unsigned flag, float v) {
  return (static_cast<TileState>(flag) << 32) | __float_as_uint(v);
}
__device__ __forceinline__ TileState pack_state(unsigned flag, SegItem v) {
  return (static_cast<TileState>(flag | (v.head ? 4u : 0u)) << 32) | __float_as_uint(v.value);
}
__device__ __forceinline__ void unpack_state(TileState s, unsigned& flag, float& v) {
  flag = static_cast<unsigned>(s >> 32);
  v = __uint_as_float(static_cast<unsigned>(s));
}
__device__ __forceinline__ void unpack_state(TileState s, unsigned& flag, SegItem& v) {
  const unsigned high = static_cast<unsigned>(s >> 32);
  flag = high & 3u;
  v.head = (high >> 2) & 1u;
  v.value = __uint_as_float(static_cast<unsigned>(s));
}
// volatile: every access goes to memory (L2), where other blocks' writes appear.
template <class T>
__device__ __forceinline__ void publish(TileState* states, int tile, unsigned flag, T v) {
  *reinterpret_cast<volatile TileState*>(states + tile) = pack_state(flag, v);
}
__device__ __forceinline__ TileState peek(const TileState* states, int tile) {
  return *reinterpret_cast<const volatile TileState*>(states + tile);
}

__global__ void init_tile_states_kernel(TileState* states, unsigned* tile_counter, int tiles) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < tiles) states[i] = 0;  // kInvalid
  if (i == 0) *tile_counter = 0;
}

// Run by all 32 lanes of one warp. Publishes the tile's aggregate, then combines the
// predecessors' published values, 32 tiles per round trip (lane l looks at tile
// newest - l), until it meets a tile that published its inclusive prefix (or, for the
// segmented scan, a tile holding a segment start). Publishes the tile's own inclusive
// prefix and returns the combination of all tiles before it.
template <class T>
__device__ T decoupled_lookback(TileState* states, int tile, T aggregate) {
  const int lane = threadIdx.x & 31;
  if (tile == 0) {
    if (lane == 0) publish(states, 0, kPrefix, aggregate);
    return identity<T>();
  }
  if (lane == 0) publish(states, tile, kAggregate, aggregate);
  T exclusive = identity<T>();
  for (int newest = tile - 1;; newest -= 32) {
    const int pred = newest - lane;
    unsigned flag;
    T value;
    for (;;) {  // wait until all 32 predecessors have published something
      if (pred >= 0) {
        unpack_state(peek(states, pred), flag, value);
      } else {  // before tile 0: never reached past tile 0's prefix, but keep it harmless
        flag = kPrefix;
        value = identity<T>();
      }
      if (!__any_sync(kFullMask, flag == kInvalid)) break;
    }
    const unsigned stops = __ballot_sync(kFullMask, flag == kPrefix || closes(value));
    const int last = stops != 0 ? __ffs(stops) - 1 : 31;  // lanes 0 .. last count
    T x = lane <= last ? value : identity<T>();
    // Ordered reduction: a higher lane holds an earlier tile, so it goes on the left.
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const T y = shfl_down(x, d);
      if (lane + d < 32) x = combine(y, x);
    }
    exclusive = combine(shfl_idx(x, 0), exclusive);
    if (stops != 0) break;
  }
  if (lane == 0) publish(states, tile, kPrefix, combine(exclusive, aggregate));
  return exclusive;
}

// One tile per block. Tiles are numbered in the order blocks start (an atomic counter),
// not by blockIdx: a block only ever waits for tiles that blocks already running have
// taken, so the waiting cannot deadlock whatever order the hardware schedules blocks.
template <class Tiles, bool kExclusive>
__global__ void __launch_bounds__(kThreads)
    lookback_scan_kernel(Tiles tiles, TileState* states, unsigned* tile_counter) {
  using T = typename Tiles::T;
  __shared__ typename Tiles::Shared smem;
  __shared__ T warp_totals[kWarps];
  __shared__ T tile_carry;
  __shared__ int tile_id;
  if (threadIdx.x == 0) tile_id = static_cast<int>(atomicAdd(tile_counter, 1u));
  __syncthreads();
  const int tile = tile_id;
  const long long base = static_cast<long long>(tile) * kTile;
  const int valid = static_cast<int>(min_ll(kTile, tiles.n - base));

  T items[kItems];
  tiles.load(base, valid, items, smem);
  T tile_total;
  const T before_thread = block_exclusive_scan<kWarps>(thread_reduce(items), warp_totals, tile_total);
  if (threadIdx.x < 32) {  // the whole first warp
    const T carry = decoupled_lookback(states, tile, tile_total);
    if (threadIdx.x == 0) tile_carry = carry;
  }
  __syncthreads();
  float values[kItems];
  finish_items<kExclusive>(items, combine(tile_carry, before_thread), values);
  tiles.store(base, valid, values, smem);
}

template <bool kExclusive, class Tiles>
void lookback_scan(const Tiles& tiles) {
  if (tiles.n <= 0) return;
  const int count = sections_of(tiles.n, kTile);
  TileState* states = lab::workspace<TileState>(static_cast<std::size_t>(count) + 1, kLookbackSlot);
  unsigned* tile_counter = reinterpret_cast<unsigned*>(states + count);
  init_tile_states_kernel<<<sections_of(count, 256), 256>>>(states, tile_counter, count);
  LAB_CHECK_LAUNCH();
  lookback_scan_kernel<Tiles, kExclusive><<<count, kThreads>>>(tiles, states, tile_counter);
  LAB_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------
// The variants.
// ---------------------------------------------------------------------------------

void inclusive_scan_kogge_stone(const float* in, float* out, int n) {
  if (n <= 0) return;
  hierarchical_scan<KoggeStoneBlocks, float>(ItemSource<float>{in}, ItemSink<float>{out}, n, 0);
}

void inclusive_scan_brent_kung(const float* in, float* out, int n) {
  if (n <= 0) return;
  hierarchical_scan<BrentKungBlocks, float>(ItemSource<float>{in}, ItemSink<float>{out}, n, 0);
}

void inclusive_scan_reduce_then_scan(const float* in, float* out, int n) { reduce_then_scan<false>(in, out, n); }

void inclusive_scan_decoupled_lookback(const float* in, float* out, int n) {
  lookback_scan<false>(PlainTiles{in, out, n, aligned16(in) && aligned16(out)});
}

void exclusive_scan_brent_kung(const float* in, float* out, int n) {
  if (n <= 0) return;
  hierarchical_scan<BrentKungBlocks, float>(ShiftedSource{in}, ItemSink<float>{out}, n, 0);
}

void exclusive_scan_reduce_then_scan(const float* in, float* out, int n) { reduce_then_scan<true>(in, out, n); }

void exclusive_scan_decoupled_lookback(const float* in, float* out, int n) {
  lookback_scan<true>(PlainTiles{in, out, n, aligned16(in) && aligned16(out)});
}

void segmented_scan_brent_kung(const float* in, const int* head_flags, float* out, int n) {
  if (n <= 0) return;
  hierarchical_scan<BrentKungBlocks, SegItem>(SegSource{in, head_flags}, SegValueSink{out, head_flags}, n, 0);
}

void segmented_scan_decoupled_lookback(const float* in, const int* head_flags, float* out, int n) {
  lookback_scan<false>(
      SegmentedTiles{in, head_flags, out, n, aligned16(in) && aligned16(head_flags) && aligned16(out)});
}

}  // namespace

void inclusive_scan(const float* in, float* out, int n) { inclusive_scan_decoupled_lookback(in, out, n); }

void exclusive_scan(const float* in, float* out, int n) { exclusive_scan_decoupled_lookback(in, out, n); }

void segmented_inclusive_scan(const float* in, const int* head_flags, float* out, int n) {
  segmented_scan_decoupled_lookback(in, head_flags, out, n);
}

// ---- Find the bug: lecture 4's Hillis-Steele scan, fixed --------------------------------
// The slides' kernel has two errors:
//  - a read/write race: in one step, thread t reads XY[t - stride] while thread
//    t - stride may already have added to it (threads of different warps run in any
//    order between two barriers). Double buffering fixes it: each step reads one half
//    and writes the other;
//  - a barrier inside a loop whose trip count depends on threadIdx.x (stride <= t):
//    threads leave the loop at different steps, so not every thread reaches every
//    __syncthreads(), which is undefined (it may hang). Every thread must run every step;
//    the condition belongs inside it.
namespace {

__global__ void fixed_hsh_scan_kernel(const float* X, float* Y, int len) {
  __shared__ float XY[2][kFixScanBlock];
  const int t = threadIdx.x;
  int current = 0;
  XY[current][t] = t < len ? X[t] : 0.0f;
  for (int stride = 1; stride < kFixScanBlock; stride *= 2) {
    __syncthreads();
    XY[1 - current][t] = t >= stride ? XY[current][t] + XY[current][t - stride] : XY[current][t];
    current = 1 - current;
  }
  if (t < len) Y[t] = XY[current][t];
}

}  // namespace

void fix_hsh_scan(const float* X, float* Y, int len) {
  fixed_hsh_scan_kernel<<<1, kFixScanBlock>>>(X, Y, len);
  LAB_CHECK_LAUNCH();
}

// ---- Further part: sparse matrix-vector product with a segmented scan ---------------------
// y = A x for A in CSR form, lecture 7's way, as four data-parallel steps over the nnz
// nonzeros:
//   1. gather  g[k] = x[col_idx[k]]                     (lines x up with the values)
//   2. map     p[k] = values[k] * g[k]                  (fused with 1: g is never stored)
//   3. segmented inclusive scan of p, with a head at the first nonzero of every row
//   4. y[r] = scanned[row_ptr[r + 1] - 1], the last element of row r's segment (0 if empty)
// Why it is right: the heads sit at row_ptr[r] for the non-empty rows, so a segment runs from
// a row's first nonzero up to the next non-empty row's first, which is exactly the row's
// nonzeros, and the inclusive scan's value at a segment's last element is the segment's sum.
// An empty row owns no element: its row_ptr[r] equals the next row's start (or nnz), so
// marking it again changes nothing, and step 4 gives it 0 without reading the scan.
// What it costs, against the obvious kernel with one thread per row looping over its row:
//  - memory: here ~32 bytes per nonzero (steps 1-2 read col_idx, values and x and write
//    the products and zeroed flags; the scan reads products and flags and writes its
//    output) plus ~16 per row, and four launches; one thread per row moves ~12 bytes per
//    nonzero plus ~8 per row in one launch. On a matrix whose rows are all short and alike,
//    one thread per row (or one warp per row) wins by that factor of about 2.5;
//  - balance: here every thread has the same work whatever the row lengths, and a long row
//    is split over many tiles that pass their partial sums on through the scan's look-back:
//    the time depends on nnz only. One thread per row lasts as long as its longest row: one
//    row of 100 000 nonzeros is 100 000 multiply-adds, one after another, in a single thread,
//    while the other 31 lanes of its warp, and soon the rest of the GPU, have nothing to do.
//    Its loads do not coalesce either: the 32 lanes of a warp walk 32 different rows.
namespace {

// Scratch arrays from lab::workspace (kept between calls, so a call pays no cudaMalloc), in
// slots away from the one that segmented_scan_decoupled_lookback, the scan called below, uses.
constexpr int kSpmvProductsSlot = 4;
constexpr int kSpmvHeadsSlot = 5;
constexpr int kSpmvScannedSlot = 6;
static_assert(kSpmvProductsSlot != kLookbackSlot && kSpmvHeadsSlot != kLookbackSlot &&
                  kSpmvScannedSlot != kLookbackSlot && kSpmvScannedSlot < kPartialsSlot,
              "spmv_csr's scratch must not share a slot with the segmented scan it calls");

constexpr int kSpmvThreads = 256;

int spmv_blocks(long long count) { return static_cast<int>((count + kSpmvThreads - 1) / kSpmvThreads); }

// Steps 1 and 2, and the flags cleared for step 3: one thread per nonzero.
__global__ void __launch_bounds__(kSpmvThreads)
    gather_multiply_kernel(const int* col_idx, const float* values, const float* x, float* products, int* heads,
                           int nnz) {
  const long long k = static_cast<long long>(blockIdx.x) * kSpmvThreads + threadIdx.x;
  if (k >= nnz) return;
  products[k] = values[k] * x[col_idx[k]];
  heads[k] = 0;
}

// Step 3's heads: one thread per row marks the row's first nonzero. Several empty rows in a
// row mark the same element, the next non-empty row's start, with the same value.
__global__ void __launch_bounds__(kSpmvThreads) mark_row_starts_kernel(const int* row_ptr, int* heads, int rows,
                                                                       int nnz) {
  const long long r = static_cast<long long>(blockIdx.x) * kSpmvThreads + threadIdx.x;
  if (r >= rows) return;
  const int start = row_ptr[r];
  if (start < nnz) heads[start] = 1;
}

// Step 4: one thread per row takes its segment's last scanned value.
__global__ void __launch_bounds__(kSpmvThreads) row_sums_kernel(const int* row_ptr, const float* scanned, float* y,
                                                                int rows) {
  const long long r = static_cast<long long>(blockIdx.x) * kSpmvThreads + threadIdx.x;
  if (r >= rows) return;
  const int start = row_ptr[r];
  const int end = row_ptr[r + 1];
  y[r] = end > start ? scanned[end - 1] : 0.0f;
}

}  // namespace

void spmv_csr(const int* row_ptr, const int* col_idx, const float* values, const float* x, float* y, int rows,
              int /*cols*/, int nnz) {
  if (rows <= 0) return;
  float* scanned = nullptr;  // not read when nnz == 0: every row is empty then
  if (nnz > 0) {
    float* products = lab::workspace<float>(nnz, kSpmvProductsSlot);
    int* heads = lab::workspace<int>(nnz, kSpmvHeadsSlot);
    scanned = lab::workspace<float>(nnz, kSpmvScannedSlot);
    gather_multiply_kernel<<<spmv_blocks(nnz), kSpmvThreads>>>(col_idx, values, x, products, heads, nnz);
    LAB_CHECK_LAUNCH();
    mark_row_starts_kernel<<<spmv_blocks(rows), kSpmvThreads>>>(row_ptr, heads, rows, nnz);
    LAB_CHECK_LAUNCH();
    segmented_scan_decoupled_lookback(products, heads, scanned, nnz);
  }
  row_sums_kernel<<<spmv_blocks(rows), kSpmvThreads>>>(row_ptr, scanned, y, rows);
  LAB_CHECK_LAUNCH();
}

LAB_REGISTER_VARIANT(inclusive_scan, "kogge_stone", inclusive_scan_kogge_stone,
                     "hierarchical; Kogge-Stone block scan, double-buffered, 1024 per block");
LAB_REGISTER_VARIANT(inclusive_scan, "brent_kung", inclusive_scan_brent_kung,
                     "hierarchical; Brent-Kung block scan, 2 elements per thread");
LAB_REGISTER_VARIANT(inclusive_scan, "reduce_then_scan", inclusive_scan_reduce_then_scan,
                     "chunk sums, scan of sums, rescan; 16 elements per thread");
LAB_REGISTER_VARIANT(inclusive_scan, "decoupled_lookback", inclusive_scan_decoupled_lookback,
                     "single pass, tiles look back for their carry-in");
LAB_REGISTER_VARIANT(exclusive_scan, "brent_kung", exclusive_scan_brent_kung,
                     "hierarchical Brent-Kung on the input shifted by one");
LAB_REGISTER_VARIANT(exclusive_scan, "reduce_then_scan", exclusive_scan_reduce_then_scan,
                     "chunk sums, scan of sums, rescan; 16 elements per thread");
LAB_REGISTER_VARIANT(exclusive_scan, "decoupled_lookback", exclusive_scan_decoupled_lookback,
                     "single pass, tiles look back for their carry-in");
LAB_REGISTER_VARIANT(segmented_inclusive_scan, "brent_kung", segmented_scan_brent_kung,
                     "hierarchical Brent-Kung on (value, head) pairs");
LAB_REGISTER_VARIANT(segmented_inclusive_scan, "decoupled_lookback", segmented_scan_decoupled_lookback,
                     "single pass on (value, head) pairs");
