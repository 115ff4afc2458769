// Provided by the kit: do not edit. Correctness tests of sobel.
//
//   ./build/dev/bin/sobel_test                                 all tests
//   ./build/dev/bin/sobel_test --gtest_filter='*w1023_h769*'   one image size
//   ./build/dev/bin/sobel_test --seed=7                        other random images
//
// Each GPU test: make an image and the expected edges on the CPU (sobel_cpu), poison the
// output with the byte 119 (neither 0 nor 255, so a pixel your kernel skips cannot pass),
// run sobel, then compare every pixel exactly, check the bytes just before and after the
// output, and check that the input is unchanged. Images: shapes (a filled rectangle, a
// disc), gradients, noise, a synthetic picture; sizes from 1 x 1 to 4099 x 4097,
// including thin ones (1 x N, N x 1) and sizes that are not multiples of any block.
#include <climits>
#include <string>
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

}  // namespace
