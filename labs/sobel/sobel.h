// Provided by the kit: do not edit. The interface of the sobel lab.
//
// sobel() is what the tests, the grader and the sobel_edges tool call. It takes device
// pointers, so the timed work is the GPU's and not the copies over PCIe. convolve_1d is
// the further part, a 1-D stencil with boundaries.
// Handout: handouts/sobel.md.
#pragma once

#include <cstdint>
#include <vector>

/// Edge detection with the Sobel operator, on the default stream.
///
/// `in` and `out` are device pointers to width × height bytes each, row-major (pixel
/// (x, y) at index y · width + x), 8-bit grayscale; they do not overlap; any alignment.
/// For every interior pixel (1 ≤ x ≤ width − 2, 1 ≤ y ≤ height − 2), with p(dx, dy) the
/// input pixel at (x + dx, y + dy):
///
///     Gx = p(1,-1) + 2 p(1,0) + p(1,1) − p(-1,-1) − 2 p(-1,0) − p(-1,1)   (right − left)
///     Gy = p(-1,1) + 2 p(0,1) + p(1,1) − p(-1,-1) − 2 p(0,-1) − p(1,-1)   (below − above)
///     out = 255 when Gx² + Gy² > threshold, else 0.
///
/// Pixels of the one-pixel border (x = 0, y = 0, x = width − 1 or y = height − 1) are 0;
/// an image with width or height below 3 is all border, so all 0. Every output byte is
/// overwritten. width or height ≤ 0 does nothing. Gx² + Gy² is at most
/// kSobelMaxMagnitude, so a threshold at or above it gives an all-black image and a
/// negative threshold marks every interior pixel. The byte count width · height may
/// exceed 2^31 (index with size_t).
void sobel(const unsigned char* in, unsigned char* out, int width, int height, int threshold);

/// The sequential version on the CPU (host pointers, same contract): the golden result
/// and the CPU baseline.
void sobel_cpu(const unsigned char* in, unsigned char* out, int width, int height, int threshold);

/// The largest value Gx² + Gy² takes on 8-bit input (found by trying every 0/255 neighbourhood).
constexpr int kSobelMaxMagnitude = 1300500;

/// The threshold the sobel_edges tool uses unless told otherwise: an edge where the gradient
/// length sqrt(Gx² + Gy²) exceeds 100, i.e. a step of about 25 gray levels (Gx of a step of
/// height s is 4 s).
constexpr int kSobelDefaultThreshold = 10000;

/// A synthetic gray picture of width × height bytes (both ≥ 1) for trying the operator:
/// a smooth background gradient, a filled rectangle, a disc, a thin diagonal line and a
/// little seeded noise. The same seed gives the same picture.
std::vector<unsigned char> sobel_test_image(int width, int height, std::uint64_t seed);

/// Further part (a 1-D stencil, the lecture's convolution filter; handout: "Further part:
/// 1-D convolution with boundaries"): for 0 ≤ i < n, on the default stream,
///
///     out[i] = mask[0] · in[i − radius] + mask[1] · in[i − radius + 1] + … + mask[2·radius] · in[i + radius]
///
/// where an in[k] with k < 0 or k ≥ n is a ghost cell: it counts as 0 (its term is left
/// out). `in`, `out` and `mask` are device pointers (any float alignment): in and out hold
/// n floats and do not overlap, mask holds 2 · radius + 1 floats. Every out[0 .. n−1] is
/// overwritten, nothing else is written, in and mask are left unchanged.
/// 0 ≤ radius ≤ kConvolveMaxRadius (a radius larger than n is allowed: most terms are
/// then ghosts); 0 ≤ n ≤ 2^31 − 1, and n = 0 does nothing. Floating point: a sum in
/// another order, or with fused multiply-adds, may differ from the CPU's in the last bits;
/// the tests compare exactly on small integer values (every sum is then exact) and within
/// a stated tolerance on other data (sobel_test.cu, convolve_tolerance).
void convolve_1d(const float* in, float* out, int n, const float* mask, int radius);

/// The largest radius convolve_1d takes: a mask of 2049 floats (8 KiB) fits constant memory.
constexpr int kConvolveMaxRadius = 1024;

/// The sequential 1-D convolution on the CPU (host pointers, same contract): each out[i]
/// sums its terms in the order of the formula, mask[0] first. The golden result.
void convolve_1d_cpu(const float* in, float* out, int n, const float* mask, int radius);
