// Corpus case "template_bomb" (harming the machine): a parameter pack of 200 million
// elements, expanded at compile time. Without limits the compiler front end grows by
// gigabytes until the machine runs out of memory; the grader's limit on each compiler
// process's memory ends it as BUILD_ERROR within seconds, and nothing is left running.
#include <cstddef>
#include <utility>

#include "vectorAdd.h"

template <std::size_t... I>
constexpr std::size_t total(std::index_sequence<I...>) {
  return (I + ... + 0);
}

constexpr std::size_t kBoom = total(std::make_index_sequence<200000000>{});

void vector_add(const float* a, const float* b, float* c, int n) {
  (void)a;
  (void)b;
  (void)c;
  (void)n;
  (void)kBoom;
}
