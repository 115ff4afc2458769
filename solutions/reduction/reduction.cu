// Reference solution of the reduction lab (instructors only; not in student repositories).
//
// The progression of the lectures (Birmingham lectures 3-4, UIUC 4.1-4.3), each variant
// registered for the bench under the same name for reduce_sum and reduce_max: the
// kernels are templates over the operation (SumOp, MaxOp), which differ only in the
// identity, the combining function and the atomic.
//
//   interleaved  lecture 3's first tree: thread t works when t % (2*stride) == 0, so the
//                working threads are spread over every warp (divergence); one element per
//                thread; launches in levels until one value is left
//   contiguous   the working threads are t < stride: whole warps go idle together, no
//                divergence until fewer than 32 threads work
//   first_add    each thread adds two elements while loading (UIUC 4.2): half the blocks,
//                and no thread is idle in the first step
//   warp_finish  first_add, and the last 32 values are added by one warp with
//                __shfl_down_sync: no barrier and no shared memory for the last 5 steps
//   atomic       a grid just large enough to fill the GPU; each thread folds a strided
//                slice (grid stride), each block combines its threads with shuffles and
//                adds its result to out with one atomic (out is reset first, every call)
//   two_pass     the same grid-stride blocks write their results to a workspace, and one
//                more block reduces those: deterministic, unlike the atomics
//   vec4         two_pass with 16-byte loads (float4 / int4), four in flight per thread;
//                the elements before the first 16-byte boundary and after the last whole
//                vector are read one by one
//   vec4_once    vec4 in one launch, tuned for the last few percent of DRAM bandwidth:
//                1024-thread blocks, eight 16-byte loads in flight per thread, and the
//                block that finishes last adds the per-block results (see its comment)
// reduce_sum and reduce_max (what the tests and the grader call) are vec4_once.
//
// Scratch memory comes from lab::workspace (slots 0 and 1: alternate levels of the tree
// variants; slot 2: the per-block results of the grid-stride variants), never cudaMalloc
// in the call; nothing is kept from one call to the next except that memory.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "lab/buffer.h"
#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "reduction.h"

namespace {

constexpr int kThreads = 256;  // threads per block, every kernel: a power of two (the trees halve it)
constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kLevelSlotA = 0, kLevelSlotB = 1, kPartialsSlot = 2;

struct SumOp {
  using T = float;
  using Vec = float4;
  __device__ static T identity() { return 0.0f; }
  __device__ static T apply(T a, T b) { return a + b; }
  __device__ static void atomic(T* target, T v) { atomicAdd(target, v); }
};

struct MaxOp {
  using T = int;
  using Vec = int4;
  __device__ static T identity() { return INT_MIN; }
  __device__ static T apply(T a, T b) { return max(a, b); }
  __device__ static void atomic(T* target, T v) { atomicMax(target, v); }
};

template <class Op>
using Value = typename Op::T;

// ---- building blocks ----------------------------------------------------------------

template <class Op>
__device__ Value<Op> reduce4(const typename Op::Vec& v) {
  return Op::apply(Op::apply(v.x, v.y), Op::apply(v.z, v.w));
}

// Lane 0 gets the combination of the 32 lanes' values. Every lane of the warp must call it
// (full mask): the callers below only call it from whole warps.
template <class Op>
__device__ Value<Op> warp_reduce(Value<Op> v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = Op::apply(v, __shfl_down_sync(kFullMask, v, offset));
  return v;
}

// Thread 0 gets the combination of the block's `Threads` values (at most 32 warps). Called
// by every thread of the block (it holds a barrier); a second call in the same kernel
// needs a barrier between the two (warp 0 reads warp_results after the first).
template <class Op, int Threads = kThreads>
__device__ Value<Op> block_reduce(Value<Op> v) {
  static_assert(Threads % kWarp == 0 && Threads / kWarp <= kWarp, "whole warps, at most 32 of them");
  __shared__ Value<Op> warp_results[Threads / kWarp];
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_reduce<Op>(v);
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_reduce<Op>(lane < Threads / kWarp ? warp_results[lane] : Op::identity());
  return v;
}

template <class Op>
__global__ void fill_identity_kernel(Value<Op>* out) {
  *out = Op::identity();
}

// ---- the lectures' block trees: block b reduces its tile of `count` values to out[b] ----
// Elements past the end load the identity, so a partial last tile needs no special case.
// Indices are 64-bit: blockIdx.x * tile can pass 2^31 when n is close to INT_MAX.

template <class Op>
__global__ void __launch_bounds__(kThreads) interleaved_kernel(const Value<Op>* in, Value<Op>* out, int count) {
  __shared__ Value<Op> partial[kThreads];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + t;
  partial[t] = i < count ? in[i] : Op::identity();
  for (unsigned stride = 1; stride < kThreads; stride *= 2) {
    __syncthreads();  // the previous step (or the load) is complete; reached by every thread
    // Writers are multiples of 2*stride, they read odd multiples of stride: no slot is
    // read and written in the same step. t + stride < kThreads since kThreads is a power of two.
    if (t % (2 * stride) == 0) partial[t] = Op::apply(partial[t], partial[t + stride]);
  }
  if (t == 0) out[blockIdx.x] = partial[0];  // thread 0 wrote partial[0] itself in the last step
}

template <class Op>
__global__ void __launch_bounds__(kThreads) contiguous_kernel(const Value<Op>* in, Value<Op>* out, int count) {
  __shared__ Value<Op> partial[kThreads];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + t;
  partial[t] = i < count ? in[i] : Op::identity();
  // stride > 0, not lecture 3's stride > 1, which skips the last step and loses half the tile.
  for (unsigned stride = kThreads / 2; stride > 0; stride /= 2) {
    __syncthreads();
    if (t < stride) partial[t] = Op::apply(partial[t], partial[t + stride]);
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

// Tiles of 2 * kThreads: thread t combines elements t and t + kThreads of its tile while
// loading (both coalesced), with bounds checks the lecture's version lacks.
template <class Op>
__device__ Value<Op> load_two(const Value<Op>* in, int count) {
  const long long i = 2LL * blockIdx.x * kThreads + threadIdx.x;
  Value<Op> v = i < count ? in[i] : Op::identity();
  if (i + kThreads < count) v = Op::apply(v, in[i + kThreads]);
  return v;
}

template <class Op>
__global__ void __launch_bounds__(kThreads) first_add_kernel(const Value<Op>* in, Value<Op>* out, int count) {
  __shared__ Value<Op> partial[kThreads];
  const unsigned t = threadIdx.x;
  partial[t] = load_two<Op>(in, count);
  for (unsigned stride = kThreads / 2; stride > 0; stride /= 2) {
    __syncthreads();
    if (t < stride) partial[t] = Op::apply(partial[t], partial[t + stride]);
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

template <class Op>
__global__ void __launch_bounds__(kThreads) warp_finish_kernel(const Value<Op>* in, Value<Op>* out, int count) {
  __shared__ Value<Op> partial[kThreads];
  const unsigned t = threadIdx.x;
  partial[t] = load_two<Op>(in, count);
  for (unsigned stride = kThreads / 2; stride >= kWarp; stride /= 2) {
    __syncthreads();
    if (t < stride) partial[t] = Op::apply(partial[t], partial[t + stride]);
  }
  // partial[0..31] now hold 32 values, and thread t < 32 wrote partial[t] itself in the
  // last step, so warp 0 can read them without a barrier and finish with shuffles.
  if (t < kWarp) {
    const Value<Op> v = warp_reduce<Op>(partial[t]);
    if (t == 0) out[blockIdx.x] = v;
  }
}

template <class Op>
using LevelKernel = void (*)(const Value<Op>*, Value<Op>*, int);

// Lecture 4's multi-level scheme: each launch turns `count` values into one per tile,
// until a single tile is left, whose launch writes to out. n = 0 is one tile of nothing:
// the identity. Levels alternate between two workspace slots, so a launch never
// overwrites what it reads (level k + 2 reuses level k's slot, which is no longer needed).
template <class Op>
void reduce_in_levels(LevelKernel<Op> kernel, int tile, const Value<Op>* in, Value<Op>* out, int n) {
  const Value<Op>* src = in;
  int count = n;
  for (int level = 0;; ++level) {
    const long long tiles = (static_cast<long long>(count) + tile - 1) / tile;
    const int blocks = static_cast<int>(std::max(1LL, tiles));
    Value<Op>* dst = blocks == 1 ? out : lab::workspace<Value<Op>>(blocks, level % 2 == 0 ? kLevelSlotA : kLevelSlotB);
    kernel<<<blocks, kThreads>>>(src, dst, count);
    LAB_CHECK_LAUNCH();
    if (blocks == 1) return;
    src = dst;
    count = blocks;
  }
}

template <class Op>
void reduce_interleaved(const Value<Op>* in, Value<Op>* out, int n) {
  reduce_in_levels<Op>(interleaved_kernel<Op>, kThreads, in, out, n);
}
template <class Op>
void reduce_contiguous(const Value<Op>* in, Value<Op>* out, int n) {
  reduce_in_levels<Op>(contiguous_kernel<Op>, kThreads, in, out, n);
}
template <class Op>
void reduce_first_add(const Value<Op>* in, Value<Op>* out, int n) {
  reduce_in_levels<Op>(first_add_kernel<Op>, 2 * kThreads, in, out, n);
}
template <class Op>
void reduce_warp_finish(const Value<Op>* in, Value<Op>* out, int n) {
  reduce_in_levels<Op>(warp_finish_kernel<Op>, 2 * kThreads, in, out, n);
}

// ---- grid-stride kernels: a grid that fits on the GPU at once loops over the array ----

// Thread g folds elements g, g + G, g + 2G, ... (G threads in the grid: neighbouring
// threads read neighbouring elements, so every load is coalesced), then the block
// combines its threads and thread 0 writes out[blockIdx.x].
template <class Op>
__global__ void __launch_bounds__(kThreads) grid_stride_kernel(const Value<Op>* __restrict__ in, int n,
                                                               Value<Op>* __restrict__ out) {
  Value<Op> acc = Op::identity();
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    acc = Op::apply(acc, in[i]);
  }
  acc = block_reduce<Op>(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// The same, but each block adds its result into *out atomically.
template <class Op>
__global__ void __launch_bounds__(kThreads) grid_stride_atomic_kernel(const Value<Op>* __restrict__ in, int n,
                                                                      Value<Op>* __restrict__ out) {
  Value<Op> acc = Op::identity();
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    acc = Op::apply(acc, in[i]);
  }
  acc = block_reduce<Op>(acc);
  if (threadIdx.x == 0) Op::atomic(out, acc);
}

// The array in three parts: `head` (0-3 elements before the first 16-byte boundary),
// `body` (n4 aligned vectors of 4) and `tail` (0-3 elements after the last whole vector).
// Indices are 32-bit: n4 < 2^29 and the grid has at most a few hundred thousand threads,
// so i + 3 * stride cannot overflow.
template <class Op>
__global__ void __launch_bounds__(kThreads) vec4_kernel(const Value<Op>* __restrict__ head, int head_count,
                                                        const typename Op::Vec* __restrict__ body, int n4,
                                                        const Value<Op>* __restrict__ tail, int tail_count,
                                                        Value<Op>* __restrict__ out) {
  using Vec = typename Op::Vec;
  const int tid = blockIdx.x * kThreads + threadIdx.x;
  const int stride = gridDim.x * kThreads;
  Value<Op> acc = Op::identity();
  int i = tid;
  // Four independent 16-byte loads issued before any is used: DRAM bandwidth needs many
  // bytes in flight per SM, and these do not wait for each other.
  for (; i + 3 * stride < n4; i += 4 * stride) {
    const Vec a = body[i], b = body[i + stride], c = body[i + 2 * stride], d = body[i + 3 * stride];
    acc = Op::apply(acc, Op::apply(Op::apply(reduce4<Op>(a), reduce4<Op>(b)), Op::apply(reduce4<Op>(c), reduce4<Op>(d))));
  }
  for (; i < n4; i += stride) acc = Op::apply(acc, reduce4<Op>(body[i]));
  if (tid < head_count) acc = Op::apply(acc, head[tid]);
  if (tid < tail_count) acc = Op::apply(acc, tail[tid]);
  acc = block_reduce<Op>(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// Blocks of `kernel` that are resident on the whole GPU at once: a grid-stride kernel
// needs no more. Callers cache it (a static per kernel): the occupancy query costs host
// time inside the timed call. The kit works on device 0 only.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads = kThreads) {
  int device = 0, sms = 0, per_sm = 0;
  LAB_CUDA_CHECK(cudaGetDevice(&device));
  LAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  LAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return std::max(1, sms * per_sm);
}

// One block per kThreads work items, at least 1, at most max_blocks.
int grid_for(long long items, int max_blocks) {
  return static_cast<int>(std::clamp<long long>((items + kThreads - 1) / kThreads, 1, max_blocks));
}

template <class Op>
void reduce_atomic(const Value<Op>* in, Value<Op>* out, int n) {
  static const int max_blocks = resident_blocks(grid_stride_atomic_kernel<Op>);
  // out is an accumulator here: reset it on every call, or the previous result (or the
  // caller's garbage) would be folded in.
  fill_identity_kernel<Op><<<1, 1>>>(out);
  LAB_CHECK_LAUNCH();
  grid_stride_atomic_kernel<Op><<<grid_for(n, max_blocks), kThreads>>>(in, n, out);
  LAB_CHECK_LAUNCH();
}

template <class Op>
void reduce_two_pass(const Value<Op>* in, Value<Op>* out, int n) {
  static const int max_blocks = resident_blocks(grid_stride_kernel<Op>);
  const int blocks = grid_for(n, max_blocks);
  if (blocks == 1) {
    grid_stride_kernel<Op><<<1, kThreads>>>(in, n, out);
    LAB_CHECK_LAUNCH();
    return;
  }
  Value<Op>* partials = lab::workspace<Value<Op>>(blocks, kPartialsSlot);
  grid_stride_kernel<Op><<<blocks, kThreads>>>(in, n, partials);
  LAB_CHECK_LAUNCH();
  grid_stride_kernel<Op><<<1, kThreads>>>(partials, blocks, out);
  LAB_CHECK_LAUNCH();
}

// The array as vec4_kernel reads it: `head` elements before the first 16-byte boundary
// (read one by one), n4 whole vectors, `tail` elements after them. `in` must be
// element-aligned.
template <class Op>
struct Vec4Split {
  int head = 0, n4 = 0, tail = 0;
  const typename Op::Vec* body = nullptr;
  const Value<Op>* tail_start = nullptr;
};

template <class Op>
Vec4Split<Op> split_for_vec4(const Value<Op>* in, int n) {
  using T = Value<Op>;
  using Vec = typename Op::Vec;
  static_assert(sizeof(Vec) == 4 * sizeof(T), "a vector holds four elements");
  const auto address = reinterpret_cast<std::uintptr_t>(in);
  const int past_boundary = static_cast<int>((address % sizeof(Vec)) / sizeof(T));
  Vec4Split<Op> s;
  s.head = std::min(n, past_boundary == 0 ? 0 : 4 - past_boundary);
  s.n4 = (n - s.head) / 4;
  s.tail = n - s.head - 4 * s.n4;
  s.body = reinterpret_cast<const Vec*>(in + s.head);
  s.tail_start = in + s.head + 4 * static_cast<long long>(s.n4);
  return s;
}

bool element_aligned(const void* p, std::size_t size) { return reinterpret_cast<std::uintptr_t>(p) % size == 0; }

template <class Op>
void reduce_vec4(const Value<Op>* in, Value<Op>* out, int n) {
  using T = Value<Op>;
  if (!element_aligned(in, sizeof(T))) {  // vector loads are impossible
    reduce_two_pass<Op>(in, out, n);
    return;
  }
  const Vec4Split<Op> s = split_for_vec4<Op>(in, n);

  static const int max_blocks = resident_blocks(vec4_kernel<Op>);
  const int blocks = grid_for(s.n4, max_blocks);
  if (blocks == 1) {  // small n: one block does it all and writes out directly
    vec4_kernel<Op><<<1, kThreads>>>(in, s.head, s.body, s.n4, s.tail_start, s.tail, out);
    LAB_CHECK_LAUNCH();
    return;
  }
  T* partials = lab::workspace<T>(blocks, kPartialsSlot);
  vec4_kernel<Op><<<blocks, kThreads>>>(in, s.head, s.body, s.n4, s.tail_start, s.tail, partials);
  LAB_CHECK_LAUNCH();
  grid_stride_kernel<Op><<<1, kThreads>>>(partials, blocks, out);
  LAB_CHECK_LAUNCH();
}

}  // namespace


// ---- Find the bug: lecture 3's "alternative" tree, fixed --------------------------------
// The slides' loop runs while stride > 1, so its last step (stride 1, which adds
// partialSum[1] into partialSum[0]) never happens and thread 0 writes only half of the
// tree. The loop must run down to stride 1.
namespace {

__global__ void fixed_block_sum_kernel(const float* in, float* out, int n) {
  __shared__ float partial_sum[kFixBlockThreads];
  const unsigned t = threadIdx.x;
  partial_sum[t] = t < static_cast<unsigned>(n) ? in[t] : 0.0f;
  for (unsigned stride = blockDim.x / 2; stride >= 1; stride /= 2) {
    __syncthreads();
    if (t < stride) partial_sum[t] += partial_sum[t + stride];
  }
  if (t == 0) *out = partial_sum[0];
}

}  // namespace

void fix_block_sum(const float* in, float* out, int n) {
  fixed_block_sum_kernel<<<1, kFixBlockThreads>>>(in, out, n);
  LAB_CHECK_LAUNCH();
}

LAB_REGISTER_VARIANT(reduce_sum, "interleaved", reduce_interleaved<SumOp>, "lecture 3: t % (2*stride) works (divergent)");
LAB_REGISTER_VARIANT(reduce_sum, "contiguous", reduce_contiguous<SumOp>, "lecture 3: t < stride works (whole warps idle)");
LAB_REGISTER_VARIANT(reduce_sum, "first_add", reduce_first_add<SumOp>, "two elements per thread, added while loading");
LAB_REGISTER_VARIANT(reduce_sum, "warp_finish", reduce_warp_finish<SumOp>, "first_add, last 32 values by warp shuffles");
LAB_REGISTER_VARIANT(reduce_sum, "atomic", reduce_atomic<SumOp>, "grid stride, one atomicAdd per block");
LAB_REGISTER_VARIANT(reduce_sum, "two_pass", reduce_two_pass<SumOp>, "grid stride, block results reduced by a 2nd launch");
LAB_REGISTER_VARIANT(reduce_sum, "vec4", reduce_vec4<SumOp>, "two_pass with float4 loads (aligned head, scalar tail)");
// "vec4_once": registered at the end of the file, with its kernel.

LAB_REGISTER_VARIANT(reduce_max, "interleaved", reduce_interleaved<MaxOp>, "lecture 3: t % (2*stride) works (divergent)");
LAB_REGISTER_VARIANT(reduce_max, "contiguous", reduce_contiguous<MaxOp>, "lecture 3: t < stride works (whole warps idle)");
LAB_REGISTER_VARIANT(reduce_max, "first_add", reduce_first_add<MaxOp>, "two elements per thread, combined while loading");
LAB_REGISTER_VARIANT(reduce_max, "warp_finish", reduce_warp_finish<MaxOp>, "first_add, last 32 values by warp shuffles");
LAB_REGISTER_VARIANT(reduce_max, "atomic", reduce_atomic<MaxOp>, "grid stride, one atomicMax per block");
LAB_REGISTER_VARIANT(reduce_max, "two_pass", reduce_two_pass<MaxOp>, "grid stride, block results reduced by a 2nd launch");
LAB_REGISTER_VARIANT(reduce_max, "vec4", reduce_vec4<MaxOp>, "two_pass with int4 loads (aligned head, scalar tail)");

// ---- Further part: a float max from atomicCAS ------------------------------------------
// atomicMax has no float overload. atomicCAS swaps only when the word still holds what we
// last read, so a loop that re-reads on failure merges one value atomically: it ends as
// soon as the stored value is at least ours (nothing to do) or our swap succeeded. The
// comparison is on floats: the bit patterns of negative floats order the other way round
// as ints. One atomic per block keeps the contention low (a few hundred retries at most).
namespace {

__device__ void atomic_max_float_at(float* address, float value) {
  int* word = reinterpret_cast<int*>(address);
  int seen = *reinterpret_cast<volatile int*>(word);
  while (__int_as_float(seen) < value) {
    const int before = atomicCAS(word, seen, __float_as_int(value));
    if (before == seen) break;  // our value went in
    seen = before;              // another block changed it first: compare with its value
  }
}

struct FloatMaxOp {
  using T = float;
  __device__ static float identity() { return -INFINITY; }
  __device__ static float apply(float a, float b) { return fmaxf(a, b); }
};

__global__ void set_negative_infinity_kernel(float* out) { *out = -INFINITY; }

__global__ void __launch_bounds__(kThreads) atomic_max_float_kernel(const float* __restrict__ in, int n, float* out) {
  float acc = -INFINITY;
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    acc = fmaxf(acc, in[i]);
  }
  acc = block_reduce<FloatMaxOp>(acc);
  if (threadIdx.x == 0) atomic_max_float_at(out, acc);
}

}  // namespace

void atomic_max_float(const float* in, float* out, int n) {
  static const int max_blocks = resident_blocks(atomic_max_float_kernel);
  set_negative_infinity_kernel<<<1, 1>>>(out);
  LAB_CHECK_LAUNCH();
  if (n == 0) return;
  atomic_max_float_kernel<<<grid_for(n, max_blocks), kThreads>>>(in, n, out);
  LAB_CHECK_LAUNCH();
}

// ---- Further part: the last block finishes -----------------------------------------------
// One launch: every block writes its partial sum, then __threadfence() orders that write
// before the ticket the block takes next, for every observer on the GPU. Without the fence
// the last block could see all tickets taken and still read a partial sum that is only in
// another SM's write path. The last block reads the partial sums with __ldcg (from L2, the
// point of coherence, not a possibly stale L1 line) and resets the counter: the next call
// starts from 0 without a memset.
namespace {

constexpr int kTicketSlot = 3, kLastBlockPartialsSlot = 4;

__global__ void __launch_bounds__(kThreads) last_block_sum_kernel(const float* __restrict__ in, int n,
                                                                  float* partials, unsigned* tickets,
                                                                  float* out) {
  __shared__ bool is_last;
  float acc = 0.0f;
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) acc += in[i];
  acc = block_reduce<SumOp>(acc);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();  // the partial sum is visible everywhere before the ticket is
    is_last = atomicAdd(tickets, 1u) == gridDim.x - 1;
  }
  __syncthreads();  // is_last is read by the whole block
  if (!is_last) return;
  float total = 0.0f;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kThreads) total += __ldcg(&partials[b]);
  total = block_reduce<SumOp>(total);
  if (threadIdx.x == 0) {
    *out = total;
    *tickets = 0;  // every block has taken its ticket: safe to reset for the next launch
  }
}

unsigned* ticket_counter() {
  // Allocated and zeroed once per process (cudaMemset), then kept at 0 by the kernel.
  static unsigned* counter = [] {
    unsigned* c = lab::workspace<unsigned>(1, kTicketSlot);
    LAB_CUDA_CHECK(cudaMemset(c, 0, sizeof(unsigned)));
    return c;
  }();
  return counter;
}

}  // namespace

void last_block_sum(const float* in, float* out, int n) {
  static const int max_blocks = resident_blocks(last_block_sum_kernel);
  const int blocks = grid_for(n, max_blocks);
  float* partials = lab::workspace<float>(max_blocks, kLastBlockPartialsSlot);
  last_block_sum_kernel<<<blocks, kThreads>>>(in, n, partials, ticket_counter(), out);
  LAB_CHECK_LAUNCH();
}

// ---- The fastest version: vec4 in one launch -------------------------------------------
// A sum of 2^26 floats moves 256 MB and takes about 80 us at the H100's DRAM peak, so a
// few microseconds of overhead cost a few percent. vec4_once removes what vec4 still has:
//  - One launch. vec4's second kernel (one block over the per-block results) costs about
//    3 us: a launch, and a GPU that ramps down to one block and up again. Here the block
//    that finishes last adds the per-block results, with the ticket counter of
//    last_block_sum above (its comment says why the fence and __ldcg are needed). The
//    result stays deterministic: whichever block is last, it adds the same values in the
//    same order.
//  - Bigger blocks: 1024 threads, two per SM, the same 2048 threads per SM as vec4's
//    256 x 8 but a quarter as many per-block results and block trees. Measured on an H100,
//    one launch with 1024-thread blocks read at 86.7% of the DRAM peak where 256-thread
//    blocks (eight per SM) read at 83.5%.
//  - Eight 16-byte loads in flight per thread (128 bytes), loaded with __ldcs ("cache
//    streaming": the line is evicted first, since nothing reads it twice).
namespace {

constexpr int kOnceThreads = 1024;
constexpr int kOnceLoads = 8;  // 16-byte loads in flight per thread
constexpr int kOncePartialsSlot = 5;

template <class Op>
__global__ void __launch_bounds__(kOnceThreads) vec4_once_kernel(const Value<Op>* __restrict__ head, int head_count,
                                                                 const typename Op::Vec* __restrict__ body, int n4,
                                                                 const Value<Op>* __restrict__ tail, int tail_count,
                                                                 Value<Op>* partials, unsigned* tickets,
                                                                 Value<Op>* __restrict__ out) {
  using Vec = typename Op::Vec;
  const int tid = blockIdx.x * kOnceThreads + threadIdx.x;
  const int stride = gridDim.x * kOnceThreads;
  Value<Op> acc = Op::identity();
  int i = tid;
  // n4 < 2^29 and stride < 2^20 here, so i + 7 * stride cannot overflow.
  for (; i + (kOnceLoads - 1) * stride < n4; i += kOnceLoads * stride) {
    Vec v[kOnceLoads];
#pragma unroll
    for (int u = 0; u < kOnceLoads; ++u) v[u] = __ldcs(body + i + u * stride);  // all issued before any is used
#pragma unroll
    for (int u = 0; u < kOnceLoads; ++u) acc = Op::apply(acc, reduce4<Op>(v[u]));
  }
  for (; i < n4; i += stride) acc = Op::apply(acc, reduce4<Op>(body[i]));
  if (tid < head_count) acc = Op::apply(acc, head[tid]);
  if (tid < tail_count) acc = Op::apply(acc, tail[tid]);
  acc = block_reduce<Op, kOnceThreads>(acc);

  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();  // the block's result is visible everywhere before its ticket is
    is_last = atomicAdd(tickets, 1u) == gridDim.x - 1;
  }
  __syncthreads();  // is_last for the whole block; warp 0 is done with block_reduce's shared array
  if (!is_last) return;
  Value<Op> total = Op::identity();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kOnceThreads) total = Op::apply(total, __ldcg(&partials[b]));
  total = block_reduce<Op, kOnceThreads>(total);
  if (threadIdx.x == 0) {
    *out = total;
    *tickets = 0;  // every block has its ticket: ready for the next launch
  }
}

template <class Op>
void reduce_vec4_once(const Value<Op>* in, Value<Op>* out, int n) {
  using T = Value<Op>;
  if (!element_aligned(in, sizeof(T))) {  // vector loads are impossible
    reduce_two_pass<Op>(in, out, n);
    return;
  }
  const Vec4Split<Op> s = split_for_vec4<Op>(in, n);
  // All resident at once (two per SM on an H100), but no more blocks than there are
  // 1024-vector slices: a small n needs one.
  static const int max_blocks = resident_blocks(vec4_once_kernel<Op>, kOnceThreads);
  const int blocks = static_cast<int>(std::clamp<long long>((s.n4 + kOnceThreads - 1LL) / kOnceThreads, 1, max_blocks));
  T* partials = lab::workspace<T>(max_blocks, kOncePartialsSlot);
  vec4_once_kernel<Op><<<blocks, kOnceThreads>>>(in, s.head, s.body, s.n4, s.tail_start, s.tail, partials,
                                                 ticket_counter(), out);
  LAB_CHECK_LAUNCH();
}

}  // namespace

void reduce_sum(const float* in, float* out, int n) { reduce_vec4_once<SumOp>(in, out, n); }
void reduce_max(const int* in, int* out, int n) { reduce_vec4_once<MaxOp>(in, out, n); }

LAB_REGISTER_VARIANT(reduce_sum, "vec4_once", reduce_vec4_once<SumOp>,
                     "vec4 in one launch: 1024-thread blocks, 8 loads in flight, the last block finishes");
LAB_REGISTER_VARIANT(reduce_max, "vec4_once", reduce_vec4_once<MaxOp>,
                     "vec4 in one launch: 1024-thread blocks, 8 loads in flight, the last block finishes");
