// Corpus case "register_foreign_code" (someone else's work): device code that was not
// compiled from this file, registered with the runtime through nvcc's own helpers and
// launched as this file's. A real attempt would pull a reference library's cubin in with
// the assembler's `.incbin` (the package of the reference holds one per lab); here a few
// bytes stand in for it. The helpers are named by asm labels in split strings, so no line
// spells them: the static check finds the calls in the compiled object, not in the text.
#include <cuda_runtime.h>

#include "vectorAdd.h"

extern "C" void** register_binary(void*) asm("__cuda" "RegisterFatBinary");
extern "C" void register_binary_end(void**) asm("__cuda" "RegisterFatBinaryEnd");
extern "C" void register_function(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*,
                                  int*) asm("__cuda" "RegisterFunction");

namespace {
// A fatbinary wrapper as nvcc lays it out: magic, version, the fatbinary, unused.
struct Wrapper {
  int magic;
  int version;
  const void* data;
  void* unused;
};
alignas(16) const unsigned char foreign_cubin[64] = {0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00};
Wrapper wrapper = {0x466243b1, 1, foreign_cubin, nullptr};
void launch_handle() {}
}  // namespace

void vector_add(const float* a, const float* b, float* c, int n) {
  static void** handle = [] {
    void** h = register_binary(&wrapper);
    register_function(h, reinterpret_cast<const char*>(&launch_handle), const_cast<char*>("foreign_add"),
                      "foreign_add", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    register_binary_end(h);
    return h;
  }();
  (void)handle;
  void* args[] = {&a, &b, &c, &n};
  cudaLaunchKernel(reinterpret_cast<const void*>(&launch_handle), dim3((n + 255) / 256), dim3(256), args, 0, nullptr);
}
