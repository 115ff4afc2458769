// Provided by the kit. GPU tests of common/: buffers, the workspace, the event timer,
// the device comparison used by the bench, device facts and the variant registry.
//   ./bin/common_test --gtest_filter='*Gpu*'
#include <gtest/gtest.h>

#include "lab/bench.h"
#include "lab/event_timer.h"
#include "lab/testing.h"
#include "lab/variants.h"

namespace {

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

void registry_probe(int* out) { *out = 7; }
LAB_REGISTER_VARIANT(registry_probe, "probe_copy", registry_probe, "a test variant");

using CommonGpu = lab::GpuTest;

// Upload, download and poison round-trip through device memory.
TEST_F(CommonGpu, DeviceBufferRoundTrip) {
  const std::vector<int> host = lab::random_ints(1000, -50, 50, lab::case_seed("buffer"));
  lab::DeviceBuffer<int> d(host);
  EXPECT_ARRAY_EQ(host, d.download());
  d.poison();
  EXPECT_ARRAY_EQ(std::vector<int>(1000, -1), d.download());
  lab::DeviceBuffer<int> moved = std::move(d);
  EXPECT_EQ(moved.size(), 1000u);
  EXPECT_EQ(d.data(), nullptr);
}

// The workspace only grows, and slots are independent.
TEST_F(CommonGpu, WorkspaceGrowsOnlyAndSlotsAreSeparate) {
  void* small = lab::workspace_bytes(100, 0);
  EXPECT_EQ(lab::workspace_bytes(50, 0), small);
  void* other = lab::workspace_bytes(100, 1);
  EXPECT_NE(other, small);
  void* big = lab::workspace_bytes(64 << 20, 0);
  EXPECT_EQ(lab::workspace_bytes(1, 0), big);
  EXPECT_THROW(lab::workspace_bytes(1, lab::kWorkspaceSlots), std::out_of_range);
}

// Events time GPU work: a kernel that spins ~2 ms of clocks measures about that.
TEST_F(CommonGpu, EventTimerMeasuresKernel) {
  const lab::DeviceFacts f = lab::device_facts();
  lab::EventTimer timer;
  timer.start();
  spin_kernel<<<1, 1>>>(static_cast<long long>(f.sm_clock_mhz * 1e3 * 2));  // 2 ms of cycles
  LAB_CHECK_LAUNCH();
  timer.stop();
  const float ms = timer.elapsed_ms();
  EXPECT_GT(ms, 1.0f);
  EXPECT_LT(ms, 50.0f);
}

// The bench's device comparison counts differing bytes exactly, aligned or not.
TEST_F(CommonGpu, CountDifferences) {
  std::vector<unsigned char> a(10007), b;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<unsigned char>(i * 7);
  b = a;
  b[0] ^= 1;
  b[5000] ^= 1;
  b[10006] ^= 1;  // in the tail after the last whole word
  lab::DeviceBuffer<unsigned char> da(a), db(b);
  EXPECT_EQ(lab::bench::count_differences(da.data(), db.data(), a.size()), 3u);
  EXPECT_EQ(lab::bench::count_differences(da.data() + 1, db.data() + 1, a.size() - 1), 2u);
  EXPECT_EQ(lab::bench::count_differences(da.data(), da.data(), a.size()), 0u);
}

// The device facts read back plausible peaks.
TEST_F(CommonGpu, DeviceFactsArePlausible) {
  const lab::DeviceFacts f = lab::device_facts();
  EXPECT_GT(f.sms, 0);
  EXPECT_GT(f.peak_dram_gbps, 100.0);
  EXPECT_GT(f.peak_fp32_gflops, 1000.0);
  EXPECT_FALSE(lab::describe(f).empty());
}

// Registered variants are found by function and name, typed.
TEST(VariantRegistry, FindsRegisteredVariant) {
  auto* fn = lab::local_variants().get<decltype(registry_probe)>("registry_probe", "probe_copy");
  ASSERT_NE(fn, nullptr);
  int out = 0;
  fn(&out);
  EXPECT_EQ(out, 7);
  EXPECT_EQ(lab::local_variants().find("registry_probe", "missing"), nullptr);
  EXPECT_EQ(lab::local_variants().of("registry_probe").size(), 1u);
}

// Loading something that is not a reference library gives a clear error, not a crash.
TEST(BenchReference, MissingLibraryIsAnError) {
  const auto ref = lab::bench::Reference::load("/nonexistent/libnothing.so");
  EXPECT_FALSE(ref.loaded());
  EXPECT_NE(ref.error().find("cannot load"), std::string::npos) << ref.error();
  EXPECT_FALSE(lab::bench::Reference::load("").loaded());
}

// A shared library that loads but is not a lab's (the C library) is named as such.
TEST(BenchReference, ForeignLibraryIsAnError) {
  const auto ref = lab::bench::Reference::load("libc.so.6");
  EXPECT_FALSE(ref.loaded());
  EXPECT_NE(ref.error().find("is not a cuda-labkit library"), std::string::npos) << ref.error();
}

}  // namespace
