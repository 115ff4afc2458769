// Provided by the kit: do not edit. Correctness tests of vector_add.
//
//   ./build/dev/bin/vectorAdd_test                          all tests
//   ./build/dev/bin/vectorAdd_test --gtest_filter='*n_1025*' one size
//   ./build/dev/bin/vectorAdd_test --seed=7                 other random data
//   ./build/dev/bin/vectorAdd_test --gtest_filter='*PartHostProgram*'   Part A only
//   ./build/dev/bin/vectorAdd_test --gtest_filter='*Kernel*'   the further part (fusion)
//   ./build/dev/bin/vectorAdd_test --gtest_filter='*IndependentChains*'   the further part (streams)
//
// Each GPU test: prepare inputs and the expected result on the CPU, poison the output
// (NaN) so an element your kernel skips cannot pass, run vector_add, then verify the
// result exactly, the memory just past the output, and that the inputs are unchanged.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lab/remote.h"
#include "lab/testing.h"
#include "vectorAdd.h"

namespace {

// Runs vector_add on device copies of a and b and checks c = a + b exactly, that the
// 64 floats after c[n - 1] are untouched and that a and b are unchanged.
// a and b are followed by 64 NaNs that no correct kernel reads.
// `offset` shifts all three pointers by that many floats (unaligned for vector loads).
// `fn` is the version under test: vector_add itself, or a registered variant of it.
using VectorAddFn = decltype(vector_add);
void check_vector_add(const std::vector<float>& a, const std::vector<float>& b, int offset = 0,
                      VectorAddFn* fn = vector_add) {
  // Prepare: inputs, the CPU result, and a poisoned output with a guard zone after it.
  const int n = static_cast<int>(a.size());
  const int guard = 64;
  std::vector<float> expected(n);
  vector_add_cpu(a.data(), b.data(), expected.data(), n);
  // The inputs are followed by NaN: a kernel that reads a[n] or b[n] and lets the value
  // reach any result turns it into NaN, so an out-of-bounds read fails here every time.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a_padded, b_padded;
  a_padded.reserve(offset + n + guard);  // one allocation each: these reach 64 MiB
  b_padded.reserve(offset + n + guard);
  a_padded.assign(offset, 0.0f);
  b_padded.assign(offset, 0.0f);
  a_padded.insert(a_padded.end(), a.begin(), a.end());
  b_padded.insert(b_padded.end(), b.begin(), b.end());
  a_padded.insert(a_padded.end(), guard, nan);
  b_padded.insert(b_padded.end(), guard, nan);
  lab::DeviceBuffer<float> da(a_padded), db(b_padded), dc(offset + n + guard);
  dc.poison();

  // Run.
  fn(da.data() + offset, db.data() + offset, dc.data() + offset, n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const std::vector<float> c = dc.download();
  const std::vector<float> result(c.begin() + offset, c.begin() + offset + n);
  EXPECT_ARRAY_EQ(expected, result) << "c = a + b must hold exactly for every element";
  const std::vector<float> after(c.begin() + offset + n, c.end());
  const std::vector<float> before(c.begin(), c.begin() + offset);
  EXPECT_ARRAY_EQ(std::vector<unsigned>(guard, 0xFFFFFFFFu), lab::bits_of(after))
      << "vector_add wrote past c[n - 1]: check that only threads with index < n write";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(offset, 0xFFFFFFFFu), lab::bits_of(before)) << "vector_add wrote before c[0]";
  EXPECT_BITS_EQ(a_padded, da.download()) << "input a was modified";
  EXPECT_BITS_EQ(b_padded, db.download()) << "input b was modified";
}

// The sequential version adds element by element (the lecture's example, by hand).
TEST(VectorAddCpu, AddsElementwise) {
  const std::vector<float> a{1.0f, 2.0f, 3.0f, -4.5f}, b{10.0f, 20.0f, 30.0f, 4.5f};
  std::vector<float> c(4, -1.0f);
  vector_add_cpu(a.data(), b.data(), c.data(), 4);
  EXPECT_EQ(c, (std::vector<float>{11.0f, 22.0f, 33.0f, 0.0f}));
}

// With n = 0 the sequential version writes nothing.
TEST(VectorAddCpu, ZeroLengthWritesNothing) {
  float c = 7.0f;
  vector_add_cpu(nullptr, nullptr, &c, 0);
  EXPECT_EQ(c, 7.0f);
}

class VectorAddGpu : public lab::GpuTestWithParam<int> {};

// c = a + b exactly at sizes around warp and block boundaries, with two seeds each.
TEST_P(VectorAddGpu, MatchesCpu) {
  const int n = GetParam();
  for (int trial = 0; trial < 2; ++trial) {
    const lab::Seed seed = lab::case_seed("vector_add", 2ull * n + trial);
    SCOPED_TRACE("n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_vector_add(lab::random_floats(n, -1000.0f, 1000.0f, seed),
                     lab::random_floats(n, -1000.0f, 1000.0f, lab::derive_seed(seed, "b")));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, VectorAddGpu,
                         ::testing::Values(1, 31, 32, 33, 1023, 1024, 1025, (1 << 20) + 1, (1 << 24) + 3),
                         lab::size_name);

using VectorAddGpuEdge = lab::GpuTest;

// n = 0 launches nothing, writes nothing and raises no CUDA error. A real call comes
// first, so an implementation that does nothing at all cannot pass this test.
TEST_F(VectorAddGpuEdge, ZeroLengthDoesNothing) {
  check_vector_add(std::vector<float>{1.0f, 2.0f, 3.0f}, std::vector<float>{0.5f, 0.25f, -3.0f});
  lab::DeviceBuffer<float> c(16);
  c.poison();
  vector_add(c.data(), c.data(), c.data(), 0);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(std::vector<unsigned>(16, 0xFFFFFFFFu), lab::bits_of(c.download()));
}

// Pointers that are not 16-byte aligned (vector loads must fall back, not fault).
TEST_F(VectorAddGpuEdge, UnalignedPointers) {
  for (int offset = 1; offset < 4; ++offset) {
    const int n = 4099;
    const lab::Seed seed = lab::case_seed("vector_add_unaligned", offset);
    SCOPED_TRACE("offset = " + std::to_string(offset) + " floats, n = 4099, " + lab::seed_note(seed));
    check_vector_add(lab::random_floats(n, -1.0f, 1.0f, seed),
                     lab::random_floats(n, -1.0f, 1.0f, lab::derive_seed(seed, "b")), offset);
  }
}

// IEEE special values add as on the CPU: infinities, NaN, signed zeros, subnormals.
TEST_F(VectorAddGpuEdge, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<float> a{inf, inf, -inf, nan, -0.0f, 0.0f, tiny, 3.4e38f, 1.0f};
  const std::vector<float> b{1.0f, -inf, -inf, 1.0f, -0.0f, -0.0f, tiny, 3.4e38f, 1e-8f};
  check_vector_add(a, b);
}

// Inputs with the same values everywhere still produce every element (no caching by value).
TEST_F(VectorAddGpuEdge, ConstantInputs) {
  check_vector_add(std::vector<float>(70000, 1.5f), std::vector<float>(70000, 2.25f));
}

// ---- every registered variant ---------------------------------------------------------------

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/vectorAdd/lab.json, "required_variants").
// Every variant is exact at sizes around block boundaries, on aligned and unaligned pointers.
class VectorAddVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(VectorAddVariantsGpu);

TEST_P(VectorAddVariantsGpu, MatchesCpuAtEverySize) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<VectorAddFn>("vector_add", name);
  ASSERT_NE(fn, nullptr);
  for (const int n : {0, 1, 31, 32, 33, 255, 256, 257, 1023, 1025, 65537, (1 << 20) + 3}) {
    for (const int offset : {0, 1}) {
      const lab::Seed seed = lab::case_seed("vector_add_variant", 2ull * n + offset);
      SCOPED_TRACE("variant '" + name + "', n = " + std::to_string(n) + ", offset " + std::to_string(offset) + ", " +
                   lab::seed_note(seed));
      check_vector_add(lab::random_floats(n, -100.0f, 100.0f, seed),
                       lab::random_floats(n, -100.0f, 100.0f, lab::derive_seed(seed, "b")), offset, fn);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, VectorAddVariantsGpu, ::testing::ValuesIn(lab::registered_variants("vector_add")),
                         lab::variant_test_name);

// ---- Part A: the host program (vector_add_host, vector_add_host_pinned) --------------------
// These functions take HOST pointers. The tests pass lab::HostBuffer memory: ordinary memory
// here, and memory shared with the worker process in the grader's judge (common/judge/session.cu).

// A HostBuffer is an ordinary host array (in the judge: page-aligned blocks of a shared
// arena of fixed size, with a clear message when it is full).
TEST(HostBufferCpu, HoldsValuesAndGivesMemoryBack) {
  const std::vector<float> values{1.0f, -2.5f, 3.25f};
  lab::HostBuffer<float> buffer(values);
  EXPECT_EQ(buffer.size(), 3u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 4096, 0u) << "HostBuffer memory is page-aligned";
  EXPECT_EQ(buffer.to_vector(), values);
  lab::HostBuffer<float> moved = std::move(buffer);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(moved.to_vector(), values);
  moved.poison();
  EXPECT_ARRAY_EQ(std::vector<unsigned>(3, 0xFFFFFFFFu), lab::bits_of(moved.to_vector()));
  EXPECT_EQ(lab::HostBuffer<float>(0).data(), nullptr);
  if (lab::remote() == nullptr) return;  // the rest is about the judge's arena (1 GiB)
  // Nothing here writes the buffers, so their pages cost no memory.
  constexpr std::size_t kBig = std::size_t{400} << 20;
  auto first = std::make_unique<lab::HostBuffer<char>>(kBig);
  lab::HostBuffer<char> second(kBig);
  try {
    lab::HostBuffer<char> third(kBig);
    ADD_FAILURE() << "a third HostBuffer of 400 MiB fit in the judge's arena of 1024 MiB";
  } catch (const std::length_error& e) {
    EXPECT_NE(std::string(e.what()).find("1024.0 MiB"), std::string::npos) << e.what();
  }
  first.reset();  // its blocks are free again
  lab::HostBuffer<char> third(kBig);
  EXPECT_NE(third.data(), nullptr);
}

using HostProgramFn = decltype(vector_add_host);

// Device memory that is free now (device-wide: the judge's worker process counts too).
std::size_t free_device_bytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  LAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

double mib(double bytes) { return bytes / (1 << 20); }

// Allocations come in pages of 2 MiB and the driver keeps a little for itself, so device
// memory is compared with this much slack; every leak the tests look for is far larger.
constexpr double kLeakSlackBytes = 16.0 * (1 << 20);

// Runs `fn` on HostBuffers of seeded a and b and checks h_c = a + b exactly, that the 64
// floats after h_c[n - 1] are untouched, that a and b are unchanged, the status, and that
// kernel_ms is a plausible time for the kernel alone.
void check_host_program(HostProgramFn* fn, const char* name, int n, lab::Seed seed) {
  // Prepare: inputs, the CPU result (in a std::vector: the code under test must not see
  // it), and a poisoned output with a guard zone after it.
  const int guard = 64;
  const std::vector<float> a = lab::random_floats(n, -1000.0f, 1000.0f, seed);
  const std::vector<float> b = lab::random_floats(n, -1000.0f, 1000.0f, lab::derive_seed(seed, "b"));
  std::vector<float> expected(n);
  vector_add_cpu(a.data(), b.data(), expected.data(), n);
  lab::HostBuffer<float> ha(a), hb(b), hc(n + guard);
  hc.poison();

  // Run, timing the whole call on the host.
  const auto start = std::chrono::steady_clock::now();
  const HostRunResult result = fn(ha.data(), hb.data(), hc.data(), n);
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  // Verify.
  ASSERT_EQ(result.status, cudaSuccess) << name << " returned " << cudaGetErrorName(result.status) << " ("
                                        << cudaGetErrorString(result.status) << ")";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << name << " left a CUDA error behind that it did not report";
  const std::vector<float> c = hc.to_vector();
  EXPECT_ARRAY_EQ(expected, std::vector<float>(c.begin(), c.begin() + n))
      << "h_c = h_a + h_b must hold exactly for every element (NaN: never copied back)";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(guard, 0xFFFFFFFFu), lab::bits_of(std::vector<float>(c.begin() + n, c.end())))
      << name << " wrote past h_c[n - 1]: copy n * sizeof(float) bytes, not more";
  EXPECT_BITS_EQ(a, ha.to_vector()) << "input h_a was modified";
  EXPECT_BITS_EQ(b, hb.to_vector()) << "input h_b was modified";
  EXPECT_GT(result.kernel_ms, 0.0f) << "kernel_ms: the time between two events around the launch "
                                       "(cudaEventElapsedTime), which is never 0 for a real kernel";
  EXPECT_LT(result.kernel_ms, wall_ms) << "kernel_ms is longer than the whole call took (" << wall_ms << " ms)";
  if (n >= (1 << 24)) {
    // 12 bytes per element: even at 20 TB/s, far above any GPU's memory, the kernel takes
    // this long; and the copies of 12n bytes over the bus take many times the kernel's time.
    const double least_ms = 12.0 * n / 20e12 * 1e3;
    EXPECT_GT(result.kernel_ms, least_ms) << "kernel_ms is too short for a kernel that moves " << 12.0 * n / 1e6
                                          << " MB: record `start` before the launch and `stop` after it";
    EXPECT_LT(result.kernel_ms, 0.5 * wall_ms)
        << "kernel_ms is most of the call's " << wall_ms << " ms: time the kernel alone, not the copies";
  }
}

// h_c = h_a + h_b at sizes from one element to 2^24 (64 MiB per array).
void host_program_matches_cpu(HostProgramFn* fn, const char* name) {
  for (const int n : {1, 1000, (1 << 20) + 3, 1 << 24}) {
    const lab::Seed seed = lab::case_seed(name, n);
    SCOPED_TRACE(std::string(name) + ", n = " + std::to_string(n) + ", " + lab::seed_note(seed));
    check_host_program(fn, name, n, seed);
  }
}

// n = 0 copies nothing, writes nothing and reports success with no time. A real call
// comes first, so a function that does nothing at all cannot pass.
void host_program_zero_length(HostProgramFn* fn, const char* name) {
  {
    SCOPED_TRACE(std::string(name) + ", n = 33 first");
    check_host_program(fn, name, 33, lab::case_seed(name, 33));
  }
  lab::HostBuffer<float> ha(std::vector<float>(16, 1.0f)), hb(std::vector<float>(16, 2.0f)), hc(16);
  hc.poison();
  const HostRunResult result = fn(ha.data(), hb.data(), hc.data(), 0);
  EXPECT_EQ(result.status, cudaSuccess) << name << "(n = 0) returned " << cudaGetErrorName(result.status);
  EXPECT_EQ(result.kernel_ms, 0.0f) << "n = 0 launches nothing, so there is no kernel time";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << name << "(n = 0) left a CUDA error behind (a launch of 0 blocks?)";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(16, 0xFFFFFFFFu), lab::bits_of(hc.to_vector())) << "n = 0 writes nothing";
}

// Device memory is the same before and after four calls of 3 x 16 MiB each: every
// cudaMalloc has its cudaFree (a leak of even one array per call loses 64 MiB).
void host_program_frees_everything(HostProgramFn* fn, const char* name) {
  const int n = 1 << 22;
  const lab::Seed seed = lab::case_seed(name, n);
  SCOPED_TRACE(std::string(name) + ", n = 2^22, " + lab::seed_note(seed));
  lab::HostBuffer<float> ha(lab::random_floats(n, -1.0f, 1.0f, seed)), hb(std::vector<float>(n, 0.5f)), hc(n);
  // Warm up: the first call may load the kernel's code onto the GPU, which stays.
  ASSERT_EQ(fn(ha.data(), hb.data(), hc.data(), n).status, cudaSuccess);
  const std::size_t before = free_device_bytes();
  for (int call = 0; call < 4; ++call) {
    const HostRunResult result = fn(ha.data(), hb.data(), hc.data(), n);
    ASSERT_EQ(result.status, cudaSuccess) << "call " << call + 1 << " returned " << cudaGetErrorName(result.status);
  }
  const double lost = static_cast<double>(before) - static_cast<double>(free_device_bytes());
  EXPECT_LT(lost, kLeakSlackBytes) << "free device memory went down by " << mib(lost)
                                   << " MiB over 4 calls that each allocate 3 arrays of 16 MiB: every cudaMalloc "
                                      "needs its cudaFree";
}

// Holds device memory until only about `leave` bytes are free, as cudaMemGetInfo sees them
// (device-wide, so an allocation in the judge's worker process fails as one here would).
class DeviceMemoryHog {
 public:
  explicit DeviceMemoryHog(std::size_t leave) {
    for (std::size_t chunk = std::size_t{1} << 30; chunk >= (std::size_t{2} << 20); chunk /= 2) {
      while (free_device_bytes() >= leave + chunk) {
        void* block = nullptr;
        if (cudaMalloc(&block, chunk) != cudaSuccess) {
          (void)cudaGetLastError();  // this size no longer fits: try smaller ones
          break;
        }
        m_blocks.push_back(block);
      }
    }
  }
  ~DeviceMemoryHog() {
    for (void* block : m_blocks) LAB_CUDA_CHECK_NOEXCEPT(cudaFree(block));
  }
  DeviceMemoryHog(const DeviceMemoryHog&) = delete;
  DeviceMemoryHog& operator=(const DeviceMemoryHog&) = delete;

 private:
  std::vector<void*> m_blocks;
};

// An injected failure: all device memory but room for one array of 64 MiB is taken, so
// the function's first cudaMalloc succeeds and its second fails. It must return
// cudaErrorMemoryAllocation (the first error), leave h_c untouched, and free the array it
// did get: device memory afterwards is what it was before.
void host_program_reports_failed_allocation(HostProgramFn* fn, const char* name) {
  const int n = 1 << 24;
  const std::size_t array_bytes = static_cast<std::size_t>(n) * sizeof(float);
  const lab::Seed seed = lab::case_seed(name, 7);
  SCOPED_TRACE(std::string(name) + ", n = 2^24 with room for one array, " + lab::seed_note(seed));
  lab::HostBuffer<float> ha(lab::random_floats(n, -1.0f, 1.0f, seed)), hb(std::vector<float>(n, 0.5f)), hc(n);
  // Warm up (the kernel's code loaded, the worker started), then measure.
  ASSERT_EQ(fn(ha.data(), hb.data(), hc.data(), 1000).status, cudaSuccess);
  const std::size_t before = free_device_bytes();
  hc.poison();
  HostRunResult result{};
  {
    const DeviceMemoryHog hog(array_bytes + array_bytes / 2);
    const std::size_t left = free_device_bytes();
    ASSERT_LT(left, 2 * array_bytes) << "the test could not fill device memory (" << mib(left) << " MiB still free)";
    result = fn(ha.data(), hb.data(), hc.data(), n);
    // In this process (the student's test program) the runtime still records the failed
    // cudaMalloc as its last error; clear it, so that it is not reported again below.
    (void)cudaGetLastError();
  }
  EXPECT_EQ(result.status, cudaErrorMemoryAllocation)
      << name << " returned " << cudaGetErrorName(result.status)
      << ": when cudaMalloc fails, stop and return its error (the first error), after freeing what you allocated";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(n, 0xFFFFFFFFu), lab::bits_of(hc.to_vector()))
      << "after a failed allocation h_c must stay untouched: nothing was computed";
  const double lost = static_cast<double>(before) - static_cast<double>(free_device_bytes());
  EXPECT_LT(lost, kLeakSlackBytes) << "free device memory went down by " << mib(lost)
                                   << " MiB: when a later call fails, free what the earlier ones allocated";
  // And the function still works once memory is free again.
  check_host_program(fn, name, 1000, seed);
}

// vector_add_host: pageable host memory. Named like a registered variant's tests so that
// the grader finds the part's verdict (labs/vectorAdd/lab.json, "required_variants").
class PartHostProgramGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(PartHostProgramGpu, MatchesCpuAtEverySize) { host_program_matches_cpu(vector_add_host, "vector_add_host"); }
TEST_P(PartHostProgramGpu, ZeroLengthDoesNothing) { host_program_zero_length(vector_add_host, "vector_add_host"); }

INSTANTIATE_TEST_SUITE_P(Registered, PartHostProgramGpu, ::testing::Values(std::string("vector_add_host")),
                         lab::variant_test_name);

// vector_add_host_pinned: staged through page-locked buffers, the same checks.
class PartPinnedGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(PartPinnedGpu, MatchesCpuAtEverySize) {
  host_program_matches_cpu(vector_add_host_pinned, "vector_add_host_pinned");
}
TEST_P(PartPinnedGpu, ZeroLengthDoesNothing) {
  host_program_zero_length(vector_add_host_pinned, "vector_add_host_pinned");
}

INSTANTIATE_TEST_SUITE_P(Registered, PartPinnedGpu, ::testing::Values(std::string("vector_add_host_pinned")),
                         lab::variant_test_name);

// Leaks and an injected failure. These need the GPU to themselves: they read the
// device's free memory, and one fills it so that the function's cudaMalloc must fail. The
// grader tests several labs at once on one GPU, so they are not graded: its judge programs
// leave out suites named *OwnBuildOnly* (common/testing/test_main.cpp). Run them in your
// own build (vectorAdd_test, or CTest, which runs them alone).
class HostProgramOwnBuildOnlyGpu : public lab::GpuTestWithParam<std::string> {
 protected:
  static HostProgramFn* function(const std::string& name) {
    return name == "vector_add_host" ? vector_add_host : vector_add_host_pinned;
  }
};

TEST_P(HostProgramOwnBuildOnlyGpu, FreesEverything) {
  host_program_frees_everything(function(GetParam()), GetParam().c_str());
}
TEST_P(HostProgramOwnBuildOnlyGpu, ReportsAFailedAllocation) {
  host_program_reports_failed_allocation(function(GetParam()), GetParam().c_str());
}

INSTANTIATE_TEST_SUITE_P(BothVersions, HostProgramOwnBuildOnlyGpu,
                         ::testing::Values(std::string("vector_add_host"), std::string("vector_add_host_pinned")),
                         lab::variant_test_name);

// ---- Further part: launch overhead and kernel fusion (three_kernels, fused_kernel) ----------
// Both do the lecture's three steps `iterations` times (vectorAdd.h); the CPU test works
// them by hand, the GPU tests compare every x[i] and every counter exactly with
// fusion_steps_cpu (integers: the order of the atomics changes nothing). The suites are
// named like a registered variant's (Registered/PartThreeKernelsGpu.*/three_kernels,
// Registered/PartFusedKernelGpu.*/fused_kernel) so that the grader finds each part's verdict.

using FusionFn = decltype(fused_kernel);
using Uints = std::vector<unsigned int>;

constexpr int kFuseGuard = 64;  // unsigned ints checked after x and after hist

// x = 1 2 3, two iterations. t = 0: K1 gives 3 7 11 (3 x[i] + i), K2 counts bins 3, 7 and
// 11, K3 reverses the one short tile: 11 7 3. t = 1: K1 gives 33 22 11, K2 counts 33, 22
// and 11, K3 gives 11 22 33. hist starts at 5 in every bin and is added to.
TEST(FusionStepsCpu, HandComputedExample) {
  Uints x{1, 2, 3}, hist(kFuseBins, 5u);
  fusion_steps_cpu(x.data(), hist.data(), 3, 1);
  EXPECT_EQ(x, (Uints{11, 7, 3}));
  fusion_steps_cpu(x.data(), hist.data(), 3, 1);
  EXPECT_EQ(x, (Uints{11, 22, 33}));
  Uints expected(kFuseBins, 5u);
  for (const int bin : {3, 7, 11, 33, 22, 11}) ++expected[bin];
  EXPECT_EQ(hist, expected);
  // Tiles: 300 elements are a full tile of 256 reversed on its own and a tile of 44.
  Uints y(300, 0u), counts(kFuseBins, 0u);
  fusion_steps_cpu(y.data(), counts.data(), 300, 1);  // K1 on zeros gives y[i] = i
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 255u - i) << "i = " << i;
  for (int i = 256; i < 300; ++i) EXPECT_EQ(y[i], 256u + 299u - i) << "i = " << i;
  EXPECT_EQ(counts[0], 5u) << "0, 64, 128, 192 and 256 fall into bin 0";
  fusion_steps_cpu(y.data(), counts.data(), 0, 3);  // n = 0: nothing
  fusion_steps_cpu(y.data(), counts.data(), 300, 0);  // no iterations: nothing
  EXPECT_EQ(y[0], 255u);
}

Uints random_uints_full(std::size_t n, lab::Seed seed) {
  lab::Rng rng(seed);
  Uints v(n);
  for (unsigned int& e : v) e = static_cast<unsigned int>(rng.next());
  return v;
}

// Runs `fn` on device copies of x and hist and checks both exactly against the CPU, and
// that the kFuseGuard unsigned ints after each are untouched.
void check_fusion(FusionFn* fn, const Uints& x0, const Uints& hist0, int iterations) {
  // Prepare: the expected result on the CPU, then x and hist followed by their guards.
  const int n = static_cast<int>(x0.size());
  Uints x_expected = x0, hist_expected = hist0;
  fusion_steps_cpu(x_expected.data(), hist_expected.data(), n, iterations);
  Uints x_padded = x0, hist_padded = hist0;
  x_padded.insert(x_padded.end(), kFuseGuard, 0xFFFFFFFFu);
  hist_padded.insert(hist_padded.end(), kFuseGuard, 0xFFFFFFFFu);
  lab::DeviceBuffer<unsigned int> dx(x_padded), dhist(hist_padded);

  // Run.
  fn(dx.data(), dhist.data(), n, iterations);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const Uints x = dx.download(), hist = dhist.download();
  EXPECT_ARRAY_EQ(x_expected, Uints(x.begin(), x.begin() + n))
      << "x after " << iterations << " iteration(s) of K1, K2, K3 (vectorAdd.h gives each step)";
  EXPECT_ARRAY_EQ(hist_expected, Uints(hist.begin(), hist.begin() + kFuseBins))
      << "hist: each iteration adds 1 to hist[x[i] % " << kFuseBins << "] for every i, with K1's x; "
      << "hist is added to, not cleared";
  EXPECT_ARRAY_EQ(Uints(kFuseGuard, 0xFFFFFFFFu), Uints(x.begin() + n, x.end())) << "written past x[n - 1]";
  EXPECT_ARRAY_EQ(Uints(kFuseGuard, 0xFFFFFFFFu), Uints(hist.begin() + kFuseBins, hist.end()))
      << "written past hist[" << kFuseBins - 1 << "]";
}

void check_fusion_random(FusionFn* fn, const std::string& name, int n, int iterations) {
  const lab::Seed seed = lab::case_seed(name, 1000003ull * static_cast<unsigned>(n) + iterations);
  SCOPED_TRACE(name + ", n = " + std::to_string(n) + ", iterations = " + std::to_string(iterations) + ", " +
               lab::seed_note(seed));
  Uints hist0 = random_uints_full(kFuseBins, lab::derive_seed(seed, "hist"));
  for (unsigned int& h : hist0) h %= 1000u;  // counters already counting
  check_fusion(fn, random_uints_full(static_cast<std::size_t>(n), seed), hist0, iterations);
}

FusionFn* fusion_function(const std::string& name) { return name == "fused_kernel" ? fused_kernel : three_kernels; }

class PartThreeKernelsGpu : public lab::GpuTestWithParam<std::string> {};
class PartFusedKernelGpu : public lab::GpuTestWithParam<std::string> {};

// The worked example on the GPU: x = 1 2 3, two iterations.
void fusion_hand_example(FusionFn* fn) {
  Uints hist(kFuseBins, 5u);
  check_fusion(fn, Uints{1, 2, 3}, hist, 2);
}

// Sizes around the tile (256) and warp sizes, a few iterations, and 1 iteration.
void fusion_matches_cpu(FusionFn* fn, const std::string& name) {
  for (const int n : {1, 2, 31, 255, 256, 257, 511, 1000, 4099, 65537, (1 << 20) + 3}) {
    for (const int iterations : {1, 2, 7}) check_fusion_random(fn, name, n, iterations);
  }
}

// The lecture's regime: a small array and many iterations (launches cost more than the work).
void fusion_many_iterations(FusionFn* fn, const std::string& name) {
  check_fusion_random(fn, name, 1000, 200);
  check_fusion_random(fn, name, 3 * kFuseTile, 101);
}

// Calls in a row keep nothing from one call to the next; n = 0 and iterations = 0 do
// nothing (a real call comes first, so a function that does nothing cannot pass).
void fusion_calls_in_a_row(FusionFn* fn, const std::string& name) {
  const int n = 777;
  const lab::Seed seed = lab::case_seed(name + "_in_a_row", n);
  SCOPED_TRACE(name + ", calls in a row, n = 777, " + lab::seed_note(seed));
  Uints x = random_uints_full(n, seed), hist(kFuseBins, 0u);
  lab::DeviceBuffer<unsigned int> dx(x), dhist(hist);
  for (const int iterations : {3, 1, 4}) {
    fn(dx.data(), dhist.data(), n, iterations);
    fusion_steps_cpu(x.data(), hist.data(), n, iterations);
  }
  fn(dx.data(), dhist.data(), 0, 5);
  fn(dx.data(), dhist.data(), n, 0);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(x, dx.download()) << "x after calls with 3, 1 and 4 iterations, then n = 0 and iterations = 0";
  EXPECT_ARRAY_EQ(hist, dhist.download()) << "hist after the same calls (n = 0 and iterations = 0 add nothing)";
}

TEST_P(PartThreeKernelsGpu, HandExample) { fusion_hand_example(fusion_function(GetParam())); }
TEST_P(PartThreeKernelsGpu, MatchesCpuAtEverySize) { fusion_matches_cpu(fusion_function(GetParam()), GetParam()); }
TEST_P(PartThreeKernelsGpu, ManyIterations) { fusion_many_iterations(fusion_function(GetParam()), GetParam()); }
TEST_P(PartThreeKernelsGpu, CallsInARow) { fusion_calls_in_a_row(fusion_function(GetParam()), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Registered, PartThreeKernelsGpu, ::testing::Values(std::string("three_kernels")),
                         lab::variant_test_name);

TEST_P(PartFusedKernelGpu, HandExample) { fusion_hand_example(fusion_function(GetParam())); }
TEST_P(PartFusedKernelGpu, MatchesCpuAtEverySize) { fusion_matches_cpu(fusion_function(GetParam()), GetParam()); }
TEST_P(PartFusedKernelGpu, ManyIterations) { fusion_many_iterations(fusion_function(GetParam()), GetParam()); }
TEST_P(PartFusedKernelGpu, CallsInARow) { fusion_calls_in_a_row(fusion_function(GetParam()), GetParam()); }

INSTANTIATE_TEST_SUITE_P(Registered, PartFusedKernelGpu, ::testing::Values(std::string("fused_kernel")),
                         lab::variant_test_name);

// ---- Further part: streams (independent_chains) ----------------------------------------------
// `chains` arrays of n elements, each taking `steps` steps of chain_step (vectorAdd.h), on
// the default stream (streams = 1) or spread over streams of the implementation's own. The
// GPU tests compare every element exactly with independent_chains_cpu, for one stream and
// for 2, 3, 8 and 16 (more streams than chains too), and check that nothing is written past
// x. The suite is named like a registered variant's
// (Registered/PartIndependentChainsGpu.*/independent_chains) so that the grader finds the
// part's verdict.

constexpr int kChainGuard = 64;  // unsigned ints checked after the last chain

// chain_step, written out with 64-bit arithmetic cut to 32 bits: the header's formula.
unsigned int chain_step_by_hand(unsigned int v) {
  std::uint64_t w = v;
  for (int r = 0; r < kChainRounds; ++r) w = (((w ^ (w >> 16)) * 0x45d9f3bull) + 1ull) & 0xFFFFFFFFull;
  return static_cast<unsigned int>(w);
}

// The CPU version: chain c is x[c · n .. c · n + n − 1], every element takes `steps` steps.
TEST(IndependentChainsCpu, ChainsLieOneAfterTheOther) {
  EXPECT_EQ(chain_step(0u), chain_step_by_hand(0u));
  EXPECT_EQ(chain_step(0xDEADBEEFu), chain_step_by_hand(0xDEADBEEFu));
  EXPECT_NE(chain_step(1u), chain_step(2u));
  Uints x{0, 1, 2, 10, 11, 12};
  independent_chains_cpu(x.data(), 3, 2, 2);
  Uints expected{0, 1, 2, 10, 11, 12};
  for (unsigned int& v : expected) v = chain_step_by_hand(chain_step_by_hand(v));
  EXPECT_EQ(x, expected);
  independent_chains_cpu(x.data(), 3, 1, 1);  // the first chain only
  for (int i = 0; i < 3; ++i) expected[i] = chain_step_by_hand(expected[i]);
  EXPECT_EQ(x, expected);
  independent_chains_cpu(x.data(), 0, 2, 3);  // nothing
  independent_chains_cpu(x.data(), 3, 0, 3);
  independent_chains_cpu(x.data(), 3, 2, 0);
  EXPECT_EQ(x, expected);
}

// Runs independent_chains on a device copy of x0 (followed by a guard) with `streams`
// streams, reads it back on the default stream right away (the contract: later work there
// sees the result), and compares every element with `expected`.
void check_chains(const Uints& x0, const Uints& expected, int n, int chains, int steps, int streams) {
  SCOPED_TRACE("n = " + std::to_string(n) + ", chains = " + std::to_string(chains) + ", steps = " +
               std::to_string(steps) + ", streams = " + std::to_string(streams));
  Uints padded = x0;
  padded.insert(padded.end(), kChainGuard, 0xFFFFFFFFu);
  lab::DeviceBuffer<unsigned int> dx(padded);

  independent_chains(dx.data(), n, chains, steps, streams);
  LAB_CUDA_CHECK(cudaGetLastError());

  const Uints x = dx.download();  // a copy on the default stream: no cudaDeviceSynchronize first
  const std::size_t total = x0.size();
  EXPECT_ARRAY_EQ(expected, Uints(x.begin(), x.begin() + total))
      << "chain c is x[c * n] .. x[c * n + n - 1]; each of its elements takes `steps` steps of chain_step";
  EXPECT_ARRAY_EQ(Uints(kChainGuard, 0xFFFFFFFFu), Uints(x.begin() + total, x.end()))
      << "written past the last chain, x[chains * n - 1]";
}

Uints chains_input(const std::string& name, int n, int chains) {
  return random_uints_full(static_cast<std::size_t>(n) * chains,
                           lab::case_seed(name, 1000003ull * static_cast<unsigned>(n) + chains));
}

class PartIndependentChainsGpu : public lab::GpuTestWithParam<std::string> {};

// Two chains of three elements, two steps each: every element is chain_step twice.
TEST_P(PartIndependentChainsGpu, TwoShortChains) {
  const Uints x0{0, 1, 2, 10, 11, 12};
  Uints expected = x0;
  for (unsigned int& v : expected) v = chain_step_by_hand(chain_step_by_hand(v));
  for (const int streams : {1, 2}) check_chains(x0, expected, 3, 2, 2, streams);
}

// Sizes on both sides of the warp and block sizes, 1 to 16 chains, 1 to 4 steps; one stream,
// and 2, 3, 8 and 16 of your own (more streams than chains too).
TEST_P(PartIndependentChainsGpu, MatchesCpuWithAnyNumberOfStreams) {
  struct Case {
    int n, chains, steps;
  };
  for (const Case c : {Case{1, 1, 1}, Case{33, 3, 2}, Case{256, 8, 3}, Case{257, 16, 2}, Case{300, 1, 4},
                       Case{1000, 5, 2}, Case{4099, 2, 1}, Case{65537, 2, 1}}) {
    const Uints x0 = chains_input(GetParam(), c.n, c.chains);
    Uints expected = x0;
    independent_chains_cpu(expected.data(), c.n, c.chains, c.steps);
    for (const int streams : {1, 2, 3, 8, kMaxChainStreams}) check_chains(x0, expected, c.n, c.chains, c.steps, streams);
  }
}

// Calls in a row on the same chains, with other numbers of streams, compose; n = 0,
// chains = 0 and steps = 0 do nothing (a real call comes first, so that a function that
// does nothing cannot pass).
TEST_P(PartIndependentChainsGpu, CallsInARow) {
  const int n = 777, chains = 6;
  Uints x = chains_input(GetParam() + "_in_a_row", n, chains);
  lab::DeviceBuffer<unsigned int> dx(x);
  const struct {
    int steps, streams;
  } calls[] = {{2, 8}, {1, 1}, {3, 3}, {1, kMaxChainStreams}};
  for (const auto& call : calls) {
    independent_chains(dx.data(), n, chains, call.steps, call.streams);
    independent_chains_cpu(x.data(), n, chains, call.steps);
  }
  independent_chains(dx.data(), 0, chains, 5, 4);
  independent_chains(dx.data(), n, 0, 5, 4);
  independent_chains(dx.data(), n, chains, 0, 4);
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(x, dx.download()) << "after calls with 2, 1, 3 and 1 steps on 8, 1, 3 and 16 streams, then "
                                       "n = 0, chains = 0 and steps = 0";
}

// Forty calls of 16 streams each: streams made at every call and never destroyed would
// pile up (the grader's timer follows at most 64 streams of yours at once and refuses more).
TEST_P(PartIndependentChainsGpu, ManyCallsWithSixteenStreams) {
  const int n = 33, chains = kMaxChainStreams, calls = 40;
  Uints x = chains_input(GetParam() + "_many_calls", n, chains);
  lab::DeviceBuffer<unsigned int> dx(x);
  for (int call = 0; call < calls; ++call) independent_chains(dx.data(), n, chains, 1, kMaxChainStreams);
  independent_chains_cpu(x.data(), n, chains, calls);
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(x, dx.download()) << "after 40 calls of one step on 16 streams";
}

INSTANTIATE_TEST_SUITE_P(Registered, PartIndependentChainsGpu, ::testing::Values(std::string("independent_chains")),
                         lab::variant_test_name);


}  // namespace
