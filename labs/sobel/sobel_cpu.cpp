// Provided by the kit: do not edit. The sequential Sobel filter of the homework: two
// nested loops over the interior pixels, the two 3×3 masks, the squared magnitude
// against the threshold. Unlike the homework's listing it also writes the border (0),
// since an output pixel nobody writes holds garbage. The tests compare your kernel with
// it exactly, and the bench times it (sdkTimer) for your speedup. Also the sequential
// 1-D convolution of the further part, with ghost cells outside the array.
#include <cstddef>

#include "lab/data.h"
#include "sobel.h"

void sobel_cpu(const unsigned char* in, unsigned char* out, int width, int height, int threshold) {
  if (width <= 0 || height <= 0) return;
  const std::size_t w = static_cast<std::size_t>(width);
  for (int i = 0; i < height; ++i) {  // i: row (y), as in the homework
    unsigned char* e = out + static_cast<std::size_t>(i) * w;
    if (i == 0 || i == height - 1) {
      for (int j = 0; j < width; ++j) e[j] = 0;
      continue;
    }
    const unsigned char* above = in + (static_cast<std::size_t>(i) - 1) * w;
    const unsigned char* row = above + w;
    const unsigned char* below = row + w;
    e[0] = 0;
    for (int j = 1; j < width - 1; ++j) {  // j: column (x)
      const int gx = (above[j + 1] + 2 * row[j + 1] + below[j + 1]) - (above[j - 1] + 2 * row[j - 1] + below[j - 1]);
      const int gy = (below[j - 1] + 2 * below[j] + below[j + 1]) - (above[j - 1] + 2 * above[j] + above[j + 1]);
      const int magnitude = gx * gx + gy * gy;
      e[j] = magnitude > threshold ? 255 : 0;
    }
    if (width > 1) e[width - 1] = 0;
  }
}

std::vector<unsigned char> sobel_test_image(int width, int height, std::uint64_t seed) {
  if (width < 1 || height < 1) return {};
  const long long w = width, h = height;
  std::vector<unsigned char> img(static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  lab::Rng rng(seed);
  std::uint64_t bits = 0;
  int bits_left = 0;
  const long long r = (w < h ? w : h) / 4, cx = 2 * w / 3, cy = h / 2, thick = w > h ? w : h;
  std::vector<int> ramp(static_cast<std::size_t>(w));  // the background's horizontal part, without a division per pixel
  for (long long x = 0; x < w; ++x) ramp[static_cast<std::size_t>(x)] = static_cast<int>(160 * x / w);
  for (long long y = 0; y < h; ++y) {
    const int row_base = static_cast<int>(40 + 40 * y / h);
    const bool rect_rows = y >= h / 4 && y < 3 * h / 4;
    for (long long x = 0; x < w; ++x) {
      int v = row_base + ramp[static_cast<std::size_t>(x)];             // background gradient
      if (rect_rows && x >= w / 8 && x < 3 * w / 8) v = 230;            // rectangle
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) v = 20;    // disc
      const long long d = x * h - y * w;                                // diagonal line
      if (d > -thick && d < thick) v = 255;
      if (bits_left < 3) {
        bits = rng.next();
        bits_left = 64;
      }
      v += static_cast<int>(bits & 7);  // noise of 0..7 gray levels
      bits >>= 3;
      bits_left -= 3;
      img[static_cast<std::size_t>(y * w + x)] = static_cast<unsigned char>(v > 255 ? 255 : v);
    }
  }
  return img;
}

void convolve_1d_cpu(const float* in, float* out, int n, const float* mask, int radius) {
  for (long long i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (long long j = 0; j <= 2LL * radius; ++j) {
      const long long k = i + j - radius;  // the input cell under mask[j]
      if (k >= 0 && k < n) sum += mask[j] * in[k];  // a ghost cell (outside [0, n)) adds nothing
    }
    out[i] = sum;
  }
}
