// Provided by the kit. Formatting for lab/compare.h.
#include "lab/compare.h"

#include <cstdio>

namespace lab::detail {

std::string format_value(double v) {
  char text[64];
  // %.9g shows every float exactly enough to tell neighbours apart.
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string format_value(float v) { return format_value(static_cast<double>(v)); }

std::string describe(std::size_t count, std::size_t n, const std::vector<std::string>& examples,
                     const std::string& what) {
  std::string message = std::to_string(count) + " of " + std::to_string(n) + " " + what + "s differ; first: " +
                        examples.front();
  if (examples.size() > 1) {
    message += "; also";
    for (std::size_t i = 1; i < examples.size(); ++i) message += (i == 1 ? " " : ", ") + examples[i];
  }
  return message;
}

}  // namespace lab::detail
