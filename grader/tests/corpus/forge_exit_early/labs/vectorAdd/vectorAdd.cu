// Corpus case "forge_exit_early" (forging the result channel): prints GoogleTest's
// "all passed" lines and ends the process with a success code at the first call. In the
// judge the process that ends is the worker: the test that called fails, the worker is
// started again, and every later call ends the same way.
#include <cstdio>
#include <unistd.h>

#include "vectorAdd.h"

void vector_add(const float* a, const float* b, float* c, int n) {
  (void)a;
  (void)b;
  (void)c;
  (void)n;
  std::printf("[==========] 15 tests from 4 test suites ran.\n[  PASSED  ] 15 tests.\n");
  std::fflush(stdout);
  _exit(0);
}
