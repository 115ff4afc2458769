// Corpus case "argv_rewrite" (changing what is run): a constructor receives the
// program's argv (glibc passes it to .init_array functions) and rewrites the test filter
// so that only the CPU tests run, and the seed. In the judge the program holding this
// code is the worker, whose argv names no test: the judge runs every test.
#include <cstring>

#include "lab/cuda_check.h"
#include "vectorAdd.h"

namespace {
char only_cpu_tests[] = "--gtest_filter=*Cpu*";
char my_seed[] = "--seed=1";

__attribute__((constructor)) void rewrite(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--gtest_filter=", 15) == 0) argv[i] = only_cpu_tests;
    if (std::strncmp(argv[i], "--seed=", 7) == 0) argv[i] = my_seed;
  }
}
}  // namespace

// The skeleton's kernel: nothing written.
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  (void)a;
  (void)b;
  (void)c;
  (void)n;
}

void vector_add(const float* a, const float* b, float* c, int n) {
  if (n <= 0) return;
  vector_add_kernel<<<1, 256>>>(a, b, c, n);
  LAB_CHECK_LAUNCH();
}
