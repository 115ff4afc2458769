// Provided by the kit. The bench's guard of its buffers' padding (lab/padding.h): canaries
// written before every checked call and compared after it, on the GPU, padding only.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lab/cuda_check.h"
#include "lab/padding.h"

namespace lab::bench {
namespace {

// Buffers per launch: the table travels as a kernel parameter (well under its 4 KiB).
constexpr int kPerLaunch = 64;

struct Segment {
  unsigned long long begin;  // address of the first byte of padding
  unsigned long long end;    // address one past the allocation's last byte
  unsigned long long base;   // the allocation's start (offsets are reported from it)
};

struct Table {
  Segment segment[kPerLaunch];
  unsigned long long seed;
  int count;
  int first_result;  // index of segment[0]'s result in the results array
};

// The canary word at 4-byte-aligned `address`: a splitmix64 of the seed and the address,
// so every word of every buffer differs from call to call and cannot be guessed from
// another buffer's.
__device__ __forceinline__ unsigned canary_word(unsigned long long seed, unsigned long long address) {
  unsigned long long z = seed ^ address;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<unsigned>(z ^ (z >> 31));
}

// The canary byte at `address`: byte (address % 4) of its word (little-endian).
__device__ __forceinline__ unsigned char canary_byte(unsigned long long seed, unsigned long long address) {
  return static_cast<unsigned char>(canary_word(seed, address & ~3ull) >> (8 * (address & 3ull)));
}

// The padding of segment blockIdx.y: bytes up to a 16-byte boundary, 16-byte words, and
// bytes after the last whole word (none where the allocation is a whole number of 2 MiB
// from a 256-byte-aligned start, as in a bench).
__global__ void padding_fill_kernel(Table table) {
  const Segment s = table.segment[blockIdx.y];
  const unsigned long long body = min(s.end, (s.begin + 15ull) & ~15ull);
  const unsigned long long thread = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long a = s.begin + thread; a < body; a += threads) {
    *reinterpret_cast<unsigned char*>(a) = canary_byte(table.seed, a);
  }
  const unsigned long long words_end = max(body, s.end & ~15ull);
  for (unsigned long long a = words_end + thread; a < s.end; a += threads) {  // none at 2 MiB rounding
    *reinterpret_cast<unsigned char*>(a) = canary_byte(table.seed, a);
  }
  for (unsigned long long a = body + 16ull * thread; a < words_end; a += 16ull * threads) {
    uint4 v;
    v.x = canary_word(table.seed, a);
    v.y = canary_word(table.seed, a + 4);
    v.z = canary_word(table.seed, a + 8);
    v.w = canary_word(table.seed, a + 12);
    *reinterpret_cast<uint4*>(a) = v;
  }
}

// Bytes of a word that differ (0-4) and the offset of the lowest one in the word.
__device__ __forceinline__ void note_difference(unsigned diff, unsigned long long offset, unsigned long long& first,
                                                unsigned long long& changed) {
  if (diff == 0) return;
  const unsigned long long lowest = offset + static_cast<unsigned long long>((__ffs(diff) - 1) / 8);
  first = min(first, lowest);
  for (int b = 0; b < 4; ++b) changed += ((diff >> (8 * b)) & 0xFFu) != 0u;
}

// Compares the padding with its canaries. first[i]: the lowest changed byte's offset from
// the allocation's start (ULLONG_MAX: none); changed[i]: how many bytes changed.
__global__ void padding_check_kernel(Table table, unsigned long long* first_changed, unsigned long long* changed_bytes) {
  const Segment s = table.segment[blockIdx.y];
  const unsigned long long body = min(s.end, (s.begin + 15ull) & ~15ull);
  const unsigned long long thread = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long first = ~0ull, changed = 0;
  for (unsigned long long a = s.begin + thread; a < body; a += threads) {
    if (*reinterpret_cast<const unsigned char*>(a) != canary_byte(table.seed, a)) {
      first = min(first, a - s.base);
      ++changed;
    }
  }
  const unsigned long long words_end = max(body, s.end & ~15ull);
  for (unsigned long long a = words_end + thread; a < s.end; a += threads) {  // none at 2 MiB rounding
    if (*reinterpret_cast<const unsigned char*>(a) != canary_byte(table.seed, a)) {
      first = min(first, a - s.base);
      ++changed;
    }
  }
  for (unsigned long long a = body + 16ull * thread; a < words_end; a += 16ull * threads) {
    const uint4 v = *reinterpret_cast<const uint4*>(a);
    note_difference(v.x ^ canary_word(table.seed, a), a - s.base, first, changed);
    note_difference(v.y ^ canary_word(table.seed, a + 4), a + 4 - s.base, first, changed);
    note_difference(v.z ^ canary_word(table.seed, a + 8), a + 8 - s.base, first, changed);
    note_difference(v.w ^ canary_word(table.seed, a + 12), a + 12 - s.base, first, changed);
  }
  if (changed != 0) {
    const int i = table.first_result + static_cast<int>(blockIdx.y);
    atomicMin(first_changed + i, first);
    atomicAdd(changed_bytes + i, changed);
  }
}

// Launches `kernel` over `buffers` in tables of kPerLaunch.
template <class Launch>
void for_each_table(const std::vector<PaddedBuffer>& buffers, std::uint64_t seed, Launch launch) {
  for (std::size_t start = 0; start < buffers.size(); start += kPerLaunch) {
    Table table{};
    table.seed = seed;
    table.first_result = static_cast<int>(start);
    table.count = static_cast<int>(std::min<std::size_t>(kPerLaunch, buffers.size() - start));
    for (int i = 0; i < table.count; ++i) {
      const PaddedBuffer& b = buffers[start + static_cast<std::size_t>(i)];
      const auto base = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(b.base));
      table.segment[i] = {base + b.bytes, base + b.allocated, base};
    }
    launch(table);
    LAB_CHECK_LAUNCH();
  }
}

constexpr int kBlocksPerBuffer = 32;  // 32 x 256 threads: 16 passes over 2 MiB of padding
constexpr int kThreads = 256;

}  // namespace

PaddingGuard::PaddingGuard() : m_rng(std::random_device{}()) {}

PaddingGuard::~PaddingGuard() {
  if (m_results != nullptr) (void)cudaFree(m_results);  // at exit the runtime may be gone already: ignored
}

void PaddingGuard::reserve(std::size_t count) {
  if (count <= m_capacity) return;
  if (m_results != nullptr) LAB_CUDA_CHECK(cudaFree(m_results));
  m_results = nullptr;
  m_capacity = 0;
  const std::size_t capacity = std::max<std::size_t>(count, 2 * kPerLaunch);
  // The first changed offsets, then the counts of changed bytes.
  LAB_CUDA_CHECK(cudaMalloc(&m_results, 2 * capacity * sizeof(unsigned long long)));
  m_capacity = capacity;
}

void PaddingGuard::arm() {
  m_checking = false;
  m_armed = padded_buffers();
  if (m_armed.empty()) return;
  reserve(m_armed.size());
  m_seed = m_rng();
  for_each_table(m_armed, m_seed, [](const Table& table) {
    padding_fill_kernel<<<dim3(kBlocksPerBuffer, static_cast<unsigned>(table.count)), kThreads>>>(table);
  });
}

void PaddingGuard::launch_check() {
  // A buffer freed since arm() (only code linked into a bench could) is not read any more.
  m_armed.erase(std::remove_if(m_armed.begin(), m_armed.end(),
                               [](const PaddedBuffer& b) { return !padded_buffer_live(b.base, b.allocated); }),
                m_armed.end());
  if (m_armed.empty()) return;
  // 0xFF bytes: every first offset ULLONG_MAX; every count 0.
  const std::size_t bytes = m_armed.size() * sizeof(unsigned long long);
  unsigned long long* first = m_results;
  unsigned long long* changed = m_results + m_capacity;
  LAB_CUDA_CHECK(cudaMemsetAsync(first, 0xFF, bytes, nullptr));
  LAB_CUDA_CHECK(cudaMemsetAsync(changed, 0, bytes, nullptr));
  for_each_table(m_armed, m_seed, [first, changed](const Table& table) {
    padding_check_kernel<<<dim3(kBlocksPerBuffer, static_cast<unsigned>(table.count)), kThreads>>>(table, first,
                                                                                                   changed);
  });
  m_checking = true;
}

std::string PaddingGuard::result() {
  if (!m_checking) return "";
  m_checking = false;
  const std::size_t n = m_armed.size();
  std::vector<unsigned long long> first(n), changed(n);
  LAB_CUDA_CHECK(cudaMemcpy(first.data(), m_results, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  LAB_CUDA_CHECK(cudaMemcpy(changed.data(), m_results + m_capacity, n * sizeof(unsigned long long),
                            cudaMemcpyDeviceToHost));
  std::string problem;
  std::size_t others = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (changed[i] == 0) continue;
    if (problem.empty()) {
      // Named by the call just made (its arguments were named as it was forwarded, after arm()).
      PaddedBuffer buffer = m_armed[i];
      for (const PaddedBuffer& now : padded_buffers()) {
        if (now.base == buffer.base && !now.name.empty()) buffer.name = now.name;
      }
      problem = padding_problem(buffer, static_cast<std::size_t>(first[i]), static_cast<std::size_t>(changed[i]));
    } else {
      ++others;
    }
  }
  if (others > 0) {
    problem += " (and past the end of " + std::to_string(others) + " other buffer" + (others == 1 ? "" : "s") + ")";
  }
  return problem;
}

}  // namespace lab::bench
