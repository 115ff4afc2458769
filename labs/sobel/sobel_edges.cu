// Provided by the kit: do not edit. Runs a Sobel kernel on an image file so you can look
// at its edges.
//
//   ./build/dev/bin/sobel_edges photo.ppm edges.pgm                  your kernel
//   ./build/dev/bin/sobel_edges photo.ppm edges.pgm --threshold 40000
//   ./build/dev/bin/sobel_edges photo.ppm ref.pgm --reference        the reference's kernel
//   ./build/dev/bin/sobel_edges photo.ppm edges.pgm --check          also compare with the CPU
//   ./build/dev/bin/sobel_edges --make-test-image test.pgm 1920 1080 a picture to try it on
//
// The input is any PGM or PPM file (P2, P3, P5, P6; 8 or 16 bits). A colour image becomes
// gray the way the homework's reader does it, by taking the red channel (--luma uses
// the weighted sum 0.299 R + 0.587 G + 0.114 B instead); 16-bit samples are scaled to
// 0..255. The output is a binary PGM: white edges on black. View it with any image
// viewer (GIMP, IrfanView, eog, display), or convert it, e.g. `convert edges.pgm edges.png`.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "lab/bench.h"
#include "lab/buffer.h"
#include "lab/device.h"
#include "lab/event_timer.h"
#include "lab/image.h"
#include "sobel.h"

namespace {

using SobelFn = decltype(sobel);

void usage(FILE* out) {
  std::fprintf(out,
               "usage: sobel_edges IN.ppm|IN.pgm OUT.pgm [--threshold T] [--luma] [--reference[=PATH]] [--check]\n"
               "       sobel_edges --make-test-image OUT.pgm WIDTH HEIGHT [--seed N]\n\n"
               "Finds the edges of IN with a Sobel kernel on the GPU and writes them to OUT (binary PGM,\n"
               "255 = edge). Colour images become gray by their red channel, as in the homework.\n\n"
               "  --threshold T        an edge where Gx^2 + Gy^2 > T (default %d; the maximum is %d)\n"
               "  --luma               gray = (299 R + 587 G + 114 B) / 1000 instead of the red channel\n"
               "  --reference[=PATH]   run the reference solution's kernel (default library: %s)\n"
               "  --check              also run the CPU version and report the pixels that differ\n"
               "  --make-test-image    write a synthetic gray test picture (no GPU needed)\n"
               "  --seed N             the test picture's noise seed (default 1)\n\n"
               "Exit status: 0 done, 1 the GPU result differs from the CPU (--check) or a CUDA error,\n"
               "2 bad arguments or a bad image file, 3 no GPU, 4 no usable reference library.\n",
               kSobelDefaultThreshold, kSobelMaxMagnitude,
               LABKIT_DEFAULT_REFERENCE[0] != '\0' ? LABKIT_DEFAULT_REFERENCE : "none built; give PATH");
}

[[noreturn]] void bad_usage(const std::string& problem) {
  std::fprintf(stderr, "sobel_edges: %s\n\n", problem.c_str());
  usage(stderr);
  std::exit(2);
}

// A decimal integer in [lo, hi], or a usage error naming `what`.
long long parse_int(const std::string& what, const std::string& text, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    bad_usage(what + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
              text + "'");
  }
  return v;
}

bool is_shared_library(const std::string& s) {
  return s.size() > 3 && (s.compare(s.size() - 3, 3, ".so") == 0 || s.find(".so.") != std::string::npos);
}

int make_test_image(const std::string& path, const std::string& w_text, const std::string& h_text,
                    unsigned long long seed) {
  const int w = static_cast<int>(parse_int("WIDTH", w_text, 1, 32768));
  const int h = static_cast<int>(parse_int("HEIGHT", h_text, 1, 32768));
  const std::vector<unsigned char> pixels = sobel_test_image(w, h, seed);
  lab::write_pnm(path, lab::gray8_image(w, h, pixels.data()));
  std::printf("wrote %s: %d x %d synthetic test picture (8-bit gray)\n", path.c_str(), w, h);
  return 0;
}

int run(int argc, char** argv) {
  std::vector<std::string> positional;
  int threshold = kSobelDefaultThreshold;
  bool luma = false, check = false, use_reference = false, make = false;
  std::string reference_path = LABKIT_DEFAULT_REFERENCE;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (i + 1 >= argc) bad_usage(flag + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg == "--threshold") {
      threshold = static_cast<int>(parse_int("--threshold", value(arg), -2147483647LL - 1, 2147483647LL));
    } else if (arg.rfind("--threshold=", 0) == 0) {
      threshold = static_cast<int>(parse_int("--threshold", arg.substr(12), -2147483647LL - 1, 2147483647LL));
    } else if (arg == "--luma") {
      luma = true;
    } else if (arg == "--check") {
      check = true;
    } else if (arg == "--reference") {
      use_reference = true;
      if (i + 1 < argc && is_shared_library(argv[i + 1])) reference_path = argv[++i];
    } else if (arg.rfind("--reference=", 0) == 0) {
      use_reference = true;
      reference_path = arg.substr(12);
    } else if (arg == "--make-test-image") {
      make = true;
    } else if (arg == "--seed") {
      seed = static_cast<unsigned long long>(parse_int("--seed", value(arg), 0, 9223372036854775807LL));
    } else if (arg.rfind("--", 0) == 0) {
      bad_usage("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  if (make) {
    if (positional.size() != 3) bad_usage("--make-test-image needs OUT.pgm WIDTH HEIGHT");
    return make_test_image(positional[0], positional[1], positional[2], seed);
  }
  if (positional.size() != 2) bad_usage("give an input image and an output file name");
  const std::string& in_path = positional[0];
  const std::string& out_path = positional[1];

  // Read and convert first: a bad file is reported even on a machine without a GPU.
  const lab::Image image = lab::read_pnm(in_path);
  const std::vector<unsigned char> gray = lab::to_gray8(image, luma ? lab::GrayFrom::Luma : lab::GrayFrom::Red);
  const int w = image.width, h = image.height;

  std::string why;
  if (!lab::gpu_available(&why)) {
    std::fprintf(stderr,
                 "sobel_edges: no CUDA GPU (%s). The kernel needs an NVIDIA GPU; "
                 "--make-test-image works without one.\n",
                 why.c_str());
    return 3;
  }
  SobelFn* fn = sobel;
  std::string who = "your kernel (sobel.cu)";
  if (use_reference) {
    if (reference_path.empty()) {
      std::fprintf(stderr,
                   "sobel_edges: no reference library was built with this copy of the kit (student repositories "
                   "have none); give one with --reference=PATH/libsobel_solution.so\n");
      return 4;
    }
    const lab::bench::Reference reference = lab::bench::Reference::load(reference_path);
    if (!reference.loaded()) {
      std::fprintf(stderr, "sobel_edges: %s\n", reference.error().c_str());
      return 4;
    }
    fn = reference.registry()->get<SobelFn>("sobel", "default");
    if (fn == nullptr) {
      std::fprintf(stderr, "sobel_edges: %s has no 'default' variant of sobel\n", reference_path.c_str());
      return 4;
    }
    who = "the reference (" + reference_path + ")";
  }

  // Run on the GPU: upload, one timed call, download.
  lab::DeviceBuffer<unsigned char> din(gray), dout(gray.size());
  lab::EventTimer timer;
  timer.start();
  fn(din.data(), dout.data(), w, h, threshold);
  timer.stop();
  LAB_CUDA_CHECK(cudaDeviceSynchronize());
  const float ms = timer.elapsed_ms();
  const std::vector<unsigned char> edges = dout.download();
  lab::write_pnm(out_path, lab::gray8_image(w, h, edges.data()));

  std::size_t edge_pixels = 0, other = 0;
  for (unsigned char v : edges) {
    edge_pixels += v == 255;
    other += v != 255 && v != 0;
  }
  std::printf("%s: %d x %d, %s, maxval %d%s\n", in_path.c_str(), w, h, image.channels == 3 ? "colour" : "gray",
              image.maxval, image.channels == 3 ? (luma ? " (gray = BT.601 luma)" : " (gray = red channel)") : "");
  std::printf("%s: %zu edge pixels (%.2f%%) at threshold %d, by %s in %.3f ms (one cold call)\n", out_path.c_str(),
              edge_pixels, 100.0 * static_cast<double>(edge_pixels) / static_cast<double>(edges.size()), threshold,
              who.c_str(), ms);
  int status = 0;
  if (other > 0) {
    std::printf("warning: %zu output pixels are neither 0 nor 255\n", other);
    status = 1;
  }
  if (check) {
    std::vector<unsigned char> expected(gray.size());
    sobel_cpu(gray.data(), expected.data(), w, h, threshold);
    std::size_t differ = 0, first = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (expected[i] != edges[i] && differ++ == 0) first = i;
    }
    if (differ == 0) {
      std::printf("check: identical to the CPU version\n");
    } else {
      std::printf("check: %zu pixels differ from the CPU version; the first at (x %zu, y %zu): expected %d, got %d\n",
                  differ, first % static_cast<std::size_t>(w), first / static_cast<std::size_t>(w), expected[first],
                  edges[first]);
      status = 1;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const lab::ImageError& e) {
    std::fprintf(stderr, "sobel_edges: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sobel_edges: %s\n", e.what());
    return 1;
  }
}
