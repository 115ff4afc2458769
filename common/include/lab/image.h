// Provided by the kit. Netpbm image files (PGM and PPM) for the sobel lab and its tool.
//
//   lab::Image img = lab::read_pnm("photo.ppm");          // P2, P3, P5 or P6
//   std::vector<unsigned char> gray = lab::to_gray8(img);   // 8-bit grayscale, row-major
//   lab::write_pnm("edges.pgm", lab::gray8_image(w, h, gray.data()));
//
// The reader follows the Netpbm description of the formats: a magic number (P2/P5 gray,
// P3/P6 colour; P2/P3 are ASCII, P5/P6 binary), then width, height and maxval as
// decimal numbers separated by whitespace, with comments (from '#' to the end of the
// line) allowed anywhere in the header; maxval 1..65535; one whitespace character
// (or a comment ending in a newline) after maxval; then the samples, row by row, RGB
// interleaved for colour. Binary samples take one byte when maxval < 256 and two
// big-endian bytes otherwise. Data after the last sample is ignored (Netpbm allows
// several images in one file; this reader reads the first). In the ASCII formats,
// comments are also accepted between samples.
//
// Every problem with a file (it cannot be opened, a bad magic number, a missing,
// zero, negative, non-numeric or absurdly large width/height/maxval, a sample above
// maxval, data cut short) raises lab::ImageError with a message that names the file
// and the problem; no file makes the reader crash or allocate more than the data the
// file really holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace lab {

/// A malformed, truncated, unreadable or unwritable image file; what() names the file and the problem.
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Images larger than this many samples (width × height × channels) are refused, so that
/// a corrupt header cannot ask for an absurd allocation: 2^30 samples is a 32768 × 32768
/// gray image or an 18918 × 18918 colour one.
constexpr std::uint64_t kMaxImageSamples = std::uint64_t{1} << 30;

/// A gray (1 channel) or RGB (3 channels) image of 8- or 16-bit samples.
///
/// Samples are kept as 16-bit values whatever the depth of the file (a sample never
/// exceeds maxval); `maxval` says the depth: at most 255 means 8-bit, above means 16-bit.
struct Image {
  int width = 0;                         ///< pixels per row, ≥ 1 in a valid image
  int height = 0;                        ///< rows, ≥ 1 in a valid image
  int channels = 1;                      ///< 1 (gray, PGM) or 3 (RGB, PPM)
  int maxval = 255;                      ///< the largest sample value, 1..65535
  std::vector<std::uint16_t> samples{};  ///< width × height × channels, row-major, RGB interleaved

  /// Number of pixels (width × height).
  std::size_t pixels() const { return static_cast<std::size_t>(width) * static_cast<std::size_t>(height); }
  /// Bytes one sample takes in a binary file: 1 (maxval ≤ 255) or 2.
  int bytes_per_sample() const { return maxval > 255 ? 2 : 1; }
  /// Sample `c` (0 = red or gray, 1 = green, 2 = blue) of pixel (x, y).
  std::uint16_t at(int x, int y, int c = 0) const {
    return samples[(static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) *
                       static_cast<std::size_t>(channels) +
                   static_cast<std::size_t>(c)];
  }
};

/// Reads a P2, P3, P5 or P6 file. Throws lab::ImageError for any problem.
Image read_pnm(const std::string& path);

/// Writes `image` as PGM (1 channel) or PPM (3 channels): binary P5/P6 by default, ASCII
/// P2/P3 when `binary` is false (lines of at most 70 characters). Throws lab::ImageError
/// when the image is inconsistent (see validate()) or the file cannot be written.
void write_pnm(const std::string& path, const Image& image, bool binary = true);

/// Throws lab::ImageError (prefixed with `what`) unless the image is consistent: width and
/// height ≥ 1, channels 1 or 3, maxval 1..65535, samples.size() = width × height ×
/// channels ≤ kMaxImageSamples, and every sample ≤ maxval.
void validate(const Image& image, const std::string& what = "image");

/// How a colour image becomes gray.
enum class GrayFrom {
  Red,   ///< the red channel, as the Sobel homework's reader does (pic[i] = buf[3 * i])
  Luma,  ///< ITU-R BT.601 luma: (299 R + 587 G + 114 B) / 1000, rounded to nearest
};

/// The image as 8-bit grayscale, width × height bytes, row-major.
///
/// Gray images keep their one channel; colour images use `from` (default: the red
/// channel, the homework's rule). The value v (0..maxval) then becomes
/// round(v × 255 / maxval) = (v × 255 + maxval / 2) / maxval in integers, which is v
/// itself when maxval = 255. Throws lab::ImageError for an inconsistent image.
std::vector<unsigned char> to_gray8(const Image& image, GrayFrom from = GrayFrom::Red);

/// An 8-bit gray image (maxval 255) holding `width × height` bytes from `pixels`.
Image gray8_image(int width, int height, const unsigned char* pixels);

}  // namespace lab
