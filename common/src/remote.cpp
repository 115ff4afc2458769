// Provided by the kit. The installed Remote (lab/remote.h): null unless a judge program's
// proxy installed one at start-up.
#include "lab/remote.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace lab {
namespace {
Remote*& installed() {
  static Remote* remote = nullptr;
  return remote;
}
}  // namespace

Remote* remote() { return installed(); }

void install_remote(Remote* r) { installed() = r; }

const std::vector<RemoteOptionSpec>& remote_option_table() {
  static const std::vector<RemoteOptionSpec> table = {
      {"--impl", "PATH", "the implementation library under test (default: this build's student library)",
       [](RemoteOptions& o, const std::string& v) { o.impl = v; }},
      {"--worker", "PATH", "the worker program (default: this build's)",
       [](RemoteOptions& o, const std::string& v) { o.worker = v; }},
      {"--call-timeout", "S", "a forwarded call that takes longer is a hang (default 60)",
       [](RemoteOptions& o, const std::string& v) {
         char* end = nullptr;
         const double s = std::strtod(v.c_str(), &end);
         if (v.empty() || *end != '\0' || !std::isfinite(s) || !(s > 0)) {
           throw std::invalid_argument("--call-timeout takes a number of seconds > 0, got '" + v + "'");
         }
         o.call_timeout_s = s;
       }},
      {"--no-sandbox", nullptr, "run the workers without their sandbox (debugging only)",
       [](RemoteOptions& o, const std::string&) { o.sandbox = false; }},
  };
  return table;
}

}  // namespace lab
