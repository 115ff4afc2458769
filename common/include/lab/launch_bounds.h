// Blocks per SM for __launch_bounds__(threads, blocks) that every architecture accepts.
//
// The second argument of __launch_bounds__ asks the compiler to fit that many blocks on
// one SM (it limits the registers per thread to make them fit). Asking for more threads
// than an SM can hold is an error, and the limit differs: 2048 threads on sm_80, sm_90
// and sm_100, 1536 on sm_86 and sm_89, 1024 on sm_75. Write
//   __launch_bounds__(256, lab::min_blocks_per_sm(256, 8))
// to get 8 blocks where they fit and as many as fit elsewhere.
#pragma once

namespace lab {

/// Resident threads per SM of the architecture this device pass compiles for.
constexpr int max_threads_per_sm() {
#if !defined(__CUDA_ARCH__)
  return 2048;  // the host pass: the value is not used
#elif __CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || __CUDA_ARCH__ == 1030
  return 2048;
#elif __CUDA_ARCH__ == 750
  return 1024;
#else
  return 1536;  // sm_86, sm_87, sm_89, sm_120: and a safe value for others
#endif
}

/// `wanted` blocks of `threads` threads per SM, or as many as fit.
constexpr int min_blocks_per_sm(int threads, int wanted) {
  return wanted * threads <= max_threads_per_sm() ? wanted : max_threads_per_sm() / threads;
}

}  // namespace lab
