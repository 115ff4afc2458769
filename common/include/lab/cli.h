// Provided by the kit. The command-line parser the test main and the bench share: one
// table of options drives both parsing and --help (as CUTLASS's Options do), so that the
// two kinds of program take their options, and refuse bad ones, the same way.
//
//   --name VALUE and --name=VALUE; flags take no value; --help and -h; an option of the
//   grader's judge programs (lab/remote.h) is refused where there is no worker.
//
// Every refusal prints "<program>: error: <problem> (see --help)" and exits 2.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "lab/remote.h"

namespace lab::cli {

/// One command-line option.
struct Option {
  const char* name;   ///< "--json"
  const char* value;  ///< the value's name in --help, or null for a flag
  std::string help;   ///< one line for --help
  bool judge_only;    ///< an option of the grader's judge programs only
  /// Takes the value ("" for a flag); throws std::invalid_argument, with the message to
  /// print, for a bad one.
  std::function<void(const std::string& value)> apply;
};

/// The judge programs' options (lab/remote.h's table), setting `target`.
std::vector<Option> judge_options(RemoteOptions& target);

/// How one program words its refusals and what it does with what is not in its table.
struct Program {
  std::string name;  ///< the prefix of every refusal, e.g. "vectorAdd_bench"
  /// Where a judge program's option is refused: "... is an option of the grader's judge
  /// programs <judge_note>", e.g. "(vectorAdd_judge_bench)".
  std::string judge_note;
  /// True: an unknown option is named as given ("--x=1"); false: without its value ("--x").
  bool unknown_as_given = false;
  /// Called for --help and -h.
  std::function<void()> help;
  /// Called first for each argument, with its name ("--gtest_filter" of "--gtest_filter=x")
  /// and the argument as given: true when it took the argument (e.g. GoogleTest's own).
  std::function<bool(const std::string& name, char* given)> pass = nullptr;
};

/// Prints "<program>: error: <problem> (see --help)" to stderr and exits with status 2.
[[noreturn]] void refuse(const std::string& program, const std::string& problem);

/// Parses argv[1..argc) with `options`, applying each in order; refuses (exits 2) what
/// the table does not allow.
void parse(const Program& program, const std::vector<Option>& options, int argc, char** argv);

/// The --help lines of `options`, "  <name> <value>" padded to `width`, then the help
/// text; judge programs' options only when `with_judge_options`.
void print_options(FILE* out, const std::vector<Option>& options, int width, bool with_judge_options);

}  // namespace lab::cli
