// Provided by the kit. The few JSON writers the bench's reports need (no JSON library:
// the kit depends on the CUDA toolkit and GoogleTest only).
#pragma once

#include <string>

namespace lab::bench {

/// `s` as a JSON string literal, quotes and escapes included.
std::string json_string(const std::string& s);
/// `v` as a JSON number, or null when it is not finite.
std::string json_number(double v);
/// json_number(v) when `present`, else null.
std::string json_optional(double v, bool present);

}  // namespace lab::bench
