// Provided by the kit. The command-line parser of the test and bench programs (lab/cli.h).
#include "lab/cli.h"

#include <algorithm>
#include <cstdlib>
#include <exception>

namespace lab::cli {

std::vector<Option> judge_options(RemoteOptions& target) {
  std::vector<Option> options;
  for (const RemoteOptionSpec& r : remote_option_table()) {
    options.push_back({r.name, r.value, r.help, true,
                       [&target, apply = r.apply](const std::string& v) { apply(target, v); }});
  }
  return options;
}

void refuse(const std::string& program, const std::string& problem) {
  std::fprintf(stderr, "%s: error: %s (see --help)\n", program.c_str(), problem.c_str());
  std::exit(2);
}

void parse(const Program& program, const std::vector<Option>& options, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const auto eq = arg.find('=');
    const bool has_inline = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (program.pass && program.pass(arg, argv[i])) continue;
    if (arg == "--help" || arg == "-h") {
      program.help();
      continue;
    }
    const auto spec = std::find_if(options.begin(), options.end(), [&](const Option& o) { return arg == o.name; });
    if (spec == options.end()) {
      refuse(program.name, "unknown option '" + (program.unknown_as_given ? std::string(argv[i]) : arg) + "'");
    }
    if (spec->judge_only && remote() == nullptr) {
      refuse(program.name, arg + " is an option of the grader's judge programs " + program.judge_note);
    }
    if (spec->value != nullptr && !has_inline) {
      if (i + 1 >= argc) refuse(program.name, arg + " needs a value");
      value = argv[++i];
    } else if (spec->value == nullptr && has_inline) {
      refuse(program.name, arg + " takes no value");
    }
    try {
      spec->apply(value);
    } catch (const std::exception& e) {
      refuse(program.name, e.what());
    }
  }
}

void print_options(FILE* out, const std::vector<Option>& options, int width, bool with_judge_options) {
  for (const Option& o : options) {
    if (o.judge_only && !with_judge_options) continue;
    const std::string left = std::string(o.name) + (o.value != nullptr ? std::string(" ") + o.value : "");
    std::fprintf(out, "  %-*s %s\n", width, left.c_str(), o.help.c_str());
  }
}

}  // namespace lab::cli
