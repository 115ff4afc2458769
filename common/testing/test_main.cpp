// Provided by the kit. The main() of every lab's test program.
//
//   ./bin/vectorAdd_test                       run every test
//   ./bin/vectorAdd_test --seed=42             the same, with other random data
//   ./bin/vectorAdd_test --gtest_filter='*Gpu*' only the GPU tests
//
// It checks kernel launches synchronously (LABKIT_SYNC_LAUNCHES=1), so a kernel that
// fails is reported by the test that launched it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lab/data.h"
#include "lab/device.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    for (int i = 1; i < argc; ++i) {
      if (std::strncmp(argv[i], "--seed=", 7) == 0) {
        char* end = nullptr;
        const unsigned long long seed = std::strtoull(argv[i] + 7, &end, 0);
        if (end == argv[i] + 7 || *end != '\0') {
          std::fprintf(stderr, "error: --seed takes a number, e.g. --seed=42 (got '%s')\n", argv[i] + 7);
          return 2;
        }
        lab::set_run_seed(seed);
      } else {
        std::fprintf(stderr, "error: unknown option '%s' (options: --seed=<N> and GoogleTest's --gtest_*)\n",
                     argv[i]);
        return 2;
      }
    }
    // Read LABKIT_SEED now, so a malformed value is reported here and not inside a test.
    std::printf("[labkit] seed = %llu\n", static_cast<unsigned long long>(lab::run_seed()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  setenv("LABKIT_SYNC_LAUNCHES", "1", /*overwrite=*/0);
  std::string why;
  if (lab::gpu_available(&why)) {
    std::printf("[labkit] GPU: %s\n", lab::describe(lab::device_facts()).c_str());
  } else {
    std::printf("[labkit] No CUDA GPU (%s): GPU tests will be skipped.\n", why.c_str());
  }
  std::fflush(stdout);
  return RUN_ALL_TESTS();
}
