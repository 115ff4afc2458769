// Provided by the kit. CPU tests of the bench's JSON document (lab/bench_document.h)
// and of the programs' command-line parser (lab/cli.h).
//   ./bin/common_test --gtest_filter='BenchDocument*:Cli*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "lab/bench_document.h"
#include "lab/bench_json.h"
#include "lab/cli.h"

namespace lab::bench {
namespace {

// The document as the bench wrote it before one writer owned it: the no-GPU case and
// Harness::finish() assembled it by hand. Kept here, verbatim but for where the values
// come from, so that the writer is held to every byte of it (field order included).
std::string former_no_gpu_json(const std::string& lab, const std::string& why) {
  std::ostringstream out;
  out << "{\"schema\": \"labkit-bench\", \"version\": 1, \"status\": \"no_gpu\", "
      << "\"lab\": " << json_string(lab) << ", \"message\": " << json_string("No CUDA GPU: " + why) << "}\n";
  return out.str();
}

std::string former_json(const BenchDocument& d) {
  const Options& o = d.options;
  const DeviceFacts& f = d.device;
  auto boundary = [](const Boundary& b) {
    return "{\"median_ms\": " + json_number(b.gap.median) + ", \"q1_ms\": " + json_number(b.gap.q1) +
           ", \"q3_ms\": " + json_number(b.gap.q3) + ", \"bound_ms\": " + json_number(b.bound_ms) +
           ", \"samples\": " + std::to_string(b.gap.count) + ", \"after_other\": {\"median_ms\": " +
           json_number(b.gap_after_other.median) + ", \"q1_ms\": " + json_number(b.gap_after_other.q1) +
           ", \"q3_ms\": " + json_number(b.gap_after_other.q3) + ", \"bound_ms\": " +
           json_number(b.bound_after_other_ms) + ", \"samples\": " + std::to_string(b.gap_after_other.count) + "}}";
  };
  std::ostringstream out;
  out << "{\"schema\": \"labkit-bench\", \"version\": 1, \"status\": \"ok\", \"lab\": " << json_string(d.lab)
      << ", \"seed\": " << d.seed << ",\n \"options\": {\"size\": " << o.size
      << ", \"graded_only\": " << (o.graded_only ? "true" : "false") << ", \"filter\": " << json_string(o.filter)
      << ", \"quick\": " << (o.quick ? "true" : "false") << "},\n \"device\": {\"name\": " << json_string(f.name)
      << ", \"compute_capability\": " << json_string(std::to_string(f.major) + "." + std::to_string(f.minor))
      << ", \"sms\": " << f.sms << ", \"sm_clock_mhz\": " << json_number(f.sm_clock_mhz)
      << ", \"l2_bytes\": " << f.l2_bytes << ", \"peak_dram_gbps\": " << json_number(f.peak_dram_gbps)
      << ", \"peak_fp32_gflops\": " << json_number(f.peak_fp32_gflops)
      << ", \"peak_rsqrt_gops\": " << json_number(f.peak_rsqrt_gops) << "},\n \"reference\": {\"path\": "
      << json_string(d.reference_path) << ", \"loaded\": " << (d.reference_loaded ? "true" : "false")
      << ", \"variant\": " << json_string(o.reference_variant) << ", \"error\": "
      << (d.reference_error.empty() ? "null" : json_string(d.reference_error)) << "},\n \"judge\": ";
  if (d.judge) {
    out << "{\"impl\": " << json_string(o.remote.impl) << ", \"boundary\": {\"student\": "
        << boundary(d.student_boundary) << ", \"reference\": " << boundary(d.reference_boundary)
        << "}, \"workers\": " << json_string(d.workers) << "}";
  } else {
    out << "null";
  }
  out << ",\n \"workloads\": [";
  for (std::size_t i = 0; i < d.workloads.size(); ++i) {
    out << (i ? ",\n  " : "\n  ") << workload_json(d.workloads[i]);
  }
  out << "],\n \"answers\": " << answer_lines_json(d.answers) << ",\n \"errors\": [";
  for (std::size_t i = 0; i < d.errors.size(); ++i) out << (i ? ", " : "") << json_string(d.errors[i]);
  // Added since: where the run's wall time went (BenchSeconds), after everything else.
  out << "],\n \"seconds\": {\"set_up\": " << json_number(d.seconds.set_up) << ", \"gate\": "
      << json_number(d.seconds.gate) << ", \"calibration\": " << json_number(d.seconds.calibration)
      << ", \"workloads\": " << json_number(d.seconds.workloads) << "}}\n";
  return out.str();
}

CandidateResult timed(const std::string& name, Role role, std::vector<double> ms) {
  CandidateResult r;
  r.c.name = name;
  r.c.role = role;
  r.c.description = "a \"quoted\"\tdescription";
  r.ms = std::move(ms);
  r.s = summarize(r.ms);
  r.checks = r.ms.size();
  return r;
}

// A run with two workloads (one graded, with a failed check and changed inputs), answer
// lines given and not, errors, odd characters and a number that is not finite.
BenchDocument sample_document(bool judge) {
  BenchDocument d;
  d.lab = "vectorAdd";
  d.seed = 18446744073709551615ull;
  d.options.size = 1 << 20;
  d.options.graded_only = judge;
  d.options.filter = "ref:\\";
  d.options.quick = true;
  d.options.reference_variant = "tiled16";
  d.options.remote.impl = "/tmp/lib\"student\".so";
  d.device.name = "NVIDIA H100 80GB HBM3";
  d.device.major = 9;
  d.device.sms = 132;
  d.device.sm_clock_mhz = 1980;
  d.device.l2_bytes = 52428800;
  d.device.peak_dram_gbps = 3352.32;
  d.device.peak_fp32_gflops = 66908.2;
  d.device.peak_rsqrt_gops = std::numeric_limits<double>::infinity();
  d.reference_path = "/build/lib/libvectorAdd_solution.so";
  d.reference_loaded = !judge;
  d.reference_error = judge ? "could not load\nit" : "";
  d.judge = judge;
  d.student_boundary.gap = summarize({0.011, 0.012, 0.0125, 0.02});
  d.student_boundary.bound_ms = 0.031;
  d.student_boundary.gap_after_other = summarize({0.03, 0.034, 0.036});
  d.student_boundary.bound_after_other_ms = 0.056;
  d.reference_boundary.gap = summarize({0.01});
  d.reference_boundary.bound_ms = 0.03;
  d.workers = "student: worker 1234\nreference: worker 1235\n";
  WorkloadResult graded;
  graded.name = "vector_add n=1048576";
  graded.function = "vector_add";
  graded.graded = true;
  graded.amount = 12.0 * (1 << 20);
  graded.peak = d.device.peak_dram_gbps;
  graded.peak_of = "dram";
  graded.cpu_ms = 3.5;
  graded.cpu_runs = 5;
  graded.inputs_problem = "a[3] changed";
  graded.results = {timed("student", Role::Student, {0.02, 0.021, 0.019}),
                    timed("reference", Role::Reference, {0.018, 0.0185, 0.02}),
                    timed("cublas", Role::Library, {0.017})};
  graded.results[0].check_failures = 1;
  graded.results[0].first_failure = "1 of 4 output bytes differ";
  graded.results[0].boundary_excess = {0.001, 0.002};
  graded.results[0].boundary_excess_ms = 0.0015;
  graded.results[0].remote = judge;
  graded.ratios = {1.1, 1.13, 0.95};
  graded.pair = summarize(graded.ratios);
  WorkloadResult other;
  other.name = "vector_add odd";
  other.function = "vector_add";
  other.results = {timed("student", Role::Student, {}), timed("copy", Role::Roofline, {0.5})};
  d.workloads = {graded, other};
  AnswerLine given{"your_gbps", "throughput", true, 629.1, "Answer: 629.1 GB/s measured on NVIDIA H100", ""};
  AnswerLine missing{"pct", "pct_peak", false, 0, "", "no graded workload was timed"};
  d.answers = {given, missing};
  d.errors = {"note one", "the \"second\" note"};
  d.workloads[0].seconds = 0.75;
  d.seconds = {1.25, 0.5, 0.375, 0.75};
  return d;
}

// The writer renders the document the bench wrote by hand before, byte for byte.
TEST(BenchDocument, RendersTheFormerDocument) {
  for (const bool judge : {false, true}) {
    const BenchDocument d = sample_document(judge);
    EXPECT_EQ(bench_json(d), former_json(d)) << "judge program: " << judge;
  }
}

// Each workload's wall time is in its object, and the run's in "seconds" at the end.
TEST(BenchDocument, SaysWhereTheTimeWent) {
  const std::string text = bench_json(sample_document(true));
  EXPECT_NE(text.find("\"inputs_check\": \"a[3] changed\", \"seconds\": 0.75, \"pair\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"inputs_check\": null, \"seconds\": 0, \"pair\": null"), std::string::npos) << text;
  const std::string tail = "\"seconds\": {\"set_up\": 1.25, \"gate\": 0.5, \"calibration\": 0.375, \"workloads\": 0.75}}\n";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
}

// An empty run (no workload, answer or error) renders the former document too.
TEST(BenchDocument, RendersAnEmptyRun) {
  BenchDocument d;
  d.lab = "reduction";
  EXPECT_EQ(bench_json(d), former_json(d));
}

// The no-GPU document: the status and the message, nothing else.
TEST(BenchDocument, RendersTheNoGpuDocument) {
  BenchDocument d = sample_document(true);
  d.status = "no_gpu";
  d.message = "No CUDA GPU: cudaErrorNoDevice: no \"CUDA\"-capable device is detected";
  EXPECT_EQ(bench_json(d), former_no_gpu_json("vectorAdd", "cudaErrorNoDevice: no \"CUDA\"-capable device is detected"));
}

// The schema constant is what the document opens with.
TEST(BenchDocument, OpensWithTheSchema) {
  const std::string text = bench_json(BenchDocument{});
  EXPECT_EQ(text.rfind(std::string("{\"schema\": \"") + kBenchSchema + "\", \"version\": " +
                           std::to_string(kBenchSchemaVersion) + ",", 0),
            0u)
      << text;
}

// A path that cannot be written is reported, not ignored.
TEST(BenchDocument, ReportsAnUnwritablePath) {
  EXPECT_FALSE(write_bench_json("/nonexistent-folder/out.json", BenchDocument{}));
}

// A bench question reads its figure from the workload it names, else from the first graded
// one; a named workload that was not timed gives no line and says which.
TEST(AnswerLines, ReadTheWorkloadAQuestionNames) {
  DeviceFacts device;
  device.name = "NVIDIA H100 80GB HBM3";
  device.major = 9;
  WorkloadResult graded;
  graded.name = "vector_add n=67108864";
  graded.graded = true;
  graded.unit = "GB/s";
  graded.amount = 2e9;
  graded.results = {timed("student", Role::Student, {2.0, 2.0, 2.0})};
  WorkloadResult fusion;
  fusion.name = "kernel fusion n=65536 iterations=100";
  fusion.unit = "Gsteps/s";
  fusion.results = {timed("fused (yours)", Role::Student, {0.05, 0.05, 0.05}),
                    timed("three kernels (yours)", Role::Variant, {0.9, 0.9, 0.9})};
  const std::vector<BenchQuestion> questions = {{"your_gbps", "throughput", ""},
                                                {"fused_kernel_ms", "median_ms", "kernel fusion n=65536 iterations=100"},
                                                {"gone", "median_ms", "kernel fusion n=1"}};
  const std::vector<AnswerLine> lines = answer_lines(questions, {fusion, graded}, device, false);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].line, "Answer: 1000 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)");
  EXPECT_EQ(lines[1].line, "Answer: 0.05 ms measured on NVIDIA H100 80GB HBM3 (sm_90)");
  EXPECT_FALSE(lines[2].given);
  EXPECT_EQ(lines[2].why, "the workload \"kernel fusion n=1\" was not timed");
  // A wrong output in the named workload gives no line either.
  fusion.results[0].check_failures = 1;
  const std::vector<AnswerLine> wrong = answer_lines(questions, {graded, fusion}, device, false);
  EXPECT_TRUE(wrong[0].given);
  EXPECT_FALSE(wrong[1].given);
  EXPECT_NE(wrong[1].why.find("kernel fusion n=65536 iterations=100"), std::string::npos) << wrong[1].why;
}

}  // namespace
}  // namespace lab::bench

namespace lab::cli {
namespace {

struct Parsed {
  std::string json, seed;
  bool quick = false, help = false;
  std::vector<std::string> passed;
};

// Parses `args` (argv[0] is "prog") with a table like the bench's: --json PATH, --seed N
// (refusing "bad"), --quick; "--gtest_*" pass through.
Parsed parse_args(std::vector<std::string> args, bool unknown_as_given = false) {
  Parsed p;
  RemoteOptions remote_options;
  std::vector<Option> options = {
      {"--json", "PATH", "", false, [&](const std::string& v) { p.json = v; }},
      {"--seed", "N", "", false,
       [&](const std::string& v) {
         if (v == "bad") throw std::invalid_argument("--seed: not a seed");
         p.seed = v;
       }},
      {"--quick", nullptr, "", false, [&](const std::string&) { p.quick = true; }},
  };
  for (Option& o : judge_options(remote_options)) options.push_back(std::move(o));
  Program program;
  program.name = "prog";
  program.judge_note = "(prog_judge)";
  program.unknown_as_given = unknown_as_given;
  program.help = [&] { p.help = true; };
  program.pass = [&](const std::string& name, char* given) {
    if (name.rfind("--gtest_", 0) != 0) return false;
    p.passed.push_back(given);
    return true;
  };
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  parse(program, options, static_cast<int>(argv.size()), argv.data());
  return p;
}

// Values come after a space or an "="; flags and --help are taken; GoogleTest's pass through.
TEST(Cli, TakesValuesFlagsAndPassThrough) {
  const Parsed p = parse_args({"--json", "a.json", "--seed=7", "--quick", "--gtest_filter=-*", "-h"});
  EXPECT_EQ(p.json, "a.json");
  EXPECT_EQ(p.seed, "7");
  EXPECT_TRUE(p.quick);
  EXPECT_TRUE(p.help);
  EXPECT_EQ(p.passed, std::vector<std::string>{"--gtest_filter=-*"});
}

// Every refusal names the program and the problem and exits 2.
TEST(Cli, RefusesWhatTheTableDoesNotAllow) {
  EXPECT_EXIT(parse_args({"--bogus=1"}), ::testing::ExitedWithCode(2),
              "^prog: error: unknown option '--bogus' \\(see --help\\)\n$");
  EXPECT_EXIT(parse_args({"--bogus=1"}, true), ::testing::ExitedWithCode(2), "unknown option '--bogus=1'");
  EXPECT_EXIT(parse_args({"extra"}), ::testing::ExitedWithCode(2), "unknown option 'extra'");
  EXPECT_EXIT(parse_args({"--json"}), ::testing::ExitedWithCode(2), "prog: error: --json needs a value");
  EXPECT_EXIT(parse_args({"--quick=yes"}), ::testing::ExitedWithCode(2), "prog: error: --quick takes no value");
  EXPECT_EXIT(parse_args({"--seed", "bad"}), ::testing::ExitedWithCode(2), "prog: error: --seed: not a seed");
}

// A judge program's option is refused where no worker runs (this program has none).
TEST(Cli, RefusesJudgeOptionsOutsideJudgePrograms) {
  ASSERT_EQ(remote(), nullptr);
  EXPECT_EXIT(parse_args({"--impl", "x.so"}), ::testing::ExitedWithCode(2),
              "prog: error: --impl is an option of the grader's judge programs \\(prog_judge\\)");
}

// --cold-copies (a diagnostic of the fairness probe) is a flag of the judge programs only:
// the judge warms its workers' copy path before timed calls unless given it (it clears
// RemoteOptions::warm_copies, which the judge turns into the workers' flag), and a
// student's own bench refuses it.
TEST(Cli, ColdCopiesIsAJudgeOnlyFlag) {
  const auto& table = remote_option_table();
  const auto spec = std::find_if(table.begin(), table.end(),
                                 [](const RemoteOptionSpec& r) { return std::string(r.name) == "--cold-copies"; });
  ASSERT_NE(spec, table.end());
  EXPECT_EQ(spec->value, nullptr);
  RemoteOptions options;
  EXPECT_TRUE(options.warm_copies);
  spec->apply(options, "");
  EXPECT_FALSE(options.warm_copies);
  EXPECT_EXIT(parse_args({"--cold-copies"}), ::testing::ExitedWithCode(2),
              "prog: error: --cold-copies is an option of the grader's judge programs");
}

// --help lists each option with its value's name; judge options only when asked.
TEST(Cli, PrintsTheOptions) {
  RemoteOptions unused;
  std::vector<Option> options = {{"--json", "PATH", "write JSON", false, nullptr},
                                 {"--quick", nullptr, "few samples", false, nullptr}};
  for (Option& o : judge_options(unused)) options.push_back(std::move(o));
  char* text = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  print_options(out, options, 12, false);
  std::fclose(out);
  EXPECT_EQ(std::string(text, size), "  --json PATH  write JSON\n  --quick      few samples\n");
  std::free(text);
}

}  // namespace
}  // namespace lab::cli
