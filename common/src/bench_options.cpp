// Provided by the kit. The bench's command line (lab/bench.h, Options): one table drives
// parsing and --help (lab/cli.h, the parser the test main uses too).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>

#include "bench_internal.h"
#include "lab/cli.h"

namespace lab::bench::detail {
namespace {

double number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
    throw std::invalid_argument(flag + " takes a non-negative number, got '" + text + "'");
  }
  return v;
}

std::vector<std::string> comma_list(const std::string& v) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= v.size()) {
    const std::size_t comma = std::min(v.find(',', start), v.size());
    if (comma > start) items.push_back(v.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

int gate_descriptor(const std::string& v) {
  const double fd = number("--gate-fd", v);
  if (fd != std::floor(fd) || fd < 3 || fd > 1 << 20) throw std::invalid_argument("--gate-fd takes a descriptor number of 3 or more");
  return static_cast<int>(fd);
}

// The bench's options, setting `o`; the judge programs' own come last.
std::vector<cli::Option> option_table(Options& o) {
  std::vector<cli::Option> t = {
      {"--json", "PATH", "also write the results as JSON (for the grader)", false,
       [&o](const std::string& v) { o.json_path = v; }},
      {"--reference", "PATH", "reference library (default: the solution built with the kit)", false,
       [&o](const std::string& v) { o.reference_path = v; }},
      {"--reference-variant", "NAME",
       "which registered variant of the reference to compare with (default: " + graded_reference_variant() +
           ", the one the lab is graded against)",
       false, [&o](const std::string& v) { o.reference_variant = v; }},
      {"--seed", "N", "data seed, a whole number (default: LABKIT_SEED or 1)", false,
       [&o](const std::string& v) {
         o.seed = parse_seed(v);
         o.seed_given = true;
       }},
      {"--size", "N", "problem size (see the lab's handout)", false,
       [&o](const std::string& v) { o.size = static_cast<long long>(number("--size", v)); }},
      {"--filter", "TEXT", "time only candidates whose name contains TEXT", false,
       [&o](const std::string& v) { o.filter = v; }},
      {"--graded-only", nullptr, "the graded workloads only: student, reference, library and roofline (the grader)",
       false, [&o](const std::string&) { o.graded_only = true; }},
      {"--time-variants", "A,B", "also time these registered variants and the reference's of the same names "
                                 "(ref:A, ...), with --graded-only too: the lecture's steps a lab requires",
       false, [&o](const std::string& v) { o.time_variants = comma_list(v); }},
      {"--gate-fd", "N", "set up, write 'r' to file descriptor N, and time nothing until 'g' is read from it "
                         "(the grader: set-up overlaps other labs' tests; the timing runs alone)",
       false, [&o](const std::string& v) { o.gate_fd = gate_descriptor(v); }},
      {"--shift-allocations", "MIB", "a diagnostic: take MIB MiB of device memory before any buffer, so that every "
                                     "buffer lies elsewhere in the GPU's memory; a kernel whose time moves with it "
                                     "depends on where its buffers lie, which differs from one process to the next",
       false, [&o](const std::string& v) { o.shift_mib = number("--shift-allocations", v); }},
      {"--quick", nullptr, "few samples: a smoke test, not a measurement", false,
       [&o](const std::string&) { o.quick = true; }},
      {"--no-cpu", nullptr, "skip timing the CPU version", false, [&o](const std::string&) { o.no_cpu = true; }},
      {"--warm-up", "S", "untimed calls per workload before its samples, for this long (default 0.1)", false,
       [&o](const std::string& v) { o.warm_up_seconds = number("--warm-up", v); }},
      {"--min-time", "S", "sampling time per workload, at least", false,
       [&o](const std::string& v) { o.min_seconds = number("--min-time", v); }},
      {"--max-time", "S", "sampling time per workload, at most", false,
       [&o](const std::string& v) { o.max_seconds = number("--max-time", v); }},
      {"--min-samples", "N", "samples per candidate, at least", false,
       [&o](const std::string& v) { o.min_samples = static_cast<int>(number("--min-samples", v)); }},
      {"--max-samples", "N", "samples per candidate, at most", false,
       [&o](const std::string& v) { o.max_samples = static_cast<int>(number("--max-samples", v)); }},
  };
  for (cli::Option& r : cli::judge_options(o.remote)) t.push_back(std::move(r));
  return t;
}

[[noreturn]] void usage(const std::string& lab) {
  std::printf("usage: %s_bench [options]\n"
              "Times the implementation under test against the reference, the solution's variants, the CPU\n"
              "version and the library, on the same inputs, and prints a table; then, for each graded question\n"
              "answered with a figure of the bench, the line to paste into labs/%s/answers.md (the figure and\n"
              "the GPU it was measured on).\n\n",
              lab.c_str(), lab.c_str());
  Options unused;
  cli::print_options(stdout, option_table(unused), 26, remote() != nullptr);
  std::printf("  %-26s %s\n", "--help", "this text");
  std::printf("\nExit status: 0 every timed output was right, 1 a check failed, 2 bad options, 3 no GPU, 4 stopped\n"
              "at the gate (--gate-fd closed before its go).\n");
  std::exit(0);
}

// What the options imply together: --quick and --graded-only's settings, the gate's
// descriptor, the sample counts.
void settle(const std::string& lab, Options& o) {
  if (o.quick) {
    o.min_samples = 3;
    o.max_samples = 5;
    o.min_seconds = 0;
    o.max_seconds = 1;
    o.no_cpu = true;
  }
  if (o.graded_only) o.no_cpu = true;  // the CPU's time is in no grade
  // The gate is the grader's alone: no worker this process starts may inherit it.
  if (o.gate_fd >= 0 && fcntl(o.gate_fd, F_SETFD, FD_CLOEXEC) != 0) {
    refuse_options(lab, "--gate-fd " + std::to_string(o.gate_fd) + " is not an open file descriptor");
  }
  if (o.max_samples < std::max(1, o.min_samples)) refuse_options(lab, "--max-samples must be at least --min-samples");
  if (o.shift_mib < 0 || o.shift_mib > 65536) refuse_options(lab, "--shift-allocations takes 0 to 65536 (MiB)");
  if (!(o.warm_up_seconds >= 0 && o.warm_up_seconds <= 10)) refuse_options(lab, "--warm-up takes 0 to 10 (seconds)");
}

}  // namespace

void refuse_options(const std::string& lab, const std::string& problem) { cli::refuse(lab + "_bench", problem); }

Options parse_options(const std::string& lab, int argc, char** argv, std::string default_reference) {
  Options o;
  o.reference_path = std::move(default_reference);
  o.reference_variant = graded_reference_variant();  // the manifest's, as the grader grades
  cli::Program program;
  program.name = lab + "_bench";
  program.judge_note = "(" + lab + "_judge_bench)";
  program.help = [&lab] { usage(lab); };
  cli::parse(program, option_table(o), argc, argv);
  settle(lab, o);
  return o;
}

}  // namespace lab::bench::detail
