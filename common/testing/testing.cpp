// Provided by the kit. Helpers of lab/testing.h.
#include "lab/testing.h"

namespace lab {

std::string seed_note(Seed seed) {
  return "data seed " + std::to_string(seed) + " (run seed " + std::to_string(run_seed()) +
         "; rerun with --seed=" + std::to_string(run_seed()) + ")";
}

std::string size_name(const ::testing::TestParamInfo<int>& info) { return "n_" + std::to_string(info.param); }

}  // namespace lab
