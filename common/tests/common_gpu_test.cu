// Provided by the kit. GPU tests of common/: buffers, the workspace, the event timer,
// the device comparison and the fresh data used by the bench, device facts and the
// variant registry.
//   ./bin/common_test --gtest_filter='*Gpu*'
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/event_timer.h"
#include "lab/padding.h"
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
  // A prefix comes back alone; a buffer kept from call to call grows only.
  moved.upload(host);
  EXPECT_ARRAY_EQ(std::vector<int>(host.begin(), host.begin() + 10), moved.download(10));
  EXPECT_THROW(moved.download(1001), std::length_error);
  const int* before = moved.data();
  moved.grow_to(500);
  EXPECT_EQ(moved.data(), before);
  EXPECT_EQ(moved.size(), 1000u);
  moved.grow_to(2000);
  EXPECT_EQ(moved.size(), 2000u);
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

// The bench's fresh data: reproducible per seed, new for another seed, inside its range
// at both ends, and uniform enough that its mean sits in the middle.
TEST_F(CommonGpu, FillHelpersAreSeededAndInRange) {
  constexpr std::size_t n = 1 << 20;
  lab::DeviceBuffer<float> f(n), g(n);
  lab::bench::fill_uniform(f.data(), n, -2.0f, 6.0f, 11);
  lab::bench::fill_uniform(g.data(), n, -2.0f, 6.0f, 11);
  EXPECT_EQ(lab::bench::count_differences(f.data(), g.data(), n * sizeof(float)), 0u) << "same seed, other data";
  lab::bench::fill_uniform(g.data(), n, -2.0f, 6.0f, 12);
  EXPECT_GT(lab::bench::count_differences(f.data(), g.data(), n * sizeof(float)), n / 2) << "another seed, same data";
  const std::vector<float> uniform = f.download();
  double sum = 0;
  for (float v : uniform) sum += v;
  EXPECT_GE(*std::min_element(uniform.begin(), uniform.end()), -2.0f);
  EXPECT_LT(*std::max_element(uniform.begin(), uniform.end()), 6.0f);
  EXPECT_NEAR(sum / n, 2.0, 0.02);

  lab::bench::fill_integer_floats(f.data(), n, -3, 3, 5);
  const std::vector<float> integers = f.download();
  EXPECT_TRUE(std::all_of(integers.begin(), integers.end(), [](float v) { return v == std::floor(v); }));
  EXPECT_EQ(*std::min_element(integers.begin(), integers.end()), -3.0f);
  EXPECT_EQ(*std::max_element(integers.begin(), integers.end()), 3.0f);

  lab::DeviceBuffer<int> ints(n);
  lab::bench::fill_ints(ints.data(), n, INT_MIN, INT_MAX, 5);
  const std::vector<int> wide = ints.download();
  EXPECT_LT(*std::min_element(wide.begin(), wide.end()), -(1 << 30));
  EXPECT_GT(*std::max_element(wide.begin(), wide.end()), 1 << 30);

  lab::DeviceBuffer<unsigned> bins(n);
  lab::bench::fill_uints(bins.data(), n, 256, 5);
  const std::vector<unsigned> small = bins.download();
  EXPECT_EQ(*std::max_element(small.begin(), small.end()), 255u);
  EXPECT_EQ(*std::min_element(small.begin(), small.end()), 0u);
  lab::bench::fill_uints(bins.data(), n, 0, 5);
  const std::vector<unsigned> full = bins.download();
  EXPECT_GT(*std::max_element(full.begin(), full.end()), 0xF0000000u);
  EXPECT_THROW(lab::bench::fill_ints(ints.data(), n, 3, 2, 5), std::invalid_argument);
}

// Fresh data through PristineInputs: each draw is new, the inputs check follows it, and
// selecting set 0 afterwards puts the original inputs back.
TEST_F(CommonGpu, FreshInputsAreWatchedAndSetZeroComesBack) {
  constexpr std::size_t n = 4096;
  const std::vector<float> original = lab::random_floats(n, 0.0f, 1.0f, lab::case_seed("fresh"));
  lab::DeviceBuffer<float> x(original);
  lab::bench::PristineInputs inputs;
  inputs.watch("x", x);
  lab::bench::Workload w;
  int draws = 0;
  inputs.use_fresh_in(w, [&](lab::Seed seed) {
    lab::bench::fill_uniform(x.data(), n, 10.0f, 20.0f, seed);
    ++draws;
  });
  ASSERT_TRUE(w.fresh);
  EXPECT_TRUE(w.varies());
  EXPECT_EQ(inputs.current(), 0);
  w.fresh(1);
  EXPECT_EQ(draws, 1);
  EXPECT_EQ(inputs.current(), inputs.fresh_set());
  const std::vector<float> first = x.download();
  EXPECT_GE(*std::min_element(first.begin(), first.end()), 10.0f);
  EXPECT_EQ(inputs.check(), "");
  w.fresh(2);
  EXPECT_NE(x.download(), first);
  EXPECT_EQ(inputs.check(), "") << "the copy for the inputs check follows each draw";
  LAB_CUDA_CHECK(cudaMemset(x.data(), 0, 8));
  EXPECT_NE(inputs.check(), "") << "a changed input goes unnoticed";
  w.restore();
  EXPECT_EQ(inputs.current(), 0);
  EXPECT_EQ(x.download(), original);
  EXPECT_EQ(inputs.check(), "");
}

// The device facts read back plausible peaks.
// The bench's padding guard: canaries in the rounding of padded DeviceBuffers, checked
// after a call; a write past the end (and only one) fails with where it wrote.
TEST_F(CommonGpu, PaddingGuardFindsWritesPastTheEnd) {
  lab::set_device_allocation_granularity(std::size_t{2} << 20);
  {
    lab::DeviceBuffer<float> floats(1000);         // 4000 bytes: padding from a 16-byte boundary
    lab::DeviceBuffer<unsigned char> bytes(1001);  // padding from an odd byte
    lab::set_device_allocation_granularity(0);
    const std::vector<lab::PaddedBuffer> all = lab::padded_buffers();
    ASSERT_TRUE(std::any_of(all.begin(), all.end(), [&](const lab::PaddedBuffer& b) {
      return b.base == floats.data() && b.bytes == 4000 && b.allocated == (std::size_t{2} << 20);
    }));
    lab::bench::PaddingGuard guard;
    // Changes the canary byte at `at` for sure: writes its complement.
    const auto flip = [](void* at) {
      unsigned char value = 0;
      LAB_CUDA_CHECK(cudaMemcpy(&value, at, 1, cudaMemcpyDeviceToHost));
      value = static_cast<unsigned char>(~value);
      LAB_CUDA_CHECK(cudaMemcpy(at, &value, 1, cudaMemcpyHostToDevice));
    };
    // Nothing written: clean, and writes inside the buffers are not the guard's business.
    guard.arm();
    LAB_CUDA_CHECK(cudaMemset(floats.data(), 1, floats.bytes()));
    LAB_CUDA_CHECK(cudaMemset(bytes.data(), 1, bytes.bytes()));
    guard.launch_check();
    EXPECT_EQ(guard.result(), "");
    // The first byte past the odd buffer.
    guard.arm();
    flip(bytes.data() + 1001);
    guard.launch_check();
    std::string problem = guard.result();
    EXPECT_NE(problem.find("(1001 bytes)"), std::string::npos) << problem;
    EXPECT_NE(problem.find("the first 0 bytes past its end (byte 1001 "), std::string::npos) << problem;
    // New canaries each time: the same bytes are clean after the next arm.
    guard.arm();
    guard.launch_check();
    EXPECT_EQ(guard.result(), "");
    // Past the floats: bytes 96 and 101 past the end, and the allocation's very last byte.
    guard.arm();
    char* const end = reinterpret_cast<char*>(floats.data()) + floats.bytes();
    flip(end + 96);
    flip(end + 101);
    flip(reinterpret_cast<char*>(floats.data()) + (std::size_t{2} << 20) - 1);
    guard.launch_check();
    problem = guard.result();
    EXPECT_NE(problem.find("(4000 bytes): 3 bytes of the padding behind it changed, the first 96 bytes past its end "
                           "(byte 4096 "),
              std::string::npos)
        << problem;
    // Two buffers at once: the first named, the other counted.
    guard.arm();
    flip(end);
    flip(bytes.data() + 2000);
    guard.launch_check();
    problem = guard.result();
    EXPECT_NE(problem.find("(and past the end of 1 other buffer)"), std::string::npos) << problem;
  }
  // Freed buffers leave the record.
  for (const lab::PaddedBuffer& b : lab::padded_buffers()) EXPECT_NE(b.bytes, 1001u);
}

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
