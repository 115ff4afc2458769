// Provided by the kit. Helpers of lab/testing.h.
#include "lab/testing.h"

#include <cctype>

#include "lab/variants.h"

namespace lab {

std::string seed_note(Seed seed) {
  return "data seed " + std::to_string(seed) + " (run seed " + std::to_string(run_seed()) +
         "; rerun with --seed=" + std::to_string(run_seed()) + ")";
}

std::string size_name(const ::testing::TestParamInfo<int>& info) { return "n_" + std::to_string(info.param); }

std::vector<std::string> registered_variants(const char* function) {
  std::vector<std::string> names;
  for (const Variant& v : local_variants().of(function)) {
    if (v.name != "default" && v.description.rfind(kWrongOnPurpose, 0) != 0) names.push_back(v.name);
  }
  return names;
}

std::string variant_test_name(const ::testing::TestParamInfo<std::string>& info) {
  // Must match grader/variants.py test_param(): the grader looks a step's tests up by it.
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name.empty() ? "unnamed" : name;
}

void expect_gpu_suite_name() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test == nullptr) return;
  const std::string suite = test->test_suite_name();
  EXPECT_NE(suite.find("Gpu"), std::string::npos)
      << "the test suite '" << suite << "' uses a GPU fixture but has no \"Gpu\" in its name: rename it "
      << "(e.g. " << suite << "Gpu), so that CTest and the grader count it among the GPU tests";
}

}  // namespace lab
