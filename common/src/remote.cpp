// Provided by the kit. The installed Remote (lab/remote.h): null unless a judge program's
// proxy installed one at start-up; and where lab::HostBuffer's memory comes from, which
// depends on it (ordinary memory, or the judge's arena shared with its workers).
#include "lab/remote.h"

#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "lab/buffer.h"

namespace lab {
namespace {
Remote*& installed() {
  static Remote* remote = nullptr;
  return remote;
}
}  // namespace

Remote* remote() { return installed(); }

void install_remote(Remote* r) { installed() = r; }

namespace {
std::size_t& allocation_granularity() {
  static std::size_t granularity = 0;
  return granularity;
}
}  // namespace

void set_device_allocation_granularity(std::size_t bytes) { allocation_granularity() = bytes; }

namespace detail {

namespace {
constexpr std::align_val_t kHostBufferAlignment{4096};  // a page, as the judge's arena gives
}  // namespace

std::size_t device_allocation_bytes(std::size_t bytes) {
  const std::size_t g = allocation_granularity();
  return g == 0 ? bytes : (bytes + g - 1) / g * g;
}

void* host_buffer_allocate(std::size_t bytes, bool* shared) {
  if (Remote* r = remote()) {
    *shared = true;
    return r->allocate_host(bytes);
  }
  *shared = false;
  return ::operator new(bytes, kHostBufferAlignment);
}

void host_buffer_free(void* pointer, bool shared) noexcept {
  if (shared) {
    if (Remote* r = remote()) r->free_host(pointer);
    return;
  }
  ::operator delete(pointer, kHostBufferAlignment);
}

}  // namespace detail

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
      {"--exact-bounds", nullptr,
       "call the code under test on copies of exactly each device argument's size (the sanitizer's runs)",
       [](RemoteOptions& o, const std::string&) { o.exact_bounds = true; }},
      {"--launch-log", "FILE", "write each forwarded call's kernel launches to FILE (one JSON line per call)",
       [](RemoteOptions& o, const std::string& v) {
         if (v.empty()) throw std::invalid_argument("--launch-log takes a file name");
         o.launch_log = v;
       }},
      {"--cold-copies", nullptr,
       "diagnostic: the workers do not warm their copy path before each timed call (the fairness probe)",
       [](RemoteOptions& o, const std::string&) { o.warm_copies = false; }},
  };
  return table;
}

}  // namespace lab
