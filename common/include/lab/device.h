// Provided by the kit. What the GPU can do at best, so a bench can say "% of peak".
//
// Peaks are computed from the device's own attributes: DRAM bandwidth from the memory
// clock and bus width (two transfers per clock), FP32 from the FP32 lanes per SM,
// rsqrt from the special-function units (16 per SM per clock). Measured copies reach
// about 90% of the DRAM figure; that is what "the roofline" means in the benches.
#pragma once

#include <cstddef>
#include <string>

namespace lab {

/// Facts about one CUDA device.
struct DeviceFacts {
  int device = 0;                 ///< device ordinal
  std::string name;               ///< e.g. "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;       ///< compute capability
  int sms = 0;                    ///< streaming multiprocessors
  double sm_clock_mhz = 0;        ///< peak SM clock
  double mem_clock_mhz = 0;       ///< peak memory clock
  int bus_width_bits = 0;         ///< memory bus width
  std::size_t l2_bytes = 0;       ///< L2 cache size
  std::size_t global_bytes = 0;   ///< device memory
  int fp32_lanes_per_sm = 0;      ///< FP32 results per SM per clock
  double peak_dram_gbps = 0;      ///< GB/s (10^9 bytes per second)
  double peak_fp32_gflops = 0;    ///< GFLOP/s, one FMA counted as two
  double peak_rsqrt_gops = 0;     ///< reciprocal square roots per second / 10^9
};

/// True when at least one CUDA device can be used; otherwise `why` says what went wrong.
bool gpu_available(std::string* why = nullptr);
/// Reads the facts of `device` (throws lab::CudaError when there is none).
DeviceFacts device_facts(int device = 0);
/// How a thread of this process waits for the GPU, from LABKIT_GPU_WAIT ("spin", "yield" or
/// "block"; unset or anything else: `fallback`, a cudaDeviceSchedule* flag or 0 for the
/// runtime's own choice). Call before the first CUDA call creates the context. The grader's
/// judge test programs and workers read it: a spinning wait keeps a core busy for as long
/// as the GPU takes, which, with many labs tested side by side, may starve the CPU work of
/// the others. Returns the flag applied (0: none).
unsigned apply_gpu_wait(unsigned fallback = 0);
/// One line: name, compute capability, SMs, clock, peak DRAM bandwidth.
std::string describe(const DeviceFacts& facts);

/// Peak DRAM GB/s from the memory clock (kHz) and bus width: 2 transfers per clock.
double peak_dram_gbps(double mem_clock_khz, int bus_width_bits);
/// FP32 lanes per SM for a compute capability (64 on sm_70/75/80, 128 on sm_86 and newer).
int fp32_lanes_per_sm(int major, int minor);

}  // namespace lab
