// Provided by the kit. CPU tests of the PGM/PPM reader and writer (lab/image.h).
//   ./bin/common_test --gtest_filter='Pnm*'
//
// Good files round-trip in all four formats (P2, P3, P5, P6), at 8 and 16 bits, with
// comments in odd places; bad files, written by the tests into a temporary folder, must
// each raise lab::ImageError naming the file and the problem, and randomly damaged
// files must never do anything worse.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "lab/data.h"
#include "lab/image.h"

namespace {

namespace fs = std::filesystem;

// A fresh temporary folder per test, removed afterwards.
class PnmFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            ("labkit_image_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + info->name());
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }

  // Writes `bytes` to a file called `name` in the folder; returns its path.
  std::string file(const std::string& name, const std::string& bytes) const {
    const std::string path = (m_dir / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string path(const std::string& name) const { return (m_dir / name).string(); }

 private:
  fs::path m_dir;
};

// The message of the ImageError that reading `path` raises, or "" when it reads fine.
std::string read_error(const std::string& path) {
  try {
    lab::read_pnm(path);
  } catch (const lab::ImageError& e) {
    return e.what();
  }
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

lab::Image random_image(int width, int height, int channels, int maxval, lab::Seed seed) {
  lab::Image img;
  img.width = width;
  img.height = height;
  img.channels = channels;
  img.maxval = maxval;
  lab::Rng rng(seed);
  img.samples.resize(static_cast<std::size_t>(width) * height * channels);
  for (auto& s : img.samples) s = static_cast<std::uint16_t>(rng.between(0, maxval));
  return img;
}

void expect_same(const lab::Image& a, const lab::Image& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.maxval, b.maxval);
  EXPECT_EQ(a.samples, b.samples);
}

// Images written and read back are identical in all four formats, at 8 and 16 bits.
TEST_F(PnmFiles, RoundTripAllFormatsAndDepths) {
  int k = 0;
  for (int channels : {1, 3}) {
    for (int maxval : {1, 15, 255, 256, 1000, 65535}) {
      for (bool binary : {true, false}) {
        for (auto [w, h] : {std::pair{1, 1}, std::pair{7, 5}, std::pair{1, 40}, std::pair{40, 1}}) {
          SCOPED_TRACE("channels " + std::to_string(channels) + ", maxval " + std::to_string(maxval) +
                       (binary ? ", binary" : ", ASCII") + ", " + std::to_string(w) + "x" + std::to_string(h));
          const lab::Image img = random_image(w, h, channels, maxval, lab::case_seed("pnm_round_trip", k));
          const std::string p = path("img" + std::to_string(k++) + (channels == 1 ? ".pgm" : ".ppm"));
          lab::write_pnm(p, img, binary);
          const std::string bytes = slurp(p);
          const char magic = channels == 1 ? (binary ? '5' : '2') : (binary ? '6' : '3');
          ASSERT_GE(bytes.size(), 2u);
          EXPECT_EQ(bytes[0], 'P');
          EXPECT_EQ(bytes[1], magic);
          expect_same(img, lab::read_pnm(p));
        }
      }
    }
  }
}

// 16-bit binary samples are big-endian, on reading and on writing.
TEST_F(PnmFiles, SixteenBitSamplesAreBigEndian) {
  const std::string p = file("be.pgm", std::string("P5 2 1 65535\n\x01\x02\xFF\xFE", 17));
  const lab::Image img = lab::read_pnm(p);
  ASSERT_EQ(img.samples.size(), 2u);
  EXPECT_EQ(img.samples[0], 0x0102);
  EXPECT_EQ(img.samples[1], 0xFFFE);
  EXPECT_EQ(img.bytes_per_sample(), 2);
  lab::write_pnm(path("out.pgm"), img);
  EXPECT_EQ(slurp(path("out.pgm")), std::string("P5\n2 1\n65535\n\x01\x02\xFF\xFE", 17));
}

// Comments may start anywhere in the header, even straight after a number.
TEST_F(PnmFiles, CommentsAnywhereInTheHeader) {
  const std::string ascii = file("c.pgm", "P2# after the magic\n#full line\n  3#right after the width\n# another\n2 "
                                          "#\n255 # before the data\n1 2 3\n# between samples\n4 5 6\n");
  const lab::Image a = lab::read_pnm(ascii);
  EXPECT_EQ(a.width, 3);
  EXPECT_EQ(a.height, 2);
  EXPECT_EQ(a.samples, (std::vector<std::uint16_t>{1, 2, 3, 4, 5, 6}));

  // Binary: a comment right after maxval ends the header at its newline; the data may
  // then contain '#', newlines and spaces, which are samples, not syntax.
  const std::string binary = file("c.ppm", "P6\r\n#c\r\n1\t1 #c\n255#c\n#\n ");
  const lab::Image b = lab::read_pnm(binary);
  EXPECT_EQ(b.channels, 3);
  EXPECT_EQ(b.samples, (std::vector<std::uint16_t>{'#', '\n', ' '}));
}

// A hand-written colour file reads as expected; data after the image is ignored.
TEST_F(PnmFiles, AsciiColourAndTrailingData) {
  const lab::Image img = lab::read_pnm(file("rgb.ppm", "P3\n2 2\n7\n0 1 2  3 4 5\n6 7 0  1 1 1\nP3 junk that follows\n"));
  EXPECT_EQ(img.channels, 3);
  EXPECT_EQ(img.maxval, 7);
  EXPECT_EQ(img.at(1, 0, 2), 5);
  EXPECT_EQ(img.at(0, 1, 1), 7);
  EXPECT_EQ(img.at(1, 1, 0), 1);
}

// ASCII output keeps every line within the 70 characters Netpbm asks for.
TEST_F(PnmFiles, AsciiLinesAreShort) {
  lab::write_pnm(path("wide.ppm"), random_image(100, 3, 3, 65535, 5), false);
  std::ifstream in(path("wide.ppm"));
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    EXPECT_LE(line.size(), 70u);
    ++lines;
  }
  EXPECT_GT(lines, 3);
}

// Gray conversion: gray stays, colour takes the red channel (the homework's rule) or
// BT.601 luma, and other depths are rescaled to 0..255 with rounding.
TEST(PnmGray, ConversionRules) {
  lab::Image rgb;
  rgb.width = 2;
  rgb.height = 1;
  rgb.channels = 3;
  rgb.samples = {200, 10, 20, 0, 255, 0};
  EXPECT_EQ(lab::to_gray8(rgb), (std::vector<unsigned char>{200, 0}));
  // (299*200 + 587*10 + 114*20 + 500) / 1000 = 68; (587*255 + 500) / 1000 = 150.
  EXPECT_EQ(lab::to_gray8(rgb, lab::GrayFrom::Luma), (std::vector<unsigned char>{68, 150}));

  lab::Image deep;
  deep.width = 4;
  deep.height = 1;
  deep.maxval = 65535;
  deep.samples = {0, 128, 32768, 65535};
  // round(v * 255 / 65535): 0, 0.498 -> 0, 127.5 -> 128, 255.
  EXPECT_EQ(lab::to_gray8(deep), (std::vector<unsigned char>{0, 0, 128, 255}));

  lab::Image bits = deep;
  bits.maxval = 1;
  bits.samples = {0, 1, 1, 0};
  EXPECT_EQ(lab::to_gray8(bits), (std::vector<unsigned char>{0, 255, 255, 0}));

  const unsigned char px[] = {9, 8, 7, 6, 5, 4};
  const lab::Image g = lab::gray8_image(3, 2, px);
  EXPECT_EQ(g.maxval, 255);
  EXPECT_EQ(lab::to_gray8(g), (std::vector<unsigned char>(px, px + 6)));
  EXPECT_THROW(lab::gray8_image(0, 2, px), lab::ImageError);
}

// Every malformed file raises ImageError naming the file and the problem.
TEST_F(PnmFiles, MalformedFilesGiveClearErrors) {
  struct Bad {
    const char* name;
    std::string bytes;
    const char* problem;  // part of the expected message
  };
  const std::vector<Bad> bad = {
      {"empty", "", "empty file"},
      {"text", "hello world\n", "bad magic number 'he'"},
      {"only_p", "P", "bad magic number 'P'"},
      {"p6_glued", "P6x 1 1 255\n", "expected whitespace after P6"},
      {"pbm", "P1\n1 1\n1\n", "PBM"},
      {"pbm_binary", "P4\n1 1\n\x80", "PBM"},
      {"pam", "P7\nWIDTH 1\n", "PAM"},
      {"no_width", "P5\n", "the file ends before the width"},
      {"no_height", "P5 4", "the file ends before the height"},
      {"no_maxval", "P5 4 4 # comment\n", "the file ends before the maxval"},
      {"negative_width", "P5 -4 4 255\n", "negative width '-4'"},
      {"negative_height", "P2 4 -1 255\n", "negative height"},
      {"zero_width", "P5 0 4 255\n", "width is 0"},
      {"zero_height", "P6 4 0 255\n", "height is 0"},
      {"alpha_width", "P5 abc 4 255\n", "non-numeric width 'abc'"},
      {"suffix_width", "P5 4x 4 255\n", "non-numeric width '4x'"},
      {"float_maxval", "P5 4 4 255.0\n", "non-numeric maxval '255.0'"},
      {"huge_width", "P5 99999999999999999999999 1 255\n", "width of"},
      {"width_over_int", "P5 3000000000 1 255\n", "width 3000000000 is too large"},
      {"too_many_samples", "P6 100000 100000 255\n\x01\x02", "more samples than this reader accepts"},
      {"maxval_zero", "P5 1 1 0\n\x00", "maxval is 0"},
      {"maxval_too_big", "P5 1 1 65536\n\x00\x00", "maxval 65536 is too large"},
      {"glued_maxval", "P5 1 1 255x", "non-numeric maxval '255x'"},
      {"header_only", "P5 4 4 255", "no pixel data after the header"},
      {"comment_to_eof", "P5 4 4 255#no newline", "no pixel data after the header"},
      {"binary_short", "P5 4 4 255\n0123456789", "only 10 bytes follow the header"},
      {"binary_16_odd", std::string("P5 2 1 65535\n\x01\x02\x03", 16), "only 3 bytes follow"},
      {"rgb_short", "P6 2 2 255\n012345678", "truncated pixel data"},
      {"huge_but_short", "P6 16000 16000 255\n\x01\x02\x03", "768000000 bytes, but only 3"},
      {"sample_above_maxval", std::string("P5 2 1 100\n\x00\xC8", 13), "sample value 200 at pixel (x 1, y 0)"},
      {"sample16_above_maxval", std::string("P6 1 1 1000\n\x00\x01\x03\xE9\x00\x00", 18),
       "sample value 1001 at pixel (x 0, y 0) channel G"},
      {"ascii_above_maxval", "P2 2 2 10\n1 2\n3 11\n", "(11) is above maxval 10"},
      {"ascii_huge_sample", "P2 1 1 255\n123456789012345678901234\n", "is above maxval 255"},
      {"ascii_alpha_sample", "P3 1 1 255\n1 x 3\n", "non-numeric sample at pixel (x 0, y 0) channel G 'x'"},
      {"ascii_negative_sample", "P2 2 1 255\n1 -2\n", "negative sample"},
      {"ascii_short_precheck", "P2 3 3 255\n1 2 3 4\n", "promises 9 ASCII samples"},
      {"ascii_short", "P2 2 2 255\n1 2 3        \n", "found 3 of the 4 samples"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.name);
    const std::string p = file(std::string(b.name) + ".pnm", b.bytes);
    const std::string message = read_error(p);
    ASSERT_FALSE(message.empty()) << "reading " << b.name << " should have failed";
    EXPECT_NE(message.find(p), std::string::npos) << "the message must name the file: " << message;
    EXPECT_NE(message.find(b.problem), std::string::npos) << "expected '" << b.problem << "' in: " << message;
  }
}

// Files that cannot be opened are ImageErrors too, naming the path.
TEST_F(PnmFiles, UnopenablePaths) {
  const std::string missing = path("does_not_exist.pgm");
  EXPECT_NE(read_error(missing).find("cannot open for reading"), std::string::npos) << read_error(missing);
  const std::string dir = path("");
  EXPECT_NE(read_error(dir).find("is a directory"), std::string::npos) << read_error(dir);
  const lab::Image img = random_image(2, 2, 1, 255, 1);
  try {
    lab::write_pnm(path("no/such/folder/x.pgm"), img);
    ADD_FAILURE() << "writing into a missing folder should fail";
  } catch (const lab::ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open for writing"), std::string::npos) << e.what();
  }
}

// The writer refuses inconsistent images instead of writing a broken file.
TEST_F(PnmFiles, WriterRejectsInconsistentImages) {
  const lab::Image good = random_image(3, 2, 3, 255, 2);
  auto expect_rejected = [&](lab::Image img, const char* problem) {
    SCOPED_TRACE(problem);
    try {
      lab::write_pnm(path("bad.ppm"), img);
      ADD_FAILURE() << "write_pnm accepted an inconsistent image";
    } catch (const lab::ImageError& e) {
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
  };
  lab::Image img = good;
  img.channels = 2;
  expect_rejected(img, "channels must be 1 (gray) or 3 (RGB)");
  img = good;
  img.samples.pop_back();
  expect_rejected(img, "holds 17 samples");
  img = good;
  img.maxval = 70000;
  expect_rejected(img, "maxval must be 1..65535");
  img = good;
  img.maxval = 10;
  img.samples.assign(img.samples.size(), 3);
  img.samples[4] = 11;
  expect_rejected(img, "sample value 11 at pixel (x 1, y 0) channel G");
  img = good;
  img.width = 0;
  expect_rejected(img, "width and height must be at least 1");
}

// Randomly damaged versions of valid files either read or raise ImageError: nothing else.
TEST_F(PnmFiles, DamagedFilesNeverCrash) {
  const std::vector<std::string> originals = {
      "P2\n# c\n3 2\n255\n1 2 3\n4 5 6\n",
      std::string("P5\n2 2\n255\n\x00\x01\x02\x03", 15),
      std::string("P6 1 2 65535\n\x00\x01\x00\x02\x00\x03\x01\x01\x01\x02\x01\x03", 25),
      "P3 1 1 9\n1 2 3\n",
  };
  lab::Rng rng(lab::case_seed("pnm_damage"));
  int read_ok = 0, rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string bytes = originals[trial % originals.size()];
    const int edits = 1 + static_cast<int>(rng.below(3));
    for (int e = 0; e < edits; ++e) {
      const auto kind = rng.below(3);
      if (kind == 0 && !bytes.empty()) {
        bytes[rng.below(bytes.size())] = static_cast<char>(rng.below(256));  // overwrite a byte
      } else if (kind == 1 && !bytes.empty()) {
        bytes.resize(rng.below(bytes.size()));  // cut the file short
      } else {
        bytes.insert(bytes.begin() + static_cast<long>(rng.below(bytes.size() + 1)), "0123456789 #\n-"[rng.below(14)]);
      }
    }
    const std::string p = file("damaged" + std::to_string(trial) + ".pnm", bytes);
    try {
      const lab::Image img = lab::read_pnm(p);
      lab::validate(img);  // whatever was read is a consistent image
      ++read_ok;
    } catch (const lab::ImageError&) {
      ++rejected;
    }
  }
  EXPECT_EQ(read_ok + rejected, 400);
  EXPECT_GT(rejected, 0);
}

}  // namespace
