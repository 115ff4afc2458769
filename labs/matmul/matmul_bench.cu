// Provided by the kit: do not edit. Times matmul, beside cuBLAS.
//
//   ./build/dev/bin/matmul_bench                     graded shapes 4096^3 and 2999 x 1999 x 4001
//   ./build/dev/bin/matmul_bench --size 2048         only one graded shape, m = k = n = 2048
//   ./build/dev/bin/matmul_bench --filter tiled      only the variants whose name holds "tiled"
//
// Four workloads, all in GFLOP/s = 2 · m · n · k / time (one multiply and one add per
// term of every sum), beside the device's FP32 peak, with cuBLAS SGEMM in FP32 as the
// library to beat:
//  1. 4096 x 4096 x 4096 (graded; with --size N, N x N x N and no workload 2);
//  2. m x k x n = 2999 x 1999 x 4001 (graded): not square, no size a multiple of a tile
//     or of a float4, so the edge tiles and the scalar paths are timed too;
//  3. 512 x 512 x 512, with the CPU version timed (sdkTimer) for the speedup columns: at
//     4096 the CPU's triple loop would take minutes;
//  4. m x k x n = 1000 x 1500 x 700: a smaller odd shape.
// The grade is the geometric mean of the ratios (your time / the reference's) of the
// graded workloads 1 and 2; --graded-only times only those.
// Every timed output is checked: against cuBLAS's result (workloads 1, 2 and 4; cuBLAS
// itself is spot-checked against the CPU's double sums first) or against the CPU's result
// (3), element by element within the rounding tolerance of matmul.h. Every timed call of a
// graded workload gets a fresh A and B, written on the GPU by the bench, with its expected
// C (cuBLAS) and error scale computed there too: a result replayed from an earlier call,
// or cached per data set recognised by a few of its values, fails the check.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/bench_helpers.h"
#include "lab/buffer.h"
#include "matmul.h"

namespace {

// cuBLAS returns a cublasStatus_t, not a cudaError_t: this turns a failure into an
// exception with the file, line, status name and the call.
#define LAB_CUBLAS_CHECK(call)                                                                         \
  do {                                                                                                 \
    const cublasStatus_t lab_status_ = (call);                                                         \
    if (lab_status_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": cuBLAS " + \
                               cublasGetStatusName(lab_status_) + " in `" #call "`");                  \
    }                                                                                                  \
  } while (false)

// One cuBLAS handle for the whole run, with its workspace allocated here, once, so that no
// timed call allocates memory.
class Cublas {
 public:
  Cublas() : m_workspace(kWorkspaceBytes) {
    LAB_CUBLAS_CHECK(cublasCreate(&m_handle));
    // FP32 as the lab asks, no TF32: CUBLAS_DEFAULT_MATH keeps single-precision routines
    // on the FP32 units. CUBLAS_TF32_TENSOR_OP_MATH (or NVIDIA_TF32_OVERRIDE) would let
    // cuBLAS round the inputs to TF32's 10-bit mantissa and use tensor cores, about 8x
    // faster (433 TFLOP/s on an H100) and not the same computation as the students' FP32
    // kernels. CUBLAS_PEDANTIC_MATH would also forbid internal shortcuts, but the kit
    // measures against cuBLAS as programs normally run it, so the default it is.
    LAB_CUBLAS_CHECK(cublasSetMathMode(m_handle, CUBLAS_DEFAULT_MATH));
    LAB_CUBLAS_CHECK(cublasSetWorkspace(m_handle, m_workspace.data(), m_workspace.bytes()));
  }
  ~Cublas() {
    if (cublasDestroy(m_handle) != CUBLAS_STATUS_SUCCESS) std::fprintf(stderr, "warning: cublasDestroy failed\n");
  }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  /// C = A · B for row-major matrices, on the default stream. cuBLAS is column-major: a
  /// row-major m x n matrix is its n x m transpose in column-major order, so compute
  /// C^T = B^T · A^T, i.e. call it with (n, m, k) and B before A.
  void matmul(const float* A, const float* B, float* C, int m, int k, int n) const {
    if (m <= 0 || n <= 0) return;
    const float one = 1.0f, zero = 0.0f;
    LAB_CUBLAS_CHECK(cublasSgemm(m_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B, n, A, std::max(k, 1), &zero,
                                 C, n));
  }

  /// matmul with TF32 tensor cores (inputs rounded to a 10-bit mantissa, FP32 sums): a
  /// few times faster than FP32, for the error scale of fresh data only. Its relative
  /// error on a sum of products of |A| and |B|, all terms >= 0, stays below 2^-9 for the
  /// rounded inputs plus k · 2^-23 for the sums (0.25% at k = 4096): inside the 1% margin
  /// the check gives the magnitude (run_workload). Never used for an expected C.
  void matmul_tf32(const float* A, const float* B, float* C, int m, int k, int n) const {
    if (m <= 0 || n <= 0) return;
    const float one = 1.0f, zero = 0.0f;
    LAB_CUBLAS_CHECK(cublasGemmEx(m_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, B, CUDA_R_32F, n, A, CUDA_R_32F,
                                  std::max(k, 1), &zero, C, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32,
                                  CUBLAS_GEMM_DEFAULT));
  }

 private:
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;  // cuBLAS's recommendation for Hopper (4 MiB before)
  cublasHandle_t m_handle = nullptr;
  lab::DeviceBuffer<unsigned char> m_workspace;
};

// Counts the elements with |actual - reference| > factor · magnitude + abs_tol (NaN too).
__global__ void count_outside_kernel(const float* actual, const float* reference, const float* magnitude,
                                     std::size_t count, float factor, float abs_tol, unsigned long long* bad) {
  unsigned long long mine = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (!(fabsf(actual[i] - reference[i]) <= factor * magnitude[i] + abs_tol)) ++mine;
  }
  if (mine > 0) atomicAdd(bad, mine);
}

__global__ void abs_kernel(const float* in, float* out, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = fabsf(in[i]);
  }
}

int blocks_for(std::size_t count) { return static_cast<int>(std::min<std::size_t>((count + 255) / 256, 4096)); }

// The expected C and its per-element error scale on the device, and the check of a
// timed output against them.
class Expected {
 public:
  Expected(std::size_t count, int k, double factor) : m_ref(count), m_magnitude(count), m_bad(1), m_count(count) {
    // factor · k · 2^-24 · magnitude, as in matmul_tolerance().
    m_factor = static_cast<float>(factor * k * kMatmulUnitRoundoff);
  }
  float* reference() { return m_ref.data(); }
  float* magnitude() { return m_magnitude.data(); }

  /// "" when every element of `actual` (device) is within tolerance of the reference.
  std::string check(const float* actual, const char* against) {
    LAB_CUDA_CHECK(cudaMemset(m_bad.data(), 0, sizeof(unsigned long long)));
    count_outside_kernel<<<blocks_for(m_count), 256>>>(actual, m_ref.data(), m_magnitude.data(), m_count, m_factor,
                                                       static_cast<float>(kMatmulAbsoluteTolerance), m_bad.data());
    LAB_CHECK_LAUNCH();
    const unsigned long long bad = m_bad.download()[0];
    if (bad == 0) return "";
    return std::to_string(bad) + " of " + std::to_string(m_count) + " elements of C differ from " + against +
           " by more than the rounding tolerance";
  }

 private:
  lab::DeviceBuffer<float> m_ref, m_magnitude;
  lab::DeviceBuffer<unsigned long long> m_bad;
  std::size_t m_count;
  float m_factor = 0;
};

// Compares the library's result with the CPU's double sums at `samples` random elements:
// the kit trusts cuBLAS as the reference of the large workloads only after this.
std::string spot_check(const std::vector<float>& A, const std::vector<float>& B, const float* d_C, int m, int k, int n,
                       lab::Seed seed, int samples = 64) {
  lab::Rng rng(seed);
  for (int s = 0; s < samples; ++s) {
    const int i = static_cast<int>(rng.below(m)), j = static_cast<int>(rng.below(n));
    double sum = 0, magnitude = 0;
    for (int l = 0; l < k; ++l) {
      const double a = A[static_cast<std::size_t>(i) * k + l], b = B[static_cast<std::size_t>(l) * n + j];
      sum += a * b;
      magnitude += std::fabs(a) * std::fabs(b);
    }
    float got = 0;
    LAB_CUDA_CHECK(cudaMemcpy(&got, d_C + static_cast<std::size_t>(i) * n + j, sizeof(float), cudaMemcpyDeviceToHost));
    if (!(std::fabs(got - sum) <= matmul_tolerance(k, magnitude))) {
      return "cuBLAS's C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " + std::to_string(got) +
             " differs from the CPU's " + std::to_string(sum) + ": the library reference is not trustworthy";
    }
  }
  return "";
}

// Times every version on one m x k x n problem with random A and B in [-1, 1).
// `cpu_reference`: check against the CPU's result (and time the CPU version); otherwise
// against cuBLAS's. `graded`: fresh A and B before every timed call (set 0 for the rest).
void run_workload(lab::bench::Harness& h, const Cublas& cublas, int m, int k, int n, bool graded, bool cpu_reference,
                  const std::string& note) {
  const std::size_t na = static_cast<std::size_t>(m) * k, nb = static_cast<std::size_t>(k) * n;
  const std::size_t nc = static_cast<std::size_t>(m) * n;
  const lab::Seed seed = lab::case_seed("bench_matmul", (static_cast<std::uint64_t>(m) * 65537 + k) * 65537 + n);
  const std::vector<float> A = lab::random_floats(na, -1.0f, 1.0f, seed);
  const std::vector<float> B = lab::random_floats(nb, -1.0f, 1.0f, lab::derive_seed(seed, "B"));
  lab::DeviceBuffer<float> dA(A), dB(B), dC(nc);
  lab::bench::PristineInputs inputs;
  inputs.watch("A", dA);
  inputs.watch("B", dB);

  // The expected result. Against the CPU: the CPU's error is one rounding, so the
  // tolerance of matmul.h applies as it is. Against cuBLAS: both results carry rounding
  // errors, so twice that, and 1% more for the magnitude, which cuBLAS computes in float
  // (in TF32 for fresh data: Cublas::matmul_tf32 says why that stays inside the 1%).
  const double factor = cpu_reference ? kMatmulErrorFactor : 2.0 * kMatmulErrorFactor * 1.01;
  const char* against = cpu_reference ? "the CPU's result" : "cuBLAS's result";
  // |A| and |B|, whose product is the magnitude sum_l |A[i][l]| |B[l][j]|: allocated once,
  // since the graded workload's fresh data needs them before every timed call.
  const bool on_gpu = graded || !cpu_reference;
  lab::DeviceBuffer<float> abs_a(on_gpu ? na : 0), abs_b(on_gpu ? nb : 0);
  // C and its magnitude for the A and B that dA and dB hold now, on the GPU.
  auto compute_on_gpu = [&](Expected& result, bool tf32_magnitude) {
    cublas.matmul(dA.data(), dB.data(), result.reference(), m, k, n);
    abs_kernel<<<blocks_for(na), 256>>>(dA.data(), abs_a.data(), na);
    LAB_CHECK_LAUNCH();
    abs_kernel<<<blocks_for(nb), 256>>>(dB.data(), abs_b.data(), nb);
    LAB_CHECK_LAUNCH();
    if (tf32_magnitude) {
      cublas.matmul_tf32(abs_a.data(), abs_b.data(), result.magnitude(), m, k, n);
    } else {
      cublas.matmul(abs_a.data(), abs_b.data(), result.magnitude(), m, k, n);
    }
  };
  std::vector<Expected> expected;  // set 0's, then (graded) the fresh data's
  expected.reserve(2);
  expected.emplace_back(nc, k, factor);
  if (cpu_reference) {
    std::vector<float> ref(nc), magnitude(nc);
    matmul_cpu_with_magnitude(A.data(), B.data(), ref.data(), magnitude.data(), m, k, n);
    LAB_CUDA_CHECK(cudaMemcpy(expected[0].reference(), ref.data(), nc * sizeof(float), cudaMemcpyHostToDevice));
    LAB_CUDA_CHECK(cudaMemcpy(expected[0].magnitude(), magnitude.data(), nc * sizeof(float), cudaMemcpyHostToDevice));
  } else {
    compute_on_gpu(expected[0], false);
    // cuBLAS becomes the reference only once it agrees with the CPU's double sums here.
    const std::string problem = spot_check(A, B, expected[0].reference(), m, k, n, lab::derive_seed(seed, "spot"));
    if (!problem.empty()) h.note_error(problem);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<float> c_host;
  if (cpu_reference) c_host.resize(nc);

  using Fn = decltype(matmul);
  lab::bench::Workload w;
  w.name = "matmul m x k x n = " + std::to_string(m) + " x " + std::to_string(k) + " x " + std::to_string(n) + note;
  w.function = "matmul";
  w.graded = graded;
  w.unit = "GFLOP/s";
  w.amount = 2.0 * m * n * static_cast<double>(k);  // one multiply and one add per product
  w.peak = h.device().peak_fp32_gflops;
  if (graded) {
    // Fresh A and B of set 0's distribution before every timed call, so that no result can
    // be replayed or cached; their C and magnitude by cuBLAS, checked on every element.
    // Per call: one FP32 SGEMM (a reference call's work), a TF32 GEMM (a few times less) and
    // a few passes over A and B: about 1.2 reference calls.
    expected.emplace_back(nc, k, factor);
    inputs.use_fresh_in(w, [&](lab::Seed fresh_seed) {
      lab::bench::fill_uniform(dA.data(), na, -1.0f, 1.0f, fresh_seed);
      lab::bench::fill_uniform(dB.data(), nb, -1.0f, 1.0f, lab::derive_seed(fresh_seed, "B"));
      compute_on_gpu(expected[inputs.fresh_set()], true);
    });
  }
  w.prepare = [&] { dC.poison(); };
  w.check = [&] { return expected[inputs.current()].check(dC.data(), against); };
  w.inputs_check = [&] { return inputs.check(); };
  if (cpu_reference) w.cpu = [&] { matmul_cpu(A.data(), B.data(), c_host.data(), m, k, n); };
  h.add_implementations<Fn>(w, "matmul", matmul,
                            [&](Fn* fn) { return [&, fn] { fn(dA.data(), dB.data(), dC.data(), m, k, n); }; });
  h.add_candidate(w, {"cuBLAS SGEMM FP32", lab::bench::Role::Library,
                      [&] { cublas.matmul(dA.data(), dB.data(), dC.data(), m, k, n); },
                      "cublasSgemm, CUBLAS_DEFAULT_MATH (FP32, no TF32)"});
  h.run(w);
}

}  // namespace

int main(int argc, char** argv) {
  lab::bench::Harness h(argc, argv);
  try {
    const Cublas cublas;
    // The graded shapes (the grade is the geometric mean of their ratios): the aligned
    // square first, then a non-square shape of odd sizes; only the square with --size.
    const int size = static_cast<int>(h.size_or(4096));
    run_workload(h, cublas, size, size, size, true, false, "");
    if (!h.size_given()) run_workload(h, cublas, 2999, 1999, 4001, true, false, "");
    if (!h.times_everything()) return h.finish();  // --graded-only: the rest is in no grade
    run_workload(h, cublas, 512, 512, 512, false, true, " (CPU baseline)");
    run_workload(h, cublas, 1000, 1500, 700, false, false, " (odd sizes)");
  } catch (const std::exception& e) {
    h.note_error(e.what());
  }
  return h.finish();
}
