// Provided by the kit. Device facts and peaks (lab/device.h).
#include "lab/device.h"

#include <cstdio>
#include <cstdlib>

#include "lab/cuda_check.h"

namespace lab {

unsigned apply_gpu_wait(unsigned fallback) {
  const char* text = std::getenv("LABKIT_GPU_WAIT");
  const std::string wanted = text != nullptr ? text : "";
  unsigned flag = fallback;
  if (wanted == "spin") flag = cudaDeviceScheduleSpin;
  if (wanted == "yield") flag = cudaDeviceScheduleYield;
  if (wanted == "block") flag = cudaDeviceScheduleBlockingSync;
  if (flag != 0 && cudaSetDeviceFlags(flag) != cudaSuccess) {
    cudaGetLastError();  // a context exists already: its own way of waiting stays
    return 0;
  }
  return flag;
}

bool gpu_available(std::string* why) {
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    cudaGetLastError();  // clear it, so later checks do not report it again
    if (why != nullptr) *why = std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
    return false;
  }
  if (count == 0) {
    if (why != nullptr) *why = "cudaGetDeviceCount found no device";
    return false;
  }
  return true;
}

double peak_dram_gbps(double mem_clock_khz, int bus_width_bits) {
  return 2.0 * mem_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
}

int fp32_lanes_per_sm(int major, int minor) {
  if (major < 8 || (major == 8 && minor == 0)) return 64;
  return 128;
}

DeviceFacts device_facts(int device) {
  DeviceFacts f;
  f.device = device;
  cudaDeviceProp prop{};
  LAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  f.name = prop.name;
  f.major = prop.major;
  f.minor = prop.minor;
  f.sms = prop.multiProcessorCount;
  f.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  f.global_bytes = prop.totalGlobalMem;
  // Clock rates are read as attributes: CUDA 13 removed them from cudaDeviceProp.
  int sm_khz = 0, mem_khz = 0, bus_bits = 0;
  LAB_CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
  LAB_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  LAB_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  f.sm_clock_mhz = sm_khz / 1e3;
  f.mem_clock_mhz = mem_khz / 1e3;
  f.bus_width_bits = bus_bits;
  f.fp32_lanes_per_sm = fp32_lanes_per_sm(f.major, f.minor);
  f.peak_dram_gbps = peak_dram_gbps(mem_khz, bus_bits);
  f.peak_fp32_gflops = 2.0 * f.sms * f.fp32_lanes_per_sm * f.sm_clock_mhz / 1e3;
  f.peak_rsqrt_gops = 16.0 * f.sms * f.sm_clock_mhz / 1e3;
  return f;
}

std::string describe(const DeviceFacts& f) {
  char text[256];
  std::snprintf(text, sizeof text, "%s (sm_%d%d, %d SMs at %.0f MHz, %.0f MB L2, peak DRAM %.0f GB/s)",
                f.name.c_str(), f.major, f.minor, f.sms, f.sm_clock_mhz, f.l2_bytes / 1048576.0,
                f.peak_dram_gbps);
  return text;
}

}  // namespace lab
