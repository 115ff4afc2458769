// Provided by the kit: do not edit. Times vector_add.
//
//   ./build/dev/bin/vectorAdd_bench                 default size 2^26 floats
//   ./build/dev/bin/vectorAdd_bench --size 1000000  another size
//
// Two kinds of workload:
//  1. the kernel alone on device data (graded, at two sizes: 2^26 and 30,000,001, an odd
//     size that is a multiple of no block or vector width; the grade is the geometric
//     mean of the two ratios to the reference): GB/s = 3 arrays x 4 bytes x n / time,
//     beside a device-to-device cudaMemcpy, which bounds what any kernel can reach;
//  2. end to end at 2^26: copy a and b to the GPU, add, copy c back, from pageable and
//     from pinned host memory. Compare it with the kernel alone to see where the time goes;
//  3. the further part, launch overhead and kernel fusion: three_kernels (3 launches per
//     iteration) and fused_kernel (one launch in all) on the lecture's kind of problem, a
//     small array (2^16 elements) and 100 iterations: compare the two rows' times. Not
//     scored, but the question fused_kernel_ms reads your fused_kernel's time from it, so
//     the grader's run (--graded-only) times it too.
//  4. the further part, streams: independent_chains on 8 chains of 1024 elements, 8 steps
//     each (64 small kernels), on one stream and on 8 streams of its own: compare the rows.
// The CPU version is timed with the sdkTimer API for the speedup columns.
#include <algorithm>
#include <cstring>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"
#include "vectorAdd.h"

namespace {

// Host memory the CUDA driver can copy from directly (page-locked), freed on exit.
struct PinnedFloats {
  float* p = nullptr;
  explicit PinnedFloats(std::size_t n) { LAB_CUDA_CHECK(cudaMallocHost(&p, n * sizeof(float))); }
  ~PinnedFloats() { LAB_CUDA_CHECK_NOEXCEPT(cudaFreeHost(p)); }
  PinnedFloats(const PinnedFloats&) = delete;
  PinnedFloats& operator=(const PinnedFloats&) = delete;
};

// The expected result of fresh data: the bench's own kernel, which the student's code
// never touches. One IEEE addition per element, so it matches any correct kernel bit
// for bit.
__global__ void expected_sum_kernel(const float* a, const float* b, float* c, int n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < static_cast<std::size_t>(n);
       i += stride) {
    c[i] = a[i] + b[i];
  }
}

// Data set 0 of n floats: a and b uniform in [-1000, 1000), and their sum.
struct HostData {
  std::vector<float> a, b, expected;
  explicit HostData(int n)
      : a(lab::random_floats(n, -1000.0f, 1000.0f, lab::case_seed("bench_a"))),
        b(lab::random_floats(n, -1000.0f, 1000.0f, lab::case_seed("bench_b"))),
        expected(n) {
    vector_add_cpu(a.data(), b.data(), expected.data(), n);
  }
};

// Times the kernel alone on n floats (a graded workload). Set 0 of the inputs (made
// here) serves the warm-up and the CPU; every timed call gets fresh a and b, written on
// the GPU, with their sum as the expected result: a result replayed or cached from an
// earlier call fails the check.
void run_kernel(lab::bench::Harness& h, int n) {
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);
  const HostData set0(n);
  const std::vector<float>& a = set0.a;
  const std::vector<float>& b = set0.b;
  std::vector<float> c_host(n);
  lab::DeviceBuffer<float> da(a), db(b), dc(n);
  lab::DeviceBuffer<float> d_expected[2] = {lab::DeviceBuffer<float>(set0.expected), lab::DeviceBuffer<float>(n)};
  lab::bench::PristineInputs inputs;
  inputs.watch("a", da);
  inputs.watch("b", db);

  using Fn = decltype(vector_add);
  lab::bench::Workload kernel;
  kernel.name = "vector_add n=" + std::to_string(n);
  kernel.function = "vector_add";
  kernel.graded = true;
  kernel.unit = "GB/s";
  kernel.amount = 3.0 * bytes;  // read a and b, write c
  kernel.peak = h.device().peak_dram_gbps;
  inputs.use_fresh_in(kernel, [&](lab::Seed seed) {
    lab::bench::fill_uniform(da.data(), n, -1000.0f, 1000.0f, seed);
    lab::bench::fill_uniform(db.data(), n, -1000.0f, 1000.0f, lab::derive_seed(seed, "b"));
    expected_sum_kernel<<<4096, 256>>>(da.data(), db.data(), d_expected[inputs.fresh_set()].data(), n);
    LAB_CHECK_LAUNCH();
  });
  kernel.prepare = [&] { dc.poison(); };
  kernel.check = [&] { return lab::bench::check_equal_device(d_expected[inputs.current()].data(), dc.data(), n); };
  kernel.inputs_check = [&] { return inputs.check(); };
  kernel.cpu = [&] { vector_add_cpu(a.data(), b.data(), c_host.data(), n); };
  h.add_implementations<Fn>(kernel, "vector_add", vector_add,
                            [&](Fn* fn) { return [&, fn] { fn(da.data(), db.data(), dc.data(), n); }; });
  h.add_candidate(kernel, lab::bench::memcpy_roofline(dc.data(), da.data(), bytes,
                                                      "device-to-device copy of one array: the practical DRAM bound"));
  h.run(kernel);
}

// The further part: the lecture's three small kernels, launched 3 x `iterations` times
// (three_kernels), against one fused launch (fused_kernel), on n elements. Not graded: it
// shows what the launches cost. Every call starts from the same x and zeroed counters
// (restored before it, untimed) and is checked against the CPU's result.
void run_fusion(lab::bench::Harness& h, int n, int iterations) {
  std::vector<unsigned int> x0(n), x_expected, hist_expected(kFuseBins, 0u);
  lab::Rng rng(lab::case_seed("bench_fusion"));
  for (unsigned int& v : x0) v = static_cast<unsigned int>(rng.next());
  x_expected = x0;
  fusion_steps_cpu(x_expected.data(), hist_expected.data(), n, iterations);
  lab::DeviceBuffer<unsigned int> dx0(x0), dx(n), dhist(kFuseBins), dx_expected(x_expected),
      dhist_expected(hist_expected);
  std::vector<unsigned int> x_cpu(n), hist_cpu(kFuseBins);

  using FusionFn = decltype(fused_kernel);
  lab::bench::Workload w;
  // The name the question fused_kernel_ms gives as its "workload" (labs/vectorAdd/lab.json).
  w.name = "kernel fusion n=" + std::to_string(n) + " iterations=" + std::to_string(iterations);
  w.function = "fused_kernel";
  w.unit = "Gsteps/s";
  w.amount = static_cast<double>(n) * iterations;  // one element through K1, K2 and K3 once
  w.prepare = [&] {
    LAB_CUDA_CHECK(cudaMemcpy(dx.data(), dx0.data(), sizeof(unsigned int) * n, cudaMemcpyDeviceToDevice));
    LAB_CUDA_CHECK(cudaMemset(dhist.data(), 0, sizeof(unsigned int) * kFuseBins));
  };
  w.check = [&]() -> std::string {
    const std::string x_check = lab::bench::check_equal_device(dx_expected.data(), dx.data(), n);
    if (!x_check.empty()) return "x: " + x_check;
    const std::string hist_check = lab::bench::check_equal_device(dhist_expected.data(), dhist.data(), kFuseBins);
    return hist_check.empty() ? "" : "hist: " + hist_check;
  };
  w.cpu = [&] {
    x_cpu = x0;
    std::fill(hist_cpu.begin(), hist_cpu.end(), 0u);
    fusion_steps_cpu(x_cpu.data(), hist_cpu.data(), n, iterations);
  };
  auto bind = [&](FusionFn* fn) { return [&, fn] { fn(dx.data(), dhist.data(), n, iterations); }; };
  using lab::bench::Candidate;
  using lab::bench::Role;
  const std::string launches = std::to_string(3 * iterations);
  h.add_candidate(w, Candidate{"fused (yours)", Role::Student, bind(fused_kernel),
                               "your fused_kernel: one launch, the loop inside the kernel"});
  h.add_candidate(w, Candidate{"three kernels (yours)", Role::Variant, bind(three_kernels),
                               "your three_kernels: K1, K2, K3 per iteration, " + launches + " launches"});
  if (h.reference().loaded()) {
    const lab::VariantRegistry& ref = *h.reference().registry();
    if (FusionFn* fn = ref.get<FusionFn>("fused_kernel", "default")) {
      h.add_candidate(w, Candidate{"fused (reference)", Role::Reference, bind(fn), "the reference's fused_kernel"});
    }
    if (FusionFn* fn = ref.get<FusionFn>("three_kernels", "default")) {
      h.add_candidate(w, Candidate{"three kernels (reference)", Role::Variant, bind(fn),
                                   "the reference's three_kernels, " + launches + " launches"});
    }
  }
  h.run(w);
  if (h.times_everything()) std::printf("(3 launches per iteration vs one launch; Gsteps/s = n x iterations / time)\n");
}

// The further part on streams: independent_chains with every launch on the default stream
// (streams = 1) and with each of the `chains` chains on a stream of its own. Not graded: it
// shows what independent kernels that each leave most of the GPU idle gain from streams.
// Every call starts from the same x (restored before it, untimed) and is checked against
// the CPU's result; the timer's stop event waits for the implementation's streams.
void run_chains(lab::bench::Harness& h, int n, int chains, int steps) {
  const std::size_t total = static_cast<std::size_t>(n) * chains;
  std::vector<unsigned int> x0(total);
  lab::Rng rng(lab::case_seed("bench_chains"));
  for (unsigned int& v : x0) v = static_cast<unsigned int>(rng.next());
  std::vector<unsigned int> x_expected = x0;
  independent_chains_cpu(x_expected.data(), n, chains, steps);
  lab::DeviceBuffer<unsigned int> dx0(x0), dx(total), dx_expected(x_expected);

  using ChainsFn = decltype(independent_chains);
  lab::bench::Workload w;
  w.name = "streams: " + std::to_string(chains) + " independent chains of n=" + std::to_string(n) + ", " +
           std::to_string(steps) + " steps each (" + std::to_string(chains * steps) +
           " launches); one stream vs one stream per chain; Gsteps/s = chains x n x steps / time";
  w.function = "independent_chains";
  w.unit = "Gsteps/s";
  w.amount = static_cast<double>(total) * steps;  // one element through one chain_step
  w.prepare = [&] {
    LAB_CUDA_CHECK(cudaMemcpy(dx.data(), dx0.data(), sizeof(unsigned int) * total, cudaMemcpyDeviceToDevice));
  };
  w.check = [&]() -> std::string { return lab::bench::check_equal_device(dx_expected.data(), dx.data(), total); };
  auto bind = [&](ChainsFn* fn, int streams) {
    return [&, fn, streams] { fn(dx.data(), n, chains, steps, streams); };
  };
  using lab::bench::Candidate;
  using lab::bench::Role;
  const std::string per_chain = std::to_string(chains) + " streams, one per chain";
  h.add_candidate(w, Candidate{"streams (yours)", Role::Student, bind(independent_chains, chains),
                               "your independent_chains on " + per_chain});
  h.add_candidate(w, Candidate{"one stream (yours)", Role::Variant, bind(independent_chains, 1),
                               "your independent_chains with streams = 1: every launch on the default stream"});
  if (h.reference().loaded()) {
    const lab::VariantRegistry& ref = *h.reference().registry();
    if (ChainsFn* fn = ref.get<ChainsFn>("independent_chains", "default")) {
      h.add_candidate(w, Candidate{"streams (reference)", Role::Reference, bind(fn, chains),
                                   "the reference's independent_chains on " + per_chain});
      h.add_candidate(w, Candidate{"one stream (reference)", Role::Variant, bind(fn, 1),
                                   "the reference's independent_chains on the default stream"});
    }
  }
  h.run(w);
}

// End to end, with the copies a real program must make (not graded).
void run_end_to_end(lab::bench::Harness& h) {
  const int n = static_cast<int>(h.size_or(1 << 26));
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);
  const HostData set0(n);
  const std::vector<float>& a = set0.a;
  const std::vector<float>& b = set0.b;
  const std::vector<float>& expected = set0.expected;
  std::vector<float> c_host(n);
  lab::DeviceBuffer<float> da(n), db(n), dc(n);
  using Fn = decltype(vector_add);
  PinnedFloats pa(n), pb(n), pc(n);
  std::memcpy(pa.p, a.data(), bytes);
  std::memcpy(pb.p, b.data(), bytes);
  float* c_out = nullptr;  // where the end-to-end candidate under test left its result
  lab::bench::Workload e2e;
  e2e.name = "vector_add end to end (copies included) n=" + std::to_string(n);
  e2e.function = "vector_add";
  e2e.unit = "GB/s";
  e2e.amount = 3.0 * bytes;  // a and b to the GPU, c back
  e2e.prepare = [&] {
    std::memset(c_host.data(), 0xFF, bytes);
    std::memset(pc.p, 0xFF, bytes);
  };
  e2e.check = [&]() -> std::string {
    return std::memcmp(c_out, expected.data(), bytes) == 0 ? "" : "result copied back differs from a + b";
  };
  auto end_to_end = [&](Fn* fn, const float* ha, const float* hb, float* hc) {
    return [&, fn, ha, hb, hc] {
      LAB_CUDA_CHECK(cudaMemcpy(da.data(), ha, bytes, cudaMemcpyHostToDevice));
      LAB_CUDA_CHECK(cudaMemcpy(db.data(), hb, bytes, cudaMemcpyHostToDevice));
      fn(da.data(), db.data(), dc.data(), n);
      LAB_CUDA_CHECK(cudaMemcpy(hc, dc.data(), bytes, cudaMemcpyDeviceToHost));
      c_out = hc;
    };
  };
  h.add_candidate(e2e, {"student, pageable", lab::bench::Role::Variant, end_to_end(vector_add, a.data(), b.data(), c_host.data()),
                        "copies from ordinary (pageable) host memory"});
  h.add_candidate(e2e, {"student, pinned", lab::bench::Role::Variant, end_to_end(vector_add, pa.p, pb.p, pc.p),
                        "copies from page-locked host memory (cudaMallocHost)"});
  h.run(e2e);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  for (const long long size : lab::bench::graded_sizes(h, 1 << 26)) run_kernel(h, static_cast<int>(size));
  if (h.times_everything()) run_end_to_end(h);  // --graded-only: in no grade
  // The further part: launch overhead and kernel fusion (the lecture's small problem).
  // Timed with --graded-only too: the question fused_kernel_ms reads its figure from it.
  run_fusion(h, 1 << 16, 100);

  // The further part: streams (independent small kernels, each leaving most of the GPU idle).
  if (h.times_everything()) run_chains(h, 1024, 8, 8);  // --graded-only: in no grade
  return h.finish();
}
