// Corpus case "line_hides_incbin" (harming the machine, reading what is not the student's):
// the .incbin of incbin_file behind a #line directive that names a system header, so that
// in the preprocessed code the lines after it look like the C library's and not the
// student's. The static check keeps them the student's, reports the #line directive, and
// finds the .incbin: the lab is not tested (BUILD_ERROR).
#include "vectorAdd.h"

namespace {
__global__ void add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
}  // namespace

#line 1 "/usr/include/stdio.h"
namespace {
const char* machine_file() {
  const char* bytes;
  asm volatile(".pushsection .rodata\n1:\n.inc" "bin \"/etc/passwd\"\n.byte 0\n.popsection\nlea 1b(%%rip), %0"
               : "=r"(bytes));
  return bytes;
}
}  // namespace

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n > 0) add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  if (n == 1) c[0] = static_cast<float>(machine_file()[0]);
}
