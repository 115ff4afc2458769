// Provided by the kit: do not edit. Correctness tests of matmul.
//
//   ./build/dev/bin/matmul_test                                    all tests
//   ./build/dev/bin/matmul_test --gtest_filter='*m17_k33_n65*'     one shape (m x k x n)
//   ./build/dev/bin/matmul_test --seed=7                           other random data
//
// Each GPU test: prepare A and B and the expected C on the CPU (sums accumulated in
// double), poison C (every byte 0xFF, a NaN) so an element your kernel skips cannot
// pass, run matmul, then verify C, the memory just past it, and that A and B are
// unchanged.
//
// Two kinds of data:
//  - random floats in [-1, 1): a float result differs from the reference by rounding,
//    by at most c · k · u · sum_l |A[i][l]| · |B[l][j]| per element (u = 2^-24, c = 2;
//    matmul_tolerance in matmul.h says why). The bound is per element, so a small sum
//    among large ones is held to its own small error;
//  - integer-valued floats in [-4, 4]: every product and partial sum is an integer below
//    2^24, exact in float in any order, so C must equal the reference exactly.
#include <cmath>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "lab/testing.h"
#include "lab/variants.h"
#include "matmul.h"

namespace {

using MatmulFn = decltype(matmul);

// One problem shape: C (m x n) = A (m x k) · B (k x n).
struct Shape {
  int m;
  int k;
  int n;
};

std::string shape_text(Shape s) {
  return "m x k x n = " + std::to_string(s.m) + " x " + std::to_string(s.k) + " x " + std::to_string(s.n);
}

// How GoogleTest prints a Shape (instead of its bytes).
void PrintTo(const Shape& s, std::ostream* os) { *os << shape_text(s); }

// Test names such as "m17_k33_n65", so --gtest_filter can pick a shape.
std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return "m" + std::to_string(info.param.m) + "_k" + std::to_string(info.param.k) + "_n" +
         std::to_string(info.param.n);
}

std::size_t elements(int rows, int cols) { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols); }

// Compares C with the reference element by element, each within its own bound
// matmul_tolerance(k, magnitude[i]). The report names the first bad index (row * n + col),
// the expected and actual values, and how many elements are off.
lab::Mismatch compare_matmul(const std::vector<float>& expected, const std::vector<float>& actual,
                             const std::vector<float>& magnitude, int k) {
  if (expected.size() != actual.size()) return lab::compare_exact(expected, actual);
  // compare_with hands over references into `expected`; their address gives the index.
  lab::Mismatch m = lab::compare_with(expected.data(), actual.data(), expected.size(),
                                      [&](const float& e, const float& a) {
                                        const std::size_t i = static_cast<std::size_t>(&e - expected.data());
                                        return lab::within(e, a, lab::Tolerance{matmul_tolerance(k, magnitude[i]), 0.0});
                                      });
  if (!m.ok()) {
    std::ostringstream os;
    os << m.message << " (index = row * n + col; allowed error per element: " << kMatmulErrorFactor
       << " * k * 2^-24 * sum_l |A[row][l]| * |B[l][col]|; at the first bad element that is "
       << matmul_tolerance(k, magnitude[m.first]) << ")";
    m.message = os.str();
  }
  return m;
}

// Offsets (in floats) of A, B and C from the start of their device buffers; 0 = aligned.
struct Offsets {
  int a = 0, b = 0, c = 0;
};

// Runs `fn` on device copies of A (m x k) and B (k x n) and checks C against matmul_cpu:
// exactly when `exact`, else within the per-element tolerance; also that the 64 floats
// after C are untouched and that A and B are unchanged.
void check_matmul(MatmulFn* fn, const std::vector<float>& A, const std::vector<float>& B, Shape s, bool exact,
                  Offsets off = {}) {
  // Prepare: the CPU result and its error scale, the inputs, a poisoned C with a guard zone.
  const std::size_t nc = elements(s.m, s.n), guard = 64;
  std::vector<float> expected(nc), magnitude(nc);
  matmul_cpu_with_magnitude(A.data(), B.data(), expected.data(), magnitude.data(), s.m, s.k, s.n);
  std::vector<float> a_padded(off.a, 0.0f), b_padded(off.b, 0.0f);
  a_padded.insert(a_padded.end(), A.begin(), A.end());
  b_padded.insert(b_padded.end(), B.begin(), B.end());
  lab::DeviceBuffer<float> da(a_padded), db(b_padded), dc(off.c + nc + guard);
  dc.poison();

  // Run.
  fn(da.data() + off.a, db.data() + off.b, dc.data() + off.c, s.m, s.k, s.n);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const std::vector<float> c_all = dc.download();
  const std::vector<float> c(c_all.begin() + off.c, c_all.begin() + off.c + nc);
  if (exact) {
    EXPECT_ARRAY_EQ(expected, c) << "integer-valued inputs: every sum is exact in float, so C must match exactly "
                                    "(index = row * n + col)";
  } else {
    EXPECT_TRUE(lab::as_assertion(compare_matmul(expected, c, magnitude, s.k)));
  }
  const std::vector<float> after(c_all.begin() + off.c + nc, c_all.end());
  const std::vector<float> before(c_all.begin(), c_all.begin() + off.c);
  EXPECT_ARRAY_EQ(std::vector<unsigned>(guard, 0xFFFFFFFFu), lab::bits_of(after))
      << "matmul wrote past C[m * n - 1]: check the bounds of the stores at the edge tiles";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(off.c, 0xFFFFFFFFu), lab::bits_of(before)) << "matmul wrote before C[0]";
  EXPECT_ARRAY_EQ(a_padded, da.download()) << "input A was modified";
  EXPECT_ARRAY_EQ(b_padded, db.download()) << "input B was modified";
}

lab::Seed shape_seed(const char* label, Shape s, int trial) {
  return lab::case_seed(label, ((static_cast<std::uint64_t>(s.m) * 1000003ull + s.k) * 1000003ull + s.n) * 4 + trial);
}

// Uniform random A and B for `s`, with the seed note for SCOPED_TRACE.
struct Inputs {
  std::vector<float> A, B;
};
Inputs random_inputs(Shape s, lab::Seed seed) {
  return {lab::random_floats(elements(s.m, s.k), -1.0f, 1.0f, seed),
          lab::random_floats(elements(s.k, s.n), -1.0f, 1.0f, lab::derive_seed(seed, "B"))};
}
Inputs integer_inputs(Shape s, lab::Seed seed) {
  return {lab::integer_floats(elements(s.m, s.k), -4, 4, seed),
          lab::integer_floats(elements(s.k, s.n), -4, 4, lab::derive_seed(seed, "B"))};
}

// The lecture's definition, C[i][j] = sum_l A[i][l] · B[l][j], on a 2 x 3 times 3 x 2
// product worked by hand.
TEST(MatmulCpu, TwoByThreeTimesThreeByTwo) {
  const std::vector<float> A{1, 2, 3, 4, 5, 6}, B{7, 8, 9, 10, 11, 12};
  std::vector<float> C(4, -1.0f);
  matmul_cpu(A.data(), B.data(), C.data(), 2, 3, 2);
  EXPECT_EQ(C, (std::vector<float>{58, 64, 139, 154}));
}

// A row times a column is a dot product; a column times a row is the outer product.
TEST(MatmulCpu, DotAndOuterProducts) {
  const std::vector<float> u{1, -2, 3}, v{4, 5, -6};
  std::vector<float> dot(1, 0.0f), outer(9, 0.0f);
  matmul_cpu(u.data(), v.data(), dot.data(), 1, 3, 1);
  EXPECT_EQ(dot[0], 1 * 4 - 2 * 5 - 3 * 6);
  matmul_cpu(u.data(), v.data(), outer.data(), 3, 1, 3);
  EXPECT_EQ(outer, (std::vector<float>{4, 5, -6, -8, -10, 12, 12, 15, -18}));
}

// k = 0: every element of C is an empty sum, 0; m = 0 or n = 0 writes nothing.
TEST(MatmulCpu, EmptySums) {
  std::vector<float> C(6, -1.0f);
  matmul_cpu(nullptr, nullptr, C.data(), 2, 0, 3);
  EXPECT_EQ(C, std::vector<float>(6, 0.0f));
  float untouched = 7.0f;
  matmul_cpu(nullptr, nullptr, &untouched, 0, 4, 3);
  matmul_cpu(nullptr, nullptr, &untouched, 3, 4, 0);
  EXPECT_EQ(untouched, 7.0f);
}

// The reference accumulates in double: 1e8 + 1 - 1e8 gives 1, where a float sum in this
// order gives 0. That is why its result can be trusted as the golden one.
TEST(MatmulCpu, AccumulatesInDouble) {
  const std::vector<float> A{1e8f, 1.0f, -1e8f}, B{1.0f, 1.0f, 1.0f};
  float C = -1.0f, magnitude = -1.0f;
  matmul_cpu_with_magnitude(A.data(), B.data(), &C, &magnitude, 1, 3, 1);
  EXPECT_EQ(C, 1.0f);
  EXPECT_EQ(magnitude, 2e8f + 1.0f);
}

// The magnitude is the sum of |A[i][l]| · |B[l][j]|, and the tolerance grows with k and it.
TEST(MatmulCpu, MagnitudeAndTolerance) {
  const std::vector<float> A{1, -2, 3, -4}, B{-5, 6, 7, -8};  // 2 x 2 each
  std::vector<float> C(4), magnitude(4);
  matmul_cpu_with_magnitude(A.data(), B.data(), C.data(), magnitude.data(), 2, 2, 2);
  EXPECT_EQ(C, (std::vector<float>{-19, 22, -43, 50}));
  EXPECT_EQ(magnitude, (std::vector<float>{19, 22, 43, 50}));
  EXPECT_DOUBLE_EQ(matmul_tolerance(2, 19.0), 2.0 * 2 * 19.0 / 16777216.0 + kMatmulAbsoluteTolerance);
  EXPECT_EQ(matmul_tolerance(0, 0.0), kMatmulAbsoluteTolerance);
}

class MatmulGpu : public lab::GpuTestWithParam<Shape> {};

// C = A · B within the rounding tolerance, random data, at shapes around tile sizes (16,
// 32, 128), thin and flat shapes, and shapes that are not multiples of 4.
TEST_P(MatmulGpu, MatchesCpuWithinTolerance) {
  const Shape s = GetParam();
  for (int trial = 0; trial < 2; ++trial) {
    const lab::Seed seed = shape_seed("matmul", s, trial);
    SCOPED_TRACE(shape_text(s) + ", random data in [-1, 1), " + lab::seed_note(seed));
    const Inputs in = random_inputs(s, seed);
    check_matmul(matmul, in.A, in.B, s, false);
  }
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(Shapes, MatmulGpu,
                         ::testing::Values(Shape{1, 1, 1}, Shape{1, 1000, 1}, Shape{1, 4097, 1}, Shape{100, 1, 100},
                                           Shape{257, 1, 129}, Shape{1, 1025, 1023}, Shape{1023, 3, 1},
                                           Shape{17, 33, 65}, Shape{31, 32, 33}, Shape{33, 31, 32},
                                           Shape{32, 32, 32}, Shape{64, 64, 64}, Shape{127, 129, 131},
                                           Shape{128, 128, 128}, Shape{129, 8, 130}, Shape{255, 257, 253},
                                           Shape{96, 4099, 80}, Shape{1025, 17, 1023}, Shape{1000, 150, 700},
                                           Shape{512, 512, 512}),
                         shape_name);
// clang-format on

class MatmulGpuExact : public lab::GpuTestWithParam<Shape> {};

// Integer-valued A and B: C must equal the reference exactly, so a single missing or
// doubled product is caught.
TEST_P(MatmulGpuExact, MatchesCpuExactly) {
  const Shape s = GetParam();
  for (int trial = 0; trial < 2; ++trial) {
    const lab::Seed seed = shape_seed("matmul_exact", s, trial);
    SCOPED_TRACE(shape_text(s) + ", integer data in [-4, 4], " + lab::seed_note(seed));
    const Inputs in = integer_inputs(s, seed);
    check_matmul(matmul, in.A, in.B, s, true);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulGpuExact,
                         ::testing::Values(Shape{1, 1, 1}, Shape{1, 1025, 1}, Shape{17, 33, 65}, Shape{64, 64, 64},
                                           Shape{129, 257, 131}, Shape{300, 1000, 200}, Shape{1024, 64, 1024}),
                         shape_name);

using MatmulGpuEdge = lab::GpuTest;

// k = 0: C is all zeros (overwritten, not left alone); m = 0 or n = 0 writes nothing and
// raises no CUDA error.
TEST_F(MatmulGpuEdge, EmptyShapes) {
  {
    const Shape s{37, 0, 45};
    SCOPED_TRACE(shape_text(s));
    lab::DeviceBuffer<float> a(1), b(1), c(elements(s.m, s.n));
    c.poison();
    matmul(a.data(), b.data(), c.data(), s.m, s.k, s.n);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_ARRAY_EQ(std::vector<float>(elements(s.m, s.n), 0.0f), c.download()) << "k = 0 must set C to zero";
  }
  for (const Shape s : {Shape{0, 5, 7}, Shape{7, 5, 0}, Shape{0, 0, 0}}) {
    SCOPED_TRACE(shape_text(s));
    lab::DeviceBuffer<float> a(64), b(64), c(64);
    c.poison();
    matmul(a.data(), b.data(), c.data(), s.m, s.k, s.n);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    LAB_CUDA_CHECK(cudaGetLastError());
    EXPECT_ARRAY_EQ(std::vector<unsigned>(64, 0xFFFFFFFFu), lab::bits_of(c.download())) << "nothing may be written";
  }
}

// Full single precision: A holds 1 + d with 0 < d < 2^-11 (exact in float; TF32, bfloat16
// and half round it to 1) and B small positive integers, so every term of every sum
// loses d · B[l][j] > 0 if the inputs are rounded to a shorter mantissa: about 0.04 per
// element at k = 64, some 30 times the float tolerance. A correct float kernel passes.
TEST_F(MatmulGpuEdge, KeepsFullFloatPrecision) {
  for (const Shape s : {Shape{4, 64, 4}, Shape{64, 64, 64}, Shape{128, 256, 128}}) {
    const lab::Seed seed = shape_seed("matmul_fp32", s, 0);
    SCOPED_TRACE(shape_text(s) + ", A = 1 + d with d < 2^-11, " + lab::seed_note(seed));
    const std::vector<int> d = lab::random_ints(elements(s.m, s.k), 1, 4095, seed);
    std::vector<float> A(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) A[i] = 1.0f + std::ldexp(static_cast<float>(d[i]), -23);
    const std::vector<float> B = lab::integer_floats(elements(s.k, s.n), 1, 4, lab::derive_seed(seed, "B"));
    check_matmul(matmul, A, B, s, false);
  }
}

// Pointers that are not 16-byte aligned, one matrix at a time and all together, with
// sizes that are multiples of 4 (a kernel using float4 must notice the pointers).
TEST_F(MatmulGpuEdge, UnalignedPointers) {
  const Shape s{65, 68, 72};
  for (const Offsets off : {Offsets{1, 0, 0}, Offsets{0, 2, 0}, Offsets{0, 0, 3}, Offsets{3, 1, 2}}) {
    const lab::Seed seed = lab::case_seed("matmul_unaligned", 16 * off.a + 4 * off.b + off.c);
    SCOPED_TRACE(shape_text(s) + ", offsets of A, B, C = " + std::to_string(off.a) + ", " + std::to_string(off.b) +
                 ", " + std::to_string(off.c) + " floats, " + lab::seed_note(seed));
    const Inputs in = integer_inputs(s, seed);
    check_matmul(matmul, in.A, in.B, s, true, off);
  }
}

// A tall C (more rows than 65535 blocks of 128 can cover in a grid's y dimension) and a
// wide one.
TEST_F(MatmulGpuEdge, TallAndWide) {
  for (const Shape s : {Shape{65535 * 128 + 7, 2, 3}, Shape{3, 2, 1000003}}) {
    const lab::Seed seed = shape_seed("matmul_tall", s, 0);
    SCOPED_TRACE(shape_text(s) + ", " + lab::seed_note(seed));
    const Inputs in = integer_inputs(s, seed);
    check_matmul(matmul, in.A, in.B, s, true);
  }
}

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/matmul/lab.json, "required_variants").
// Every variant is correct on awkward shapes, aligned or not.
class MatmulVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulVariantsGpu);

TEST_P(MatmulVariantsGpu, MatchesCpuOnAwkwardShapes) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<MatmulFn>("matmul", name);
  ASSERT_NE(fn, nullptr);
  const std::vector<Shape> shapes{Shape{1, 1, 1},    Shape{17, 33, 65},  Shape{64, 64, 64},  Shape{129, 9, 130},
                                  Shape{33, 16, 30}, Shape{40, 7, 36},   Shape{1, 300, 1},   Shape{5, 0, 7},
                                  Shape{260, 64, 132}, Shape{65535 * 128 + 3, 2, 1}};
  for (const Shape s : shapes) {
    const bool tall = s.m > 65535;  // large: once, aligned
    for (int trial = 0; trial < (tall ? 1 : 2); ++trial) {
      const lab::Seed seed = shape_seed("matmul_variant", s, trial);
      const Offsets off = trial == 0 ? Offsets{} : Offsets{1, 2, 3};
      SCOPED_TRACE("variant '" + name + "', " + shape_text(s) + (trial == 0 ? ", aligned, " : ", unaligned, ") +
                   lab::seed_note(seed));
      const Inputs in = integer_inputs(s, seed);
      check_matmul(fn, in.A, in.B, s, true, off);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, MatmulVariantsGpu, ::testing::ValuesIn(lab::registered_variants("matmul")),
                         lab::variant_test_name);


// ---- Find the bug: fix_matmul_tiled --------------------------------------------------------
// Lecture 10's tiled kernel (handout "Find the bug"), on square matrices of every kind of
// side: multiples of the tile (where the slides' kernel is right) and not. Each matrix is
// followed in its buffer by room for 16 more rows: A and B by bait values that spoil any
// sum that reads them, C by poison that must stay. So a kernel that reads or writes past
// the edge fails here with a message instead of corrupting other memory. Named like a
// registered variant's test so that the grader finds the exercise's verdict the same way
// (labs/matmul/lab.json).
class FixMatmulTiledGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(FixMatmulTiledGpu, MultipliesSquareMatricesOfEverySide) {
  for (int side : {kFixMatmulTile, 2 * kFixMatmulTile, 1, 17, 33, 100, 255}) {
    const Shape s{side, side, side};
    const lab::Seed seed = shape_seed("fix_matmul_tiled", s, 0);
    SCOPED_TRACE("fix_matmul_tiled, n = " + std::to_string(side) + ", " + lab::seed_note(seed));
    const Inputs in = integer_inputs(s, seed);
    const std::size_t count = elements(side, side);
    const std::size_t slack = static_cast<std::size_t>(kFixMatmulTile) * (side + 1);
    std::vector<float> expected(count), magnitude(count);
    matmul_cpu_with_magnitude(in.A.data(), in.B.data(), expected.data(), magnitude.data(), side, side, side);
    std::vector<float> a_padded = in.A, b_padded = in.B;
    a_padded.insert(a_padded.end(), slack, 1000.0f);
    b_padded.insert(b_padded.end(), slack, 1000.0f);
    lab::DeviceBuffer<float> da(a_padded), db(b_padded), dc(count + slack);
    dc.poison();
    fix_matmul_tiled(da.data(), db.data(), dc.data(), side);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> c_all = dc.download();
    EXPECT_ARRAY_EQ(expected, std::vector<float>(c_all.begin(), c_all.begin() + count))
        << "integer-valued inputs: every sum is exact in float, so C must match exactly (index = row * n + col)";
    EXPECT_ARRAY_EQ(std::vector<unsigned>(slack, 0xFFFFFFFFu), lab::bits_of(std::vector<float>(c_all.begin() + count, c_all.end())))
        << "fix_matmul_tiled wrote past C[n * n - 1]: threads outside the matrix must not store";
    EXPECT_ARRAY_EQ(a_padded, da.download()) << "input A was modified";
    EXPECT_ARRAY_EQ(b_padded, db.download()) << "input B was modified";
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, FixMatmulTiledGpu, ::testing::Values(std::string("fix_matmul_tiled")),
                         lab::variant_test_name);

}  // namespace
