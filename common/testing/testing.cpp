// Provided by the kit. Helpers of lab/testing.h.
#include "lab/testing.h"

namespace lab {

std::string seed_note(Seed seed) {
  return "data seed " + std::to_string(seed) + " (run seed " + std::to_string(run_seed()) +
         "; rerun with --seed=" + std::to_string(run_seed()) + ")";
}

std::string size_name(const ::testing::TestParamInfo<int>& info) { return "n_" + std::to_string(info.param); }

void expect_gpu_suite_name() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test == nullptr) return;
  const std::string suite = test->test_suite_name();
  EXPECT_NE(suite.find("Gpu"), std::string::npos)
      << "the test suite '" << suite << "' uses a GPU fixture but has no \"Gpu\" in its name: rename it "
      << "(e.g. " << suite << "Gpu), so that CTest and the grader count it among the GPU tests";
}

}  // namespace lab
