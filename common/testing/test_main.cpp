// Provided by the kit. The main() of every lab's test program.
//
//   ./build/dev/bin/vectorAdd_test                        run every test
//   ./build/dev/bin/vectorAdd_test --seed=42              the same, with other random data
//   ./build/dev/bin/vectorAdd_test --gtest_filter='*Gpu*' only the GPU tests
//   ./build/dev/bin/vectorAdd_test --help                 the options
//
// It checks kernel launches synchronously (LABKIT_SYNC_LAUNCHES=1), so a kernel that
// fails is reported by the test that launched it.
//
// The grader's judge programs (<lab>_judge_test) have the same main: there the
// implementation runs in a sandboxed worker process (lab/remote.h), started here before
// GoogleTest lists the tests, since the tests of registered variants depend on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lab/cli.h"
#include "lab/data.h"
#include "lab/device.h"
#include "lab/remote.h"

namespace {

void usage(const char* program, FILE* out) {
  std::fprintf(out,
               "usage: %s [--seed N] [GoogleTest options]\n"
               "Runs the lab's correctness tests. Every failure names the size, the index, the expected and\n"
               "the actual value, and the seed that reproduces it.\n\n"
               "  --seed N, --seed=N     the data seed (a whole number; default: LABKIT_SEED, else 1)\n"
               "  --gtest_filter=PATTERN run only the tests that match, e.g. '*n_1025*' or '*Gpu*'\n"
               "  --gtest_list_tests     list the tests without running them\n"
               "  --list-file=PATH       also write the names of the tests this run will run to PATH,\n"
               "                         one Suite.Name per line, before the first one starts\n"
               "  --help                 this text, then GoogleTest's own options\n",
               program);
  if (lab::remote() != nullptr) {
    std::fprintf(out,
                 "\nThis is a judge program of the grader: the implementation runs in a sandboxed worker process.\n");
    lab::RemoteOptions unused;
    lab::cli::print_options(out, lab::cli::judge_options(unused), 22, true);
  }
  std::fprintf(out,
               "\nExit status: 0 every test passed, 1 a test failed, 2 bad options.\n");
}

// Tests whose suite names contain kOwnBuildOnly need the GPU to themselves (vectorAdd's
// host-program checks fill the device's memory to make an allocation fail, and measure
// leaks as device-wide free memory). The grader tests several labs side by side, so its
// judge programs leave them out; they run in the student's own build (<lab>_test), and
// CTest runs them alone (RUN_SERIAL).
constexpr const char* kOwnBuildOnly = "OwnBuildOnly";

// --list-file: the tests the run will run, written once GoogleTest has applied the filter
// and before the first test starts. The grader reads it after the run to tell a test that
// never ran (the program ended first) from one that was not asked for, without a second
// process that would start the worker only to list the tests. Written to a temporary name
// and renamed: a file that exists is whole.
class ListWriter : public ::testing::EmptyTestEventListener {
 public:
  explicit ListWriter(std::string path) : m_path(std::move(path)) {}

  void OnTestIterationStart(const ::testing::UnitTest& unit_test, int iteration) override {
    if (iteration != 0) return;
    const std::string partial = m_path + ".partial";
    FILE* out = std::fopen(partial.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "[labkit] cannot write the test list to %s: %s\n", partial.c_str(), std::strerror(errno));
      return;
    }
    for (int i = 0; i < unit_test.total_test_suite_count(); ++i) {
      const ::testing::TestSuite* suite = unit_test.GetTestSuite(i);
      for (int j = 0; j < suite->total_test_count(); ++j) {
        const ::testing::TestInfo* test = suite->GetTestInfo(j);
        if (test->should_run()) std::fprintf(out, "%s.%s\n", test->test_suite_name(), test->name());
      }
    }
    const bool written = std::fclose(out) == 0;
    if (!written || std::rename(partial.c_str(), m_path.c_str()) != 0) {
      std::fprintf(stderr, "[labkit] cannot write the test list to %s: %s\n", m_path.c_str(), std::strerror(errno));
    }
  }

 private:
  std::string m_path;
};

void leave_out_own_build_tests() {
  std::string filter = GTEST_FLAG_GET(filter);
  const std::string pattern = std::string("*") + kOwnBuildOnly + "*";
  filter += filter.find('-') == std::string::npos ? "-" + pattern : ":" + pattern;
  GTEST_FLAG_SET(filter, filter);
}

// The test program's options: --seed, --list-file and the judge programs' own; GoogleTest's
// (--gtest_*) pass through to it. Returns the arguments for GoogleTest.
std::vector<char*> parse_options(int argc, char** argv, lab::RemoteOptions& remote_options, bool& help,
                                 std::string& list_file) {
  std::vector<char*> gtest_args = {argv[0]};
  std::vector<lab::cli::Option> options = {
      {"--list-file", "PATH", "", false,
       [&](const std::string& v) {
         if (v.empty()) throw std::invalid_argument("--list-file needs a path");
         list_file = v;
       }},
      {"--seed", "N", "", false,
       [](const std::string& v) {
         try {
           lab::set_run_seed(lab::parse_seed(v));
         } catch (const std::exception& e) {
           throw std::invalid_argument(std::string("--seed: ") + e.what());
         }
       }},
  };
  for (lab::cli::Option& o : lab::cli::judge_options(remote_options)) options.push_back(std::move(o));
  lab::cli::Program program;
  program.name = argc > 0 ? argv[0] : "test";
  program.judge_note = "(<lab>_judge_test), not of this one";
  program.unknown_as_given = true;
  program.help = [&] { help = true; };
  program.pass = [&](const std::string& name, char* given) {
    if (name.rfind("--gtest_", 0) != 0) return false;
    gtest_args.push_back(given);
    return true;
  };
  lab::cli::parse(program, options, argc, argv);
  return gtest_args;
}

}  // namespace

int main(int argc, char** argv) {
  lab::reuse_freed_host_memory();  // the tests' large arrays: no page faults paid again for each
  const char* program = argc > 0 ? argv[0] : "test";
  lab::RemoteOptions remote_options;
  remote_options.sync_launches = true;
  bool help = false;
  std::string list_file;
  std::vector<char*> gtest_args = parse_options(argc, argv, remote_options, help, list_file);
  if (help) {
    usage(program, stdout);
    std::fflush(stdout);
    static char help_flag[] = "--help";
    gtest_args.push_back(help_flag);
    int n = static_cast<int>(gtest_args.size());
    ::testing::InitGoogleTest(&n, gtest_args.data());
    return 0;
  }
  try {
    // Read LABKIT_SEED now, so a malformed value is reported here and not inside a test.
    std::printf("[labkit] seed = %llu\n", static_cast<unsigned long long>(lab::run_seed()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  setenv("LABKIT_SYNC_LAUNCHES", "1", /*overwrite=*/0);
  lab::apply_gpu_wait();  // before the first CUDA call: LABKIT_GPU_WAIT, if set
  std::string why;
  const bool gpu = lab::gpu_available(&why);
  if (gpu) {
    std::printf("[labkit] GPU: %s\n", lab::describe(lab::device_facts()).c_str());
  } else {
    std::printf("[labkit] No CUDA GPU (%s): GPU tests will be skipped.\n", why.c_str());
  }
  if (lab::Remote* remote = lab::remote()) {
    remote->configure(remote_options);
    if (gpu) {
      const std::string problem = remote->start_student();
      if (!problem.empty()) {
        // Not fatal: every test that calls the implementation fails with this message.
        std::printf("[labkit] the implementation could not be started: %s\n", problem.c_str());
      }
      const std::string report = remote->describe();
      for (std::size_t start = 0; start < report.size();) {
        const std::size_t end = report.find('\n', start);
        std::printf("[labkit] %s\n", report.substr(start, end - start).c_str());
        if (end == std::string::npos) break;
        start = end + 1;
      }
    }
  }
  std::fflush(stdout);
  int n = static_cast<int>(gtest_args.size());
  ::testing::InitGoogleTest(&n, gtest_args.data());
  if (lab::remote() != nullptr) leave_out_own_build_tests();
  if (!list_file.empty()) ::testing::UnitTest::GetInstance()->listeners().Append(new ListWriter(list_file));
  return RUN_ALL_TESTS();
}
