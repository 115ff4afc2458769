// sobel lab: YOUR FILE, the only code file of the lab you edit (your answers go in answers.md).
//
// Write a kernel that finds the edges of a grayscale image with the Sobel operator
// (sobel.h says exactly what to compute), first with one thread per pixel, then with the
// block's pixels and their one-pixel halo staged in shared memory. Solutions that read
// every neighbour from global memory get little credit (the homework's rule; the grader
// checks that your file uses shared memory). Then make it fast: the bench compares you
// with the reference and with the memory bandwidth of your GPU.
//
//   cmake --preset dev -DLABKIT_LABS=sobel && cmake --build --preset dev
//   ./build/dev/bin/sobel_test                              # correctness
//   ./build/dev/bin/sobel_bench                             # timing
//   ./build/dev/bin/sobel_edges photo.ppm edges.pgm         # look at your edges
//   python3 -m grader sobel                                 # your score
//
// Handout: handouts/sobel.md. Gaps are marked TODO(student).
#include "lab/cuda_check.h"
#include "sobel.h"

// One block covers a tile of kTileW × kTileH pixels; a warp spans 32 pixels of one row,
// so its reads and writes of a row are coalesced.
constexpr int kTileW = 32;
constexpr int kTileH = 8;

// One thread per output pixel (x, y).
__global__ void sobel_kernel(const unsigned char* in, unsigned char* out, int width, int height, int threshold) {
  // TODO(student): compute x and y from blockIdx, blockDim and threadIdx. Threads
  // outside the image (the last blocks overhang it) must not read or write.
  //
  // TODO(student): a border pixel (x == 0, y == 0, x == width - 1, y == height - 1)
  // gets 0. An interior pixel gets 255 when Gx*Gx + Gy*Gy > threshold, else 0, with
  // Gx and Gy from its 3 x 3 neighbourhood (see sobel.h). Pixel (x, y) is
  // in[(size_t)y * width + x]: use size_t, width * height can exceed 2^31.
  //
  // TODO(student), step 2: neighbouring threads read the same pixels up to nine times.
  // Declare a tile of (kTileH + 2) x (kTileW + 2) bytes in shared memory, let the
  // threads of the block copy their pixels plus the halo around them into it (pixels
  // outside the image can be stored as 0), wait with __syncthreads(), then compute
  // from the tile. Every thread of the block must reach __syncthreads(): do not return
  // before it, even for threads outside the image.
  (void)in;
  (void)out;
  (void)width;
  (void)height;
  (void)threshold;
}

void sobel(const unsigned char* in, unsigned char* out, int width, int height, int threshold) {
  if (width <= 0 || height <= 0) return;  // nothing to do, and a grid of 0 blocks is an invalid launch
  const dim3 threads(kTileW, kTileH);
  // TODO(student): enough blocks to cover the image: ceil(width / kTileW) by
  // ceil(height / kTileH). (gridDim.y may not exceed 65535: fine for these tiles up to
  // 524 280 rows.)
  const dim3 blocks(1, 1);
  sobel_kernel<<<blocks, threads>>>(in, out, width, height, threshold);
  LAB_CHECK_LAUNCH();
}

// TODO(student): the lecture's steps, each a function with sobel's signature,
//   registered so that the tests check it and the bench times it beside the
//   reference's version of the same step (handout: "The lecture's steps"):
//     void sobel_global(const unsigned char* in, unsigned char* out, int width, int height,
//                       int threshold) { ... }
//     LAB_REGISTER_VARIANT(sobel, "global", sobel_global,
//                          "one line on what it does");
//   Needed: "global" and "shared_tile" (include "lab/variants.h").
//   Your sobel may call the fastest of them.

// ---- Further part: 1-D convolution with boundaries (handout: "Further part: 1-D
// convolution with boundaries"; tests: --gtest_filter='*Convolve*') ----------------------
//
// out[i] = mask[0]·in[i−r] + … + mask[2r]·in[i+r], r = radius, where in[k] outside
// [0, n) is a ghost cell worth 0 (sobel.h). in and out do not overlap: never write the
// result into the array you read (a neighbour may not have read its input yet).
void convolve_1d(const float* in, float* out, int n, const float* mask, int radius) {
  // TODO(student), step 1: a kernel with one thread per output element that sums its
  // 2r + 1 terms, skipping the ghost cells: keep every read of `in` inside [0, n) (the
  // grader runs compute-sanitizer memcheck on these tests: a read of in[-1] is an error,
  // even when you multiply it by 0). Index in long long: i + r can pass 2^31 − 1.
  // Launch ceil(n / threads) blocks; n = 0 launches nothing.
  //
  // TODO(student), step 2: the tiled version. Copy the mask into constant
  // memory (a `__constant__ float c_mask[2 * kConvolveMaxRadius + 1];` filled with
  // cudaMemcpyToSymbol(c_mask, mask, bytes, 0, cudaMemcpyDeviceToDevice): mask is a
  // device pointer), and let each block first copy its tile of `in` plus the halo of r
  // cells on each side into shared memory (ghost cells stored as 0), then
  // __syncthreads(), then compute from the tile. You may register both versions with
  // LAB_REGISTER_VARIANT(convolve_1d, "name", fn, "...") (include "lab/variants.h"): the
  // tests check them too.
  (void)in;
  (void)out;
  (void)n;
  (void)mask;
  (void)radius;
}
