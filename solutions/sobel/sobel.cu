// Reference solution of the sobel lab (instructors only; not in student repositories).
//
// The progression, each registered with the bench:
//   global       one pixel per thread, all nine neighbours read from global memory
//                (the homework's "little credit" version; the caches do most of the work)
//   shared_tile  one pixel per thread; the block first copies its tile plus a one-pixel
//                halo into shared memory, then every neighbour read hits shared memory
//   multi_pixel  a 512 × 32 tile per block of 128 threads, copied into shared memory as
//                32-bit words; each thread then walks down a 4-pixel-wide column strip,
//                keeping the three rows it needs in registers (each new output row costs
//                one new row of loads) and writing 4 output pixels with one store
// sobel (what the tests and the grader call) is multi_pixel: the only variant that is
// not limited by load/store instructions. Its 32-bit loads and stores need width % 4 == 0
// and 4-byte aligned pointers; otherwise the same kernel assembles each word from four
// byte loads (correct for every size, slower).
//
// Every kernel maps a 1-D grid onto the tiles of the image (block b = tile (b % tiles_x,
// b / tiles_x)), so tall images cannot run into the 65535 limit of gridDim.y.
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "lab/cuda_check.h"
#include "lab/variants.h"
#include "sobel.h"

namespace {

// out for one interior pixel from its 3 × 3 neighbourhood: a = row above, b = its own
// row, c = row below; index 0 = left column, 1 = centre, 2 = right.
__device__ __forceinline__ unsigned char sobel_pixel(int a0, int a1, int a2, int b0, int b2, int c0, int c1, int c2,
                                                     int threshold) {
  const int gx = (a2 + 2 * b2 + c2) - (a0 + 2 * b0 + c0);
  const int gy = (c0 + 2 * c1 + c2) - (a0 + 2 * a1 + a2);
  return gx * gx + gy * gy > threshold ? 255 : 0;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Blocks for a 1-D grid over tiles_x × tiles_y tiles (gridDim.x allows 2^31 - 1).
unsigned grid_for(int tiles_x, int tiles_y) {
  const long long tiles = static_cast<long long>(tiles_x) * tiles_y;
  if (tiles > INT_MAX) throw std::length_error("sobel: image too large for one kernel launch");
  return static_cast<unsigned>(tiles);
}

// ---- global: one pixel per thread, global memory only ------------------------------

constexpr int kBlockX = 32, kBlockY = 8;  // a warp spans 32 pixels of one row: coalesced

__global__ void global_kernel(const unsigned char* __restrict__ in, unsigned char* __restrict__ out, int width,
                              int height, int threshold, int tiles_x) {
  const int x = static_cast<int>(blockIdx.x % tiles_x) * kBlockX + static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(blockIdx.x / tiles_x) * kBlockY + static_cast<int>(threadIdx.y);
  if (x >= width || y >= height) return;
  const std::size_t w = static_cast<std::size_t>(width);
  const std::size_t i = static_cast<std::size_t>(y) * w + static_cast<std::size_t>(x);
  if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
    out[i] = 0;
    return;
  }
  const unsigned char* a = in + i - w;  // interior pixel: all 8 neighbours exist
  const unsigned char* b = in + i;
  const unsigned char* c = in + i + w;
  out[i] = sobel_pixel(a[-1], a[0], a[1], b[-1], b[1], c[-1], c[0], c[1], threshold);
}

void sobel_global(const unsigned char* in, unsigned char* out, int width, int height, int threshold) {
  if (width <= 0 || height <= 0) return;
  const int tiles_x = ceil_div(width, kBlockX);
  global_kernel<<<grid_for(tiles_x, ceil_div(height, kBlockY)), dim3(kBlockX, kBlockY)>>>(in, out, width, height,
                                                                                           threshold, tiles_x);
  LAB_CHECK_LAUNCH();
}

// ---- shared_tile: one pixel per thread, neighbours from a shared-memory tile ---------

__global__ void shared_tile_kernel(const unsigned char* __restrict__ in, unsigned char* __restrict__ out, int width,
                                   int height, int threshold, int tiles_x) {
  // The block's 32 × 8 pixels plus a one-pixel halo on every side; pixels outside the
  // image read as 0 (they only ever feed border pixels, whose output is 0 anyway).
  __shared__ unsigned char tile[kBlockY + 2][kBlockX + 2];
  const int x0 = static_cast<int>(blockIdx.x % tiles_x) * kBlockX;
  const int y0 = static_cast<int>(blockIdx.x / tiles_x) * kBlockY;
  const std::size_t w = static_cast<std::size_t>(width);
  // 340 halo-tile bytes for 256 threads: each thread copies one or two, row-major, so
  // that neighbouring threads read neighbouring bytes.
  for (int k = threadIdx.y * kBlockX + threadIdx.x; k < (kBlockY + 2) * (kBlockX + 2); k += kBlockX * kBlockY) {
    const int r = k / (kBlockX + 2), col = k % (kBlockX + 2);
    const int gx = x0 - 1 + col, gy = y0 - 1 + r;
    const bool inside = gx >= 0 && gx < width && gy >= 0 && gy < height;
    tile[r][col] = inside ? in[static_cast<std::size_t>(gy) * w + static_cast<std::size_t>(gx)] : 0;
  }
  __syncthreads();  // every thread reaches it: no thread has returned yet
  const int tx = threadIdx.x + 1, ty = threadIdx.y + 1;  // this pixel's place in the tile
  const int x = x0 + static_cast<int>(threadIdx.x), y = y0 + static_cast<int>(threadIdx.y);
  if (x >= width || y >= height) return;
  unsigned char result = 0;
  if (x > 0 && y > 0 && x < width - 1 && y < height - 1) {
    result = sobel_pixel(tile[ty - 1][tx - 1], tile[ty - 1][tx], tile[ty - 1][tx + 1], tile[ty][tx - 1],
                         tile[ty][tx + 1], tile[ty + 1][tx - 1], tile[ty + 1][tx], tile[ty + 1][tx + 1], threshold);
  }
  out[static_cast<std::size_t>(y) * w + static_cast<std::size_t>(x)] = result;
}

void sobel_shared_tile(const unsigned char* in, unsigned char* out, int width, int height, int threshold) {
  if (width <= 0 || height <= 0) return;
  const int tiles_x = ceil_div(width, kBlockX);
  shared_tile_kernel<<<grid_for(tiles_x, ceil_div(height, kBlockY)), dim3(kBlockX, kBlockY)>>>(
      in, out, width, height, threshold, tiles_x);
  LAB_CHECK_LAUNCH();
}

// ---- multi_pixel: 4-pixel-wide column strips over a shared tile of 32-bit words -----

constexpr int kStripThreads = 128;                // threads per block, side by side
constexpr int kStripRows = 32;                    // output rows per block
constexpr int kStripCols = 4 * kStripThreads;     // output columns per block: 4 per thread
constexpr int kTileRows = kStripRows + 2;         // + the halo row above and below
constexpr int kTileWords = kStripThreads + 2;     // + a halo word left and right

// Pixels x .. x+3 of row y as one little-endian word (byte k = pixel x + k); pixels
// outside the image read as 0. Words: width % 4 == 0 and `in` 4-byte aligned, so x (a
// multiple of 4) gives an aligned word that lies entirely inside or outside the row.
template <bool Words>
__device__ __forceinline__ unsigned load_word(const unsigned char* __restrict__ in, int width, int height, int x,
                                              int y) {
  if (y < 0 || y >= height) return 0;
  const unsigned char* row = in + static_cast<std::size_t>(y) * static_cast<std::size_t>(width);
  if constexpr (Words) {
    return (x >= 0 && x < width) ? __ldg(reinterpret_cast<const unsigned*>(row + x)) : 0u;
  } else {
    unsigned v = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (x + k >= 0 && x + k < width) v |= static_cast<unsigned>(row[x + k]) << (8 * k);
    }
    return v;
  }
}

template <bool Words>
__device__ __forceinline__ void store_word(unsigned char* __restrict__ out, int width, int x, int y, unsigned v) {
  unsigned char* p = out + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x);
  if constexpr (Words) {
    *reinterpret_cast<unsigned*>(p) = v;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (x + k < width) p[k] = static_cast<unsigned char>(v >> (8 * k));
    }
  }
}

// The six pixels x-1 .. x+4 of one tile row for the thread whose word is row[t + 1].
__device__ __forceinline__ void unpack_row(const unsigned* row, int t, int (&p)[6]) {
  const unsigned left = row[t], centre = row[t + 1], right = row[t + 2];
  p[0] = static_cast<int>(left >> 24);
  p[1] = static_cast<int>(centre & 0xFF);
  p[2] = static_cast<int>((centre >> 8) & 0xFF);
  p[3] = static_cast<int>((centre >> 16) & 0xFF);
  p[4] = static_cast<int>(centre >> 24);
  p[5] = static_cast<int>(right & 0xFF);
}

template <bool Words>
__global__ void __launch_bounds__(kStripThreads)
    multi_pixel_kernel(const unsigned char* __restrict__ in, unsigned char* __restrict__ out, int width, int height,
                       int threshold, int tiles_x) {
  __shared__ unsigned tile[kTileRows][kTileWords];  // 34 × 130 words = 17 680 bytes
  const int t = static_cast<int>(threadIdx.x);
  const int x0 = static_cast<int>(blockIdx.x % tiles_x) * kStripCols;
  const int y0 = static_cast<int>(blockIdx.x / tiles_x) * kStripRows;

  // Copy the tile: thread t loads word t + 1 of every row (a warp reads 128 consecutive,
  // aligned bytes), and 68 threads load the halo words at both ends of the 34 rows.
  // All 35 loads of a thread are independent, so they are in flight together.
#pragma unroll
  for (int r = 0; r < kTileRows; ++r) tile[r][t + 1] = load_word<Words>(in, width, height, x0 + 4 * t, y0 - 1 + r);
  if (t < 2 * kTileRows) {
    const int r = t >> 1, c = (t & 1) ? kTileWords - 1 : 0;
    tile[r][c] = load_word<Words>(in, width, height, x0 - 4 + 4 * c, y0 - 1 + r);
  }
  __syncthreads();  // the only barrier; every thread reaches it

  const int x = x0 + 4 * t;  // this thread's first column
  if (x >= width) return;
  const int rows = min(kStripRows, height - y0);
  // Output bytes that may be 255: not the border columns 0 and width - 1, nor past the
  // right edge (those are never stored anyway).
  unsigned keep = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (x + k > 0 && x + k < width - 1) keep |= 0xFFu << (8 * k);
  }
  // Rolling window: the rows above and at the current output row, as the six columns
  // x-1 .. x+4; each step reads one new row from shared memory.
  int above[6], centre[6], below[6];
  unpack_row(tile[0], t, above);
  unpack_row(tile[1], t, centre);
  for (int r = 0; r < rows; ++r) {
    unpack_row(tile[r + 2], t, below);
    // Column sums shared by neighbouring pixels: s = vertical smoothing [1 2 1],
    // d = vertical difference [-1 0 1]. Then Gx = s[k+2] - s[k], Gy = d[k] + 2 d[k+1] + d[k+2].
    int s[6], d[6];
#pragma unroll
    for (int j = 0; j < 6; ++j) {
      s[j] = above[j] + 2 * centre[j] + below[j];
      d[j] = below[j] - above[j];
    }
    unsigned word = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int gx = s[k + 2] - s[k];
      const int gy = d[k] + 2 * d[k + 1] + d[k + 2];
      if (gx * gx + gy * gy > threshold) word |= 0xFFu << (8 * k);
    }
    const int y = y0 + r;
    if (y == 0 || y == height - 1) word = 0;
    store_word<Words>(out, width, x, y, word & keep);
#pragma unroll
    for (int j = 0; j < 6; ++j) {
      above[j] = centre[j];
      centre[j] = below[j];
    }
  }
}

bool aligned4(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 4 == 0; }

void sobel_multi_pixel(const unsigned char* in, unsigned char* out, int width, int height, int threshold) {
  if (width <= 0 || height <= 0) return;
  const int tiles_x = ceil_div(width, kStripCols);
  const unsigned blocks = grid_for(tiles_x, ceil_div(height, kStripRows));
  if (width % 4 == 0 && aligned4(in) && aligned4(out)) {
    multi_pixel_kernel<true><<<blocks, kStripThreads>>>(in, out, width, height, threshold, tiles_x);
  } else {
    multi_pixel_kernel<false><<<blocks, kStripThreads>>>(in, out, width, height, threshold, tiles_x);
  }
  LAB_CHECK_LAUNCH();
}

}  // namespace

void sobel(const unsigned char* in, unsigned char* out, int width, int height, int threshold) {
  sobel_multi_pixel(in, out, width, height, threshold);
}

LAB_REGISTER_VARIANT(sobel, "global", sobel_global, "one pixel per thread, neighbours from global memory");
LAB_REGISTER_VARIANT(sobel, "shared_tile", sobel_shared_tile, "one pixel per thread, 32x8 tile + halo in shared memory");
LAB_REGISTER_VARIANT(sobel, "multi_pixel", sobel_multi_pixel,
                     "4-pixel column strips of 32 rows over a shared tile of words");

// ---- Further part: 1-D convolution with boundaries ----------------------------------
//
//   simple  one output per thread, the input and the mask read from global memory
//   tiled   the mask in constant memory; each block copies its 256 inputs plus a halo of
//           radius cells on each side into shared memory (ghost cells as 0), then every
//           thread sums its 2·radius + 1 terms from there
// convolve_1d (what the tests call) is tiled. Both sum the terms in the order of the
// formula, mask[0] first, like the CPU version.

namespace {

constexpr int kConvThreads = 256;                                    // outputs per block
constexpr int kConvMaskSize = 2 * kConvolveMaxRadius + 1;            // 2049 floats, 8 KiB
constexpr int kConvTileSize = kConvThreads + 2 * kConvolveMaxRadius; // 2304 floats, 9 KiB

__constant__ float c_conv_mask[kConvMaskSize];

unsigned conv_blocks(int n) {
  return static_cast<unsigned>((static_cast<long long>(n) + kConvThreads - 1) / kConvThreads);
}

__global__ void convolve_simple_kernel(const float* __restrict__ in, float* __restrict__ out, int n,
                                       const float* __restrict__ mask, int radius) {
  const long long i = static_cast<long long>(blockIdx.x) * kConvThreads + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int j = 0; j <= 2 * radius; ++j) {
    const long long k = i + j - radius;
    if (k >= 0 && k < n) sum += mask[j] * in[k];  // ghost cells are never read
  }
  out[i] = sum;
}

void convolve_simple(const float* in, float* out, int n, const float* mask, int radius) {
  if (n <= 0) return;
  convolve_simple_kernel<<<conv_blocks(n), kConvThreads>>>(in, out, n, mask, radius);
  LAB_CHECK_LAUNCH();
}

__global__ void convolve_tiled_kernel(const float* __restrict__ in, float* __restrict__ out, int n, int radius) {
  // tile[t] holds in[first - radius + t]: the block's outputs start at tile[radius].
  __shared__ float tile[kConvTileSize];
  const long long first = static_cast<long long>(blockIdx.x) * kConvThreads;
  const int cells = kConvThreads + 2 * radius;
  for (int t = threadIdx.x; t < cells; t += kConvThreads) {  // neighbouring threads, neighbouring cells
    const long long k = first - radius + t;
    tile[t] = (k >= 0 && k < n) ? in[k] : 0.0f;  // ghost cells: 0, and never read from in
  }
  __syncthreads();  // every thread reaches it: none has returned yet
  const long long i = first + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int j = 0; j <= 2 * radius; ++j) sum += c_conv_mask[j] * tile[threadIdx.x + j];
  out[i] = sum;
}

void convolve_tiled(const float* in, float* out, int n, const float* mask, int radius) {
  if (n <= 0) return;
  // mask is a device pointer: a device-to-device copy into constant memory, on the default
  // stream, so it is done before the kernel starts.
  LAB_CUDA_CHECK(cudaMemcpyToSymbol(c_conv_mask, mask, sizeof(float) * (2 * static_cast<std::size_t>(radius) + 1), 0,
                                    cudaMemcpyDeviceToDevice));
  convolve_tiled_kernel<<<conv_blocks(n), kConvThreads>>>(in, out, n, radius);
  LAB_CHECK_LAUNCH();
}

}  // namespace

void convolve_1d(const float* in, float* out, int n, const float* mask, int radius) {
  convolve_tiled(in, out, n, mask, radius);
}

LAB_REGISTER_VARIANT(convolve_1d, "simple", convolve_simple,
                     "one output per thread, input and mask from global memory");
LAB_REGISTER_VARIANT(convolve_1d, "tiled", convolve_tiled,
                     "mask in constant memory, each block's inputs and halo in shared memory");
