// Provided by the kit: do not edit. Correctness tests of transpose.
//
//   ./build/dev/bin/transpose_test                               all tests
//   ./build/dev/bin/transpose_test --gtest_filter='*r33_c31*'    one shape (rows 33, cols 31)
//   ./build/dev/bin/transpose_test --seed=7                      other random data
//
// Each GPU test: prepare the input and the expected result on the CPU, poison the output
// (every byte 0xFF, a NaN) so an element your kernel skips cannot pass, run transpose,
// then verify the result exactly, the memory just past the output, and that the input is
// unchanged. A transpose only moves values, so every comparison is exact.
//
// Two kinds of data: "index" data holds in[r][c] = r * cols + c, so a wrong value in a
// failure message is the index of the element that landed there (exact up to 2^24
// elements); "random" data holds seeded random floats.
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "lab/testing.h"
#include "lab/variants.h"
#include "transpose.h"

namespace {

using TransposeFn = decltype(transpose);

// One matrix shape.
struct Shape {
  int rows;
  int cols;
};

std::string shape_text(Shape s) { return std::to_string(s.rows) + " x " + std::to_string(s.cols); }

// How GoogleTest prints a Shape (instead of its bytes).
void PrintTo(const Shape& s, std::ostream* os) { *os << "rows x cols = " << shape_text(s); }

// Test names such as "r33_c31", so --gtest_filter can pick a shape.
std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return "r" + std::to_string(info.param.rows) + "_c" + std::to_string(info.param.cols);
}

std::size_t count_of(Shape s) { return static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols); }

// in[i] = i: exact while i < 2^24.
std::vector<float> index_floats(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

// Runs `fn` on a device copy of `in` (rows x cols) and checks the result against
// transpose_cpu exactly (values, then bits), that the 64 floats after out are untouched, that
// the input is unchanged and, when `twice` is set, that transposing the result again
// gives the input back. `offset` shifts both pointers by that many floats.
void check_transpose(TransposeFn* fn, const std::vector<float>& in, Shape s, bool twice = false, int offset = 0) {
  // Prepare: the CPU result, the input and a poisoned output with a guard zone after it.
  const std::size_t n = count_of(s);
  const std::size_t guard = 64;
  std::vector<float> expected(n);
  transpose_cpu(in.data(), expected.data(), s.rows, s.cols);
  std::vector<float> in_padded(offset, 0.0f);
  in_padded.insert(in_padded.end(), in.begin(), in.end());
  lab::DeviceBuffer<float> din(in_padded), dout(offset + n + guard);
  dout.poison();

  // Run.
  fn(din.data() + offset, dout.data() + offset, s.rows, s.cols);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const std::vector<float> out_all = dout.download();
  const std::vector<float> out(out_all.begin() + offset, out_all.begin() + offset + n);
  EXPECT_ARRAY_EQ(expected, out) << "out[c * rows + r] must equal in[r * cols + c] (the index shown is c * rows + r)";
  if (!::testing::Test::HasFailure()) {
    // Equal as floats can still differ in bits: a NaN's payload, or -0 versus +0.
    EXPECT_BITS_EQ(expected, out) << "out differs from in^T in its bits (shown as integers)";
  }
  const std::vector<float> after(out_all.begin() + offset + n, out_all.end());
  const std::vector<float> before(out_all.begin(), out_all.begin() + offset);
  EXPECT_ARRAY_EQ(std::vector<unsigned>(guard, 0xFFFFFFFFu), lab::bits_of(after))
      << "transpose wrote past out[rows * cols - 1]: check the bounds of the writes at the edge tiles";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(offset, 0xFFFFFFFFu), lab::bits_of(before)) << "transpose wrote before out[0]";
  EXPECT_BITS_EQ(in_padded, din.download()) << "the input was modified";

  if (twice) {
    // Transposing the transposed matrix (cols x rows) gives the input back.
    lab::DeviceBuffer<float> back(n + guard);
    back.poison();
    fn(dout.data() + offset, back.data(), s.cols, s.rows);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> back_all = back.download();
    back_all.resize(n);
    EXPECT_BITS_EQ(in, back_all) << "transpose(transpose(in)) differs from in";
  }
}

// Index data when every index is exact in a float, else random data; plus random data.
std::vector<float> test_data(Shape s, int trial, lab::Seed seed) {
  const std::size_t n = count_of(s);
  if (trial == 0 && n <= (std::size_t{1} << 24)) return index_floats(n);
  return lab::random_floats(n, -1000.0f, 1000.0f, seed);
}

// The sequential version on a 2 x 3 matrix, by hand: [[1 2 3] [4 5 6]] -> [[1 4] [2 5] [3 6]].
TEST(TransposeCpu, TwoByThree) {
  const std::vector<float> in{1, 2, 3, 4, 5, 6};
  std::vector<float> out(6, -1.0f);
  transpose_cpu(in.data(), out.data(), 2, 3);
  EXPECT_EQ(out, (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

// A single row becomes a single column: the same floats in the same order.
TEST(TransposeCpu, RowBecomesColumn) {
  const std::vector<float> in{7, -1, 0.5f, 3};
  std::vector<float> out(4, 0.0f);
  transpose_cpu(in.data(), out.data(), 1, 4);
  EXPECT_EQ(out, in);
  transpose_cpu(in.data(), out.data(), 4, 1);
  EXPECT_EQ(out, in);
}

// The lecture's element mapping out[j + i * N] = in[i + j * N] on a square 3 x 3 matrix.
TEST(TransposeCpu, SquareMirrorsTheDiagonal) {
  const int n = 3;
  const std::vector<float> in{0, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> out(9, -1.0f);
  transpose_cpu(in.data(), out.data(), n, n);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) EXPECT_EQ(out[j + i * n], in[i + j * n]) << "i = " << i << ", j = " << j;
  }
  EXPECT_EQ(out, (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

// Transposing twice gives the matrix back, for a non-square shape.
TEST(TransposeCpu, TwiceIsIdentity) {
  const Shape s{5, 7};
  const std::vector<float> in = index_floats(count_of(s));
  std::vector<float> once(in.size()), twice(in.size());
  transpose_cpu(in.data(), once.data(), s.rows, s.cols);
  transpose_cpu(once.data(), twice.data(), s.cols, s.rows);
  EXPECT_EQ(twice, in);
}

// rows = 0 or cols = 0 writes nothing.
TEST(TransposeCpu, EmptyWritesNothing) {
  float out = 7.0f;
  transpose_cpu(nullptr, &out, 0, 5);
  transpose_cpu(nullptr, &out, 5, 0);
  EXPECT_EQ(out, 7.0f);
}

class TransposeGpu : public lab::GpuTestWithParam<Shape> {};

// out = in^T exactly, at shapes around the tile size (32), square and not, single rows
// and columns, and large; index data and random data.
TEST_P(TransposeGpu, MatchesCpu) {
  const Shape s = GetParam();
  for (int trial = 0; trial < 2; ++trial) {
    const lab::Seed seed = lab::case_seed("transpose", 1000003ull * s.rows + 2ull * s.cols + trial);
    SCOPED_TRACE("rows x cols = " + shape_text(s) + (trial == 0 ? ", index data, " : ", random data, ") +
                 lab::seed_note(seed));
    check_transpose(transpose, test_data(s, trial, seed), s);
  }
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(Shapes, TransposeGpu,
                         ::testing::Values(Shape{1, 1}, Shape{1, 31}, Shape{1, 1025}, Shape{31, 1}, Shape{1025, 1},
                                           Shape{2049, 1}, Shape{1, 2049}, Shape{1, (1 << 20) + 1},
                                           Shape{(1 << 20) + 1, 1}, Shape{31, 33}, Shape{32, 32}, Shape{33, 31},
                                           Shape{31, 31}, Shape{33, 33}, Shape{32, 96}, Shape{17, 4099},
                                           Shape{4099, 17}, Shape{1023, 1025}, Shape{1025, 1023},
                                           Shape{1024, 1024}, Shape{4097, 4095}),
                         shape_name);
// clang-format on

class TransposeGpuTwice : public lab::GpuTestWithParam<Shape> {};

// transpose(transpose(in)) = in, with the input of the second call being the output of the first.
TEST_P(TransposeGpuTwice, GivesInputBack) {
  const Shape s = GetParam();
  const lab::Seed seed = lab::case_seed("transpose_twice", 1000003ull * s.rows + s.cols);
  SCOPED_TRACE("rows x cols = " + shape_text(s) + ", " + lab::seed_note(seed));
  check_transpose(transpose, lab::random_floats(count_of(s), -1.0f, 1.0f, seed), s, true);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeGpuTwice,
                         ::testing::Values(Shape{1, 100}, Shape{33, 31}, Shape{100, 257}, Shape{1000, 999}),
                         shape_name);

using TransposeGpuEdge = lab::GpuTest;

// rows = 0 or cols = 0 launches nothing, writes nothing and raises no CUDA error.
TEST_F(TransposeGpuEdge, EmptyShapesDoNothing) {
  // A real transpose first, so that a function that does nothing does not earn this test.
  check_transpose(transpose, test_data(Shape{33, 65}, 0, lab::case_seed("transpose_empty")), Shape{33, 65});
  lab::DeviceBuffer<float> in(16), out(16);
  out.poison();
  for (const Shape s : {Shape{0, 0}, Shape{0, 5}, Shape{5, 0}, Shape{0, 1 << 20}}) {
    SCOPED_TRACE("rows x cols = " + shape_text(s));
    transpose(in.data(), out.data(), s.rows, s.cols);
    LAB_CUDA_CHECK(cudaDeviceSynchronize());
    LAB_CUDA_CHECK(cudaGetLastError());
    EXPECT_ARRAY_EQ(std::vector<unsigned>(16, 0xFFFFFFFFu), lab::bits_of(out.download()));
  }
}

// More than 65535 tiles of 32 down the matrix: a grid's y dimension cannot cover them
// with one block per tile (and the transposed case, many tiles across, for balance).
TEST_F(TransposeGpuEdge, TallAndWideMatrices) {
  const int tall = 65535 * 32 + 33;  // 2,097,153 rows
  for (const Shape s : {Shape{tall, 3}, Shape{3, tall}, Shape{tall, 1}}) {
    const lab::Seed seed = lab::case_seed("transpose_tall", 1000003ull * s.rows + s.cols);
    SCOPED_TRACE("rows x cols = " + shape_text(s) + ", " + lab::seed_note(seed));
    check_transpose(transpose, lab::random_floats(count_of(s), -1.0f, 1.0f, seed), s);
  }
}

// Pointers that are not 16-byte aligned (a kernel using vector loads must fall back).
TEST_F(TransposeGpuEdge, UnalignedPointers) {
  for (int offset = 1; offset < 4; ++offset) {
    const Shape s{37, 45};
    SCOPED_TRACE("offset = " + std::to_string(offset) + " floats, rows x cols = " + shape_text(s));
    check_transpose(transpose, index_floats(count_of(s)), s, false, offset);
  }
}

// NaNs with payloads, infinities, signed zeros and subnormals are moved bit for bit.
TEST_F(TransposeGpuEdge, SpecialValuesMovedBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  const float tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> in = index_floats(5 * 7);
  unsigned payload_nan = 0x7FC12345u;
  std::memcpy(&in[3], &payload_nan, sizeof(float));
  in[8] = -0.0f;
  in[12] = inf;
  in[20] = -inf;
  in[33] = tiny;
  in[34] = -tiny;
  check_transpose(transpose, in, Shape{5, 7});
}

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/transpose/lab.json, "required_variants").
// Every variant is correct on awkward shapes. The slow versions (serial and per-row:
// labs/transpose/lab.json, "slow_variants") run only on the small shapes: they are far
// too slow for big ones.
class TransposeVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TransposeVariantsGpu);

TEST_P(TransposeVariantsGpu, MatchesCpuOnAwkwardShapes) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<TransposeFn>("transpose", name);
  ASSERT_NE(fn, nullptr);
  const std::vector<Shape> small{Shape{1, 1}, Shape{1, 70}, Shape{70, 1}, Shape{31, 33}, Shape{33, 31},
                                 Shape{64, 64}, Shape{100, 257}};
  const std::vector<Shape> large{Shape{1025, 1023}, Shape{65535 * 32 + 33, 2}};
  std::vector<Shape> shapes = small;
  if (!lab::variant_is_slow(name)) shapes.insert(shapes.end(), large.begin(), large.end());
  for (const Shape s : shapes) {
    const lab::Seed seed = lab::case_seed("transpose_variant", 1000003ull * s.rows + s.cols);
    SCOPED_TRACE("variant '" + name + "', rows x cols = " + shape_text(s) + ", " + lab::seed_note(seed));
    check_transpose(fn, lab::random_floats(count_of(s), -1.0f, 1.0f, seed), s, true);
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, TransposeVariantsGpu, ::testing::ValuesIn(lab::registered_variants("transpose")),
                         lab::variant_test_name);


// ---- Find the bug: fix_transpose_tiled -----------------------------------------------------
// Lecture 10's tiled kernel (handout "Find the bug"), on square matrices whose side is a
// multiple of the tile. The slides' bug reads rows far outside a larger matrix, which can
// end the process with an illegal address; at 32 x 32 (one tile) it stays inside and
// shows as wrong values, so that size is checked first and the larger ones only once it
// passes. Named like a registered variant's test so that the grader finds the exercise's
// verdict the same way (labs/transpose/lab.json).
class FixTransposeTiledGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(FixTransposeTiledGpu, TransposesSquareMatricesOfWholeTiles) {
  for (int side : {kFixTransposeTile, 2 * kFixTransposeTile, 3 * kFixTransposeTile, 512, 1024}) {
    const Shape s{side, side};
    const lab::Seed seed = lab::case_seed("fix_transpose_tiled", side);
    SCOPED_TRACE("fix_transpose_tiled, " + shape_text(s) + ", " + lab::seed_note(seed));
    check_transpose(fix_transpose_tiled, test_data(s, 0, seed), s, true);
    if (HasFailure()) {
      FAIL() << "stopped before the larger sizes: fix " << shape_text(s) << " first (a larger matrix could "
             << "make the bug read outside it)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, FixTransposeTiledGpu, ::testing::Values(std::string("fix_transpose_tiled")),
                         lab::variant_test_name);

}  // namespace
