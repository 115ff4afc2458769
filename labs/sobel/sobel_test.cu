// Provided by the kit: do not edit. Correctness tests of sobel.
//
//   ./build/dev/bin/sobel_test                                 all tests
//   ./build/dev/bin/sobel_test --gtest_filter='*w1023_h769*'   one image size
//   ./build/dev/bin/sobel_test --seed=7                        other random images
//   ./build/dev/bin/sobel_test --gtest_filter='*Convolve*'     the further part, convolve_1d
//
// Each GPU test: make an image and the expected edges on the CPU (sobel_cpu), poison the
// output with the byte 119 (neither 0 nor 255, so a pixel your kernel skips cannot pass),
// run sobel, then compare every pixel exactly, check the bytes just before and after the
// output, and check that the input is unchanged. Images: shapes (a filled rectangle, a
// disc), gradients, noise, a synthetic picture; sizes from 1 x 1 to 4099 x 4097,
// including thin ones (1 x N, N x 1) and sizes that are not multiples of any block.
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lab/testing.h"
#include "lab/variants.h"
#include "sobel.h"

namespace {

using SobelFn = decltype(sobel);
using Image = std::vector<unsigned char>;

constexpr unsigned char kPoison = 119;  // 0x77: never a result of sobel
constexpr int kGuard = 64;               // bytes checked on each side of the output

struct Shape {
  int width, height;
};

std::string shape_label(const Shape& s) { return std::to_string(s.width) + " x " + std::to_string(s.height); }
std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return "w" + std::to_string(info.param.width) + "_h" + std::to_string(info.param.height);
}

// ---- test images -------------------------------------------------------------------

Image make_image(const std::string& kind, int w, int h, lab::Seed seed) {
  if (kind == "picture") return sobel_test_image(w, h, seed);
  Image img(static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  lab::Rng rng(seed);
  const int k = kind == "rectangle" ? 0 : kind == "disc" ? 1 : kind == "ramp" ? 2 : kind == "stripes" ? 3 : 4;
  const long long cx = w / 2, cy = h / 2, r = (w < h ? w : h) / 3;
  for (long long y = 0; y < h; ++y) {
    for (long long x = 0; x < w; ++x) {
      int v = 0;
      if (k == 0) {  // rectangle: a bright filled rectangle on a dark ground
        v = (x >= w / 4 && x < 3 * w / 4 && y >= h / 4 && y < 3 * h / 4) ? 200 : 30;
      } else if (k == 1) {  // disc: white on black, edges in every direction
        v = (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r ? 255 : 0;
      } else if (k == 2) {  // ramp: a smooth horizontal gradient 0..255, tiny gradients
        v = static_cast<int>(x * 255 / (w > 1 ? w - 1 : 1));
      } else if (k == 3) {  // stripes: a diagonal gradient wrapping every 256, sharp steps
        v = static_cast<int>((3 * x + 5 * y) & 255);
      } else {  // noise: independent uniform bytes
        v = static_cast<int>(rng.below(256));
      }
      img[static_cast<std::size_t>(y * w + x)] = static_cast<unsigned char>(v);
    }
  }
  return img;
}

const std::vector<std::string> kKinds = {"rectangle", "disc", "ramp", "stripes", "noise", "picture"};

// ---- the check -----------------------------------------------------------------------

// Runs `fn` on a device copy of `img` (w x h) and checks every output pixel against
// sobel_cpu, the guard bytes around the output, and the input. `in_offset` and
// `out_offset` shift the device pointers by that many bytes (misaligned pointers).
void check_sobel(const Image& img, int w, int h, int threshold, SobelFn* fn = sobel, int in_offset = 0,
                 int out_offset = 0) {
  // Prepare: the expected edges, the input (after in_offset filler bytes), a poisoned output.
  const std::size_t n = img.size();
  Image expected(n);
  sobel_cpu(img.data(), expected.data(), w, h, threshold);
  Image in_padded(static_cast<std::size_t>(in_offset), 0);
  in_padded.insert(in_padded.end(), img.begin(), img.end());
  lab::DeviceBuffer<unsigned char> din(in_padded), dout(kGuard + out_offset + n + kGuard);
  dout.poison(kPoison);
  unsigned char* out = dout.data() + kGuard + out_offset;

  // Run.
  fn(din.data() + in_offset, out, w, h, threshold);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const Image all = dout.download();
  const Image result(all.begin() + kGuard + out_offset, all.begin() + kGuard + out_offset + static_cast<long>(n));
  const lab::Mismatch m = lab::compare_exact(expected, result, "pixel");
  std::string where;
  if (!m.ok()) {
    const std::size_t x = m.first % static_cast<std::size_t>(w), y = m.first / static_cast<std::size_t>(w);
    where = "first wrong pixel: (x " + std::to_string(x) + ", y " + std::to_string(y) + ")" +
            (result[m.first] == kPoison ? ", never written (still the poison byte 119)" : "") +
            ((x == 0 || y == 0 || x + 1 == static_cast<std::size_t>(w) || y + 1 == static_cast<std::size_t>(h))
                 ? ", a border pixel (must be 0)"
                 : "");
  }
  EXPECT_TRUE(lab::as_assertion(m)) << where;
  const Image before(all.begin(), all.begin() + kGuard + out_offset);
  const Image after(all.begin() + kGuard + out_offset + static_cast<long>(n), all.end());
  EXPECT_ARRAY_EQ(Image(before.size(), kPoison), before) << "sobel wrote before out[0]";
  EXPECT_ARRAY_EQ(Image(after.size(), kPoison), after)
      << "sobel wrote past out[width * height - 1]: threads outside the image must not write";
  EXPECT_ARRAY_EQ(in_padded, din.download()) << "the input image was modified";
}

// ---- CPU tests -----------------------------------------------------------------------

// A 5 x 4 image worked by hand: a 50-gray block in the upper right of a 10-gray ground.
// Interior magnitudes (Gx^2 + Gy^2), x = 1..3:
//   y = 1: (120, 40) -> 16000, (120, 120) -> 28800, (0, 160) -> 25600
//   y = 2: (120, -40) -> 16000, (120, -120) -> 28800, (0, -160) -> 25600
TEST(SobelCpu, HandComputedExample) {
  const Image in = {10, 10, 10, 10, 10,  //
                    10, 10, 50, 50, 50,  //
                    10, 10, 50, 50, 50,  //
                    10, 10, 10, 10, 10};
  Image out(20, kPoison);
  // The comparison is strict: a magnitude equal to the threshold is not an edge.
  sobel_cpu(in.data(), out.data(), 5, 4, 16000);
  EXPECT_EQ(out, (Image{0, 0, 0, 0, 0,      //
                        0, 0, 255, 255, 0,  //
                        0, 0, 255, 255, 0,  //
                        0, 0, 0, 0, 0}));
  sobel_cpu(in.data(), out.data(), 5, 4, 15999);
  EXPECT_EQ(out, (Image{0, 0, 0, 0, 0,        //
                        0, 255, 255, 255, 0,  //
                        0, 255, 255, 255, 0,  //
                        0, 0, 0, 0, 0}));
  sobel_cpu(in.data(), out.data(), 5, 4, 25600);
  EXPECT_EQ(out, (Image{0, 0, 0, 0, 0,    //
                        0, 0, 255, 0, 0,  //
                        0, 0, 255, 0, 0,  //
                        0, 0, 0, 0, 0}));
}

// Images thinner than 3 pixels are all border: every output pixel is 0.
TEST(SobelCpu, ThinImagesAreAllBorder) {
  const Image in(64, 200);
  for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 64}, std::pair{64, 1}, std::pair{2, 32}, std::pair{32, 2}}) {
    Image out(64, kPoison);
    sobel_cpu(in.data(), out.data(), w, h, -1);
    EXPECT_EQ(Image(out.begin(), out.begin() + w * h), Image(static_cast<std::size_t>(w * h), 0))
        << w << " x " << h;
  }
}

// A vertical step of height s has Gx = 4s and Gy = 0 on both sides of the step.
TEST(SobelCpu, StepEdgeMagnitude) {
  const Image in = {0, 0, 9, 9,  //
                    0, 0, 9, 9,  //
                    0, 0, 9, 9};
  Image out(12, kPoison);
  sobel_cpu(in.data(), out.data(), 4, 3, 16 * 81 - 1);
  EXPECT_EQ(out, (Image{0, 0, 0, 0, 0, 255, 255, 0, 0, 0, 0, 0}));
  sobel_cpu(in.data(), out.data(), 4, 3, 16 * 81);
  EXPECT_EQ(out, Image(12, 0));
}

// The synthetic picture is deterministic and has both edges and flat regions.
TEST(SobelCpu, TestImageIsReproducible) {
  EXPECT_EQ(sobel_test_image(97, 61, 5), sobel_test_image(97, 61, 5));
  EXPECT_NE(sobel_test_image(97, 61, 5), sobel_test_image(97, 61, 6));
  const Image img = sobel_test_image(200, 150, 1);
  Image out(img.size());
  sobel_cpu(img.data(), out.data(), 200, 150, kSobelDefaultThreshold);
  std::size_t edges = 0;
  for (unsigned char v : out) edges += v == 255;
  EXPECT_GT(edges, 200u);
  EXPECT_LT(edges, img.size() / 4);
}

// ---- GPU tests -----------------------------------------------------------------------

class SobelGpu : public lab::GpuTestWithParam<Shape> {};

// Every kind of image at three thresholds (0: any gradient is an edge; a typical one;
// the maximum: no pixel is an edge) matches the CPU exactly.
TEST_P(SobelGpu, MatchesCpu) {
  const Shape s = GetParam();
  for (std::size_t k = 0; k < kKinds.size(); ++k) {
    const lab::Seed seed = lab::case_seed("sobel_" + kKinds[k], 100003ull * s.width + s.height);
    const Image img = make_image(kKinds[k], s.width, s.height, seed);
    for (int threshold : {0, kSobelDefaultThreshold, kSobelMaxMagnitude}) {
      SCOPED_TRACE(shape_label(s) + " " + kKinds[k] + " image, threshold " + std::to_string(threshold) + ", " +
                   lab::seed_note(seed));
      check_sobel(img, s.width, s.height, threshold);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SobelGpu,
                         ::testing::Values(Shape{1, 1}, Shape{1, 9}, Shape{9, 1}, Shape{2, 2}, Shape{3, 3},
                                           Shape{4, 3}, Shape{3, 4}, Shape{5, 5}, Shape{31, 33}, Shape{32, 32},
                                           Shape{33, 31}, Shape{2, 1000}, Shape{1000, 2}, Shape{513, 35},
                                           Shape{1023, 769}, Shape{1024, 1024}, Shape{1025, 3}, Shape{4097, 3},
                                           Shape{3, 4097}, Shape{1, 1025}, Shape{1025, 1}, Shape{2049, 1031},
                                           Shape{3, 200003}, Shape{(1 << 20) + 1, 3}),
                         shape_name);

using SobelGpuEdge = lab::GpuTest;

// A large image (about 16.8 million pixels), two kinds.
TEST_F(SobelGpuEdge, LargeImage) {
  const int w = 4099, h = 4097;
  for (const char* kind : {"picture", "noise"}) {
    const lab::Seed seed = lab::case_seed(std::string("sobel_large_") + kind);
    SCOPED_TRACE(std::string(kind) + " image 4099 x 4097, " + lab::seed_note(seed));
    check_sobel(make_image(kind, w, h, seed), w, h, kSobelDefaultThreshold);
  }
}

// Thresholds beyond the range of Gx^2 + Gy^2: -1 marks every interior pixel, INT_MAX none.
TEST_F(SobelGpuEdge, ExtremeThresholds) {
  for (Shape s : {Shape{3, 3}, Shape{70, 40}, Shape{1023, 769}}) {
    for (int threshold : {-1, INT_MIN, INT_MAX}) {
      const lab::Seed seed = lab::case_seed("sobel_extreme", 100003ull * s.width + s.height);
      SCOPED_TRACE(shape_label(s) + ", threshold " + std::to_string(threshold) + ", " + lab::seed_note(seed));
      check_sobel(make_image("noise", s.width, s.height, seed), s.width, s.height, threshold);
    }
  }
}

// The comparison is strict (>) on the GPU too: a step of height 9 gives exactly 16 * 81.
TEST_F(SobelGpuEdge, StrictComparison) {
  const int w = 70, h = 9;
  Image img(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) img[static_cast<std::size_t>(y * w + x)] = x < 35 ? 100 : 109;
  }
  for (int threshold : {16 * 81 - 1, 16 * 81}) {
    SCOPED_TRACE("vertical step of 9 gray levels, threshold " + std::to_string(threshold));
    check_sobel(img, w, h, threshold);
  }
}

// Input and output pointers that are not 4-byte aligned (word loads must fall back, not fault).
TEST_F(SobelGpuEdge, UnalignedPointers) {
  const int w = 1024, h = 37;  // a width that is a multiple of 4: only the pointers are odd
  const lab::Seed seed = lab::case_seed("sobel_unaligned");
  const Image img = make_image("picture", w, h, seed);
  for (auto [in_offset, out_offset] : {std::pair{1, 0}, std::pair{0, 1}, std::pair{2, 3}, std::pair{3, 2}}) {
    SCOPED_TRACE("in + " + std::to_string(in_offset) + " bytes, out + " + std::to_string(out_offset) + " bytes, " +
                 lab::seed_note(seed));
    check_sobel(img, w, h, kSobelDefaultThreshold, sobel, in_offset, out_offset);
  }
}

// width or height 0 (or negative) writes nothing and raises no CUDA error. A real call
// comes first: an implementation that does nothing at all must not pass this test.
TEST_F(SobelGpuEdge, EmptyImageDoesNothing) {
  check_sobel(make_image("disc", 9, 7, lab::case_seed("sobel_empty")), 9, 7, 0);
  lab::DeviceBuffer<unsigned char> in(16), out(16);
  in.poison(1);
  out.poison(kPoison);
  for (auto [w, h] : {std::pair{0, 0}, std::pair{0, 5}, std::pair{5, 0}, std::pair{-3, 4}, std::pair{4, -3}}) {
    sobel(in.data(), out.data(), w, h, 0);
  }
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(Image(16, kPoison), out.download());
}

// One test per variant registered with LAB_REGISTER_VARIANT (the lecture's steps, the
// reference's other versions, or yours), not "default" (the tests above check it). Each is
// named Registered/<Suite>.<Test>/<variant>: the grader finds a required step's verdict by
// that name (labs/sobel/lab.json, "required_variants").
// Every variant is right on a few awkward shapes.
class SobelVariantsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SobelVariantsGpu);

TEST_P(SobelVariantsGpu, MatchesCpuOnAwkwardShapes) {
  const std::string name = GetParam();
  auto* fn = lab::local_variants().get<SobelFn>("sobel", name);
  ASSERT_NE(fn, nullptr);
  for (Shape s : {Shape{1, 1}, Shape{3, 3}, Shape{4, 7}, Shape{33, 31}, Shape{516, 66}, Shape{1023, 769},
                  Shape{2052, 35}, Shape{1025, 3}, Shape{3, 1025}}) {
    const lab::Seed seed = lab::case_seed("sobel_variant", 100003ull * s.width + s.height);
    SCOPED_TRACE("variant '" + name + "', picture " + shape_label(s) + ", " + lab::seed_note(seed));
    check_sobel(make_image("picture", s.width, s.height, seed), s.width, s.height, kSobelDefaultThreshold, fn);
    check_sobel(make_image("noise", s.width, s.height, seed), s.width, s.height, 0, fn, 1, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, SobelVariantsGpu, ::testing::ValuesIn(lab::registered_variants("sobel")),
                         lab::variant_test_name);

// ---- Further part: convolve_1d ----------------------------------------------------------
// The 1-D convolution with ghost cells (sobel.h). The CPU tests work the formula by hand;
// the GPU tests (suite PartConvolve1dGpu, named like a registered variant's so that the
// grader finds the part's verdict under Registered/PartConvolve1dGpu.*/convolve_1d) run
// convolve_1d, and every version registered with LAB_REGISTER_VARIANT(convolve_1d, ...),
// against the CPU. Most data are small integers (inputs in [-8, 8], mask in [-4, 4]): every
// partial sum is then an integer below 2^24, exact in any order and with or without fused
// multiply-adds, so the result is compared exactly. Random real data are compared within
// convolve_tolerance.

using ConvolveFn = decltype(convolve_1d);
using Floats = std::vector<float>;

constexpr int kConvGuard = 64;  // floats checked on each side of the output

// How far a GPU result may lie from the CPU's on real data: each is a sum of m = 2r + 1
// rounded products, in some order, so each is within gamma_m = m u / (1 - m u) times the sum
// of the terms' magnitudes S of the exact value (u = 2^-24, one rounding per product and
// per addition; a fused multiply-add rounds less). Their difference is then at most
// 2 gamma_m S; (m + 1) 2^-23 S is a little more, and a tiny absolute part covers underflow.
double convolve_tolerance(const Floats& in, const Floats& mask, int radius, long long i) {
  const long long n = static_cast<long long>(in.size()), m = 2LL * radius + 1;
  double magnitude = 0.0;
  for (long long j = 0; j < m; ++j) {
    const long long k = i + j - radius;
    if (k >= 0 && k < n) magnitude += std::fabs(static_cast<double>(mask[j]) * in[k]);
  }
  return static_cast<double>(m + 1) * std::ldexp(magnitude, -23) + 1e-30;
}

std::string conv_label(int n, int radius) {
  return "n = " + std::to_string(n) + ", radius " + std::to_string(radius);
}

// Runs `fn` on device copies of `in` and `mask` and checks every out[i] against `expected`
// (exactly, or within convolve_tolerance when `tolerant`), the guard floats around the
// output (still the poison) and both inputs (unchanged). The offsets shift each device
// pointer by that many floats (pointers that are not 16-byte aligned).
void check_convolve(ConvolveFn* fn, const Floats& in, const Floats& mask, int radius, const Floats& expected,
                    bool tolerant = false, int in_offset = 0, int out_offset = 0, int mask_offset = 0) {
  // Prepare: the inputs after their filler floats, a poisoned output (0xFFFFFFFF, a NaN).
  const int n = static_cast<int>(in.size());
  Floats in_padded(static_cast<std::size_t>(in_offset), 0.0f), mask_padded(static_cast<std::size_t>(mask_offset), 0.0f);
  in_padded.insert(in_padded.end(), in.begin(), in.end());
  mask_padded.insert(mask_padded.end(), mask.begin(), mask.end());
  lab::DeviceBuffer<float> din(in_padded), dmask(mask_padded), dout(kConvGuard + out_offset + in.size() + kConvGuard);
  dout.poison(0xFF);
  float* out = dout.data() + kConvGuard + out_offset;

  // Run.
  fn(din.data() + in_offset, out, n, dmask.data() + mask_offset, radius);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());

  // Verify.
  const Floats all = dout.download();
  const auto begin = all.begin() + kConvGuard + out_offset;
  const Floats result(begin, begin + static_cast<long>(n));
  if (tolerant) {
    const lab::Mismatch m = lab::compare_with(
        expected.data(), result.data(), expected.size(),
        [&, i = std::size_t{0}](float e, float a) mutable {
          const double tol = convolve_tolerance(in, mask, radius, static_cast<long long>(i++));
          return lab::within(e, a, lab::Tolerance{tol, 0.0});
        },
        "output");
    EXPECT_TRUE(lab::as_assertion(m)) << "tolerance per output: (2 radius + 2) * 2^-23 * sum of |mask[j] * in[k]|";
  } else {
    EXPECT_TRUE(lab::as_assertion(lab::compare_exact(expected, result, "output")));
  }
  const Floats before(all.begin(), begin), after(begin + static_cast<long>(n), all.end());
  EXPECT_ARRAY_EQ(std::vector<unsigned>(before.size(), 0xFFFFFFFFu), lab::bits_of(before))
      << "convolve_1d wrote before out[0]";
  EXPECT_ARRAY_EQ(std::vector<unsigned>(after.size(), 0xFFFFFFFFu), lab::bits_of(after))
      << "convolve_1d wrote past out[n - 1]: threads past the end must not write";
  EXPECT_BITS_EQ(in_padded, din.download()) << "the input was modified";
  EXPECT_BITS_EQ(mask_padded, dmask.download()) << "the mask was modified";
}

// The same against the CPU version, on small integer data (exact) of n elements.
void check_convolve_integers(ConvolveFn* fn, int n, int radius, const std::string& label) {
  const lab::Seed seed = lab::case_seed("convolve_" + label, 4099ull * static_cast<unsigned>(n) + radius);
  SCOPED_TRACE(conv_label(n, radius) + ", integers, " + lab::seed_note(seed));
  const Floats in = lab::integer_floats(static_cast<std::size_t>(n), -8, 8, seed);
  const Floats mask = lab::integer_floats(2 * static_cast<std::size_t>(radius) + 1, -4, 4,
                                          lab::derive_seed(seed, "mask"));
  Floats expected(in.size());
  convolve_1d_cpu(in.data(), expected.data(), n, mask.data(), radius);
  check_convolve(fn, in, mask, radius, expected);
}

// A worked example: in = 1 2 3 4 5, mask = 1 10 100 (radius 1), so
// out[i] = 1 in[i-1] + 10 in[i] + 100 in[i+1], with in[-1] = in[5] = 0 (ghost cells).
const Floats kConvIn{1, 2, 3, 4, 5};
const Floats kConvMask{1, 10, 100};
const Floats kConvOut{10 + 200, 1 + 20 + 300, 2 + 30 + 400, 3 + 40 + 500, 4 + 50};  // 210 321 432 543 54
// A radius larger than n: in = 1 2, radius 3, mask = 1 .. 7. out[0] = mask[3] in[0] +
// mask[4] in[1] = 4 + 10; out[1] = mask[2] in[0] + mask[3] in[1] = 3 + 8; the other five
// terms of each are ghosts.
const Floats kWideIn{1, 2};
const Floats kWideMask{1, 2, 3, 4, 5, 6, 7};
const Floats kWideOut{14, 11};

TEST(ConvolveCpu, HandComputedExamples) {
  Floats out(5, -1.0f);
  convolve_1d_cpu(kConvIn.data(), out.data(), 5, kConvMask.data(), 1);
  EXPECT_EQ(out, kConvOut);
  Floats wide(2, -1.0f);
  convolve_1d_cpu(kWideIn.data(), wide.data(), 2, kWideMask.data(), 3);
  EXPECT_EQ(wide, kWideOut);
  // Radius 0: a scaling.
  const Floats three{3};
  convolve_1d_cpu(kConvIn.data(), out.data(), 5, three.data(), 0);
  EXPECT_EQ(out, (Floats{3, 6, 9, 12, 15}));
}

// n = 0 writes nothing.
TEST(ConvolveCpu, EmptyArray) {
  float untouched = 7.0f;
  convolve_1d_cpu(kConvIn.data(), &untouched, 0, kConvMask.data(), 1);
  EXPECT_EQ(untouched, 7.0f);
}

// The checks, each on one implementation of convolve_1d.

// The two worked examples, against the values worked out by hand.
void convolve_hand_examples(ConvolveFn* fn) {
  check_convolve(fn, kConvIn, kConvMask, 1, kConvOut);
  check_convolve(fn, kWideIn, kWideMask, 3, kWideOut);
}

// Sizes from 1 up, below, at and above multiples of any block (31, 32, 33, 255 .. 257,
// 1023 .. 1025), each with radii from 0 (a scaling) to 257.
void convolve_sizes_and_radii(ConvolveFn* fn) {
  for (int n : {1, 2, 3, 7, 31, 32, 33, 255, 256, 257, 1000, 1023, 1024, 1025, 4097, 65537}) {
    for (int radius : {0, 1, 2, 5, 16, 100, 257}) check_convolve_integers(fn, n, radius, "sizes");
  }
}

// A radius as large as n or larger, up to kConvolveMaxRadius: most terms are ghost cells,
// and a halo is wider than the block's own part of the array.
void convolve_radius_larger_than_n(ConvolveFn* fn) {
  for (auto [n, radius] : {std::pair{1, 1}, std::pair{1, kConvolveMaxRadius}, std::pair{2, 3}, std::pair{5, 5},
                           std::pair{5, 6}, std::pair{5, kConvolveMaxRadius}, std::pair{100, 101},
                           std::pair{100, 1000}, std::pair{257, kConvolveMaxRadius},
                           std::pair{3000, kConvolveMaxRadius}}) {
    check_convolve_integers(fn, n, radius, "wide");
  }
}

// The boundaries exactly, without the CPU version. A mask of ones over an input of ones
// counts the cells of each window inside [0, n): min(i, r) + min(n - 1 - i, r) + 1. A mask
// that is 1 at one place j only shifts: out[i] = in[i + j - r], or 0 where that is a ghost.
void convolve_boundaries_exactly(ConvolveFn* fn) {
  for (auto [n, radius] : {std::pair{1000, 1}, std::pair{1000, 7}, std::pair{1000, 300}, std::pair{1000, 999},
                           std::pair{1000, kConvolveMaxRadius}, std::pair{300, 200}}) {
    SCOPED_TRACE("window counts, " + conv_label(n, radius));
    Floats expected(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) expected[i] = static_cast<float>(std::min(i, radius) + std::min(n - 1 - i, radius) + 1);
    const Floats ones(static_cast<std::size_t>(n), 1.0f), mask(2 * static_cast<std::size_t>(radius) + 1, 1.0f);
    check_convolve(fn, ones, mask, radius, expected);
  }
  const int n = 1000, radius = 5;
  Floats in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i + 1);  // no input is 0: a ghost read as data shows
  for (int j : {0, 1, radius, 2 * radius - 1, 2 * radius}) {
    SCOPED_TRACE("shift by " + std::to_string(j - radius) + " (mask 1 at " + std::to_string(j) + "), " +
                 conv_label(n, radius));
    Floats mask(2 * radius + 1, 0.0f);
    mask[j] = 1.0f;
    Floats expected(n);
    for (int i = 0; i < n; ++i) {
      const int k = i + j - radius;
      expected[i] = (k >= 0 && k < n) ? in[k] : 0.0f;
    }
    check_convolve(fn, in, mask, radius, expected);
  }
}

// Random real data in [-1, 1), compared with the CPU within convolve_tolerance.
void convolve_random_real_data(ConvolveFn* fn) {
  for (auto [n, radius] : {std::pair{100003, 7}, std::pair{30001, 300}, std::pair{4099, kConvolveMaxRadius}}) {
    const lab::Seed seed = lab::case_seed("convolve_real", 4099ull * static_cast<unsigned>(n) + radius);
    SCOPED_TRACE(conv_label(n, radius) + ", real data, " + lab::seed_note(seed));
    const Floats in = lab::random_floats(static_cast<std::size_t>(n), -1.0f, 1.0f, seed);
    const Floats mask =
        lab::random_floats(2 * static_cast<std::size_t>(radius) + 1, -1.0f, 1.0f, lab::derive_seed(seed, "mask"));
    Floats expected(in.size());
    convolve_1d_cpu(in.data(), expected.data(), n, mask.data(), radius);
    check_convolve(fn, in, mask, radius, expected, true);
  }
}

// Large arrays: many blocks (index arithmetic, the last partial block).
void convolve_large_arrays(ConvolveFn* fn) {
  check_convolve_integers(fn, (1 << 22) + 3, 8, "large");
  check_convolve_integers(fn, (1 << 20) + 1, 200, "large");
}

// Input, output and mask pointers that are not 16-byte aligned.
void convolve_unaligned_pointers(ConvolveFn* fn) {
  const int n = 1000, radius = 3;
  const lab::Seed seed = lab::case_seed("convolve_unaligned");
  const Floats in = lab::integer_floats(n, -8, 8, seed);
  const Floats mask = lab::integer_floats(2 * radius + 1, -4, 4, lab::derive_seed(seed, "mask"));
  Floats expected(n);
  convolve_1d_cpu(in.data(), expected.data(), n, mask.data(), radius);
  for (auto [a, b, c] : {std::tuple{1, 0, 0}, std::tuple{0, 1, 0}, std::tuple{0, 0, 1}, std::tuple{3, 2, 1}}) {
    SCOPED_TRACE("in + " + std::to_string(a) + ", out + " + std::to_string(b) + ", mask + " + std::to_string(c) +
                 " floats, " + lab::seed_note(seed));
    check_convolve(fn, in, mask, radius, expected, false, a, b, c);
  }
}

// Calls in a row with other masks and radii: nothing may carry over from the call before
// (a mask copied to constant memory once, or a radius kept from the first call).
void convolve_each_call_uses_its_own_mask(ConvolveFn* fn) {
  int call = 0;
  for (int radius : {3, 1, 3, 0, 100, 2}) check_convolve_integers(fn, 5000, radius, "calls_" + std::to_string(++call));
}

// n = 0 writes nothing and raises no CUDA error. A real call comes first: an implementation
// that does nothing at all must not pass this check.
void convolve_empty_array_does_nothing(ConvolveFn* fn) {
  check_convolve(fn, kConvIn, kConvMask, 1, kConvOut);
  lab::DeviceBuffer<float> in(16), mask(16), out(16);
  in.poison(0);
  mask.poison(0);
  out.poison(0xFF);
  for (int radius : {0, 1, 7}) fn(in.data(), out.data(), 0, mask.data(), radius);
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  LAB_CUDA_CHECK(cudaGetLastError());
  EXPECT_ARRAY_EQ(std::vector<unsigned>(16, 0xFFFFFFFFu), lab::bits_of(out.download()));
}

// The interface function, one test per check (the part's verdict).
class PartConvolve1dGpu : public lab::GpuTestWithParam<std::string> {};

TEST_P(PartConvolve1dGpu, HandComputedExamples) { convolve_hand_examples(convolve_1d); }
TEST_P(PartConvolve1dGpu, SizesAndRadii) { convolve_sizes_and_radii(convolve_1d); }
TEST_P(PartConvolve1dGpu, RadiusLargerThanN) { convolve_radius_larger_than_n(convolve_1d); }
TEST_P(PartConvolve1dGpu, BoundariesExactly) { convolve_boundaries_exactly(convolve_1d); }
TEST_P(PartConvolve1dGpu, RandomRealData) { convolve_random_real_data(convolve_1d); }
TEST_P(PartConvolve1dGpu, LargeArrays) { convolve_large_arrays(convolve_1d); }
TEST_P(PartConvolve1dGpu, UnalignedPointers) { convolve_unaligned_pointers(convolve_1d); }
TEST_P(PartConvolve1dGpu, EachCallUsesItsOwnMask) { convolve_each_call_uses_its_own_mask(convolve_1d); }
TEST_P(PartConvolve1dGpu, EmptyArrayDoesNothing) { convolve_empty_array_does_nothing(convolve_1d); }

INSTANTIATE_TEST_SUITE_P(Registered, PartConvolve1dGpu, ::testing::Values(std::string("convolve_1d")),
                         lab::variant_test_name);

// Every version registered with LAB_REGISTER_VARIANT(convolve_1d, ...): all the checks in
// one test each (weighed 0 like the part's; they earn nothing, but a version you register
// should be right).
class PartConvolve1dVersionsGpu : public lab::GpuTestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PartConvolve1dVersionsGpu);

TEST_P(PartConvolve1dVersionsGpu, AllChecks) {
  auto* fn = lab::local_variants().get<ConvolveFn>("convolve_1d", GetParam());
  ASSERT_NE(fn, nullptr);
  SCOPED_TRACE("convolve_1d version '" + GetParam() + "'");
  convolve_hand_examples(fn);
  convolve_sizes_and_radii(fn);
  convolve_radius_larger_than_n(fn);
  convolve_boundaries_exactly(fn);
  convolve_random_real_data(fn);
  convolve_large_arrays(fn);
  convolve_unaligned_pointers(fn);
  convolve_each_call_uses_its_own_mask(fn);
  convolve_empty_array_does_nothing(fn);
}

INSTANTIATE_TEST_SUITE_P(Registered, PartConvolve1dVersionsGpu,
                         ::testing::ValuesIn(lab::registered_variants("convolve_1d")), lab::variant_test_name);

}  // namespace
