// Provided by the kit. libcudart's own entry points, found past the program that defines
// functions of the same name (the worker's launch record, the timers' stream fence):
// dlsym(RTLD_NEXT). Null where this libcudart lacks the symbol.
#pragma once

#include <dlfcn.h>

namespace lab {

template <class Fn>
Fn next_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace lab
